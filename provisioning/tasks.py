"""Provisioning tasks: each takes ids, calls the driver or one service, and owns its retry policy."""

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from compliance.actor import Actor
from provisioning.allocations import nodes_sanitized
from provisioning.provisioners import allocations_refresh, provisioner

SYSTEM = Actor.system("provisioner")


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def allocation_provision(allocation_id: int) -> None:
    provisioner().provision(allocation_id)


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def allocation_release(allocation_id: int) -> None:
    provisioner().release(allocation_id)


@shared_task
def allocations_reconcile() -> int:
    """Beat: bring every allocation in flight up to date with its driver, and finish sanitized hosts."""
    seen = allocations_refresh()
    cutoff = timezone.now() - timedelta(seconds=settings.LADDER_SIM_SANITIZE_SECONDS)
    nodes_sanitized(actor=SYSTEM, older_than=cutoff)
    return seen
