"""LADDER_PROVISIONER=kubernetes against the fake API server (tests/fakes/kubernetes.py), through the official client:
clusters registered with sealed credentials, every rung provisioned, observed and released, objects deleted
out of band put back, an unreachable cluster losing nothing, bare metal sanitized, nodes imported and diagnosed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from compliance.services.secrets import secret_create
from core.models import AuditEvent
from lifecycle.services.customers import allocation_request
from provisioning.domain.attestation_evidence import GuestKeys, b64e, open_sealed, sign
from provisioning.domain.states import AllocationState as S
from provisioning.domain.workloads import SecretRef, Workload
from provisioning.drivers.base import allocations_reconcile
from provisioning.drivers.kubernetes.client import ClusterUnavailable
from provisioning.drivers.kubernetes.credentials import CredentialsError, unseal
from provisioning.drivers.kubernetes.driver import KubernetesProvisioner
from provisioning.models import Allocation, Attestation, Cluster, Node, NodeState
from provisioning.services.faults import node_failed
from provisioning.services.fleet import node_attestation_key_set
from provisioning.services.placing import AllocationSpec
from provisioning.services.stopping import allocation_stop
from tests.fakes.kubernetes import K8sServer
from tests.support import K8S_TOKEN, SYSTEM, assert_problem
from tests.support.billing import load_fleet
from tests.support.kubernetes import H100, H200, enrolled, live, place, state

SECRET_VALUE = "hf_confidential-token-5f2c9a"


@pytest.fixture
def fleet(k8s_fleet: K8sServer) -> K8sServer:
    return k8s_fleet


def workload(server: K8sServer, allocation: Allocation, kind: str) -> dict[str, Any] | None:
    found = [o for o in server.objects(kind=kind) if o["metadata"]["name"] == f"ldr-{allocation.pk}"]
    return found[0] if found else None


def pod_ready(server: K8sServer, allocation: Allocation, **annotations: str) -> None:
    ns = f"ladder-{allocation.tenant.slug}"
    if annotations:
        pod = live(server, "v1", "Pod", f"ldr-{allocation.pk}", ns)
        pod["metadata"].setdefault("annotations", {}).update(annotations)
        server.put_object(pod)
    server.set_status(
        "v1",
        "pods",
        f"ldr-{allocation.pk}",
        ns,
        {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    )


def test_credentials_are_sealed_and_bound_to_the_cluster(fleet: K8sServer) -> None:
    cluster = Cluster.objects.get(name="k8s-eu-west-1a")
    assert K8S_TOKEN not in cluster.credentials
    assert unseal(cluster.credentials, cluster=cluster.name) == {"token": K8S_TOKEN}
    with pytest.raises(CredentialsError):
        unseal(cluster.credentials, cluster="k8s-us-east-1a")  # moved to another cluster's row: does not open


def test_a_container_runs_and_is_released(fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=2)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    assert state(allocation) == S.PROVISIONING
    ns = "ladder-acme"
    assert (
        live(fleet, "v1", "Namespace", ns)["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    )
    assert {p["metadata"]["name"] for p in fleet.objects(kind="NetworkPolicy", namespace=ns)} >= {"default-deny"}
    pod = workload(fleet, allocation, "Pod")
    assert pod is not None
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources["claims"] == [{"name": "gpus"}]
    assert "nvidia.com/gpu" not in resources["limits"]
    template = live(fleet, "resource.k8s.io/v1", "ResourceClaimTemplate", f"ldr-{allocation.pk}-gpus", ns)
    assert len(template["spec"]["spec"]["devices"]["requests"]) == 2  # one request per placed GPU
    pod_ready(fleet, allocation)
    driver.status(allocation.pk)
    assert state(allocation) == S.RUNNING
    allocation_stop(allocation=allocation, actor=SYSTEM)
    driver.release(allocation.pk)
    assert state(allocation) == S.STOPPING  # foreground deletion still in progress
    fleet.tick()
    driver.status(allocation.pk)
    assert state(allocation) == S.STOPPED
    assert workload(fleet, allocation, "Pod") is None


def test_applying_twice_changes_nothing(fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=1)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    before = {(o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"] for o in fleet.objects()}
    driver.status(allocation.pk)  # pending pod: nothing to change
    driver.provision(allocation.pk)  # a retried task
    after = {(o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"] for o in fleet.objects()}
    assert before == after


def test_an_object_deleted_out_of_band_is_put_back(fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=1)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    pod_ready(fleet, allocation)
    driver.status(allocation.pk)
    assert state(allocation) == S.RUNNING
    fleet.delete_object("v1", "Pod", f"ldr-{allocation.pk}", "ladder-acme")
    driver.status(allocation.pk)
    assert workload(fleet, allocation, "Pod") is not None
    assert state(allocation) == S.RUNNING


def test_a_failed_pod_fails_the_allocation(fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=1)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    fleet.set_status("v1", "pods", f"ldr-{allocation.pk}", "ladder-acme", {"phase": "Failed", "message": "OOMKilled"})
    driver.status(allocation.pk)
    assert state(allocation) == S.FAILED
    assert "OOMKilled" in allocation.failure_reason


def test_an_unreachable_cluster_loses_nothing(fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=1)
    driver = KubernetesProvisioner()
    fleet.down = True
    with pytest.raises(ClusterUnavailable):
        driver.provision(allocation.pk)
    assert state(allocation) == S.PROVISIONING  # what was decided stands; nothing reached the cluster
    with pytest.raises(ClusterUnavailable):
        allocations_reconcile()
    fleet.down = False
    allocations_reconcile()  # the reconcile finds the pod missing and applies it
    assert workload(fleet, allocation, "Pod") is not None
    pod_ready(fleet, allocation)
    allocations_reconcile()
    assert state(allocation) == S.RUNNING


def test_a_mig_slice_claims_its_profile_on_the_placed_gpu(fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", mig_profile="3g.40gb")
    KubernetesProvisioner().provision(allocation.pk)
    device = allocation.devices.get()
    [template] = fleet.objects(kind="ResourceClaimTemplate", namespace="ladder-acme")
    text = json.dumps(template)
    assert "3g.40gb" in text
    assert device.gpu_uuid.lower() in text
    assert device.mig_start is not None
    assert f"memorySlice{device.mig_start}" in text  # the placed start, not any slice of the profile
    assert "mig.nvidia.com" in text
    pod = workload(fleet, allocation, "Pod")
    assert pod is not None
    assert pod["spec"]["resourceClaims"]


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ({"rung": "vm", "gpus": 4}, "VirtualMachine"),
        ({"rung": "serverless", "gpus": 1}, "Deployment"),
        ({"rung": "job", "gpus": 8, "gang_size": 2, "topology": "nvlink"}, "Job"),
    ],
)
def test_each_rung_renders_its_workload(fleet: K8sServer, acme: Any, spec: dict[str, Any], kind: str) -> None:
    allocation = place(acme, **spec)
    KubernetesProvisioner().provision(allocation.pk)
    found = workload(fleet, allocation, kind)
    assert found is not None, [o["kind"] for o in fleet.objects(namespace="ladder-acme")]
    assert found["metadata"]["labels"]["ladder.io/allocation"] == str(allocation.pk)
    if kind == "Job":
        assert found["spec"]["parallelism"] == found["spec"]["completions"] == 2


def test_a_gang_runs_when_every_member_is_ready(fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="job", gpus=8, gang_size=2, topology="nvlink")
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    fleet.set_status("batch/v1", "jobs", f"ldr-{allocation.pk}", "ladder-acme", {"active": 2, "ready": 1})
    driver.status(allocation.pk)
    assert state(allocation) == S.PROVISIONING
    fleet.set_status("batch/v1", "jobs", f"ldr-{allocation.pk}", "ladder-acme", {"active": 2, "ready": 2})
    driver.status(allocation.pk)
    assert state(allocation) == S.RUNNING
    fleet.set_status(
        "batch/v1",
        "jobs",
        f"ldr-{allocation.pk}",
        "ladder-acme",
        {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 2},
    )
    driver.status(allocation.pk)
    assert state(allocation) in (S.STOPPING, S.STOPPED)


@pytest.fixture
def sovereign(acme: Any) -> Any:
    acme.residency_jurisdictions = ["EU"]
    acme.sovereign = True
    acme.save()
    return acme


def test_a_confidential_vm_runs_only_after_attestation(fleet: K8sServer, sovereign: Any, api: Any) -> None:
    """Annotation evidence is refused; the guest attests through Ladder's API with the credential in its pod, and
    its secret reaches neither the cluster nor the pod before the verdict, and then only sealed to its TEE key."""
    host_key = Ed25519PrivateKey.generate()
    host = Node.objects.get(cc_mode=True)
    Node.objects.filter(pk=host.pk).update(cpu_tee="snp")
    node_attestation_key_set(node=host, public_key=b64e(host_key.public_key().public_bytes_raw()), actor=SYSTEM)
    secret_create(tenant=sovereign, name="HF_TOKEN", value=SECRET_VALUE, actor=SYSTEM)
    allocation = allocation_request(
        tenant=sovereign,
        name="enclave",
        spec=AllocationSpec(rung="confidential_vm", gpu_models=(H200,), gpus=1),
        workload=Workload(image="nvcr.io/nvidia/pytorch:25.01-py3", secrets=(SecretRef("HF_TOKEN"),)),
        actor=SYSTEM,
    )
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    pod = workload(fleet, allocation, "Pod")
    assert pod is not None
    assert pod["spec"]["runtimeClassName"] == "kata-qemu-nvidia-gpu-snp"
    assert SECRET_VALUE not in json.dumps(fleet.objects())  # nothing in the cluster holds it
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["LADDER_ATTESTATION_URL"].endswith(f"/api/v1/attestation/{allocation.pk}")

    pod_ready(fleet, allocation)
    driver.status(allocation.pk)
    assert state(allocation) == S.PROVISIONING  # ready, but no evidence yet
    # Evidence in a pod annotation (anyone who may edit the pod can write one) is refused, once, on the record.
    pod_ready(fleet, allocation, **{"ladder.io/attestation": json.dumps({"tee": "snp", "gpu_cc_mode": "on"})})
    driver.status(allocation.pk)
    driver.status(allocation.pk)
    assert state(allocation) == S.PROVISIONING
    [refused] = Attestation.objects.filter(allocation=allocation)
    assert (refused.verified, refused.outcome) == (False, "forged")
    assert "pod annotation" in refused.detail
    assert AuditEvent.objects.filter(action="allocation.attested", target_id=str(allocation.pk)).count() == 1

    guest = api()
    guest.credentials(HTTP_AUTHORIZATION=f"Bearer {env['LADDER_ATTESTATION_CREDENTIAL']}")
    base = f"/api/v1/attestation/{allocation.pk}"
    nonce = guest.post(f"{base}/challenge").json()["nonce"]
    keys = GuestKeys.generate()
    claims = {
        "allocation": allocation.pk,
        "host": host.hostname,
        "eat_nonce": nonce,
        "tee": "snp",
        "gpu_cc_mode": "on",
        "measurements": {"launch": "cd" * 48},
        "tee_pubkey": keys.public_b64,
    }
    answer = guest.post(f"{base}/evidence", {"evidence": sign(host_key, claims)}, format="json")
    assert answer.status_code == 200, answer.content
    assert open_sealed(answer.json()["release"], keys.private)["secrets"] == {"HF_TOKEN": SECRET_VALUE}
    driver.status(allocation.pk)
    assert state(allocation) == S.RUNNING
    assert SECRET_VALUE not in json.dumps(fleet.objects())


def test_bare_metal_taints_the_hosts_and_sanitizes_them_after(fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="bare_metal", nodes=1)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    assert state(allocation) == S.RUNNING
    host = allocation.devices.values_list("hostname", flat=True)[0]
    node = live(fleet, "v1", "Node", host)
    assert node["metadata"]["labels"]["ladder.io/dedicated"] == "acme"
    taints = {(t["key"], t["effect"]) for t in node["spec"]["taints"]}
    assert taints == {("ladder.io/dedicated", "NoSchedule"), ("nvidia.com/gpu", "NoSchedule")}  # others kept
    allocation_stop(allocation=allocation, actor=SYSTEM)
    driver.release(allocation.pk)
    assert state(allocation) == S.STOPPED
    assert Node.objects.get(hostname=host).state == NodeState.SANITIZING
    [job] = [j for j in fleet.objects(kind="Job", namespace="ladder-system")]
    allocations_reconcile()
    assert Node.objects.get(hostname=host).state == NodeState.SANITIZING  # the wipe is still running
    fleet.set_status(
        "batch/v1",
        "jobs",
        job["metadata"]["name"],
        "ladder-system",
        {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1},
    )
    allocations_reconcile()
    assert Node.objects.get(hostname=host).state == NodeState.READY
    node = live(fleet, "v1", "Node", host)
    assert {t["key"] for t in node["spec"]["taints"]} == {"nvidia.com/gpu"}


def test_a_sanitizing_host_without_its_wipe_gets_one(fleet: K8sServer, acme: Any) -> None:
    """A host sent to sanitizing without a wipe Job (one a Slurm cluster left when a fault moved it, a repaired
    host that was dirty, a Job deleted by hand) gets its Job at the next reconcile, and returns once it is done."""
    host = Node.objects.order_by("pk").first()
    assert host is not None
    Node.objects.filter(pk=host.pk).update(state=NodeState.SANITIZING, sanitize_required=True)
    assert fleet.objects(kind="Job", namespace="ladder-system") == []
    allocations_reconcile()
    [job] = fleet.objects(kind="Job", namespace="ladder-system")
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": host.hostname}
    assert Node.objects.get(pk=host.pk).state == NodeState.SANITIZING
    done = {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}
    fleet.set_status("batch/v1", "jobs", job["metadata"]["name"], "ladder-system", done)
    allocations_reconcile()
    assert Node.objects.get(pk=host.pk).state == NodeState.READY


def test_a_node_failure_places_the_gang_again(fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="job", gpus=8, gang_size=2, topology="nvlink")
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    fleet.set_status("batch/v1", "jobs", f"ldr-{allocation.pk}", "ladder-acme", {"active": 2, "ready": 2})
    driver.status(allocation.pk)
    node = Node.objects.filter(gpus__allocation_devices__allocation=allocation).distinct().first()
    assert node is not None
    counts = node_failed(node=node, actor=SYSTEM, last_checkpoint=driver.last_checkpoint)
    assert counts["restarted"] + counts["failed"] == 1


# --- the operators' API --------------------------------------------------------------------------------------------


def test_operators_register_and_test_clusters(api: Any, operator: Any, alice: Any, cluster_api: K8sServer) -> None:
    load_fleet()
    client = api(operator)
    body = {"name": "frankfurt-a", "hall": "eu-west-1a", "api_server": cluster_api.url, "token": K8S_TOKEN}
    response = client.post("/api/v1/ops/clusters", body, format="json")
    assert response.status_code == 201, response.content
    assert K8S_TOKEN not in response.content.decode()
    assert client.post("/api/v1/ops/clusters/frankfurt-a/test").json()["health"] == "healthy"
    wrong = {**body, "token": "not-the-token"}
    assert client.post("/api/v1/ops/clusters", wrong, format="json").status_code == 201  # re-registered
    assert client.post("/api/v1/ops/clusters/frankfurt-a/test").json()["health"] == "unauthorized"
    no_credentials = {k: v for k, v in body.items() if k != "token"}
    assert_problem(client.post("/api/v1/ops/clusters", no_credentials, format="json"), 422, "credentials_required")
    assert_problem(api(alice).get("/api/v1/ops/clusters"), 403, "permission_denied")


def test_fleet_sync_imports_gpu_nodes_from_their_labels(api: Any, operator: Any, fleet: K8sServer) -> None:
    fleet.put_object(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "euw1a-99",
                "labels": {
                    "kubernetes.io/hostname": "euw1a-99",
                    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                    "nvidia.com/gpu.count": "8",
                    "nvidia.com/gpu.clique": "eu-west-1a/nvl-9",
                    "nvidia.com/cc.mode": "off",
                    "nvidia.com/cuda.driver.major": "580",
                    "nvidia.com/cuda.driver.minor": "65",
                    "nvidia.com/cuda.driver.rev": "06",
                    "nvidia.com/cuda.runtime.major": "13",
                    "nvidia.com/cuda.runtime.minor": "0",
                },
            },
            "status": {
                "capacity": {"cpu": "192", "memory": "2Ti", "nvidia.com/gpu": "8"},
                "allocatable": {"cpu": "184", "memory": "1984Gi", "nvidia.com/gpu": "8"},
            },
        }
    )
    body = api(operator).post("/api/v1/ops/clusters/k8s-eu-west-1a/sync").json()
    assert body["nodes"] == 1
    assert any("no nvidia.com/gpu.product" in why for why in body["skipped"])
    node = Node.objects.get(hostname="euw1a-99")
    assert (node.gpu_model.name, node.gpu_count, node.nvlink_domain, node.driver_version) == (
        H100,
        8,
        "eu-west-1a/nvl-9",
        "580.65.06",
    )
    assert (node.cpu_cores, node.memory_gib, node.reserved_cpu_cores, node.reserved_memory_gib) == (192, 2048, 8, 64)


def test_fleet_sync_takes_a_cc_hosts_tee_from_node_feature_discovery_and_skips_one_without(
    api: Any, operator: Any, fleet: K8sServer
) -> None:
    for name, tee_label in (("euw1a-cc1", "feature.node.kubernetes.io/cpu-security.tdx.enabled"), ("euw1a-cc2", None)):
        labels = {
            "kubernetes.io/hostname": name,
            "nvidia.com/gpu.product": "NVIDIA-H200",
            "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.clique": f"eu-west-1a/{name}",
            "nvidia.com/cc.mode": "on",
        }
        if tee_label:
            labels[tee_label] = "true"
        fleet.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
    body = api(operator).post("/api/v1/ops/clusters/k8s-eu-west-1a/sync").json()
    assert Node.objects.get(hostname="euw1a-cc1").cpu_tee == "tdx"
    assert not Node.objects.filter(hostname="euw1a-cc2").exists()  # it could never take a confidential VM
    assert any(why.startswith("euw1a-cc2: in CC mode") for why in body["skipped"])


def test_fleet_sync_reads_nccl_and_firmware_from_labels_or_annotations_else_unknown(
    api: Any, operator: Any, fleet: K8sServer
) -> None:
    published = {
        "euw1a-nfd": ({"ladder.io/nccl-version": "2.27.3", "ladder.io/firmware-version": "96.00.9F.00.01"}, {}),
        "euw1a-hand": ({}, {"ladder.io/nccl-version": "2.26.2", "ladder.io/firmware-version": "96.00.74.00.11"}),
        # Node feature discovery rescans: its label is current, a hand-set annotation may be stale.
        "euw1a-both": ({"ladder.io/nccl-version": "2.27.3"}, {"ladder.io/nccl-version": "2.21.5"}),
        "euw1a-none": ({"ladder.io/nccl-version": ""}, {}),
    }
    for name, (labels, annotated) in published.items():
        gpu = {
            "kubernetes.io/hostname": name,
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "8",
        }
        meta = {"name": name, "labels": {**gpu, **labels}, "annotations": annotated}
        fleet.put_object({"apiVersion": "v1", "kind": "Node", "metadata": meta})
    api(operator).post("/api/v1/ops/clusters/k8s-eu-west-1a/sync")
    found = {n.hostname: (n.nccl_version, n.firmware_version) for n in Node.objects.filter(hostname__in=published)}
    assert found == {
        "euw1a-nfd": ("2.27.3", "96.00.9F.00.01"),
        "euw1a-hand": ("2.26.2", "96.00.74.00.11"),
        "euw1a-both": ("2.27.3", "unknown"),
        "euw1a-none": ("unknown", "unknown"),
    }


def test_a_node_is_diagnosed_from_its_cluster(api: Any, operator: Any, fleet: K8sServer) -> None:
    node = Node.objects.get(hostname="euw1a-01")
    fleet.put_object(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node.hostname, "labels": {}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }
    )
    body = api(operator).get(f"/api/v1/ops/nodes/{node.pk}/diagnosis").json()
    assert body["ok"] is False
    assert body["layer"] == "driver"
    fleet.down = True
    assert_problem(api(operator).get(f"/api/v1/ops/nodes/{node.pk}/diagnosis"), 503, "cluster_unavailable")


def test_k8s_render_prints_what_would_be_applied(fleet: K8sServer, acme: Any) -> None:
    from io import StringIO

    import yaml
    from django.core.management import call_command
    from django.core.management.base import CommandError

    allocation = place(acme, rung="container", gpus=1)
    for options in ({"allocation": allocation.pk}, {"tenant": "acme"}, {"cluster_setup": True}):
        out = StringIO()
        call_command("k8s_render", stdout=out, **options)
        documents = [d for d in yaml.safe_load_all(out.getvalue()) if d]
        assert documents
        assert all({"apiVersion", "kind", "metadata"} <= d.keys() for d in documents)
    out = StringIO()
    call_command("k8s_render", allocation=allocation.pk, stdout=out)
    assert [d["kind"] for d in yaml.safe_load_all(out.getvalue()) if d] == ["ResourceClaimTemplate", "Pod"]
    assert fleet.objects() == enrolled(fleet)  # nothing was applied
    with pytest.raises(CommandError, match="no tenant"):
        call_command("k8s_render", tenant="nobody")


def test_a_field_changed_by_hand_is_taken_back(fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=1)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    ns = "ladder-acme"
    policy = live(fleet, "networking.k8s.io/v1", "NetworkPolicy", "default-deny", ns)
    policy["spec"]["policyTypes"] = ["Ingress"]  # someone opened egress with kubectl
    fleet.put_object(policy)
    driver.provision(allocation.pk)  # Ladder's apply (forced) owns the field again
    restored = live(fleet, "networking.k8s.io/v1", "NetworkPolicy", "default-deny", ns)
    assert restored["spec"]["policyTypes"] == ["Ingress", "Egress"]


def test_a_node_that_lost_its_gpus_is_diagnosed_at_the_device_plugin(api: Any, operator: Any, fleet: K8sServer) -> None:
    node = Node.objects.get(hostname="euw1a-01")
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.deploy.driver": "true",
        "nvidia.com/cuda.driver-version.major": "580",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
    }
    status = {
        "conditions": [{"type": "Ready", "status": "True"}],
        "capacity": {"nvidia.com/gpu": "0"},
        "allocatable": {"nvidia.com/gpu": "0"},
    }
    fleet.put_object(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.hostname, "labels": labels}, "status": status}
    )
    body = api(operator).get(f"/api/v1/ops/nodes/{node.pk}/diagnosis").json()
    assert (body["ok"], body["layer"]) == (False, "device_plugin")


READY: dict[str, tuple[str, str, dict[str, Any]]] = {
    "Pod": ("v1", "pods", {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}),
    "Job": ("batch/v1", "jobs", {"active": 2, "ready": 2}),
    "VirtualMachine": ("kubevirt.io/v1", "virtualmachines", {"ready": True, "printableStatus": "Running"}),
    "Deployment": ("apps/v1", "deployments", {"availableReplicas": 1}),
}


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ({"rung": "container", "gpus": 1}, "Pod"),
        ({"rung": "container", "mig_profile": "1g.10gb"}, "Pod"),
        ({"rung": "vm", "gpus": 2}, "VirtualMachine"),
        ({"rung": "job", "gpus": 8, "gang_size": 2, "topology": "nvlink"}, "Job"),
        ({"rung": "serverless", "gpus": 1}, "Deployment"),
        ({"rung": "serverless", "share_mode": "time_slicing", "share_milli": 250}, "Deployment"),
    ],
)
def test_every_rung_is_provisioned_observed_and_released(
    fleet: K8sServer, acme: Any, spec: dict[str, Any], kind: str
) -> None:
    allocation = place(acme, **spec)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    assert state(allocation) == S.PROVISIONING
    api_version, plural, ready = READY[kind]
    fleet.set_status(api_version, plural, f"ldr-{allocation.pk}", "ladder-acme", ready)
    driver.status(allocation.pk)
    assert state(allocation) == S.RUNNING
    owned = {
        (o["kind"], o["metadata"]["name"])
        for o in fleet.objects(namespace="ladder-acme")
        if (o["metadata"].get("labels") or {}).get("ladder.io/allocation") == str(allocation.pk)
    }
    assert (kind, f"ldr-{allocation.pk}") in owned
    allocation_stop(allocation=allocation, actor=SYSTEM)
    driver.release(allocation.pk)
    fleet.tick()
    driver.status(allocation.pk)
    assert state(allocation) == S.STOPPED
    left = [
        o
        for o in fleet.objects(namespace="ladder-acme")
        if (o["metadata"].get("labels") or {}).get("ladder.io/allocation") == str(allocation.pk)
    ]
    assert left == []


def test_two_soft_shares_of_one_tenant_name_the_tenants_one_claim_for_the_gpu(fleet: K8sServer, acme: Any) -> None:
    driver = KubernetesProvisioner()
    first = place(acme, rung="serverless", share_mode="mps", share_milli=500)
    second = place(acme, rung="serverless", share_mode="mps", share_milli=250)
    for allocation in (first, second):
        driver.provision(allocation.pk)
    (gpu,) = {a.devices.get().gpu_uuid for a in (first, second)}  # the engine packs them onto one GPU
    claim = live(fleet, "resource.k8s.io/v1", "ResourceClaim", f"ladder-share-{gpu.lower()}", "ladder-acme")
    assert claim["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"]["strategy"] == "MPS"
    for allocation in (first, second):
        pod = workload(fleet, allocation, "Deployment")
        assert pod is not None
        assert pod["spec"]["template"]["spec"]["resourceClaims"] == [
            {"name": "gpus", "resourceClaimName": claim["metadata"]["name"]}
        ]
    allocation_stop(allocation=first, actor=SYSTEM)
    driver.release(first.pk)
    fleet.tick()
    # The claim is the tenant's for the GPU: releasing one share keeps it for the other.
    assert live(fleet, "resource.k8s.io/v1", "ResourceClaim", claim["metadata"]["name"], "ladder-acme")


def _nic_report(i: int, *, with_rail: bool = True) -> str:
    """The reporter DaemonSet's annotation for NIC i, up at 400 Gb/s: its sysfs reading and its configured rail
    (i, unless left out) and GPUs."""
    reading = {
        "state": "4: ACTIVE",
        "phys_state": "5: LinkUp",
        "rate": "400 Gb/sec (4X NDR)",
        "link_layer": "InfiniBand",
        "pcie_width": 16,
        "pcie_max_width": 16,
        "gpus": [i],
    }
    return json.dumps(reading | ({"rail": i} if with_rail else {}))


def test_fleet_sync_imports_a_nodes_rdma_nics_and_its_fabric(api: Any, operator: Any, fleet: K8sServer) -> None:
    gpu_labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/cuda.driver.major": "580",
    }
    every_rail = dict.fromkeys(range(8), True)
    nodes: dict[str, tuple[dict[str, str], dict[int, bool]]] = {  # labels; NIC index -> its rail is configured
        "euw1a-97": ({"ladder.io/fabric": "ib-0"}, every_rail),
        "euw1a-98": ({}, every_rail),  # NICs, but no fabric label
        "euw1a-99": ({"ladder.io/fabric": "ib-0"}, {0: True, 1: False}),  # NIC 1's rail is not configured
        "euw1a-96": ({"ladder.io/fabric": "ib-0"}, {}),  # no NIC reported
    }
    for name, (labels, rails) in nodes.items():
        annotations = {f"rdma.ladder.io/mlx5_{i}": _nic_report(i, with_rail=ok) for i, ok in rails.items()}
        metadata = {"name": name, "labels": {"kubernetes.io/hostname": name} | gpu_labels | labels}
        fleet.put_object({"apiVersion": "v1", "kind": "Node", "metadata": metadata | {"annotations": annotations}})
    body = api(operator).post("/api/v1/ops/clusters/k8s-eu-west-1a/sync").json()
    assert body["nodes"] == 4
    synced = Node.objects.get(hostname="euw1a-97")
    assert (synced.fabric, synced.rdma["link_layer"]) == ("eu-west-1a/ib-0", "infiniband")
    assert synced.rdma["nics"] == [{"device": f"mlx5_{i}", "rail": i, "gpus": [i]} for i in range(8)]
    assert "rate_gbps" not in synced.rdma  # what a port trained at is no statement of what it should
    for name in ("euw1a-98", "euw1a-99", "euw1a-96"):
        assert (Node.objects.get(hostname=name).rdma, Node.objects.get(hostname=name).fabric) == ({}, "")
    assert sorted(body["notes"]) == [
        "euw1a-98: 8 RDMA NICs reported but no ladder.io/fabric label; imported without rdma",
        "euw1a-99: RDMA NIC mlx5_1 reports no rail; imported without rdma",
    ]


def test_a_node_whose_rdma_nic_is_down_is_diagnosed_at_the_rdma_layer(
    api: Any, operator: Any, fleet: K8sServer
) -> None:
    node = Node.objects.get(hostname="euw1a-01")
    nics = [{"device": f"mlx5_{i}", "rail": i, "gpus": [i]} for i in range(node.gpu_count)]
    rdma = {"fabric": "eu-west-1a/ib-0", "link_layer": "infiniband", "rate_gbps": 400, "nics": nics}
    Node.objects.filter(pk=node.pk).update(rdma=rdma, fabric="eu-west-1a/ib-0")
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.deploy.driver": "true",
        "nvidia.com/cuda.driver-version.major": "580",
        "nvidia.com/gpu.count": str(node.gpu_count),
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
    }
    gpus = {"nvidia.com/gpu": str(node.gpu_count)}
    status = {"conditions": [{"type": "Ready", "status": "True"}], "capacity": gpus, "allocatable": gpus}
    # mlx5_0 reported by the DaemonSet only as absent; DraNet sees it, with its interface down.
    annotations = {f"rdma.ladder.io/mlx5_{i}": _nic_report(i) for i in range(1, node.gpu_count)}
    metadata = {"name": node.hostname, "labels": labels, "annotations": annotations}
    fleet.put_object({"apiVersion": "v1", "kind": "Node", "metadata": metadata, "status": status})
    device = {
        "name": "pci-0000-1a-00-0",
        "attributes": {
            "dra.net/rdma": {"bool": True},
            "dra.net/rdmaDevice": {"string": "mlx5_0"},
            "dra.net/state": {"string": "down"},
        },
    }
    spec = {"driver": "dra.net", "nodeName": node.hostname, "pool": {"name": node.hostname}, "devices": [device]}
    fleet.put_object(
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "nics"}, "spec": spec}
    )
    body = api(operator).get(f"/api/v1/ops/nodes/{node.pk}/diagnosis").json()
    assert (body["ok"], body["layer"]) == (False, "rdma"), body["summary"]
    assert body["summary"] == "RDMA NIC mlx5_0 (rail 0) link down (dra.net/state=down)"
    assert [c["layer"] for c in body["checks"]][-1] == "rdma"
    fleet.put_object(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": metadata | {"annotations": annotations | {"rdma.ladder.io/mlx5_0": _nic_report(0)}},
            "status": status,
        }
    )
    body = api(operator).get(f"/api/v1/ops/nodes/{node.pk}/diagnosis").json()
    assert body["ok"] is True, body["summary"]  # the DaemonSet's reading wins over the netdev's state
    assert body["summary"].endswith(f"; {node.gpu_count} RDMA NICs up on fabric eu-west-1a/ib-0 (infiniband, 400 Gb/s)")


def test_spot_work_is_preempted_through_the_cluster(fleet: K8sServer, acme: Any, globex: Any) -> None:
    """On Kubernetes: spot pods carry their class, toleration and the notice as their grace; on-demand work that
    needs their GPUs takes them at the notice, and the driver deletes the spot work's objects (its pods get SIGTERM
    and the notice to save) before it is stopped."""
    driver = KubernetesProvisioner()
    spot = [
        place(globex, rung="container", gpus=8, regions=("eu-west",), capacity_class="spot", gpu_models=(H100,))
        for _ in range(2)
    ]
    for allocation in spot:
        driver.provision(allocation.pk)
        pod_ready(fleet, allocation)
        driver.status(allocation.pk)
        assert state(allocation) == S.RUNNING
    pod = workload(fleet, spot[0], "Pod")
    assert pod is not None
    assert pod["metadata"]["labels"]["ladder.io/capacity-class"] == "spot"
    assert pod["spec"]["terminationGracePeriodSeconds"] == 30
    assert {"key": "ladder.io/capacity-class", "operator": "Equal", "value": "spot", "effect": "NoSchedule"} in pod[
        "spec"
    ]["tolerations"]

    urgent = place(acme, rung="container", gpus=8, regions=("eu-west",))
    victim = next(a for a in spot if state(a) == S.STOPPING)
    assert sum(state(a) == S.RUNNING for a in spot) == 1  # only as much as was needed
    held = {(d.hostname, d.gpu_index) for d in urgent.devices.all()}
    assert held == {(d.hostname, d.gpu_index) for d in victim.devices.all()}
    driver.provision(urgent.pk)
    driver.release(victim.pk)
    fleet.tick()
    driver.status(victim.pk)
    assert state(victim) == S.STOPPED
    assert workload(fleet, victim, "Pod") is None
    assert workload(fleet, urgent, "Pod") is not None
