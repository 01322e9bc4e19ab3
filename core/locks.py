"""Lock helpers, and the lock order of the whole product.

Lock order (take locks in this order, never the reverse, to rule out deadlocks):
    Tenant (tenancy.locks.lock_tenant) -> Membership -> ApiKey (lock_api_keys)
    -> DefragmentRun (provisioning.services.defragment) -> fleet (provisioning.locks.lock_fleet)
    -> PlacementLock (provisioning.fleet_cache.placement_section) -> Node (lock_nodes) -> allocation rows
    -> Volume rows (provisioning.services.volumes; a placement locks the volumes it mounts)
    -> (other apps' rows, by their own lock helpers: usage intervals; billing's MeteringLock, which is never held
    together with the placement lock) -> AuditChainHead (core.audit).
The audit chain head is always last: every service writes its audit event as the final step.

Every row lock is ``FOR NO KEY UPDATE`` (``select_for_update(no_key=True)``; no key of the product ever changes).
Django's foreign keys are deferred on PostgreSQL: a row inserted that refers to a tenant, a volume or a GPU checks
it (``FOR KEY SHARE``) at commit, after the last lock of the order. A ``FOR UPDATE`` lock would make that check wait
out of order: a placement holding a volume would wait at commit for the tenant a volume delete holds while the
delete waits for the volume, a deadlock. ``FOR NO KEY UPDATE`` serializes the writers alike and lets the checks pass.
"""

from typing import Any

from django.db import connection, models

_SINGLETON_SQL: dict[tuple[type[models.Model], tuple[str, ...]], str] = {}  # built once per process


def lock_singleton(model: type[models.Model], *columns: str) -> tuple[Any, ...]:
    """Lock the one row (``id = 1``) of a single-row table until the transaction ends and return ``columns``,
    making the row on first use. Plain SQL: the product's hottest locks (the audit chain head, the placement
    lock) go through here, and the ORM would spend more time building the statement than the database running it.
    """
    sql = _SINGLETON_SQL.get((model, columns))
    if sql is None:
        table = model._meta.db_table
        column_of = {f.name: str(f.column) for f in model._meta.concrete_fields}
        names = ", ".join(column_of[c] for c in columns)
        features = connection.features
        lock = " FOR NO KEY UPDATE" if features.has_select_for_no_key_update else ""
        sql = f"SELECT {names} FROM {table} WHERE id = 1{lock}"  # noqa: S608 - names from the model, no input
        _SINGLETON_SQL[(model, columns)] = sql
    with connection.cursor() as cursor:
        cursor.execute(sql)
        row = cursor.fetchone()
        if row is None:  # first use: make the row, then lock it
            model._default_manager.get_or_create(id=1)
            cursor.execute(sql)
            row = cursor.fetchone()
    return tuple(row)
