"""Reads of the usage ledger as FOCUS rows, streamed: the summary (usage rollups) and the detail (counted usage
pieces per allocation), for a range of hourly windows and optionally one tenant.

Rows come from the database through a chunked iterator (a server-side cursor on PostgreSQL) as plain tuples,
ordered by tenant, SKU and hour, and go on a chunk at a time as columns (``billing.focus_columns.Batch``), so the
cost carry keeps only the lines of the current tenant x SKU.
Lookups (SKUs, prices, tenants, allocations) are small dictionaries; a chunk's allocations are loaded in one
query, and the allocation cache is emptied when it grows past ``RESOURCE_CACHE``. Nothing here writes.

Rows:

- summary: one row per usage rollup: tenant x SKU x price x hour x ``seq``. Two prices in one hour (a price
  change inside it) stay two rows, one per ``SkuPriceId``; a late adjustment (``seq`` > 0) stays its own row, so
  what was added after the hour closed is visible (and is a FOCUS ``Correction`` when it was counted after the
  hour's month had ended).
- detail: the pieces of one allocation x SKU x hour x price counted by one rollup batch, summed. Only counted
  pieces (``batch`` set) are exported, so a detail export and a summary export of one range hold the same
  quantities and costs per tenant x SKU x hour x price.

Goodput lost to provider faults (``provisioning.models.AllocationFault``): a fault's ``lost_ms`` (the work from
the checkpoint the job went back to until the fault) is attributed whole to the allocation's last usage piece that
started at or before the fault (metering stopped at that checkpoint, so that piece's hour is where the lost work
was last billed): its SKU and hour, on the first row of that hour (summary: tenant x SKU x hour; detail:
allocation x SKU x hour). Faults are looked for from the range's start until a week after its end.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from billing import focus, focus_columns
from billing.metering import DAY_MS, from_ms, to_ms
from billing.models import Sku, SkuPrice, UsageInterval, UsageRollup
from provisioning.models import Allocation, AllocationFault
from tenancy.models import Tenant

CHUNK = 5000
RESOURCE_CACHE = 20_000  # allocations kept by a detail export
FAULT_LOOKAHEAD_MS = 7 * DAY_MS


class _Lookups:
    def __init__(self) -> None:
        self.skus = {
            pk: focus.Sku(code, rung, unit, mig, gpu, region_code, region_name, currency)
            for pk, code, rung, unit, mig, gpu, region_code, region_name, currency in Sku.objects.values_list(
                "pk",
                "code",
                "rung",
                "unit",
                "mig_profile",
                "gpu_model__name",
                "region__code",
                "region__name",
                "currency",
            )
        }
        self.prices = {
            pk: focus.Price(pk, to_ms(start), per_hour)
            for pk, start, per_hour in SkuPrice.objects.values_list("pk", "effective_from", "unit_price_per_hour")
        }
        self._tenants: dict[int, focus.Tenant] = {}
        self._resources: dict[int, focus.Resource] = {}
        self._last_id: int | None = None
        self._last = focus.Tenant(0, "", "")

    def sku(self, pk: int) -> focus.Sku:
        return self.skus[pk]

    def price(self, pk: int | None) -> focus.Price:
        return focus.UNPRICED if pk is None else self.prices[pk]

    def tenant(self, pk: int) -> focus.Tenant:
        if pk == self._last_id:
            return self._last
        found = self._tenants.get(pk)
        if found is None:
            slug, name = Tenant.objects.filter(pk=pk).values_list("slug", "name").get()
            found = self._tenants[pk] = focus.Tenant(pk, slug, name)
        self._last_id, self._last = pk, found
        return found

    def prefetch(self, resources: Collection[int]) -> None:
        """Load the allocations of a chunk in one query; those of earlier chunks are dropped past a bound (rows come
        tenant by tenant, so they are done)."""
        if len(self._resources) + len(resources) > RESOURCE_CACHE:
            self._resources.clear()
        missing = [pk for pk in resources if pk not in self._resources]
        for start in range(0, len(missing), 1000):
            fields = ("pk", "name", "rung", "performance", "security", "hall__code", "workload", "dedicated")
            for pk, name, rung, performance, security, hall, workload, dedicated in Allocation.objects.filter(
                pk__in=missing[start : start + 1000]
            ).values_list(*fields):
                tags: dict[str, Any] = {"name": name, "rung": rung, "hall": hall, "dedicated": dedicated}
                if isinstance(workload, dict):
                    for key in ("kind", "image"):
                        if isinstance(workload.get(key), str):
                            tags[key] = workload[key]
                self._resources[pk] = focus.Resource(pk, name, rung, performance, security, hall, tags)

    def resource(self, pk: int) -> focus.Resource:
        if pk not in self._resources:
            self.prefetch([pk])
        return self._resources[pk]


def _faults(first_ms: int, stop_ms: int, tenant_id: int | None) -> dict[tuple[int, int, int], int]:
    """Lost milliseconds by (allocation, SKU, window) of the piece each fault is attributed to, for pieces whose
    window is in the range."""
    faults = AllocationFault.objects.filter(
        fault_at__gte=from_ms(first_ms), fault_at__lt=from_ms(stop_ms + FAULT_LOOKAHEAD_MS), lost_ms__gt=0
    )
    if tenant_id is not None:
        faults = faults.filter(tenant_id=tenant_id)
    lost: dict[tuple[int, int, int], int] = {}
    for allocation_id, fault_at, lost_ms in faults.values_list("allocation_id", "fault_at", "lost_ms"):
        piece = (
            UsageInterval.objects.filter(allocation_id=allocation_id, start_ms__lte=to_ms(fault_at))
            .order_by("-start_ms")
            .values_list("sku_id", "window_ms")
            .first()
        )
        if piece is not None and first_ms <= piece[1] < stop_ms:
            key = (allocation_id, piece[0], piece[1])
            lost[key] = lost.get(key, 0) + lost_ms
    return lost


def _ms(value: Any) -> int:
    if isinstance(value, str):  # SQLite through a raw cursor: naive text in UTC
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return to_ms(value)


def summary_batches(*, first_ms: int, stop_ms: int, tenant: Tenant | None) -> Iterator[focus_columns.Batch]:
    """The charges (FOCUS rows) of the rollups whose window starts in ``[first_ms, stop_ms)``, a chunk at a time."""
    look = _Lookups()
    tenant_id = tenant.pk if tenant else None
    by_hour: dict[tuple[int, int, int], int] = {}
    for (allocation_id, sku_id, window_ms), lost in _faults(first_ms, stop_ms, tenant_id).items():
        owner = Allocation.objects.filter(pk=allocation_id).values_list("tenant_id", flat=True).get()
        by_hour[(owner, sku_id, window_ms)] = by_hour.get((owner, sku_id, window_ms), 0) + lost
    only_tenant = " AND tenant_id = %s" if tenant_id is not None else ""
    sql = (
        "SELECT tenant_id, sku_id, price_id, window_ms, seq, quantity_milli, CASE WHEN seq > 0 THEN closed_at END "
        f"FROM {UsageRollup._meta.db_table} WHERE window_ms >= %s AND window_ms < %s{only_tenant} "
        "ORDER BY tenant_id, sku_id, window_ms, price_id, seq"
    )
    params: list[Any] = [first_ms, stop_ms] + ([tenant_id] if tenant_id is not None else [])
    with connection.chunked_cursor() as cursor:  # a server-side cursor on PostgreSQL
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK):
            tenants, skus, prices, windows, seqs, quantities, closed = zip(*rows, strict=True)
            if by_hour:  # a fault's lost work goes on the first row of its tenant x SKU x hour
                lost_ms = [by_hour.pop(key, 0) for key in zip(tenants, skus, windows, strict=True)]
            else:
                lost_ms = [0] * len(rows)
            yield focus_columns.Batch(
                look,
                tenants,
                skus,
                prices,
                windows,
                seqs,
                quantities,
                # Only a late adjustment's counting time matters (the others' is null).
                [0 if at is None else _ms(at) for at in closed] if any(seqs) else [0] * len(rows),
                lost_ms,
            )


_DETAIL = """
SELECT u.tenant_id, u.sku_id, u.window_ms, u.allocation_id, u.price_id, u.batch,
       CAST(SUM(u.quantity_milli) AS BIGINT), MIN(r.seq), CASE WHEN MIN(r.seq) > 0 THEN MIN(r.closed_at) END
