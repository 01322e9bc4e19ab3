"""Reads of the ledger: usage by window or day (closed pieces plus the open window so far), the upcoming
invoice priced from the price book, a month's spend, the public price list, and the budgets' standing.

Beside it: the price book as the ledger reads it (``book.py``), storage's prices (``storage.py``), finance's
revenue and margin (``margin.py``) and the FOCUS exports (``exports.py``); the first three are named here too."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count, Min, Sum

from billing.domain import metering
from billing.domain.commitments import PRICED_AS, Commitment, billed_milli, term_prices
from billing.domain.metering import DAY_MS, HOUR_MS, to_ms
from billing.domain.pricing import (
    HOST_UNITS,
    QUANTITY_UNITS,
    amount,
    invoice_lines,
    per_gb_month,
    round_money,
    unit_hours,
    unit_seconds,
)
from billing.models import BillingAccount, BudgetAlert, PushState, Sku, SkuPrice, UsageInterval, UsageRollup
from billing.selectors.book import PriceBook
from billing.selectors.margin import margin_report
from billing.selectors.storage import (
    StoragePriceRow,
    storage_price_at,
    storage_price_book,
    storage_prices,
    storage_sku_code,
)
from core.domain import months
from provisioning.domain.capacity_classes import CLASSES, DEFAULT_CLASS, CapacityClass
from provisioning.domain.node_host import bundled
from provisioning.domain.placement.offerings import Offering
from provisioning.domain.rungs import RUNGS, Performance, Rung
from provisioning.models import Allocation, GpuModel, Region, Reservation
from tenancy.models import Tenant

__all__ = [  # what callers import from here that is written beside it
    "PriceBook",
    "StoragePriceRow",
    "margin_report",
    "storage_price_at",
    "storage_price_book",
    "storage_prices",
    "storage_sku_code",
]

# (sku id, window start ms, price or None, quantity in milli-unit-seconds)
Usage = tuple[int, int, SkuPrice | None, int]


def usage_pieces(*, tenant: Tenant, first_ms: int, stop_ms: int, now: datetime) -> Iterator[Usage]:
    """Every piece of the tenant's usage whose window starts in ``[from, to)``: the closed ones summed per SKU,
    window and price, and the open intervals measured up to ``now`` (the open window so far)."""
    closed = (
        UsageInterval.objects.filter(
            tenant=tenant, end_ms__isnull=False, window_ms__gte=first_ms, window_ms__lt=stop_ms
        )
        .values("sku_id", "window_ms", "price_id")
        .annotate(q=Sum("quantity_milli"))
    )
    rows = list(closed)
    prices = {p.pk: p for p in SkuPrice.objects.filter(pk__in={r["price_id"] for r in rows} - {None})}
    for r in rows:
        yield r["sku_id"], r["window_ms"], prices.get(r["price_id"]), r["q"]
    open_rows = list(UsageInterval.objects.filter(tenant=tenant, end_ms=None))
    if not open_rows:
        return
    book = PriceBook.load(r.sku_id for r in open_rows)
    now_ms = to_ms(now)
    for row in open_rows:
        end = max(now_ms, row.start_ms)
        for piece in metering.split(row.start_ms, end, book.changes(row.sku_id, row.start_ms, end)):
            if first_ms <= piece.window_ms < stop_ms:
                q = metering.quantity(row.units_milli, piece.start_ms, piece.end_ms)
                yield row.sku_id, piece.window_ms, book.at(row.sku_id, piece.start_ms), q


@dataclass(frozen=True)
class UsageRow:
    sku: str
    window_start: datetime
    gpu_seconds: Decimal  # unit-seconds of the SKU (GB-seconds for storage: the name is the API's first one)
    amount: Decimal
    currency: str
    unit: str  # what ``quantity`` counts: GPU-hours, MIG slice-hours, node-hours or GB-hours
    quantity: Decimal  # unit-hours of the SKU, to the micro-hour


def usage_rows(*, tenant: Tenant, start: datetime, end: datetime, granularity: str, now: datetime) -> list[UsageRow]:
    bucket_ms = HOUR_MS if granularity == "hour" else DAY_MS
    first = to_ms(start)
    first -= first % bucket_ms
    quantities: dict[tuple[int, int], int] = defaultdict(int)
    money: dict[tuple[int, int], Decimal] = defaultdict(Decimal)
    for sku_id, window_ms, price, q in usage_pieces(tenant=tenant, first_ms=first, stop_ms=to_ms(end), now=now):
        key = (sku_id, window_ms - window_ms % bucket_ms)
        quantities[key] += q
        if price is not None:
            money[key] += amount(q, price.unit_price_per_hour)
    skus = {s.pk: s for s in Sku.objects.filter(pk__in={k[0] for k in quantities})}
    return [
        UsageRow(
            sku=skus[sku_id].code,
            window_start=metering.from_ms(bucket),
            gpu_seconds=unit_seconds(q),
            amount=round_money(money[(sku_id, bucket)], skus[sku_id].currency),
            currency=skus[sku_id].currency,
            unit=QUANTITY_UNITS[skus[sku_id].unit],
            quantity=unit_hours(q),
        )
        for (sku_id, bucket), q in sorted(quantities.items(), key=lambda item: (item[0][1], skus[item[0][0]].code))
    ]


def month_of(now: datetime) -> tuple[datetime, datetime]:
    """The calendar month (UTC) containing ``now``: the billing period."""
    start = months.month_of(now)
    return start, months.month_end(start)


# A reservation's line: its term's part of the period, used or not, at 730 GPU-hours a GPU for a whole month.
COMMITTED_UNIT = "GPU-hours committed"


@dataclass(frozen=True)
class InvoicePreview:
    period_start: datetime
    period_end: datetime
    currency: str
    lines: list[dict[str, Any]]
    total: Decimal


def reservation_charges(*, tenant: Tenant, start: datetime, end: datetime) -> list[tuple[str, Decimal, int]]:
    """``(sku, price per GPU-hour, milli-unit-seconds)`` of each reservation's term inside ``[start, end)``: a
    month's invoice bills the month's part of every term, used or not, in advance, at 730 GPU-hours a GPU for a
    whole month (``billing.domain.commitments.billed_milli``)."""
    rows = []
    for r in Reservation.objects.filter(tenant=tenant, starts_at__lt=end, ends_at__gt=start).order_by("pk"):
        term = Commitment(r.pk, r.gpus, to_ms(r.starts_at), to_ms(r.ends))
        quantity = billed_milli(term, to_ms(start), to_ms(end))
        if quantity:
            rows.append((term.sku, r.price_per_gpu_hour, quantity))
    return rows


def invoice_for(*, tenant: Tenant, start: datetime, end: datetime, now: datetime) -> InvoicePreview:
    """The tenant's usage with windows in ``[start, end)`` (open usage measured to ``now``), priced from the price
    book: one line per SKU and price, each rounded once; and the period's part of each reservation's term (one
    line each, ``reservation/<id>``, whole in advance)."""
    currency = billing_currency(tenant)
    usage = usage_pieces(tenant=tenant, first_ms=to_ms(start), stop_ms=to_ms(end), now=now)
    priced = [(sku_id, price.unit_price_per_hour, q) for sku_id, _, price, q in usage if price is not None]
    skus = {sku.code: sku for sku in Sku.objects.filter(pk__in={p[0] for p in priced})}
    codes = {sku.pk: code for code, sku in skus.items()}
    committed = reservation_charges(tenant=tenant, start=start, end=end)
    lines, total = invoice_lines([*((codes[s], price, q) for s, price, q in priced), *committed], currency)
    return InvoicePreview(
        period_start=start,
        period_end=end,
        currency=currency,
        lines=[
            {
                "sku": line.sku,
                "unit": QUANTITY_UNITS[skus[line.sku].unit] if line.sku in skus else COMMITTED_UNIT,
                "quantity": unit_hours(line.quantity_milli),
                "unit_price": line.unit_price,
                # Storage is quoted per GB-month: the line says so beside its price per GB-hour.
                "unit_price_per_month": (
                    per_gb_month(line.unit_price) if line.sku in skus and skus[line.sku].is_storage else None
                ),
                "amount": line.amount,
            }
            for line in lines
        ],
        total=total,
    )


def invoice_upcoming(*, tenant: Tenant, now: datetime) -> InvoicePreview:
    """This month's usage so far (the billing period is the calendar month, UTC)."""
    start, end = month_of(now)
    return invoice_for(tenant=tenant, start=start, end=end, now=now)


