"""Capacity classes as the portal says them (docs/capacity.md): the classes the launch form sells on a rung with
their promises, and spot work's preemptions on its allocation page."""

from __future__ import annotations

from portal import words
from provisioning.domain.capacity_classes import CLASSES, CapacityClass, OnPreemption, class_refusal
from provisioning.domain.rungs import rung_facts
from provisioning.models import Allocation
from provisioning.services.preempting import notice_seconds


def class_promises(rung: str) -> list[dict[str, str]]:
    """The capacity classes the launch form sells on this rung (docs/capacity.md), with what each promises."""
    sold = (CapacityClass.ON_DEMAND, CapacityClass.SPOT)
    return [
        {"title": CLASSES[klass].label, "promise": CLASSES[klass].promise}
        for klass in sold
        if class_refusal(klass, rung_facts(rung), OnPreemption.STOP, reservation=None) is None
    ]


def spot_words(allocation: Allocation) -> str:
    """Spot work in words: what becomes of it when preempted, and its last preemption; empty for other classes."""
    if allocation.capacity_class != CapacityClass.SPOT:
        return ""
    requeue = allocation.spec.get("on_preemption") == OnPreemption.REQUEUE
    said = "requeued from its checkpoint" if requeue else "stopped"
    said = f"{said} if preempted, with {notice_seconds(CapacityClass.SPOT)} s notice to save."
    last = allocation.preemptions.order_by("-noticed_at").first()
    if last is not None:
        lost = words.duration(last.lost_ms / 1000)
        said += f" Last preempted {last.noticed_at:%Y-%m-%d %H:%M:%S} UTC ({lost} of work since its checkpoint)."
    return said
