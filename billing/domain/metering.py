"""Metering arithmetic, free of the ORM: the ledger's clock, interval pieces and Stripe meter values.

The ledger keeps time as integer epoch milliseconds and quantities as integer milli-unit-seconds of a SKU's unit
(a whole GPU, a MIG slice of one profile, a node): 4 whole GPUs for 10 s is ``4000 * 10_000 // 1000 = 40_000``.
Intervals never cross an hour boundary or a price change, so every piece belongs to one hourly window and has
one price. Splitting is exact: a piece's quantity depends only on its own end points, so pieces of one interval
add up to what the interval would have measured whole (to the milli-unit-second for fractional shares, exactly
for whole units).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
UNIT = 1000  # one whole unit (GPU, MIG slice, node) in milli-units


def to_ms(moment: datetime) -> int:
    """Epoch milliseconds of an aware datetime (floor: microseconds below a millisecond are not billed)."""
    if moment.tzinfo is None:
        raise ValueError("the ledger's clock needs aware datetimes")
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).replace(microsecond=(ms % 1000) * 1000)


def window_of(ms: int) -> int:
    """The hourly window a moment falls in (its start, epoch ms)."""
    return ms - ms % HOUR_MS


def quantity(units_milli: int, start_ms: int, end_ms: int) -> int:
    """Milli-unit-seconds used by ``units_milli`` of a unit from ``start_ms`` to ``end_ms``."""
    if end_ms < start_ms:
        raise ValueError("an interval cannot end before it starts")
    return units_milli * (end_ms - start_ms) // 1000


@dataclass(frozen=True)
class Piece:
    start_ms: int
    end_ms: int

    @property
    def window_ms(self) -> int:
        return window_of(self.start_ms)


def split(start_ms: int, end_ms: int, cuts: Iterable[int] = ()) -> list[Piece]:
    """Cut ``[start, end)`` at every hour boundary and at every other instant in ``cuts`` (price changes)."""
    if end_ms < start_ms:
        raise ValueError("an interval cannot end before it starts")
    points = {c for c in cuts if start_ms < c < end_ms}
    boundary = window_of(start_ms) + HOUR_MS
    while boundary < end_ms:
        points.add(boundary)
        boundary += HOUR_MS
    edges = [start_ms, *sorted(points), end_ms]
    return [Piece(a, b) for a, b in pairwise(edges) if b > a] or [Piece(start_ms, end_ms)]


def meter_values(total_before_milli: int, quantities: Sequence[int]) -> list[int]:
    """Whole unit-seconds to send to Stripe for successive rollups of one tenant x SKU.

    Stripe meter values are whole numbers; the ledger counts milli-unit-seconds. Each rollup sends the whole
    unit-seconds its quantity completes on the running total, so the remainder is carried forward and the sum sent
    is always ``floor(ledger total / 1000)``: it never drifts from the ledger by a unit-second or more.
    """
    values = []
    running = total_before_milli
    for q in quantities:
        values.append((running + q) // UNIT - running // UNIT)
        running += q
    return values
