"""Preemption in service (docs/capacity.md): on-demand or reserved work that fits no other way takes spot work's
devices, and spot work that asked to be requeued is placed again when room returns.

The engine chooses the victims (``PlacementEngine.place_preempting``: a gang whole or not at all, the least goodput
lost first, never across a legal or residency rule). Here, inside the same placement section, each victim is given
its notice: it goes to ``stopping`` with its devices handed over at once (the database's claims released, so the new
placement's claims commit), its usage closed at the notice (billing stops there), one ``AllocationPreemption`` row
with the work lost since its last checkpoint, an audit record, and ``allocation_preempted`` for the apps above (the
tenant's notification). The driver then tears it down with the notice period as its grace (SIGTERM, then the kill at
the deadline): a job saves its checkpoint in that time. Torn down, it is ``stopped``, or ``queued`` when it asked to
be requeued; ``placing.queued_place`` places queued work again, oldest notice first, as spot, from its checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F

from core.actor import Actor
from core.audit import audit_record
from core.tasks import enqueue
from provisioning.domain.capacity_classes import CLASSES, CapacityClass, OnPreemption
from provisioning.domain.placement.preemption import Victim
from provisioning.domain.states import AllocationState
from provisioning.events import allocation_preempted, allocation_stopped
from provisioning.fleet_cache import PlacementSection
from provisioning.models import Allocation, AllocationPreemption
from provisioning.services.devices import devices_release, hosts_left_sanitize

# When a job last saved a checkpoint before a moment (None: unknown); the driver knows (``Provisioner``). A fault
# and a preemption both go back to it.
LastCheckpoint = Callable[[Allocation, datetime], datetime | None]

S = AllocationState
# The driver's tasks, queued by name: the drivers call these services, so the services do not import them.
RELEASE = "provisioning.tasks.allocation_release"

# What a preempted allocation may be in when its notice is given: at work, holding devices (a stopping one is
# giving them back already).
PREEMPTIBLE_STATES = (S.PLACED, S.PROVISIONING, S.RUNNING, S.RESTARTING)


def notice_seconds(capacity_class: CapacityClass) -> int:
    """The notice a preempted allocation of this class gets: the operator's (``LADDER_PREEMPTION_NOTICE_SECONDS``,
    by class), else the class's default."""
    return int(
        settings.LADDER_PREEMPTION_NOTICE_SECONDS.get(capacity_class.value, CLASSES[capacity_class].notice_seconds)
    )


def _last_good(allocation: Allocation, now: datetime, last_checkpoint: LastCheckpoint | None) -> datetime | None:
    """What a preemption now would go back to: the job's last checkpoint in this run, else the start of the run
    (other work keeps nothing of it); None when it is not running (it loses nothing)."""
    if allocation.state != S.RUNNING or allocation.running_since is None:
        return None
    since = allocation.running_since
    if not allocation.workload_spec.restarts_from_checkpoint or last_checkpoint is None:
        return since
    checkpoint = last_checkpoint(allocation, now)
    return since if checkpoint is None else min(max(checkpoint, since), now)


def spot_candidates(
    section: PlacementSection, *, now: datetime, last_checkpoint: LastCheckpoint | None
) -> list[Victim]:
    """The preemptible allocations the engine holds, each priced by the goodput it would lose now. Read only when
    a request that may preempt was refused for room."""
    spot = {pk: p for pk, p in section.cache.placements.items() if CLASSES[p.capacity_class].preemptible}
    if not spot:
        return []
    victims = []
    for allocation in Allocation.objects.filter(pk__in=spot, state__in=PREEMPTIBLE_STATES):
        good = _last_good(allocation, now, last_checkpoint)
        cost = 0 if good is None else int((now - good).total_seconds() * 1000)
        placement = spot[allocation.pk]
        victims.append(Victim(allocation.pk, placement, placement.capacity_class, cost))
    return victims


def victims_notify(
    section: PlacementSection,
    victims: tuple[Victim, ...],
    *,
    now: datetime,
    actor: Actor,
    last_checkpoint: LastCheckpoint | None,
) -> list[AllocationPreemption]:
    """Give each victim its notice (see the module): before the work that takes its place is written, whose claims
    on the devices need the victims' claims gone. The engine has released their placements already."""
    notices = []
    for victim in victims:
        allocation = Allocation.objects.select_related("tenant").get(pk=victim.allocation_id)
        current = AllocationState(allocation.state)
        good = _last_good(allocation, now, last_checkpoint)
        deadline = now + timedelta(seconds=notice_seconds(victim.capacity_class))
        requeue = allocation.spec.get("on_preemption") == OnPreemption.REQUEUE
        reason = (
            f"preempted at {now:%Y-%m-%dT%H:%M:%SZ} for on-demand or reserved work; notice until {deadline:%H:%M:%SZ}"
        )
        # Inside the section every state change is serialized: the state read above is the state.
        # A requeued job resumes from the checkpoint it goes back to (as after a fault).
        resume = {"checkpoint_at": good} if requeue and good is not None else {}
        Allocation.objects.filter(pk=allocation.pk, state=current).update(
            state=S.STOPPING, state_changed_at=now, preempted_at=now, failure_reason=reason[:300], **resume
        )
        if current == S.RUNNING:
            allocation_stopped.send(sender=Allocation, allocation=allocation, at=now)
        held = devices_release(allocation)
        section.cache.placements.pop(allocation.pk, None)
        section.journal("released", allocation=allocation)
        hosts_left_sanitize(section, allocation, held, kept=(), actor=actor)
        lost_ms = 0 if good is None else int((now - good).total_seconds() * 1000)
        preemption = AllocationPreemption.objects.create(
            tenant_id=allocation.tenant_id,
            allocation=allocation,
            noticed_at=now,
            deadline=deadline,
            checkpoint_at=good,
            lost_ms=lost_ms,
            requeued=requeue,
        )
        notices.append(preemption)
        Allocation.objects.filter(pk=allocation.pk).update(goodput_lost_ms=F("goodput_lost_ms") + lost_ms)
        audit_record(
            actor=actor,
            action="allocation.preempted",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=allocation.tenant,
            data={
                "from": current,
                "deadline": deadline.isoformat(),
                "checkpoint_at": good.isoformat() if good else None,
                "lost_ms": lost_ms,
                "requeue": requeue,
                "devices": len(victim.placement.devices),
            },
        )
        allocation.refresh_from_db()
        allocation_preempted.send(sender=Allocation, allocation=allocation, preemption=preemption)
        enqueue(RELEASE, allocation.pk)
    return notices


def preempted_for(notices: list[AllocationPreemption], allocation: Allocation) -> None:
    """Record what took the victims' place, once it is written."""
    AllocationPreemption.objects.filter(pk__in=[n.pk for n in notices]).update(by_allocation=allocation)


def released_state(allocation: Allocation) -> AllocationState:
    """Where a torn-down allocation goes: ``queued`` when it was preempted and is to be requeued, else ``stopped``."""
    if allocation.preempted_at is None:
        return S.STOPPED
    pending = AllocationPreemption.objects.filter(allocation=allocation, requeued=True, resumed_at=None)
    return S.QUEUED if pending.exists() else S.STOPPED


def requeue_cancel(allocation: Allocation) -> None:
    """The tenant stopped preempted work before it was requeued: it stops instead."""
    AllocationPreemption.objects.filter(allocation=allocation, requeued=True, resumed_at=None).update(requeued=False)
