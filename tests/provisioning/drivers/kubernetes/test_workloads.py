"""A tenant's workload on every rung, end to end on Kubernetes: submitted through the real API, rendered and applied
to the fake API server through the official client, brought to running, reached through its access details, its
logs and events read back, stopped, and its output kept as governed data. A secret's value reaches the cluster
only inside the tenant's Secret objects, and no answer, audit event or log line of Ladder's."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from compliance.models import DataAsset
from core.models import AuditEvent
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, Node
from tests.api.test_workloads import IMAGE, VALUE, public_key, workload_of
from tests.fakes.kubernetes import K8sServer
from tests.support import assert_problem
from tests.support.attestation import guest_attests, host_key_registered

URL = "/api/v1/allocations"
H100, H200 = "H100-SXM-80GB", "H200-141GB"
NS = "ladder-acme"
READY: dict[str, tuple[str, str, dict[str, Any]]] = {
    "Pod": ("v1", "pods", {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}),
    "Job": ("batch/v1", "jobs", {"active": 2, "ready": 2}),
    "VirtualMachine": ("kubevirt.io/v1", "virtualmachines", {"ready": True, "printableStatus": "Running"}),
    "Deployment": ("apps/v1", "deployments", {"availableReplicas": 1}),
}
PRIMARY = {
    "container": "Pod",
    "confidential_vm": "Pod",
    "job": "Job",
    "vm": "VirtualMachine",
    "serverless": "Deployment",
}
SHAPES: dict[str, dict[str, Any]] = {
    "bare_metal": {"gpu_model": H100, "nodes": 1},
    "vm": {"gpu_model": H100, "gpus": 2},
    "confidential_vm": {"gpu_model": H200, "gpus": 1},
    "container": {"gpu_model": H100, "gpus": 1},
    "job": {"gpu_model": H100, "gpus": 8, "gang": {"size": 2, "topology": "nvlink"}},
    "serverless": {"gpu_model": H100, "mig_profile": "1g.10gb"},
}


def pods_of(server: K8sServer, allocation_id: int, rung: str) -> list[tuple[str, str]]:
    """The pods the cluster's controllers would create for the workload, as (pod, container) whose logs count."""
    label = {"ladder.io/allocation": str(allocation_id)}
    if rung == "container" or rung == "confidential_vm":
        return [(f"ldr-{allocation_id}", "worker")]  # Ladder's own Pod
    made: dict[str, list[tuple[str, str, dict[str, str]]]] = {
        "job": [
            (f"ldr-{allocation_id}-{i}-abcde", "worker", {"batch.kubernetes.io/job-completion-index": str(i)})
            for i in (0, 1)
        ],
        "serverless": [(f"ldr-{allocation_id}-7d9f-x2", "worker", {})],
        "vm": [(f"virt-launcher-ldr-{allocation_id}-q8t", "guest-console-log", {"kubevirt.io": "virt-launcher"})],
    }
    names = made[rung]
    for name, container, extra in names:
        server.put_object(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": NS, "labels": {**label, **extra}},
                "spec": {"containers": [{"name": container, "image": IMAGE}]},
            }
        )
    return [(name, container) for name, container, _ in names]


