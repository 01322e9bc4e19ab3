"""Volumes on Kubernetes, end to end through the API and the fake API server (the official client, the real wire
protocol): a filesystem volume is a claim of the region's StorageClass with its key Secret beside it, available
once bound; a two-member job and a container mount it, a VM takes a block volume as its disk, a serverless
endpoint mounts one read-only; it grows on its claim (or says why not); a snapshot is a VolumeSnapshot restored
into a new claim under the same passphrase; delete and shred take the snapshots, the claim and, once the CSI
driver has let them go, the key Secrets. Everything rendered validates offline."""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.utils import timezone

from compliance.models import DataAsset
from compliance.services.assets import assets_shred
from compliance.services.volumes import volume_data_key
from provisioning.domain.states import AllocationState
from provisioning.domain.workloads import Volume as Mount
from provisioning.domain.workloads import Workload
from provisioning.drivers.base import allocations_reconcile
from provisioning.drivers.kubernetes.render_volumes import passphrase
from provisioning.drivers.kubernetes.volumes import DRIVER_GRACE
from provisioning.models import Allocation, Volume, VolumeSnapshot
from provisioning.services.placing import AllocationSpec, allocation_request
from tests.fakes.kubernetes import K8sServer
from tests.support import ROOT, SYSTEM, assert_problem
from tests.support import k8s_schemas as schemas

NS = "ladder-acme"
H100 = "H100-SXM-80GB"
IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
CEPH = ROOT / "deploy" / "volumes" / "ceph-csi"
CREDENTIALS = {"userID": "ladder-csi", "userKey": "AQBzc2VjcmV0LWtleS1mb3ItdGVzdHM="}


@pytest.fixture
def storage(settings: Any, k8s_fleet: K8sServer) -> K8sServer:
    """The operator's side: Ceph-CSI's classes from deploy/volumes/ceph-csi (one set for eu-west), the CSI
    credentials Secret, and the settings naming them."""
    settings.LADDER_VOLUME_STORAGE_CLASSES = "eu-west/filesystem=ladder-cephfs-eu-west,eu-west/block=ladder-rbd-eu-west"
    settings.LADDER_VOLUME_SNAPSHOT_CLASSES = settings.LADDER_VOLUME_STORAGE_CLASSES
    settings.LADDER_VOLUME_CSI_CREDENTIALS = (
        "eu-west/filesystem=ceph-csi/csi-cephfs-secret,eu-west/block=ceph-csi/csi-rbd-secret"
    )
    for name in ("storageclass-rbd.yaml", "storageclass-cephfs.yaml", "snapshotclass-rbd.yaml"):
        for document in yaml.safe_load_all((CEPH / name).read_text()):
            if document:
                k8s_fleet.put_object(document)
    k8s_fleet.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ceph-csi"}})
    for name in ("csi-cephfs-secret", "csi-rbd-secret"):
        data = {k: base64.b64encode(v.encode()).decode() for k, v in CREDENTIALS.items()}
        k8s_fleet.put_object(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "ceph-csi"}, "data": data}
        )
    return k8s_fleet


def post(client: Any, capture: Any, url: str, body: dict[str, Any]) -> Any:
    with capture(execute=True):
        return client.post(url, body, format="json")


def volume(client: Any, capture: Any, **body: Any) -> dict[str, Any]:
    body = {"name": "datasets", "region": "eu-west", "kind": "filesystem", "size_gb": 500, **body}
    made = post(client, capture, "/api/v1/volumes", body)
    assert made.status_code == 201, made.content
    assert made.json()["state"] == "creating"
    found: dict[str, Any] = made.json()
    return found


