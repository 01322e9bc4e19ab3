"""Reads of the usage ledger as FOCUS rows, streamed: the summary (usage rollups) and the detail (counted usage
pieces per allocation), for a range of hourly windows and optionally one tenant; and ``write``, which makes an
export's file from them, in several processes when it is large.

Rows come from the database through a chunked iterator (a server-side cursor on PostgreSQL) as plain tuples,
ordered by tenant, SKU and hour, and go on a chunk at a time as columns (``billing.domain.focus_columns.Batch``), so the
cost carry keeps only the lines of the current tenant x SKU. Each read walks an index in its own order that holds
every column it reads (``rollup_export``, ``usage_export``): no sort, no table read. The cost carry starts again at
each tenant x SKU, so an export splits there into parts that are written at once and joined in order.
Lookups (SKUs, prices, tenants, allocations) are small dictionaries; a chunk's allocations are loaded in one
query, and the allocation cache is emptied when it grows past ``RESOURCE_CACHE``. Nothing here writes.

Rows:

- summary: one row per usage rollup: tenant x SKU x price x hour x ``seq``. Two prices in one hour (a price
  change inside it) stay two rows, one per ``SkuPriceId``; a late adjustment (``seq`` > 0) stays its own row, so
  what was added after the hour closed is visible (and is a FOCUS ``Correction`` when it was counted after the
  hour's month had ended).
- detail: the pieces of one resource (an allocation, a volume or a snapshot) x SKU x hour x price counted by one
  rollup batch, summed. Only counted pieces (``batch`` set) are exported, so a detail export and a summary export
  of one range hold the same quantities and costs per tenant x SKU x hour x price.

Goodput lost to provider faults (``provisioning.models.AllocationFault``): a fault's ``lost_ms`` (the work from
the checkpoint the job went back to until the fault) is attributed whole to the allocation's last usage piece that
started at or before the fault (metering stopped at that checkpoint, so that piece's hour is where the lost work
was last billed): its SKU and hour, on the first row of that hour (summary: tenant x SKU x hour; detail:
allocation x SKU x hour). Faults are looked for from the range's start until a week after its end.
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Iterator, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from django.db import connection, connections
from django.utils import timezone

from billing.domain import focus, focus_columns, focus_files
from billing.domain.focus_commitments import commitment_rows
from billing.domain.metering import DAY_MS, from_ms, to_ms
from billing.domain.pricing import price_shown
from billing.models import Sku, SkuPrice, UsageInterval, UsageRollup
from billing.selectors.commitments import commitment_months
from core import forks
from provisioning.models import Allocation, AllocationFault, Volume, VolumeSnapshot
from tenancy.models import Tenant

CHUNK = 20_000  # rows read and made into columns at a time: fewer, larger Arrow calls; memory bounded by it
RESOURCE_CACHE = 20_000  # allocations kept by a detail export
FAULT_LOOKAHEAD_MS = 7 * DAY_MS


class _Lookups:
    def __init__(self) -> None:
        self.skus = {
            pk: focus.Sku(code, rung, unit, mig, gpu or "", region_code, region_name, currency, storage_kind, klass)
            for pk, code, rung, unit, mig, gpu, region_code, region_name, currency, storage_kind, klass in (
                Sku.objects.values_list(
                    "pk",
                    "code",
                    "rung",
                    "unit",
                    "mig_profile",
                    "gpu_model__name",
                    "region__code",
                    "region__name",
                    "currency",
                    "storage_kind",
                    "capacity_class",
                )
            )
        }
        # Prices as they are shown (six places for compute, ten where needed), so an export reads the same
        # whatever places the database keeps.
        self.prices = {
            pk: focus.Price(pk, to_ms(start), price_shown(per_hour))
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
        """Load the resources of a chunk (``focus.resource_key``: allocations, volumes, snapshots) in a query per
        kind; those of earlier chunks are dropped past a bound (rows come tenant by tenant, so they are done)."""
        if len(self._resources) + len(resources) > RESOURCE_CACHE:
            self._resources.clear()
        missing: dict[str, list[int]] = {kind: [] for kind in focus.RESOURCE_KINDS}
        for wanted in resources:
            if wanted not in self._resources:
                kind, pk = focus.resource_of(wanted)
                missing[kind].append(pk)
        for start in range(0, len(missing["allocation"]), 1000):
            fields = ("pk", "name", "rung", "performance", "security", "hall__code", "workload", "dedicated")
            for pk, name, rung, performance, security, hall, workload, dedicated in Allocation.objects.filter(
                pk__in=missing["allocation"][start : start + 1000]
            ).values_list(*fields):
                tags: dict[str, Any] = {"name": name, "rung": rung, "hall": hall, "dedicated": dedicated}
                if isinstance(workload, dict):
                    for key in ("kind", "image"):
                        if isinstance(workload.get(key), str):
                            tags[key] = workload[key]
                resource = focus.Resource(pk, name, rung, performance, security, hall, tags)
                self._resources[resource.key] = resource
        for start in range(0, len(missing["volume"]), 1000):
            for pk, name, kind in Volume.objects.filter(pk__in=missing["volume"][start : start + 1000]).values_list(
                "pk", "name", "kind"
            ):
                resource = focus.Resource(pk, name, "", "", "", "", {"name": name, "storage_kind": kind}, "volume")
                self._resources[resource.key] = resource
        for start in range(0, len(missing["snapshot"]), 1000):
            for pk, name, volume in VolumeSnapshot.objects.filter(
                pk__in=missing["snapshot"][start : start + 1000]
            ).values_list("pk", "name", "volume_id"):
                tags = {"name": name, "storage_kind": "snapshot", "volume": volume}
                resource = focus.Resource(pk, name, "", "", "", "", tags, "snapshot")
                self._resources[resource.key] = resource

    def resource(self, key: int) -> focus.Resource:
        if key not in self._resources:
            self.prefetch([key])
        return self._resources[key]


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


Key = tuple[int, int]  # (tenant id, SKU id): the unit an export is split by (the cost carry is per tenant x SKU)
KeyRange = tuple[Key, Key]  # the first and the last key of a part, inclusive


def _where(tenant_id: int | None, keys: KeyRange | None) -> tuple[str, list[Any]]:
    """The filters after the range's: one tenant, and the keys of one part."""
    sql, params = "", []
    if tenant_id is not None:
        sql, params = " AND tenant_id = %s", [tenant_id]
    if keys is not None:
        sql += " AND (tenant_id, sku_id) >= (%s, %s) AND (tenant_id, sku_id) <= (%s, %s)"
        params += [*keys[0], *keys[1]]
    return sql, params


