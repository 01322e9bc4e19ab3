"""Volumes on Kubernetes (``KubernetesVolumes``, the driver's ``VolumeBackend``): a PersistentVolumeClaim per volume
in its tenant's namespace, from the operator's StorageClass for the volume's region and kind; snapshots are
``VolumeSnapshot``s, restored into new claims through their ``dataSource``. Beside each claim and each snapshot
Ladder writes a Secret of the same name holding the volume's encryption passphrase, derived from the volume's own
data key, which the CSI driver reads (Ceph-CSI's ``metadata`` KMS; docs/volumes.md, "Encryption and
crypto-shredding", and "On Kubernetes (operators)").

A region's volumes live in one cluster: that of its first hall (by id) with one registered (``volume_cluster``). An
allocation placed in another hall of the region cannot mount them, and fails saying so
(``volume_cluster_refusal``).

Teardown goes in the order the CSI driver needs: the VolumeSnapshots, then the claim; the key Secret only once the
driver has deleted what it provisioned (the PersistentVolume, the VolumeSnapshotContent), because it reads its
credentials from that Secret to do so. By then the volume's data key is already destroyed (compliance shreds it
first), so the passphrase in the Secret is its last copy. A driver that does not finish within
``DRIVER_GRACE`` does not hold the passphrase back: the Secret goes, and the volume says what was left behind.

Nothing here holds a database transaction across a call to a cluster; states move only on what the cluster
reported (``volume_transition``, ``snapshot_transition``).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from kubernetes.client.exceptions import ApiException

from core.actor import Actor
from core.metrics import RECONCILE_ERRORS
from provisioning.domain.volume_classes import SecretRef, class_map, secret_map
from provisioning.domain.volumes import PROVISIONED, SnapshotState, VolumeKind, VolumeState
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.client import ClusterUnavailable, Kube
from provisioning.drivers.kubernetes.clusters import kube_for_cluster
from provisioning.drivers.kubernetes.desired import tenant_shape
from provisioning.drivers.kubernetes.manifest import MANAGED_BY_LABEL
from provisioning.drivers.kubernetes.render_volumes import (
    LABEL_SNAPSHOT,
    PASSPHRASE_KEY,
    SNAPSHOT_API,
    SnapshotShape,
    VolumeShape,
    key_secret,
    passphrase,
    volume_claim,
    volume_snapshot,
)
from provisioning.drivers.kubernetes.shapes import MANAGED_BY, namespace_of
from provisioning.drivers.volumes import VolumeBackend, snapshots_to_remove
from provisioning.models import Allocation, Cluster, Volume, VolumeSnapshot
from provisioning.services.volumes import snapshot_transition, volume_key, volume_transition

log = logging.getLogger(__name__)
SYSTEM = Actor.system("kubernetes")
PROVISIONER = "kubernetes"
# On a key Secret being let go: what the CSI driver must delete first ("<Kind>/<name>") and since when.
BOUND_TO = "ladder.io/bound-to"
RELEASED_AT = "ladder.io/released-at"
DRIVER_GRACE = timedelta(hours=1)  # the longest a destroyed volume's passphrase waits for the driver's deletion


@lru_cache(maxsize=8)
def _classes(text: str, setting: str) -> dict[tuple[str, VolumeKind], str]:
    return class_map(text, setting)


@lru_cache(maxsize=8)
def _credentials_refs(text: str) -> dict[tuple[str, VolumeKind], SecretRef]:
    return secret_map(text, "LADDER_VOLUME_CSI_CREDENTIALS")


def storage_class(region: str, kind: str) -> str | None:
    found = _classes(settings.LADDER_VOLUME_STORAGE_CLASSES, "LADDER_VOLUME_STORAGE_CLASSES")
    return found.get((region, VolumeKind(kind)))


def snapshot_class(region: str, kind: str) -> str | None:
    found = _classes(settings.LADDER_VOLUME_SNAPSHOT_CLASSES, "LADDER_VOLUME_SNAPSHOT_CLASSES")
    return found.get((region, VolumeKind(kind)))


def volume_cluster(region_id: int) -> Cluster | None:
    """The cluster holding a region's volumes: that of its first hall (by id) with a cluster registered."""
    return Cluster.objects.filter(hall__region_id=region_id).select_related("hall").order_by("hall_id").first()


