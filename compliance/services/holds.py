"""Legal holds: placing one (scoped to a tenant, categories and a creation date range), previewing what a scope
would preserve before placing it, releasing it (never before its preservation lock), and the register.

A hold is placed under the tenant's row lock, the lock every deletion takes, so no deletion decided without it
commits after it. Shreddings already scheduled for what it covers are stopped at once; releasing it deletes
nothing by itself, but erasure requests it suspended resume (``erasure_resume``), and so do the deletions of
volumes it stopped (``volume_deletions_resume``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from compliance.models import AssetState, DataAsset, ErasureItem, ErasureOutcome, HoldState, LegalHold
from compliance.services.assets import AssetScope
from compliance.services.erasure import assets_suspend, erasure_resume
from compliance.services.volumes import volume_deletions_resume, volumes_in_scope
from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, Invalid
from provisioning.models import Volume
from tenancy.locks import lock_tenant
from tenancy.models import Tenant


@dataclass
class Preservation:
    assets: int = 0
    bytes: int = 0
    by_category: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"assets": self.assets, "bytes": self.bytes, "by_category": self.by_category}


def _covered(tenant: Tenant, scope: AssetScope) -> QuerySet[DataAsset]:
    """What a scope preserves: the tenant's assets not yet shredded in it."""
    return scope.assets(tenant).exclude(state=AssetState.SHREDDED)


def legal_hold_preview(*, tenant: Tenant, scope: AssetScope) -> Preservation:
    """How many assets and bytes a hold with this scope would preserve now, by category."""
    scope.check()
    result = Preservation()
    rows = _covered(tenant, scope).values("category").annotate(n=Count("pk"), size=Sum("size_bytes"))
    for row in rows.order_by("category"):
        result.by_category[row["category"]] = {"assets": row["n"], "bytes": row["size"] or 0}
        result.assets += row["n"]
        result.bytes += row["size"] or 0
    return result


def legal_hold_create(
    *,
    tenant: Tenant,
    matter: str,
    reason: str,
    scope: AssetScope,
    lock_until: datetime | None,
    actor: Actor,
    now: datetime | None = None,
) -> LegalHold:
    scope.check()
    now = now or timezone.now()
    if lock_until is not None and lock_until <= now:
        raise Invalid("validation_error", "lock_until must be in the future.", field="lock_until")
    with transaction.atomic():
        tenant = lock_tenant(tenant.pk)
        hold = LegalHold.objects.create(
            tenant=tenant,
            matter=matter,
            reason=reason,
            categories=sorted(set(scope.categories)),
            created_from=scope.created_from,
            created_to=scope.created_to,
            lock_until=lock_until,
            created_at=now,
            created_by=actor.label,
        )
        # Shreddings already counting down for what it covers stop now, not at the end of their waiting period.
        waiting = _covered(tenant, scope).filter(state=AssetState.SHREDDING)
        stopped = assets_suspend(tenant=tenant, held=[(a, hold.pk) for a in waiting], actor=actor, now=now)
        preserves = legal_hold_preview(tenant=tenant, scope=scope)
        audit_record(
            actor=actor,
            action="legal_hold.created",
            target_type="legal_hold",
            target_id=hold.pk,
            tenant=tenant,
            data={
                "matter": matter,
                "reason": reason,
                "categories": hold.categories,
                "created_from": _iso(scope.created_from),
                "created_to": _iso(scope.created_to),
                "lock_until": _iso(lock_until),
                "preserves": preserves.as_dict(),
                "shredding_stopped": [a.pk for a in stopped],
            },
        )
    return hold


def legal_hold_release(*, hold: LegalHold, reason: str, actor: Actor, now: datetime | None = None) -> LegalHold:
    """Release a hold (never before its preservation lock). Nothing is deleted by this: data it covered becomes
    eligible again for retention and deletes, and erasure requests it suspended go on, as do the deletions of
    volumes it stopped (a volume's deletion is never taken back)."""
    now = now or timezone.now()
    with transaction.atomic():
        tenant = lock_tenant(hold.tenant_id)
        hold = LegalHold.objects.select_for_update(no_key=True).get(pk=hold.pk)
        if hold.state != HoldState.ACTIVE:
            raise Conflict("hold_released", f"Hold {hold.pk} was already released on {hold.released_at:%Y-%m-%d}.")
        if hold.lock_until is not None and now < hold.lock_until:
            raise Conflict(
                "hold_locked",
                f"Hold {hold.pk} has a preservation lock until {hold.lock_until:%Y-%m-%d %H:%M} UTC; "
                "it cannot be released before.",
            )
        hold.state, hold.released_at, hold.released_by, hold.release_reason = (
            HoldState.RELEASED,
            now,
            actor.label,
            reason,
        )
        hold.save(update_fields=["state", "released_at", "released_by", "release_reason"])
        audit_record(
            actor=actor,
            action="legal_hold.released",
            target_type="legal_hold",
            target_id=hold.pk,
            tenant=tenant,
            data={"matter": hold.matter, "reason": reason},
        )
        hold.tenant = tenant
        erasure_resume(hold=hold, actor=actor, now=now)
        volume_deletions_resume(tenant=tenant, actor=actor, now=now)
    return hold


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


# --- the register -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HoldEntry:
    hold: LegalHold
    preserves: Preservation
    suspends: list[int]  # erasure requests waiting on it
    volumes: list[Volume] = field(default_factory=list)  # the volumes it preserves now (none once released)


def scope_of(hold: LegalHold) -> AssetScope:
    return AssetScope(categories=hold.categories, created_from=hold.created_from, created_to=hold.created_to)


def legal_hold_register(holds: Sequence[LegalHold]) -> list[HoldEntry]:
    """Each hold with what it preserves now (nothing once released), the volumes among it, and the erasure requests
    it suspends."""
    suspends: dict[int, set[int]] = {}
    items = ErasureItem.objects.filter(hold__in=[h.pk for h in holds], outcome=ErasureOutcome.WITHHELD)
    for hold_id, request_id in items.values_list("hold_id", "request_id"):
        suspends.setdefault(hold_id, set()).add(request_id)
    return [
        HoldEntry(
            hold=hold,
            preserves=legal_hold_preview(tenant=hold.tenant, scope=scope_of(hold))
            if hold.state == HoldState.ACTIVE
            else Preservation(),
            suspends=sorted(suspends.get(hold.pk, ())),
            volumes=volumes_in_scope(tenant=hold.tenant, scope=scope_of(hold))
            if hold.state == HoldState.ACTIVE
            else [],
        )
        for hold in holds
    ]


def holds_of(tenant: Tenant | None = None, state: str | None = None) -> QuerySet[LegalHold]:
    holds = LegalHold.objects.select_related("tenant")
    if tenant is not None:
        holds = holds.filter(tenant=tenant)
    if state:
        holds = holds.filter(Q(state=state))
    return holds
