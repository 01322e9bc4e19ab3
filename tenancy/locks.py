"""Row locks for tenancy models, one helper per model.

Lock order across the whole product (take locks in this order, never the reverse, to rule out deadlocks):
    Tenant -> Membership -> ApiKey -> fleet (provisioning.locks.lock_fleet)
    -> PlacementLock (provisioning.fleet_cache.placement_section) -> Node (lock_nodes) -> allocation rows
    -> (other apps' rows, by their own lock helpers) -> AuditChainHead.
The audit chain head is always last: every service writes its audit event as the final step.
"""

from django.db.models import QuerySet

from tenancy.models import ApiKey, Tenant


def lock_tenant(tenant_id: int) -> Tenant:
    """Serializes every change to one tenant's membership and settings."""
    return Tenant.objects.select_for_update(of=("self",)).get(pk=tenant_id)


def lock_api_keys(queryset: QuerySet[ApiKey]) -> list[ApiKey]:
    return list(queryset.select_for_update(of=("self",)).order_by("pk"))
