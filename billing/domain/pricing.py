"""Money, free of the ORM: prices are Decimal per unit-hour, amounts Decimal, invoices round once per line.

Nothing here is a float. A ledger amount is exact (``quantity * price / 3_600_000``); rounding to the currency's
minor unit happens once, on an invoice line, half up as Stripe rounds. Stripe's meter prices are per unit-second
in minor units (``unit_amount_decimal``, at most 12 decimal places).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

MILLI_UNIT_MS_PER_HOUR = Decimal(3_600_000)  # milli-unit-seconds in one unit-hour
CENT = Decimal("0.01")
# Currencies without a minor unit (Stripe's zero-decimal list, the ones a GPU cloud is likely to bill in).
ZERO_DECIMAL = frozenset({"jpy", "krw", "vnd", "clp", "isk", "ugx", "xaf", "xof"})


def exponent(currency: str) -> int:
    return 0 if currency.lower() in ZERO_DECIMAL else 2


def amount(quantity_milli: int, price_per_hour: Decimal) -> Decimal:
    """The exact amount for ``quantity_milli`` milli-unit-seconds at ``price_per_hour`` per unit-hour."""
    return Decimal(quantity_milli) * price_per_hour / MILLI_UNIT_MS_PER_HOUR


def from_minor(amount: int, currency: str) -> Decimal:
    """An amount in the currency's minor units (as Stripe states it) in major units: 75007 USD cents is 750.07."""
    return Decimal(amount).scaleb(-exponent(currency))


def round_money(value: Decimal, currency: str) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-exponent(currency)), rounding=ROUND_HALF_UP)


def unit_hours(quantity_milli: int) -> Decimal:
    """A quantity in unit-hours, to the micro-hour (for display; amounts are computed from the exact quantity)."""
    return (Decimal(quantity_milli) / MILLI_UNIT_MS_PER_HOUR).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)


def unit_seconds(quantity_milli: int) -> Decimal:
    """A quantity in unit-seconds, exact (three decimals)."""
    return Decimal(quantity_milli).scaleb(-3)


def stripe_unit_amount(price_per_hour: Decimal, currency: str) -> Decimal:
    """Stripe's ``unit_amount_decimal``: minor units per unit-second (the meter's value), 12 decimal places."""
    per_second = price_per_hour * Decimal(10) ** exponent(currency) / Decimal(3600)
    return Decimal(format(per_second.quantize(Decimal("1e-12"), rounding=ROUND_HALF_UP).normalize(), "f"))


@dataclass(frozen=True)
class Line:
    sku: str
    quantity_milli: int
    unit_price: Decimal  # per unit-hour
    amount: Decimal  # rounded to the currency's minor unit


def invoice_lines(usage: Iterable[tuple[str, Decimal, int]], currency: str) -> tuple[list[Line], Decimal]:
    """Lines (one per SKU and price) and the total from ``(sku, price per hour, quantity_milli)`` rows."""
    merged: dict[tuple[str, Decimal], int] = {}
    for sku, price, q in usage:
        merged[(sku, price)] = merged.get((sku, price), 0) + q
    lines = [
        Line(sku, q, price, round_money(amount(q, price), currency))
        for (sku, price), q in sorted(merged.items(), key=lambda item: (item[0][0], item[0][1]))
        if q
    ]
    return lines, sum((line.amount for line in lines), Decimal(0))
