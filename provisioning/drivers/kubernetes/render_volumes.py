"""A tenant's volumes as Kubernetes objects, and what a workload adds to mount them. Pure functions returning plain
dicts (no Django, no I/O).

- ``volume_claim``: a volume's PersistentVolumeClaim in its tenant's namespace, from the operator's StorageClass for
  its region and kind: ``ReadWriteMany`` for a filesystem, ``ReadWriteOnce`` for a block volume (a raw block
  device, which a VM formats as its own disk); a volume restored from a snapshot names the ``VolumeSnapshot`` as
  its ``dataSource``.
- ``key_secret``: the Secret beside each claim (same name) and each snapshot, which holds the volume's encryption
  passphrase (``encryptionPassphrase``, derived from the volume's own data key by ``passphrase``) and the CSI
  driver's credentials. The StorageClass names it by template (``${pvc.name}`` in ``${pvc.namespace}``), the
  VolumeSnapshotClass likewise (``${volumesnapshot.name}``); Ceph-CSI's ``metadata`` KMS wraps each volume's random
  LUKS or fscrypt key with it (docs/volumes.md, "Encryption and crypto-shredding").
- ``volume_snapshot``: a ``snapshot.storage.k8s.io/v1`` VolumeSnapshot of a claim.
- ``claim_volume`` (a pod's volume for a mounted one) and ``vm_volumes`` (a KubeVirt VM's disks, virtiofs
  filesystems and the cloud-init mounts).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field

from provisioning.domain.user_data import OsMount
from provisioning.domain.volumes import ACCESS_MODES, Attach, VolumeKind
from provisioning.domain.workloads import MountedVolume
from provisioning.drivers.kubernetes.manifest import Obj, meta, obj, secret
from provisioning.drivers.kubernetes.shapes import LABEL_TENANT, AllocationShape, namespace_of

SNAPSHOT_API = "snapshot.storage.k8s.io/v1"
LABEL_VOLUME = "ladder.io/volume"
LABEL_SNAPSHOT = "ladder.io/volume-snapshot"
PASSPHRASE_KEY = "encryptionPassphrase"  # noqa: S105 - the key name Ceph-CSI reads from the StorageClass secrets
BLOCK_FS = "ext4"  # what a VM's blank block volume is formatted with at its first boot
_PASSPHRASE_CONTEXT = b"ladder/volume-passphrase/v1"


@dataclass(frozen=True)
class VolumeShape:
    """A volume as the renderer needs it: ``name`` is its backend name (the claim's and its key Secret's)."""

    id: int
    name: str
    tenant: str
    kind: VolumeKind
    size_gb: int
    storage_class: str
    restored_from: str | None = None  # the VolumeSnapshot it is restored from

    @property
    def namespace(self) -> str:
        return namespace_of(self.tenant)


@dataclass(frozen=True)
class SnapshotShape:
    id: int
    name: str  # the VolumeSnapshot's and its key Secret's
    tenant: str
    volume_id: int
    claim: str  # the claim it is taken of
    snapshot_class: str

    @property
    def namespace(self) -> str:
        return namespace_of(self.tenant)


def passphrase(data_key: bytes) -> str:
    """The passphrase the CSI driver encrypts a volume under, derived one way from the volume's data key (HMAC-
    SHA256): the data key itself never leaves Ladder, and once it is destroyed the passphrase cannot be made again.
    URL-safe base64 of 32 bytes (43 characters): Ceph-CSI's fscrypt takes its first 32 bytes as the key."""
    digest = hmac.new(data_key, _PASSPHRASE_CONTEXT, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _labels(tenant: str, volume_id: int, **extra: str) -> dict[str, str]:
    return {LABEL_TENANT: tenant, LABEL_VOLUME: str(volume_id), **extra}


def volume_claim(v: VolumeShape) -> Obj:
    spec: Obj = {
        "accessModes": [ACCESS_MODES[v.kind]],
        "storageClassName": v.storage_class,
        # A block volume is a raw device: the VM that takes it as its disk makes its own filesystem.
        "volumeMode": "Block" if v.kind is VolumeKind.BLOCK else "Filesystem",
        "resources": {"requests": {"storage": f"{v.size_gb}Gi"}},
    }
    if v.restored_from is not None:
        spec["dataSource"] = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": v.restored_from}
    return obj("v1", "PersistentVolumeClaim", meta(v.name, v.namespace, _labels(v.tenant, v.id)), spec=spec)


def key_secret(
    name: str, tenant: str, volume_id: int, phrase: str, credentials: Mapping[str, str], **labels: str
) -> Obj:
    """The Secret the CSI driver reads for a claim or a snapshot of it: the driver's ``credentials`` (the operator's,
    copied) and the volume's ``encryptionPassphrase``, which no credential key may replace."""
    data = {**{k: v for k, v in credentials.items() if k != PASSPHRASE_KEY}, PASSPHRASE_KEY: phrase}
    return secret(meta(name, namespace_of(tenant), _labels(tenant, volume_id, **labels)), data)


def volume_snapshot(s: SnapshotShape) -> Obj:
    spec = {"volumeSnapshotClassName": s.snapshot_class, "source": {"persistentVolumeClaimName": s.claim}}
    labels = _labels(s.tenant, s.volume_id, **{LABEL_SNAPSHOT: str(s.id)})
    return obj(SNAPSHOT_API, "VolumeSnapshot", meta(s.name, s.namespace, labels), spec=spec)


# --- mounting ------------------------------------------------------------------------------------------------


def mounted(a: AllocationShape, volume_id: int, attach: frozenset[Attach]) -> MountedVolume:
    """The resolved volume a workload entry names, taken as the rung takes it (one of ``attach``)."""
    found = a.materials.volumes.get(volume_id)
    if found is None:
        raise ValueError(f"allocation {a.id}: volume {volume_id} is not resolved")
    if found.attach not in attach:
        raise ValueError(f"allocation {a.id}: the {a.rung} rung does not take volume {volume_id} as {found.attach}")
    return found


def claim_volume(name: str, volume: MountedVolume) -> Obj:
    """A pod's (or a VM's) volume of the claim; read-only as the entry or the rung says."""
    source: Obj = {"claimName": volume.backend_name}
    if volume.read_only:
        source["readOnly"] = True
    return {"name": name, "persistentVolumeClaim": source}


@dataclass
class VmVolumes:
    """What a VM's volumes add: KubeVirt disks and virtiofs filesystems, their volumes, and the mounts cloud-init
    makes in the guest."""

    disks: list[Obj] = field(default_factory=list)
    filesystems: list[Obj] = field(default_factory=list)
    volumes: list[Obj] = field(default_factory=list)
    mounts: list[OsMount] = field(default_factory=list)


def vm_volumes(a: AllocationShape) -> VmVolumes:
    """A block volume is a virtio disk whose serial is its backend name, so the guest finds it at
    ``/dev/disk/by-id/virtio-<name>`` whatever order the disks come in; a blank one is formatted (ext4) at first
    boot. A filesystem volume is shared into the guest by virtiofs (KubeVirt's ``EnableVirtioFsStorageVolumes``
    feature gate), its tag the volume's name in the VM; cloud-init mounts both at the entry's ``mount_path``."""
    found = VmVolumes()
    entries = a.workload.volumes if a.workload is not None else ()
    for i, entry in enumerate(entries):
        if entry.volume is None:
            continue
        volume = mounted(a, entry.volume, frozenset({Attach.DISK, Attach.NETWORK_MOUNT}))
        name = f"vol-{i}"
        found.volumes.append(claim_volume(name, volume))
        if volume.attach is Attach.DISK:
            target: Obj = {"bus": "virtio", **({"readonly": True} if volume.read_only else {})}
            found.disks.append({"name": name, "serial": volume.backend_name, "disk": target})
            device = f"/dev/disk/by-id/virtio-{volume.backend_name}"
            found.mounts.append(OsMount(device, entry.mount_path, BLOCK_FS, volume.read_only, make_fs=BLOCK_FS))
        else:
            found.filesystems.append({"name": name, "virtiofs": {}})
            found.mounts.append(OsMount(name, entry.mount_path, "virtiofs", volume.read_only))
    return found
