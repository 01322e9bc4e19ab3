"""Provisioning tasks: each takes ids, calls the driver or one service, and owns its retry policy."""

from celery import shared_task

from provisioning.provisioners import allocations_refresh, provisioner


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def allocation_provision(allocation_id: int) -> None:
    provisioner().provision(allocation_id)


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def allocation_release(allocation_id: int) -> None:
    provisioner().release(allocation_id)


@shared_task
def allocations_reconcile() -> int:
    """Beat: bring every allocation in flight up to date with its driver (and, simulated, finish due wipes)."""
    return allocations_refresh()
