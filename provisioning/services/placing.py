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
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, connection
from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, ServiceError
from core.metrics import placement_observed
from core.sql import InsertStatement
from core.tasks import enqueue
from provisioning import fleet_cache
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.decision import Placement, Pricing, Refused, Request, Share, mig_milli
from provisioning.domain.placement.isolation import Refusal
from provisioning.domain.placement.state import FULL_SHARE
from provisioning.domain.rungs import Performance, Rung
from provisioning.domain.states import AllocationState
from provisioning.domain.workloads import Workload
from provisioning.fleet_cache import PlacementSection, placement_section, placement_to_json
from provisioning.models import Allocation, AllocationDevice, GpuClaim, PlacementJournal
from provisioning.selectors import tenant_policy
from provisioning.services.devices import device_rows, devices_remember, holds_take, slice_claims
from provisioning.services.volumes import attachments_create
from tenancy.models import Tenant

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
    evidence = {**workload.to_json(), "env": [name for name, _ in workload.env]}
    evidence["cloud_init"] = bool(workload.cloud_init)
    if workload.model is not None:
        # The audit chain holds no floats: the model's size goes in as the decimal it reads as.
        size = format(Decimal(repr(float(workload.model.size_gb))), "f")
        evidence["model"] = {**evidence["model"], "size_gb": size}
    return evidence


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
