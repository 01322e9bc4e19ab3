"""Reconciliation of a month, without Django: the ledger against what the outbox sent, what Stripe's meters hold
and what Stripe invoiced, per tenant x SKU x price, with every difference given a cause.

The chain has three links, each compared on its own:

1. **ledger -> outbox.** Each rollup sends whole unit-seconds; the sub-unit remainder is carried per tenant x SKU
   (``MeterTotal``), so a month's meter values fall short of (or exceed, by the carry brought in) its ledger
   quantity by less than one unit-second per SKU: ``rounding_carry``. Usage whose rollup is still waiting
   (``pending``/``sending``) is ``pending_push``; refused or too old (``failed``/``stale``) is ``failed_push``,
   with Stripe's message, for a person.
2. **outbox -> Stripe's meter.** What the meter holds for the month (its event summaries) must be exactly what
   the outbox marked sent. Anything else is ``unexplained``.
3. **meter -> invoice.** The invoice bills what the meter held when Stripe finalized it. An adjustment (``seq``
   > 0) sent after that is in the meter, not on the invoice: ``late_adjustment`` (billed on the next one). The
   invoice's money differs from the ledger's exact amount by the carry priced at the line's unit amount and by
   rounding once per line (half a minor unit each side): ``rounding_carry``.

Anything the causes do not account for is ``unexplained``; a clean month has none. Quantities are whole
unit-seconds on the Stripe side and milli-unit-seconds in the ledger; money is in minor units (cents).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum

# Decimal slack for the 12 decimal places Stripe keeps of a per-second price, over any month's seconds.
PRICE_PRECISION_SLACK = Decimal("0.000001")


class Cause(StrEnum):
    PENDING_PUSH = "pending_push"
    FAILED_PUSH = "failed_push"
    LATE_ADJUSTMENT = "late_adjustment"
    ROUNDING_CARRY = "rounding_carry"
    UNEXPLAINED = "unexplained"


class Stage(StrEnum):
    OUTBOX = "ledger_vs_outbox"
    METER = "outbox_vs_stripe_meter"
    INVOICE = "stripe_meter_vs_invoice"


@dataclass(frozen=True, order=True)
class Key:
    tenant: str
    sku: str
    price: str  # the price version, e.g. its start; "" when the usage had no price


@dataclass
class Line:
    """Everything known about one tenant x SKU x price for the month. ``None`` on the Stripe side: not read
    (ledger-only mode, or no invoice for the month yet)."""

    key: Key
    ledger_milli: int = 0  # rolled-up quantity, milli-unit-seconds
    ledger_amount: Decimal = Decimal(0)  # exact, major units
    sent: int = 0  # meter values (unit-seconds) of rows sent
    pending: int = 0  # of rows pending or sending
    failed: int = 0  # of rows failed or stale
    failed_messages: list[str] = field(default_factory=list)
    late: int = 0  # of sent adjustments that reached Stripe after the month's invoice was finalized
    unit_amount: Decimal | None = None  # Stripe's price per unit-second, minor units
    meter: int | None = None  # what Stripe's meter holds for the month, unit-seconds
    invoiced: int | None = None  # the invoice lines' quantity
    invoiced_amount: int | None = None  # the invoice lines' amount, minor units

    @property
    def made(self) -> int:
        return self.sent + self.pending + self.failed


@dataclass(frozen=True)
class Difference:
    key: Key
    stage: Stage
    cause: Cause
    quantity: Decimal  # unit-seconds (a carry can be a fraction)
    amount: Decimal  # minor units, positive when the ledger has more than the other side
    detail: str


@dataclass
class Result:
    lines: list[Line]
    differences: list[Difference]
    stripe_read: bool

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if d.cause == Cause.UNEXPLAINED]

    @property
    def clean(self) -> bool:
        return not self.unexplained


def minor(amount: Decimal, exponent: int = 2) -> Decimal:
    """A major-unit amount in minor units, exact."""
    return amount * Decimal(10) ** exponent


def reconcile(lines: Iterable[Line], *, exponent: int = 2) -> Result:
    """Every difference of every line, with its cause. Pure: the same lines give the same result."""
    lines = sorted(lines, key=lambda line: line.key)
    stripe_read = any(line.meter is not None for line in lines)
    out: list[Difference] = []
    carry_by_sku: dict[tuple[str, str], int] = defaultdict(int)
    for line in lines:
        carry_by_sku[(line.key.tenant, line.key.sku)] += line.ledger_milli - 1000 * line.made
    for line in lines:
        out.extend(_line_differences(line, carry_by_sku[(line.key.tenant, line.key.sku)], exponent))
    return Result(lines=lines, differences=out, stripe_read=stripe_read)


def _per_second(line: Line, exponent: int) -> Decimal:
    """The line's price per unit-second in minor units: Stripe's, or else the ledger's own average."""
    if line.unit_amount is not None:
        return line.unit_amount
    if line.ledger_milli:
        return minor(line.ledger_amount, exponent) * 1000 / line.ledger_milli
    return Decimal(0)


