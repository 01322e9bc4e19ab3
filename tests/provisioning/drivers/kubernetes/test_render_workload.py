"""The tenant's workload in every rung's manifests: one full workload per rung (checked by ``workload_check``
first), every object validated offline and every pod restricted, secret values only in Secrets' data, the pieces
in their places (image, command, env by reference, secret files, pull credentials, datasets, scratch, checkpoint,
the VM's cloud-init, bare metal's BareMetalHost), and the same YAML on every render."""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import replace
from typing import Any

import jsonschema
import pytest
import yaml

from provisioning.domain.os_images import os_catalog
from provisioning.domain.workload_rules import DEFAULT_REGISTRIES, workload_check
from provisioning.domain.workloads import SECRET_FILES, Checkpoint, Materials, Port, SecretRef, Volume, Workload
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.render_prepull import prepull_daemonset
from provisioning.drivers.kubernetes.render_workload import DATASET_IMAGE
from provisioning.drivers.kubernetes.shapes import AllocationShape, DeviceShape, TenantShape
from tests.fakes.kubernetes import plural_of
from tests.provisioning.drivers.kubernetes.test_render import node, one, shape, uuid, whole
from tests.provisioning.drivers.kubernetes.test_render_fabric import _on_rdma
from tests.provisioning.drivers.kubernetes.test_render_jobs import gang as framework_gang
from tests.provisioning.drivers.kubernetes.test_render_slurm import SLURM
from tests.support import ROOT
from tests.support import k8s_schemas as schemas

CATALOG = os_catalog()
# Values no manifest may show outside a Secret's data (the tenant's own user data can carry one too).
ENV_SECRET = "hf_live_3b7f9e2c41d8"
FILE_SECRET = "pg-password-77aa1c"
PULL_TOKEN = "ghp_pull_5e4d3c2b1a"
DATASET_URL = "https://api.ladder.example/api/v1/assets/7/content?expires=1900000000&sig=0f1e2d3c4b5a"
CLOUD_INIT_TOKEN = "vault-token-a1b2c3d4"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO5kZXZlbG9wZXIta2V5LWZvci10ZXN0cw alice@laptop"
SECRETS = (ENV_SECRET, FILE_SECRET, PULL_TOKEN, DATASET_URL, CLOUD_INIT_TOKEN)

MATERIALS = Materials(
    secrets={"HF_TOKEN": ENV_SECRET, "PGPASSWORD": FILE_SECRET, "GHCR": f"robot:{PULL_TOKEN}"},
    pull=("ghcr.io", "robot", PULL_TOKEN),
    ssh_keys=(KEY,),
    datasets={7: DATASET_URL},
)
IMAGE = "ghcr.io/acme/trainer:1.4"
SECRET_REFS = (SecretRef("HF_TOKEN"), SecretRef("PGPASSWORD", "file"))

CONTAINER_WORKLOAD = Workload(
    image=IMAGE,
    command=("python", "-m", "trainer"),
    args=("--serve",),
    env=(("MODE", "interactive"),),
    secrets=SECRET_REFS,
    ports=(Port(8888, "http", "public"), Port(6006, "http", "tenant"), Port(5353, "udp", "none")),
    volumes=(Volume("/data/imagenet", dataset=7), Volume("/scratch", scratch_gb=100)),
    ssh_keys=(1,),
    pull_secret="GHCR",
)
JOB_WORKLOAD = Workload(
    image=IMAGE,
    command=("torchrun", "train.py"),
    env=(("EPOCHS", "90"),),
    secrets=(SecretRef("HF_TOKEN"),),
    ports=(Port(6006, "http", "public"),),
    volumes=(Volume("/data/imagenet", dataset=7),),
    checkpoint=Checkpoint(path="/ckpt", interval_s=300),
)
SERVERLESS_WORKLOAD = Workload(
    image=IMAGE,
    command=("python", "-m", "server"),
    env=(("WORKERS", "4"),),
    secrets=(SecretRef("HF_TOKEN"),),
    ports=(Port(8080, "http", "public"),),
)
CVM_WORKLOAD = Workload(
    image=IMAGE,
    command=("python", "-m", "enclave"),
    env=(("MODE", "sealed"),),
    secrets=(SecretRef("HF_TOKEN"),),
    ports=(Port(8443, "http", "tenant"),),
)
VM_WORKLOAD = Workload(
    os_image="rocky-9",
    cloud_init=(
        f"#cloud-config\npackages: [htop]\nwrite_files:\n- path: /etc/vault-token\n  content: {CLOUD_INIT_TOKEN}\n"
    ),
    ports=(Port(8888, "http", "public"),),
    ssh_keys=(1,),
)
METAL_WORKLOAD = Workload(
    os_image="ubuntu-22.04",
    cloud_init=f"#!/bin/sh\necho {CLOUD_INIT_TOKEN} > /root/vault-token\n",
    ssh_keys=(1,),
)


