"""Reservations as billing sees them (docs/capacity.md, "Reservations"): a commitment of whole GPUs over a term,
billed for the term whether used or not, month by month in advance, prorated to the part of the month the term
covers; its use is what the tenant's reserved work ran inside it.

Quantities are milli-unit-seconds, as the ledger's (``billing.domain.metering``): a GPU committed for an hour is
``3_600_000``. Pure Python: no Django.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Commitment:
    """One reservation's term as billing needs it: its id, GPUs, price per GPU-hour and term (epoch ms)."""

    id: int
    gpus: int
    starts_ms: int
    ends_ms: int

    @property
    def sku(self) -> str:
        """How its invoice lines and FOCUS rows name it."""
        return f"reservation/{self.id}"


def committed_milli(commitment: Commitment, period_start_ms: int, period_end_ms: int) -> int:
    """The GPU-time the term commits inside ``[period_start_ms, period_end_ms)``, in milli-unit-seconds: what a
    month's invoice bills for it (the month's part of the term, whole in advance)."""
    overlap = min(commitment.ends_ms, period_end_ms) - max(commitment.starts_ms, period_start_ms)
    return max(0, overlap) * commitment.gpus


def utilisation(used_milli: int, committed: int) -> float | None:
    """The share of the committed GPU-time its reserved work used (None: nothing committed yet)."""
    return used_milli / committed if committed else None
