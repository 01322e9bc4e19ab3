"""Idle stop: a container, VM or job whose workload sets ``idle_stop_after`` (minutes) is stopped once its GPUs
have been idle that long (SM active under 1%, averaged over its devices, every minute of the window, read from
Prometheus by ``provisioning.telemetry``), with notice: its tenant is told ``NOTICE`` before, and again when it
stops. The stop is audited with its evidence (``allocation.idle_stopped``).

What is never stopped: an allocation whose metrics cannot be read or have a gap (a lost node or a stuck exporter
is no evidence of idle GPUs); one placed less than its window ago; a job inside its checkpoint interval (it may be
writing one: its last checkpoint is more recent than its interval). GPUs that work again clear the notice.

Runs from beat every minute (``lifecycle.tasks.idle_stop_check``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from billing.services.accounts import notify
from core.actor import Actor
from core.audit import audit_record
from provisioning.domain.gpu_metrics import IDLE_SM_ACTIVE, idle_tail_seconds
from provisioning.domain.rungs import rungs_where
from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import provisioner
from provisioning.models import Allocation
from provisioning.services.stopping import allocation_stop
from provisioning.telemetry import allocation_metrics

log = logging.getLogger(__name__)

IDLE_STOP = Actor.system("idle-stop")
NOTICE = timedelta(minutes=5)
STEP_SECONDS = 60


@dataclass
class IdleReport:
    noticed: list[int] = field(default_factory=list)
    stopped: list[int] = field(default_factory=list)
    cleared: list[int] = field(default_factory=list)
    unread: list[int] = field(default_factory=list)


def _in_checkpoint_interval(allocation: Allocation, now: datetime) -> bool:
    checkpoint = allocation.workload_spec.checkpoint
    if not allocation.workload_spec.facts.restarts_from_checkpoint or checkpoint is None:
        return False
    last = provisioner().last_checkpoint(allocation, now) or allocation.running_since
    return last is not None and (now - last).total_seconds() < checkpoint.interval_s


def allocations_idle_check(*, now: datetime | None = None) -> IdleReport:
    """Look at every running allocation that asked for an idle stop: notice, stop, or clear a notice."""
    now = now or timezone.now()
    report = IdleReport()
    asking = Allocation.objects.filter(
        state=S.RUNNING, rung__in=rungs_where(lambda f: f.idle_stop), workload__idle_stop_after__isnull=False
    ).select_related("tenant", "gpu_model", "hall__region")
    for allocation in asking:
        minutes = allocation.workload_spec.workload.idle_stop_after if allocation.workload_spec.workload else None
        if not minutes:
            continue
        window = timedelta(minutes=minutes)
        read = allocation_metrics(
            allocation, start=now - window, end=now, step_seconds=STEP_SECONDS, only=("sm_active",)
        )
        if read.unavailable is not None:
            report.unread.append(allocation.pk)
            log.warning("allocation %s: idle stop not judged: %s", allocation.pk, read.unavailable)
            continue
        points = read.combined.get("sm_active", [])
        idle = timedelta(seconds=idle_tail_seconds(points, STEP_SECONDS, until=now.timestamp()))
        if idle >= window - timedelta(seconds=STEP_SECONDS) and not _in_checkpoint_interval(allocation, now):
            _stop(allocation, minutes=minutes, idle=idle, points=points, devices=[h.key.name for h in read.devices])
            report.stopped.append(allocation.pk)
        elif idle >= window - NOTICE:
            if allocation.idle_notice_at is None:
                _notice(allocation, minutes=minutes, idle=idle, now=now)
                report.noticed.append(allocation.pk)
        elif allocation.idle_notice_at is not None:
            Allocation.objects.filter(pk=allocation.pk).update(idle_notice_at=None)
            report.cleared.append(allocation.pk)
    return report


def _notice(allocation: Allocation, *, minutes: int, idle: timedelta, now: datetime) -> None:
    left = max(1, round((timedelta(minutes=minutes) - idle).total_seconds() / 60))
    with transaction.atomic():
        if not Allocation.objects.filter(pk=allocation.pk, idle_notice_at__isnull=True).update(idle_notice_at=now):
            return  # another check gave notice first
        notify(
            tenant=allocation.tenant,
            kind="idle_stop_notice",
            subject=f"Ladder: {allocation.name} stops in {left} minutes unless its GPUs work",
            body=f"Allocation {allocation.pk} ({allocation.name}) asked to be stopped after {minutes} minutes with "
            f"its GPUs idle. They have been idle for {round(idle.total_seconds() / 60)} minutes: it stops in about "
            f"{left} minutes unless they work again.",
        )
        audit_record(
            actor=IDLE_STOP,
            action="allocation.idle_notice",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=allocation.tenant,
            data={"idle_seconds": round(idle.total_seconds()), "idle_stop_after_minutes": minutes},
        )


def _stop(
    allocation: Allocation, *, minutes: int, idle: timedelta, points: list[tuple[float, float]], devices: list[str]
) -> None:
    evidence = {
        "idle_stop_after_minutes": minutes,
        "idle_seconds": round(idle.total_seconds()),
        "threshold_sm_active": str(IDLE_SM_ACTIVE),  # the audit chain holds no floats: ratios as text
        "sm_active_max": str(max((v for _, v in points), default=0.0)),
        "samples": len(points),
        "from": datetime.fromtimestamp(points[0][0], tz=UTC).isoformat() if points else None,
        "to": datetime.fromtimestamp(points[-1][0], tz=UTC).isoformat() if points else None,
        "devices": devices,
        "noticed_at": allocation.idle_notice_at.isoformat() if allocation.idle_notice_at else None,
    }
    with transaction.atomic():
        allocation_stop(allocation=allocation, actor=IDLE_STOP)
        audit_record(
            actor=IDLE_STOP,
            action="allocation.idle_stopped",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=allocation.tenant,
            data=evidence,
        )
        notify(
            tenant=allocation.tenant,
            kind="idle_stop",
            subject=f"Ladder: {allocation.name} stopped after {minutes} minutes idle",
            body=f"Allocation {allocation.pk} ({allocation.name}) was stopped: its GPUs were idle (SM active under "
            f"1%, at most {evidence['sm_active_max']}) for {round(idle.total_seconds() / 60)} minutes, past its "
            f"idle_stop_after of {minutes}. Its volumes are kept; launch it again when you need it.",
        )