def invoice_previews(*, tenant: Tenant, now: datetime) -> list[InvoicePreview]:
    """Ledger-only mode's invoices: one preview per month with usage, newest first."""
    first = UsageInterval.objects.filter(tenant=tenant).order_by("window_ms").values_list("window_ms", flat=True)[:1]
    if not first:
        return []
    start = month_of(metering.from_ms(first[0]))[0]
    previews = []
    while start <= now:
        end = month_of(start)[1]
        previews.append(invoice_for(tenant=tenant, start=start, end=end, now=now))
        start = end
    return previews[::-1]


def stripe_enabled() -> bool:
    return bool(settings.STRIPE_API_KEY)


def month_spend(*, tenant: Tenant, now: datetime) -> Decimal:
    return invoice_upcoming(tenant=tenant, now=now).total


def billing_currency(tenant: Tenant) -> str:
    account = BillingAccount.objects.filter(tenant=tenant).only("currency").first()
    return account.currency if account else settings.LADDER_BILLING_CURRENCY


def prices_current(*, now: datetime) -> list[tuple[Sku, SkuPrice, SkuPrice | None]]:
    """Every priced SKU with its price now (or its first future price) and the next scheduled change."""
    result = []
    skus = Sku.objects.filter(prices__isnull=False).distinct().select_related("gpu_model", "region")
    by_sku: dict[int, list[SkuPrice]] = defaultdict(list)
    for price in SkuPrice.objects.order_by("sku_id", "effective_from"):
        by_sku[price.sku_id].append(price)
    for sku in skus:
        versions = by_sku[sku.pk]
        past = [p for p in versions if p.effective_from <= now]
        future = [p for p in versions if p.effective_from > now]
        current = past[-1] if past else future.pop(0)
        result.append((sku, current, future[0] if future else None))
    return result


