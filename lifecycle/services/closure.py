"""Account closure: a tenant leaves, as a workflow that survives crashes.

``tenant_close`` (owner) persists the closure first: in one transaction the tenant becomes ``closing`` (it can
read, not change anything) and an ``AccountClosure`` row records the first step. Then each step runs as the task
``lifecycle.tasks.closure_advance`` (one step per run; it queues the next), and every step is idempotent, so a
failed step is retried and a killed worker's step is run again (``closures_resume`` on beat finds closures that
stopped moving) without doing anything twice:

1. ``stopping``: stop every allocation (leaving ``running`` closes its metering), in one transaction;
2. ``invoicing``: store the final invoice (a finance record, kept for its legal minimum);
3. ``exporting``: write the export bundle of the tenant's data (JSON lines, content included, readable through
   the closure period), unless the tenant asked for zero retention of exports. Volumes are listed in it (name,
   region, kind, size, snapshots) with a notice, not copied: their data stays on the backend until ``closes_at``;
4. ``scheduling``: schedule the shredding of everything else not under a legal hold or a legal minimum (a volume
   stops being mounted and billed; its key, then the volume, are destroyed at ``closes_at``); the closure now
   ``waiting``s until ``closes_at``, and the tenant's owners and admins are told when that is and what becomes of
   its volumes.

An asset written by a step whose run died before the step was recorded is found again by its name, category and
time, never written twice. The retention sweep ends the closure when the waiting period is over (``closed``) and
shreds the tenant key once nothing under it may remain. Every step is audited.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from billing.selectors import invoice_upcoming
from billing.services.accounts import notify
from compliance.domain import retention
from compliance.domain.retention import Category
from compliance.models import AccountClosure, AssetState, ClosureStep, DataAsset, ShredReason
from compliance.services.assets import (
    assets_schedule,
    data_asset_content,
    data_asset_create,
    holds_active,
    shred_wait,
)
from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict
from core.tasks import enqueue
from lifecycle.services.volumes import volumes_closure_notice, volumes_described
from provisioning.domain.placement.isolation import region_allowed
from provisioning.domain.states import AllocationState as S
from provisioning.models import Allocation, Region
from provisioning.selectors import region_info, tenant_policy
from provisioning.services.stopping import allocation_stop
from tenancy.locks import lock_tenant
from tenancy.models import Tenant, TenantState
from tenancy.services import tenant_require_writable

EXPORT_FORMAT = "ladder-export"


def _home_region(tenant: Tenant) -> Region | None:
    """Where the closure's own records go: the region holding most of the tenant's data, else the first region
    its residency allows."""
    counts = Counter(DataAsset.objects.filter(tenant=tenant).values_list("region_id", flat=True))
    policy = tenant_policy(tenant)
    ordered = sorted(Region.objects.all(), key=lambda r: (-counts.get(r.pk, 0), r.pk))
    return next((r for r in ordered if region_allowed(policy, region_info(r)) is None), None)


def _json(value: Any) -> Any:
    return str(value) if isinstance(value, (Decimal, datetime)) else value


def export_lines(tenant: Tenant, now: datetime) -> Iterator[bytes]:
    """The export bundle: a header, then one line per live asset, with its content when it has any. A volume's
    asset carries the volume instead (``volume``: name, region, kind, size, snapshots), and the header a notice
    that volumes' data is not in the bundle and when it is destroyed: the closure period ends one waiting period
    after its last step, so no earlier than ``now`` (when the closure was asked for) plus that period."""
    header: dict[str, Any] = {
        "format": EXPORT_FORMAT,
        "version": 1,
        "tenant": tenant.slug,
        "created_at": now.isoformat(),
    }
    volumes = {v["id"]: v for v in volumes_described(tenant)}
    live = set(
        DataAsset.objects.filter(tenant=tenant, state=AssetState.LIVE, volume__isnull=False).values_list(
            "volume_id", flat=True
        )
    )
    if live:
        header["volumes"] = len(live)
        header["notice"] = volumes_closure_notice(count=len(live), closes_at=now + shred_wait(), exact=False)
    yield json.dumps(header).encode() + b"\n"
    assets = DataAsset.objects.filter(tenant=tenant, state=AssetState.LIVE).select_related("region", "tenant")
    for asset in assets.order_by("pk").iterator(chunk_size=500):
        line: dict[str, Any] = {
            "id": asset.pk,
            "name": asset.name,
            "category": asset.category,
            "region": asset.region.code,
            "size_bytes": asset.size_bytes,
            "created_at": asset.created_at.isoformat(),
            "derived_from": sorted(asset.derived_from.values_list("pk", flat=True)),
        }
        if asset.volume_id is not None:
            line["volume"] = volumes.get(asset.volume_id)  # its data stays on the backend (the header says until when)
        elif asset.location:
            line["content"] = base64.b64encode(data_asset_content(asset=asset)).decode()
        yield json.dumps(line).encode() + b"\n"


def tenant_close(*, tenant: Tenant, actor: Actor, now: datetime | None = None) -> AccountClosure:
    """Start the closure: the tenant is ``closing`` and the closure recorded, in one transaction; the steps follow
    in the background (``closure_advance``)."""
    now = now or timezone.now()
    with transaction.atomic():
        tenant = lock_tenant(tenant.pk)
        tenant_require_writable(tenant, actor=actor)  # the owner asking twice: a closing tenant only reads
        if tenant.state in (TenantState.CLOSING, TenantState.CLOSED):
            raise Conflict("tenant_closing", f"The tenant is already {tenant.state}.")
        Tenant.objects.filter(pk=tenant.pk).update(state=TenantState.CLOSING)
        tenant.state = TenantState.CLOSING
        closure = AccountClosure.objects.create(
            tenant=tenant, requested_by=actor.label, requested_at=now, updated_at=now, actor=_actor_record(actor)
        )
        audit_record(
            actor=actor,
            action="tenant.closing",
            target_type="tenant",
            target_id=tenant.slug,
            tenant=tenant,
            data={"from": "active", "closure": closure.pk},
        )
        # Best effort: without a broker the closure still moves, when closures_resume finds it.
        enqueue(CLOSURE_ADVANCE, closure.pk, best_effort=True)
    return closure


CLOSURE_ADVANCE = "lifecycle.tasks.closure_advance"
# A closure whose step has not moved for this long is taken up again by closures_resume (its run died).
STALLED_AFTER = timedelta(minutes=5)


def _actor_record(actor: Actor) -> dict[str, str]:
    return {"type": actor.type, "id": actor.id, "label": actor.label, "api_key_prefix": actor.api_key_prefix}


def _actor_of(closure: AccountClosure) -> Actor:
    """The closure's steps are recorded as done by whoever asked for it. They are the product's work on a closing
    tenant, not the tenant's own writes, so they are never refused for the tenant's standing (``for_tenant``)."""
    return Actor(**closure.actor, for_tenant=False) if closure.actor else Actor.system("closure")


def closure_advance(*, closure_id: int, now: datetime | None = None) -> str:
    """Run the closure's current step and move it to the next; returns the step it is at afterwards. Safe to call
    again at any point: a step already done is not done again."""
    closure = AccountClosure.objects.select_related("tenant").get(pk=closure_id)
    step = ClosureStep(closure.step)
    if step in (ClosureStep.WAITING, ClosureStep.CLOSED):
        return step
    AccountClosure.objects.filter(pk=closure.pk, step=step).update(
        attempts=F("attempts") + 1, updated_at=timezone.now()
    )
    if step == ClosureStep.STOPPING:
        _stop(closure)
    elif step == ClosureStep.INVOICING:
        _invoice(closure)
    elif step == ClosureStep.EXPORTING:
        _export(closure)
    elif step == ClosureStep.SCHEDULING:
        _schedule(closure, now or timezone.now())
    closure.refresh_from_db()
    if closure.step not in (ClosureStep.WAITING, ClosureStep.CLOSED):
        enqueue(CLOSURE_ADVANCE, closure.pk, best_effort=True)
    return closure.step


def closure_failed(*, closure_id: int, error: str) -> None:
    """Note why a step failed (it is retried; an operator sees the reason)."""
    AccountClosure.objects.filter(pk=closure_id).update(last_error=error[:500], updated_at=timezone.now())


def closures_resume(*, now: datetime) -> list[int]:
    """Queue the next step of every closure that stopped moving (its worker died, or the broker was down)."""
    stalled = AccountClosure.objects.exclude(step__in=(ClosureStep.WAITING, ClosureStep.CLOSED)).filter(
        updated_at__lte=now - STALLED_AFTER
    )
    ids = list(stalled.values_list("pk", flat=True))
    for closure_id in ids:
        enqueue(CLOSURE_ADVANCE, closure_id, best_effort=True)
    return ids


def _move(closure: AccountClosure, frm: ClosureStep, to: ClosureStep, **fields: Any) -> bool:
    """Compare-and-swap on the step: of two runs of the same step, one records it."""
    moved = AccountClosure.objects.filter(pk=closure.pk, step=frm).update(
        step=to, updated_at=timezone.now(), last_error="", **fields
    )
    return bool(moved)


def _stop(closure: AccountClosure) -> None:
    """1. Stop all work, in one transaction with the step's record, so the count is exact whatever happens."""
    with transaction.atomic():
        live = Allocation.objects.filter(tenant_id=closure.tenant_id).exclude(
            state__in=(S.STOPPING, S.STOPPED, S.FAILED)
        )
        stopped = 0
        for allocation in live.order_by("pk"):
            allocation_stop(allocation=allocation, actor=_actor_of(closure))
            stopped += 1
        if not _move(closure, ClosureStep.STOPPING, ClosureStep.INVOICING, allocations_stopped=stopped):
            transaction.set_rollback(True)  # another run recorded this step first


