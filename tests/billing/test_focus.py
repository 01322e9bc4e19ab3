"""FOCUS rows (billing.domain.focus), without a database: every row has its required columns, its charge period lies in
its billing period, and the rows' costs add up exactly to the ledger's amount, so they round to the invoice, at
compute's six-place prices and storage's ten-place ones alike; storage rows are in the Storage category, in
GB-hours."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billing.domain import focus, focus_columns, focus_files
from billing.domain.focus_files import write_csv
from billing.domain.pricing import amount, invoice_lines, round_money

TENANT = focus.Tenant(7, "acme", 'Acme, "Robotics"')
GPU = focus.Sku("container/H100/gpu/eu-west", "container", "gpu", "", "H100", "eu-west", "EU West", "usd")
MIG = focus.Sku("container/H100/mig-3g.40gb/eu-west", "container", "mig", "3g.40gb", "H100", "eu-west", "EU", "usd")
NODE = focus.Sku("bare_metal/H100/node/eu-west", "bare_metal", "node", "", "H100", "eu-west", "EU West", "eur")
SHARE = focus.Sku("serverless/H100/gpu/eu-west", "serverless", "gpu", "", "H100", "eu-west", "EU West", "usd")
FILESYSTEM = focus.Sku("storage/filesystem/eu-west", "", "gb", "", "", "eu-west", "EU West", "usd", "filesystem")
SNAPSHOT = focus.Sku("storage/snapshot/eu-west", "", "gb", "", "", "eu-west", "EU West", "usd", "snapshot")
OCT = 1_790_812_800_000  # 2026-10-01T00:00:00Z
HOUR = focus.HOUR_MS

prices = st.builds(
    lambda micros, pk: focus.Price(pk, OCT - 30 * 24 * HOUR, Decimal(micros).scaleb(-6)),
    st.integers(0, 50_000_000),
    st.integers(1, 3),
) | st.builds(  # a storage price per GB-hour: ten places
    lambda units, pk: focus.Price(pk, OCT - 30 * 24 * HOUR, Decimal(units).scaleb(-10)),
    st.integers(0, 10**8),
    st.integers(4, 6),
)
quantities = st.integers(0, 3_600_000 * 8)  # up to 8 units for an hour
resources = st.none() | st.builds(
    lambda pk: focus.Resource(pk, f'run, "{pk}"', "container", "mig", "container", "eu-west-1a", {"image": "a/b:1"}),
    st.integers(1, 5),
)
volumes = st.builds(
    lambda pk, kind: focus.Resource(pk, f"data-{pk}", "", "", "", "", {"name": f"data-{pk}"}, kind),
    st.integers(1, 5),
    st.sampled_from(["volume", "snapshot"]),
)


def cents(value: Fraction) -> int:
    """An exact amount rounded half up to the cent, as a number of cents."""
    return int((value * 100 + Fraction(1, 2)).__floor__())


def charge(sku: focus.Sku, price: focus.Price, hour: int, q: int, **extra: object) -> focus.Charge:
    values = {"seq": 0, "closed_ms": OCT + (hour + 1) * HOUR, "resource": None, **extra}
    return focus.Charge(TENANT, sku, price, OCT + hour * HOUR, quantity_milli=q, **values)  # type: ignore[arg-type]


@given(price=prices, parts=st.lists(st.tuples(st.integers(0, 30 * 24 - 1), quantities), min_size=1, max_size=40))
def test_it_sums_row_costs_to_the_ledger_amount_and_the_invoice_line(price, parts):
    rows = focus.Rows()
    charges = [charge(GPU, price, hour, q) for hour, q in sorted(parts)]
    values = [rows.values(c) for c in charges]
    # The columnar CSV writer carries the same costs.
    out = io.BytesIO()
    write_csv(out, focus_columns.batches(charges, size=7))
    written = list(csv.reader(io.StringIO(out.getvalue().decode())))[1:]
    assert [Decimal(cells[0]) for cells in written] == [v[0] for v in values]
    costs = [v[focus.INDEX["BilledCost"]] for v in values]
    total = sum(q for _, q in parts)
    assert sum(costs, Decimal(0)) == focus.exact_amount(total, price.per_hour)
    # The invoice rounds the exact amount once per line; the rows' sum rounds to the same cents.
    lines, invoice_total = invoice_lines([(GPU.code, price.per_hour, total)], "usd")
    assert round_money(sum(costs, Decimal(0)), "usd") == invoice_total
    assert all(line.amount == invoice_total for line in lines)
    # Each row is within 1e-16 of its own exact amount.
    for c, cost, row in zip(charges, costs, values, strict=True):
        exact = Fraction(c.quantity_milli) * Fraction(price.per_hour) / 3_600_000
        assert abs(Fraction(cost) - exact) <= Fraction(1, 10**16)
        assert all(row[focus.INDEX[name]] == cost for name in ("EffectiveCost", "ListCost", "ContractedCost"))


@given(q=st.integers(0, 10**15), units=st.integers(0, 10**16))
def test_it_computes_the_exact_amount_as_billing_pricing_does(q, units):
    per_hour = Decimal(units).scaleb(-10)
    exact = Fraction(q) * Fraction(per_hour) / 3_600_000
    truncated = Fraction(focus.cost_units(q, units), 10**16)
    assert 0 <= exact - truncated < Fraction(1, 10**16)
    # Truncated to 16 places it rounds to the exact amount's cents, always: half cents are on the grid.
    assert round_money(focus.exact_amount(q, per_hour), "usd") * 100 == cents(exact)
    assert abs(amount(q, per_hour) - focus.exact_amount(q, per_hour)) < Decimal("1e-12")


def test_an_amount_just_under_a_half_cent_is_never_rounded_up():
    # 0.0000000001 per GB-hour for 179,999,999,999,999 milli-GB-seconds: 1/3.6e16 under half a cent, which rounding
    # to 16 places (not truncating) would carry onto the half cent and so up to a cent.
    q, units = 18 * 10**13 - 1, 1
    exact = Fraction(q) * Fraction(units, 10**10) / 3_600_000
    assert Fraction(1, 200) - exact == Fraction(1, 36 * 10**15)
    assert round_money(focus.exact_amount(q, Decimal(units).scaleb(-10)), "usd") == Decimal("0.00")
    assert cents(exact) == 0


@given(
    sku=st.sampled_from([GPU, MIG, NODE, SHARE]),
    price=prices | st.just(focus.UNPRICED),
    hour=st.integers(-48, 24 * 400),
    q=quantities,
    seq=st.integers(0, 3),
    late_by=st.integers(0, 60 * 24 * HOUR),
    lost=st.integers(0, 3_600_000),
    resource=resources,
)
def test_every_row_has_its_required_columns_and_its_hour_inside_its_billing_period(
    sku, price, hour, q, seq, late_by, lost, resource
):
    c = charge(
        sku, price, hour, q, seq=seq, closed_ms=OCT + hour * HOUR + late_by, goodput_lost_ms=lost, resource=resource
    )
    values = focus.Rows().values(c)
    assert len(values) == len(focus.COLUMNS)
    for column, value in zip(focus.COLUMNS, values, strict=True):
        if column.required:
            assert value not in (None, ""), column.name
    get = {name: values[i] for name, i in focus.INDEX.items()}
    assert get["BillingPeriodStart"] <= get["ChargePeriodStart"] < get["ChargePeriodEnd"] <= get["BillingPeriodEnd"]
    assert get["ChargePeriodStart"].endswith("Z")
    assert len(get["ChargePeriodStart"]) == 20
    assert get["ChargeClass"] in (None, "Correction")
    assert (get["ChargeClass"] == "Correction") == (seq > 0 and c.closed_ms >= focus.month_bounds(c.window_ms)[1])
    assert get["ChargeCategory"] == "Usage"
    assert get["BillingCurrency"] == sku.currency.upper()
    assert (get["ResourceId"] is None) == (resource is None)
    assert get["x_GoodputSecondsLost"] == Decimal(lost) / 1000
    # The price times the quantity is the cost, within what the FOCUS validator allows (1e-9, relative).
    product = get["ListUnitPrice"] * get["PricingQuantity"]
    assert abs(product - get["ListCost"]) <= Decimal("1e-9") * max(abs(get["ListCost"]), Decimal(1))
    # The CSV line says the same as the values, and the columnar writer writes the same line.
    line = focus.Rows().csv_line(c)
    [cells] = list(csv.reader(io.StringIO(line)))
    assert cells == [focus.text(v) for v in values]
    out = io.BytesIO()
    write_csv(out, focus_columns.batches([c]))
    assert out.getvalue().decode() == focus_files.HEADER + "\n" + line + "\n"


def test_a_csv_export_has_one_header_and_one_line_per_charge():
    out = io.BytesIO()
    price = focus.Price(1, OCT, Decimal("2.40"))
    charges = [charge(GPU, price, h, 3_600_000) for h in range(5)] + [charge(MIG, price, 0, 1000)]
    assert write_csv(out, focus_columns.batches(charges)) == 6
    rows = list(csv.DictReader(io.StringIO(out.getvalue().decode())))
    assert [r["BilledCost"] for r in rows[:5]] == ["2.4000000000000000"] * 5
    assert rows[5]["PricingUnit"] == "MIG Slice-Hours"
    assert rows[5]["x_PerformanceIsolation"] == "mig"
    assert rows[0]["x_PerformanceIsolation"] == "whole_gpu"  # a container GPU SKU sold whole here
    assert list(rows[0]) == list(focus.COLUMN_NAMES)


def test_a_late_adjustment_counted_after_its_month_is_a_correction():
    price = focus.Price(1, OCT, Decimal("1"))
    in_month = charge(GPU, price, 5, 1000, seq=1, closed_ms=OCT + 6 * HOUR)
    after = charge(GPU, price, 5, 1000, seq=1, closed_ms=focus.month_bounds(OCT)[1])
    on_time_late_counted = charge(GPU, price, 5, 1000, seq=0, closed_ms=focus.month_bounds(OCT)[1] + HOUR)
    assert [focus.is_correction(c) for c in (in_month, after, on_time_late_counted)] == [False, True, False]


def test_prices_with_more_than_ten_places_are_refused():
    assert focus.price_units(Decimal("0.0000958904")) == 958_904
    with pytest.raises(ValueError, match="10 decimal places"):
        focus.price_units(Decimal("0.00000000001"))


@given(sku=st.sampled_from([FILESYSTEM, SNAPSHOT]), price=prices, hour=st.integers(0, 24 * 40), q=quantities)
def test_a_storage_row_is_in_the_storage_category_in_gb_hours(sku, price, hour, q):
    values = focus.Rows().values(charge(sku, price, hour, q))
    get = {name: values[i] for name, i in focus.INDEX.items()}
    service, subcategory, _ = focus.STORAGE_SERVICES[sku.storage_kind]
    assert (get["ServiceCategory"], get["ServiceName"], get["ServiceSubcategory"]) == ("Storage", service, subcategory)
    assert (get["PricingUnit"], get["ConsumedUnit"], get["SkuMeter"]) == ("GB-Hours", "GB-Hours", "provisioned storage")
    assert get["x_StorageKind"] == sku.storage_kind
    assert (get["x_Rung"], get["x_GpuModel"], get["x_SecurityIsolation"], get["x_PerformanceIsolation"]) == (
        None,
        None,
        None,
        None,
    )
    assert get["ResourceId"] is None  # a summary row covers every volume of the kind
    for column, value in zip(focus.COLUMNS, values, strict=True):
        if column.required:
            assert value not in (None, ""), column.name


@given(resource=volumes, price=prices, q=quantities)
def test_a_storage_detail_row_names_its_volume_or_snapshot(resource, price, q):
    sku = FILESYSTEM if resource.kind == "volume" else SNAPSHOT
    c = charge(sku, price, 3, q, resource=resource)
    values = focus.Rows().values(c)
    get = {name: values[i] for name, i in focus.INDEX.items()}
    assert get["ResourceId"] == f"{resource.kind}/{resource.id}"
    assert get["ResourceName"] == resource.name
    assert get["ResourceType"] == ("Filesystem Volume" if resource.kind == "volume" else "Volume Snapshot")
    assert get["AvailabilityZone"] is None  # storage lives in a region, not a hall
    assert get["ChargeDescription"].startswith(f"{resource.name} ({resource.kind} {resource.id}): {sku.code}")
    line = focus.Rows().csv_line(c)
    out = io.BytesIO()
    write_csv(out, focus_columns.batches([c]))
    assert out.getvalue().decode() == focus_files.HEADER + "\n" + line + "\n"


def test_a_storage_price_is_described_per_gb_month_too():
    price = focus.Price(4, OCT, Decimal("0.0000958904"))
    values = focus.Rows().values(charge(FILESYSTEM, price, 0, 100 * 3_600_000))
    details = values[focus.INDEX["SkuPriceDetails"]]
    assert '"x_PricePerGbMonth":"0.070000"' in details
    assert '"x_StorageKind":"filesystem"' in details
    assert values[focus.INDEX["ListUnitPrice"]] == Decimal("0.0000958904")
    assert values[focus.INDEX["PricingQuantity"]] == Decimal("100.000000000000")
