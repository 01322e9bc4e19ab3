"""Placing a new allocation: what a tenant asks for (``AllocationSpec``), the price source every placement asks,
and the request that places and persists it (``allocation_request``).

Placement changes run inside ``placement_section`` (fleet_cache.py): decisions are serialized, the in-memory
fleet is current, and every change is journaled for the other processes. The database is the last word on
double booking: ``GpuClaim`` rows are unique per GPU memory slice, so even a wrong decision cannot commit
(``devices.py`` writes them).

Nothing runs without a price: every new placement of a tenant's workload (a request, a job restarted after a
fault, an idle endpoint woken) asks the price book, through the one function ``lifecycle`` installs with
``price_source_set``, which pools sell its shape now (``priced_request``); the engine places only there, or refuses
409 ``not_priced``. Provisioning knows nothing of money: it hands the request over and gets the pools back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, connection
from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, Invalid, ServiceError
from core.metrics import placement_observed
from core.sql import InsertStatement
from core.tasks import enqueue
from provisioning import fleet_cache
from provisioning.domain.capacity_classes import DEFAULT_CLASS, CapacityClass, OnPreemption, class_refusal
from provisioning.domain.node_host import bundle_model, host_problems, member_host
from provisioning.domain.placement.decision import Placement, Pricing, Refused, Request, Share
from provisioning.domain.placement.isolation import Refusal
from provisioning.domain.placement.preemption import Preempting
from provisioning.domain.rungs import Performance, Rung
from provisioning.domain.states import AllocationState
from provisioning.domain.workloads import Workload, WorkloadSpec
from provisioning.fleet_cache import PlacementSection, placement_section, placement_to_json
from provisioning.models import Allocation, AllocationDevice, AllocationPreemption, GpuClaim, PlacementJournal
from provisioning.selectors import tenant_policy
from provisioning.services.devices import device_rows, devices_remember, devices_take, holds_take, slice_claims
from provisioning.services.preempting import LastCheckpoint, preempted_for, spot_candidates, victims_notify
from provisioning.services.volumes import attachments_create
from tenancy.models import Tenant, TenantState

S = AllocationState
# The driver's task, queued by name: the drivers call these services, so the services do not import them.
PROVISION = "provisioning.tasks.allocation_provision"


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
    capacity_class: str = DEFAULT_CLASS.value
    reservation: int | None = None  # reserved: the tenant's reservation it draws on
    on_preemption: str = OnPreemption.STOP.value  # spot: what becomes of it when preempted
    # The node's CPU (milli-cores) and memory (MiB) taken beside each member's GPUs; 0 and 0: not resolved (an
    # allocation placed before hosts were placed took none). ``resolved`` fills in the rung's bundle.
    cpu_milli: int = 0
    memory_mib: int = 0
    # What the job's pods without a GPU take together beside its members (``FrameworkFacts.side_host``); set by
    # ``allocation_request`` from its workload's framework, never asked.
    side_cpu_milli: int = 0
    side_memory_mib: int = 0

    def resolved(self) -> AllocationSpec:
        """With the CPU and memory each member takes: as asked, else the rung's bundle for its models
        (``node_host.bundle_model``, ``bundled``), which is what the allocation keeps and its pods and VMs request."""
        model = bundle_model(self.gpu_models)
        cpu, memory = member_host(Rung(self.rung), model, self.gpus, self.cpu_milli, self.memory_mib)
        return replace(self, cpu_milli=cpu, memory_mib=memory)

    def host_problems(self) -> dict[str, str]:
        """What is wrong with the vCPUs and memory it asks per member, by field (``node_host.host_problems``)."""
        cpu = -(-self.cpu_milli // 1000) if self.cpu_milli else None
        memory = -(-self.memory_mib // 1024) if self.memory_mib else None
        return host_problems(Rung(self.rung), bundle_model(self.gpu_models), self.gpus, cpu, memory)

    @property
    def devices(self) -> int:
        """The devices it is placed on: its whole GPUs (each member's, in a gang), else one MIG slice or share;
        bare metal's nodes are counted once placed (0 here)."""
        if self.gpus:
            return self.gpus * self.gang_size
        return 0 if self.nodes else 1

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
            capacity_class=CapacityClass(self.capacity_class),
            reservation=self.reservation,
            cpu_milli=self.cpu_milli,
            memory_mib=self.memory_mib,
            side_cpu_milli=self.side_cpu_milli,
            side_memory_mib=self.side_memory_mib,
        )

    def to_json(self) -> dict[str, Any]:
        """As the allocation keeps it (``from_json`` reads it back) and the audit log records it: ``asdict``'s
        result, without its deep copy of every value (each placement writes it twice)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

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
    evidence = {**workload.to_json(), "env": [name for name, _ in workload.env]}
    evidence["cloud_init"] = bool(workload.cloud_init)
    if workload.model is not None:
        # The audit chain holds no floats: the model's size goes in as the decimal it reads as.
        size = format(Decimal(repr(float(workload.model.size_gb))), "f")
        evidence["model"] = {**evidence["model"], "size_gb": size}
    return evidence


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
        side_node_id=placement.side.node_id if placement.side else None,
        state=S.PLACED,
        spec=spec.to_json(),
        quota_milli=placement.milli,
        capacity_class=placement.capacity_class,
        reservation_id=placement.reservation,
        provisioner=provisioner,
        dedicated=placement.dedicated,
        workload=workload.to_json() if workload else None,
    )
    devices = device_rows(section, allocation, placement)
    claims = slice_claims(section, allocation, placement)
    if connection.vendor == "postgresql":
        _insert_placed(section, allocation, placement, devices, claims)
    else:
        allocation.save(force_insert=True)
        devices = AllocationDevice.objects.bulk_create(devices)
        GpuClaim.objects.bulk_create(claims)
        section.journal("placed", allocation=allocation, placement=placement)
    devices_remember(allocation, devices)
    holds_take(section, allocation, placement)
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
    *,
    tenant: Tenant,
    name: str,
    spec: AllocationSpec,
    actor: Actor,
    workload: Workload | None = None,
    last_checkpoint: LastCheckpoint | None = None,
) -> Allocation:
    """Place and persist an allocation, or raise ``PlacementRefused`` with the engine's reasons. Whether the
    tenant may buy at all (standing, budget) and whether its workload is runnable are asked first by
    ``lifecycle.services.customers.allocation_request``; whether its shape has a price now, here
    (``priced_request``), since every placement asks it.

    Its capacity class must go with its rung and terms (``class_refusal``: 422). On-demand and reserved work that
    fits no other way preempts spot work (``preempting``): the victims' goodput at stake is read from the driver's
    checkpoints (``last_checkpoint``; without it, from the start of each run)."""
    facts = WorkloadSpec.of(spec.rung, workload).facts
    refusal = class_refusal(
        CapacityClass(spec.capacity_class), facts, OnPreemption(spec.on_preemption), reservation=spec.reservation
    )
    if refusal is not None:
        raise Invalid("validation_error", refusal[1], field=refusal[0])
    for field, problem in spec.host_problems().items():
        raise Invalid("validation_error", problem, field=field)
    spec = spec.resolved()
    if facts.launcher is not None:
        side_cpu, side_memory = facts.launcher.side_host
        spec = replace(spec, side_cpu_milli=side_cpu, side_memory_mib=side_memory)
    request = priced_request(spec, at=timezone.now())

    def decide() -> Allocation:
        # The tenant's policy and quota as the caller read them (the API reads them with the caller's key,
        # moments ago): nothing is read again inside the section, which serializes every decision.
        with placement_section() as section:
            now = timezone.now()
            found = section.engine.place_preempting(
                request,
                tenant_policy(tenant),
                capacity_class=request.capacity_class,
                candidates=lambda: spot_candidates(section, now=now, last_checkpoint=last_checkpoint),
                quota_milli=tenant.gpu_quota_milli,
            )
            if isinstance(found, Refused):
                raise PlacementRefused(found)
            result, victims = (found.placement, found.victims) if isinstance(found, Preempting) else (found, ())
            notices = victims_notify(section, victims, now=now, actor=actor, last_checkpoint=last_checkpoint)
            allocation = _persist(
                section,
                tenant=tenant,
                name=name,
                spec=spec,
                placement=result,
                provisioner=settings.LADDER_PROVISIONER,
                workload=workload,
            )
            if workload is not None and workload.volume_ids:  # before the audit record: the chain head is last
                attachments_create(allocation=allocation, workload=workload, actor=actor, at=allocation.created_at)
            audit_record(
                actor=actor,
                action="allocation.placed",
                target_type="allocation",
                target_id=allocation.pk,
                tenant=tenant,
                data={
                    "name": name,
                    "spec": spec.to_json(),
                    "devices": len(result.devices),
                    "hosts": sorted({d.hostname for d in result.devices}),
                    "workload": _workload_evidence(workload),
                },
            )
            section.cache.placements[allocation.pk] = result
            if notices:
                preempted_for(notices, allocation)
            enqueue(PROVISION, allocation.pk)
        return allocation

    with placement_observed(spec.rung):
        return stale_fleet_retry(decide)


def queued_place(*, actor: Actor, now: datetime | None = None) -> int:
    """Place queued work again where room has returned, the longest waiting first, as the spot work it is (it
    preempts nothing); each placed resumes from its checkpoint. Work of a tenant that may not buy now (suspended,
    closing) waits. Returns how many were placed."""
    now = now or timezone.now()
    placed = 0
    queued = Allocation.objects.filter(state=S.QUEUED, tenant__state=TenantState.ACTIVE).select_related("tenant")
    for allocation in queued.order_by("preempted_at", "pk"):
        request = priced_request(AllocationSpec.from_json(allocation.spec), at=now)
        tenant = allocation.tenant
        with placement_section() as section:
            result = section.engine.place(request, tenant_policy(tenant), quota_milli=tenant.gpu_quota_milli)
            if isinstance(result, Refused):
                continue
            if not Allocation.objects.filter(pk=allocation.pk, state=S.QUEUED).update(
                state=S.PLACED, state_changed_at=now, failure_reason=""
            ):
                section.engine.release(result)  # stopped meanwhile
                continue
            devices_take(section, allocation, result)
            AllocationPreemption.objects.filter(allocation=allocation, requeued=True, resumed_at=None).update(
                resumed_at=now
            )
            audit_record(
                actor=actor,
                action="allocation.requeued",
                target_type="allocation",
                target_id=allocation.pk,
                tenant=tenant,
                data={
                    "devices": len(result.devices),
                    "hosts": sorted({d.hostname for d in result.devices}),
                    "checkpoint_at": allocation.checkpoint_at.isoformat() if allocation.checkpoint_at else None,
                },
            )
            enqueue(PROVISION, allocation.pk)
            placed += 1
    return placed