def _write_once(closure: AccountClosure, *, category: str, name: str, content: Callable[[], bytes]) -> DataAsset | None:
    """The step's record in the tenant's home region: the one a previous run of the step wrote before it died (same
    name and category, written since the closure was asked for), else a new one. None: no region may hold it."""
    region = _home_region(closure.tenant)
    if region is None:
        return None
    written = DataAsset.objects.filter(
        tenant_id=closure.tenant_id, category=category, name=name, created_at__gte=closure.requested_at
    )
    return written.order_by("pk").first() or data_asset_create(
        tenant=closure.tenant,
        name=name,
        category=category,
        region=region.code,
        content=content(),
        actor=_actor_of(closure),
        now=closure.requested_at,
    )


def _final_invoice(tenant: Tenant, now: datetime) -> bytes:
    preview = invoice_upcoming(tenant=tenant, now=now)
    document = {k: _json(v) for k, v in vars(preview).items()}
    document["lines"] = [{k: _json(v) for k, v in line.items()} for line in preview.lines]
    document["final"] = True
    return json.dumps(document).encode()


def _invoice(closure: AccountClosure) -> None:
    """2. The final invoice: this month's usage to the moment of closing, from the ledger."""
    now = closure.requested_at
    invoice = _write_once(
        closure,
        category=Category.INVOICE,
        name=f"final-invoice-{now:%Y-%m}",
        content=lambda: _final_invoice(closure.tenant, now),
    )
    _move(closure, ClosureStep.INVOICING, ClosureStep.EXPORTING, final_invoice=invoice)


