"""Erasure requests: delete what is not held, record what is withheld and by which hold (GDPR Art. 17(3)(e)),
name the derived assets that are affected (trained on erased data: retrain needed), and finish by themselves
when the holds that withheld data are released.

Also ``assets_suspend``: a shredding stopped at the end of its waiting period (or when a hold is placed) because
a hold now covers the asset; an erasure that had counted it as deleted now lists it as withheld.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from compliance.models import (
    AssetState,
    DataAsset,
    ErasureItem,
    ErasureOutcome,
    ErasureRequest,
    ErasureState,
    LegalHold,
    ShredReason,
)
from compliance.services.assets import AssetScope, assets_schedule, holds_active
from core.actor import Actor
from core.audit import audit_record, audit_record_many
from core.errors import Invalid
from tenancy.locks import lock_tenant
from tenancy.models import Tenant
from tenancy.services import tenant_require_writable


def derived_closure(asset_ids: Iterable[int]) -> set[int]:
    """Every asset derived, directly or through others, from ``asset_ids`` (not including them)."""
    through = DataAsset.derived_from.through
    seen: set[int] = set()
    frontier = set(asset_ids)
    start = set(frontier)
    while frontier:
        children = set(through.objects.filter(to_dataasset_id__in=frontier).values_list("from_dataasset_id", flat=True))
        frontier = children - seen - start
        seen |= frontier
    return seen


def _scope_assets(tenant: Tenant, asset_ids: Sequence[int], scope: AssetScope) -> list[DataAsset]:
    if not asset_ids and not scope.categories and scope.created_from is None and scope.created_to is None:
        raise Invalid("validation_error", "Name the assets, or categories and/or a creation date range, to erase.")
    scope.check()
    assets = scope.assets(tenant)
    if asset_ids:
        assets = assets.filter(pk__in=set(asset_ids))
        found = set(DataAsset.objects.filter(tenant=tenant, pk__in=set(asset_ids)).values_list("pk", flat=True))
        if missing := set(asset_ids) - found:
            raise Invalid("validation_error", f"Unknown assets: {sorted(missing)}.", field="assets")
    return list(assets.order_by("pk"))


def erasure_request_create(
    *,
    tenant: Tenant,
    actor: Actor,
    asset_ids: Sequence[int] = (),
    categories: Sequence[str] = (),
    created_from: datetime | None = None,
    created_to: datetime | None = None,
    on_behalf_of: str = "",
    now: datetime | None = None,
) -> ErasureRequest:
    now = now or timezone.now()
    with transaction.atomic():
        tenant = lock_tenant(tenant.pk)
        # The tenant's own request; a compliance officer's, for a data subject, is honoured during a closure too.
        tenant_require_writable(tenant, actor=actor)
        assets = _scope_assets(tenant, asset_ids, AssetScope(categories, created_from, created_to))
        holds = holds_active([tenant.pk])
        deleted: list[DataAsset] = []
        withheld: list[tuple[DataAsset, int]] = []
        for asset in assets:
            hold = (
                None if asset.state == AssetState.SHREDDED else holds.first(tenant.pk, asset.category, asset.created_at)
            )
            if hold is None:
                deleted.append(asset)
            else:
                withheld.append((asset, hold))
        assets_schedule(tenant=tenant, assets=deleted, reason=ShredReason.ERASURE, actor=actor, now=now)
        # Already on its way for another reason (a delete, retention): now the erasure's, which no one cancels.
        DataAsset.objects.filter(pk__in=[a.pk for a in deleted], state=AssetState.SHREDDING).exclude(
            shred_reason=ShredReason.ERASURE
        ).update(shred_reason=ShredReason.ERASURE)
        affected = derived_closure(a.pk for a in assets) - {a.pk for a in assets}
        request = ErasureRequest.objects.create(
            tenant=tenant,
            scope={
                "assets": sorted(set(asset_ids)),
                "categories": sorted(set(categories)),
                "created_from": created_from.isoformat() if created_from else None,
                "created_to": created_to.isoformat() if created_to else None,
            },
            on_behalf_of=on_behalf_of,
            state=ErasureState.SUSPENDED if withheld else ErasureState.COMPLETED,
            requested_by=actor.label,
            created_at=now,
            completed_at=None if withheld else now,
        )
        ErasureItem.objects.bulk_create(
            [ErasureItem(request=request, asset=a, outcome=ErasureOutcome.DELETED) for a in deleted]
            + [ErasureItem(request=request, asset=a, outcome=ErasureOutcome.WITHHELD, hold_id=h) for a, h in withheld]
            + [ErasureItem(request=request, asset_id=a, outcome=ErasureOutcome.AFFECTED) for a in sorted(affected)]
        )
        audit_record(
            actor=actor,
            action="erasure_request.created",
            target_type="erasure_request",
            target_id=request.pk,
            tenant=tenant,
            data={
                **request.scope,
                "on_behalf_of": on_behalf_of,
                "state": request.state,
                "deleted": [a.pk for a in deleted],
                "withheld": [{"asset": a.pk, "hold": h} for a, h in withheld],
                "affected": sorted(affected),
            },
        )
    return request


def _refresh(request_ids: Iterable[int], actor: Actor, now: datetime) -> None:
    """Set each request's state from its items: suspended while anything is withheld, else completed."""
    for request in ErasureRequest.objects.filter(pk__in=set(request_ids)).select_related("tenant"):
        withheld = request.items.filter(outcome=ErasureOutcome.WITHHELD).exists()
        state = ErasureState.SUSPENDED if withheld else ErasureState.COMPLETED
        if state == request.state:
            continue
        request.state, request.completed_at = state, (None if withheld else now)
        request.save(update_fields=["state", "completed_at"])
        audit_record(
            actor=actor,
            action=f"erasure_request.{state}",
            target_type="erasure_request",
            target_id=request.pk,
            tenant=request.tenant,
            data={},
        )