def key_counts(*, first_ms: int, stop_ms: int, tenant_id: int | None, detail: bool) -> list[tuple[Key, int]]:
    """How many rows each tenant x SKU has in the range, in export order: an index-only count, a few percent of the
    export's own reading."""
    table, counted = (
        (UsageInterval._meta.db_table, " AND batch IS NOT NULL") if detail else (UsageRollup._meta.db_table, "")
    )
    where, params = _where(tenant_id, None)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT tenant_id, sku_id, COUNT(*) FROM {table} WHERE window_ms >= %s AND window_ms < %s{counted}"
            f"{where} GROUP BY tenant_id, sku_id ORDER BY tenant_id, sku_id",
            [first_ms, stop_ms, *params],
        )
        return [((tenant, sku), count) for tenant, sku, count in cursor.fetchall()]


def split(counts: list[tuple[Key, int]], parts: int) -> list[tuple[KeyRange, int]]:
    """Contiguous runs of the keys (in order) holding about equal rows, at most ``parts`` of them, with their row
    counts. A key is never split: its rows carry cost from one to the next."""
    total = sum(count for _, count in counts)
    runs: list[tuple[KeyRange, int]] = []
    first: Key | None = None
    held = done = 0
    for key, count in counts:
        first = first or key
        held += count
        # Close the run once it reaches its share of what is left.
        if held * (parts - len(runs)) >= total - done and len(runs) < parts - 1:
            runs.append(((first, key), held))
            done += held
            first, held = None, 0
    if first is not None:
        runs.append(((first, counts[-1][0]), held))
    return runs