def _export(closure: AccountClosure) -> None:
    """3. The export bundle (unless the tenant asked for zero retention of exports)."""
    now = closure.requested_at
    try:
        export = _write_once(
            closure,
            category=Category.EXPORT,
            name=f"closure-export-{now:%Y%m%d}",
            content=lambda: b"".join(export_lines(closure.tenant, now)),
        )
    except Conflict as exc:
        if exc.code != "zero_retention":
            raise
        export = None
    _move(closure, ClosureStep.EXPORTING, ClosureStep.SCHEDULING, export=export)


def _schedule(closure: AccountClosure, now: datetime) -> None:
    """4. Shredding of everything else, after the waiting period, unless a hold or a legal minimum keeps it."""
    actor = _actor_of(closure)
    invoice, export = closure.final_invoice, closure.export
    with transaction.atomic():
        tenant = lock_tenant(closure.tenant_id)
        if not AccountClosure.objects.filter(pk=closure.pk, step=ClosureStep.SCHEDULING).exists():
            return  # another run did it
        holds = holds_active([tenant.pk])
        keep = [invoice.pk if invoice else 0, export.pk if export else 0]
        go, held, kept = [], Counter[int](), 0
        for asset in DataAsset.objects.filter(tenant=tenant, state=AssetState.LIVE).exclude(pk__in=keep):
            hold = holds.first(tenant.pk, asset.category, asset.created_at)
            minimum = retention.LEGAL_MINIMUM_DAYS.get(asset.category, 0)
            if hold is not None:
                held[hold] += 1
            elif minimum and retention.expires_at(asset.created_at, minimum) > now:
                kept += 1
            else:
                go.append(asset)
        scheduled = assets_schedule(tenant=tenant, assets=go, reason=ShredReason.CLOSURE, actor=actor, now=now)
        report = {
            "allocations_stopped": closure.allocations_stopped,
            "shredding_scheduled": len(scheduled),
            "kept_for_legal_minimum": kept,
            "held": {str(h): n for h, n in sorted(held.items())},
            "final_invoice": invoice.pk if invoice else None,
            "export": export.pk if export else None,
        }
        closes_at = now + shred_wait()
        _move(closure, ClosureStep.SCHEDULING, ClosureStep.WAITING, closes_at=closes_at, report=report)
        _tell(closure, tenant, closes_at, scheduled={a.pk for a in scheduled})
        audit_record(
            actor=actor,
            action="tenant.closure_requested",
            target_type="tenant",
            target_id=tenant.slug,
            tenant=tenant,
            data={**report, "closure": closure.pk, "closes_at": closes_at.isoformat()},
        )


