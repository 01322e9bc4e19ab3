"""Helpers the Kubernetes driver's tests share: placing an allocation, reading an object back from the fake API
server, an allocation's state as stored."""

from __future__ import annotations

from typing import Any

from provisioning.models import Allocation
from provisioning.services.allocations import AllocationSpec, allocation_request
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