def with_workload(a: AllocationShape, workload: Workload) -> AllocationShape:
    workload_check(workload, rung=a.rung, registries=DEFAULT_REGISTRIES, os_images=CATALOG)
    os_image = CATALOG[workload.os_image] if workload.os_image else None
    return replace(a, workload=workload, materials=replace(MATERIALS, os_image=os_image))


CONTAINER = with_workload(shape(201, "container", "whole_gpu", whole(1, range(2)), (node(1),)), CONTAINER_WORKLOAD)
JOB = with_workload(
    shape(
        202,
        "job",
        "whole_gpu",
        tuple(d for i in range(10, 12) for d in whole(i, range(8))),
        tuple(node(i, clique="clique-b") for i in range(10, 12)),
        gang_size=2,
    ),
    JOB_WORKLOAD,
)
SERVERLESS = with_workload(
    shape(
        203,
        "serverless",
        "mig",
        tuple(
            DeviceShape(hostname="gpu-node-09", gpu_index=0, gpu_uuid=uuid(9, 0), mig_profile="1g.10gb", mig_start=s)
            for s in (0, 1)
        ),
        (node(9),),
    ),
    SERVERLESS_WORKLOAD,
)
CVM = with_workload(
    shape(
        204,
        "confidential_vm",
        "whole_gpu",
        whole(5, range(1)),
        (node(5, tee="snp"),),
        security="confidential_vm",
        attestation=("https://ladder.example/api/v1/attestation/204", "lat_credential-204"),
    ),
    CVM_WORKLOAD,
)
VM = with_workload(shape(205, "vm", "whole_gpu", whole(4, range(2)), (node(4),), security="vm"), VM_WORKLOAD)
BARE_METAL = with_workload(
    shape(206, "bare_metal", "whole_gpu", whole(20, range(8)) + whole(21, range(8)), (node(20), node(21))),
    METAL_WORKLOAD,
)
ALL = [CONTAINER, JOB, SERVERLESS, CVM, VM, BARE_METAL]


def objects(a: AllocationShape) -> list[dict[str, Any]]:
    if a.rung == "bare_metal":
        return render.bare_metal_node_patches(a) + render.bare_metal_host_objects(a)
    return render.allocation_objects(a)


def named(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in spec["containers"] if c["name"] == "worker")


def pod_of(objs: list[dict[str, Any]]) -> dict[str, Any]:
    (spec,) = [s for o in objs for s in schemas.pod_specs(o)]
    return spec


# --- every rung -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("allocation", ALL, ids=lambda a: a.rung)
def test_every_object_validates_and_every_pod_is_restricted(allocation: AllocationShape) -> None:
    objs = objects(allocation)
    schemas.validate_all(objs)
    for obj in objs:
        for spec in schemas.pod_specs(obj):
            assert schemas.restricted_violations(spec) == [], obj["kind"]
            assert spec["automountServiceAccountToken"] is False


@pytest.mark.parametrize("allocation", ALL, ids=lambda a: a.rung)
def test_secret_values_are_only_in_secrets_data(allocation: AllocationShape) -> None:
    objs = objects(allocation)
    in_secrets = " ".join(v for o in objs if o["kind"] == "Secret" for v in decoded(o).values())
    leaked = [
        (value, obj["kind"], obj["metadata"]["name"])
        for obj in objs
        if obj["kind"] != "Secret"
        for value in SECRETS
        if value in render.documents([obj]) or base64.b64encode(value.encode()).decode() in render.documents([obj])
    ]
    assert leaked == []
    for obj in objs:
        if obj["kind"] == "Secret":
            assert "stringData" not in obj
            assert not any(value in render.documents([obj]) for value in SECRETS)  # base64 only
    # A confidential VM's are released to its attested guest by the key broker: none is rendered at all.
    assert (in_secrets == "") == (allocation.rung == "confidential_vm")
    used = {ENV_SECRET} if allocation.rung in ("job", "serverless") else set()
    used |= {ENV_SECRET, FILE_SECRET, PULL_TOKEN, DATASET_URL} if allocation.rung == "container" else set()
    used |= {DATASET_URL} if allocation.rung == "job" else set()
    used |= {CLOUD_INIT_TOKEN} if allocation.rung in ("vm", "bare_metal") else set()
    for value in used:
        assert value in in_secrets, value


