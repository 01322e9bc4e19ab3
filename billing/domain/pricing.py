"""Money, free of the ORM: prices are Decimal per unit-hour, amounts Decimal, invoices round once per line.

Nothing here is a float. A ledger amount is exact (``quantity * price / 3_600_000``); rounding to the currency's
minor unit happens once, on an invoice line, half up as Stripe rounds. Stripe's meter prices are per unit-second
in minor units (``unit_amount_decimal``, at most 12 decimal places).

A price per unit-hour has at most ``PRICE_PLACES`` (10) decimal places. Compute is priced in whole millionths;
storage is quoted per GB-month where people read it and kept per GB-hour (``per_gb_hour``): a month's price / 730
is rarely a finite decimal, and ten places bring it back to the cent over a storage month for any volume up to
``provisioning.domain.volumes.MAX_GB`` (the error per GB-hour is at most 5e-11: x 730 hours x 100,000 GB < 0.004).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from provisioning.domain.volumes import HOURS_PER_MONTH

MILLI_UNIT_MS_PER_HOUR = Decimal(3_600_000)  # milli-unit-seconds in one unit-hour
CENT = Decimal("0.01")
# Currencies without a minor unit (Stripe's zero-decimal list, the ones a GPU cloud is likely to bill in).
ZERO_DECIMAL = frozenset({"jpy", "krw", "vnd", "clp", "isk", "ugx", "xaf", "xof"})
PRICE_PLACES = 10  # of a price per unit-hour (``SkuPrice.unit_price_per_hour``)
PRICE_QUANTUM = Decimal(1).scaleb(-PRICE_PLACES)
SHOWN_PLACES = 6  # a price is shown to six places, as compute's always were, and to ten when it needs them
MONTH_PRICE_PLACES = 6  # of a storage price per GB-month as quoted
# The units of a node's host sold beyond the bundle each GPU comes with (``node_host.host_extra``): one SKU of each
# per region, ``host/vcpu/<region>`` and ``host/memory/<region>``, priced per vCPU-hour and per GiB-hour
# (``billing.models.Unit``'s values).
HOST_UNITS = ("vcpu", "memory")
# What each unit's quantity is counted in, as people read it (the API's usage and invoice lines).
QUANTITY_UNITS = {
    "gpu": "GPU-hours",
    "mig": "MIG slice-hours",
    "node": "node-hours",
    "gb": "GB-hours",
    "vcpu": "vCPU-hours",
    "memory": "GiB-hours",
}


def discounted(price_per_hour: Decimal, discount_pct: Decimal) -> Decimal:
    """A price less a discount in percent (spot off on demand), to the millionth as compute is priced."""
    if not Decimal(0) <= discount_pct <= Decimal(100):
        raise ValueError(f"a discount is 0 to 100 percent, not {discount_pct}")
    return (price_per_hour * (100 - discount_pct) / 100).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)


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


def places(value: Decimal) -> int:
    """How many decimal places a value is written with (``Decimal("0.070")`` has 3)."""
    exponent_ = value.as_tuple().exponent
    return -exponent_ if isinstance(exponent_, int) and exponent_ < 0 else 0


def price_fits(price_per_hour: Decimal) -> bool:
    """A price the price book keeps exactly: not negative, at most ``PRICE_PLACES`` decimal places."""
    return price_per_hour >= 0 and price_per_hour == price_per_hour.quantize(PRICE_QUANTUM)


def price_shown(price_per_hour: Decimal) -> Decimal:
    """A price as it is shown: to six places when six hold it (every compute price: ``2.490000``), else to ten
    (a storage price per GB-hour: ``0.0000958904``)."""
    six = price_per_hour.quantize(Decimal(1).scaleb(-SHOWN_PLACES), rounding=ROUND_HALF_UP)
    return six if six == price_per_hour else price_per_hour.quantize(PRICE_QUANTUM, rounding=ROUND_HALF_UP)


def per_gb_hour(per_gb_month: Decimal) -> Decimal:
    """A storage price quoted per GB-month as the price book keeps it: per GB-hour (a storage month is
    ``HOURS_PER_MONTH`` hours), to ``PRICE_PLACES`` places, half up."""
    return (per_gb_month / HOURS_PER_MONTH).quantize(PRICE_QUANTUM, rounding=ROUND_HALF_UP)


def per_gb_month(price_per_gb_hour: Decimal) -> Decimal:
    """A storage price per GB-hour as people read it: per GB-month, to six places. A price quoted with at most six
    places comes back exactly (``per_gb_hour`` moves it by at most 5e-11 x 730 < 5e-7)."""
    return (price_per_gb_hour * HOURS_PER_MONTH).quantize(
        Decimal(1).scaleb(-MONTH_PRICE_PLACES), rounding=ROUND_HALF_UP
    )


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
