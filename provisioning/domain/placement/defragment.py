"""Defragmentation: moves of movable allocations that free whole GPUs, nodes and NVLink domains, and the check that
a planned move is still sound when its turn comes.

Works on a copy of the fleet, so planning never disturbs placement (it uses the engine's own best-fit choice,
hence the package-private calls). Only work that survives a move is moved: checkpointed jobs (they restart from
their checkpoint) and serverless replicas (the endpoint re-creates them); nothing held whole, nothing on a
confidential host, no bare metal. What a moved allocation holds of its node's host (CPU and memory) moves with it,
to a target whose host holds it. Two kinds of move:

- **whole GPUs**: movable whole-GPU allocations on the emptiest nodes first; each node's share of one is placed
  on a fuller node by best fit, and the move is kept only when it leaves the source node emptier than the
  destination was (every kept move consolidates). A gang spanning nodes moves only inside its NVLink domain and
  its group (RDMA fabric and version set), and a planned move whose nodes no longer share one is refused.
- **MIG and soft-share re-layouts**: a partly used GPU whose every user is movable is emptied when each of its
  slices (or shares) finds a place on another partly used GPU of the same model and hall, under the same rules
  the engine places by (MIG geometry, who may share a GPU, the tenant's own soft pool). A GPU is re-laid out only
  when it comes out entirely free: moving a slice from one partly used GPU to another frees nothing.

``move_check`` answers, against the live fleet, whether one move can still be carried out exactly as planned.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace

from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.decision import Device, HostTake, Placement
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.isolation import TenantPolicy
from provisioning.domain.placement.mig import GEOMETRY, MEMORY_SLICES, best_start, place
from provisioning.domain.placement.shares import mig_join_refusal
from provisioning.domain.placement.state import FULL_SHARE, READY, FleetState, GpuSlot
from provisioning.domain.rungs import RUNGS, Performance, rung_facts


@dataclass(frozen=True)
class Move:
    allocation_id: int
    kind: str  # the rung, which says how it survives the move (``movable_kind``)
    from_nodes: list[str]
    to_nodes: list[str]
    gpus: int  # devices moved (whole GPUs, slices or shares)
    before: Placement
    after: Placement


@dataclass
class Plan:
    moves: list[Move]
    before: FleetState
    after: FleetState


def movable_kind(rung: str) -> str | None:
    """How an allocation of this rung survives a move, or None when it may not be moved: ``job`` restarts from its
    last checkpoint on the new devices, ``serverless`` has its replicas re-created there (``RungFacts.movable``)."""
    facts = rung_facts(rung)
    return facts.rung.value if facts.movable else None


def plan_defragmentation(state: FleetState, placements: dict[int, Placement], movable: Mapping[int, str]) -> Plan:
    """``movable`` maps the allocations that may move (running, of a movable rung) to their kind."""
    work = copy.deepcopy(state)
    engine = PlacementEngine(work, policy="best-fit")  # moves consolidate by the best-fit rules, stated above
    placements = dict(placements)  # the caller's map stays as it is
    moves = _whole_moves(work, engine, placements, movable)
    moves += _relayouts(work, engine, placements, movable)
    return Plan(moves=moves, before=state, after=work)


def _whole_moves(
    work: FleetState, engine: PlacementEngine, placements: dict[int, Placement], movable: Mapping[int, str]
) -> list[Move]:
    candidates = [
        (alloc_id, p)
        for alloc_id, p in placements.items()
        if alloc_id in movable and p.performance is Performance.WHOLE_GPU and not p.held_nodes and p.devices
    ]
    # Emptiest source nodes first: moving their last workloads frees whole nodes.
    candidates.sort(key=lambda item: -work.nodes[item[1].devices[0].node_id].free)
    moves: list[Move] = []
    for alloc_id, placement in candidates:
        by_node: dict[int, list[Device]] = {}
        for device in placement.devices:
            by_node.setdefault(device.node_id, []).append(device)
        takes = {t.node_id: t for t in placement.host}  # what each node's share holds of its host: it moves too
        new_devices: list[Device] = []
        new_takes: list[HostTake] = []
        engine.release(placement)
        moved_from, moved_to = [], []
        ok = True
        for node_id, devices in by_node.items():
            source = work.nodes[node_id]
            models, halls = (placement.model,), [source.hall.code]
            take = takes.get(node_id)
            engine._host = (take.cpu_milli, take.memory_mib) if take else (0, 0)  # the target's host must hold it
            try:
                if len(by_node) > 1:  # a gang's member stays on its fabric and version set (and NVLink domain)
                    target = engine._best_node_of(
                        models, halls, len(devices), skip={node_id}, buckets_of=engine.group_buckets(source.gang_group)
                    )
                else:
                    target = engine._best_node(models, halls, len(devices), skip={node_id})
            finally:
                engine._host = (0, 0)
            if target is None or (target.nvlink_domain != source.nvlink_domain and len(by_node) > 1):
                ok = False
                break
            # Keep the move only if it consolidates: the target is fuller than the source will be.
            if target.free - len(devices) >= source.free:
                ok = False
                break
            new_devices += engine._take_whole(target, len(devices), placement.tenant_id)
            if take is not None:
                work.take_host(target, take.cpu_milli, take.memory_mib)
                new_takes.append(HostTake(target.id, take.cpu_milli, take.memory_mib))
            moved_from.append(source.hostname)
            moved_to.append(target.hostname)
        if not ok:
            for device in new_devices:
                work.release_whole(work.nodes[device.node_id].gpus[device.gpu_index])
            for moved in new_takes:
                work.take_host(work.nodes[moved.node_id], -moved.cpu_milli, -moved.memory_mib)
            engine.apply(placement)
            continue
        after = replace(placement, devices=tuple(new_devices), host=tuple(new_takes))
        placements[alloc_id] = after
        moves.append(Move(alloc_id, movable[alloc_id], moved_from, moved_to, len(new_devices), placement, after))
    return moves


def _relayouts(
    work: FleetState, engine: PlacementEngine, placements: dict[int, Placement], movable: Mapping[int, str]
) -> list[Move]:
    """Empty partly used MIG and soft-shared GPUs whose users can all move, emptiest first."""
    users: dict[int, list[tuple[int, Device]]] = {}  # id(gpu) -> (allocation, its device there)
    slots: dict[int, GpuSlot] = {}
    for alloc_id, p in placements.items():
        if p.performance is Performance.WHOLE_GPU or p.held_nodes:
            continue
        for device in p.devices:
            gpu = work.nodes[device.node_id].gpus[device.gpu_index]
            users.setdefault(id(gpu), []).append((alloc_id, device))
            slots[id(gpu)] = gpu
    sources = [
        gpu for key, gpu in slots.items() if gpu.node.general and all(alloc_id in movable for alloc_id, _ in users[key])
    ]
    sources.sort(key=lambda g: (_used(g), g.node.hostname, g.index))
    moves: list[Move] = []
    for source in sources:
        here = users[id(source)]
        if any(placements[a].devices != (d,) for a, d in here):
            continue  # an allocation with devices on several GPUs: moved whole or not at all, not here
        planned: list[tuple[int, Placement]] = []
        for alloc_id, device in sorted(here, key=lambda item: -_size(placements[item[0]], item[1])):
            old = placements[alloc_id]
            engine.release(old)
            target = _home(work, old, device, avoid=source)
            if target is None:
                engine.apply(old)
                break
            new = replace(old, devices=(target,), host=tuple(replace(t, node_id=target.node_id) for t in old.host))
            engine.apply(new)
            planned.append((alloc_id, new))
        if len(planned) < len(here) or not source.free:
            for alloc_id, new in reversed(planned):  # undo: the GPU does not come out free
                engine.release(new)
                engine.apply(placements[alloc_id])
            continue
        for alloc_id, new in planned:
            old = placements[alloc_id]
            placements[alloc_id] = new
            to = new.devices[0].hostname
            moves.append(Move(alloc_id, movable[alloc_id], [old.devices[0].hostname], [to], 1, old, new))
    return moves


def _used(gpu: GpuSlot) -> int:
    """How much of a partly used GPU is taken, in milli-GPU (MIG: its memory slices in use)."""
    if gpu.soft_tenant is not None:
        return gpu.soft_used
    return FULL_SHARE * (MEMORY_SLICES - gpu.mig.free_memory) // MEMORY_SLICES


def _size(placement: Placement, device: Device) -> int:
    if device.mig_profile is not None:
        return GEOMETRY[CATALOG[placement.model].mig_profiles[device.mig_profile]].memory
    return device.share_milli or 0


def _home(work: FleetState, placement: Placement, device: Device, avoid: GpuSlot) -> Device | None:
    """Where the engine's rules let this slice or share go on another partly used GPU (the fullest that fits, on a
    node whose host holds the CPU and memory it takes)."""
    hall = avoid.node.hall.code
    cpu, memory = (placement.host[0].cpu_milli, placement.host[0].memory_mib) if placement.host else (0, 0)
    if device.mig_profile is not None:
        kind = CATALOG[placement.model].mig_profiles[device.mig_profile]
        best: tuple[int, GpuSlot, int] | None = None
        for mig_state, gpus in work.mig_by_state.get((placement.model, hall), {}).items():
            fit = best_start(mig_state, kind)
            if fit is None or (best is not None and fit[1] >= best[0]):
                continue
            for gpu in gpus.values():
                if gpu is not avoid and gpu.node.host_fits(cpu, memory) and _may_join_mig(placement, gpu) is None:
                    best = (fit[1], gpu, fit[0])
                    break
        if best is None:
            return None
        _, gpu, start = best
        node = gpu.node
        return Device(node.id, node.hostname, gpu.index, gpu.uuid, device.mig_profile, start)
    pool = work.soft_pools.get((placement.tenant_id, placement.performance, placement.model, hall))
    milli = device.share_milli or 0
    candidates = [
        g
        for g in (pool.gpus() if pool else ())
        if g is not avoid and g.soft_used + milli <= FULL_SHARE and g.node.host_fits(cpu, memory)
    ]
    if not candidates:
        return None
    gpu = max(candidates, key=lambda g: (g.soft_used, -g.index))
    return Device(gpu.node.id, gpu.node.hostname, gpu.index, gpu.uuid, share_milli=milli)


def _may_join_mig(placement: Placement, gpu: GpuSlot) -> str | None:
    policy = TenantPolicy(tenant_id=placement.tenant_id, dedicated_hardware=placement.dedicated)
    refusal = mig_join_refusal(gpu, policy, RUNGS[placement.rung].security)
    return refusal.message if refusal else None


def move_check(state: FleetState, after: Placement) -> str | None:
    """Why a move onto ``after`` can no longer be carried out on the live fleet (None: it can).

    The allocation must still hold exactly the planned source devices (the caller checks that), and every target
    device must still be free for it under the engine's rules."""
    for device in after.devices:
        node = state.nodes.get(device.node_id)
        if node is None or node.state != READY or not node.general or node.model != after.model:
            return f"{device.hostname} no longer takes this work"
        gpu = node.gpus[device.gpu_index]
        if gpu.uuid != device.gpu_uuid:
            return f"GPU {device.gpu_index} of {device.hostname} is not the one planned"
        if device.mig_profile is not None and device.mig_start is not None:
            if gpu.whole_tenant is not None or gpu.soft_tenant is not None:
                return f"GPU {device.gpu_uuid} is taken"
            kind = CATALOG[after.model].mig_profiles[device.mig_profile]
            try:
                place(gpu.mig, kind, device.mig_start)
            except ValueError:
                return f"the planned {device.mig_profile} slice of GPU {device.gpu_uuid} is taken"
            why = _may_join_mig(after, gpu)
            if why:
                return why
        elif device.share_milli is not None:
            if gpu.whole_tenant is not None or not gpu.mig.empty:
                return f"GPU {device.gpu_uuid} is taken"
            if gpu.soft_tenant not in (None, after.tenant_id) or gpu.soft_mode not in (None, after.performance):
                return f"GPU {device.gpu_uuid} is shared by other work now"
            if gpu.soft_used + device.share_milli > FULL_SHARE:
                return f"GPU {device.gpu_uuid} has no room left for the share"
        elif not gpu.free:
            return f"GPU {device.gpu_uuid} is taken"
    for take in after.host:
        node = state.nodes[take.node_id]
        if not node.host_fits(take.cpu_milli, take.memory_mib):
            return f"{node.hostname} no longer has the CPU and memory this work takes"
    groups = {state.nodes[d.node_id].gang_group for d in after.devices}
    if len(groups) > 1:  # versions or fabric changed since the plan (an upgrade): the gang would span two
        return "its nodes no longer share one RDMA fabric and version set"
    return None