@pytest.mark.parametrize("allocation", ALL, ids=lambda a: a.rung)
def test_rendering_is_deterministic(allocation: AllocationShape) -> None:
    text = render.documents(objects(allocation))
    assert text == render.documents(objects(copy.deepcopy(allocation)))
    assert list(yaml.safe_load_all(text)) == objects(allocation)


def test_every_object_is_the_allocations() -> None:
    for allocation in ALL:
        for obj in objects(allocation):
            if obj["kind"] == "Node" or (obj["kind"] == "BareMetalHost"):
                continue  # the tenant's hold on a node is its taint and label, not its name
            labels = obj["metadata"]["labels"]
            assert labels["ladder.io/allocation"] == str(allocation.id), obj["kind"]
            assert labels["app.kubernetes.io/managed-by"] == "ladder"
            assert obj["metadata"]["name"].startswith(f"ldr-{allocation.id}")


# --- containers -------------------------------------------------------------------------------------------------


def test_container_runs_the_workload_with_secrets_by_reference() -> None:
    objs = objects(CONTAINER)
    kinds = [o["kind"] for o in objs]
    assert kinds[:3] == ["Secret", "Secret", "Secret"]  # before the pod that names them
    assert kinds.index("Pod") < kinds.index("Service")
    secrets = named(objs, "Secret", "ldr-201-secrets")
    assert secrets["type"] == "Opaque"
    assert decoded(secrets) == {"HF_TOKEN": ENV_SECRET, "PGPASSWORD": FILE_SECRET, "dataset-7": DATASET_URL}

    spec = one(objs, "Pod")["spec"]
    container = worker(spec)
    assert container["image"] == IMAGE
    assert container["command"] == ["python", "-m", "trainer"]
    assert container["args"] == ["--serve"]
    assert {"name": "MODE", "value": "interactive"} in container["env"]
    assert {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "ldr-201-secrets", "key": "HF_TOKEN"}},
    } in container["env"]
    assert "PGPASSWORD" not in {e["name"] for e in container["env"]}  # a file, not a variable
    files = next(v for v in spec["volumes"] if v["name"] == "secret-files")["secret"]
    assert files["secretName"] == "ldr-201-secrets"
    assert files["items"] == [{"key": "PGPASSWORD", "path": "PGPASSWORD"}]  # the dataset URL stays out of it
    assert {"name": "secret-files", "mountPath": SECRET_FILES, "readOnly": True} in container["volumeMounts"]
    ports = {(p["name"], p["containerPort"], p["protocol"]) for p in container["ports"]}
    assert ports == {("http-8888", 8888, "TCP"), ("http-6006", 6006, "TCP"), ("udp-5353", 5353, "UDP")}


def test_pull_credentials_are_a_dockerconfigjson_secret() -> None:
    objs = objects(CONTAINER)
    pull = named(objs, "Secret", "ldr-201-pull")
    assert pull["type"] == "kubernetes.io/dockerconfigjson"
    config = json.loads(decoded(pull)[".dockerconfigjson"])
    auth = config["auths"]["ghcr.io"]
    assert (auth["username"], auth["password"]) == ("robot", PULL_TOKEN)
    assert base64.b64decode(auth["auth"]).decode() == f"robot:{PULL_TOKEN}"
    assert one(objs, "Pod")["spec"]["imagePullSecrets"] == [{"name": "ldr-201-pull"}]
    hub = replace(CONTAINER, materials=replace(CONTAINER.materials, pull=("docker.io", "robot", PULL_TOKEN)))
    config = json.loads(decoded(named(objects(hub), "Secret", "ldr-201-pull"))[".dockerconfigjson"])
    assert list(config["auths"]) == ["https://index.docker.io/v1/"]


