"""What an allocation holds, taken and given back: its device rows, the claims on GPU memory slices that are the
database's guard against double booking, the holds on whole hosts; and the hosts a tenant had host-level access
to, which go through sanitizing before anyone else takes them.

Everything here runs inside the caller's ``placement_section`` (fleet_cache.py), the section that serializes
every placement decision, except ``nodes_sanitized``, which opens its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import IntegrityError
from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.decision import Placement
from provisioning.domain.placement.mig import GEOMETRY, MEMORY_SLICES
from provisioning.domain.rungs import Rung
from provisioning.fleet_cache import PlacementSection, placement_section
from provisioning.models import Allocation, AllocationDevice, GpuClaim, Node, NodeHold, NodeState
from tenancy.models import Tenant

# --- claims: the database's guard ---------------------------------------------------------------------------


def slice_claims(section: PlacementSection, allocation: Allocation, placement: Placement) -> list[GpuClaim]:
    claims: list[GpuClaim] = []
    for device in placement.devices:
        if device.share_milli is not None:
            continue  # soft shares claim the GPU for the tenant, once (see _claim_soft)
        if device.mig_profile is not None and device.mig_start is not None:
            kind = CATALOG[placement.model].mig_profiles[device.mig_profile]
            run = range(device.mig_start, device.mig_start + GEOMETRY[kind].memory)
        else:
            run = range(MEMORY_SLICES)
        gpu_id = section.cache.gpu_ids[(device.node_id, device.gpu_index)]
        claims += [GpuClaim(gpu_id=gpu_id, slice=s, allocation=allocation) for s in run]
    return claims


def _claim_soft(tenant: Tenant, gpu_id: int) -> None:
    if not GpuClaim.objects.filter(gpu_id=gpu_id, soft_tenant=tenant).exists():
        claims = [GpuClaim(gpu_id=gpu_id, slice=s, soft_tenant=tenant) for s in range(MEMORY_SLICES)]
        GpuClaim.objects.bulk_create(claims)


def devices_remember(allocation: Allocation, devices: list[AllocationDevice]) -> None:
    """Serve ``allocation.devices.all()`` from the rows just written, as a prefetch would, so the caller's
    response needs no query; any filtered read still goes to the database."""
    queryset = allocation.devices.all()
    queryset._result_cache = devices
    queryset._prefetch_done = True  # type: ignore[attr-defined]
    allocation._prefetched_objects_cache = {"devices": queryset}  # type: ignore[attr-defined]


def device_rows(section: PlacementSection, allocation: Allocation, placement: Placement) -> list[AllocationDevice]:
    gpu_ids = section.cache.gpu_ids
    return [
        AllocationDevice(
            allocation=allocation,
            gpu_id=gpu_ids[(d.node_id, d.gpu_index)],
            hostname=d.hostname,
            gpu_index=d.gpu_index,
            gpu_uuid=d.gpu_uuid,
            mig_profile=d.mig_profile or "",
            mig_start=d.mig_start,
            share_milli=d.share_milli,
        )
        for d in placement.devices
    ]


def _persist_devices(section: PlacementSection, allocation: Allocation, placement: Placement) -> None:
    devices = AllocationDevice.objects.bulk_create(device_rows(section, allocation, placement))
    devices_remember(allocation, devices)
    GpuClaim.objects.bulk_create(slice_claims(section, allocation, placement))
    holds_take(section, allocation, placement)


def holds_take(section: PlacementSection, allocation: Allocation, placement: Placement) -> None:
    """What fewer placements need: a soft share's claim for the tenant, bare-metal hosts, confidential hosts."""
    gpu_ids = section.cache.gpu_ids
    for device in placement.devices:
        if device.share_milli is not None:
            _claim_soft(allocation.tenant, gpu_ids[(device.node_id, device.gpu_index)])
    for node_id in placement.held_nodes:
        NodeHold.objects.create(node_id=node_id, tenant=allocation.tenant, allocation=allocation)
    state = section.engine.state
    for node_id in {d.node_id for d in placement.devices}:
        if state.nodes[node_id].cc_mode:
            hold, _ = NodeHold.objects.get_or_create(node_id=node_id, defaults={"tenant": allocation.tenant})
            if hold.tenant_id != allocation.tenant_id:
                raise IntegrityError("a confidential host is held by another tenant")


