"""Retention: a tenant's rule per category, and the sweep that applies every rule (``manage.py retention_sweep``,
daily on Celery beat).

The sweep works tenant by tenant in batches, each batch one transaction under the tenant's row lock (the lock
holds and every other deletion take), so two sweeps running at once never process an asset twice: the second
waits for the first's batch and then finds it done. Per batch it

1. ends waiting periods: shreds what no hold covers, stops (back to live) what a hold now covers;
2. starts waiting periods for expired, unheld live assets (closing and closed tenants keep only what the law
   asks them to: their other data expires at once). An expired volume that running work still mounts is deferred,
   not scheduled: pulling a disk from under a week-long training run is not what a retention rule is for. The
   report names it with the work that mounts it, and the first sweep after that work ends schedules it;

and at the end closes the accounts whose closure period is over, shredding the tenant key once nothing under it
remains and no hold covers the tenant. ``compliance.domain.retention.decide`` makes every decision.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from compliance.domain import retention
from compliance.models import (
    AccountClosure,
    AssetState,
    ClosureStep,
    DataAsset,
    RetentionPolicy,
    ShredReason,
    TenantKey,
)
from compliance.services.assets import (
    SYSTEM,
    assets_schedule,
    assets_shred,
    holds_active,
    retention_keep_days,
    shred_wait,
)
from compliance.services.erasure import assets_suspend
from core.actor import Actor
from core.audit import audit_record
from core.errors import Invalid
from core.progress import QUIET, Progress
from provisioning.models import Volume
from provisioning.selectors import volumes_attached_to
from tenancy.locks import lock_tenant
from tenancy.models import Tenant, TenantState
from tenancy.services import tenant_require_writable

LEAVING = (TenantState.CLOSING, TenantState.CLOSED)


def retention_policy_set(
    *, tenant: Tenant, category: str, days: int | None, zero_retention: bool, actor: Actor
) -> RetentionPolicy:
    """Set a tenant's retention for one category (keep ``days``, or zero retention). Finance records cannot go
    below their legal minimum; a shorter rule applies to existing data at the next sweep."""
    tenant_require_writable(tenant, actor=actor)
    if category not in set(retention.Category):
        raise Invalid("validation_error", f"Unknown category {category!r}.", field="category")
    if zero_retention == (days is not None):
        raise Invalid("validation_error", "Give either days or zero_retention: true.", field="days")
    rule = retention.Rule(days=days, zero_retention=zero_retention)
    try:
        retention.rule_check(
            retention.Category(category), rule, legal_minimum_days=retention.LEGAL_MINIMUM_DAYS.get(category, 0)
        )
    except retention.RuleInvalid as exc:
        code = "below_legal_minimum" if category in retention.LEGAL_MINIMUM_DAYS else "validation_error"
        raise Invalid(code, str(exc), field="days") from None
    with transaction.atomic():
        policy, _ = RetentionPolicy.objects.update_or_create(
            tenant=tenant,
            category=category,
            defaults={"days": days, "zero_retention": zero_retention, "updated_at": timezone.now()},
        )
        audit_record(
            actor=actor,
            action="retention_policy.set",
            target_type="retention_policy",
            target_id=category,
            tenant=tenant,
            data={"category": category, "days": days, "zero_retention": zero_retention},
        )
    return policy


# --- the sweep -------------------------------------------------------------------------------------------------


@dataclass
class SweepReport:
    now: datetime
    dry_run: bool
    scheduled: Counter[str] = field(default_factory=Counter)  # by category
    shredded: Counter[str] = field(default_factory=Counter)
    held: Counter[int] = field(default_factory=Counter)  # expired assets each hold kept
    suspended: Counter[int] = field(default_factory=Counter)  # shreddings each hold stopped
    deferred: dict[int, list[int]] = field(default_factory=dict)  # expired volumes still mounted: the allocations
    closed: list[str] = field(default_factory=list)  # tenants whose closure completed
    tenant_keys_shredded: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Assets acted on, by action (the ``ladder_retention_swept_items`` metric's labels)."""
        return {
            "scheduled": self.scheduled.total(),
            "shredded": self.shredded.total(),
            "held": self.held.total(),
            "suspended": self.suspended.total(),
            "deferred": len(self.deferred),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "now": self.now.isoformat(),
            "dry_run": self.dry_run,
            "scheduled": dict(self.scheduled),
            "shredded": dict(self.shredded),
            "held": {str(k): v for k, v in self.held.items()},
            "suspended": {str(k): v for k, v in self.suspended.items()},
            "deferred": {str(k): v for k, v in self.deferred.items()},
            "closed": self.closed,
            "tenant_keys_shredded": self.tenant_keys_shredded,
        }


def keep_days_for(tenants: dict[int, str]) -> dict[int, dict[str, int | None]]:
    """Effective retention per tenant and category. A leaving tenant keeps only what the law asks, and its export
    bundle through the closure period (the waiting period), so it can be downloaded."""
    keep = retention_keep_days(tenants)
    for tenant_id, state in tenants.items():
        if state in LEAVING:
            keep[tenant_id] = {c.value: retention.LEGAL_MINIMUM_DAYS.get(c, 0) for c in retention.Category}
            keep[tenant_id][retention.Category.EXPORT] = shred_wait().days
    return keep


