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

from provisioning.domain.rungs import RungFacts


class CapacityClass(StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"
    RESERVED = "reserved"


DEFAULT_CLASS = CapacityClass.ON_DEMAND


class OnPreemption(StrEnum):
    """What becomes of spot work when it is preempted: it stops, or (a job that resumes from its checkpoint) it goes
    back to the queue and is placed again when capacity returns."""

    STOP = "stop"
    REQUEUE = "requeue"


@dataclass(frozen=True)
class ClassFacts:
    preemptible: bool  # may be preempted to make room
    preempts: bool  # may preempt preemptible work to fit
    notice_seconds: int  # the notice a preempted allocation gets by default (the operator may set another)
    priority: int  # its workloads' priority where a scheduler ranks them (Kueue's WorkloadPriorityClass): higher wins
    label: str  # as the portal and the price list name it
    promise: str  # what it promises, in words


CLASSES: dict[CapacityClass, ClassFacts] = {
    CapacityClass.ON_DEMAND: ClassFacts(
        preemptible=False,
        preempts=True,
        notice_seconds=0,
        priority=1000,
        label="On-demand",
        promise="Runs until you stop it; never preempted.",
    ),
    CapacityClass.SPOT: ClassFacts(
        preemptible=True,
        preempts=False,
        notice_seconds=30,
        priority=100,
        label="Spot",
        promise="Cheaper; may be preempted with notice when on-demand or reserved work needs the GPUs. A job with a "
        "checkpoint saves it within the notice and can be requeued.",
    ),
    CapacityClass.RESERVED: ClassFacts(
        preemptible=False,
        preempts=True,
        notice_seconds=0,
        priority=1000,
        label="Reserved",
        promise="Drawn from your reservation: always fits while it has room; never preempted.",
    ),
}


def class_refusal(
    capacity_class: CapacityClass, facts: RungFacts, on_preemption: OnPreemption, *, reservation: int | None
) -> tuple[str, str] | None:
    """Why a request's class does not go with its rung or its other terms, as (field, message); None: it does.

    Spot is not sold on the serverless rung (an endpoint scales itself, and a replica taken back mid-request would
    fail its callers), nor where the tenant has the host itself (bare metal, a Slurm cluster): such a host is wiped
    before it changes hands, so it cannot be handed over at a notice. Only a job that resumes from its checkpoint
    can be requeued. Reserved work names the reservation it draws on, and only reserved work does."""
    if capacity_class is CapacityClass.SPOT and facts.endpoint:
        return "capacity_class", "A serverless endpoint is sold on demand or reserved, not as spot: it scales itself."
    if capacity_class is CapacityClass.SPOT and facts.leaves_host_dirty:
        return "capacity_class", "Hosts you have to yourself are wiped before they change hands: not sold as spot."
    if on_preemption is OnPreemption.REQUEUE:
        if not CLASSES[capacity_class].preemptible:
            return (
                "on_preemption",
                f"{CLASSES[capacity_class].label} work is never preempted; only spot work is requeued.",
            )
        if not facts.restarts_from_checkpoint:
            return "on_preemption", "Only a job resumes from its checkpoint; other spot work stops when preempted."
    if (capacity_class is CapacityClass.RESERVED) != (reservation is not None):
        if reservation is None:
            return "reservation", "Reserved work names the reservation it draws on."
        return "reservation", "Only reserved work draws on a reservation (capacity_class reserved)."
    return None
