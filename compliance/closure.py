"""Account closure: a tenant leaves.

``tenant_close`` (owner) makes the tenant ``closing`` (it can read, not change anything), stops every allocation
(which closes its metering), stores the final invoice (a finance record, kept for its legal minimum), writes an
export bundle of the tenant's data (JSON lines, content included, readable through the closure period) and
schedules the shredding of everything else not under a legal hold or a legal minimum. The retention sweep ends
the closure when the waiting period is over (``closed``) and shreds the tenant key once nothing under it may
remain. Every step is audited.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from compliance import retention
from compliance.assets import (
    assets_schedule,
    data_asset_content,
    data_asset_create,
    holds_active,
    region_info,
    shred_wait,
)
from compliance.models import AccountClosure, AssetState, Category, DataAsset, ShredReason
from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict
from provisioning.models import Region
from provisioning.placement.isolation import region_allowed
from tenancy.locks import lock_tenant
from tenancy.models import Tenant, TenantState
from tenancy.selectors import tenant_policy

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
    """The export bundle: a header, then one line per asset not shredded, with its content when it has any."""
    header = {"format": EXPORT_FORMAT, "version": 1, "tenant": tenant.slug, "created_at": now.isoformat()}
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
        if asset.location:
            line["content"] = base64.b64encode(data_asset_content(asset=asset)).decode()
        yield json.dumps(line).encode() + b"\n"


def tenant_close(*, tenant: Tenant, actor: Actor, now: datetime | None = None) -> AccountClosure:
    from billing.selectors import invoice_upcoming
    from provisioning.allocations import allocation_stop
    from provisioning.lifecycle import AllocationState as S
    from provisioning.models import Allocation

    now = now or timezone.now()
    with transaction.atomic():
        tenant = lock_tenant(tenant.pk)
        if tenant.state in (TenantState.CLOSING, TenantState.CLOSED):
            raise Conflict("tenant_closing", f"The tenant is already {tenant.state}.")
        Tenant.objects.filter(pk=tenant.pk).update(state=TenantState.CLOSING)
        tenant.state = TenantState.CLOSING
        audit_record(
            actor=actor,
            action="tenant.closing",
            target_type="tenant",
            target_id=tenant.slug,
            tenant=tenant,
            data={"from": "active"},
        )

    # 1. Stop all work; leaving `running` closes each allocation's metering.
    stopped = 0
    live = Allocation.objects.filter(tenant=tenant).exclude(state__in=(S.STOPPING, S.STOPPED, S.FAILED))
    for allocation in live.order_by("pk"):
        allocation_stop(allocation=allocation, actor=actor)
        stopped += 1

    region = _home_region(tenant)
    # 2-3 commit on their own, before the last step: the export reads every content blob, and no lock (the
    # audit chain head least of all) is held over that storage I/O.
    # 2. The final invoice: this month's usage to the moment of closing, from the ledger.
    invoice = export = None
    if region is not None:
        preview = invoice_upcoming(tenant=tenant, now=now)
        document = {k: _json(v) for k, v in vars(preview).items()}
        document["lines"] = [{k: _json(v) for k, v in line.items()} for line in preview.lines]
        document["final"] = True
        invoice = data_asset_create(
            tenant=tenant,
            name=f"final-invoice-{now:%Y-%m}",
            category=Category.INVOICE,
            region=region.code,
            content=json.dumps(document).encode(),
            actor=actor,
            now=now,
        )
        # 3. The export bundle (unless the tenant asked for zero retention of exports).
        try:
            export = data_asset_create(
                tenant=tenant,
                name=f"closure-export-{now:%Y%m%d}",
                category=Category.EXPORT,
                region=region.code,
                content=b"".join(export_lines(tenant, now)),
                actor=actor,
                now=now,
            )
        except Conflict as exc:
            if exc.code != "zero_retention":
                raise
    with transaction.atomic():
        # 4. Shredding of everything else, after the waiting period, unless a hold or a legal minimum keeps it.
        tenant = lock_tenant(tenant.pk)
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
            "allocations_stopped": stopped,
            "shredding_scheduled": len(scheduled),
            "kept_for_legal_minimum": kept,
            "held": {str(h): n for h, n in sorted(held.items())},
            "final_invoice": invoice.pk if invoice else None,
            "export": export.pk if export else None,
        }
        closure = AccountClosure.objects.create(
            tenant=tenant,
            requested_by=actor.label,
            requested_at=now,
            closes_at=now + shred_wait(),
            allocations_stopped=stopped,
            final_invoice=invoice,
            export=export,
            report=report,
        )
        audit_record(
            actor=actor,
            action="tenant.closure_requested",
            target_type="tenant",
            target_id=tenant.slug,
            tenant=tenant,
            data={**report, "closes_at": closure.closes_at.isoformat()},
        )
    return closure