_PRICED_POOLS: list[str] = []  # the statement, built once per process (``_priced_pools_sql``)


def _priced_pools_sql() -> str:
    """``SkuPrice.objects.filter(effective_from__lte=, sku__rung=, sku__unit=, sku__mig_profile=)`` as the (model
    name, region code) pairs, in plain SQL spelled from the models: asked before every placement, where compiling
    the four-table join cost more CPU than the rest of the read (the way ``core/sql.py`` does it)."""
    if not _PRICED_POOLS:
        quote = connection.ops.quote_name

        def column(model: Any, name: str) -> str:
            return quote(str(model._meta.get_field(name).column))

        def table(model: Any) -> str:
            return quote(model._meta.db_table)

        _PRICED_POOLS.append(
            f"SELECT DISTINCT m.{column(GpuModel, 'name')}, r.{column(Region, 'code')} "  # noqa: S608 - names from models
            f"FROM {table(SkuPrice)} p JOIN {table(Sku)} s ON s.{column(Sku, 'id')} = p.{column(SkuPrice, 'sku')} "
            f"JOIN {table(GpuModel)} m ON m.{column(GpuModel, 'id')} = s.{column(Sku, 'gpu_model')} "
            f"JOIN {table(Region)} r ON r.{column(Region, 'id')} = s.{column(Sku, 'region')} "
            f"WHERE p.{column(SkuPrice, 'effective_from')} <= %s AND s.{column(Sku, 'rung')} = %s "
            f"AND s.{column(Sku, 'unit')} = %s AND s.{column(Sku, 'mig_profile')} = %s "
            f"AND s.{column(Sku, 'capacity_class')} = %s"
        )
    return _PRICED_POOLS[0]


