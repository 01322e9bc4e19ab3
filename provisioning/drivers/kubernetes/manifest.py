"""The building blocks every renderer shares: object metadata, an allocation's labels and placement, the restricted
security context, Secrets. Pure functions returning plain dicts (no Django, no I/O)."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

from provisioning.drivers.kubernetes.shapes import LABEL_ALLOCATION, LABEL_TENANT, MANAGED_BY, AllocationShape

Obj = dict[str, Any]

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
HOSTNAME = "kubernetes.io/hostname"
NAMESPACE_NAME = "kubernetes.io/metadata.name"  # the API server labels every namespace with its own name
SYSTEM_NAMESPACE = "ladder-system"
DEFAULT_BASE_DOMAIN = "ladder.localhost"
CLIQUE = "nvidia.com/gpu.clique"  # the NVLink clique a GPU node is in (GPU feature discovery)
GPU_PRODUCT = "nvidia.com/gpu.product"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
LOCAL_QUEUE = "ladder"  # the Kueue LocalQueue of every Ladder namespace
UID = 1000  # tenant containers run as this user: restricted refuses images that would start as root


def meta(name: str, namespace: str | None = None, labels: Mapping[str, str] | None = None) -> Obj:
    found: Obj = {"name": name, "labels": {MANAGED_BY_LABEL: MANAGED_BY, **(labels or {})}}
    if namespace:
        found["namespace"] = namespace
    return found


def obj(api_version: str, kind: str, metadata: Obj, **fields: Any) -> Obj:
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


def labels_of(a: AllocationShape) -> dict[str, str]:
    # Extra labels never override Ladder's own: the driver and the Services select on those.
    return {**a.extra_labels, LABEL_TENANT: a.tenant, LABEL_ALLOCATION: str(a.id), MANAGED_BY_LABEL: MANAGED_BY}


def own(a: AllocationShape, name: str | None = None, **labels: str) -> Obj:
    """Metadata of one of the allocation's objects in the tenant's namespace (``ldr-<id>`` unless named)."""
    return meta(name or a.object_name, a.namespace, {**labels_of(a), **labels})


def selector(a: AllocationShape) -> dict[str, str]:
    """What selects the allocation's pods (a VM's launcher pod included: the template carries the labels)."""
    return {LABEL_ALLOCATION: str(a.id)}


def hosts(a: AllocationShape) -> list[str]:
    return sorted({d.hostname for d in a.devices} | {n.hostname for n in a.nodes})


def single_host(a: AllocationShape) -> str:
    found = {d.hostname for d in a.devices}
    if len(found) != 1:
        raise ValueError(f"allocation {a.id}: a {a.rung} runs on one host, placed on {sorted(found)}")
    return found.pop()


def pinned_to(names: Iterable[str]) -> Obj:
    """Required node affinity on the placed hosts. Not ``spec.nodeName``: that bypasses the scheduler, so DRA
    claims would never be allocated, device-plugin resources would not be checked before the kubelet admits the
    pod, and Kueue's topology-aware scheduling could not place a gang among its hosts."""
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": sorted(set(names))}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def restricted() -> Obj:
    """A container's securityContext under Pod Security "restricted": no privilege escalation, no capabilities,
    non-root, RuntimeDefault seccomp."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def from_namespace(name: str) -> Obj:
    """A NetworkPolicy peer: every pod of one namespace."""
    return {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME: name}}}


def b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


def secret(metadata: Obj, data: Mapping[str, str], type_: str = "Opaque") -> Obj:
    """A Secret with its values in ``data`` (base64, keys sorted), the form the API server stores and returns, so
    a re-apply of the same values changes nothing."""
    return obj("v1", "Secret", metadata, type=type_, data={key: b64(data[key]) for key in sorted(data)})
