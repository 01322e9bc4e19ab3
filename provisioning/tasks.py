"""Provisioning tasks: each takes ids, calls the driver or one service, and owns its retry policy."""

from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from provisioning.drivers.base import allocations_reconcile as reconcile
from provisioning.drivers.base import provisioner
from provisioning.fleet_cache import journal_prune
from provisioning.services.capacity import capacity_sample as sample
from provisioning.services.defragment import defragment_advance as advance
from provisioning.services.defragment import defragment_advance_open


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def allocation_provision(allocation_id: int) -> None:
    provisioner().provision(allocation_id)


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def allocation_release(allocation_id: int) -> None:
    provisioner().release(allocation_id)


@shared_task
def allocations_reconcile() -> int:
    """Beat: bring every allocation in flight up to date with its driver (and, simulated, finish due wipes)."""
    return reconcile()


@shared_task
def placement_journal_prune() -> int:
    """Beat, hourly: keep a day of the placement journal (processes further behind rebuild their fleet)."""
    return journal_prune(older_than=timezone.now() - timedelta(days=1))


@shared_task
def defragment_advance(run_id: int) -> None:
    """Carry a defragmentation run forward (queued when it starts; the beat picks it up after)."""
    advance(run_id=run_id, last_checkpoint=provisioner().last_checkpoint)


@shared_task
def defragment_runs_advance() -> int:
    """Beat: carry the open defragmentation run forward, once its step in flight runs again."""
    return defragment_advance_open(last_checkpoint=provisioner().last_checkpoint)


@shared_task
def capacity_sample() -> int:
    return sample(now=timezone.now())


# --- volumes: each asks the driver's volume backend once; reconciliation finishes what a lost task left ----------


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def volume_provision(volume_id: int) -> None:
    provisioner().volumes().provision(volume_id)


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def volume_resize(volume_id: int) -> None:
    provisioner().volumes().resize(volume_id)


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def volume_destroy(volume_id: int) -> None:
    provisioner().volumes().destroy(volume_id)


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def snapshot_provision(snapshot_id: int) -> None:
    provisioner().volumes().snapshot(snapshot_id)


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def snapshot_destroy(snapshot_id: int) -> None:
    provisioner().volumes().snapshot_destroy(snapshot_id)
