"""Row locks for tenancy models, one helper per model.

Lock order across the whole product (take locks in this order, never the reverse, to rule out deadlocks):
    Tenant -> Membership -> ApiKey -> fleet (provisioning.locks.lock_fleet)
    -> PlacementLock (provisioning.fleet_cache.placement_section) -> Node (lock_nodes) -> allocation rows
    -> (other apps' rows, by their own lock helpers: usage intervals; billing's MeteringLock, which is never held
    together with the placement lock) -> AuditChainHead.
The audit chain head is always last: every service writes its audit event as the final step.
"""

from typing import Any

from django.db import connection, models
from django.db.models import QuerySet

from tenancy.models import ApiKey, Tenant


def lock_tenant(tenant_id: int) -> Tenant:
    """Serializes every change to one tenant's membership and settings."""
    return Tenant.objects.select_for_update(of=("self",)).get(pk=tenant_id)


def lock_api_keys(queryset: QuerySet[ApiKey]) -> list[ApiKey]:
    return list(queryset.select_for_update(of=("self",)).order_by("pk"))


def lock_singleton(model: type[models.Model], *columns: str) -> tuple[Any, ...]:
    """Lock the one row (``id = 1``) of a single-row table until the transaction ends and return ``columns``,
    making the row on first use. Plain SQL: the product's hottest locks (the audit chain head, the placement
    lock) go through here, and the ORM would spend more time building the statement than the database running it.
    """
    table = model._meta.db_table
    column_of = {f.name: str(f.column) for f in model._meta.concrete_fields}
    names = ", ".join(column_of[c] for c in columns)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    sql = f"SELECT {names} FROM {table} WHERE id = 1{lock}"  # noqa: S608 - names from the model, no input
    with connection.cursor() as cursor:
        cursor.execute(sql)
        row = cursor.fetchone()
        if row is None:  # first use: make the row, then lock it
            model._default_manager.get_or_create(id=1)
            cursor.execute(sql)
            row = cursor.fetchone()
    return tuple(row)
