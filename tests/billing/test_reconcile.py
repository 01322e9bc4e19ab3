"""The pure comparison (``billing.domain.reconcile``): a month whose ledger went to Stripe as the pusher sends it (whole
unit-seconds carried per SKU, each invoice line rounded once) is clean whatever the usage; each way the chain can
break is found with its cause; anything else is unexplained."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from hypothesis import given
from hypothesis import strategies as st

from billing.domain.metering import meter_values
from billing.domain.pricing import amount, stripe_unit_amount
from billing.domain.reconcile import Cause, Key, Line, Stage, reconcile

PRICES = st.sampled_from([Decimal("2.50"), Decimal("0.90"), Decimal("3.60"), Decimal("31.337"), Decimal("0.013")])


def billed(rollups: list[tuple[int, Decimal]], *, carry_in: int = 0, price_slot: int = 0) -> Line:
    """One tenant x SKU x price whose rollups (quantity milli-unit-seconds, price/h) were all sent and invoiced,
    exactly as the pusher and Stripe do it."""
    per_hour = rollups[0][1]
    values = meter_values(carry_in, [q for q, _ in rollups])
    line = Line(key=Key("acme", "sku", f"p{price_slot}"))
    line.ledger_milli = sum(q for q, _ in rollups)
    line.ledger_amount = sum((amount(q, per_hour) for q, _ in rollups), Decimal(0))
    line.sent = sum(values)
    line.meter = line.sent
    line.unit_amount = stripe_unit_amount(per_hour, "usd")
    line.invoiced = line.meter
    line.invoiced_amount = int((line.invoiced * line.unit_amount).quantize(Decimal(1), ROUND_HALF_UP))
    return line


@given(
    quantities=st.lists(st.integers(min_value=1, max_value=4_000 * 3_600_000), min_size=1, max_size=30),
    per_hour=PRICES,
    carry_in=st.integers(min_value=0, max_value=999),
)
def test_a_month_billed_as_the_pusher_sends_it_is_clean(quantities, per_hour, carry_in):
    line = billed([(q, per_hour) for q in quantities], carry_in=carry_in)
    result = reconcile([line])
    assert result.clean, result.unexplained
    assert {d.cause for d in result.differences} <= {Cause.ROUNDING_CARRY}


@given(
    first=st.lists(st.integers(min_value=1, max_value=10**9), min_size=1, max_size=10),
    second=st.lists(st.integers(min_value=1, max_value=10**9), min_size=1, max_size=10),
    prices=st.tuples(PRICES, PRICES),
)
def test_a_price_change_splits_the_carry_between_two_lines_and_stays_clean(first, second, prices):
    """The carry is per SKU, across its prices: one line may send more than its own quantity, the other less."""
    values = meter_values(0, first + second)
    a = billed([(q, prices[0]) for q in first], price_slot=0)
    b = billed([(q, prices[1]) for q in second], price_slot=1)
    a.sent = a.meter = a.invoiced = sum(values[: len(first)])
    b.sent = b.meter = b.invoiced = sum(values[len(first) :])
    for line in (a, b):
        assert line.unit_amount is not None
        assert line.invoiced is not None
        line.invoiced_amount = int((line.invoiced * line.unit_amount).quantize(Decimal(1), ROUND_HALF_UP))
    assert reconcile([a, b]).clean


@given(
    quantities=st.lists(st.integers(min_value=1_000, max_value=10**8), min_size=2, max_size=10),
    per_hour=PRICES,
    which=st.sampled_from(["pending", "failed", "late", "meter", "invoice"]),
)
def test_each_break_in_the_chain_is_found_with_its_cause(quantities, per_hour, which):
    line = billed([(q, per_hour) for q in quantities])
    assert line.meter is not None
    values = meter_values(0, quantities)
    held_back = values[-1]
    if which == "pending":  # the last rollup is still in the outbox: neither in the meter nor invoiced
        line.sent -= held_back
        line.pending = held_back
        line.meter = line.invoiced = line.sent
    elif which == "failed":
        line.sent -= held_back
        line.failed = held_back
        line.failed_messages = ["No such customer: 'cus_x'"]
        line.meter = line.invoiced = line.sent
    elif which == "late":  # in the meter, sent after the invoice was finalized
        line.late = held_back
        line.invoiced = line.meter - held_back
    elif which == "meter":  # Stripe holds something else than what was sent
        line.meter = line.sent - 1
    else:  # the invoice bills something else than the meter held
        line.invoiced = line.meter + 5
    assert line.unit_amount is not None
    line.invoiced_amount = int(((line.invoiced or 0) * line.unit_amount).quantize(Decimal(1), ROUND_HALF_UP))
    result = reconcile([line])
    causes = {d.cause for d in result.differences} - {Cause.ROUNDING_CARRY}
    expected = {
        "pending": {Cause.PENDING_PUSH},
        "failed": {Cause.FAILED_PUSH},
        "late": {Cause.LATE_ADJUSTMENT},
        "meter": {Cause.UNEXPLAINED},
        "invoice": {Cause.UNEXPLAINED},
    }[which]
    if held_back == 0 and which in ("pending", "failed", "late"):
        expected = set()
    assert causes == expected, result.differences
    assert result.clean == (which not in ("meter", "invoice"))
    if which == "failed" and held_back:
        failed = next(d for d in result.differences if d.cause == Cause.FAILED_PUSH)
        assert "No such customer" in failed.detail
        assert failed.stage == Stage.OUTBOX


def test_outbox_values_that_do_not_add_up_to_the_ledger_are_unexplained():
    line = billed([(5_000_000, Decimal("2.50"))])
    line.sent += 2  # two unit-seconds the ledger never counted
    line.meter = line.invoiced = line.sent
    result = reconcile([line])
    assert [d.stage for d in result.unexplained] == [Stage.OUTBOX]


def test_ledger_only_compares_the_outbox_alone():
    line = Line(key=Key("acme", "sku", "p"), ledger_milli=3_500, ledger_amount=Decimal("0.0025"), sent=3)
    result = reconcile([line])
    assert not result.stripe_read
    assert result.clean
    assert [(d.cause, d.quantity) for d in result.differences] == [(Cause.ROUNDING_CARRY, Decimal("0.5"))]
