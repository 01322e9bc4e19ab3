"""The Kubernetes renderers: one realistic allocation per rung, the tenant namespace set and the cluster setup, each
manifest validated offline (Kubernetes 1.34 strict, Kueue CRDs, KubeVirt swagger), plus determinism, labels,
Pod Security "restricted", and negative tests proving each validator catches a wrong field."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import jsonschema
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from provisioning.domain.workloads import Materials, SecretRef, Volume, Workload
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.shapes import AllocationShape, DeviceShape, NodeShape, TenantShape
from tests.support import k8s_schemas as schemas

H100 = "H100-SXM-80GB"


def uuid(host: int, gpu: int) -> str:
    return f"GPU-{host:08x}-{gpu:04x}-4000-8000-{host * 16 + gpu:012x}"


def node(i: int, clique: str = "clique-a", tee: str | None = None) -> NodeShape:
    return NodeShape(hostname=f"gpu-node-{i:02d}", nvlink_domain=clique, cc_tee=tee)


def whole(i: int, gpus: range) -> tuple[DeviceShape, ...]:
    return tuple(DeviceShape(hostname=f"gpu-node-{i:02d}", gpu_index=g, gpu_uuid=uuid(i, g)) for g in gpus)


def shape(
    id: int,
    rung: str,
    performance: str,
    devices: tuple[DeviceShape, ...],
    nodes: tuple[NodeShape, ...],
    security: str = "container",
    **kw: Any,
) -> AllocationShape:
    return AllocationShape(
        id=id,
        name=f"alloc-{id}",
        tenant="acme",
        rung=rung,
        performance=performance,
        security=security,
        gpu_model=kw.pop("gpu_model", H100),
        devices=devices,
        nodes=nodes,
        **kw,
    )


CONTAINER = shape(101, "container", "whole_gpu", whole(1, range(2)), (node(1),))
MIG = shape(
    102,
    "container",
    "mig",
    (DeviceShape(hostname="gpu-node-02", gpu_index=3, gpu_uuid=uuid(2, 3), mig_profile="3g.40gb", mig_start=4),),
    (node(2),),
)
TIME_SLICED = shape(
    103,
    "serverless",
    "time_slicing",
    tuple(DeviceShape(hostname="gpu-node-03", gpu_index=0, gpu_uuid=uuid(3, 0), share_milli=500) for _ in range(2)),
    (node(3),),
)
VM = shape(104, "vm", "whole_gpu", whole(4, range(4)), (node(4),), security="vm")
ATTEST = "https://ladder.example/api/v1/attestation/105"
CVM_SNP = shape(
    105,
    "confidential_vm",
    "whole_gpu",
    whole(5, range(1)),
    (node(5, tee="snp"),),
    security="confidential_vm",
    attestation=(ATTEST, "lat_credential-105"),
)
CVM_TDX = shape(
    106,
    "confidential_vm",
    "whole_gpu",
    whole(6, range(8)),
    (node(6, tee="tdx"),),
    security="confidential_vm",
    attestation=(ATTEST.replace("105", "106"), "lat_credential-106"),
)
GANG = shape(
    107,
    "job",
    "whole_gpu",
    tuple(d for i in range(10, 14) for d in whole(i, range(8))),
    tuple(node(i, clique="clique-b") for i in range(10, 14)),
    gang_size=4,
)
SERVERLESS = shape(108, "serverless", "whole_gpu", whole(7, range(2)) + whole(8, range(1)), (node(7), node(8)))
SERVERLESS_MIG = shape(
    109,
    "serverless",
    "mig",
    tuple(
        DeviceShape(hostname="gpu-node-09", gpu_index=g, gpu_uuid=uuid(9, g), mig_profile="1g.10gb", mig_start=3 * g)
        for g in (0, 1)
    ),
    (node(9),),
)
BARE_METAL = shape(
    110,
    "bare_metal",
    "whole_gpu",
    whole(20, range(8)) + whole(21, range(8)),
    (node(20), node(21)),
    security="bare_metal",
)
ALLOCATIONS = [CONTAINER, MIG, TIME_SLICED, VM, CVM_SNP, CVM_TDX, GANG, SERVERLESS, SERVERLESS_MIG]
TENANT = TenantShape(slug="acme", jurisdiction="DE", gpu_quota_milli=16_000)


def by_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(objs, kind)
    assert len(found) == 1, f"{len(found)} {kind} objects"
    return found[0]


def worker(pod_spec: dict[str, Any]) -> dict[str, Any]:
    (container,) = pod_spec["containers"]
    return container


def pinned_hosts(pod_spec: dict[str, Any]) -> list[str]:
    terms = pod_spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    (term,) = terms
    (expression,) = term["matchExpressions"]
    assert (expression["key"], expression["operator"]) == ("kubernetes.io/hostname", "In")
    return expression["values"]


# --- one test per rung ---------------------------------------------------------------------------------------------


def test_container_two_whole_gpus() -> None:
    objs = render.allocation_objects(CONTAINER)
    schemas.validate_all(objs)
    pod = one(objs, "Pod")
    assert pod["metadata"]["name"] == "ldr-101"
    assert pod["metadata"]["namespace"] == "ladder-acme"
    assert pod["metadata"]["labels"]["ladder.io/tenant"] == "acme"
    assert pod["metadata"]["labels"]["ladder.io/allocation"] == "101"
    template = one(objs, "ResourceClaimTemplate")
    assert template["metadata"]["name"] == "ldr-101-gpus"
    requests = template["spec"]["spec"]["devices"]["requests"]
    assert [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in requests] == [
        ("gpu-0", "gpu.nvidia.com", 1),
        ("gpu-1", "gpu.nvidia.com", 1),
    ]
    assert requests[1]["exactly"]["selectors"] == [
        {"cel": {"expression": f'device.attributes["gpu.nvidia.com"].uuid.lowerAscii() == "{uuid(1, 1).lower()}"'}}
    ]
    assert pod["spec"]["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "ldr-101-gpus"}]
    resources = worker(pod["spec"])["resources"]
    assert resources["claims"] == [{"name": "gpus"}]
    assert "nvidia.com/gpu" not in resources["limits"]
    assert resources["requests"]["cpu"] == "16"
    assert pinned_hosts(pod["spec"]) == ["gpu-node-01"]
    assert "nodeName" not in pod["spec"]
    assert pod["spec"]["restartPolicy"] == "Always"


def test_container_mig_slice_is_a_dra_claim_on_the_placed_parent() -> None:
    objs = render.allocation_objects(MIG)
    schemas.validate_all(objs)
    template, pod = objs
    assert (template["apiVersion"], template["kind"]) == ("resource.k8s.io/v1", "ResourceClaimTemplate")
    assert template["metadata"]["name"] == "ldr-102-gpus"
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "mig.nvidia.com"
    expressions = [s["cel"]["expression"] for s in request["exactly"]["selectors"]]
    capacity = 'device.capacity["gpu.nvidia.com"]'
    assert expressions == [
        'device.attributes["gpu.nvidia.com"].profile == "3g.40gb"',
        f'device.attributes["gpu.nvidia.com"].parentUUID.lowerAscii() == "{uuid(2, 3).lower()}"'
        f' && "memorySlice4" in {capacity} && !("memorySlice3" in {capacity})',
    ]
    assert pod["spec"]["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "ldr-102-gpus"}]
    resources = worker(pod["spec"])["resources"]
    assert resources["claims"] == [{"name": "gpus"}]
    assert "nvidia.com/gpu" not in resources["limits"]
    assert pinned_hosts(pod["spec"]) == ["gpu-node-02"]


def test_serverless_time_slicing_names_the_tenants_claim_for_its_gpu() -> None:
    objs = render.allocation_objects(TIME_SLICED)
    schemas.validate_all(objs)
    assert not by_kind(objs, "ResourceClaimTemplate")
    (claim,) = render.share_claims(TIME_SLICED)
    schemas.validate_all([claim])
    name = f"ladder-share-{uuid(3, 0).lower()}"
    assert (claim["kind"], claim["metadata"]["name"], claim["metadata"]["namespace"]) == (
        "ResourceClaim",
        name,
        "ladder-acme",
    )
    assert "ladder.io/allocation" not in claim["metadata"]["labels"]  # the tenant's, outliving each allocation
    (config,) = claim["spec"]["devices"]["config"]
    assert config["opaque"]["parameters"]["sharing"] == {
        "strategy": "TimeSlicing",
        "timeSlicingConfig": {"interval": "Default"},
    }
    deployment = one(objs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpus", "resourceClaimName": name}]
    container = worker(pod)
    assert container["resources"]["claims"] == [{"name": "gpus"}]
    assert not [k for k in container["resources"]["limits"] if k.startswith("nvidia.com/")]
    assert {"name": "LADDER_GPU_SHARE_MILLI", "value": "500"} in container["env"]
    assert one(objs, "HorizontalPodAutoscaler")["spec"]["maxReplicas"] == 1  # two shares: one kept for a rollout


def test_vm_passes_four_gpus_through() -> None:
    objs = render.allocation_objects(VM)
    schemas.validate_all(objs)
    vm = one(objs, "VirtualMachine")
    assert vm["apiVersion"] == "kubevirt.io/v1"
    assert vm["spec"]["runStrategy"] == "Always"
    vmi = vm["spec"]["template"]["spec"]
    assert vmi["domain"]["devices"]["gpus"] == [
        {"name": f"gpu{i}", "claimName": "gpus", "requestName": f"gpu-{i}"} for i in range(4)
    ]
    assert vmi["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "ldr-104-gpus"}]
    requests = one(objs, "ResourceClaimTemplate")["spec"]["spec"]["devices"]["requests"]
    assert {r["exactly"]["deviceClassName"] for r in requests} == {"vfio.gpu.nvidia.com"}
    assert [r["name"] for r in requests] == [f"gpu-{i}" for i in range(4)]
    assert vmi["nodeSelector"] == {"kubernetes.io/hostname": "gpu-node-04"}
    assert vmi["domain"]["cpu"]["cores"] == 32
    assert vmi["domain"]["resources"]["requests"]["memory"] == "640Gi"
    assert vmi["volumes"] == [{"name": "rootdisk", "containerDisk": {"image": render.VM_IMAGE}}]
    assert vm["spec"]["template"]["metadata"]["labels"]["ladder.io/allocation"] == "104"


@pytest.mark.parametrize(
    ("allocation", "runtime", "gpus"),
    [(CVM_SNP, "kata-qemu-nvidia-gpu-snp", "1"), (CVM_TDX, "kata-qemu-nvidia-gpu-tdx", "8")],
)
def test_confidential_vm_is_a_kata_pod_for_the_hosts_tee(allocation: AllocationShape, runtime: str, gpus: str) -> None:
    objs = render.allocation_objects(allocation)
    schemas.validate_all(objs)
    pod = one(objs, "Pod")
    assert pod["spec"]["runtimeClassName"] == runtime
    limits = worker(pod["spec"])["resources"]["limits"]
    assert not [k for k in limits if k.startswith("nvidia.com/")]
    requests = one(objs, "ResourceClaimTemplate")["spec"]["spec"]["devices"]["requests"]
    assert len(requests) == int(gpus)
    assert {r["exactly"]["deviceClassName"] for r in requests} == {"vfio.gpu.nvidia.com"}
    assert pod["spec"]["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": f"ldr-{allocation.id}-gpus"}]
    assert "cpu" in limits
    assert "memory" in limits
    host = allocation.devices[0].hostname
    assert pod["spec"]["nodeSelector"] == {"nvidia.com/cc.mode": "on", "kubernetes.io/hostname": host}


def test_a_confidential_vm_renders_no_secret_only_its_way_to_attest() -> None:
    """The key broker releases the workload's secrets and dataset links to the attested guest: none of them is in
    the cluster, and nothing in the pod refers to a Secret."""
    workload = Workload(
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        secrets=(SecretRef("HF_TOKEN"), SecretRef("TLS_KEY", as_="file")),
        volumes=(Volume("/data", dataset=7),),
    )
    materials = Materials(secrets={}, datasets={})
    objs = render.allocation_objects(replace(CVM_SNP, workload=workload, materials=materials))
    schemas.validate_all(objs)
    assert [o["kind"] for o in objs if o["kind"] == "Secret"] == []
    pod = one(objs, "Pod")
    assert "secretKeyRef" not in str(pod)
    assert "secretName" not in str(pod)
    assert "initContainers" not in pod["spec"]  # no dataset download: the guest fetches it once released
    env = {e["name"]: e.get("value") for e in worker(pod["spec"])["env"]}
    assert env["LADDER_ATTESTATION_URL"] == ATTEST
    assert env["LADDER_ATTESTATION_CREDENTIAL"] == "lat_credential-105"
    assert {"name": "vol-0", "emptyDir": {}} in pod["spec"]["volumes"]


def test_confidential_vm_needs_a_cc_host() -> None:
    plain = shape(111, "confidential_vm", "whole_gpu", whole(5, range(1)), (node(5),), security="confidential_vm")
    with pytest.raises(ValueError, match="confidential-computing"):
        render.allocation_objects(plain)


def test_gang_job_of_four_members_by_eight_gpus() -> None:
    objs = render.allocation_objects(GANG)
    schemas.validate_all(objs)
    assert [o["kind"] for o in objs] == ["PersistentVolumeClaim", "Service", "ResourceClaimTemplate", "Job"]
    pvc, service, template, job = objs
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert (request["exactly"]["deviceClassName"], request["exactly"]["count"]) == ("gpu.nvidia.com", 8)
    assert pvc["metadata"]["name"] == "ldr-107-checkpoints"
    assert service["spec"]["clusterIP"] == "None"
    spec = job["spec"]
    assert spec["parallelism"] == spec["completions"] == 4
    assert spec["completionMode"] == "Indexed"
    assert spec["suspend"] is True
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "ladder"
    template = spec["template"]
    assert template["metadata"]["annotations"] == {"kueue.x-k8s.io/podset-required-topology": "nvidia.com/gpu.clique"}
    pod = template["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["subdomain"] == "ldr-107"
    container = worker(pod)
    assert container["resources"]["claims"] == [{"name": "gpus"}]
    assert pod["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "ldr-107-gpus"}]
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    assert {"name": "LADDER_CHECKPOINT_DIR", "value": "/checkpoints"} in container["env"]
    assert container["volumeMounts"] == [{"name": "checkpoints", "mountPath": "/checkpoints"}]
    assert pod["volumes"] == [{"name": "checkpoints", "persistentVolumeClaim": {"claimName": "ldr-107-checkpoints"}}]
    assert pinned_hosts(pod) == [f"gpu-node-{i}" for i in range(10, 14)]
    assert pod["nodeSelector"] == {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.clique": "clique-b",
    }
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[0] == {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    assert rules[1]["action"] == "Ignore"
    assert rules[1]["onExitCodes"]["values"] == [render.RESTART_FROM_CHECKPOINT]
    assert spec["backoffLimit"] == 4


def test_gang_must_split_evenly() -> None:
    uneven = shape(112, "job", "whole_gpu", whole(10, range(6)), (node(10),), gang_size=4)
    with pytest.raises(ValueError, match="equal members"):
        render.allocation_objects(uneven)


def test_serverless_whole_gpu() -> None:
    objs = render.allocation_objects(SERVERLESS)
    schemas.validate_all(objs)
    kinds = [
        "ResourceClaimTemplate",
        "Deployment",
        "HorizontalPodAutoscaler",
        "Service",
        "HTTPRoute",
        "BackendTrafficPolicy",
        "NetworkPolicy",
    ]
    assert [o["kind"] for o in objs] == kinds
    template, deployment, hpa, service, route, _calls, ingress = objs
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["count"] == 1  # one of the three placed GPUs per replica
    assert "replicas" not in deployment["spec"]  # the HPA and the driver own the scale
    pod = deployment["spec"]["template"]["spec"]
    container = worker(pod)
    assert container["resources"]["claims"] == [{"name": "gpus"}]
    probe = container["readinessProbe"]
    assert probe["httpGet"]["path"] == "/ready"
    assert probe["initialDelaySeconds"] > 0
    assert probe["periodSeconds"] > 0
    assert pinned_hosts(pod) == ["gpu-node-07", "gpu-node-08"]
    assert service["spec"]["selector"] == {"ladder.io/allocation": "108"}
    # Three placed GPUs serve up to two replicas: the third is the rollout's surge replica's, so a rollout at
    # full scale never takes a serving replica down first; the old one drains its streams before it goes.
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 2)
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    assert container["lifecycle"] == {"preStop": {"sleep": {"seconds": render.PRE_STOP_SECONDS}}}
    assert pod["terminationGracePeriodSeconds"] == render.PRE_STOP_SECONDS + render.STREAM_GRACE_SECONDS
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "External"
    assert metric["external"]["metric"] == {
        "name": "ladder_queue_depth",
        "selector": {"matchLabels": {"ladder.io/allocation": "108"}},
    }
    assert metric["external"]["target"]["type"] == "AverageValue"
    assert ingress["spec"]["podSelector"] == {"matchLabels": {"ladder.io/allocation": "108"}}
    assert route["spec"]["hostnames"] == ["ldr-108.ladder.localhost"]  # the endpoint, even without a workload


def test_serverless_mig_replicas_share_one_claim_template_over_the_placed_gpus() -> None:
    objs = render.allocation_objects(SERVERLESS_MIG)
    schemas.validate_all(objs)
    template = one(objs, "ResourceClaimTemplate")
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    placements = request["exactly"]["selectors"][1]["cel"]["expression"]
    assert placements.count(" || ") == 1  # either placed device, one per replica
    assert f'"{uuid(9, 0).lower()}" && "memorySlice0" in' in placements
    assert f'"{uuid(9, 1).lower()}" && "memorySlice3" in' in placements
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "ldr-109-gpus"}]


def test_bare_metal_node_patches_and_sanitize_job() -> None:
    assert render.allocation_objects(BARE_METAL) == []
    patches = render.bare_metal_node_patches(BARE_METAL)
    schemas.validate_all(patches)
    assert [p["metadata"]["name"] for p in patches] == ["gpu-node-20", "gpu-node-21"]
    for patch in patches:
        assert patch["metadata"]["labels"]["ladder.io/dedicated"] == "acme"
        assert patch["spec"]["taints"] == [{"key": "ladder.io/dedicated", "value": "acme", "effect": "NoSchedule"}]

    # The node's other taints survive (spec.taints is an atomic list); a stale Ladder taint is replaced.
    gpu_taint = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
    stale = {"key": "ladder.io/dedicated", "value": "old", "effect": "NoSchedule"}
    kept = render.bare_metal_node_patches(BARE_METAL, {"gpu-node-20": [gpu_taint, stale]})
    assert kept[0]["spec"]["taints"] == [gpu_taint, patches[0]["spec"]["taints"][0]]
    release = render.node_release("gpu-node-20", kept[0]["spec"]["taints"])
    schemas.validate_all([release])
    assert release["spec"]["taints"] == [gpu_taint]
    assert "labels" not in release["metadata"]

    job = render.sanitize_job("gpu-node-20", "acme")
    schemas.validate_all([job])
    assert job["metadata"]["namespace"] == "ladder-system"
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/hostname": "gpu-node-20"}
    assert {"key": "ladder.io/dedicated", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    # Privileged on purpose, which is why ladder-system is not a restricted namespace.
    assert "sanitize: privileged" in schemas.restricted_violations(pod)
    system = one(render.cluster_setup([H100]), "Namespace")
    assert system["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    # The driver looks the Job up without the tenant.
    assert render.sanitize_job("gpu-node-20", "")["metadata"]["name"] == job["metadata"]["name"]


def test_sanitize_job_name_of_a_long_fqdn() -> None:
    long_host = "gpu-node-0042.rack-17.hall-b.fra1.example-gpu-cloud.internal"
    job = render.sanitize_job(long_host, "acme")
    schemas.validate_all([job])
    assert len(job["metadata"]["name"]) <= 52
    assert job["metadata"]["name"] != render.sanitize_job(long_host + "x", "acme")["metadata"]["name"]


def test_a_rung_never_gets_an_axis_it_does_not_offer() -> None:
    with pytest.raises(ValueError, match="vm rung does not offer mps"):
        render.allocation_objects(shape(113, "vm", "mps", whole(4, range(1)), (node(4),)))


# --- namespace set and cluster setup -------------------------------------------------------------------------------


def test_namespace_set_with_quota_and_jurisdiction() -> None:
    objs = render.namespace_set(TENANT)
    schemas.validate_all(objs)
    assert [o["kind"] for o in objs] == [
        "Namespace",
        "ResourceQuota",
        "LimitRange",
        "NetworkPolicy",
        "NetworkPolicy",
        "NetworkPolicy",
        "LocalQueue",
    ]
    labels = one(objs, "Namespace")["metadata"]["labels"]
    assert labels["ladder.io/tenant"] == "acme"
    assert labels["ladder.io/jurisdiction"] == "DE"
    assert labels["app.kubernetes.io/managed-by"] == "ladder"
    for mode in ("enforce", "warn", "audit"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
    assert labels["pod-security.kubernetes.io/enforce-version"] == "latest"
    assert one(objs, "ResourceQuota")["spec"]["hard"] == {
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "19",  # 16 whole GPUs, one shared GPU per soft mode
        "vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "16",
        "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "112",
        "requests.nvidia.com/gpu": "16",
        "requests.nvidia.com/pgpu": "16",
        "count/resourceclaims.resource.k8s.io": "163",  # 19 + 16 + 112 devices, 16 IMEX channels
        "pods": "307",  # a pod per claim, 48 MPS clients on each of 3 shared GPUs
        # No storage quota: its volumes are unbounded, so the namespace's storage is too.
    }
    policies = {p["metadata"]["name"]: p["spec"] for p in by_kind(objs, "NetworkPolicy")}
    assert policies["default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    (dns,) = policies["allow-dns"]["egress"]
    assert {(p["protocol"], p["port"]) for p in dns["ports"]} == {("UDP", 53), ("TCP", 53)}
    assert dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
    assert policies["allow-same-namespace"]["ingress"] == [{"from": [{"podSelector": {}}]}]
    assert policies["allow-same-namespace"]["egress"] == [{"to": [{"podSelector": {}}]}]
    queue = one(objs, "LocalQueue")
    assert queue["apiVersion"] == schemas.kueue_storage_version("LocalQueue")
    assert (queue["metadata"]["name"], queue["spec"]) == ("ladder", {"clusterQueue": "ladder-gpu"})


def test_namespace_set_without_quota_or_jurisdiction() -> None:
    objs = render.namespace_set(TenantShape(slug="solo"))
    schemas.validate_all(objs)
    assert not by_kind(objs, "ResourceQuota")
    assert "ladder.io/jurisdiction" not in one(objs, "Namespace")["metadata"]["labels"]
    assert {o["metadata"].get("namespace") for o in objs[1:]} == {"ladder-solo"}


def test_fractional_quota_still_admits_mig_slices() -> None:
    hard = one(render.namespace_set(TenantShape(slug="small", gpu_quota_milli=1500)), "ResourceQuota")["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu"] == "1"
    assert hard["mig.nvidia.com.deviceclass.resource.k8s.io/devices"] == "10"


def test_cluster_setup() -> None:
    objs = render.cluster_setup([H100, "B200", H100], gpus_per_model={H100: 64})
    schemas.validate_all(objs)
    assert [o["kind"] for o in objs] == [
        "Namespace",
        "Topology",
        "ResourceFlavor",
        "ResourceFlavor",
        "ClusterQueue",
        "WorkloadPriorityClass",
        "WorkloadPriorityClass",
        "WorkloadPriorityClass",
        "RuntimeClass",
        "RuntimeClass",
        "Gateway",
        "SecurityPolicy",
        "ReferenceGrant",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Service",
    ]
    for obj in objs:
        if obj["apiVersion"].startswith("kueue.x-k8s.io/"):
            assert obj["apiVersion"] == schemas.kueue_storage_version(obj["kind"])
    levels = [level["nodeLabel"] for level in one(objs, "Topology")["spec"]["levels"]]
    assert levels == ["nvidia.com/gpu.clique", "kubernetes.io/hostname"]  # CRD rule: hostname is the lowest level
    flavors = {f["metadata"]["name"]: f["spec"] for f in by_kind(objs, "ResourceFlavor")}
    assert flavors["ladder-h100-sxm-80gb"] == {
        "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "topologyName": "ladder-gpu",
    }
    queue = one(objs, "ClusterQueue")
    assert queue["metadata"]["name"] == "ladder-gpu"
    assert queue["spec"]["namespaceSelector"] == {"matchLabels": {"app.kubernetes.io/managed-by": "ladder"}}
    (group,) = queue["spec"]["resourceGroups"]
    assert "nvidia.com/gpu" in group["coveredResources"]
    assert {f["name"] for f in group["flavors"]} == set(flavors)
    for flavor in group["flavors"]:  # CRD rule: each flavor lists the covered resources, in order
        assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]
    assert queue["spec"]["preemption"]["withinClusterQueue"] == "LowerPriority"
    priorities = {p["metadata"]["name"]: p["value"] for p in by_kind(objs, "WorkloadPriorityClass")}
    assert priorities == {"ladder-on-demand": 1000, "ladder-spot": 100, "ladder-reserved": 1000}
    h100 = next(f for f in group["flavors"] if f["name"] == "ladder-h100-sxm-80gb")
    assert {r["name"]: r["nominalQuota"] for r in h100["resources"]}["nvidia.com/gpu"] == "64"
    runtimes = {r["metadata"]["name"]: r for r in by_kind(objs, "RuntimeClass")}
    assert set(runtimes) == {"kata-qemu-nvidia-gpu-snp", "kata-qemu-nvidia-gpu-tdx"}
    for name, runtime in runtimes.items():
        assert runtime["handler"] == name
        assert runtime["scheduling"] == {"nodeSelector": {"nvidia.com/cc.mode": "on"}}
    with pytest.raises(ValueError, match="unknown GPU models"):
        render.cluster_setup(["H900"])


# --- properties of everything rendered ----------------------------------------------------------------------------


def everything() -> list[dict[str, Any]]:
    objs = render.namespace_set(TENANT) + render.cluster_setup([H100])
    for allocation in ALLOCATIONS:
        objs += render.allocation_objects(allocation)
    return objs + render.bare_metal_node_patches(BARE_METAL) + [render.sanitize_job("gpu-node-20", "acme")]


def test_documents_are_deterministic_yaml() -> None:
    text = render.documents(everything())
    assert text == render.documents(everything())
    assert text.startswith("---\n")
    assert text.count("\n---\n") == len(everything()) - 1
    assert list(yaml.safe_load_all(text)) == everything()
    first = text.split("\n---\n")[0].splitlines()
    assert first[1:3] == ["apiVersion: v1", "kind: Namespace"]  # sorted keys


def test_every_object_is_labelled() -> None:
    for obj in everything():
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "ladder", obj["kind"]
    for allocation in ALLOCATIONS:
        for obj in render.allocation_objects(allocation):
            labels = obj["metadata"]["labels"]
            assert labels["ladder.io/tenant"] == "acme", obj["kind"]
            assert labels["ladder.io/allocation"] == str(allocation.id), obj["kind"]
            assert obj["metadata"]["name"].startswith(f"ldr-{allocation.id}")
            for spec in schemas.pod_specs(obj):
                template_labels = obj["spec"]["template"]["metadata"]["labels"] if obj["kind"] != "Pod" else labels
                assert template_labels["ladder.io/allocation"] == str(allocation.id)
                assert spec["automountServiceAccountToken"] is False


def test_extra_labels_never_override_ladders() -> None:
    labelled = shape(
        114,
        "container",
        "whole_gpu",
        whole(1, range(1)),
        (node(1),),
        extra_labels={"team": "vision", "ladder.io/tenant": "someone-else"},
    )
    _, pod = render.allocation_objects(labelled)
    assert pod["metadata"]["labels"]["team"] == "vision"
    assert pod["metadata"]["labels"]["ladder.io/tenant"] == "acme"


def test_every_tenant_pod_passes_restricted_pod_security() -> None:
    checked = 0
    for allocation in ALLOCATIONS:
        for obj in render.allocation_objects(allocation):
            for spec in schemas.pod_specs(obj):
                assert schemas.restricted_violations(spec) == [], (allocation.rung, obj["kind"])
                pod_ctx = spec["securityContext"]
                assert pod_ctx["runAsNonRoot"] is True
                assert pod_ctx["seccompProfile"] == {"type": "RuntimeDefault"}
                for container in spec["containers"]:
                    ctx = container["securityContext"]
                    assert ctx["allowPrivilegeEscalation"] is False
                    assert ctx["capabilities"] == {"drop": ["ALL"]}
                    assert ctx["runAsNonRoot"] is True
                    assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}
                checked += 1
    assert checked == 8  # every rung with a pod (the VM's launcher pod is KubeVirt's)


# --- the validators catch wrong fields -----------------------------------------------------------------------------


def test_core_validator_catches_a_wrong_field() -> None:
    _, pod = render.allocation_objects(CONTAINER)
    bad = copy.deepcopy(pod)
    bad["spec"]["containers"][0]["resource"] = bad["spec"]["containers"][0].pop("resources")
    with pytest.raises(kubernetes_validate.ValidationError):
        schemas.validate_core(bad)
    # The pre-v1 DRA shape (deviceClassName directly on the request) is refused by resource.k8s.io/v1.
    template = copy.deepcopy(render.allocation_objects(MIG)[0])
    request = template["spec"]["spec"]["devices"]["requests"][0]
    request.update(request.pop("exactly"))
    with pytest.raises(kubernetes_validate.ValidationError):
        schemas.validate_core(template)


def test_kueue_validator_catches_a_wrong_field_and_version() -> None:
    queue = one(render.cluster_setup([H100]), "ClusterQueue")
    bad = copy.deepcopy(queue)
    bad["spec"]["cohort"] = "ladder"  # v1beta1's field; v1beta2 calls it cohortName
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_kueue(bad)
    flavor = copy.deepcopy(one(render.cluster_setup([H100]), "ResourceFlavor"))
    flavor["spec"]["nodeLabel"] = flavor["spec"].pop("nodeLabels")
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_kueue(flavor)
    local = copy.deepcopy(one(render.namespace_set(TENANT), "LocalQueue"))
    local["apiVersion"] = "kueue.x-k8s.io/v1alpha1"
    with pytest.raises(schemas.ManifestError, match="does not serve"):
        schemas.validate_kueue(local)


def test_kubevirt_validator_catches_a_wrong_field() -> None:
    vm = one(render.allocation_objects(VM), "VirtualMachine")
    bad = copy.deepcopy(vm)
    devices = bad["spec"]["template"]["spec"]["domain"]["devices"]
    devices["gpu"] = devices.pop("gpus")
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_kubevirt(bad)
    bad = copy.deepcopy(vm)
    bad["spec"]["template"]["spec"]["domain"]["devices"]["gpus"][0]["device"] = "nvidia.com/H100"
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_kubevirt(bad)


def test_metadata_and_pod_security_checks_catch_mistakes() -> None:
    _, pod = render.allocation_objects(CONTAINER)
    bad = copy.deepcopy(pod)
    bad["metadata"]["labels"]["ladder.io/allocation"] = 101
    with pytest.raises(schemas.ManifestError, match="invalid value"):
        schemas.check_metadata(bad)
    spec = copy.deepcopy(pod["spec"])
    spec["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
    spec["volumes"] = [{"name": "host", "hostPath": {"path": "/"}}]
    assert len(schemas.restricted_violations(spec)) == 2


def test_the_renderers_are_pure() -> None:
    """No Django and no I/O in the render modules: ``k8s_render`` and the tests build shapes by hand."""
    import ast
    from pathlib import Path

    package = Path(render.__file__).parent
    for name in (
        *("render.py", "render_workload.py", "render_access.py", "render_metal.py", "manifest.py", "shapes.py"),
        *("render_fabric.py", "../../domain/fabric.py"),
    ):
        tree = ast.parse((package / name).read_text())
        imported = {
            node.module if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        }
        assert not {m for m in imported if m and m.split(".")[0] in ("django", "kubernetes", "requests")}, name
