"""The subscriptions between apps, all in one place: what happens elsewhere when provisioning reports a fact.

Signals are sent inside the transaction of the change (``provisioning/events.py``), so metering commits or rolls
back with the state change that caused it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.dispatch import receiver

from billing.services.ledger import usage_close, usage_open, usage_rescale
from billing.services.storage import storage_close, storage_open, storage_rescale
from compliance.events import assets_scheduled, assets_shredded
from compliance.models import DataAsset
from core.actor import Actor
from lifecycle.services.capacity import preemption_notify
from lifecycle.services.workloads import workload_output_keep
from provisioning.events import (
    allocation_preempted,
    allocation_scaled,
    allocation_started,
    allocation_stopped,
    snapshot_provisioned,
    snapshot_unprovisioned,
    volume_provisioned,
    volume_resized,
    volume_unprovisioned,
    workload_ended,
)
from provisioning.models import Allocation, AllocationPreemption, Volume, VolumeSnapshot
from provisioning.running_endpoints import running_entries_forget
from provisioning.services.volumes import volume_deletion_begin, volume_destroy
from tenancy.events import tenant_limits_set
from tenancy.models import Tenant

VOLUMES = Actor.system("volumes")


@receiver(allocation_started, dispatch_uid="lifecycle.usage_open")
def _usage_open(sender: Any, *, allocation: Allocation, at: datetime, **kwargs: Any) -> None:
    """Entering ``running`` opens the allocation's usage interval."""
    usage_open(allocation=allocation, at=at)


@receiver(allocation_stopped, dispatch_uid="lifecycle.usage_close")
def _usage_close(sender: Any, *, allocation: Allocation, at: datetime, **kwargs: Any) -> None:
    """Leaving ``running`` closes it, at the end of the billable work."""
    usage_close(allocation=allocation, at=at)


@receiver(allocation_preempted, dispatch_uid="lifecycle.preemption_notify")
def _preemption_notify(sender: Any, *, allocation: Allocation, preemption: AllocationPreemption, **kwargs: Any) -> None:
    """Spot work was preempted: its tenant is told, with the deadline and what becomes of it."""
    preemption_notify(allocation=allocation, preemption=preemption)


@receiver(allocation_scaled, dispatch_uid="lifecycle.usage_rescale")
def _usage_rescale(sender: Any, *, allocation: Allocation, at: datetime, **kwargs: Any) -> None:
    """A serverless endpoint's ready replicas changed: its interval is cut and reopened for the new count."""
    usage_rescale(allocation=allocation, at=at)


@receiver(workload_ended, dispatch_uid="lifecycle.workload_output_keep")
def _workload_output_keep(
    sender: Any, *, allocation: Allocation, logs: str, checkpoint: dict[str, object] | None, at: datetime, **kwargs: Any
) -> None:
    """What a workload wrote (its logs, its last checkpoint) becomes the tenant's governed data."""
    workload_output_keep(allocation=allocation, logs=logs, checkpoint=checkpoint, at=at)


# --- volumes ------------------------------------------------------------------------------------------------------


@receiver(volume_provisioned, dispatch_uid="lifecycle.storage_open")
def _storage_open(sender: Any, *, volume: Volume, at: datetime, **kwargs: Any) -> None:
    """The backend holds the volume: its GB-hours are metered from here."""
    storage_open(volume=volume, at=at)


@receiver(volume_resized, dispatch_uid="lifecycle.storage_rescale")
def _storage_rescale(sender: Any, *, volume: Volume, at: datetime, **kwargs: Any) -> None:
    storage_rescale(volume=volume, at=at)


@receiver(volume_unprovisioned, dispatch_uid="lifecycle.storage_close")
def _storage_close(sender: Any, *, volume: Volume, at: datetime, **kwargs: Any) -> None:
    storage_close(volume=volume, at=at)


@receiver(snapshot_provisioned, dispatch_uid="lifecycle.snapshot_storage_open")
def _snapshot_storage_open(sender: Any, *, snapshot: VolumeSnapshot, at: datetime, **kwargs: Any) -> None:
    storage_open(snapshot=snapshot, at=at)


@receiver(snapshot_unprovisioned, dispatch_uid="lifecycle.snapshot_storage_close")
def _snapshot_storage_close(sender: Any, *, snapshot: VolumeSnapshot, at: datetime, **kwargs: Any) -> None:
    storage_close(snapshot=snapshot, at=at)


@receiver(assets_scheduled, dispatch_uid="lifecycle.volumes_deletion_begin")
def _volumes_deletion_begin(sender: Any, *, assets: list[DataAsset], reason: str, at: datetime, **kwargs: Any) -> None:
    """A volume's asset began its waiting period (a delete, retention, erasure, closure): the volume is no longer
    mounted by new work nor billed."""
    for volume in Volume.objects.filter(asset__in=[a.pk for a in assets if a.volume_id is not None]):
        volume_deletion_begin(volume=volume, actor=VOLUMES, at=at, reason=reason)


@receiver(assets_shredded, dispatch_uid="lifecycle.volumes_destroy")
def _volumes_destroy(sender: Any, *, assets: list[DataAsset], at: datetime, **kwargs: Any) -> None:
    """A volume's data key is destroyed: the volume and its snapshots leave the backend."""
    for volume in Volume.objects.filter(asset__in=[a.pk for a in assets if a.volume_id is not None]):
        volume_destroy(volume=volume, actor=VOLUMES)


@receiver(tenant_limits_set, dispatch_uid="lifecycle.running_entries_forget")
def _gateway_limits(sender: Any, *, tenant: Tenant, **kwargs: Any) -> None:
    """The gateway's check counts each endpoint against its tenant's limit from the next call on."""
    running_entries_forget(tenant_id=tenant.pk)
