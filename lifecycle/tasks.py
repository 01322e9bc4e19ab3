"""Lifecycle's Celery tasks: each takes ids or nothing, calls one workflow and owns its retry policy."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.utils import timezone

from billing.services import ledger
from core.actor import Actor
from lifecycle.services import capacity, closure, exports
from lifecycle.services.customers import budgets_enforce
from lifecycle.services.idle_stop import allocations_idle_check

RESERVATIONS = Actor.system("reservations")


@shared_task
def billing_close_windows() -> str:
    """Beat: close due usage windows, then enforce budgets (spend moves with usage)."""
    now = timezone.now()
    report = ledger.windows_close(now=now)
    budgets_enforce(now=now)
    return str(report)


@shared_task(bind=True, max_retries=None, acks_late=True)
def closure_advance(self: Task[Any, Any], closure_id: int) -> str:
    """One step of an account closure (it queues the next). A failed step is noted and retried with backoff, up
    to an hour apart; a worker killed mid-step leaves the message unacknowledged, and ``closures_resume`` also
    finds the closure, so the step runs again (steps are idempotent)."""
    try:
        return closure.closure_advance(closure_id=closure_id)
    except Exception as error:
        closure.closure_failed(closure_id=closure_id, error=f"{type(error).__name__}: {error}")
        raise self.retry(exc=error, countdown=min(3600, 30 * 2**self.request.retries)) from error


@shared_task
def closures_resume() -> list[int]:
    """Beat: queue the next step of every closure that stopped moving."""
    return closure.closures_resume(now=timezone.now())


@shared_task(acks_late=True)
def export_job_run(job_id: int) -> str:
    """Write and sign one export job's file (queued when finance asks for a large range). A failure marks the job
    failed with its error; finance asks again (a new job) rather than a retry writing over it."""
    return exports.export_job_run(job_id=job_id)


@shared_task
def reservations_expire() -> int:
    """Beat: the reserved work of reservations whose term has ended runs on on demand (docs/capacity.md)."""
    return capacity.reservations_expire(now=timezone.now(), actor=RESERVATIONS)


@shared_task
def idle_stop_check() -> str:
    """Beat: give notice to, or stop, the allocations whose GPUs have been idle past their ``idle_stop_after``."""
    return str(allocations_idle_check(now=timezone.now()))