FROM {interval} u LEFT JOIN {rollup} r
  ON r.tenant_id = u.tenant_id AND r.sku_id = u.sku_id AND r.window_ms = u.window_ms AND r.batch = u.batch
 AND (r.price_id = u.price_id OR (r.price_id IS NULL AND u.price_id IS NULL))
 AND r.window_ms >= %s AND r.window_ms < %s
WHERE u.batch IS NOT NULL AND u.window_ms >= %s AND u.window_ms < %s {only_tenant}
GROUP BY u.tenant_id, u.sku_id, u.window_ms, u.allocation_id, u.price_id, u.batch
ORDER BY u.tenant_id, u.sku_id, u.window_ms, u.allocation_id, u.price_id, u.batch
"""


def detail_batches(*, first_ms: int, stop_ms: int, tenant: Tenant | None) -> Iterator[focus_columns.Batch]:
    """The charges (FOCUS rows) per allocation x SKU x hour x price x counting batch, for windows in
    ``[first_ms, stop_ms)``, a chunk at a time."""
    look = _Lookups()
    tenant_id = tenant.pk if tenant else None
    lost_of = _faults(first_ms, stop_ms, tenant_id)
    sql = _DETAIL.format(
        interval=UsageInterval._meta.db_table,
        rollup=UsageRollup._meta.db_table,
        only_tenant="AND u.tenant_id = %s" if tenant_id is not None else "",
    )
    # The range twice: the rollups' too, so the database reads only the range's rollups for the join.
    params: list[Any] = [first_ms, stop_ms, first_ms, stop_ms] + ([tenant_id] if tenant_id is not None else [])
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK):
            tenants, skus, windows, allocations, prices, _, quantities, seqs, closed = zip(*rows, strict=True)
            if lost_of:
                lost = [lost_of.pop(key, 0) for key in zip(allocations, skus, windows, strict=True)]
            else:
                lost = [0] * len(rows)
            yield focus_columns.Batch(
                look,
                tenants,
                skus,
                prices,
                windows,
                [seq or 0 for seq in seqs],
                quantities,
                # Only a late adjustment's counting time matters (is it after its hour's month?).
                [window if at is None else _ms(at) for window, at in zip(windows, closed, strict=True)],
                lost,
                allocations,
            )


def export_batches(
    *, first_ms: int, stop_ms: int, tenant: Tenant | None, detail: bool
) -> Iterator[focus_columns.Batch]:
    batches = detail_batches if detail else summary_batches
    return batches(first_ms=first_ms, stop_ms=stop_ms, tenant=tenant)