def erasure_resume(*, hold: LegalHold, actor: Actor, now: datetime) -> list[int]:
    """After ``hold`` is released (same transaction, tenant locked): what it withheld is deleted now unless another
    hold still covers it; requests with nothing withheld complete. Returns the requests touched."""
    items = list(
        ErasureItem.objects.filter(hold=hold, outcome=ErasureOutcome.WITHHELD).select_related("asset").order_by("pk")
    )
    if not items:
        return []
    holds = holds_active([hold.tenant_id])
    free: list[ErasureItem] = []
    for item in items:
        other = holds.first(item.asset.tenant_id, item.asset.category, item.asset.created_at)
        if other is None:
            free.append(item)
        else:
            item.hold_id = other
            item.save(update_fields=["hold"])
    assets_schedule(
        tenant=hold.tenant, assets=[i.asset for i in free], reason=ShredReason.ERASURE, actor=actor, now=now
    )
    ErasureItem.objects.filter(pk__in=[i.pk for i in free]).update(outcome=ErasureOutcome.DELETED, hold=None)
    touched = sorted({i.request_id for i in items})
    _refresh(touched, actor, now)
    return touched


def assets_suspend(
    *, tenant: Tenant, held: Sequence[tuple[DataAsset, int]], actor: Actor, now: datetime
) -> list[DataAsset]:
    """Stop the shredding of assets a hold now covers (tenant locked by the caller): back to live, nothing lost.
    Erasure requests that counted them as deleted list them as withheld by that hold."""
    by_id = {asset.pk: hold for asset, hold in held if asset.state == AssetState.SHREDDING}
    rows = list(
        DataAsset.objects.select_for_update(no_key=True, of=("self",))
        .filter(pk__in=list(by_id), state=AssetState.SHREDDING)
        .order_by("pk")
    )
    if not rows:
        return []
    DataAsset.objects.filter(pk__in=[a.pk for a in rows]).update(
        state=AssetState.LIVE, shred_reason="", shred_requested_at=None, shred_after=None
    )
    entries: list[tuple[Any, dict[str, Any]]] = [(a.pk, {"hold": by_id[a.pk], "reason": a.shred_reason}) for a in rows]
    audit_record_many(
        actor=actor, action="data_asset.shred_suspended", target_type="data_asset", tenant=tenant, entries=entries
    )
    requests: set[int] = set()
    for item in ErasureItem.objects.filter(asset_id__in=list(by_id), outcome=ErasureOutcome.DELETED):
        item.outcome, item.hold_id = ErasureOutcome.WITHHELD, by_id[item.asset_id]
        item.save(update_fields=["outcome", "hold"])
        requests.add(item.request_id)
    _refresh(requests, actor, now)
    for asset in rows:
        asset.state, asset.shred_reason, asset.shred_requested_at, asset.shred_after = AssetState.LIVE, "", None, None
    return rows