def bound(server: K8sServer, volume_id: int, reclaim: str = "Delete") -> str:
    """What the external-provisioner and the binder do: a PersistentVolume for the claim, the claim bound to it."""
    claim = server.get_object("v1", "PersistentVolumeClaim", f"vol-{volume_id}", NS)
    assert claim is not None
    name = f"pvc-{claim['metadata']['uid']}"
    size = claim["spec"]["resources"]["requests"]["storage"]
    spec = {
        "capacity": {"storage": size},
        "accessModes": claim["spec"]["accessModes"],
        "persistentVolumeReclaimPolicy": reclaim,
        "claimRef": {"namespace": NS, "name": f"vol-{volume_id}"},
        "csi": {"driver": "cephfs.csi.ceph.com", "volumeHandle": f"0001-{volume_id}"},
    }
    server.put_object({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec})
    server.put_object({**claim, "spec": {**claim["spec"], "volumeName": name}})
    server.set_status(
        "v1", "persistentvolumeclaims", f"vol-{volume_id}", NS, {"phase": "Bound", "capacity": {"storage": size}}
    )
    return name


def key_of(server: K8sServer, name: str) -> dict[str, str]:
    secret = server.get_object("v1", "Secret", name, NS)
    assert secret is not None, f"no key Secret {name}"
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def launch(client: Any, capture: Any, rung: str, volumes: list[dict[str, Any]], **shape: Any) -> int:
    workload: dict[str, Any] = {"volumes": volumes}
    workload.update({"os_image": "ubuntu-24.04"} if rung == "vm" else {"image": IMAGE})
    made = post(
        client,
        capture,
        "/api/v1/allocations",
        {"name": f"my-{rung}", "rung": rung, "gpu_model": H100, "workload": workload, **shape},
    )
    assert made.status_code == 201, made.content
    allocation_id: int = made.json()["id"]
    return allocation_id


def rendered(server: K8sServer, allocation_id: int) -> list[dict[str, Any]]:
    return [
        o
        for o in server.objects(namespace=NS)
        if (o["metadata"].get("labels") or {}).get("ladder.io/allocation") == str(allocation_id)
    ]