def devices_take(section: PlacementSection, allocation: Allocation, placement: Placement) -> None:
    """An existing allocation takes the devices of a new placement (placed again after a fault, a move or a wake):
    its rows and claims written, the node of its pods without a GPU kept, the fleet cache and the journal told. The
    engine's state already holds it."""
    _persist_devices(section, allocation, placement)
    side = placement.side.node_id if placement.side is not None else None
    if allocation.side_node_id != side:
        Allocation.objects.filter(pk=allocation.pk).update(side_node_id=side)
        allocation.side_node_id = side
    section.cache.placements[allocation.pk] = placement
    section.journal("placed", allocation=allocation, placement=placement)


def devices_release(allocation: Allocation) -> list[int]:
    """Give back what an allocation holds; returns the nodes that go to sanitizing: the bare-metal hosts it held,
    or a Slurm cluster's hosts (``WorkloadSpec.leaves_host_dirty``)."""
    GpuClaim.objects.filter(allocation=allocation).delete()
    held = list(NodeHold.objects.filter(allocation=allocation).values_list("node_id", flat=True))
    NodeHold.objects.filter(allocation=allocation).delete()
    devices = list(allocation.devices.filter(active=True).select_related("gpu__node"))
    if allocation.workload_spec.leaves_host_dirty:
        held = sorted({*held, *(d.gpu.node_id for d in devices if d.gpu is not None)})
    allocation.devices.filter(active=True).update(active=False, released_at=timezone.now())
    for device in devices:
        gpu = device.gpu
        if gpu is None:
            continue
        still = AllocationDevice.objects.filter(gpu=gpu, active=True, allocation__tenant=allocation.tenant)
        if device.share_milli is not None and not still.filter(share_milli__isnull=False).exists():
            GpuClaim.objects.filter(gpu=gpu, soft_tenant=allocation.tenant).delete()
        node = gpu.node
        if node.cc_mode and not AllocationDevice.objects.filter(gpu__node=node, active=True).exists():
            NodeHold.objects.filter(node=node, allocation=None).delete()
    return held


def hosts_left_sanitize(
    section: Any, allocation: Allocation, held: list[int], *, kept: Iterable[int], actor: Actor
) -> None:
    """The hosts a tenant had host-level access to (``devices_release``: bare metal, a Slurm cluster) that the
    allocation no longer runs on go to sanitizing before anyone else takes them: after its release, or after a
    fault or a defragmentation moved it. One not ready (failed, quarantined) keeps ``sanitize_required`` and is
    wiped on its way back (``node_state_set``)."""
    left = sorted(set(held) - set(kept))
    if not left:
        return
    Node.objects.filter(pk__in=left).update(sanitize_required=True)
    why = "bare-metal tenant left" if allocation.rung == Rung.BARE_METAL else "Slurm cluster's tenant left"
    for node in Node.objects.filter(pk__in=left, state=NodeState.READY):
        _node_set_state(section, node, NodeState.SANITIZING, actor, why)


def _node_set_state(section: Any, node: Node, state: str, actor: Actor, why: str) -> None:
    old = node.state
    if Node.objects.filter(pk=node.pk, state=old).update(state=state, state_changed_at=timezone.now()):
        section.engine.state.set_node_state(node.pk, state)
        section.journal("node", node=node)
        audit_record(
            actor=actor,
            action=f"node.{state}",
            target_type="node",
            target_id=node.pk,
            data={"hostname": node.hostname, "from": old, "to": state, "why": why},
        )


def nodes_sanitized(*, actor: Actor, older_than: Any, hostnames: Iterable[str] | None = None) -> int:
    """Bare-metal hosts whose wipe is done (simulated: after a delay; Kubernetes: its sanitize Job completed)
    return to the pool."""
    done = 0
    sanitizing = Node.objects.filter(state=NodeState.SANITIZING, state_changed_at__lte=older_than)
    if hostnames is not None:
        sanitizing = sanitizing.filter(hostname__in=list(hostnames))
    for node in sanitizing:
        with placement_section() as section:
            Node.objects.filter(pk=node.pk).update(sanitize_required=False)
            _node_set_state(section, node, NodeState.READY, actor, "sanitized")
            done += 1
    return done