def volume_cluster_refusal(allocation: Allocation) -> str | None:
    """Why the allocation's hall cannot mount the volumes its workload names (None: it can). A claim is mounted in
    its own cluster only."""
    ids = allocation.workload_spec.volume_ids
    if not ids:
        return None
    home = Cluster.objects.filter(hall_id=allocation.hall_id).first()
    for volume in Volume.objects.filter(tenant_id=allocation.tenant_id, pk__in=ids).select_related("region"):
        holder = volume_cluster(volume.region_id)
        if holder is None or home is None or holder.pk != home.pk:
            where = f"cluster {holder.name} of hall {holder.hall.code}" if holder is not None else "no cluster"
            return (
                f"volume {volume.name} is held by {where} in region {volume.region.code}; the allocation was placed "
                f"in hall {allocation.hall.code}, whose cluster cannot mount it"
            )
    return None


def _decoded(data: dict[str, str] | None) -> dict[str, str]:
    return {key: base64.b64decode(value).decode() for key, value in (data or {}).items()}


def _note(volume: Volume, why: str) -> None:
    """What stops the backend, on the volume for operators (``last_error``) and in the log; the state stays."""
    log.warning("volume %s: %s", volume.pk, why)
    Volume.objects.filter(pk=volume.pk).update(last_error=why[:500])


def _released_long_ago(secret: dict[str, Any], now: datetime) -> bool:
    since = parse_datetime((secret["metadata"].get("annotations") or {}).get(RELEASED_AT) or "")
    return since is not None and now - since > DRIVER_GRACE


