"""Helpers the Kubernetes driver's tests (and the fault-recovery benchmark) share: placing an allocation, reading an
object back from the fake API server, an allocation's state as stored, node conditions, and a gang's Job run as
Kueue and the Job controller would run it."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any

from provisioning.models import Allocation
from provisioning.services.placing import AllocationSpec, allocation_request
from tests.fakes.kubernetes import K8sServer
from tests.support import SYSTEM

H100, H200 = "H100-SXM-80GB", "H200-141GB"


def place(tenant: Any, **spec: Any) -> Allocation:
    spec.setdefault("gpu_models", (H100,))
    return allocation_request(tenant=tenant, name="work", spec=AllocationSpec(**spec), actor=SYSTEM)


def live(server: K8sServer, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    found = server.get_object(api_version, kind, name, namespace)
    assert found is not None, f"{kind} {name} is not in the cluster"
    return found


def state(allocation: Allocation) -> str:
    allocation.refresh_from_db()
    return allocation.state


def enrolled(server: K8sServer) -> list[dict[str, Any]]:
    """What the operator put in the cluster before Ladder (``k8s_fleet``): Nodes, and the Metal3 namespace with
    a BareMetalHost per host."""
    return [o for o in server.objects() if o["kind"] in ("Node", "BareMetalHost") or o["metadata"]["name"] == "metal3"]


def ready(status: str, since: datetime, reason: str = "KubeletReady") -> dict[str, Any]:
    """A node's Ready condition as the kubelet (or the node lifecycle controller) reports it."""
    return {"type": "Ready", "status": status, "reason": reason, "lastTransitionTime": since.isoformat()}


def condition(server: K8sServer, host: str, *conditions: dict[str, Any]) -> None:
    """Set the node's conditions as the kubelet and the health tooling leave them (by type, replacing)."""
    node = live(server, "v1", "Node", host)
    found = {c["type"]: c for c in (node.get("status") or {}).get("conditions") or []}
    found.update({c["type"]: c for c in conditions})
    server.set_status("v1", "nodes", host, None, {"conditions": list(found.values())})


def hosts_of(allocation: Allocation) -> set[str]:
    return set(allocation.devices.filter(active=True).values_list("hostname", flat=True))


def job(server: K8sServer, allocation: Allocation) -> dict[str, Any]:
    return live(server, "batch/v1", "Job", f"ldr-{allocation.pk}", f"ladder-{allocation.tenant.slug}")


def pinned(job_obj: dict[str, Any]) -> list[str]:
    """The hosts a gang's Job pins its pods to (its required node affinity)."""
    affinity = job_obj["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    values: list[str] = terms[0]["matchExpressions"][0]["values"]
    return values


def gang_up(server: K8sServer, allocation: Allocation) -> list[str]:
    """What Kueue and the Job controller do on a real cluster: admit the Job, run a pod per member on the pinned
    hosts (owned by the Job, so deleting it deletes them), and report them ready. The pods' names, in member order."""
    found = job(server, allocation)
    namespace = found["metadata"]["namespace"]
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": found["metadata"]["name"],
        "uid": found["metadata"]["uid"],
    }
    names = []
    for index, host in enumerate(pinned(found)):
        name = f"ldr-{allocation.pk}-{index}-{found['metadata']['uid'][:5]}"
        labels = {"ladder.io/allocation": str(allocation.pk), "batch.kubernetes.io/job-completion-index": str(index)}
        server.put_object(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": labels, "ownerReferences": [owner]},
                "spec": {"nodeName": host, "containers": [{"name": "worker", "image": "example"}]},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
            }
        )
        names.append(name)
    server.set_status(
        "batch/v1", "jobs", found["metadata"]["name"], namespace, {"active": len(names), "ready": len(names)}
    )
    return names


def replicas_ready(server: K8sServer, allocation: Allocation, replicas: int) -> None:
    """The Deployment controller reports a serverless endpoint's ``replicas`` ready and available."""
    status = {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas}
    server.set_status("apps/v1", "deployments", f"ldr-{allocation.pk}", "ladder-acme", status)


def running_endpoint(server: K8sServer, tenant: Any, gpus: int = 3) -> Allocation:
    """A serverless endpoint of ``tenant`` (acme's namespace), provisioned with one replica ready and running."""
    from provisioning.drivers.base import allocations_reconcile
    from provisioning.drivers.kubernetes.driver import KubernetesProvisioner

    allocation = place(tenant, rung="serverless", gpus=gpus)
    KubernetesProvisioner().provision(allocation.pk)
    replicas_ready(server, allocation, 1)
    allocations_reconcile()
    assert state(allocation) == "running"
    return allocation


def queue_depth(server: K8sServer, allocation: Allocation, value: str) -> None:
    """What the metrics adapter serves from the gateway's queue gauge for the endpoint."""
    server.put_object(
        {
            "apiVersion": "external.metrics.k8s.io/v1beta1",
            "kind": "ladder_queue_depth",
            "metadata": {
                "name": f"depth-{allocation.pk}",
                "namespace": "ladder-acme",
                "labels": {"ladder.io/allocation": str(allocation.pk)},
            },
            "value": value,
        }
    )


def warm_when_asked(server: K8sServer, allocation: Allocation, after: float) -> threading.Thread:
    """The cluster's side of a wake, started: once the woken Deployment asks for a replica, the replica is ready
    ``after`` seconds later. Join the thread once the wake is done."""

    def controller() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = server.get_object("apps/v1", "Deployment", f"ldr-{allocation.pk}", "ladder-acme")
            if found and found["spec"].get("replicas") == 1:
                time.sleep(after)
                replicas_ready(server, allocation, 1)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=controller)
    thread.start()
    return thread
