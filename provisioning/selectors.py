"""Reads that provisioning makes of other apps' data: a tenant's contract as the placement engine sees it."""

from __future__ import annotations

from provisioning.placement.isolation import TenantPolicy
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