class KubernetesVolumes(VolumeBackend):
    """Each call takes ids and is safe to repeat: the tasks retry, and reconciliation finishes what a lost task
    left."""

    def __init__(self) -> None:
        self._kubes: dict[int, Kube] = {}

    def _kube(self, volume: Volume) -> Kube | None:
        cluster = volume_cluster(volume.region_id)
        if cluster is None:
            return None
        if cluster.pk not in self._kubes:
            self._kubes[cluster.pk] = kube_for_cluster(cluster)
        return self._kubes[cluster.pk]

    # --- a volume ----------------------------------------------------------------------------------------------

    def provision(self, volume_id: int) -> None:
        volume = _volume(volume_id)
        if volume.state != VolumeState.CREATING:
            return
        kube = self._kube(volume)
        if kube is None:
            _note(volume, f"no Kubernetes cluster is registered in region {volume.region.code}")
            return
        shape = _shape(volume)
        if shape is None:
            _note(volume, f"no StorageClass for {volume.region.code}/{volume.kind}: see LADDER_VOLUME_STORAGE_CLASSES")
            return
        for obj in render.namespace_set(tenant_shape(volume.tenant)):  # the namespace (and its quota) first
            kube.apply(obj)
        phrase = self._passphrase(kube, volume)
        credentials = self._credentials(kube, volume)
        if phrase is None or credentials is None:
            return
        kube.apply(key_secret(volume.backend_name, volume.tenant.slug, volume.pk, phrase, credentials))
        namespace = namespace_of(volume.tenant.slug)
        if kube.get("v1", "PersistentVolumeClaim", volume.backend_name, namespace) is None:
            # Once made, a claim's spec is the API server's to guard: a growth asked meanwhile waits for the bind.
            kube.apply(volume_claim(shape))
        self._observe(kube, volume)

    def _passphrase(self, kube: Kube, volume: Volume) -> str | None:
        """The passphrase already in the cluster for this volume; for a restored one, its snapshot's (the restore
        copies the snapshot's encrypted blocks and wrapped key, which open with that passphrase only); else the one
        derived from the data key of the volume its lineage began with."""
        namespace = namespace_of(volume.tenant.slug)
        names = [volume.backend_name]
        if volume.restored_from is not None:
            names.append(volume.restored_from.backend_name)
        for name in names:
            found = _decoded((kube.get("v1", "Secret", name, namespace) or {}).get("data")).get(PASSPHRASE_KEY)
            if found:
                return found
        root = volume
        while root.restored_from is not None:
            root = root.restored_from.volume
        key = volume_key(root)
        if key is None:
            _note(volume, "no encryption passphrase can be made: the data key it derives from is destroyed")
            return None
        return passphrase(key)

    def _credentials(self, kube: Kube, volume: Volume) -> dict[str, str] | None:
        """The CSI driver's own credentials for the volume's region and kind (``LADDER_VOLUME_CSI_CREDENTIALS``),
        copied into each key Secret: the driver takes its credentials and the passphrase from one Secret. None (and
        noted) when the setting names a Secret the cluster does not have."""
        refs = _credentials_refs(settings.LADDER_VOLUME_CSI_CREDENTIALS)
        ref = refs.get((volume.region.code, VolumeKind(volume.kind)))
        if ref is None:
            return {}
        found = kube.get("v1", "Secret", ref.name, ref.namespace)
        if found is None:
            _note(volume, f"the CSI credentials Secret {ref} (LADDER_VOLUME_CSI_CREDENTIALS) is not in the cluster")
            return None
        return _decoded(found.get("data"))

    def _observe(self, kube: Kube, volume: Volume) -> None:
        """Available once the claim is bound; grown then, when the volume grew while it was being made (an unbound
        claim's request cannot change)."""
        claim = kube.get("v1", "PersistentVolumeClaim", volume.backend_name, namespace_of(volume.tenant.slug))
        if claim is None:
            return
        Volume.objects.filter(pk=volume.pk).update(observed_at=timezone.now())
        if (claim.get("status") or {}).get("phase") != "Bound" or volume.state != VolumeState.CREATING:
            return
        volume_transition(volume=volume, to=VolumeState.AVAILABLE, actor=SYSTEM)
        requested = ((claim.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
        if requested != f"{volume.size_gb}Gi":
            self.resize(volume.pk)

    def resize(self, volume_id: int) -> None:
        """Ask for the new size on the claim (the StorageClass must allow expansion); the driver grows the
        volume, and the file system on it once a pod or VM next mounts it."""
        volume = _volume(volume_id)
        if volume.state not in PROVISIONED:
            return  # still creating: the claim is made at the new size; going away: nothing to grow
        kube = self._kube(volume)
        shape = _shape(volume)
        if kube is None or shape is None:
            return
        for obj in render.namespace_set(tenant_shape(volume.tenant)):  # the quota as it is now, before the claim
            kube.apply(obj)
        try:
            kube.apply(volume_claim(shape))
        except ApiException as error:
            if error.status is None or error.status >= 500:
                raise
            _note(volume, f"the claim did not grow to {volume.size_gb} GiB: {error.status} {error.reason}")

    def destroy(self, volume_id: int) -> None:
        """The volume's key is destroyed: its snapshots go, then its claim; its key Secret once the driver has
        deleted the volume (``_destroy_finish``)."""
        volume = _volume(volume_id)
        kube = self._kube(volume)
        if kube is None:  # nothing of it was ever in a cluster
            if volume.state == VolumeState.DELETING:
                volume_transition(volume=volume, to=VolumeState.DELETED, actor=SYSTEM)
            return
        left = VolumeSnapshot.objects.filter(volume=volume).exclude(state=SnapshotState.DELETED)
        for snapshot_id in left.values_list("pk", flat=True):
            self.snapshot_destroy(snapshot_id)
        namespace = namespace_of(volume.tenant.slug)
        claim = kube.get("v1", "PersistentVolumeClaim", volume.backend_name, namespace)
        if claim is not None and not claim["metadata"].get("deletionTimestamp"):
            bound = (claim.get("spec") or {}).get("volumeName")
            _release(kube, volume.backend_name, namespace, f"PersistentVolume/{bound}" if bound else None)
            kube.delete(claim)
        self._destroy_finish(kube, volume)

    def _destroy_finish(self, kube: Kube, volume: Volume) -> bool:
        namespace = namespace_of(volume.tenant.slug)
        if kube.get("v1", "PersistentVolumeClaim", volume.backend_name, namespace) is not None:
            return False  # a pod still uses it (the claim's protection finalizer), or deletion is under way
        if not _secret_let_go(kube, volume.backend_name, namespace, lambda why: _note(volume, why)):
            return False
        if volume.state == VolumeState.DELETING:
            volume_transition(volume=volume, to=VolumeState.DELETED, actor=SYSTEM)
        return True

    # --- a snapshot ----------------------------------------------------------------------------------------------

    def snapshot(self, snapshot_id: int) -> None:
        snapshot = _snapshot(snapshot_id)
        if snapshot.state != SnapshotState.CREATING:
            return
        volume = snapshot.volume
        kube = self._kube(volume)
        cls = snapshot_class(volume.region.code, volume.kind)
        if kube is None or cls is None:
            where = f"{volume.region.code}/{volume.kind}"
            _note(volume, f"no cluster or no VolumeSnapshotClass for {where}: see LADDER_VOLUME_SNAPSHOT_CLASSES")
            return
        phrase = self._passphrase(kube, volume)
        credentials = self._credentials(kube, volume)
        if phrase is None or credentials is None:
            return
        labels = {LABEL_SNAPSHOT: str(snapshot.pk)}
        kube.apply(key_secret(snapshot.backend_name, volume.tenant.slug, volume.pk, phrase, credentials, **labels))
        shape = SnapshotShape(
            id=snapshot.pk,
            name=snapshot.backend_name,
            tenant=volume.tenant.slug,
            volume_id=volume.pk,
            claim=volume.backend_name,
            snapshot_class=cls,
        )
        kube.apply(volume_snapshot(shape))
        self._observe_snapshot(kube, snapshot)

    def _observe_snapshot(self, kube: Kube, snapshot: VolumeSnapshot) -> None:
        live = kube.get(SNAPSHOT_API, "VolumeSnapshot", snapshot.backend_name, namespace_of(snapshot.tenant.slug))
        status = (live or {}).get("status") or {}
        if status.get("readyToUse") is True and snapshot.state == SnapshotState.CREATING:
            snapshot_transition(snapshot=snapshot, to=SnapshotState.READY, actor=SYSTEM)
        elif status.get("error"):
            log.warning("snapshot %s: %s", snapshot.pk, (status["error"] or {}).get("message", ""))

    def snapshot_destroy(self, snapshot_id: int) -> None:
        snapshot = _snapshot(snapshot_id)
        kube = self._kube(snapshot.volume)
        if kube is not None:
            namespace = namespace_of(snapshot.tenant.slug)
            live = kube.get(SNAPSHOT_API, "VolumeSnapshot", snapshot.backend_name, namespace)
            if live is not None and not live["metadata"].get("deletionTimestamp"):
                content = (live.get("status") or {}).get("boundVolumeSnapshotContentName")
                bound = f"VolumeSnapshotContent/{content}" if content else None
                _release(kube, snapshot.backend_name, namespace, bound)
                kube.delete(live)
            if kube.get(SNAPSHOT_API, "VolumeSnapshot", snapshot.backend_name, namespace) is not None:
                return
            if not _secret_let_go(kube, snapshot.backend_name, namespace, lambda why: _note(snapshot.volume, why)):
                return
        if snapshot.state == SnapshotState.DELETING:
            snapshot_transition(snapshot=snapshot, to=SnapshotState.DELETED, actor=SYSTEM)

    # --- reconciliation ------------------------------------------------------------------------------------------

    def reconcile(self, now: datetime) -> int:
        """Finish what a lost task left: claims and snapshots being made, snapshots going, and the teardown of
        volumes whose data key is destroyed (a volume in its waiting period keeps its claim). Then note, per
        cluster, the provisioned volumes whose claim is lost or missing. A cluster that does not answer is skipped
        (counted in ``ladder_reconcile_errors_total``); nothing changes on a missing answer."""
        moved = 0
        ours = Volume.objects.filter(provisioner=PROVISIONER)
        for volume in ours.filter(state=VolumeState.CREATING):
            moved += self._step(volume, self.provision)
        for volume in ours.filter(state=VolumeState.DELETING):
            if volume_key(volume) is None:  # shredded: the backend lets it go
                moved += self._step(volume, self.destroy)
        snapshots = VolumeSnapshot.objects.filter(volume__provisioner=PROVISIONER).select_related("volume")
        for snapshot in snapshots.filter(state=SnapshotState.CREATING):
            moved += self._step(snapshot.volume, self.snapshot, snapshot.pk)
        # A snapshot going with its volume stays while the volume waits: a legal hold may yet preserve both.
        for snapshot in snapshots_to_remove().filter(volume__provisioner=PROVISIONER).select_related("volume"):
            moved += self._step(snapshot.volume, self.snapshot_destroy, snapshot.pk)
        self._claims_check(ours.filter(state__in=list(PROVISIONED)).select_related("tenant", "region"), now)
        return moved

    def _step(self, volume: Volume, call: Callable[[int], None], target: int | None = None) -> int:
        """One backend call for reconciliation: 1 when the volume (or the snapshot ``target``) changed state."""
        model = VolumeSnapshot if target is not None else Volume
        pk = target if target is not None else volume.pk
        before = model.objects.filter(pk=pk).values_list("state", flat=True).first()
        try:
            call(pk)
        except (ClusterUnavailable, ApiException) as error:
            cluster = volume_cluster(volume.region_id)
            RECONCILE_ERRORS.labels(cluster.name if cluster else "", "volumes").inc()
            log.warning("volume %s: reconcile: %s", volume.pk, error)
            if not isinstance(error, ClusterUnavailable):
                _note(volume, str(error))
            return 0
        return int(model.objects.filter(pk=pk).values_list("state", flat=True).first() != before)

    def _claims_check(self, volumes: Any, now: datetime) -> None:
        """One list of Ladder's claims per cluster: a provisioned volume whose claim is there and bound is observed
        now; one whose claim is lost or gone is noted (its data may be gone with it: an operator looks)."""
        by_cluster: dict[int, list[Volume]] = {}
        for volume in volumes:
            cluster = volume_cluster(volume.region_id)
            if cluster is not None:
                by_cluster.setdefault(cluster.pk, []).append(volume)
        for cluster_id, held in by_cluster.items():
            try:
                kube = self._kubes.get(cluster_id) or kube_for_cluster(Cluster.objects.get(pk=cluster_id))
                listed = kube.list("v1", "PersistentVolumeClaim", labels={MANAGED_BY_LABEL: MANAGED_BY})
            except (ClusterUnavailable, ApiException) as error:
                RECONCILE_ERRORS.labels(Cluster.objects.get(pk=cluster_id).name, "volumes").inc()
                log.warning("cluster %s: volume claims not read: %s", cluster_id, error)
                continue
            phases = {
                (c["metadata"]["namespace"], c["metadata"]["name"]): (c.get("status") or {}).get("phase")
                for c in listed
            }
            seen = []
            for volume in held:
                phase = phases.get((namespace_of(volume.tenant.slug), volume.backend_name))
                if phase == "Bound":
                    seen.append(volume.pk)
                else:
                    _note(volume, f"its claim is {phase or 'missing from the cluster'}")
            Volume.objects.filter(pk__in=seen).update(observed_at=now)


def _volume(volume_id: int) -> Volume:
    return Volume.objects.select_related("tenant", "region", "restored_from__volume").get(pk=volume_id)


def _snapshot(snapshot_id: int) -> VolumeSnapshot:
    return VolumeSnapshot.objects.select_related("tenant", "volume__tenant", "volume__region").get(pk=snapshot_id)


def _shape(volume: Volume) -> VolumeShape | None:
    cls = storage_class(volume.region.code, volume.kind)
    if cls is None:
        return None
    return VolumeShape(
        id=volume.pk,
        name=volume.backend_name,
        tenant=volume.tenant.slug,
        kind=VolumeKind(volume.kind),
        size_gb=volume.size_gb,
        storage_class=cls,
        restored_from=volume.restored_from.backend_name if volume.restored_from is not None else None,
    )


def _release(kube: Kube, name: str, namespace: str, bound: str | None) -> None:
    """Mark a key Secret as let go: what the driver deletes with its credentials, and since when."""
    secret = kube.get("v1", "Secret", name, namespace)
    if secret is None:
        return
    annotations = {RELEASED_AT: timezone.now().isoformat(), **({BOUND_TO: bound} if bound else {})}
    kube.merge_patch(secret, {"metadata": {"annotations": annotations}})


def _secret_let_go(kube: Kube, name: str, namespace: str, note: Callable[[str], None]) -> bool:
    """Delete a key Secret once the driver no longer needs it: what it was bound to is gone, or is kept by its
    reclaim policy (``Retain``), or the driver took longer than ``DRIVER_GRACE`` (then the Secret goes anyway, and
    what was left is noted). False while it still waits."""
    secret = kube.get("v1", "Secret", name, namespace)
    if secret is None:
        return True
    bound = (secret["metadata"].get("annotations") or {}).get(BOUND_TO)
    if bound:
        kind, _, bound_name = bound.partition("/")
        live = kube.get("v1" if kind == "PersistentVolume" else SNAPSHOT_API, kind, bound_name)
        spec = (live or {}).get("spec") or {}
        policy = spec.get("persistentVolumeReclaimPolicy") or spec.get("deletionPolicy")
        if live is not None and policy == "Delete":
            if not _released_long_ago(secret, timezone.now()):
                return False
            note(f"the CSI driver has not deleted {bound} within {DRIVER_GRACE}: its key is deleted all the same")
        elif live is not None:
            note(f"{bound} is kept by its reclaim policy ({policy}): its key is deleted, its content unreadable")
    kube.delete(secret)
    return True