def summary_batches(
    *, first_ms: int, stop_ms: int, tenant_id: int | None, keys: KeyRange | None = None
) -> Iterator[focus_columns.Batch]:
    """The charges (FOCUS rows) of the rollups whose window starts in ``[first_ms, stop_ms)`` (of one tenant, of the
    keys of one part), a chunk at a time, in the order of the ``rollup_export`` index (no sort, no table read)."""
    look = _Lookups()
    by_hour: dict[tuple[int, int, int], int] = {}
    for (allocation_id, sku_id, window_ms), lost in _faults(first_ms, stop_ms, tenant_id).items():
        owner = Allocation.objects.filter(pk=allocation_id).values_list("tenant_id", flat=True).get()
        by_hour[(owner, sku_id, window_ms)] = by_hour.get((owner, sku_id, window_ms), 0) + lost
    where, params = _where(tenant_id, keys)
    sql = (
        "SELECT tenant_id, sku_id, price_id, window_ms, seq, quantity_milli, CASE WHEN seq > 0 THEN closed_at END "
        f"FROM {UsageRollup._meta.db_table} WHERE window_ms >= %s AND window_ms < %s{where} "
        "ORDER BY tenant_id, sku_id, window_ms, price_id, seq"
    )
    with connection.chunked_cursor() as cursor:  # a server-side cursor on PostgreSQL
        cursor.execute(sql, [first_ms, stop_ms, *params])
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


# One of allocation, volume and snapshot is set (``usage_of_one_thing``): the resource of the row.
_DETAIL = """
SELECT tenant_id, sku_id, window_ms, allocation_id, volume_id, snapshot_id, price_id, batch,
       CAST(SUM(quantity_milli) AS BIGINT)
FROM {interval}
WHERE batch IS NOT NULL AND window_ms >= %s AND window_ms < %s{where}
GROUP BY tenant_id, sku_id, window_ms, allocation_id, volume_id, snapshot_id, price_id, batch
ORDER BY tenant_id, sku_id, window_ms, allocation_id, volume_id, snapshot_id, price_id, batch
"""

# The late adjustments (rollups with seq > 0) between two (tenant, SKU, hour) keys, inclusive: those of a chunk.
_LATE = """
SELECT tenant_id, sku_id, window_ms, price_id, batch, seq, closed_at FROM {rollup}
WHERE (tenant_id, sku_id, window_ms) >= (%s, %s, %s) AND (tenant_id, sku_id, window_ms) <= (%s, %s, %s) AND seq > 0
  AND window_ms >= %s AND window_ms < %s
"""


def _late(rows: list[tuple[Any, ...]], first_ms: int, stop_ms: int) -> dict[tuple[Any, ...], tuple[int, int]]:
    """The rollup ``seq`` and counting time of each late adjustment among a chunk of detail rows, by (tenant, SKU,
    hour, price, batch): one query for the chunk's key range through the ``rollup_export`` index."""
    first, last = rows[0], rows[-1]
    with connection.cursor() as cursor:
        cursor.execute(
            _LATE.format(rollup=UsageRollup._meta.db_table),
            [*first[:3], *last[:3], first_ms, stop_ms],
        )
        return {
            (tenant, sku, window, price, batch): (seq, _ms(closed))
            for tenant, sku, window, price, batch, seq, closed in cursor.fetchall()
        }


def detail_batches(
    *, first_ms: int, stop_ms: int, tenant_id: int | None, keys: KeyRange | None = None
) -> Iterator[focus_columns.Batch]:
    """The charges (FOCUS rows) per resource (an allocation, a volume or a snapshot) x SKU x hour x price x counting
    batch, for windows in ``[first_ms, stop_ms)``, a chunk at a time. A piece's rollup is a late adjustment when the
    rollup its batch made has ``seq`` > 0; those are few and are looked up per chunk, so the pieces are read alone,
    in the order of the ``usage_export`` index (no sort, no table read)."""
    look = _Lookups()
    lost_of = _faults(first_ms, stop_ms, tenant_id)
    where, params = _where(tenant_id, keys)
    with connection.chunked_cursor() as cursor:
        cursor.execute(_DETAIL.format(interval=UsageInterval._meta.db_table, where=where), [first_ms, stop_ms, *params])
        while rows := cursor.fetchmany(CHUNK):
            tenants, skus, windows, allocations, volumes, snapshots, prices, _, quantities = zip(*rows, strict=True)
            if lost_of:
                lost = [lost_of.pop(key, 0) for key in zip(allocations, skus, windows, strict=True)]
            else:
                lost = [0] * len(rows)
            late = _late(rows, first_ms, stop_ms)
            seqs: Sequence[int]
            closed: Sequence[int]
            if late:
                found = [late.get((r[0], r[1], r[2], r[6], r[7])) for r in rows]
                seqs = [0 if f is None else f[0] for f in found]
                closed = [w if f is None else f[1] for w, f in zip(windows, found, strict=True)]
            else:  # counted in time: the counting time only matters for a late adjustment
                seqs, closed = [0] * len(rows), windows
            resources = [
                focus.resource_key("allocation", a)
                if a is not None
                else focus.resource_key("volume", v)
                if v is not None
                else focus.resource_key("snapshot", n)
                for a, v, n in zip(allocations, volumes, snapshots, strict=True)
            ]
            yield focus_columns.Batch(look, tenants, skus, prices, windows, seqs, quantities, closed, lost, resources)


