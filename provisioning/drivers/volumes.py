"""Volume backends behind one interface (``VolumeBackend``): each driver says how it provisions, grows, snapshots
and removes a volume, and reconciliation moves the volume's state by what the backend reports.

The simulated fleet (``make run``) keeps each volume as a directory under ``LADDER_SIM_VOLUME_DIR`` (a snapshot is
a copy of it), so the whole path works without a cluster; the Kubernetes driver's backend is a
PersistentVolumeClaim per volume (``provisioning.drivers.kubernetes.volumes``).
"""

from __future__ import annotations

import shutil
from abc import ABC, abstractmethod
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from core.actor import Actor
from provisioning.domain.volumes import SnapshotState, VolumeState
from provisioning.models import Volume, VolumeSnapshot
from provisioning.services.volumes import snapshot_transition, volume_key, volume_ready, volume_transition

SYSTEM = Actor.system("provisioner")
GB = 1024**3


class VolumeBackend(ABC):
    """What every driver does with volumes; each call takes ids and is safe to repeat (tasks retry)."""

    @abstractmethod
    def provision(self, volume_id: int) -> None:
        """Ask the backend for the volume (restored from its snapshot when it names one)."""

    @abstractmethod
    def resize(self, volume_id: int) -> None:
        """Grow the backend's volume to ``size_gb``."""

    @abstractmethod
    def destroy(self, volume_id: int) -> None:
        """Remove the volume and its snapshots from the backend; ``deleted`` once it is gone."""

    @abstractmethod
    def snapshot(self, snapshot_id: int) -> None:
        """Take the snapshot; ``ready`` once the backend has it."""

    @abstractmethod
    def snapshot_destroy(self, snapshot_id: int) -> None:
        """Remove the snapshot from the backend; ``deleted`` once it is gone."""

    @abstractmethod
    def reconcile(self, now: datetime) -> int:
        """Bring every volume and snapshot in flight up to date with the backend; returns how many moved. A
        snapshot ``deleting`` with its volume (``snapshots_to_remove`` leaves it out) stays until the volume is
        destroyed, once its data key is shredded."""


def snapshots_to_remove() -> QuerySet[VolumeSnapshot]:
    """Snapshots the backend should let go: deleted by themselves, or with a volume already destroyed. One whose
    volume is still ``deleting`` waits for it: its data is under the volume's key, which a legal hold may yet
    preserve until the waiting period ends."""
    return VolumeSnapshot.objects.filter(state=SnapshotState.DELETING).exclude(volume__state=VolumeState.DELETING)


def _directory(volume: Volume | VolumeSnapshot) -> Path:
    return Path(settings.LADDER_SIM_VOLUME_DIR) / volume.tenant.slug / volume.backend_name


def simulated_path(volume: Volume) -> str:
    """Where the simulated fleet keeps a volume (what a workload on it would see at its mount path)."""
    return str(_directory(volume))


def _used_gb(path: Path) -> int:
    used = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0
    return -(-used // GB)  # whole GB, rounded up


class SimulatedVolumes(VolumeBackend):
    """A directory per volume and per snapshot; every step is done as soon as it is asked."""

    def provision(self, volume_id: int) -> None:
        volume = Volume.objects.select_related("tenant", "restored_from__tenant").get(pk=volume_id)
        if volume.state != VolumeState.CREATING:
            return
        path = _directory(volume)
        source = volume.restored_from
        if source is not None and _directory(source).exists() and not path.exists():
            shutil.copytree(_directory(source), path)
        path.mkdir(parents=True, exist_ok=True)
        volume_ready(volume=volume, actor=SYSTEM)

    def resize(self, volume_id: int) -> None:
        """A directory has no size to grow: the new size is the quota the product enforces."""

    def destroy(self, volume_id: int) -> None:
        volume = Volume.objects.select_related("tenant").get(pk=volume_id)
        for snapshot in VolumeSnapshot.objects.filter(volume=volume).select_related("tenant"):
            self.snapshot_destroy(snapshot.pk)
        shutil.rmtree(_directory(volume), ignore_errors=True)
        if volume.state == VolumeState.DELETING:
            volume_transition(volume=volume, to=VolumeState.DELETED, actor=SYSTEM)

    def snapshot(self, snapshot_id: int) -> None:
        snapshot = VolumeSnapshot.objects.select_related("tenant", "volume__tenant").get(pk=snapshot_id)
        if snapshot.state != SnapshotState.CREATING:
            return
        path = _directory(snapshot)
        if not path.exists():
            shutil.copytree(_directory(snapshot.volume), path)
        snapshot_transition(snapshot=snapshot, to=SnapshotState.READY, actor=SYSTEM)

    def snapshot_destroy(self, snapshot_id: int) -> None:
        snapshot = VolumeSnapshot.objects.select_related("tenant").get(pk=snapshot_id)
        shutil.rmtree(_directory(snapshot), ignore_errors=True)
        if snapshot.state == SnapshotState.DELETING:
            snapshot_transition(snapshot=snapshot, to=SnapshotState.DELETED, actor=SYSTEM)

    def reconcile(self, now: datetime) -> int:
        """Finish what a lost task left (a crash between commit and the backend's step: a volume or snapshot being
        made, a snapshot going, a volume whose key is shredded), and record what each provisioned volume holds."""
        moved = 0
        for volume_id in Volume.objects.filter(state=VolumeState.CREATING).values_list("pk", flat=True):
            self.provision(volume_id)
            moved += 1
        for snapshot_id in VolumeSnapshot.objects.filter(state=SnapshotState.CREATING).values_list("pk", flat=True):
            self.snapshot(snapshot_id)
            moved += 1
        for snapshot_id in snapshots_to_remove().values_list("pk", flat=True):
            self.snapshot_destroy(snapshot_id)
            moved += 1
        for volume in Volume.objects.filter(state=VolumeState.DELETING).select_related("tenant"):
            if volume_key(volume) is None:  # shredded, and its destroy task was lost: the backend lets it go
                self.destroy(volume.pk)
                moved += 1
        for volume in Volume.objects.filter(state__in=[VolumeState.AVAILABLE, VolumeState.ATTACHED]).select_related(
            "tenant"
        ):
            used = _used_gb(_directory(volume))
            if used != volume.used_gb:
                Volume.objects.filter(pk=volume.pk).update(used_gb=used, observed_at=now or timezone.now())
        return moved
