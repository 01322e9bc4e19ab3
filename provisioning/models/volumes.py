"""A tenant's volumes (persistent storage that outlives its allocations), their snapshots, and which allocation
mounts which volume.

States move by reconciliation with the backend (``provisioning.services.volumes``), as allocations' do; what may
delete a volume (holds, retention, erasure, closure) is compliance's, through the volume's data asset.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from provisioning.domain.volumes import SnapshotState, VolumeKind, VolumeState
from tenancy.models import TenantOwned


class Volume(TenantOwned):
    """Storage of ``size_gb`` in one region: a shared ``filesystem`` or a ``block`` device. ``backend_name`` is
    what the driver calls it (a PersistentVolumeClaim, a directory of the simulated fleet); ``used_gb`` is what the
    backend last reported in use."""

    name = models.CharField(max_length=63)
    region = models.ForeignKey("provisioning.Region", on_delete=models.PROTECT, related_name="volumes")
    kind = models.CharField(max_length=16, choices=[(k.value, k.value) for k in VolumeKind])
    size_gb = models.PositiveIntegerField()
    state = models.CharField(
        max_length=16, choices=[(s.value, s.value) for s in VolumeState], default=VolumeState.CREATING
    )
    provisioner = models.CharField(max_length=32)
    backend_name = models.CharField(max_length=253, blank=True)
    used_gb = models.PositiveIntegerField(null=True, blank=True)
    restored_from = models.ForeignKey(
        "provisioning.VolumeSnapshot", on_delete=models.PROTECT, null=True, blank=True, related_name="restored"
    )
    created_at = models.DateTimeField(default=timezone.now)
    state_changed_at = models.DateTimeField(default=timezone.now)
    observed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            # A name is taken while its volume exists; a deleted volume's name is free again.
            models.UniqueConstraint(
                fields=["tenant", "name"], condition=~Q(state=VolumeState.DELETED), name="volume_name_live_once"
            ),
        ]
        indexes = [models.Index(fields=["tenant", "state"]), models.Index(fields=["state", "state_changed_at"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, {self.size_gb} GB, {self.state})"


class VolumeSnapshot(TenantOwned):
    """A point-in-time copy of a volume (``size_gb`` as the volume was), restorable into a new volume of the same
    region and kind. It lives and dies with its volume's data key."""

    volume = models.ForeignKey(Volume, on_delete=models.PROTECT, related_name="snapshots")
    name = models.CharField(max_length=63)
    size_gb = models.PositiveIntegerField()
    state = models.CharField(
        max_length=16, choices=[(s.value, s.value) for s in SnapshotState], default=SnapshotState.CREATING
    )
    backend_name = models.CharField(max_length=253, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    state_changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["volume", "name"], condition=~Q(state=SnapshotState.DELETED), name="snapshot_name_live_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} of volume {self.volume_id} ({self.state})"


class VolumeAttachment(models.Model):
    """An allocation mounts a volume at ``mount_path`` from its placement until it ends (``released_at``)."""

    allocation = models.ForeignKey("provisioning.Allocation", on_delete=models.PROTECT, related_name="attachments")
    volume = models.ForeignKey(Volume, on_delete=models.PROTECT, related_name="attachments")
    mount_path = models.CharField(max_length=255)
    read_only = models.BooleanField(default=False)
    attached_at = models.DateTimeField(default=timezone.now)
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["allocation", "volume"], name="attachment_once")]
        indexes = [models.Index(fields=["volume"], condition=Q(released_at=None), name="attachment_live")]

    def __str__(self) -> str:
        return f"volume {self.volume_id} on allocation {self.allocation_id}"