@pytest.mark.parametrize("rung", ["bare_metal", "vm", "confidential_vm", "container", "job", "serverless"])
def test_each_rung_runs_the_tenants_workload_on_kubernetes(
    api: Any,
    alice: Any,
    acme: Any,
    k8s_fleet: K8sServer,
    rung: str,
    django_capture_on_commit_callbacks: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("DEBUG")
    client = api(alice)
    if rung == "confidential_vm":  # the confidential host is in the hall fenced for EU sovereign tenants
        residency = {"regions": None, "jurisdictions": ["EU"], "sovereign": True}
        assert client.patch("/api/v1/tenant", {"residency": residency}, format="json").status_code == 200
        Node.objects.filter(cc_mode=True).update(cpu_tee="snp")
        host = Node.objects.get(cc_mode=True)
        host_key = host_key_registered(host)
    assert client.post("/api/v1/secrets", {"name": "HF_TOKEN", "value": VALUE}, format="json").status_code == 201
    key = client.post("/api/v1/ssh-keys", {"name": "laptop", "public_key": public_key()}, format="json").json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        made = client.post(
            URL, {"name": f"my-{rung}", "rung": rung, **SHAPES[rung], "workload": workload_of(rung, key)}, format="json"
        )
    assert made.status_code == 201, made.content
    allocation_id = made.json()["id"]

    # Applied: the value only inside the tenant's Secrets, every other object free of it. A confidential VM's
    # secrets are nowhere in the cluster: the key broker releases them to the attested guest.
    secrets = [o for o in k8s_fleet.objects(kind="Secret") if str(allocation_id) in o["metadata"]["name"]]
    found = any(VALUE in base64.b64decode(v).decode() for s in secrets for v in (s.get("data") or {}).values())
    assert found == (rung != "confidential_vm")
    others = json.dumps([o for o in k8s_fleet.objects() if o["kind"] != "Secret"])
    assert VALUE not in others
    assert base64.b64encode(VALUE.encode()).decode() not in others

    if rung == "bare_metal":
        hosts = [o for o in k8s_fleet.objects(kind="BareMetalHost") if (o["spec"].get("image") or {}).get("url")]
        assert [h["spec"]["image"]["url"] for h in hosts] == [
            "https://cloud-images.ubuntu.com/noble/current/noble-server-cloudimg-amd64.img"
        ]
    else:
        kind = PRIMARY[rung]
        primary = k8s_fleet.get_object(READY[kind][0], kind, f"ldr-{allocation_id}", NS)
        assert primary is not None
        text = json.dumps(primary)
        assert (IMAGE in text) if rung != "vm" else ("cloudInitNoCloud" in text)
        status = READY[kind][2]
        k8s_fleet.set_status(READY[kind][0], READY[kind][1], f"ldr-{allocation_id}", NS, status)
        if rung == "confidential_vm":
            released = guest_attests(allocation_id, Node.objects.get(pk=host.pk), host_key)
            assert released["secrets"] == {"HF_TOKEN": VALUE}
    allocations_reconcile()
    body = client.get(f"{URL}/{allocation_id}").json()
    assert body["state"] == "running", body

    access = body["access"]
    if rung in ("bare_metal", "vm", "container"):
        assert access["ssh"]["command"] == f"ssh ldr-{allocation_id}@ssh.{body['hall']}.ladder.localhost"
    if rung == "serverless":
        assert access["endpoint"] == f"https://ldr-{allocation_id}.ladder.localhost/"
        routes = {r["metadata"]["name"]: r for r in k8s_fleet.objects(kind="HTTPRoute", namespace=NS)}
        assert routes[f"ldr-{allocation_id}"]["spec"]["hostnames"] == [f"ldr-{allocation_id}.ladder.localhost"]

    written = datetime(2026, 1, 1, 12, tzinfo=UTC)
    expected = []
    if rung != "bare_metal":
        for i, (pod_name, container) in enumerate(pods_of(k8s_fleet, allocation_id, rung)):
            k8s_fleet.set_logs(NS, pod_name, container, [(written.replace(second=i), f"hello from {pod_name}")])
            expected.append(f"hello from {pod_name}")
    lines = client.get(f"{URL}/{allocation_id}/logs").json()["lines"]
    assert [line["text"] for line in lines] == expected
    assert [e["reason"] for e in client.get(f"{URL}/{allocation_id}/events").json()][:1] == ["placed"]

    assert_problem(client.delete("/api/v1/secrets/HF_TOKEN"), 409, "secret_in_use")
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"{URL}/{allocation_id}").status_code == 200
    k8s_fleet.tick()
    allocations_reconcile()
    assert Allocation.objects.get(pk=allocation_id).state == "stopped"
    logs = DataAsset.objects.filter(tenant=acme, category="job_log")
    assert logs.count() == (0 if rung == "bare_metal" else 1)  # a host's console is its BMC's, not the cluster's

    said = [client.get(f"{URL}/{allocation_id}").content.decode(), client.get(URL).content.decode()]
    said += [json.dumps(e.data) for e in AuditEvent.objects.all()]
    assert VALUE not in "\n".join(said)
    assert VALUE not in caplog.text