def priced_pools(
    *,
    rung: str,
    mig_profile: str | None,
    models: Iterable[str],
    at: datetime,
    capacity_class: str = DEFAULT_CLASS,
) -> frozenset[tuple[str, str]]:
    """The (GPU model, region) pools of ``models`` whose SKU for this shape (``Sku.unit_for``) in this capacity
    class has a price in effect at ``at``. A price that starts later does not count yet: placement asks this, and
    nothing runs without a price (spot work only where spot is priced)."""
    unit, profile = Sku.unit_for(rung, mig_profile)
    wanted = set(models)
    moment = connection.ops.adapt_datetimefield_value(at)
    with connection.cursor() as cursor:
        cursor.execute(_priced_pools_sql(), [moment, rung, unit, profile, capacity_class])
        return frozenset((model, region) for model, region in cursor.fetchall() if model in wanted)


def host_prices(*, at: datetime) -> dict[str, dict[str, Decimal]]:
    """Per region, the price per hour in effect at ``at`` of a vCPU (``vcpu``) and a GiB (``memory``) beyond the
    bundle (``billing.services.host``); a unit missing: not sold beyond the bundle there."""
    found: dict[str, dict[str, Decimal]] = defaultdict(dict)
    rows = SkuPrice.objects.filter(sku__unit__in=HOST_UNITS, effective_from__lte=at).order_by("effective_from")
    for region, unit, per_hour in rows.values_list("sku__region__code", "sku__unit", "unit_price_per_hour"):
        found[region][unit] = per_hour  # the latest in force wins
    return found


def host_priced_regions(*, units: Iterable[str], at: datetime) -> frozenset[str]:
    """The regions that price every one of ``units`` beyond the bundle at ``at`` (``host_prices``): where a request
    that asks vCPUs or memory beyond it may be placed."""
    wanted = set(units)
    return frozenset(region for region, prices in host_prices(at=at).items() if wanted <= prices.keys())


def sku_shapes(gpu_model: GpuModel) -> list[tuple[str, str, str]]:
    """``(rung, unit, MIG profile)`` of every SKU a GPU model is sold as: each rung in its unit, and a slice of each
    of the model's MIG profiles on every rung that sells MIG (confidential VMs only on CC-capable models, as the
    offerings show). A region whose price book prices them all sells everything its fleet offers."""
    shapes = []
    for rung, offer in RUNGS.items():
        if offer.attested and not gpu_model.cc_capable:
            continue
        shapes.append((rung.value, *Sku.unit_for(rung, None)))
        if Performance.MIG in offer.performance:
            shapes += [(rung.value, *Sku.unit_for(rung, profile)) for profile in sorted(gpu_model.mig_profiles)]
    return shapes


def sku_code(
    *, rung: str, mig_profile: str | None, gpu_model: str, region: str, capacity_class: str = DEFAULT_CLASS
) -> str:
    """The name of the SKU a shape is sold as in a pool, priced or not (``Sku.unit_for``, ``Sku.make_code``)."""
    unit, profile = Sku.unit_for(rung, mig_profile)
    return Sku.make_code(rung, gpu_model, unit, profile, region, capacity_class)


# (rung, GPU model, region, capacity class)
PoolClass = tuple[str, str, str, str]


def price_index(*, now: datetime) -> dict[PoolClass, dict[str, SkuPrice]]:
    """Current prices by (rung, GPU model, region, capacity class), then by unit ("gpu", "node", or
    "mig:<profile>")."""
    index: dict[PoolClass, dict[str, SkuPrice]] = defaultdict(dict)
    rows = SkuPrice.objects.filter(effective_from__lte=now, sku__gpu_model__isnull=False).select_related(
        "sku__gpu_model", "sku__region"
    )
    for price in rows.order_by("effective_from"):
        sku = price.sku
        unit = f"mig:{sku.mig_profile}" if sku.mig_profile else sku.unit
        model = sku.gpu_model.name if sku.gpu_model is not None else ""
        index[(sku.rung, model, sku.region.code, sku.capacity_class)][unit] = price
    return index


def pool_hourly_prices(*, allocation: Allocation, now: datetime) -> dict[str, Decimal]:
    """What a whole GPU (``"whole"``) and each MIG profile (by name) cost an hour on the allocation's rung in its
    pool, in its capacity class, now: what GPU telemetry's findings weigh a smaller slice against."""
    key = (allocation.rung, allocation.gpu_model.name, allocation.hall.region.code, allocation.capacity_class)
    pool = price_index(now=now).get(key, {})
    prices = {unit.removeprefix("mig:"): price.unit_price_per_hour for unit, price in pool.items()}
    if "gpu" in prices:
        prices["whole"] = prices.pop("gpu")
    return prices