def test_a_dataset_is_downloaded_by_an_init_container_and_mounted_read_only() -> None:
    spec = one(objects(CONTAINER), "Pod")["spec"]
    (fetch,) = spec["initContainers"]
    assert fetch["image"] == DATASET_IMAGE
    assert fetch["env"] == [
        {"name": "LADDER_DATASET_URL", "valueFrom": {"secretKeyRef": {"name": "ldr-201-secrets", "key": "dataset-7"}}}
    ]
    assert "{{LADDER_DATASET_URL}}" in fetch["command"]  # curl expands it: the URL is not in its argv
    assert "/dataset/asset-7" in fetch["command"]
    assert fetch["volumeMounts"] == [{"name": "vol-0", "mountPath": "/dataset"}]
    assert fetch["securityContext"]["readOnlyRootFilesystem"] is True
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["vol-0"] == {"name": "vol-0", "emptyDir": {}}
    assert volumes["vol-1"] == {"name": "vol-1", "emptyDir": {"sizeLimit": "100Gi"}}
    mounts = worker(spec)["volumeMounts"]
    assert {"name": "vol-0", "mountPath": "/data/imagenet", "readOnly": True} in mounts
    assert {"name": "vol-1", "mountPath": "/scratch"} in mounts


def test_job_checkpoints_where_the_workload_says() -> None:
    objs = objects(JOB)
    spec = one(objs, "Job")["spec"]["template"]["spec"]
    container = worker(spec)
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["LADDER_CHECKPOINT_DIR"] == "/ckpt"
    assert env["LADDER_CHECKPOINT_INTERVAL_S"] == "300"
    assert env["EPOCHS"] == "90"
    assert {"name": "checkpoints", "mountPath": "/ckpt"} in container["volumeMounts"]
    assert container["command"] == ["torchrun", "train.py"]
    assert spec["initContainers"][0]["name"] == "fetch-0"
    # The public port reaches member 0 only, through its own Service (ldr-<id> names the gang).
    ranks = named(objs, "Service", "ldr-202")
    assert ranks["spec"]["clusterIP"] == "None"
    ports = named(objs, "Service", "ldr-202-ports")
    assert ports["spec"]["selector"] == {"ladder.io/allocation": "202", "batch.kubernetes.io/job-completion-index": "0"}
    assert named(objs, "HTTPRoute", "ldr-202-6006")["spec"]["rules"][0]["backendRefs"] == [
        {"name": "ldr-202-ports", "port": 6006}
    ]