def _tell(closure: AccountClosure, tenant: Tenant, closes_at: datetime, *, scheduled: set[int]) -> None:
    """The tenant's owners and admins are told when the account closes, where their export is, and what becomes
    of each volume (in the step's transaction: told once, as the step is done once)."""
    assets = {
        a.volume_id: a
        for a in DataAsset.objects.filter(tenant=tenant, volume__isnull=False).exclude(state=AssetState.SHREDDED)
    }
    holds = holds_active([tenant.pk])
    fates: list[str] = []
    destroyed = 0
    for v in volumes_described(tenant):
        asset = assets.get(v["id"])
        if asset is None:
            continue
        hold = holds.first(tenant.pk, asset.category, asset.created_at)
        if asset.pk in scheduled:
            destroyed += 1
            fate = f"destroyed on {closes_at:%Y-%m-%d}"
        elif hold is not None:
            fate = f"kept: legal hold {hold} preserves it"
        else:
            fate = f"already being deleted: destroyed on {asset.shred_after:%Y-%m-%d}" if asset.shred_after else "kept"
        count = len(v["snapshots"])
        fates.append(
            f"- volume {v['name']} ({v['region']}, {v['kind']}, {v['size_gb']} GB, "
            f"{count} snapshot{'s' if count != 1 else ''}): {fate}"
        )
    paragraphs = [
        f"{tenant.name} ({tenant.slug}) is closing, as {closure.requested_by} asked on "
        f"{closure.requested_at:%Y-%m-%d %H:%M} UTC. Its work has stopped and nothing in it can be changed any more.",
        f"On {closes_at:%Y-%m-%d %H:%M} UTC the account is closed and its data shredded, except what a legal hold "
        "or a finance record's legal minimum keeps.",
    ]
    if closure.export_id is not None:
        paragraphs.append(f"Your export bundle is data asset {closure.export_id}: download it before then.")
    if destroyed:
        paragraphs.append(volumes_closure_notice(count=destroyed, closes_at=closes_at, exact=True))
    if fates:
        paragraphs.append("Your volumes:\n" + "\n".join(fates))
    notify(
        tenant=tenant,
        kind="closure",
        subject=f"Ladder: {tenant.name} closes on {closes_at:%Y-%m-%d}",
        body="\n\n".join(paragraphs),
    )
