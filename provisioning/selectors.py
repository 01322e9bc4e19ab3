"""Reads that provisioning makes of other apps' data (a tenant's contract as the placement engine sees it), and the
fleet's figures the metrics scrape reads."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count

from provisioning.models import Allocation, Cluster
from provisioning.placement.isolation import TenantPolicy
from provisioning.states import TERMINAL, AllocationState
from tenancy.models import Tenant


def tenant_policy(tenant: Tenant) -> TenantPolicy:
    """The placement engine's view of a tenant's contract."""
    regions = tenant.residency_regions
    jurisdictions = tenant.residency_jurisdictions
    return TenantPolicy(
        tenant_id=tenant.pk,
        jurisdiction=next(iter(jurisdictions)) if tenant.sovereign and jurisdictions else None,
        regions=frozenset(regions) if regions is not None else None,
        jurisdictions=frozenset(jurisdictions) if jurisdictions is not None else None,
        sovereign=tenant.sovereign,
        dedicated_hardware=tenant.dedicated_hardware,
        allow_soft_sharing=tenant.allow_soft_sharing,
    )


def allocation_state_counts() -> dict[tuple[str, str], int]:
    """Allocations in each live state, by (state, rung): one GROUP BY over the ``(state, state_changed_at)`` index.
    Stopped and failed ones are left out: they only ever grow."""
    live = [state.value for state in AllocationState if state not in TERMINAL]
    rows = Allocation.objects.filter(state__in=live).order_by().values("state", "rung").annotate(n=Count("id"))
    return {(row["state"], row["rung"]): row["n"] for row in rows}


def clusters_reconciled() -> list[tuple[str, str, datetime | None]]:
    """Each registered cluster's name, health and when reconciliation last went round (one small table)."""
    return list(Cluster.objects.order_by("name").values_list("name", "health", "reconciled_at"))
