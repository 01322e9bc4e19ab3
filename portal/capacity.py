"""Capacity classes as the portal says them (docs/capacity.md): the classes the launch form sells on a rung with
their promises, spot work's preemptions on its allocation page, and the tenant's reservations with their use."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from billing.domain.pricing import unit_hours
from billing.selectors.commitments import reservation_use
from portal import words
from provisioning.domain.capacity_classes import CLASSES, CapacityClass, OnPreemption, class_refusal
from provisioning.domain.rungs import rung_facts
from provisioning.models import Allocation, Reservation
from provisioning.services.preempting import notice_seconds
from tenancy.models import Tenant


def class_promises(rung: str) -> list[dict[str, str]]:
    """The capacity classes the launch form sells on this rung (docs/capacity.md), with what each promises;
    reserved capacity last, drawn from a reservation the tenant holds (or orders)."""
    sold = (CapacityClass.ON_DEMAND, CapacityClass.SPOT)
    reserved = CLASSES[CapacityClass.RESERVED]
    return [
        *(
            {"title": CLASSES[klass].label, "promise": CLASSES[klass].promise}
            for klass in sold
            if class_refusal(klass, rung_facts(rung), OnPreemption.STOP, reservation=None) is None
        ),
        {"title": reserved.label, "promise": reserved.promise},
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


def reservations_in_force(tenant: Tenant, now: datetime) -> list[Reservation]:
    """The tenant's reservations whose term has not ended, the soonest first."""
    found = Reservation.objects.filter(tenant=tenant, cancelled_at=None, ends_at__gt=now)
    return list(found.select_related("gpu_model", "hall").order_by("starts_at", "pk"))


def reservation_rows(tenant: Tenant, now: datetime) -> list[dict[str, Any]]:
    """Each reservation in force with its use: GPUs held now, GPU-hours used of those committed so far."""
    rows = []
    for reservation in reservations_in_force(tenant, now):
        use = reservation_use(reservation, now=now)
        share = use.utilisation
        rows.append(
            {
                "reservation": reservation,
                "in_use": use.in_use_gpus,
                "used_hours": unit_hours(use.used_milli),
                "committed_hours": unit_hours(use.committed_milli),
                "utilisation": None if share is None else round(100 * share, 1),
                "started": reservation.starts_at <= now,
            }
        )
    return rows


def capacity_choices(tenant: Tenant, now: datetime) -> dict[str, list[tuple[str, str]]]:
    """The launch form's classes (reserved only for a tenant holding a reservation) and its reservations."""
    held = reservations_in_force(tenant, now)
    sold = [CapacityClass.ON_DEMAND, CapacityClass.SPOT, *([CapacityClass.RESERVED] if held else [])]
    return {
        "capacity_class": [(klass.value, CLASSES[klass].label) for klass in sold],
        "reservation": [
            ("", "—"),
            *((str(r.pk), f"#{r.pk}: {r.gpus} x {r.gpu_model.name} in {r.hall.code}") for r in held),
        ],
    }