def export_batches(
    *, first_ms: int, stop_ms: int, tenant_id: int | None, detail: bool, keys: KeyRange | None = None
) -> Iterator[focus_columns.Batch]:
    batches = detail_batches if detail else summary_batches
    return batches(first_ms=first_ms, stop_ms=stop_ms, tenant_id=tenant_id, keys=keys)


PARALLEL_MIN_ROWS = 50_000  # fewer rows are written by one process: starting others costs more than they save
PARTS_PER_WORKER = 1  # a part per worker: each fork costs the pages it copies from this process


def _write_part(
    file_format: str, path: str, first_ms: int, stop_ms: int, tenant_id: int | None, detail: bool, keys: KeyRange
) -> int:
    """In a worker process: write one part (its own database connection, opened on first use); its rows."""
    batches = export_batches(first_ms=first_ms, stop_ms=stop_ms, tenant_id=tenant_id, detail=detail, keys=keys)
    return focus_files.write_part(file_format, path, batches)


def write(
    file_format: str, path: str, *, first_ms: int, stop_ms: int, tenant_id: int | None, detail: bool, workers: int
) -> focus_files.Written:
    """Write an export's file; returns how many rows, its SHA-256 and size. With ``workers`` > 1 and enough rows,
    the rows are split by tenant x SKU into contiguous parts (``split``) that worker processes write at once
    (``focus_files.write_part``) and this process joins in order as they come (``focus_files.join``): the same
    file one process would write.

    The workers are forked (Linux): they share nothing but what is committed, so an export inside a transaction
    (a test's) is written by this process alone. The database connections are closed first, so each process opens
    its own. Each part reads its keys' rows as they are when it starts (closed hours do not change).

    The objects that exist when the export starts are frozen out of the garbage collector until it ends: an export
    makes hundreds of thousands of short-lived tuples, and each full collection would walk the whole process (and,
    in a worker, copy the pages it shares with this one)."""
    gc.freeze()
    try:
        return _write(file_format, path, first_ms, stop_ms, tenant_id, detail, workers)
    finally:
        gc.unfreeze()


def _write(
    file_format: str, path: str, first_ms: int, stop_ms: int, tenant_id: int | None, detail: bool, workers: int
) -> focus_files.Written:
    # A reservation's months (purchase, used, unused): a handful of rows, written after the usage rows.
    months = commitment_months(first_ms=first_ms, stop_ms=stop_ms, tenant_id=tenant_id, now=timezone.now())
    extra = [row for month in months for row in commitment_rows(month)]
    parts: list[tuple[KeyRange, int]] = []
    if workers > 1 and not connection.in_atomic_block:
        counts = key_counts(first_ms=first_ms, stop_ms=stop_ms, tenant_id=tenant_id, detail=detail)
        if sum(count for _, count in counts) >= PARALLEL_MIN_ROWS:
            parts = split(counts, workers * PARTS_PER_WORKER)
    if len(parts) < 2:
        batches = export_batches(first_ms=first_ms, stop_ms=stop_ms, tenant_id=tenant_id, detail=detail)
        return focus_files.write(file_format, path, batches, extra=extra)
    names = [f"{path}.{n}" for n in range(len(parts))]
    calls = [
        partial(_write_part, file_format, name, first_ms, stop_ms, tenant_id, detail, keys)
        for name, (keys, _) in zip(names, parts, strict=True)
    ]
    rows = 0
    connections.close_all()
    results = forks.in_order(calls, workers)

    def written() -> Iterator[str]:
        nonlocal rows
        for name, count in zip(names, results, strict=True):
            rows += count
            yield name

    try:
        return focus_files.join(file_format, path, written(), lambda: rows, extra=extra)
    finally:
        results.close()  # a failed join stops the workers still writing
        for name in names:
            Path(name).unlink(missing_ok=True)