def as_applied(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as Ladder applied it: without what the server added (metadata it keeps, status, finalizers)."""
    meta = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace", "labels", "annotations")}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


# --- a volume, its claim and its key ----------------------------------------------------------------------------


def test_a_filesystem_volume_is_a_bound_claim_a_gang_and_a_container_mount(
    api: Any, alice: Any, storage: K8sServer, django_capture_on_commit_callbacks: Any
) -> None:
    client, capture = api(alice), django_capture_on_commit_callbacks
    body = volume(client, capture)
    claim = storage.get_object("v1", "PersistentVolumeClaim", f"vol-{body['id']}", NS)
    assert claim is not None
    schemas.validate_all(
        [as_applied(claim), as_applied(storage.get_object("v1", "Secret", f"vol-{body['id']}", NS) or {})]
    )
    assert claim["spec"]["storageClassName"] == "ladder-cephfs-eu-west"
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "500Gi"
    assert claim["metadata"]["labels"]["ladder.io/volume"] == str(body["id"])
    # The passphrase is derived from the volume's own data key; the CSI driver's credentials sit beside it.
    key = volume_data_key(volume=Volume.objects.get(pk=body["id"]))
    assert key_of(storage, f"vol-{body['id']}") == {**CREDENTIALS, "encryptionPassphrase": passphrase(key)}

    allocations_reconcile()
    assert client.get(f"/api/v1/volumes/{body['id']}").json()["state"] == "creating"  # not bound yet
    bound(storage, body["id"])
    allocations_reconcile()
    shown = client.get(f"/api/v1/volumes/{body['id']}").json()
    assert shown["state"] == "available"
    assert Volume.objects.get(pk=body["id"]).observed_at is not None

    gang = {"gpus": 2, "gang": {"size": 2, "topology": "nvlink"}}
    job = launch(client, capture, "job", [{"volume": body["id"], "mount_path": "/data"}], **gang)
    box = launch(
        client, capture, "container", [{"volume": body["id"], "mount_path": "/data", "read_only": True}], gpus=1
    )
    job_objects, box_objects = rendered(storage, job), rendered(storage, box)
    schemas.validate_all([as_applied(o) for o in job_objects + box_objects])
    (job_obj,) = [o for o in job_objects if o["kind"] == "Job"]
    assert job_obj["spec"]["parallelism"] == 2  # two members, one pod template: both mount the claim
    (member,) = schemas.pod_specs(job_obj)
    (pod,) = [o for o in box_objects if o["kind"] == "Pod"]
    for spec, read_only in ((member, False), (pod["spec"], True)):
        (claimed,) = [
            v for v in spec["volumes"] if (v.get("persistentVolumeClaim") or {}).get("claimName") == f"vol-{body['id']}"
        ]
        mount = next(m for m in spec["containers"][0]["volumeMounts"] if m["name"] == claimed["name"])
        assert mount["mountPath"] == "/data"
        assert mount.get("readOnly", False) is read_only
        assert claimed["persistentVolumeClaim"].get("readOnly", False) is read_only
    assert client.get(f"/api/v1/volumes/{body['id']}").json()["attached_to"] == sorted([job, box])


def test_a_vm_takes_a_block_volume_as_its_disk_and_an_endpoint_mounts_one_read_only(
    api: Any, alice: Any, storage: K8sServer, django_capture_on_commit_callbacks: Any
) -> None:
    client, capture = api(alice), django_capture_on_commit_callbacks
    disk = volume(client, capture, name="vm-disk", kind="block", size_gb=100)
    claim = storage.get_object("v1", "PersistentVolumeClaim", f"vol-{disk['id']}", NS) or {}
    assert (claim["spec"]["storageClassName"], claim["spec"]["volumeMode"]) == ("ladder-rbd-eu-west", "Block")
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    weights = volume(client, capture, name="weights")
    bound(storage, disk["id"])
    bound(storage, weights["id"])
    allocations_reconcile()

    vm = launch(client, capture, "vm", [{"volume": disk["id"], "mount_path": "/mnt/disk"}], gpus=2)
    (machine,) = [o for o in rendered(storage, vm) if o["kind"] == "VirtualMachine"]
    schemas.validate_all([as_applied(machine)])
    template = machine["spec"]["template"]["spec"]
    assert {"name": "vol-0", "serial": f"vol-{disk['id']}", "disk": {"bus": "virtio"}} in template["domain"]["devices"][
        "disks"
    ]
    assert {"name": "vol-0", "persistentVolumeClaim": {"claimName": f"vol-{disk['id']}"}} in template["volumes"]
    user_data = yaml.safe_load(key_of(storage, f"ldr-{vm}-userdata")["userdata"])
    assert [f"/dev/disk/by-id/virtio-vol-{disk['id']}", "/mnt/disk", "ext4", "defaults,nofail", "0", "2"] in user_data[
        "mounts"
    ]

    endpoint = launch(
        client,
        capture,
        "serverless",
        [{"volume": weights["id"], "mount_path": "/models", "read_only": True}],
        mig_profile="1g.10gb",
    )
    (deployment,) = [o for o in rendered(storage, endpoint) if o["kind"] == "Deployment"]
    schemas.validate_all([as_applied(deployment)])
    (spec,) = schemas.pod_specs(deployment)
    assert {"name": "vol-0", "persistentVolumeClaim": {"claimName": f"vol-{weights['id']}", "readOnly": True}} in spec[
        "volumes"
    ]
    assert {"name": "vol-0", "mountPath": "/models", "readOnly": True} in spec["containers"][0]["volumeMounts"]


def test_bare_metal_is_refused_a_volume_and_a_hall_that_cannot_mount_it_fails_the_allocation(
    api: Any, alice: Any, acme: Any, storage: K8sServer, django_capture_on_commit_callbacks: Any
) -> None:
    client, capture = api(alice), django_capture_on_commit_callbacks
    body = volume(client, capture)
    workload = {"os_image": "ubuntu-24.04", "volumes": [{"volume": body["id"], "mount_path": "/data"}]}
    metal = post(
        client,
        capture,
        "/api/v1/allocations",
        {"name": "metal", "rung": "bare_metal", "gpu_model": H100, "nodes": 1, "workload": workload},
    )
    problem = assert_problem(metal, 422, "validation_error")
    assert "outside the cluster" in problem["detail"] or "outside the cluster" in str(problem.get("errors"))

    # Placement and the volume disagreeing (the API never lets it: placement follows the data) fail the allocation
    # with the reason, instead of a pod that would wait for a claim its cluster does not have.
    Volume.objects.filter(pk=body["id"]).update(
        region=Volume.objects.get(pk=body["id"]).region.__class__.objects.get(code="us-east")
    )
    spec = AllocationSpec(rung="container", gpu_models=(H100,), gpus=1, regions=("eu-west",))
    named = Workload(image=IMAGE, volumes=(Mount("/data", volume=body["id"]),))
    with capture(execute=True):
        allocation = allocation_request(tenant=acme, name="elsewhere", spec=spec, actor=SYSTEM, workload=named)
    allocation.refresh_from_db()
    assert allocation.state == AllocationState.FAILED
    assert "cannot mount it" in allocation.failure_reason


# --- growing, snapshots, restoring ----------------------------------------------------------------------------


def test_it_grows_on_its_claim_or_says_why_it_cannot(
    api: Any, alice: Any, storage: K8sServer, django_capture_on_commit_callbacks: Any
) -> None:
    client, capture = api(alice), django_capture_on_commit_callbacks
    body = volume(client, capture)
    # Grown while its claim is not bound yet: an unbound claim's request cannot change, so the growth waits.
    with capture(execute=True):
        assert client.patch(f"/api/v1/volumes/{body['id']}", {"size_gb": 600}, format="json").status_code == 200
    allocations_reconcile()
    claim = storage.get_object("v1", "PersistentVolumeClaim", f"vol-{body['id']}", NS) or {}
    assert claim["spec"]["resources"]["requests"]["storage"] == "500Gi"
    bound(storage, body["id"])
    allocations_reconcile()
    claim = storage.get_object("v1", "PersistentVolumeClaim", f"vol-{body['id']}", NS) or {}
    assert claim["spec"]["resources"]["requests"]["storage"] == "600Gi"
    with capture(execute=True):
        assert client.patch(f"/api/v1/volumes/{body['id']}", {"size_gb": 800}, format="json").status_code == 200
    claim = storage.get_object("v1", "PersistentVolumeClaim", f"vol-{body['id']}", NS) or {}
    assert claim["spec"]["resources"]["requests"]["storage"] == "800Gi"

    # A class that does not allow expansion: the API server refuses the claim's new size, and the volume says so.
    cls = storage.get_object("storage.k8s.io/v1", "StorageClass", "ladder-rbd-eu-west") or {}
    storage.put_object({**cls, "allowVolumeExpansion": False})
    disk = volume(client, capture, name="disk", kind="block", size_gb=100)
    bound(storage, disk["id"])
    allocations_reconcile()
    with capture(execute=True):
        assert client.patch(f"/api/v1/volumes/{disk['id']}", {"size_gb": 200}, format="json").status_code == 200
    claim = storage.get_object("v1", "PersistentVolumeClaim", f"vol-{disk['id']}", NS) or {}
    assert claim["spec"]["resources"]["requests"]["storage"] == "100Gi"
    assert "did not grow to 200 GiB: 403" in Volume.objects.get(pk=disk["id"]).last_error


def ready(server: K8sServer, snapshot_id: int) -> str:
    """What the snapshot controller and the CSI snapshotter do: a content bound to the snapshot, ready to use."""
    content = f"snapcontent-{snapshot_id}"
    spec = {
        "deletionPolicy": "Delete",
        "driver": "cephfs.csi.ceph.com",
        "source": {"snapshotHandle": f"0001-snap-{snapshot_id}"},
        "volumeSnapshotRef": {"name": f"snap-{snapshot_id}", "namespace": NS},
    }
    server.put_object(
        {
            "apiVersion": "snapshot.storage.k8s.io/v1",
            "kind": "VolumeSnapshotContent",
            "metadata": {"name": content},
            "spec": spec,
        }
    )
    status = {"readyToUse": True, "boundVolumeSnapshotContentName": content, "restoreSize": "500Gi"}
    server.set_status("snapshot.storage.k8s.io/v1", "volumesnapshots", f"snap-{snapshot_id}", NS, status)
    return content


def test_a_snapshot_restores_under_its_lineages_passphrase_and_shredding_takes_everything(
    api: Any, alice: Any, acme: Any, storage: K8sServer, django_capture_on_commit_callbacks: Any
) -> None:
    client, capture = api(alice), django_capture_on_commit_callbacks
    body = volume(client, capture)
    bound(storage, body["id"])
    allocations_reconcile()
    snap = post(client, capture, f"/api/v1/volumes/{body['id']}/snapshots", {"name": "before-cleanup"})
    assert snap.status_code == 201, snap.content
    snap_id = snap.json()["id"]
    made = storage.get_object("snapshot.storage.k8s.io/v1", "VolumeSnapshot", f"snap-{snap_id}", NS) or {}
    schemas.validate_all([as_applied(made)])
    assert made["spec"] == {
        "volumeSnapshotClassName": "ladder-cephfs-eu-west",
        "source": {"persistentVolumeClaimName": f"vol-{body['id']}"},
    }
    phrase = key_of(storage, f"vol-{body['id']}")["encryptionPassphrase"]
    assert key_of(storage, f"snap-{snap_id}")["encryptionPassphrase"] == phrase  # the driver copies the volume's key
    assert client.get(f"/api/v1/volume-snapshots/{snap_id}").json()["state"] == "creating"
    content = ready(storage, snap_id)
    allocations_reconcile()
    assert client.get(f"/api/v1/volume-snapshots/{snap_id}").json()["state"] == "ready"

    restored = volume(client, capture, name="restored", size_gb=600, snapshot=snap_id)
    claim = storage.get_object("v1", "PersistentVolumeClaim", f"vol-{restored['id']}", NS) or {}
    schemas.validate_all([as_applied(claim)])
    assert claim["spec"]["dataSource"] == {
        "apiGroup": "snapshot.storage.k8s.io",
        "kind": "VolumeSnapshot",
        "name": f"snap-{snap_id}",
    }
    # Its blocks are the snapshot's: they open with the lineage's passphrase, not one of its own data key.
    assert key_of(storage, f"vol-{restored['id']}")["encryptionPassphrase"] == phrase
    restored_pv = bound(storage, restored["id"], reclaim="Retain")
    allocations_reconcile()
    assert client.get(f"/api/v1/volumes/{restored['id']}").json()["state"] == "available"

    # Deleted: in its waiting period the volume keeps its claim, its snapshots and their keys, since a legal hold
    # placed meanwhile may yet preserve them; none of them is billed any more.
    with capture(execute=True):
        assert client.delete(f"/api/v1/volumes/{body['id']}").status_code == 202
    storage.tick()
    allocations_reconcile()
    assert VolumeSnapshot.objects.get(pk=snap_id).state == "deleting"
    assert storage.get_object("snapshot.storage.k8s.io/v1", "VolumeSnapshot", f"snap-{snap_id}", NS) is not None
    assert storage.get_object("v1", "PersistentVolumeClaim", f"vol-{body['id']}", NS) is not None
    assert key_of(storage, f"vol-{body['id']}")

    # Shredded: the data key first, then the snapshots and the claim; each key Secret once the driver has deleted
    # what it protects (the CSI driver reads its credentials from it to delete).
    pv = storage.get_object("v1", "PersistentVolumeClaim", f"vol-{body['id']}", NS)["spec"]["volumeName"]  # type: ignore[index]
    asset = DataAsset.objects.get(volume_id=body["id"])
    with capture(execute=True):
        assets_shred(tenant=acme, assets=[asset], actor=SYSTEM, now=timezone.now())
    storage.tick()  # the garbage collector finishes the foreground deletions; no pod uses the claim
    assert storage.get_object("snapshot.storage.k8s.io/v1", "VolumeSnapshot", f"snap-{snap_id}", NS) is None
    assert key_of(storage, f"snap-{snap_id}")  # the CSI snapshotter still reads its credentials from it
    storage.delete_object("snapshot.storage.k8s.io/v1", "VolumeSnapshotContent", content)  # the driver deleted it
    allocations_reconcile()
    assert VolumeSnapshot.objects.get(pk=snap_id).state == "deleted"
    storage.tick()
    assert storage.get_object("v1", "Secret", f"snap-{snap_id}", NS) is None
    assert storage.get_object("v1", "PersistentVolumeClaim", f"vol-{body['id']}", NS) is None
    assert key_of(storage, f"vol-{body['id']}")  # the driver deletes the image with the credentials in it
    assert Volume.objects.get(pk=body["id"]).state == "deleting"
    storage.delete_object("v1", "PersistentVolume", pv)  # the CSI driver deleted the image
    allocations_reconcile()
    storage.tick()
    assert storage.get_object("v1", "Secret", f"vol-{body['id']}", NS) is None
    assert Volume.objects.get(pk=body["id"]).state == "deleted"

    # A volume whose PersistentVolume is retained: the driver never deletes it, so the key goes at once.
    with capture(execute=True):
        assert client.delete(f"/api/v1/volumes/{restored['id']}").status_code == 202
        assets_shred(
            tenant=acme, assets=[DataAsset.objects.get(volume_id=restored["id"])], actor=SYSTEM, now=timezone.now()
        )
    storage.tick()
    allocations_reconcile()
    storage.tick()
    assert storage.get_object("v1", "Secret", f"vol-{restored['id']}", NS) is None
    assert storage.get_object("v1", "PersistentVolume", restored_pv) is not None
    gone = Volume.objects.get(pk=restored["id"])
    assert gone.state == "deleted"
    assert "Retain" in gone.last_error


def test_nothing_moves_when_the_cluster_does_not_answer(
    api: Any, alice: Any, storage: K8sServer, django_capture_on_commit_callbacks: Any
) -> None:
    client, capture = api(alice), django_capture_on_commit_callbacks
    body = volume(client, capture)
    bound(storage, body["id"])
    storage.down = True
    allocations_reconcile()  # the volume's reconcile skips the cluster; the allocations' too
    assert Volume.objects.get(pk=body["id"]).state == "creating"
    storage.down = False
    allocations_reconcile()
    assert Volume.objects.get(pk=body["id"]).state == "available"
    assert not Allocation.objects.exists()


def test_a_destroyed_volumes_key_does_not_wait_for_a_driver_that_never_finishes(
    api: Any, alice: Any, acme: Any, storage: K8sServer, django_capture_on_commit_callbacks: Any
) -> None:
    client, capture = api(alice), django_capture_on_commit_callbacks
    body = volume(client, capture)
    pv = bound(storage, body["id"])
    allocations_reconcile()
    with capture(execute=True):
        assert client.delete(f"/api/v1/volumes/{body['id']}").status_code == 202
        assets_shred(
            tenant=acme, assets=[DataAsset.objects.get(volume_id=body["id"])], actor=SYSTEM, now=timezone.now()
        )
    storage.tick()
    allocations_reconcile()
    assert key_of(storage, f"vol-{body['id']}")  # the driver is deleting the image: it still needs its credentials
    # An hour later the PersistentVolume is still there (the driver failed): the key goes all the same.
    secret = storage.get_object("v1", "Secret", f"vol-{body['id']}", NS) or {}
    annotations = secret["metadata"]["annotations"]
    assert annotations["ladder.io/bound-to"] == f"PersistentVolume/{pv}"
    annotations["ladder.io/released-at"] = (timezone.now() - DRIVER_GRACE - timedelta(minutes=1)).isoformat()
    storage.put_object(secret)
    allocations_reconcile()
    storage.tick()
    assert storage.get_object("v1", "Secret", f"vol-{body['id']}", NS) is None
    gone = Volume.objects.get(pk=body["id"])
    assert gone.state == "deleted"
    assert f"has not deleted PersistentVolume/{pv}" in gone.last_error
