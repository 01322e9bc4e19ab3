"""What a tenant's writes could change, read back in one value: the closing-tenant tests compare it before and after
a refused write, through every front end."""

from __future__ import annotations

from typing import Any

from billing.models import BillingAccount
from compliance.models import CapturePolicy, DataAsset, ErasureRequest, RetentionPolicy, TenantSecret
from core.models import AuditEvent
from provisioning.models import Allocation
from tenancy.models import ApiKey, Membership, SshKey, Tenant


def tenant_things(tenant: Tenant) -> dict[str, Any]:
    """Everything a member's or a key's writes could change of ``tenant`` (and the audit log, which every change
    appends to)."""
    fresh = Tenant.objects.get(pk=tenant.pk)
    return {
        "tenant": (fresh.name, fresh.state),
        "members": sorted(Membership.objects.filter(tenant=tenant).values_list("user__username", "role")),
        "keys": sorted(ApiKey.objects.filter(tenant=tenant).values_list("name", "revoked_at")),
        "ssh_keys": sorted(SshKey.objects.filter(tenant=tenant).values_list("name", flat=True)),
        "secrets": sorted(TenantSecret.objects.filter(tenant=tenant).values_list("name", "version")),
        "assets": sorted(DataAsset.objects.filter(tenant=tenant).values_list("name", "state", "region__code")),
        "retention": list(RetentionPolicy.objects.filter(tenant=tenant).values_list("category", "days")),
        "capture": list(CapturePolicy.objects.filter(tenant=tenant).values_list("inference_payloads", flat=True)),
        "erasures": ErasureRequest.objects.filter(tenant=tenant).count(),
        "budget": BillingAccount.objects.filter(tenant=tenant).values_list("budget_monthly", flat=True).get(),
        "allocations": sorted(Allocation.objects.filter(tenant=tenant).values_list("name", "state")),
        "events": AuditEvent.objects.count(),
    }
