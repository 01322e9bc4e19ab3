"""A defragmentation planner: moves of restartable allocations that free whole GPUs, nodes and NVLink domains.

Works on a copy of the fleet, so planning never disturbs placement (it uses the engine's own best-fit choice,
hence the package-private calls). It takes restartable whole-GPU allocations
(jobs restart from their checkpoint) on the emptiest nodes first and tries to place each node's share of them
on a fuller node by best fit; a move is kept only when it leaves the source node emptier than the destination
was, so every kept move consolidates. Gangs that need NVLink topology are moved only inside their domain.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

from provisioning.placement.engine import Device, Placement, PlacementEngine
from provisioning.placement.isolation import Performance
from provisioning.placement.state import FleetState


@dataclass(frozen=True)
class Move:
    allocation_id: int
    from_nodes: list[str]
    to_nodes: list[str]
    gpus: int


@dataclass
class Plan:
    moves: list[Move]
    before: FleetState
    after: FleetState


def plan_defragmentation(state: FleetState, placements: dict[int, Placement], restartable: set[int]) -> Plan:
    work = copy.deepcopy(state)
    engine = PlacementEngine(work)
    placements = dict(placements)  # the caller's map stays as it is
    candidates = [
        (alloc_id, p)
        for alloc_id, p in placements.items()
        if alloc_id in restartable and p.performance is Performance.WHOLE_GPU and not p.held_nodes
    ]
    # Emptiest source nodes first: moving their last workloads frees whole nodes.
    candidates.sort(key=lambda item: -work.nodes[item[1].devices[0].node_id].free)
    moves: list[Move] = []
    for alloc_id, placement in candidates:
        by_node: dict[int, list[Device]] = {}
        for device in placement.devices:
            by_node.setdefault(device.node_id, []).append(device)
        new_devices: list[Device] = []
        engine.release(placement)
        moved_from, moved_to = [], []
        ok = True
        for node_id, devices in by_node.items():
            source = work.nodes[node_id]
            halls = [source.hall.code]
            target = engine._best_node((placement.model,), halls, len(devices), skip={node_id})
            # Keep the move only if it consolidates: the target is fuller than the source will be.
            if target is None or (target.nvlink_domain != source.nvlink_domain and len(by_node) > 1):
                ok = False
                break
            if target.free - len(devices) >= source.free:
                ok = False
                break
            new_devices += engine._take_whole(target, len(devices), placement.tenant_id)
            moved_from.append(source.hostname)
            moved_to.append(target.hostname)
        if not ok:
            for device in new_devices:
                work.release_whole(work.nodes[device.node_id].gpus[device.gpu_index])
            engine.apply(placement)
            continue
        placements[alloc_id] = replace(placement, devices=tuple(new_devices))
        moves.append(Move(alloc_id, moved_from, moved_to, len(new_devices)))
    return Plan(moves=moves, before=state, after=work)