@dataclass(frozen=True)
class PricedOffering:
    """An offering with the prices in force for its rung, GPU model and region, by capacity class and then by unit
    ("gpu", "node" or "mig:<profile>"; a class missing: not sold that way there yet)."""

    offering: Offering
    by_class: dict[str, dict[str, SkuPrice]]
    reserve_from: Decimal | None = None  # the pool's on-demand whole GPU that reservations are priced off
    host_prices: dict[str, Decimal] = field(default_factory=dict)  # the region's per vCPU-hour and GiB-hour

    def host(self) -> dict[str, Any] | None:
        """What each GPU (and each slice or share) is sold with of its node's host, how far a request may ask
        beyond it, and what a vCPU-hour and a GiB-hour beyond it cost in the region (``billing.services.host``;
        empty: not sold beyond the bundle there). None on bare metal: whole hosts."""
        rung, model = Rung(self.offering.rung), self.offering.gpu_model
        if RUNGS[rung].whole_nodes:
            return None
        (gpu_cpu, gpu_memory), (slice_cpu, slice_memory) = bundled(rung, model, 1), bundled(rung, model, 0)
        return {
            "cpu_per_gpu": gpu_cpu // 1000,
            "memory_gib_per_gpu": gpu_memory // 1024,
            "cpu_per_slice": slice_cpu // 1000,
            "memory_gib_per_slice": slice_memory // 1024,
            "most_times": RUNGS[rung].host.most_times,
            "prices": self.host_prices,
        }

    @property
    def prices(self) -> dict[str, SkuPrice]:
        """The on-demand prices: what "the price" means."""
        return self.by_class.get(DEFAULT_CLASS, {})

    @property
    def currency(self) -> str | None:
        found = next((p for prices in self.by_class.values() for p in prices.values()), None)
        return found.sku.currency if found else None

    @property
    def per_hour(self) -> dict[str, Decimal]:
        return self.class_per_hour(DEFAULT_CLASS)

    def class_per_hour(self, capacity_class: str) -> dict[str, Decimal]:
        return {unit: price.unit_price_per_hour for unit, price in self.by_class.get(capacity_class, {}).items()}

    def classes(self) -> list[dict[str, Any]]:
        """Each class sold here: its prices, its discount off on demand (spot), its notice and what it promises.
        Reserved capacity, sold where whole GPUs are, is priced by its term (``terms``: the price per GPU-hour of a
        reservation of each term a tenant orders), and its work at nothing (``prices`` empty: the term pays)."""
        sold: list[dict[str, Any]] = [
            {
                "capacity_class": klass.value,
                "title": CLASSES[klass].label,
                "promise": CLASSES[klass].promise,
                "preemptible": CLASSES[klass].preemptible,
                "prices": self.class_per_hour(klass),
                "discount_pct": _discount(self.by_class[klass]),
            }
            for klass in CapacityClass
            if self.by_class.get(klass) and klass != CapacityClass.RESERVED
        ]
        if self.reserve_from is not None and "gpu" in self.prices:
            reserved = CLASSES[CapacityClass.RESERVED]
            terms = [
                {"days": t.days, "discount_pct": t.discount_pct, "price_per_gpu_hour": t.price_per_gpu_hour}
                for t in term_prices(self.reserve_from)
            ]
            sold.append(
                {
                    "capacity_class": CapacityClass.RESERVED.value,
                    "title": reserved.label,
                    "promise": reserved.promise,
                    "preemptible": reserved.preemptible,
                    "prices": {},
                    "discount_pct": None,
                    "terms": terms,
                }
            )
        return sold

    def as_dict(self) -> dict[str, Any]:
        """As the public ``/api/v1/offerings`` gives it: ``prices`` on demand, and every class in ``classes``."""
        return {
            **self.offering.as_dict(),
            "prices": self.per_hour,
            "currency": self.currency,
            "classes": self.classes(),
            "host": self.host(),
        }


