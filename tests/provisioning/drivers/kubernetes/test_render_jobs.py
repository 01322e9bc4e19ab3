"""The job rung's frameworks: an MPIJob and a RayJob for a placed gang, validated offline against the vendored
mpi-operator and KubeRay CRDs (their openAPIV3Schema, closed) and each pod template as the Pod it becomes against
Kubernetes 1.34; the engine's placement carried into every member (hosts, clique, claims naming exactly the placed
GPUs, ComputeDomain on multi-node NVLink), Kueue's admission of the whole object (suspend, queue label, topology),
Pod Security "restricted" on every pod, and the launcher's and head's environment."""

from __future__ import annotations

import copy
import re
import shlex
from dataclasses import replace
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioning.domain.workloads import Checkpoint, SecretRef, Workload
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.shapes import AllocationShape, DeviceShape, NodeShape
from tests.provisioning.drivers.kubernetes.test_render import GANG, node, pinned_hosts, shape, uuid, whole
from tests.support import k8s_schemas as schemas

IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
WORKLOAD = Workload(
    image=IMAGE,
    command=("python", "train.py"),
    args=("--epochs", "3", "--note", "two words"),
    env=(("MODEL", "llama-3-8b"),),
    secrets=(SecretRef("HF_TOKEN"), SecretRef("WANDB_KEY", "file")),
    checkpoint=Checkpoint(path="/ckpt", interval_s=60),
)
MATERIALS = render.placeholder_materials(WORKLOAD)


def gang(id: int, framework: str, hosts: int = 2, per_host: int = 8, model: str = "H100-SXM-80GB") -> AllocationShape:
    """``hosts`` members of ``per_host`` GPUs each, one clique."""
    devices = tuple(d for i in range(hosts) for d in whole(30 + i, range(per_host)))
    nodes = tuple(node(30 + i, clique="clique-c") for i in range(hosts))
    workload = replace(WORKLOAD, framework=framework)
    return shape(
        id, "job", "whole_gpu", devices, nodes, gang_size=hosts, workload=workload, materials=MATERIALS, gpu_model=model
    )


MPI = gang(201, "mpi")
RAY = gang(202, "ray")
PLACED = sorted(uuid(30 + i, g).lower() for i in range(2) for g in range(8))


def named_uuids(template: dict[str, Any]) -> list[str]:
    """The UUIDs the claim template's CEL selector names."""
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    (selector,) = request["exactly"]["selectors"]
    return sorted(re.findall(r'"(gpu-[0-9a-f-]+)"', selector["cel"]["expression"]))


def the(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objs if o["kind"] == kind]
    return found


def assert_member(template: dict[str, Any], allocation: AllocationShape, per_member: int = 8) -> None:
    """A member pod template carries the engine's placement and the checkpoint contract."""
    assert template["metadata"]["annotations"] == {"kueue.x-k8s.io/podset-required-topology": "nvidia.com/gpu.clique"}
    assert template["metadata"]["labels"]["ladder.io/allocation"] == str(allocation.id)
    assert template["metadata"]["labels"]["ladder.io/role"] == "worker"
    pod = template["spec"]
    assert pinned_hosts(pod) == sorted({d.hostname for d in allocation.devices})
    assert pod["nodeSelector"]["nvidia.com/gpu.clique"] == "clique-c"
    assert pod["resourceClaims"][0] == {"name": "gpus", "resourceClaimTemplateName": f"ldr-{allocation.id}-gpus"}
    (container,) = pod["containers"]
    assert {"name": "gpus"} in container["resources"]["claims"]
    assert {"name": "LADDER_CHECKPOINT_DIR", "value": "/ckpt"} in container["env"]
    assert {"name": "checkpoints", "mountPath": "/ckpt"} in container["volumeMounts"]


# --- MPI --------------------------------------------------------------------------------------------------------


