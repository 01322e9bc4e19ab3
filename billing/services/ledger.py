"""Every write to the usage ledger: intervals open and close with the ``running`` state, windows close into
hourly rollups (the Stripe outbox).

- ``usage_open`` / ``usage_close`` are called by the allocation state machine, inside its transaction;
  ``usage_rescale`` when a serverless endpoint's ready replicas change (usage is replica-seconds).
- ``windows_close`` (``manage.py billing_close_windows``, Celery beat) rolls up every window whose end + grace
  has passed: running intervals are cut at the hour boundaries and price changes of those windows (the piece cut
  off is counted as it is written), and every other closed piece of them not yet counted is counted. A piece that
  lands in a window after it closed becomes a late-adjustment rollup (``seq`` > 0); a closed rollup is never
  changed.

Window closing is serialized by the ``MeteringLock`` row. The heavy steps are set-based SQL: on PostgreSQL one
statement per cut closes, opens the successors and sums, and one statement marks and sums the other pieces, so
each running interval's piece is written once when it is cut and never read again.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max

from billing.domain import metering
from billing.domain.metering import HOUR_MS, to_ms, window_of
from billing.domain.pricing import amount
from billing.models import MeteringLock, MeterTotal, PushState, Sku, SkuPrice, Unit, UsageInterval, UsageRollup
from billing.selectors import PriceBook
from core.locks import lock_singleton
from core.progress import QUIET, Progress
from provisioning.domain.capacity_classes import DEFAULT_CLASS
from provisioning.domain.node_host import bundle_model, host_extra
from provisioning.domain.placement.decision import members_on
from provisioning.domain.rungs import Rung, rung_facts
from provisioning.models import Allocation, AllocationDevice, Region

# --- the price book as the ledger needs it ---------------------------------------------------------------------


def meters_of(allocation: Allocation) -> list[tuple[Sku, int]]:
    """The SKUs an allocation's active devices are sold as, and how many milli-units of each they are: its GPUs'
    (a whole GPU, slice, share or node), then its vCPUs and memory beyond the bundle, when it took any
    (``host_sku``, priced by ``billing.services.host``). A serverless endpoint is billed for its ready replicas
    only (one device each): ``allocation.replicas`` of its devices."""
    devices = list(
        AllocationDevice.objects.filter(allocation=allocation, active=True)
        .select_related("gpu__node__hall__region", "gpu__node__gpu_model")
        .order_by("pk")
    )
    facts = rung_facts(allocation.rung)
    if facts.endpoint and allocation.replicas is not None:
        devices = devices[: allocation.replicas]
    if not devices or devices[0].gpu is None:
        raise ValueError(f"allocation {allocation.pk} holds no devices (or ready replicas) to meter")
    node = devices[0].gpu.node
    region = node.hall.region
    unit, mig_profile = Sku.unit_for(allocation.rung, devices[0].mig_profile)
    if unit == Unit.NODE:
        units = 1000 * len({d.hostname for d in devices})
    elif devices[0].share_milli is not None:
        units = sum(d.share_milli or 0 for d in devices)
    else:
        units = 1000 * len(devices)
    sku = sku_get(
        rung=allocation.rung,
        gpu_model=node.gpu_model,
        unit=unit,
        mig_profile=mig_profile,
        region=region,
        capacity_class=allocation.capacity_class,
    )
    meters = [(sku, units)]
    spec = allocation.spec
    gpus = int(spec.get("gpus") or 0)
    members = members_on(len(devices), gpus)
    cpu, memory = host_extra(
        Rung(allocation.rung),
        bundle_model(spec["gpu_models"]),
        gpus,
        int(spec.get("cpu_milli") or 0),
        int(spec.get("memory_mib") or 0),
    )
    if cpu:
        meters.append((host_sku(unit=Unit.VCPU, region=region), cpu * members))
    if memory:
        meters.append((host_sku(unit=Unit.MEMORY, region=region), memory * 1000 // 1024 * members))
    return meters


def sku_get(
    *, rung: str, gpu_model: Any, unit: str, mig_profile: str, region: Any, capacity_class: str = DEFAULT_CLASS
) -> Sku:
    """The SKU for a combination, made on first use (unpriced until an operator prices it)."""
    shape = {"rung": rung, "gpu_model": gpu_model, "unit": unit, "mig_profile": mig_profile, "region": region}
    sku = Sku.objects.filter(**shape, capacity_class=capacity_class).first()
    if sku is None:
        sku = Sku(**shape, capacity_class=capacity_class)
        sku.currency = settings.LADDER_BILLING_CURRENCY
        with transaction.atomic():
            sku.save()
    return sku


def host_sku(*, unit: str, region: Region) -> Sku:
    """The SKU of vCPUs (``vcpu``) or memory (``memory``) beyond the bundle in a region, made on first use
    (unpriced until an operator prices it)."""
    sku = Sku.objects.filter(unit=unit, region=region).first()
    if sku is None:
        sku = Sku(unit=unit, region=region, currency=settings.LADDER_BILLING_CURRENCY)
        with transaction.atomic():
            sku.save()
    return sku


# --- intervals ---------------------------------------------------------------------------------------------------


def usage_open(*, allocation: Allocation, at: datetime) -> list[UsageInterval]:
    """The allocation started running at ``at``: open its intervals, one per SKU it is sold as (once)."""
    if UsageInterval.objects.filter(allocation=allocation, end_ms=None).exists():
        return []
    meters = meters_of(allocation)
    start = to_ms(at)
    book = PriceBook.load(sku.pk for sku, _ in meters)
    return UsageInterval.objects.bulk_create(
        UsageInterval(
            tenant_id=allocation.tenant_id,
            allocation=allocation,
            sku=sku,
            price=book.at(sku.pk, start),
            units_milli=units,
            start_ms=start,
            window_ms=window_of(start),
        )
        for sku, units in meters
    )


def usage_close(*, allocation: Allocation, at: datetime) -> int:
    """The allocation stopped running at ``at``: close its open interval into pieces; returns milli-units used."""
    return intervals_close(at=at, allocation=allocation)


def intervals_close(*, at: datetime, **owner: Any) -> int:
    """Close the open interval of one owner (``allocation=``, ``volume=`` or ``snapshot=``) at ``at``; returns the
    milli-unit-seconds it used. Window closing may cut the open row concurrently (closing it and opening its
    successor in one statement): after a lock wait the open row may be gone and its successor only visible to a new
    statement, so look again until a fresh look finds nothing open."""
    end = to_ms(at)
    used = 0
    quiet = 0
    while quiet < 2:
        rows = list(UsageInterval.objects.select_for_update(no_key=True).filter(end_ms=None, **owner))
        quiet = quiet + 1 if not rows else 0
        for row in rows:
            used += _close(row, max(end, row.start_ms))
    return used


def usage_rescale(*, allocation: Allocation, at: datetime) -> list[UsageInterval]:
    """A running endpoint's ready replicas changed at ``at``: the open intervals close there and new ones open
    for the new count (``allocation.replicas``), so its usage is replica-seconds to the millisecond."""
    usage_close(allocation=allocation, at=at)
    return usage_open(allocation=allocation, at=at)


def _close(row: UsageInterval, end: int) -> int:
    book = PriceBook.load([row.sku_id])
    pieces = metering.split(row.start_ms, end, book.changes(row.sku_id, row.start_ms, end))
    first, rest = pieces[0], pieces[1:]
    row.end_ms = first.end_ms
    row.quantity_milli = metering.quantity(row.units_milli, first.start_ms, first.end_ms)
    row.save(update_fields=["end_ms", "quantity_milli"])
    more = [
        UsageInterval(
            tenant_id=row.tenant_id,
            allocation_id=row.allocation_id,
            volume_id=row.volume_id,
            snapshot_id=row.snapshot_id,
            sku_id=row.sku_id,
            price=book.at(row.sku_id, p.start_ms),
            units_milli=row.units_milli,
            start_ms=p.start_ms,
            end_ms=p.end_ms,
            window_ms=p.window_ms,
            quantity_milli=metering.quantity(row.units_milli, p.start_ms, p.end_ms),
        )
        for p in rest
    ]
    UsageInterval.objects.bulk_create(more)
    return row.quantity_milli + sum(p.quantity_milli or 0 for p in more)


# --- closing windows ---------------------------------------------------------------------------------------------


@dataclass
class CloseReport:
    cut: int = 0  # open intervals cut at an hour boundary or a price change
    pieces: int = 0  # closed pieces rolled up
    rollups: int = 0  # rollups made
    late: int = 0  # of which late adjustments

    def __str__(self) -> str:
        return (
            f"cut {self.cut} open intervals; rolled up {self.pieces} pieces into {self.rollups} rollups "
            f"({self.late} late adjustments)"
        )


def windows_close(*, now: datetime, progress: Progress = QUIET) -> CloseReport:
    """Roll up every window whose end + grace is before ``now``: running intervals are cut at the hour
    boundaries and price changes of those windows, and every piece of them not yet counted is summed.
    ``progress`` counts the cuts made (hour boundaries and price changes), out of those due."""
    report = CloseReport()
    grace_ms = int(timedelta(minutes=settings.LADDER_BILLING_GRACE_MINUTES).total_seconds() * 1000)
    due = window_of(to_ms(now) - grace_ms)  # every window ending at or before this boundary has closed
    with transaction.atomic():
        cut_through, last_batch = lock_singleton(MeteringLock, "cut_through_ms", "last_batch")
        batch = last_batch + 1
        if cut_through is None:
            oldest = UsageInterval.objects.filter(end_ms=None).order_by("start_ms").values_list("start_ms", flat=True)
            cut_through = window_of(oldest[0]) if oldest else due
        sums: Counter[tuple[int, int, int | None, int]] = Counter()
        stragglers = _cut_stragglers(cut_through)
        cut = _cut_through(cut_through, due, batch, sums, progress) if due > cut_through else 0
        progress.finish()
        report.cut = stragglers + cut
        report.pieces = cut + _mark(batch, due - HOUR_MS, sums)
        report.rollups, report.late = _roll_up(batch, sums)
        MeteringLock.objects.filter(id=1).update(
            cut_through_ms=max(due, cut_through), last_batch=batch if report.rollups else last_batch
        )
    return report


def _cut_stragglers(done_ms: int) -> int:
    """Open intervals that started before the last cut (a provider reported a start late) are cut up to it here,
    one by one, so the set-based cut that follows only ever closes less than an hour."""
    stragglers = list(UsageInterval.objects.select_for_update(no_key=True).filter(end_ms=None, start_ms__lt=done_ms))
    book = PriceBook.load(row.sku_id for row in stragglers)
    for row in stragglers:
        _close(row, done_ms)
        UsageInterval.objects.create(
            tenant_id=row.tenant_id,
            allocation_id=row.allocation_id,
            volume_id=row.volume_id,
            snapshot_id=row.snapshot_id,
            sku_id=row.sku_id,
            price=book.at(row.sku_id, done_ms),
            units_milli=row.units_milli,
            start_ms=done_ms,
            window_ms=window_of(done_ms),
        )
    return len(stragglers)


def _cut_through(done_ms: int, due_ms: int, batch: int, sums: Counter[Any], progress: Progress = QUIET) -> int:
    """Cut open intervals at each price change and hour boundary in ``(done, due]``, oldest first. The pieces cut
    off belong to closed windows: they are counted (``batch``) in the same statement, never written twice."""
    cut = 0
    changes = SkuPrice.objects.filter(
        effective_from__gt=metering.from_ms(done_ms), effective_from__lt=metering.from_ms(due_ms)
    ).values_list("sku_id", "effective_from")
    points: dict[int, set[int | None]] = defaultdict(set)
    for sku_id, moment in changes:
        points[to_ms(moment)].add(sku_id)
    for boundary in range(done_ms + HOUR_MS, due_ms + 1, HOUR_MS):
        points[boundary] = {None}  # an hour cut cuts every SKU, a price change on the hour included
    progress.set_total(sum(len(skus) for skus in points.values()))
    for at in sorted(points):
        for only in points[at]:
            cut += _cut(at, only, batch, sums)
            progress.advance()
    return cut


_PRICE_AT = (
    "(SELECT p.id FROM {price} p WHERE p.sku_id = {alias}.sku_id AND p.effective_from <= %(moment)s "
    "ORDER BY p.effective_from DESC LIMIT 1)"
)
_GROUPS = "tenant_id, sku_id, price_id, window_ms"


def _cut(at: int, sku_id: int | None, batch: int, sums: Counter[Any]) -> int:
    """Close every open interval (of one SKU, or all) that started before ``at``, counted in ``batch``, and open
    its successor at ``at``.

    PostgreSQL does it in one statement (the update feeds the insert and the sums), so no row is ever seen half
    cut and no row is read again. SQLite (one writer at a time) closes, then copies the rows it closed; its sums
    are read at the end (``_mark``)."""
    table = UsageInterval._meta.db_table
    price = SkuPrice._meta.db_table
    only_sku = " AND sku_id = %(sku)s" if sku_id is not None else ""
    params = {"at": at, "window": window_of(at), "sku": sku_id, "moment": metering.from_ms(at), "batch": batch}
    owners = "allocation_id, volume_id, snapshot_id"  # one of them is set (usage_of_one_thing)
    columns = f"tenant_id, {owners}, sku_id, price_id, units_milli, start_ms, end_ms, window_ms"
    closing = "end_ms = %(at)s, quantity_milli = units_milli * (%(at)s - start_ms) / 1000, batch = %(batch)s"
    where = f"end_ms IS NULL AND start_ms < %(at)s{only_sku}"
    successors = (
        f"INSERT INTO {table} ({columns}) SELECT tenant_id, {owners}, sku_id, "
        "{price_at}, units_milli, %(at)s, NULL, %(window)s FROM {source}"
    )
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"WITH cut AS (UPDATE {table} SET {closing} WHERE {where} "
                f"RETURNING tenant_id, {owners}, sku_id, price_id, units_milli, window_ms, quantity_milli), "
                f"successor AS ("
                + successors.format(price_at=_PRICE_AT.format(price=price, alias="cut"), source="cut")
                + f") SELECT {_GROUPS}, sum(quantity_milli), count(*) FROM cut GROUP BY {_GROUPS}",
                params,
            )
            return _add_sums(cursor.fetchall(), sums)
        cursor.execute(f"UPDATE {table} SET {closing} WHERE {where}", params)
        count = int(cursor.rowcount)
        just_cut = f"{table} WHERE batch = %(batch)s AND end_ms = %(at)s{only_sku}"
        cursor.execute(successors.format(price_at=_PRICE_AT.format(price=price, alias=table), source=just_cut), params)
        return count


def _mark(batch: int, last_window_ms: int, sums: Counter[Any]) -> int:
    """Count in ``batch`` every closed piece of a closed window that no batch has counted (intervals that stopped,
    late usage) and add them to ``sums``; returns how many."""
    table = UsageInterval._meta.db_table
    params = {"batch": batch, "last": last_window_ms}
    mark = f"UPDATE {table} SET batch = %(batch)s WHERE batch IS NULL AND end_ms IS NOT NULL AND window_ms <= %(last)s"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"WITH marked AS ({mark} RETURNING {_GROUPS}, quantity_milli) "
                f"SELECT {_GROUPS}, sum(quantity_milli), count(*) FROM marked GROUP BY {_GROUPS}",
                params,
            )
            return _add_sums(cursor.fetchall(), sums)
        cursor.execute(mark, params)
        marked = int(cursor.rowcount)
        cursor.execute(
            f"SELECT {_GROUPS}, sum(quantity_milli), count(*) FROM {table} WHERE batch = %(batch)s GROUP BY {_GROUPS}",
            params,
        )
        sums.clear()  # SQLite's cuts did not sum: everything counted in the batch is summed here, once
        _add_sums(cursor.fetchall(), sums)
        return marked


def _add_sums(rows: list[tuple[Any, ...]], sums: Counter[Any]) -> int:
    """Add ``(tenant, sku, price, window, quantity, count)`` rows to ``sums``; returns the pieces they count."""
    pieces = 0
    for tenant_id, sku_id, price_id, window_ms, quantity, count in rows:
        sums[(tenant_id, sku_id, price_id, window_ms)] += int(quantity)
        pieces += count
    return pieces


def _roll_up(batch: int, sums: Counter[tuple[int, int, int | None, int]]) -> tuple[int, int]:
    """Turn the batch's sums (tenant x SKU x price x window) into rollups; returns (rollups, late adjustments)."""
    if not sums:
        return 0, 0
    keys = sorted(sums, key=lambda k: (k[0], k[1], k[3], k[2] or 0))
    prices = {p.pk: p for p in SkuPrice.objects.filter(pk__in={k[2] for k in keys if k[2] is not None})}
    currency = dict(Sku.objects.filter(pk__in={k[1] for k in keys}).values_list("pk", "currency"))
    seen: dict[tuple[int, int, int | None, int], int] = {
        (r["tenant_id"], r["sku_id"], r["price_id"], r["window_ms"]): r["top"]
        for r in UsageRollup.objects.filter(window_ms__in={k[3] for k in keys})
        .values("tenant_id", "sku_id", "price_id", "window_ms")
        .annotate(top=Max("seq"))
    }
    totals = {
        (t.tenant_id, t.sku_id): t
        for t in MeterTotal.objects.filter(tenant_id__in={k[0] for k in keys}, sku_id__in={k[1] for k in keys})
    }
    rollups = []
    for key in keys:
        tenant_id, sku_id, price_id, window_ms = key
        q = sums[key]
        total = totals.get((tenant_id, sku_id))
        if total is None:
            total = totals[(tenant_id, sku_id)] = MeterTotal(tenant_id=tenant_id, sku_id=sku_id, quantity_milli=0)
        [value] = metering.meter_values(total.quantity_milli, [q])
        total.quantity_milli += q
        top = seen.get(key)
        price = prices.get(price_id) if price_id is not None else None
        rollups.append(
            UsageRollup(
                tenant_id=tenant_id,
                sku_id=sku_id,
                price_id=price_id,
                window_ms=window_ms,
                seq=0 if top is None else top + 1,
                batch=batch,
                quantity_milli=q,
                amount=amount(q, price.unit_price_per_hour) if price else Decimal(0),
                currency=currency[sku_id],
                meter_value=value,
                push_state=PushState.PENDING if value else PushState.NOTHING,
            )
        )
    UsageRollup.objects.bulk_create(rollups, batch_size=2000)
    MeterTotal.objects.bulk_create(
        totals.values(),
        update_conflicts=True,
        unique_fields=["tenant", "sku"],
        update_fields=["quantity_milli"],
        batch_size=2000,
    )
    return len(rollups), sum(r.seq > 0 for r in rollups)