def retention_sweep(
    *, now: datetime | None = None, dry_run: bool = False, batch: int = 1000, progress: Progress = QUIET
) -> SweepReport:
    """``progress`` counts tenants: those with waiting periods due, then every tenant's retention pass."""
    now = now or timezone.now()
    report = SweepReport(now=now, dry_run=dry_run)
    tenants = dict(Tenant.objects.values_list("pk", "state"))
    keep = keep_days_for(tenants)
    # order_by(): the model's default ordering would add "id" to the DISTINCT, returning every due asset's row.
    due = set(
        DataAsset.objects.filter(state=AssetState.SHREDDING, shred_after__lte=now)
        .order_by()
        .values_list("tenant_id", flat=True)
        .distinct()
    )
    progress.set_total(len(due) + len(tenants))
    for tenant_id in progress.track(sorted(due)):
        _batches(
            tenant_id, DataAsset.objects.filter(state=AssetState.SHREDDING, shred_after__lte=now), None, report, batch
        )
    for tenant_id in progress.track(sorted(tenants)):
        reason = ShredReason.CLOSURE if tenants[tenant_id] in LEAVING else ShredReason.RETENTION
        for category, days in keep[tenant_id].items():
            cutoff = now if days is None else now - timedelta(days=days)
            candidates = DataAsset.objects.filter(category=category, state=AssetState.LIVE, created_at__lte=cutoff)
            _batches(tenant_id, candidates, (days, reason), report, batch)
    progress.finish()
    if not dry_run:
        _closures_finish(report)
    return report


def _batches(
    tenant_id: int, candidates: Any, schedule: tuple[int | None, str] | None, report: SweepReport, batch: int
) -> None:
    """Walk one tenant's ``candidates`` by id, one locked batch per transaction (``schedule``: start waiting
    periods with (keep days, reason); None: end the waiting periods that are due)."""
    last = 0
    while True:
        with transaction.atomic():
            tenant = Tenant.objects.get(pk=tenant_id) if report.dry_run else lock_tenant(tenant_id)
            rows = list(
                candidates.filter(tenant_id=tenant_id, pk__gt=last).select_related("region").order_by("pk")[:batch]
            )
            if not rows:
                return
            last = rows[-1].pk
            holds = holds_active([tenant_id])
            keep_days = schedule[0] if schedule else None
            go, shred, stop = [], [], []
            for asset in rows:
                decision, hold = retention.decide(asset.facts(), keep_days=keep_days, holds=holds, now=report.now)
                if decision == retention.Decision.SCHEDULE:
                    go.append(asset)
                elif decision == retention.Decision.SHRED:
                    shred.append(asset)
                elif hold is not None and decision == retention.Decision.HELD:
                    report.held[hold] += 1
                elif hold is not None and decision == retention.Decision.SUSPEND:
                    stop.append((asset, hold))
            if schedule is not None and schedule[1] == ShredReason.RETENTION:
                mounted = _mounted(go, lock=not report.dry_run)
                report.deferred.update(mounted)
                go = [a for a in go if a.volume_id not in mounted]
            if not report.dry_run:
                if schedule is not None:
                    go = assets_schedule(tenant=tenant, assets=go, reason=schedule[1], actor=SYSTEM, now=report.now)
                shred = assets_shred(tenant=tenant, assets=shred, actor=SYSTEM, now=report.now)
                stopped = {a.pk for a in assets_suspend(tenant=tenant, held=stop, actor=SYSTEM, now=report.now)}
                stop = [(a, h) for a, h in stop if a.pk in stopped]
            report.scheduled.update(a.category for a in go)
            report.shredded.update(a.category for a in shred)
            report.suspended.update(h for _, h in stop)


def _mounted(assets: list[DataAsset], *, lock: bool) -> dict[int, list[int]]:
    """The volumes among ``assets`` that work which has not ended mounts: volume id -> allocation ids. Their rows
    are locked first, so work being placed meanwhile has either mounted the volume already (and is seen here) or
    finds it ``deleting`` and is refused."""
    ids = sorted(a.volume_id for a in assets if a.volume_id is not None)
    if not ids:
        return {}
    if lock:
        list(
            Volume.objects.select_for_update(no_key=True, of=("self",))
            .filter(pk__in=ids)
            .order_by("pk")
            .values_list("pk")
        )
    return {volume: allocations for volume, allocations in volumes_attached_to(ids).items() if allocations}


def _closures_finish(report: SweepReport) -> None:
    """Closures whose period is over: the tenant is closed; its key is shredded once nothing under it is left."""
    for closure in AccountClosure.objects.filter(closed_at=None, closes_at__lte=report.now).select_related("tenant"):
        with transaction.atomic():
            tenant = lock_tenant(closure.tenant_id)
            if not AccountClosure.objects.filter(pk=closure.pk, closed_at=None).update(
                closed_at=report.now, step=ClosureStep.CLOSED
            ):
                continue
            Tenant.objects.filter(pk=tenant.pk).update(state=TenantState.CLOSED)
            audit_record(
                actor=SYSTEM,
                action="tenant.closed",
                target_type="tenant",
                target_id=tenant.slug,
                tenant=tenant,
                data={"closure": closure.pk},
            )
            report.closed.append(tenant.slug)
    closed = Tenant.objects.filter(state=TenantState.CLOSED, data_key__wrapped__isnull=False)
    for tenant_id in closed.values_list("pk", flat=True):
        with transaction.atomic():
            tenant = lock_tenant(tenant_id)
            left = DataAsset.objects.filter(tenant=tenant).exclude(state=AssetState.SHREDDED).exists()
            if left or len(holds_active([tenant_id])):
                continue
            key = TenantKey.objects.select_for_update(no_key=True).get(tenant=tenant)
            key.wrapped, key.shredded_at = None, report.now
            key.save(update_fields=["wrapped", "shredded_at"])
            audit_record(
                actor=SYSTEM,
                action="tenant_key.shredded",
                target_type="tenant_key",
                target_id=tenant.pk,
                tenant=tenant,
                data={"master_id": key.master_id, "method": "crypto-shredding: tenant key destroyed"},
            )
            report.tenant_keys_shredded.append(tenant.slug)
