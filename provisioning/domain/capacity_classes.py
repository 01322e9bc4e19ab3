"""Capacity classes in one table: the three ways one GPU is sold, and every fact about each, written here and nowhere
else (docs/capacity.md).

- ``on_demand``: the default; never preempted; may preempt spot work to fit.
- ``spot``: interruptible, cheaper; may be preempted, with notice, by on-demand or reserved work; never preempts.
- ``reserved``: draws on a reservation the tenant holds; never preempted; may preempt spot work to fit.

Pure Python: no Django.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class CapacityClass(StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"
    RESERVED = "reserved"


DEFAULT_CLASS = CapacityClass.ON_DEMAND


@dataclass(frozen=True)
class ClassFacts:
    preemptible: bool  # may be preempted to make room
    preempts: bool  # may preempt preemptible work to fit
    notice_seconds: int  # the notice a preempted allocation gets by default (the operator may set another)
    label: str  # as the portal and the price list name it
    promise: str  # what it promises, in words


CLASSES: dict[CapacityClass, ClassFacts] = {
    CapacityClass.ON_DEMAND: ClassFacts(
        preemptible=False,
        preempts=True,
        notice_seconds=0,
        label="On-demand",
        promise="Runs until you stop it; never preempted.",
    ),
    CapacityClass.SPOT: ClassFacts(
        preemptible=True,
        preempts=False,
        notice_seconds=30,
        label="Spot",
        promise="Cheaper; may be preempted with notice when on-demand or reserved work needs the GPUs. A job with a "
        "checkpoint saves it within the notice and can be requeued.",
    ),
    CapacityClass.RESERVED: ClassFacts(
        preemptible=False,
        preempts=True,
        notice_seconds=0,
        label="Reserved",
        promise="Drawn from your reservation: always fits while it has room; never preempted.",
    ),
}