def test_mpi_job_validates_and_carries_the_placement() -> None:
    objs = render.allocation_objects(MPI)
    schemas.validate_all(objs)
    assert [o["kind"] for o in objs] == ["Secret", "PersistentVolumeClaim", "ResourceClaimTemplate", "MPIJob"]
    job = the(objs, "MPIJob")
    schemas.validate_pod_templates(job)
    assert job["apiVersion"] == "kubeflow.org/v2beta1"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "ladder"
    spec = job["spec"]
    assert spec["runPolicy"]["suspend"] is True  # Kueue admits the whole MPIJob, launcher and workers
    assert spec["slotsPerWorker"] == 8
    assert spec["sshAuthMountPath"] == "/home/mpiuser/.ssh"
    workers = spec["mpiReplicaSpecs"]["Worker"]
    assert workers["replicas"] == 2
    assert_member(workers["template"], MPI)
    (sshd,) = workers["template"]["spec"]["containers"]
    assert sshd["command"] == ["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"]
    assert "args" not in sshd
    assert named_uuids(the(objs, "ResourceClaimTemplate")) == PLACED


def test_the_mpi_launcher_runs_mpirun_over_every_gpu_and_forwards_the_members_environment() -> None:
    job = the(render.allocation_objects(MPI), "MPIJob")
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    member = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert launcher["metadata"]["labels"]["ladder.io/role"] == "launcher"
    pod = launcher["spec"]
    assert "resourceClaims" not in pod
    assert "affinity" not in pod
    assert "nodeSelector" not in pod
    (container,) = pod["containers"]
    assert container["image"] == IMAGE
    assert container["command"] == ["mpirun"]
    args = container["args"]
    assert args[:4] == ["-np", "16", "--bind-to", "none"]
    assert args[-6:] == ["python", "train.py", "--epochs", "3", "--note", "two words"]
    forwarded = [args[i + 1] for i, arg in enumerate(args) if arg == "-x"]
    assert forwarded == [e["name"] for e in member["env"]]  # ranks start through sshd: nothing else reaches them
    assert {"LADDER_CHECKPOINT_DIR", "MODEL", "HF_TOKEN"} <= set(forwarded)
    assert container["env"] == member["env"]  # a secret's value is forwarded from the launcher's own reference
    hf = next(e for e in container["env"] if e["name"] == "HF_TOKEN")
    assert hf["valueFrom"]["secretKeyRef"] == {"name": "ldr-201-secrets", "key": "HF_TOKEN"}


