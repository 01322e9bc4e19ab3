"""Reservations as billing sees them (docs/capacity.md, "Reservations"): a commitment of whole GPUs over a term,
billed for the term whether used or not, month by month in advance; its use is what the tenant's reserved work ran
inside it.

A month of a term is billed as clouds bill committed capacity, and as Stripe bills a licensed monthly price: 730
GPU-hours a GPU (``HOURS_PER_MONTH``: 8,760 hours a year / 12), whatever the month's length, prorated to the share
of the calendar month (UTC) the term covers, to the millisecond. What a term *commits* (the GPU-hours its work
could use, against which its use is measured) is the real time it covers.

Quantities are milli-unit-seconds, as the ledger's (``billing.domain.metering``): a GPU committed for an hour is
``3_600_000``. Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from billing.domain.pricing import discounted
from core.domain.months import month_end, month_of
from provisioning.domain.rungs import Rung
from provisioning.domain.volumes import HOURS_PER_MONTH

MONTH_MILLI = HOURS_PER_MONTH * 3_600_000  # milli-GPU-seconds billed for a GPU's whole month


@dataclass(frozen=True)
class Commitment:
    """One reservation's term as billing needs it: its id, GPUs and term (epoch ms)."""

    id: int
    gpus: int
    starts_ms: int
    ends_ms: int

    @property
    def sku(self) -> str:
        """How its invoice lines and FOCUS rows name it."""
        return f"reservation/{self.id}"


def committed_milli(commitment: Commitment, period_start_ms: int, period_end_ms: int) -> int:
    """The GPU-time the term covers inside ``[period_start_ms, period_end_ms)``, in milli-unit-seconds: what its
    reserved work could have used there (utilisation's denominator)."""
    overlap = min(commitment.ends_ms, period_end_ms) - max(commitment.starts_ms, period_start_ms)
    return max(0, overlap) * commitment.gpus


def months_met(start_ms: int, end_ms: int) -> Iterator[tuple[int, int]]:
    """The calendar months (UTC) that ``[start_ms, end_ms)`` meets, each as its ``(first, next first)`` in ms."""
    if end_ms <= start_ms:
        return
    month = month_of(datetime.fromtimestamp(start_ms / 1000, UTC))
    while (first := int(month.timestamp() * 1000)) < end_ms:
        month = month_end(month)
        yield first, int(month.timestamp() * 1000)


def billed_milli(commitment: Commitment, period_start_ms: int, period_end_ms: int) -> int:
    """The GPU-time the term bills inside ``[period_start_ms, period_end_ms)``, in milli-unit-seconds: for each
    calendar month, ``HOURS_PER_MONTH`` GPU-hours a GPU times the share of the month the term covers there (a
    whole month: 730 GPU-hours a GPU, in February as in March). Rounded down to the milli-unit-second per month."""
    start, end = max(commitment.starts_ms, period_start_ms), min(commitment.ends_ms, period_end_ms)
    return sum(
        commitment.gpus * MONTH_MILLI * (min(end, last) - max(start, first)) // (last - first)
        for first, last in months_met(start, end)
    )


# A reservation a tenant orders itself (``lifecycle.services.capacity.reservation_order``) is priced off the
# on-demand price by its term: (shortest term in days, percent off). Shorter terms are not sold this way; longer
# ones than ``ORDER_MAX_DAYS``, or larger ones than the tenant's limit, are agreed with an operator.
TERM_DISCOUNTS: tuple[tuple[int, int], ...] = ((7, 10), (30, 20), (90, 30), (365, 40))
ORDER_MAX_DAYS = 366
PRICED_AS = Rung.CONTAINER  # whose on-demand whole GPU a reservation's price is off, on any rung its work runs


@dataclass(frozen=True)
class TermPrice:
    days: int  # the shortest term at this price
    discount_pct: int
    price_per_gpu_hour: Decimal


def term_prices(on_demand: Decimal) -> list[TermPrice]:
    """What a reservation ordered by its tenant costs per GPU-hour for each term sold, off ``on_demand``."""
    return [TermPrice(days, pct, discounted(on_demand, Decimal(pct))) for days, pct in TERM_DISCOUNTS]


def term_discount(days: float) -> int | None:
    """The percent off on demand for a term of ``days`` ordered by its tenant (None: shorter than any sold)."""
    sold = [pct for shortest, pct in TERM_DISCOUNTS if days >= shortest]
    return sold[-1] if sold else None


def utilisation(used_milli: int, committed: int) -> float | None:
    """The share of the committed GPU-time its reserved work used (None: nothing committed yet)."""
    return used_milli / committed if committed else None
