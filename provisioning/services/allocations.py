"""Every write to allocations: request (place and persist), stop, the state machine, release, node failures.

Placement changes run inside ``placement_section`` (fleet_cache.py): decisions are serialized, the in-memory
fleet is current, and every change is journaled for the other processes. The database is the last word on
double booking: ``GpuClaim`` rows are unique per GPU memory slice, so even a wrong decision cannot commit.

Nothing runs without a price: every new placement of a tenant's workload (a request, a job restarted after a
fault, an idle endpoint woken) asks the price book, through the one function ``lifecycle`` installs with
``price_source_set``, which pools sell its shape now (``priced_request``); the engine places only there, or refuses
409 ``not_priced``. Provisioning knows nothing of money: it hands the request over and gets the pools back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, connection
from django.db.models import F, Q
from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, ServiceError
from core.metrics import placement_observed
from core.sql import InsertStatement
from core.tasks import enqueue
from provisioning import fleet_cache
from provisioning.events import allocation_started, allocation_stopped
from provisioning.fleet_cache import PlacementSection, placement_section, placement_to_json
from provisioning.models import (
    Allocation,
    AllocationDevice,
    AllocationFault,
    GpuClaim,
    Node,
    NodeHold,
    NodeState,
    PlacementJournal,
)
from provisioning.placement.catalog import CATALOG
from provisioning.placement.decision import Device, Placement, Pricing, Refused, Request, Share, mig_milli
from provisioning.placement.defragment import move_check
from provisioning.placement.isolation import Refusal
from provisioning.placement.mig import GEOMETRY, MEMORY_SLICES
from provisioning.placement.rungs import Performance, Rung
from provisioning.placement.state import FULL_SHARE
from provisioning.selectors import tenant_policy
from provisioning.states import HOLDS_DEVICES, AllocationState, can_move
from provisioning.workloads import Workload
from tenancy.models import Tenant
from tenancy.services import tenant_require_writable

S = AllocationState
# The drivers' tasks, queued by name: the drivers call these services, so the services do not import them.
PROVISION = "provisioning.tasks.allocation_provision"
RELEASE = "provisioning.tasks.allocation_release"


class PlacementRefused(ServiceError):
    """The engine said no: 409 with the reason code (no_capacity, residency, not_priced, ...), or 422
    invalid_isolation. A ``not_priced`` refusal names the SKU that has no price (``sku``)."""

    def __init__(self, refusal: Refused) -> None:
        first = refusal.reasons[0]
        super().__init__(
            first.code.value,
            first.message,
            status=422 if first.code == "invalid_isolation" else 409,
            extra={
                "reasons": [{"code": r.code.value, "message": r.message} for r in refusal.reasons],
                **({"sku": first.sku} if first.sku else {}),
            },
        )
        self.reasons: tuple[Refusal, ...] = refusal.reasons


# (request, at) -> which pools sell the request's shape at ``at``; installed by ``lifecycle`` (billing's price book).
PriceSource = Callable[[Request, datetime], Pricing]
_price_source: list[PriceSource] = []


def price_source_set(source: PriceSource) -> None:
    """Install the one function that reads the price book for placement (``lifecycle`` does, when apps are ready)."""
    _price_source[:] = [source]


def priced_request(spec: AllocationSpec, *, at: datetime) -> Request:
    """The engine's request for ``spec``, carrying which pools sell its shape at ``at``: it is placed only there
    (a shape without an effective price is refused ``not_priced``). Read before the placement section, so the
    decisions it serializes wait for no price query."""
    if not _price_source:
        raise LookupError("no price source is installed (the lifecycle app installs it when Django starts)")
    request = spec.to_request()
    return replace(request, pricing=_price_source[0](request, at))


@dataclass(frozen=True)
class AllocationSpec:
    """What a tenant asks for (the API's body), kept on the allocation so a job can be placed again."""

    rung: str
    gpu_models: tuple[str, ...]
    gpus: int = 0
    mig_profile: str | None = None
    share_mode: str | None = None
    share_milli: int | None = None
    nodes: int = 0
    gang_size: int = 1
    topology: str | None = None
    regions: tuple[str, ...] | None = None

    def to_request(self) -> Request:
        share = Share(Performance(self.share_mode), self.share_milli or 0) if self.share_mode else None
        return Request(
            rung=Rung(self.rung),
            models=self.gpu_models,
            gpus=self.gpus,
            mig_profile=self.mig_profile,
            share=share,
            nodes=self.nodes,
            gang_size=self.gang_size,
            topology=self.topology,
            regions=frozenset(self.regions) if self.regions is not None else None,
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AllocationSpec:
        data = dict(data)
        data["gpu_models"] = tuple(data["gpu_models"])
        if data.get("regions") is not None:
            data["regions"] = tuple(data["regions"])
        return cls(**data)


def _workload_evidence(workload: Workload | None) -> dict[str, Any] | None:
    """The workload as the audit log keeps it: everything but the values of its variables (secrets are names)."""
    if workload is None:
        return None
    return {**workload.to_json(), "env": [name for name, _ in workload.env], "cloud_init": bool(workload.cloud_init)}


# --- claims: the database's guard ---------------------------------------------------------------------------


def _claims_for(section: PlacementSection, allocation: Allocation, placement: Placement) -> list[GpuClaim]:
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


def _quota_milli(placement: Placement) -> int:
    total = 0
    for device in placement.devices:
        if device.share_milli is not None:
            total += device.share_milli
        elif device.mig_profile is not None:
            total += mig_milli(CATALOG[placement.model].mig_profiles[device.mig_profile])
        else:
            total += FULL_SHARE
    return total


def _persist(
    section: PlacementSection,
    *,
    tenant: Tenant,
    name: str,
    spec: AllocationSpec,
    placement: Placement,
    provisioner: str,
    workload: Workload | None,
) -> Allocation:
    """Write the allocation, its devices, its claims and its journal entry. Ids come from the in-memory fleet: no
    reads here. On PostgreSQL the four inserts go as one statement: they run inside the section that serializes
    every decision, where each round trip and each statement the ORM compiles is time every other process waits."""
    hall, gpu_model = section.cache.node_rows[placement.devices[0].node_id]
    allocation = Allocation(
        tenant=tenant,
        name=name,
        rung=placement.rung,
        performance=placement.performance,
        security=placement.security,
        gpu_model=gpu_model,
        hall=hall,
        state=S.PLACED,
        spec=asdict(spec),
        quota_milli=_quota_milli(placement),
        provisioner=provisioner,
        dedicated=placement.dedicated,
        workload=workload.to_json() if workload else None,
    )
    devices = _devices_of(section, allocation, placement)
    claims = _claims_for(section, allocation, placement)
    if connection.vendor == "postgresql":
        _insert_placed(section, allocation, placement, devices, claims)
    else:
        allocation.save(force_insert=True)
        devices = AllocationDevice.objects.bulk_create(devices)
        GpuClaim.objects.bulk_create(claims)
        section.journal("placed", allocation=allocation, placement=placement)
    _remember_devices(allocation, devices)
    _claim_rest(section, allocation, placement)
    return allocation


def _insert_placed(
    section: PlacementSection,
    allocation: Allocation,
    placement: Placement,
    devices: list[AllocationDevice],
    claims: list[GpuClaim],
) -> None:
    """The allocation, its devices, its slice claims and its journal entry in one statement; the ids it returns
    are set on the instances, as the ORM would."""
    insert = InsertStatement()
    insert.insert("a", allocation, refs={}, returning="id")
    parent = {"allocation_id": insert.ref("a", "id")}
    insert.insert_many("d", devices, refs=parent, returning="id")
    insert.insert_many("c", claims, refs=parent, returning="id")
    entry = PlacementJournal(op="placed", placement=placement_to_json(placement))
    insert.insert("j", entry, refs=parent, returning="seq")
    # Ids in insert order, as Django's own bulk insert assumes of PostgreSQL's sequences.
    device_ids = "(SELECT array_agg(id ORDER BY id) FROM d)" if devices else "NULL"
    allocation_id, seq, ids = insert.execute(f"SELECT {insert.ref('a', 'id')}, {insert.ref('j', 'seq')}, {device_ids}")
    allocation.pk = allocation_id
    allocation._state.adding = False
    for device, pk in zip(devices, ids or [], strict=True):
        device.pk, device.allocation_id = pk, allocation_id
        device._state.adding = False
    section.journaled(seq)


def _remember_devices(allocation: Allocation, devices: list[AllocationDevice]) -> None:
    """Serve ``allocation.devices.all()`` from the rows just written, as a prefetch would, so the caller's
    response needs no query; any filtered read still goes to the database."""
    queryset = allocation.devices.all()
    queryset._result_cache = devices
    queryset._prefetch_done = True  # type: ignore[attr-defined]
    allocation._prefetched_objects_cache = {"devices": queryset}  # type: ignore[attr-defined]


def _devices_of(section: PlacementSection, allocation: Allocation, placement: Placement) -> list[AllocationDevice]:
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
    devices = AllocationDevice.objects.bulk_create(_devices_of(section, allocation, placement))
    _remember_devices(allocation, devices)
    GpuClaim.objects.bulk_create(_claims_for(section, allocation, placement))
    _claim_rest(section, allocation, placement)


def _claim_rest(section: PlacementSection, allocation: Allocation, placement: Placement) -> None:
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
    its rows and claims written, the fleet cache and the journal told. The engine's state already holds it."""
    _persist_devices(section, allocation, placement)
    section.cache.placements[allocation.pk] = placement
    section.journal("placed", allocation=allocation, placement=placement)


def _release_devices(allocation: Allocation) -> list[int]:
    """Give back what an allocation holds; returns the nodes that go to sanitizing: the bare-metal hosts it held,
    or a Slurm cluster's hosts (``WorkloadSpec.leaves_host_dirty``)."""
    GpuClaim.objects.filter(allocation=allocation).delete()
    held = list(NodeHold.objects.filter(allocation=allocation).values_list("node_id", flat=True))
    NodeHold.objects.filter(allocation=allocation).delete()
    devices = list(allocation.devices.filter(active=True).select_related("gpu__node"))
    if allocation.workload_spec.leaves_host_dirty:
        held = sorted({*held, *(d.gpu.node_id for d in devices if d.gpu is not None)})
    allocation.devices.filter(active=True).update(active=False)
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


# --- services -------------------------------------------------------------------------------------------------


T = TypeVar("T")


def stale_fleet_retry(decide: Callable[[], T]) -> T:
    """Run a placement decision (its own placement section); when the database refuses a claim the in-memory fleet
    thought free, the fleet was stale: read it again and decide once more, then give up with 409 ``no_capacity``."""
    for attempt in range(2):
        try:
            return decide()
        except IntegrityError:
            fleet_cache.FLEET.invalidate()
            if attempt:
                raise Conflict("no_capacity", "The capacity was taken concurrently; try again.") from None
    raise AssertionError("unreachable")  # pragma: no cover


def allocation_request(
    *, tenant: Tenant, name: str, spec: AllocationSpec, actor: Actor, workload: Workload | None = None
) -> Allocation:
    """Place and persist an allocation, or raise ``PlacementRefused`` with the engine's reasons. Whether the
    tenant may buy at all (standing, budget) and whether its workload is runnable are asked first by
    ``lifecycle.services.customers.allocation_request``; whether its shape has a price now, here
    (``priced_request``), since every placement asks it."""
    request = priced_request(spec, at=timezone.now())

    def decide() -> Allocation:
        # The tenant's policy and quota as the caller read them (the API reads them with the caller's key,
        # moments ago): nothing is read again inside the section, which serializes every decision.
        with placement_section() as section:
            result = section.engine.place(request, tenant_policy(tenant), quota_milli=tenant.gpu_quota_milli)
            if isinstance(result, Refused):
                raise PlacementRefused(result)
            allocation = _persist(
                section,
                tenant=tenant,
                name=name,
                spec=spec,
                placement=result,
                provisioner=settings.LADDER_PROVISIONER,
                workload=workload,
            )
            audit_record(
                actor=actor,
                action="allocation.placed",
                target_type="allocation",
                target_id=allocation.pk,
                tenant=tenant,
                data={
                    "name": name,
                    "spec": asdict(spec),
                    "devices": len(result.devices),
                    "hosts": sorted({d.hostname for d in result.devices}),
                    "workload": _workload_evidence(workload),
                },
            )
            section.cache.placements[allocation.pk] = result
            enqueue(PROVISION, allocation.pk)
        return allocation

    with placement_observed(spec.rung):
        return stale_fleet_retry(decide)


def allocation_transition(
    *,
    allocation: Allocation,
    to: AllocationState,
    actor: Actor,
    reason: str = "",
    expect: AllocationState | None = None,
    at: datetime | None = None,
) -> bool:
    """Move an allocation by compare-and-swap on its current state; False when someone else moved it first.

    Entering ``running`` opens its usage interval and leaving it closes it (docs/design.md §6), at ``at`` (default now;
    the provider's own time when it reports one). Leaving the device-holding states gives the devices back
    (journaled for the engine)."""
    current = AllocationState(expect or allocation.state)
    if not can_move(current, to):
        raise Conflict("invalid_transition", f"An allocation cannot go from {current} to {to}.")
    now = at or timezone.now()
    with placement_section() as section:
        fields: dict[str, Any] = {"state": to, "state_changed_at": now, **_endpoint_fields(allocation, to, now)}
        if to == S.RUNNING:
            fields["running_since"] = now
        if reason:
            fields["failure_reason"] = reason[:300]
        if not Allocation.objects.filter(pk=allocation.pk, state=current).update(**fields):
            return False
        allocation.refresh_from_db()
        if to == S.RUNNING:
            allocation_started.send(sender=Allocation, allocation=allocation, at=now)
        if current == S.RESTARTING and to == S.RUNNING:
            # The fault's recovery ends here: detection-to-restart is running_at less detected_at.
            AllocationFault.objects.filter(allocation=allocation, running_at=None).update(running_at=now)
        elif current == S.RUNNING:
            allocation_stopped.send(sender=Allocation, allocation=allocation, at=now)
        if current in HOLDS_DEVICES and to not in HOLDS_DEVICES:
            held = _release_devices(allocation)
            placement = section.cache.placements.pop(allocation.pk, None)
            if placement is not None:
                section.engine.release(placement)
            section.journal("released", allocation=allocation)
            _wipe_left(section, allocation, held, kept=(), actor=actor)
        audit_record(
            actor=actor,
            action=f"allocation.{to}",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=allocation.tenant,
            data={
                "from": current,
                "to": to,
                **({"reason": reason} if reason else {}),
                **({"cold_start_ms": fields["cold_start_ms"]} if "cold_start_ms" in fields else {}),
            },
        )
    return True


def _endpoint_fields(allocation: Allocation, to: AllocationState, now: datetime) -> dict[str, Any]:
    """A serverless endpoint enters ``running`` with one ready replica (its driver reports more as they come:
    ``allocation_replicas_set``) and has none when ``idle``; entering ``running`` after a wake ends its cold start,
    measured from the wake."""
    if allocation.rung != Rung.SERVERLESS:
        return {}
    if to == S.IDLE:
        return {"replicas": 0}
    if to != S.RUNNING:
        return {}
    fields: dict[str, Any] = {"replicas": 1}
    if allocation.woke_at is not None and allocation.cold_start_ms is None:
        fields["cold_start_ms"] = max(0, round((now - allocation.woke_at).total_seconds() * 1000))
    return fields


def _wipe_left(section: Any, allocation: Allocation, held: list[int], *, kept: Iterable[int], actor: Actor) -> None:
    """The hosts a tenant had host-level access to (``_release_devices``: bare metal, a Slurm cluster) that the
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


STOP_ATTEMPTS = 5  # states a stop follows before it gives up (each move is one step of the state machine)


def allocation_stop(*, allocation: Allocation, actor: Actor, at: datetime | None = None) -> Allocation:
    """The tenant stops an allocation: it goes to ``stopping`` (at ``at``, default now) and the provisioner tears
    it down.

    The state read may be stale: the driver moves allocations too (``placed`` to ``provisioning`` to ``running``)
    between the caller's read and this compare-and-swap. The swap then fails, and the state is read again and the
    stop tried from there, so a stop is never lost to a move it raced (the answer would say ``provisioning`` and
    the allocation run on, billed).

    A suspended tenant may stop its work; a closing one's work is stopped by the closure itself."""
    if actor.for_tenant:
        tenant_require_writable(allocation.tenant, actor=actor)
    for _ in range(STOP_ATTEMPTS):
        state = AllocationState(allocation.state)
        if state in (S.STOPPING, S.STOPPED, S.FAILED):
            return allocation  # stopping twice is harmless
        if allocation_transition(allocation=allocation, to=S.STOPPING, actor=actor, expect=state, at=at):
            enqueue(RELEASE, allocation.pk)
            allocation.refresh_from_db()
            return allocation
        allocation.refresh_from_db()
    raise Conflict("allocation_busy", "The allocation kept changing state while it was being stopped; try again.")


# When a job last saved a checkpoint before a moment (None: unknown); the driver knows (``Provisioner``).
LastCheckpoint = Callable[[Allocation, datetime], datetime | None]


def node_failed(
    *,
    node: Node,
    actor: Actor,
    last_checkpoint: LastCheckpoint,
    fault_at: datetime | None = None,
    cause: str = "",
) -> dict[str, int]:
    """A node died: jobs on it restart elsewhere from their checkpoint, everything else on it fails.

    ``fault_at`` is when the node went bad (a node condition's transition time; default now), ``cause`` what
    said so; both are kept with each job's fault record."""
    counts = {"restarted": 0, "failed": 0}
    now = timezone.now()
    fault = _FaultAt(at=min(fault_at or now, now), detected=now, cause=cause or f"node {node.hostname} failed")
    live = Allocation.objects.filter(state__in=HOLDS_DEVICES, devices__gpu__node=node, devices__active=True).distinct()
    for allocation in live:
        state = AllocationState(allocation.state)
        # A gang whose new node fails while it restarts is placed again too.
        restartable = allocation.workload_spec.restarts_from_checkpoint and (
            state == S.RESTARTING or can_move(state, S.RESTARTING)
        )
        if restartable and _restart_job(allocation, node, actor, last_checkpoint, fault):
            counts["restarted"] += 1
            continue
        if allocation.state in (S.FAILED, S.STOPPED):
            counts["failed"] += 1
            continue  # the restart found no room and failed it
        allocation_transition(allocation=allocation, to=S.FAILED, actor=actor, reason=f"node {node.hostname} failed")
        counts["failed"] += 1
    return counts


@dataclass(frozen=True)
class _FaultAt:
    at: datetime
    detected: datetime
    cause: str


def _goodput_stop(
    allocation: Allocation, current: AllocationState, last_checkpoint: LastCheckpoint, fault: _FaultAt
) -> tuple[datetime | None, int]:
    """Where a faulted job's billing stops and the work lost (ms): a running gang goes back to its last
    checkpoint, never before this run began (it resumed from a checkpoint then) nor after the fault; a gang not
    running yet loses nothing and is not billed."""
    if current != S.RUNNING:
        return allocation.checkpoint_at, 0
    since = allocation.running_since or allocation.state_changed_at
    checkpoint = last_checkpoint(allocation, fault.at) or fault.at
    checkpoint = min(max(checkpoint, since), fault.at)
    return checkpoint, int((fault.at - checkpoint).total_seconds() * 1000)


def _fault_record(
    allocation: Allocation, node: Node, fault: _FaultAt, checkpoint: datetime | None, lost_ms: int, outcome: str
) -> dict[str, Any]:
    """Keep the fault (per job, queryable) and its lost work on the allocation; the audit event's evidence."""
    AllocationFault.objects.create(
        tenant_id=allocation.tenant_id,
        allocation=allocation,
        hostname=node.hostname,
        cause=fault.cause[:300],
        fault_at=fault.at,
        detected_at=fault.detected,
        checkpoint_at=checkpoint,
        lost_ms=lost_ms,
        outcome=outcome,
    )
    Allocation.objects.filter(pk=allocation.pk).update(
        restarts=F("restarts") + (1 if outcome == "restarted" else 0),
        goodput_lost_ms=F("goodput_lost_ms") + lost_ms,
    )
    total = Allocation.objects.filter(pk=allocation.pk).values_list("goodput_lost_ms", flat=True).get()
    return {
        "failed_node": node.hostname,
        "cause": fault.cause[:300],
        "fault_at": fault.at.isoformat(),
        "checkpoint_at": checkpoint.isoformat() if checkpoint else None,
        "lost_ms": lost_ms,
        "goodput_lost_ms": total,
    }


def _restart_job(
    allocation: Allocation, node: Node, actor: Actor, last_checkpoint: LastCheckpoint, fault: _FaultAt
) -> bool:
    """Place the gang again (the failed node is out of the pool); False when it no longer fits anywhere.

    The provider's fault is not billed: a job is billed on goodput, so metering stops at the gang's last
    checkpoint (the work since is lost and done again) and starts again when the gang runs again. The lost work
    is kept per fault (``AllocationFault``) and summed on the allocation (``goodput_lost_ms``)."""
    current = AllocationState(allocation.state)
    spec = AllocationSpec.from_json(allocation.spec)
    request = priced_request(spec, at=fault.detected)  # placed again: where its shape has a price now
    with placement_section() as section:
        if not Allocation.objects.filter(pk=allocation.pk, state=current).update(
            state=S.RESTARTING, state_changed_at=fault.detected
        ):
            return True  # someone else is handling it
        checkpoint, lost_ms = _goodput_stop(allocation, current, last_checkpoint, fault)
        if current == S.RUNNING:
            allocation_stopped.send(sender=Allocation, allocation=allocation, at=checkpoint or fault.at)
            # The gang resumes from this checkpoint: it is the one a later fault goes back to, at the least.
            Allocation.objects.filter(pk=allocation.pk).update(checkpoint_at=checkpoint)
        held = _release_devices(allocation)
        old = section.cache.placements.pop(allocation.pk, None)
        if old is not None:
            section.engine.release(old)
        section.journal("released", allocation=allocation)
        tenant = allocation.tenant
        result = section.engine.place(request, tenant_policy(tenant), quota_milli=tenant.gpu_quota_milli)
        if isinstance(result, Refused):
            evidence = _fault_record(allocation, node, fault, checkpoint, lost_ms, "failed")
            Allocation.objects.filter(pk=allocation.pk).update(
                state=S.FAILED,
                failure_reason=f"node {node.hostname} failed; no room to restart: {result.message}"[:300],
            )
            audit_record(
                actor=actor,
                action="allocation.failed",
                target_type="allocation",
                target_id=allocation.pk,
                tenant=tenant,
                data={"from": S.RESTARTING, "reason": result.message, **evidence},
            )
            _wipe_left(section, allocation, held, kept=(), actor=actor)
            return False
        devices_take(section, allocation, result)
        _wipe_left(section, allocation, held, kept={d.node_id for d in result.devices}, actor=actor)
        evidence = _fault_record(allocation, node, fault, checkpoint, lost_ms, "restarted")
        audit_record(
            actor=actor,
            action="allocation.restarting",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=tenant,
            data={
                "from": current,
                "devices": len(result.devices),
                "hosts": sorted({d.hostname for d in result.devices}),
                **evidence,
            },
        )
        enqueue(PROVISION, allocation.pk)
    return True


def allocation_checkpoint_record(*, allocation: Allocation, at: datetime, step: str = "") -> bool:
    """The workload reported a checkpoint (seen by reconciliation, while its nodes are alive): keep the latest, so
    a node fault later bills up to it and the gang resumes from it. Bookkeeping, not audited (the fault that uses
    it is); a report older than the one kept, or from before this run, changes nothing. True when kept."""
    since = allocation.running_since or allocation.state_changed_at
    if at < since:
        return False
    newer = Q(checkpoint_at__isnull=True) | Q(checkpoint_at__lt=at)
    return bool(
        Allocation.objects.filter(newer, pk=allocation.pk, state=S.RUNNING).update(
            checkpoint_at=at, checkpoint_step=step[:100]
        )
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


def allocation_move(
    *,
    allocation_id: int,
    before: frozenset[Device],
    after: tuple[Device, ...],
    actor: Actor,
    last_checkpoint: LastCheckpoint,
    why: str,
) -> str | None:
    """Move a running job or serverless allocation from the devices it holds (``before``) onto ``after``, planned
    by the defragmenter; returns why it could not (and nothing changed), or None once it is moving.

    Everything is checked again under the placement lock: the allocation still runs on exactly ``before`` and
    every device of ``after`` is still free for it under the engine's rules (``move_check``). Then it goes to
    ``restarting`` on the new devices and the driver provisions it there: a job resumes from its checkpoint (its
    usage closes at that checkpoint, as after a fault: the work since is redone at the provider's cost), an
    endpoint's replicas are re-created (its usage closes now). Usage opens again when it runs."""
    with placement_section() as section:
        allocation = Allocation.objects.select_related("tenant").filter(pk=allocation_id).first()
        if allocation is None or allocation.state != S.RUNNING:
            return "it is no longer running"
        current = section.cache.placements.get(allocation.pk)
        if current is None or frozenset(current.devices) != before:
            return "its devices changed since the plan was made"
        moved = replace(current, devices=after)
        section.engine.release(current)  # its own devices count as free for the check (a gang may shift)
        refusal = move_check(section.engine.state, moved)
        now = timezone.now()
        if refusal is None and not Allocation.objects.filter(pk=allocation.pk, state=S.RUNNING).update(
            state=S.RESTARTING, state_changed_at=now
        ):
            refusal = "it is no longer running"
        if refusal is not None:
            section.engine.apply(current)
            return refusal
        ended, lost_ms = now, 0
        if allocation.workload_spec.restarts_from_checkpoint:  # as after a fault: the work since redone unbilled
            move = _FaultAt(at=now, detected=now, cause=why)
            checkpoint, lost_ms = _goodput_stop(allocation, S.RUNNING, last_checkpoint, move)
            ended = checkpoint or now
            Allocation.objects.filter(pk=allocation.pk).update(checkpoint_at=checkpoint)
        allocation_stopped.send(sender=Allocation, allocation=allocation, at=ended)
        held = _release_devices(allocation)
        section.journal("released", allocation=allocation)
        section.engine.apply(moved)
        devices_take(section, allocation, moved)
        _wipe_left(section, allocation, held, kept={d.node_id for d in moved.devices}, actor=actor)
        audit_record(
            actor=actor,
            action="allocation.moved",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=allocation.tenant,
            data={
                "from": sorted({d.hostname for d in current.devices}),
                "to": sorted({d.hostname for d in moved.devices}),
                "devices": len(moved.devices),
                "why": why,
                "lost_ms": lost_ms,
            },
        )
        enqueue(PROVISION, allocation.pk)
    return None