def test_mpi_on_multi_node_nvlink_spans_a_compute_domain() -> None:
    gb200 = gang(203, "mpi", hosts=2, per_host=4, model="GB200")
    objs = render.allocation_objects(gb200)
    schemas.validate_all(objs)
    assert the(objs, "ComputeDomain")["spec"]["channel"]["resourceClaimTemplate"]["name"] == "ldr-203-channel"
    pod = the(objs, "MPIJob")["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert {"name": "channel", "resourceClaimTemplateName": "ldr-203-channel"} in pod["resourceClaims"]
    assert {"name": "channel"} in pod["containers"][0]["resources"]["claims"]
    args = the(objs, "MPIJob")["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"]
    assert args[:2] == ["-np", "8"]


# --- Ray --------------------------------------------------------------------------------------------------------


def test_ray_job_validates_and_carries_the_placement() -> None:
    objs = render.allocation_objects(RAY)
    schemas.validate_all(objs)
    kinds = [o["kind"] for o in objs]
    assert kinds == ["Secret", "PersistentVolumeClaim", "ResourceClaimTemplate", "NetworkPolicy", "RayJob"]
    job = the(objs, "RayJob")
    schemas.validate_pod_templates(job)
    assert job["apiVersion"] == "ray.io/v1"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "ladder"
    spec = job["spec"]
    assert spec["suspend"] is True
    assert spec["shutdownAfterJobFinishes"] is True
    assert shlex.split(spec["entrypoint"]) == ["python", "train.py", "--epochs", "3", "--note", "two words"]
    cluster = spec["rayClusterSpec"]
    assert cluster["enableInTreeAutoscaling"] is False
    (group,) = cluster["workerGroupSpecs"]
    assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == 2
    assert group["rayStartParams"] == {"num-gpus": "8"}
    assert_member(group["template"], RAY)
    (ray_worker,) = group["template"]["spec"]["containers"]
    assert "command" not in ray_worker
    assert "args" not in ray_worker
    assert named_uuids(the(objs, "ResourceClaimTemplate")) == PLACED


def test_the_ray_head_and_submitter_hold_no_gpu_and_the_head_has_the_drivers_environment() -> None:
    objs = render.allocation_objects(RAY)
    spec = the(objs, "RayJob")["spec"]
    head = spec["rayClusterSpec"]["headGroupSpec"]
    assert head["rayStartParams"]["num-gpus"] == "0"
    pod = head["template"]["spec"]
    assert head["template"]["metadata"]["labels"]["ladder.io/role"] == "head"
    assert "resourceClaims" not in pod
    assert "affinity" not in pod
    (container,) = pod["containers"]
    member = spec["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    assert container["env"] == member["env"]  # the entrypoint's driver runs on the head
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts == {"checkpoints": "/ckpt", "secret-files": "/var/run/secrets/ladder"}
    submitter = spec["submitterPodTemplate"]
    assert submitter["metadata"]["labels"]["ladder.io/role"] == "submitter"
    assert submitter["spec"]["restartPolicy"] == "Never"
    assert "command" not in submitter["spec"]["containers"][0]  # KubeRay fills in `ray job submit`
    # Only the KubeRay operator's pods, from its namespace, reach the head's dashboard from outside.
    policy = the(objs, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"] == {"ladder.io/allocation": "202", "ladder.io/role": "head"}
    (rule,) = policy["spec"]["ingress"]
    (peer,) = rule["from"]
    assert peer["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "kuberay-system"}}
    assert rule["ports"] == [{"protocol": "TCP", "port": 8265}]


# --- every framework ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("allocation", [MPI, RAY], ids=["mpi", "ray"])
def test_every_pod_of_the_framework_passes_restricted_pod_security(allocation: AllocationShape) -> None:
    specs = [s for o in render.allocation_objects(allocation) for s in schemas.pod_specs(o)]
    assert len(specs) == (2 if allocation is MPI else 3)
    for spec in specs:
        assert schemas.restricted_violations(spec) == []
        assert spec["automountServiceAccountToken"] is False
        assert spec["securityContext"]["runAsUser"] == 1000


@pytest.mark.parametrize("framework", ["mpi", "ray"])
def test_mpi_and_ray_need_a_command(framework: str) -> None:
    bare = replace(MPI, workload=replace(WORKLOAD, framework=framework, command=(), args=()))
    with pytest.raises(ValueError, match=f"an {framework} job needs the workload's command"):
        render.allocation_objects(bare)


def test_a_framework_without_a_renderer_is_refused() -> None:
    other = replace(MPI, workload=replace(WORKLOAD, framework="pbs"))
    with pytest.raises(ValueError, match="does not render the pbs framework"):
        render.allocation_objects(other)


def test_torchrun_stays_an_indexed_job() -> None:
    objs = render.allocation_objects(GANG)
    assert [o["kind"] for o in objs][-1] == "Job"
    assert objs[-1]["spec"]["template"]["metadata"]["labels"]["ladder.io/role"] == "worker"


def test_kueue_manages_each_frameworks_kind() -> None:
    frameworks = render.kueue_configuration()["integrations"]["frameworks"]
    assert {"batch/job", "kubeflow.org/mpijob", "ray.io/rayjob"} <= set(frameworks)


@settings(max_examples=25, deadline=None)
@given(
    members=st.integers(min_value=1, max_value=4),
    per_member=st.sampled_from([1, 2, 4, 8]),
    framework=st.sampled_from(["mpi", "ray"]),
)
def test_the_members_claim_exactly_the_placed_gpus_and_the_ranks_cover_them(
    members: int, per_member: int, framework: str
) -> None:
    devices = tuple(
        DeviceShape(hostname=f"gpu-node-{40 + m:02d}", gpu_index=g, gpu_uuid=uuid(40 + m, g))
        for m in range(members)
        for g in range(per_member)
    )
    nodes = tuple(NodeShape(hostname=f"gpu-node-{40 + m:02d}", nvlink_domain="clique-d") for m in range(members))
    allocation = shape(
        300,
        "job",
        "whole_gpu",
        devices,
        nodes,
        gang_size=members,
        workload=replace(WORKLOAD, framework=framework),
        materials=MATERIALS,
    )
    objs = render.allocation_objects(allocation)
    claims = the(objs, "ResourceClaimTemplate")
    assert named_uuids(claims) == sorted(d.gpu_uuid.lower() for d in devices)
    (request,) = claims["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["count"] == per_member
    if framework == "mpi":
        spec = the(objs, "MPIJob")["spec"]
        replicas = spec["mpiReplicaSpecs"]["Worker"]["replicas"]
        launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
        assert (replicas, spec["slotsPerWorker"]) == (members, per_member)
        assert launcher["args"][:2] == ["-np", str(members * per_member)]
        template = spec["mpiReplicaSpecs"]["Worker"]["template"]
    else:
        (group,) = the(objs, "RayJob")["spec"]["rayClusterSpec"]["workerGroupSpecs"]
        assert (group["replicas"], group["rayStartParams"]["num-gpus"]) == (members, str(per_member))
        template = group["template"]
    assert pinned_hosts(template["spec"]) == sorted(n.hostname for n in nodes)


@pytest.mark.parametrize(("allocation", "kind"), [(MPI, "MPIJob"), (RAY, "RayJob")], ids=["mpi", "ray"])
def test_the_validators_catch_a_wrong_field(allocation: AllocationShape, kind: str) -> None:
    """The CRD's schema is closed (an unknown field fails), and so is each pod template's."""
    job = the(render.allocation_objects(allocation), kind)
    wrong = copy.deepcopy(job)
    wrong["spec"]["runPolicy" if kind == "MPIJob" else "rayClusterSpec"]["suspended"] = True
    with pytest.raises(schemas.ManifestError, match="suspended"):
        schemas.validate_all([wrong])
    wrong = copy.deepcopy(job)
    schemas.pod_templates(wrong)[0]["spec"]["containers"][0]["securityContex"] = {}
    with pytest.raises(schemas.ManifestError, match="securityContex"):
        schemas.validate_all([wrong])
    wrong = copy.deepcopy(job)
    schemas.pod_templates(wrong)[-1]["spec"]["terminationGracePeriodSeconds"] = "soon"
    with pytest.raises(kubernetes_validate.ValidationError):
        schemas.validate_pod_templates(wrong)


SIDE = {
    "launcher": ("1", "2Gi"),
    "head": ("2", "8Gi"),
    "submitter": ("500m", "1Gi"),
}  # the table's, as Kubernetes writes


@pytest.mark.parametrize(
    ("allocation", "roles"), [(MPI, ["launcher"]), (RAY, ["head", "submitter"])], ids=["mpi", "ray"]
)
def test_the_pods_without_a_gpu_request_what_was_placed_and_go_where_it_was(
    allocation: AllocationShape, roles: list[str]
) -> None:
    side_host = node(31).hostname
    objs = render.allocation_objects(replace(allocation, side_host=side_host))
    schemas.validate_all(objs)
    schemas.validate_pod_templates(next(o for o in objs if o["kind"] in ("MPIJob", "RayJob")))
    side = {
        t["metadata"]["labels"]["ladder.io/role"]: t["spec"]
        for o in objs
        for t in schemas.pod_templates(o)
        if "resourceClaims" not in t["spec"]
    }
    assert sorted(side) == sorted(roles)
    for role, spec in side.items():
        cpu, memory = SIDE[role]
        assert pinned_hosts(spec) == [side_host]
        assert spec["containers"][0]["resources"] == {
            "requests": {"cpu": cpu, "memory": memory},
            "limits": {"memory": memory},
        }