def _line_differences(line: Line, sku_carry: int, exponent: int) -> list[Difference]:
    key, per_second = line.key, _per_second(line, exponent)
    found: list[Difference] = []

    def add(stage: Stage, cause: Cause, quantity: Decimal, detail: str, amount: Decimal | None = None) -> None:
        money = quantity * per_second if amount is None else amount
        found.append(Difference(key, stage, cause, quantity, money.quantize(Decimal("0.0001")), detail))

    # 1. ledger -> outbox
    carry = line.ledger_milli - 1000 * line.made
    if carry:
        if abs(sku_carry) < 1000:
            cause, why = Cause.ROUNDING_CARRY, "sub-unit-second remainder carried to the SKU's next rollup"
        else:
            cause, why = Cause.UNEXPLAINED, "the outbox's meter values do not add up to the ledger's quantity"
        add(Stage.OUTBOX, cause, Decimal(carry) / 1000, f"{why} ({carry} milli-unit-seconds)")
    if line.pending:
        add(Stage.OUTBOX, Cause.PENDING_PUSH, Decimal(line.pending), "rollups waiting to be sent to Stripe")
    if line.failed:
        messages = "; ".join(sorted(set(line.failed_messages))) or "no message"
        add(Stage.OUTBOX, Cause.FAILED_PUSH, Decimal(line.failed), f"needs a person: {messages}")
    if line.meter is None:
        return found

    # 2. outbox -> Stripe's meter
    if line.meter != line.sent:
        gap = line.sent - line.meter
        add(
            Stage.METER,
            Cause.UNEXPLAINED,
            Decimal(gap),
            f"Stripe's meter holds {line.meter} unit-seconds, the outbox sent {line.sent}",
        )
    if line.invoiced is None:
        return found

    # 3. Stripe's meter -> its invoice
    if line.late:
        add(Stage.INVOICE, Cause.LATE_ADJUSTMENT, Decimal(line.late), "sent after the invoice: on the next one")
    expected = line.meter - line.late
    if line.invoiced != expected:
        add(
            Stage.INVOICE,
            Cause.UNEXPLAINED,
            Decimal(expected - line.invoiced),
            f"the invoice bills {line.invoiced} unit-seconds, the meter held {expected} when it was finalized",
        )
        return found  # the money cannot be compared on top of a quantity that is wrong
    exact = minor(line.ledger_amount, exponent)
    # Differences already listed above (a meter that holds other than what was sent included, so one discrepancy
    # is reported once, where it is).
    accounted = (line.pending + line.failed + line.late + line.sent - line.meter) * per_second
    residual = exact - Decimal(line.invoiced_amount or 0) - accounted
    carried = Decimal(carry) / 1000 * per_second
    if residual.quantize(Decimal("0.0001"), ROUND_HALF_UP):
        tolerance = Decimal("0.5") + PRICE_PRECISION_SLACK + abs(line.invoiced) * PRICE_PRECISION_SLACK
        ok = abs(residual - carried) <= tolerance
        add(
            Stage.INVOICE,
            Cause.ROUNDING_CARRY if ok else Cause.UNEXPLAINED,
            Decimal(0),
            (
                "the invoice line is rounded once and bills whole unit-seconds"
                if ok
                else f"the invoice bills {line.invoiced_amount} minor units, the ledger {exact:.4f}"
            ),
            amount=residual,
        )
    return found
