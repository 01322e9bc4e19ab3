"""Storage's margin: the pure rule (``billing.domain.margin.storage_margin``: revenue, provisioned GB-hours costed
with the storage cost basis in force each hour, per region, kind and month) and the report the ledger and the cost
book make (``billing.selectors.margin_report``)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from billing.domain.margin import CostBook, StorageBasis, StorageCostBook, Stored, margin, storage_margin
from billing.domain.pricing import per_gb_hour
from billing.selectors import margin_report
from billing.services.accounts import storage_cost_basis_add
from lifecycle.services.volumes import volume_create
from provisioning.domain.volumes import HOURS_PER_MONTH, VolumeState
from provisioning.models import Region
from provisioning.services.volumes import volume_transition
from tests.support import SYSTEM
from tests.support.billing import BASE, at, load_fleet, storage_price

HOUR = 3_600_000
D = Decimal


def book(*entries: tuple[str, str, int, str, str]) -> StorageCostBook:
    return StorageCostBook(
        (region, kind, StorageBasis(start, D(per_month), currency))
        for region, kind, start, per_month, currency in entries
    )


def test_the_worked_example():
    """docs/finance.md's storage example: 1,000 GB of filesystem for a storage month (730 hours), sold at 0.07 and
    costing 0.03 per GB-month."""
    price = per_gb_hour(D("0.07"))
    stored = [
        Stored("2026-11", "eu-west", "filesystem", "usd", hour * HOUR, D(1000), D(1000) * price)
        for hour in range(HOURS_PER_MONTH)
    ]
    [row] = storage_margin(stored, book(("eu-west", "filesystem", 0, "0.03", "usd")))
    assert (row.month, row.region, row.kind, row.currency) == ("2026-11", "eu-west", "filesystem", "usd")
    assert row.gb_hours == D(730_000)
    assert row.revenue.quantize(D("0.01")) == D("70.00")
    assert row.cost == D("30.00")
    assert row.gross_margin.quantize(D("0.01")) == D("40.00")
    assert row.margin_pct is not None
    assert row.margin_pct.quantize(D("0.1")) == D("57.1")
    assert row.uncosted_gb_hours == 0


def test_the_cost_in_force_each_hour_prices_it_and_hours_without_one_are_named():
    costs = book(
        ("eu-west", "block", HOUR, "0.0730", "usd"),  # 0.0001 a GB-hour from the second hour
        ("eu-west", "block", 3 * HOUR, "0.1460", "usd"),  # 0.0002 from the fourth
        ("us-east", "block", 0, "0.0730", "eur"),  # another currency than the SKU's
    )
    stored = [Stored("2026-11", "eu-west", "block", "usd", h * HOUR, D(100), D(0)) for h in range(5)]
    stored.append(Stored("2026-11", "us-east", "block", "usd", 0, D(10), D(0)))
    eu, us = storage_margin(stored, costs)
    assert eu.cost == D(100) * (D("0.0001") * 2 + D("0.0002") * 2)
    assert eu.uncosted_gb_hours == D(100)  # the first hour, before any cost basis
    assert (us.cost, us.uncosted_gb_hours) == (D(0), D(10))


@given(
    st.lists(
        st.tuples(st.sampled_from(["eu-west", "us-east"]), st.sampled_from(["filesystem", "block", "snapshot"])),
        min_size=1,
        max_size=20,
    ),
    st.integers(0, 1000),
)
def test_the_totals_count_storage_revenue_and_cost_in_the_margin(keys, gb):
    stored = [Stored("2026-11", r, k, "usd", 0, D(gb), D(gb) / 100) for r, k in keys]
    costs = book(
        *[(r, k, 0, "7.30", "usd") for r in ("eu-west", "us-east") for k in ("filesystem", "block", "snapshot")]
    )
    report = margin(revenue=[], held=[], samples=[], book=CostBook([]), stored=stored, storage_book=costs)
    totals = report.totals()[("2026-11", "usd")]
    assert totals["storage_revenue"] == sum((s.revenue for s in stored), D(0))
    assert totals["storage_cost"] == sum((s.gb_hours * D("0.01") for s in stored), D(0))
    assert totals["gross_margin"] == totals["storage_revenue"] - totals["storage_cost"]
    assert sum((row.gb_hours for row in report.storage), D(0)) == D(gb) * len(keys)


def test_the_report_reads_storage_from_the_ledger_and_the_cost_book(db, acme):
    load_fleet()
    storage_price("73.00")  # 0.10 a GB-hour: round money
    region = Region.objects.get(code="eu-west")
    storage_cost_basis_add(
        region=region,
        storage_kind="filesystem",
        effective_from=BASE - timedelta(days=1),
        cost_per_gb_month=D("29.20"),  # 0.04 a GB-hour
        currency="usd",
        actor=SYSTEM,
    )
    volume = volume_create(
        tenant=acme, name="datasets", region=region, kind="filesystem", size_gb=100, actor=SYSTEM, now=at(0)
    )
    volume_transition(volume=volume, to=VolumeState.AVAILABLE, actor=SYSTEM, at=at(0))
    volume_transition(volume=volume, to=VolumeState.DELETING, actor=SYSTEM, at=at(120))
    report = margin_report(start=BASE.replace(day=1), end=BASE.replace(day=1, month=12), now=at(180))
    [row] = report.storage
    assert (row.region, row.kind, row.month) == ("eu-west", "filesystem", "2026-11")
    assert (row.gb_hours, row.revenue, row.cost) == (D(200), D("20.00"), D("8.00"))
    assert row.gross_margin == D("12.00")
    assert report.rungs == []  # storage is not GPU capacity
    totals = report.totals()[("2026-11", "usd")]
    assert (totals["storage_revenue"], totals["storage_cost"], totals["gross_margin"]) == (D(20), D(8), D(12))
