"""A tenant's volumes in the manifests: the PersistentVolumeClaim, its key Secret and VolumeSnapshots validated
offline (Kubernetes 1.34 strict, the external-snapshotter CRDs); the claim mounted by every container and every
member of a gang in each framework, read-only on serverless replicas; a VM's block disk and virtiofs filesystem
(KubeVirt's schema) with the guest's mounts in its user data; the namespace's quota with a storage quota; and the
Ceph-CSI classes operators install (deploy/volumes/ceph-csi) valid and naming the Secrets Ladder writes."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import pytest
import yaml

from provisioning.domain.volume_classes import class_map
from provisioning.domain.volumes import Attach, VolumeKind
from provisioning.domain.workload_rules import DEFAULT_REGISTRIES, WorkloadInvalid, workload_check
from provisioning.domain.workloads import MountedVolume, Volume, Workload
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.render_volumes import (
    SnapshotShape,
    VolumeShape,
    key_secret,
    passphrase,
    volume_claim,
    volume_snapshot,
)
from provisioning.drivers.kubernetes.shapes import AllocationShape, TenantShape
from tests.provisioning.drivers.kubernetes.test_render_jobs import gang
from tests.provisioning.drivers.kubernetes.test_render_slurm import SLURM
from tests.provisioning.drivers.kubernetes.test_render_workload import (
    CATALOG,
    CONTAINER,
    SERVERLESS,
    VM,
    decoded,
    named,
    objects,
)
from tests.support import ROOT
from tests.support import k8s_schemas as schemas

KEY = bytes(range(32))
SHARED = MountedVolume(11, VolumeKind.FILESYSTEM, Attach.MOUNT, False, "vol-11", 500)
DATA = Volume("/data", volume=11)


def mounting(a: AllocationShape, volume: MountedVolume = SHARED, entry: Volume = DATA) -> AllocationShape:
    workload = a.workload or Workload()
    workload = replace(workload, volumes=(*workload.volumes, entry))
    return replace(a, workload=workload, materials=replace(a.materials, volumes={volume.volume_id: volume}))


def claims_of(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A pod spec's claims by volume name."""
    return {v["name"]: v["persistentVolumeClaim"] for v in spec.get("volumes") or [] if "persistentVolumeClaim" in v}


def mounts_of(container: dict[str, Any], names: set[str]) -> list[dict[str, Any]]:
    return [m for m in container.get("volumeMounts") or [] if m["name"] in names]


# --- the volume's own objects ---------------------------------------------------------------------------------


def test_a_filesystem_is_a_shared_claim_and_a_block_volume_a_raw_device() -> None:
    fs = volume_claim(VolumeShape(11, "vol-11", "acme", VolumeKind.FILESYSTEM, 500, "ladder-cephfs-eu-west"))
    block = volume_claim(VolumeShape(12, "vol-12", "acme", VolumeKind.BLOCK, 100, "ladder-rbd-eu-west"))
    schemas.validate_all([fs, block])
    assert fs["metadata"]["namespace"] == "ladder-acme"
    assert fs["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "ladder",
        "ladder.io/tenant": "acme",
        "ladder.io/volume": "11",
    }
    assert fs["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "ladder-cephfs-eu-west",
        "volumeMode": "Filesystem",
        "resources": {"requests": {"storage": "500Gi"}},
    }
    assert (block["spec"]["accessModes"], block["spec"]["volumeMode"]) == (["ReadWriteOnce"], "Block")

    restored = volume_claim(VolumeShape(13, "vol-13", "acme", VolumeKind.FILESYSTEM, 600, "c", restored_from="snap-4"))
    schemas.validate_all([restored])
    assert restored["spec"]["dataSource"] == {
        "apiGroup": "snapshot.storage.k8s.io",
        "kind": "VolumeSnapshot",
        "name": "snap-4",
    }


def test_the_key_secret_holds_the_passphrase_and_the_drivers_credentials() -> None:
    phrase = passphrase(KEY)
    assert len(phrase) == 43
    assert phrase == passphrase(bytes(KEY))
    assert passphrase(bytes(31) + b"\x01") != phrase  # one key, one passphrase
    assert KEY.hex() not in phrase
    assert base64.b64encode(KEY).decode() not in phrase
    credentials = {"userID": "ladder-rbd", "userKey": "AQBs...==", "encryptionPassphrase": "an operator's own"}
    secret = key_secret("vol-12", "acme", 12, phrase, credentials)
    schemas.validate_all([secret])
    assert (secret["metadata"]["name"], secret["metadata"]["namespace"]) == ("vol-12", "ladder-acme")
    assert decoded(secret) == {"userID": "ladder-rbd", "userKey": "AQBs...==", "encryptionPassphrase": phrase}


