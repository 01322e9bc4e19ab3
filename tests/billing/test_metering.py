"""The metering and pricing arithmetic (pure): pieces, quantities, Stripe's whole-number values, money."""

from datetime import UTC, datetime
from decimal import Decimal
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billing.domain.metering import HOUR_MS, from_ms, meter_values, quantity, split, to_ms, window_of
from billing.domain.pricing import amount, from_minor, invoice_lines, round_money, stripe_unit_amount, unit_hours

T0 = to_ms(datetime(2026, 11, 30, 10, 0, tzinfo=UTC))


def test_it_measures_milli_unit_seconds():
    assert quantity(4000, T0, T0 + 10_000) == 40_000  # 4 whole GPUs for 10 s
    assert quantity(1000, T0, T0 + 1) == 1  # one millisecond of one GPU
    assert quantity(250, T0, T0 + 4000) == 1000  # a quarter GPU for 4 s is one GPU-second


def test_it_splits_at_hour_boundaries_and_at_cuts():
    pieces = split(T0 - 30_000, T0 + 30_000)
    assert [(p.start_ms - T0, p.end_ms - T0) for p in pieces] == [(-30_000, 0), (0, 30_000)]
    assert [p.window_ms for p in pieces] == [T0 - HOUR_MS, T0]
    pieces = split(T0 + 900_000, T0 + 2_700_000, cuts=[T0 + 1_800_000, T0 + 5 * HOUR_MS])
    assert [(p.start_ms, p.end_ms) for p in pieces] == [
        (T0 + 900_000, T0 + 1_800_000),
        (T0 + 1_800_000, T0 + 2_700_000),
    ]
    assert split(T0, T0) == split(T0, T0)  # an empty interval is one empty piece
    with pytest.raises(ValueError, match="before it starts"):
        split(T0, T0 - 1)


@given(
    start=st.integers(min_value=T0, max_value=T0 + 10 * HOUR_MS),
    length=st.integers(min_value=0, max_value=50 * HOUR_MS),
    units=st.integers(min_value=1, max_value=8_000),
    cuts=st.lists(st.integers(min_value=T0, max_value=T0 + 60 * HOUR_MS), max_size=5),
)
def test_pieces_never_cross_an_hour_and_add_up(start, length, units, cuts):
    pieces = split(start, start + length, cuts)
    assert pieces[0].start_ms == start
    assert pieces[-1].end_ms == start + length
    for a, b in pairwise(pieces):
        assert a.end_ms == b.start_ms
    for piece in pieces:
        assert window_of(piece.start_ms) == window_of(max(piece.start_ms, piece.end_ms - 1))
    total = sum(quantity(units, p.start_ms, p.end_ms) for p in pieces)
    whole = quantity(units, start, start + length)
    assert whole - len(pieces) < total <= whole  # exact for whole units; a fraction drops < 1 milli per piece
    if units % 1000 == 0:
        assert total == whole


@given(st.integers(min_value=0, max_value=10**9), st.lists(st.integers(min_value=0, max_value=10**9), max_size=50))
def test_meter_values_carry_remainders_and_never_drift(before, quantities):
    values = meter_values(before, quantities)
    assert all(v >= 0 for v in values)
    assert sum(values) == (before + sum(quantities)) // 1000 - before // 1000


def test_the_ledger_clock_is_epoch_milliseconds():
    moment = datetime(2026, 11, 30, 10, 0, 0, 123_999, tzinfo=UTC)
    assert to_ms(moment) == T0 + 123
    assert from_ms(T0 + 123) == datetime(2026, 11, 30, 10, 0, 0, 123_000, tzinfo=UTC)
    with pytest.raises(ValueError, match="aware"):
        to_ms(datetime(2026, 11, 30))  # noqa: DTZ001 - the point of the test


def test_money_is_decimal_and_rounds_once_per_line():
    price = Decimal("2.50")  # per GPU-hour
    assert amount(3_600_000, price) == Decimal("2.50")
    assert round_money(amount(1_000, price), "usd") == Decimal("0.00")  # one GPU-second: 0.000694...
    lines, total = invoice_lines([("a", price, 1_000)] * 3600 + [("a", Decimal("3"), 1_800_000)], "usd")
    assert [(line.sku, line.quantity_milli, line.unit_price, line.amount) for line in lines] == [
        ("a", 3_600_000, Decimal("2.50"), Decimal("2.50")),  # 3,600 separate seconds, rounded once: no drift
        ("a", 1_800_000, Decimal("3"), Decimal("1.50")),
    ]
    assert total == Decimal("4.00")
    assert round_money(Decimal("1.005"), "usd") == Decimal("1.01")  # half up, as Stripe rounds
    assert round_money(Decimal("1234.5"), "jpy") == Decimal("1235")
    assert unit_hours(5_400_000) == Decimal("1.500000")


def test_stripe_prices_are_minor_units_per_unit_second():
    assert stripe_unit_amount(Decimal("3.60"), "usd") == Decimal("0.1")  # 360 cents an hour
    assert stripe_unit_amount(Decimal("2.50"), "usd") == Decimal("0.069444444444")
    assert stripe_unit_amount(Decimal("360"), "jpy") == Decimal("0.1")


def test_stripe_minor_units_read_back_in_the_currencys_own_exponent() -> None:
    assert from_minor(75_007, "usd") == Decimal("750.07")
    assert from_minor(500, "JPY") == Decimal(500)
