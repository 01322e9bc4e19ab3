"""Volumes, free of Django: what a tenant's persistent storage is (a shared filesystem or a block device), the
states it moves through, and the rules a request must meet (its name, its size, growth).

A volume outlives the allocations that mount it. Which rung takes which kind of volume, and how (mounted into the
containers, a disk of the VM, a network mount that cloud-init makes), is the table of rungs'
(``provisioning.domain.rungs.RungFacts.volumes``); what a volume costs is billing's, what may delete it compliance's.
"""

from __future__ import annotations

import re
from enum import StrEnum


class VolumeKind(StrEnum):
    FILESYSTEM = "filesystem"  # shared: read-write by many nodes at once (datasets, checkpoints, a gang's directory)
    BLOCK = "block"  # one attachment at a time: a VM's data disk


class VolumeState(StrEnum):
    CREATING = "creating"  # asked of the backend; not mountable yet
    AVAILABLE = "available"  # provisioned, mounted by nothing
    ATTACHED = "attached"  # mounted by at least one allocation that has not ended
    DELETING = "deleting"  # its deletion is scheduled or running: no new mount, no longer billed
    DELETED = "deleted"  # its data key is destroyed, then the backend volume


class SnapshotState(StrEnum):
    CREATING = "creating"
    READY = "ready"  # restorable into a new volume
    DELETING = "deleting"
    DELETED = "deleted"


class Attach(StrEnum):
    """How a rung's workload takes a volume."""

    MOUNT = "mount"  # mounted into every container of the allocation at ``mount_path``
    DISK = "disk"  # a block device of the VM, formatted (when blank) and mounted by cloud-init at ``mount_path``
    NETWORK_MOUNT = "network_mount"  # a shared filesystem that cloud-init mounts at ``mount_path``


# A volume is billed and counted against the quota while it holds provisioned capacity.
PROVISIONED = frozenset({VolumeState.AVAILABLE, VolumeState.ATTACHED})
# A volume may be named by a new workload only when it is not going away.
MOUNTABLE = frozenset({VolumeState.CREATING, VolumeState.AVAILABLE, VolumeState.ATTACHED})
# Counted against the tenant's storage quota: everything the backend holds or is about to hold.
COUNTED = frozenset({VolumeState.CREATING, VolumeState.AVAILABLE, VolumeState.ATTACHED})

# Kubernetes access modes, as the kind says (docs/volumes.md).
ACCESS_MODES = {VolumeKind.FILESYSTEM: "ReadWriteMany", VolumeKind.BLOCK: "ReadWriteOnce"}

MIN_GB = 1
MAX_GB = 100_000  # 100 TB in one volume
HOURS_PER_MONTH = 730  # a storage month, as clouds bill it (8,760 hours a year / 12)
NAME_MAX = 63
_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


class VolumeRuleBroken(ValueError):
    """A request a volume cannot take; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def name_check(name: object) -> str:
    """A volume's or snapshot's name: a DNS label (lower-case letters, digits, hyphens; 1 to 63 characters), so it
    can name the backend's objects too."""
    if not isinstance(name, str) or not name:
        raise VolumeRuleBroken("name", "A name is required.")
    if len(name) > NAME_MAX or not _NAME.match(name):
        raise VolumeRuleBroken(
            "name",
            f"{name[:80]!r} is not a valid name: lower-case letters, digits and hyphens, 1 to {NAME_MAX} "
            "characters, starting and ending with a letter or digit.",
        )
    return name


def kind_check(kind: object) -> VolumeKind:
    try:
        return VolumeKind(str(kind))
    except ValueError:
        raise VolumeRuleBroken("kind", f"A volume's kind is {' or '.join(VolumeKind)}, not {kind!r}.") from None


def size_check(size_gb: object, field: str = "size_gb") -> int:
    if isinstance(size_gb, bool) or not isinstance(size_gb, int):
        raise VolumeRuleBroken(field, "The size is a whole number of GB.")
    if not MIN_GB <= size_gb <= MAX_GB:
        raise VolumeRuleBroken(field, f"A volume is {MIN_GB} to {MAX_GB} GB.")
    return size_gb


def grow_check(current_gb: int, new_gb: object) -> int:
    """A new size: larger than today's (a volume grows, it never shrinks: shrinking would cut its data)."""
    size = size_check(new_gb)
    if size < current_gb:
        raise VolumeRuleBroken("size_gb", f"A volume never shrinks: it is {current_gb} GB; ask for more, not less.")
    if size == current_gb:
        raise VolumeRuleBroken("size_gb", f"The volume is already {current_gb} GB.")
    return size


def volume_backend_name(volume_id: int) -> str:
    """What the backends call a volume (a PersistentVolumeClaim, the simulated fleet's directory): ``vol-<id>``."""
    return f"vol-{volume_id}"


def snapshot_backend_name(snapshot_id: int) -> str:
    return f"snap-{snapshot_id}"


def quota_left(quota_gb: int | None, counted_gb: int) -> int | None:
    """GB a tenant may still provision (None: no quota)."""
    return None if quota_gb is None else max(0, quota_gb - counted_gb)