def test_a_snapshot_is_a_volume_snapshot_of_the_claim() -> None:
    snap = volume_snapshot(SnapshotShape(4, "snap-4", "acme", 11, "vol-11", "ladder-cephfs-eu-west"))
    schemas.validate_all([snap])
    assert snap["apiVersion"] == "snapshot.storage.k8s.io/v1"
    assert snap["spec"] == {
        "volumeSnapshotClassName": "ladder-cephfs-eu-west",
        "source": {"persistentVolumeClaimName": "vol-11"},
    }
    assert snap["metadata"]["labels"]["ladder.io/volume-snapshot"] == "4"
    wrong = {**snap, "spec": {"source": {"persistentVolumeClaimName": "vol-11", "size": "1Gi"}}}
    with pytest.raises(schemas.ManifestError):
        schemas.validate_all([wrong])


# --- mounted by every rung that runs containers ----------------------------------------------------------------

GANGS = {
    "torchrun": mounting(gang(210, "torchrun")),
    "mpi": mounting(gang(211, "mpi")),
    "ray": mounting(gang(212, "ray")),
    "slurm": mounting(SLURM),
}


@pytest.mark.parametrize("allocation", [mounting(CONTAINER), *GANGS.values()], ids=["container", *GANGS])
def test_every_container_of_every_member_mounts_the_claim(allocation: AllocationShape) -> None:
    objs = render.allocation_objects(allocation)
    schemas.validate_all(objs)
    specs = [s for o in objs for s in schemas.pod_specs(o)]
    for obj in objs:
        schemas.validate_pod_templates(obj)
    members = [s for s in specs if any(c["name"] in ("worker", "ray-head") for c in s["containers"])]
    slurm = allocation.spec.is_slurm
    if slurm:  # Slinky's pods: the NodeSet's slurmd and the LoginSet's login node, where users read the data
        nodeset = next(o for o in objs if o["kind"] == "NodeSet")
        login = next(o for o in objs if o["kind"] == "LoginSet")
        members = [
            {**nodeset["spec"]["template"]["spec"], "containers": [nodeset["spec"]["slurmd"]]},
            {**login["spec"]["template"]["spec"], "containers": [login["spec"]["login"]]},
        ]
    assert members
    for spec in members:
        claims = {n: c for n, c in claims_of(spec).items() if not c["claimName"].endswith("-checkpoints")}
        assert list(claims.values()) == [{"claimName": "vol-11"}], spec
        for container in spec["containers"]:
            assert mounts_of(container, set(claims)) == [{"name": next(iter(claims)), "mountPath": "/data"}]
        if not slurm:  # slurmd keeps the capabilities Slinky gives it (docs/jobs.md, "Pod Security")
            assert schemas.restricted_violations(spec) == []


def test_serverless_replicas_mount_it_read_only() -> None:
    cache = replace(SHARED, read_only=True)
    objs = render.allocation_objects(mounting(SERVERLESS, cache, Volume("/models", volume=11, read_only=True)))
    schemas.validate_all(objs)
    spec = schemas.pod_specs(named(objs, "Deployment", "ldr-203"))[0]
    claims = claims_of(spec)
    assert list(claims.values()) == [{"claimName": "vol-11", "readOnly": True}]
    (mount,) = mounts_of(spec["containers"][0], set(claims))
    assert mount == {"name": next(iter(claims)), "mountPath": "/models", "readOnly": True}


def test_a_volume_the_services_did_not_resolve_is_not_rendered() -> None:
    unresolved = replace(mounting(CONTAINER), materials=CONTAINER.materials)
    with pytest.raises(ValueError, match="volume 11 is not resolved"):
        render.allocation_objects(unresolved)
    placeholders = render.placeholder_materials(mounting(CONTAINER).workload)
    assert placeholders.volumes[11].backend_name == "vol-11"  # names, no secret: enough to find and delete


# --- a VM's disk and shared filesystem -------------------------------------------------------------------------


def test_a_vm_takes_a_block_volume_as_a_disk_and_a_filesystem_through_virtiofs() -> None:
    disk = MountedVolume(12, VolumeKind.BLOCK, Attach.DISK, False, "vol-12", 100)
    shared = MountedVolume(11, VolumeKind.FILESYSTEM, Attach.NETWORK_MOUNT, True, "vol-11", 500)
    assert VM.workload is not None
    workload = replace(
        VM.workload, volumes=(Volume("/mnt/disk", volume=12), Volume("/mnt/data", volume=11, read_only=True))
    )
    workload_check(workload, rung="vm", registries=DEFAULT_REGISTRIES, os_images=CATALOG)
    vm = replace(VM, workload=workload, materials=replace(VM.materials, volumes={12: disk, 11: shared}))
    objs = objects(vm)
    schemas.validate_all(objs)
    machine = named(objs, "VirtualMachine", "ldr-205")
    spec = machine["spec"]["template"]["spec"]
    devices = spec["domain"]["devices"]
    assert devices["disks"][1] == {"name": "vol-0", "serial": "vol-12", "disk": {"bus": "virtio"}}
    assert devices["filesystems"] == [{"name": "vol-1", "virtiofs": {}}]
    claims = claims_of(spec)
    assert claims == {"vol-0": {"claimName": "vol-12"}, "vol-1": {"claimName": "vol-11", "readOnly": True}}

    user_data = yaml.safe_load(decoded(named(objs, "Secret", "ldr-205-userdata"))["userdata"])
    assert user_data["packages"] == ["htop"]  # the tenant's own cloud-config is kept
    device = "/dev/disk/by-id/virtio-vol-12"
    assert user_data["mounts"] == [
        [device, "/mnt/disk", "ext4", "defaults,nofail", "0", "2"],
        ["vol-1", "/mnt/data", "virtiofs", "defaults,nofail,ro", "0", "0"],
    ]
    # A blank disk is formatted at boot, and only a blank one: never over the volume's data.
    ((sh, flag, script),) = user_data["bootcmd"]
    assert (sh, flag) == ("sh", "-c")
    assert f"blkid -p {device}" in script
    assert "test $? -eq 2" in script
    assert f"mkfs.ext4 -q {device}" in script