def test_serverless_serves_the_workloads_public_port_behind_port_80() -> None:
    objs = objects(SERVERLESS)
    spec = one(objs, "Deployment")["spec"]["template"]["spec"]
    container = worker(spec)
    assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    # Ready means warm: the model server answers its health path only once the model is loaded.
    assert container["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    service = named(objs, "Service", "ldr-203")
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]
    assert spec["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "ldr-203-gpus"}]


def test_a_serverless_workload_names_its_own_warm_signal() -> None:
    assert SERVERLESS.workload is not None
    env = (*SERVERLESS.workload.env, ("LADDER_READY_PATH", "/v2/health/ready"))
    shape = replace(SERVERLESS, workload=replace(SERVERLESS.workload, env=env))
    objs = objects(shape)
    container = worker(one(objs, "Deployment")["spec"]["template"]["spec"])
    assert container["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": "http"}


def test_confidential_pod_carries_the_workload() -> None:
    objs = objects(CVM)
    pod = one(objs, "Pod")
    assert pod["spec"]["runtimeClassName"] == "kata-qemu-nvidia-gpu-snp"
    container = worker(pod["spec"])
    assert container["image"] == IMAGE
    assert container["command"] == ["python", "-m", "enclave"]
    assert named(objs, "Service", "ldr-204")["spec"]["ports"][0]["port"] == 8443
    assert not [o for o in objs if o["kind"] == "HTTPRoute"]  # exposed to the tenant, not the world


def test_without_a_workload_the_stock_image_sleeps() -> None:
    bare = replace(CONTAINER, workload=None, materials=Materials())
    _, pod = render.allocation_objects(bare)
    container = worker(pod["spec"])
    assert container["command"] == ["sleep", "infinity"]
    assert "env" not in container
    assert "initContainers" not in pod["spec"]


def test_an_unresolved_secret_fails_loudly() -> None:
    missing = replace(CONTAINER, materials=replace(MATERIALS, secrets={}))
    with pytest.raises(ValueError, match="secret HF_TOKEN is not resolved"):
        render.allocation_objects(missing)
    keyless = replace(CONTAINER, materials=replace(MATERIALS, ssh_keys=()))
    with pytest.raises(ValueError, match="SSH keys"):
        render.allocation_objects(keyless)


def test_placeholder_materials_render_without_a_value() -> None:
    hidden = replace(CONTAINER, materials=render.placeholder_materials(CONTAINER_WORKLOAD))
    objs = render.allocation_objects(hidden)
    schemas.validate_all(objs)
    text = render.documents(objs)
    assert not any(value in text for value in SECRETS)
    assert decoded(named(objs, "Secret", "ldr-201-secrets"))["HF_TOKEN"] == "<secret HF_TOKEN>"
    assert [o["metadata"]["name"] for o in objs] == [
        o["metadata"]["name"] for o in render.allocation_objects(CONTAINER)
    ]


# --- VM and bare metal ------------------------------------------------------------------------------------------


def test_vm_boots_the_catalog_disk_with_cloud_init_from_a_secret() -> None:
    objs = objects(VM)
    vm = one(objs, "VirtualMachine")
    vmi = vm["spec"]["template"]["spec"]
    assert vmi["volumes"] == [
        {"name": "rootdisk", "containerDisk": {"image": CATALOG["rocky-9"].vm_disk}},
        {"name": "cloudinitdisk", "cloudInitNoCloud": {"secretRef": {"name": "ldr-205-userdata"}}},
    ]
    assert {"name": "cloudinitdisk", "disk": {"bus": "virtio"}} in vmi["domain"]["devices"]["disks"]
    userdata = decoded(named(objs, "Secret", "ldr-205-userdata"))["userdata"]
    assert userdata.startswith("#cloud-config\n")
    config = yaml.safe_load(userdata)
    rocky = next(u for u in config["users"] if isinstance(u, dict))
    assert rocky == {"name": "rocky", "ssh_authorized_keys": [KEY]}
    assert config["packages"] == ["htop"]
    assert CLOUD_INIT_TOKEN not in json.dumps(vm)


def test_vm_without_an_os_image_boots_the_default_catalog_entry() -> None:
    plain = replace(VM, workload=replace(VM_WORKLOAD, os_image=None), materials=replace(MATERIALS, os_image=None))
    vmi = one(objects(plain), "VirtualMachine")["spec"]["template"]["spec"]
    assert vmi["volumes"][0]["containerDisk"]["image"] == CATALOG["ubuntu-24.04"].vm_disk
    assert "- name: ubuntu" in decoded(named(objects(plain), "Secret", "ldr-205-userdata"))["userdata"]


def test_bare_metal_hosts_get_the_os_image_and_user_data_through_metal3() -> None:
    objs = objects(BARE_METAL)
    assert [o["kind"] for o in objs] == ["Node", "Node", "Secret", "BareMetalHost", "BareMetalHost", "Service"]
    userdata = named(objs, "Secret", "ldr-206-userdata")
    assert userdata["metadata"]["namespace"] == render.METAL3_NAMESPACE == "metal3"
    text = decoded(userdata)["userData"]
    assert "multipart/mixed" in text  # the tenant's script, and its key in a cloud-config part beside it
    assert KEY in text
    assert CLOUD_INIT_TOKEN in text
    image = CATALOG["ubuntu-22.04"]
    for host in ("gpu-node-20", "gpu-node-21"):
        bmh = named(objs, "BareMetalHost", host)
        assert bmh["apiVersion"] == schemas.storage_version("metal3.io", "BareMetalHost")
        assert bmh["metadata"]["namespace"] == "metal3"
        assert bmh["spec"] == {
            "image": {
                "url": image.metal_url,
                "checksum": image.metal_checksum,
                "checksumType": "auto",
                "format": "qcow2",
            },
            "userData": {"name": "ldr-206-userdata", "namespace": "metal3"},
            "online": True,
        }


def test_a_sha256_checksum_is_given_as_such() -> None:
    digest = "ab" * 32
    image = replace(CATALOG["ubuntu-24.04"], metal_checksum=f"sha256:{digest}", metal_url="https://x.example/os.raw")
    host = named(
        objects(replace(BARE_METAL, materials=replace(MATERIALS, os_image=image))), "BareMetalHost", "gpu-node-20"
    )
    assert host["spec"]["image"] == {
        "url": "https://x.example/os.raw",
        "checksum": digest,
        "checksumType": "sha256",
        "format": "raw",
    }


def test_bare_metal_release_deprovisions_the_host() -> None:
    release = render.bare_metal_host_release("gpu-node-20")
    schemas.validate_all([release])
    assert release["metadata"] == {
        "name": "gpu-node-20",
        "namespace": "metal3",
        "labels": {"app.kubernetes.io/managed-by": "ladder"},
    }
    assert release["spec"] == {"online": True}  # no image, no user data: Metal3 deprovisions


def test_bare_metal_without_a_workload_stays_a_node() -> None:
    plain = replace(BARE_METAL, workload=None, materials=Materials())
    assert render.bare_metal_host_objects(plain) == []
    assert [o["kind"] for o in objects(plain)] == ["Node", "Node"]


# --- the new validators catch wrong fields ----------------------------------------------------------------------


def test_metal3_validator_catches_a_wrong_field() -> None:
    bmh = named(objects(BARE_METAL), "BareMetalHost", "gpu-node-20")
    schemas.validate_metal3(bmh)
    bad = copy.deepcopy(bmh)
    bad["spec"]["image"]["checksumType"] = "sha1"
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_metal3(bad)
    bad = copy.deepcopy(bmh)
    bad["spec"]["userDataSecret"] = bad["spec"].pop("userData")
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_metal3(bad)
    bad = copy.deepcopy(bmh)
    del bad["spec"]["online"]  # the CRD requires it
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_metal3(bad)
    bad = copy.deepcopy(bmh)
    bad["apiVersion"] = "metal3.io/v1beta1"
    with pytest.raises(schemas.ManifestError, match="does not serve"):
        schemas.validate_metal3(bad)
    bad = copy.deepcopy(bmh)
    del bad["metadata"]["namespace"]
    with pytest.raises(schemas.ManifestError, match="Namespaced"):
        schemas.validate_metal3(bad)


def test_kubevirt_validator_catches_a_wrong_cloud_init_field() -> None:
    vm = one(objects(VM), "VirtualMachine")
    bad = copy.deepcopy(vm)
    bad["spec"]["template"]["spec"]["volumes"][1]["cloudInitNoCloud"] = {"userDataSecretRef": {"name": "x"}}
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_kubevirt(bad)


# --- deploy/kustomize/tenant-rbac/rbac.yaml covers it -----------------------------------------------------------------


def _granted(role: str) -> set[tuple[str, str]]:
    documents = [
        d for d in yaml.safe_load_all((ROOT / "deploy" / "kustomize" / "tenant-rbac" / "rbac.yaml").read_text()) if d
    ]
    rules = next(d for d in documents if d["kind"] == "ClusterRole" and d["metadata"]["name"] == role)["rules"]
    return {
        (group, resource)
        for rule in rules
        if "patch" in rule["verbs"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


def _kinds(objs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(o["apiVersion"].rpartition("/")[0], plural_of(o["kind"])) for o in objs}


def test_the_rbac_lets_ladder_apply_everything_it_renders() -> None:
    """Every kind an allocation of any rung (with a full workload) renders is patchable by ladder-provisioner; the
    cluster setup's by the two roles together."""
    day_to_day = _granted("ladder-provisioner")
    rendered = set().union(*(_kinds(objects(a)) for a in ALL)) | _kinds(render.namespace_set(TenantShape("acme")))
    assert rendered - day_to_day == set()
    setup = _kinds(render.cluster_setup(["H100-SXM-80GB"]))
    assert setup - day_to_day - _granted("ladder-cluster-setup") == set()


def test_the_rbac_lets_ladder_apply_an_endpoints_keda_scaled_object() -> None:
    rendered = _kinds(render.allocation_objects(replace(SERVERLESS, autoscaler="keda")))
    assert ("keda.sh", "scaledobjects") in rendered
    assert rendered - _granted("ladder-provisioner") == set()


def test_the_rbac_lets_ladder_pull_an_idle_endpoints_image_in_advance() -> None:
    """The pre-pull DaemonSet (docs/serverless.md, "Pre-pull") is patchable and deletable by ladder-provisioner."""
    endpoint = SERVERLESS
    assert _kinds([prepull_daemonset(endpoint, ["gpu-node-07"])]) <= _granted("ladder-provisioner")


def test_the_rbac_lets_ladder_apply_every_frameworks_objects() -> None:
    """The job rung's frameworks on RDMA nodes (MPIJob, RayJob, Slinky's kinds, the fabric's
    NetworkAttachmentDefinitions) and a Slurm cluster's own namespace set are patchable by ladder-provisioner."""
    gangs = [_on_rdma(framework_gang(220, f)) for f in ("torchrun", "mpi", "ray")] + [_on_rdma(SLURM)]
    rendered = set().union(*(_kinds(render.allocation_objects(a)) for a in gangs))
    rendered |= _kinds(render.namespace_set(TenantShape("acme"), slurm=True))
    assert rendered - _granted("ladder-provisioner") == set()