def _discount(prices: dict[str, SkuPrice]) -> Decimal | None:
    """The discount a class's prices were made with, when they share one (spot's off on demand)."""
    found = {price.discount_pct for price in prices.values()}
    return found.pop() if len(found) == 1 else None


def offerings_priced(offered: Iterable[Offering], *, now: datetime) -> list[PricedOffering]:
    """What can be bought, with its prices now, per capacity class: the offerings the caller read from the fleet
    (``provisioning.domain.placement.offerings``, under the fleet cache's read, which billing does not take) joined with
    the price book. The API's offerings and the portal's launch page both read them here."""
    index = price_index(now=now)
    host = host_prices(at=now)
    return [
        PricedOffering(
            row,
            {
                klass.value: dict(sorted(index[(row.rung, row.gpu_model, row.region, klass.value)].items()))
                for klass in CapacityClass
                if (row.rung, row.gpu_model, row.region, klass.value) in index
            },
            reservation_base(index, row.gpu_model, row.region),
            dict(sorted(host.get(row.region, {}).items())),
        )
        for row in offered
    ]


def reservation_base(index: dict[PoolClass, dict[str, SkuPrice]], gpu_model: str, region: str) -> Decimal | None:
    """The on-demand price of a whole GPU of the pool that reservations are priced off (None: not priced), from
    ``price_index``: the offerings, the portal's order page and the order itself read it here."""
    price = index.get((PRICED_AS.value, gpu_model, region, DEFAULT_CLASS), {}).get("gpu")
    return price.unit_price_per_hour if price is not None else None


@dataclass(frozen=True)
class BudgetStanding:
    tenant: Tenant
    currency: str
    budget: Decimal
    spend: Decimal
    hard_stop: bool

    @property
    def used_pct(self) -> Decimal:
        return (self.spend * 100 / self.budget).quantize(Decimal("0.1"))

    @property
    def over(self) -> bool:
        return self.spend >= self.budget


def budgets_standing(*, now: datetime) -> list[BudgetStanding]:
    """Every tenant with a monthly budget: this month's spend against it, the most used first (finance)."""
    accounts = BillingAccount.objects.filter(budget_monthly__isnull=False).select_related("tenant")
    rows = [
        BudgetStanding(
            tenant=account.tenant,
            currency=account.currency,
            budget=account.budget_monthly,
            spend=month_spend(tenant=account.tenant, now=now),
            hard_stop=account.budget_hard_stop,
        )
        for account in accounts
        if account.budget_monthly is not None
    ]
    return sorted(rows, key=lambda row: (-row.used_pct, row.tenant.slug))


# --- for the metrics scrape (one aggregate query each, never a write) ---------------------------------------------


@dataclass(frozen=True)
class OutboxBacklog:
    rows: dict[str, int]  # push_state (pending, sending) -> rows
    oldest: datetime | None  # closed_at of the oldest row waiting


def outbox_backlog() -> OutboxBacklog:
    """The Stripe outbox's rows waiting to be sent or being sent, and when the oldest of them closed (the partial
    index ``rollup_outbox`` holds exactly these rows)."""
    waiting = (PushState.PENDING, PushState.SENDING)
    rows: dict[str, int] = {str(state): 0 for state in waiting}
    oldest: datetime | None = None
    grouped = (
        UsageRollup.objects.filter(push_state__in=waiting)
        .order_by()
        .values("push_state")
        .annotate(n=Count("id"), first=Min("closed_at"))
    )
    for row in grouped:
        rows[row["push_state"]] = row["n"]
        oldest = row["first"] if oldest is None else min(oldest, row["first"])
    return OutboxBacklog(rows=rows, oldest=oldest)


def budget_hard_stopped(*, now: datetime) -> int:
    """Tenants whose budget, with a hard stop, is used up this month (the 100% alert of the month was sent)."""
    month = month_of(now)[0].date()
    used_up = BudgetAlert.objects.filter(month=month, threshold=100).values("tenant_id")
    return BillingAccount.objects.filter(
        budget_hard_stop=True, budget_monthly__isnull=False, tenant_id__in=used_up
    ).count()