def test_a_bare_metal_host_mounts_no_volume() -> None:
    workload = Workload(os_image="ubuntu-24.04", volumes=(Volume("/data", volume=11),))
    with pytest.raises(WorkloadInvalid) as refused:
        workload_check(workload, rung="bare_metal", registries=DEFAULT_REGISTRIES, os_images=CATALOG)
    assert refused.value.field == "volumes.0.volume"
    assert "outside the cluster" in refused.value.message


# --- the namespace's quota ------------------------------------------------------------------------------------


def test_the_namespace_quota_holds_the_checkpoints_and_the_storage_quota() -> None:
    hard = render.quota(TenantShape(slug="acme", gpu_quota_milli=16_000, volume_quota_gb=2_000))
    # 64 GiB of checkpoints per GPU and one claim per job; the volumes' 2,000 GB and at most a claim per GB.
    assert (hard["requests.storage"], hard["persistentvolumeclaims"]) == (f"{64 * 16 + 2_000}Gi", str(16 + 2_000))
    assert "requests.storage" not in render.quota(TenantShape(slug="acme", gpu_quota_milli=16_000))


# --- the Ceph-CSI classes an operator installs ------------------------------------------------------------------

CEPH = ROOT / "deploy" / "volumes" / "ceph-csi"


def ceph_documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((CEPH / name).read_text()) if d]


def test_the_ceph_csi_classes_validate_and_name_the_secrets_ladder_writes() -> None:
    classes = {n: ceph_documents(n)[0] for n in ("storageclass-rbd.yaml", "storageclass-cephfs.yaml")}
    snapshots = {n: ceph_documents(n)[0] for n in ("snapshotclass-rbd.yaml", "snapshotclass-cephfs.yaml")}
    schemas.validate_all([*classes.values(), *snapshots.values(), *ceph_documents("kms-config.yaml")])
    for sc in classes.values():
        params = sc["parameters"]
        assert (params["encrypted"], params["encryptionKMSID"]) == ("true", "ladder-volume-keys")
        # The claim's key Secret (same name as the claim, in its namespace) for every call that reads secrets.
        for call in ("provisioner", "node-stage", "controller-expand"):
            assert params[f"csi.storage.k8s.io/{call}-secret-name"] == "${pvc.name}"
            assert params[f"csi.storage.k8s.io/{call}-secret-namespace"] == "${pvc.namespace}"
        assert (sc["reclaimPolicy"], sc["allowVolumeExpansion"]) == ("Delete", True)
    for vsc in snapshots.values():
        assert vsc["parameters"]["csi.storage.k8s.io/snapshotter-secret-name"] == "${volumesnapshot.name}"
        assert vsc["deletionPolicy"] == "Delete"
    kms = yaml.safe_load(ceph_documents("kms-config.yaml")[0]["data"]["config.json"])
    assert kms == {"ladder-volume-keys": {"encryptionKMSType": "metadata"}}  # no secretName: the claim's secrets
    # The setting an operator writes for them reads back as these classes.
    setting = "eu-west/block=ladder-rbd-eu-west,eu-west/filesystem=ladder-cephfs-eu-west"
    assert set(class_map(setting, "LADDER_VOLUME_STORAGE_CLASSES").values()) == {
        sc["metadata"]["name"] for sc in classes.values()
    }


def test_the_upstream_examples_are_kept_unchanged_beside_their_licence() -> None:
    upstream = sorted(p.name for p in (CEPH / "upstream").iterdir())
    assert upstream == [
        "cephfs_snapshotclass.yaml",
        "cephfs_storageclass.yaml",
        "kms_vault_kms-config.yaml",
        "rbd_snapshotclass.yaml",
        "rbd_storageclass.yaml",
    ]
    assert "Apache License" in (CEPH / "LICENSE").read_text()
    readme = (CEPH / "README.md").read_text()
    assert all(name in readme for name in upstream)
    for name in upstream:
        schemas.validate_all([d for d in yaml.safe_load_all((CEPH / "upstream" / name).read_text()) if d])
