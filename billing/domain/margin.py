"""Revenue and gross margin per rung, GPU model, region and month, and what idle and stranded capacity costs.

Pure arithmetic over plain records, so the rules are read and property-tested here without a database;
``billing.selectors.margin_report`` gathers the records from the ledger, the capacity samples and the cost book.

- **Revenue** is the ledger: each usage piece's quantity x its price (``billing.domain.pricing.amount``), unrounded, the
  same sums the invoices round per line.
- **Allocated cost** is the GPU-hours the billed usage held, priced with the cost basis of the GPU model and hall
  it ran in, at the hour it ran. A MIG slice holds its compute share of a GPU (a ``3g`` slice 3/7), a soft share
  its fraction, a bare-metal node its GPUs.
- **Capacity**: the fleet's GPU-hours (from the capacity samples) priced the same way, split into idle (whole-GPU
  equivalents not allocated and usable), stranded (MIG compute no profile can use any more, on partly used GPUs)
  and the rest; ``unbilled`` is what was neither billed nor idle nor stranded: held but not running
  (provisioning, restarting, a rollout's spare), and the sampling's coarseness.
- **Gross margin** of a rung, model and region = revenue - allocated cost; of the fleet = revenue - the fleet's
  whole cost, so idle and stranded capacity show where margin goes.

GPU-hours without a cost basis (or with one in another currency than the SKU's) are counted as uncosted and
priced at nothing, never guessed: ``RungMargin.uncosted_gpu_hours`` and ``MarginReport.uncosted``.

**Storage** (volumes and snapshots) is sold by the provisioned GB-hour: its revenue is the ledger's, as compute's,
and its cost the same GB-hours priced with the storage cost basis of the region and storage kind in force in each
hour (a cost per GB-month: ``HOURS_PER_MONTH`` hours). One row per month x region x storage kind
(``StorageMargin``); GB-hours without a storage cost basis are uncosted, as GPU-hours are.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from provisioning.domain.volumes import HOURS_PER_MONTH

ZERO = Decimal(0)


@dataclass(frozen=True)
class Basis:
    effective_ms: int
    per_gpu_hour: Decimal
    currency: str


class CostBook:
    """The cost basis entries per (GPU model, hall), each in force from its start until the next."""

    def __init__(self, entries: Iterable[tuple[str, str, Basis]]) -> None:
        by_key: dict[tuple[str, str], list[Basis]] = defaultdict(list)
        for model, hall, basis in entries:
            by_key[(model, hall)].append(basis)
        self._entries = {key: sorted(values, key=lambda b: b.effective_ms) for key, values in by_key.items()}
        self._starts = {key: [b.effective_ms for b in values] for key, values in self._entries.items()}

    def at(self, model: str, hall: str, ms: int) -> Basis | None:
        starts = self._starts.get((model, hall))
        if not starts:
            return None
        index = bisect.bisect_right(starts, ms) - 1
        return self._entries[(model, hall)][index] if index >= 0 else None


@dataclass(frozen=True)
class StorageBasis:
    effective_ms: int
    per_gb_month: Decimal
    currency: str


class StorageCostBook:
    """The storage cost basis entries per (region, storage kind), each in force from its start until the next."""

    def __init__(self, entries: Iterable[tuple[str, str, StorageBasis]] = ()) -> None:
        by_key: dict[tuple[str, str], list[StorageBasis]] = defaultdict(list)
        for region, kind, basis in entries:
            by_key[(region, kind)].append(basis)
        self._entries = {key: sorted(values, key=lambda b: b.effective_ms) for key, values in by_key.items()}
        self._starts = {key: [b.effective_ms for b in values] for key, values in self._entries.items()}

    def at(self, region: str, kind: str, ms: int) -> StorageBasis | None:
        index = bisect.bisect_right(self._starts.get((region, kind), []), ms) - 1
        return self._entries[(region, kind)][index] if index >= 0 else None


@dataclass(frozen=True)
class Stored:
    """The provisioned GB-hours of one storage SKU in one hourly window, and what they were billed."""

    month: str
    region: str
    kind: str  # filesystem, block or snapshot
    currency: str  # the SKU's
    window_ms: int
    gb_hours: Decimal
    revenue: Decimal


@dataclass
class StorageMargin:
    month: str
    region: str
    kind: str
    currency: str
    revenue: Decimal = ZERO
    gb_hours: Decimal = ZERO
    uncosted_gb_hours: Decimal = ZERO
    # GB-hours x their cost per GB-month, summed: the cost times HOURS_PER_MONTH, divided once (``cost``), so a
    # month of whole GB-hours costs exactly its GB-months.
    gb_hour_months: Decimal = ZERO

    @property
    def cost(self) -> Decimal:
        return self.gb_hour_months / HOURS_PER_MONTH

    @property
    def gross_margin(self) -> Decimal:
        return self.revenue - self.cost

    @property
    def margin_pct(self) -> Decimal | None:
        return None if not self.revenue else (self.gross_margin * 100 / self.revenue)


def storage_margin(stored: Iterable[Stored], book: StorageCostBook) -> list[StorageMargin]:
    """One row per month x region x storage kind x currency, in a stable order: revenue, GB-hours and their cost at
    the cost basis in force in each hour (per GB-month / ``HOURS_PER_MONTH``); hours without one, or with one in
    another currency, are uncosted."""
    rows: dict[tuple[str, str, str, str], StorageMargin] = {}
    for s in stored:
        key = (s.month, s.region, s.kind, s.currency)
        row = rows.get(key)
        if row is None:
            row = rows[key] = StorageMargin(*key)
        row.revenue += s.revenue
        row.gb_hours += s.gb_hours
        basis = book.at(s.region, s.kind, s.window_ms)
        if basis is None or basis.currency != s.currency:
            row.uncosted_gb_hours += s.gb_hours
            continue
        row.gb_hour_months += s.gb_hours * basis.per_gb_month
    return [rows[k] for k in sorted(rows)]


@dataclass(frozen=True)
class Revenue:
    month: str
    rung: str
    model: str
    region: str
    currency: str
    amount: Decimal


@dataclass(frozen=True)
class Held:
    """The GPU-hours billed usage held in one hourly window (GPU equivalents x hours)."""

    month: str
    rung: str
    model: str
    hall: str
    region: str
    currency: str  # the SKU's: its cost counts only in a cost basis of the same currency
    window_ms: int
    gpu_hours: Decimal


@dataclass(frozen=True)
class Sample:
    month: str
    model: str
    hall: str
    region: str
    at_ms: int
    seconds: int
    gpus: int
    idle_milli: int
    stranded_milli: int


@dataclass
class RungMargin:
    month: str
    rung: str
    model: str
    region: str
    currency: str
    revenue: Decimal = ZERO
    allocated_gpu_hours: Decimal = ZERO
    allocated_cost: Decimal = ZERO
    uncosted_gpu_hours: Decimal = ZERO

    @property
    def gross_margin(self) -> Decimal:
        return self.revenue - self.allocated_cost

    @property
    def margin_pct(self) -> Decimal | None:
        return None if not self.revenue else (self.gross_margin * 100 / self.revenue)


@dataclass
class CapacityCost:
    month: str
    model: str
    region: str
    currency: str
    gpu_hours: Decimal = ZERO
    fleet_cost: Decimal = ZERO
    idle_gpu_hours: Decimal = ZERO
    idle_cost: Decimal = ZERO
    stranded_gpu_hours: Decimal = ZERO
    stranded_cost: Decimal = ZERO
    allocated_cost: Decimal = ZERO
    revenue: Decimal = ZERO

    @property
    def unbilled_cost(self) -> Decimal:
        """The fleet's cost neither billed, idle nor stranded: held but not running, and sampling's coarseness."""
        return self.fleet_cost - self.allocated_cost - self.idle_cost - self.stranded_cost

    @property
    def gross_margin(self) -> Decimal:
        return self.revenue - self.fleet_cost


@dataclass
class MarginReport:
    rungs: list[RungMargin] = field(default_factory=list)
    capacity: list[CapacityCost] = field(default_factory=list)
    # The fleet's GPU-hours per (month, GPU model, hall) that no cost basis covers: priced at nothing, named here.
    uncosted: dict[tuple[str, str, str], Decimal] = field(default_factory=dict)
    storage: list[StorageMargin] = field(default_factory=list)

    def totals(self) -> dict[tuple[str, str], dict[str, Decimal]]:
        """Per (month, currency): compute's revenue, allocated, idle, stranded and fleet cost, storage's revenue and
        cost, and the margin of the whole (revenue of both less the fleet's and storage's cost)."""
        keys = ("revenue", "allocated_cost", "idle_cost", "stranded_cost", "fleet_cost", "storage_revenue")
        out: dict[tuple[str, str], dict[str, Decimal]] = defaultdict(
            lambda: dict.fromkeys((*keys, "storage_cost"), ZERO)
        )
        for row in self.rungs:
            total = out[(row.month, row.currency)]
            total["revenue"] += row.revenue
            total["allocated_cost"] += row.allocated_cost
        for cap in self.capacity:
            total = out[(cap.month, cap.currency)]
            total["idle_cost"] += cap.idle_cost
            total["stranded_cost"] += cap.stranded_cost
            total["fleet_cost"] += cap.fleet_cost
        for stored in self.storage:
            total = out[(stored.month, stored.currency)]
            total["storage_revenue"] += stored.revenue
            total["storage_cost"] += stored.cost
        for total in out.values():
            earned = total["revenue"] + total["storage_revenue"]
            total["gross_margin"] = earned - total["fleet_cost"] - total["storage_cost"]
        return dict(out)


def margin(
    *,
    revenue: Iterable[Revenue],
    held: Iterable[Held],
    samples: Iterable[Sample],
    book: CostBook,
    stored: Iterable[Stored] = (),
    storage_book: StorageCostBook | None = None,
) -> MarginReport:
    """The report, rows in a stable order. Revenue is in each SKU's currency, costs in the cost basis's; a row is
    keyed by its currency, so money in two currencies is never added up. ``stored``: storage's GB-hours, costed
    with ``storage_book``."""
    rungs: dict[tuple[str, str, str, str, str], RungMargin] = {}
    capacity: dict[tuple[str, str, str, str], CapacityCost] = {}
    uncosted: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)

    def rung_row(month: str, rung: str, model: str, region: str, currency: str) -> RungMargin:
        key = (month, rung, model, region, currency)
        if key not in rungs:
            rungs[key] = RungMargin(*key)
        return rungs[key]

    def capacity_row(month: str, model: str, region: str, currency: str) -> CapacityCost:
        key = (month, model, region, currency)
        if key not in capacity:
            capacity[key] = CapacityCost(*key)
        return capacity[key]

    for r in revenue:
        rung_row(r.month, r.rung, r.model, r.region, r.currency).revenue += r.amount
        capacity_row(r.month, r.model, r.region, r.currency).revenue += r.amount
    for h in held:
        gpu_hours = h.gpu_hours
        row = rung_row(h.month, h.rung, h.model, h.region, h.currency)
        row.allocated_gpu_hours += gpu_hours
        basis = book.at(h.model, h.hall, h.window_ms)
        if basis is None or basis.currency != h.currency:
            row.uncosted_gpu_hours += gpu_hours
            continue
        cost = gpu_hours * basis.per_gpu_hour
        row.allocated_cost += cost
        capacity_row(h.month, h.model, h.region, basis.currency).allocated_cost += cost
    for s in samples:
        gpu_hours = Decimal(s.gpus * s.seconds) / 3600
        basis = book.at(s.model, s.hall, s.at_ms - s.seconds * 1000)
        if basis is None:
            uncosted[(s.month, s.model, s.hall)] += gpu_hours
            continue
        cap = capacity_row(s.month, s.model, s.region, basis.currency)
        idle = Decimal(s.idle_milli * s.seconds) / 3_600_000
        stranded = Decimal(s.stranded_milli * s.seconds) / 3_600_000
        cap.gpu_hours += gpu_hours
        cap.fleet_cost += gpu_hours * basis.per_gpu_hour
        cap.idle_gpu_hours += idle
        cap.idle_cost += idle * basis.per_gpu_hour
        cap.stranded_gpu_hours += stranded
        cap.stranded_cost += stranded * basis.per_gpu_hour
    return MarginReport(
        rungs=[rungs[k] for k in sorted(rungs)],
        capacity=[capacity[k] for k in sorted(capacity)],
        uncosted={k: uncosted[k] for k in sorted(uncosted)},
        storage=storage_margin(stored, storage_book or StorageCostBook()),
    )
