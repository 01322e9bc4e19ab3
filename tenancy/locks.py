"""Row locks for tenancy models, one helper per model; their place in the lock order is written in
``core/locks.py``."""

from django.db.models import QuerySet

from tenancy.models import ApiKey, Tenant


def lock_tenant(tenant_id: int) -> Tenant:
    """Serializes every change to one tenant's membership and settings."""
    return Tenant.objects.select_for_update(no_key=True, of=("self",)).get(pk=tenant_id)


def lock_api_keys(queryset: QuerySet[ApiKey]) -> list[ApiKey]:
    return list(queryset.select_for_update(no_key=True, of=("self",)).order_by("pk"))
