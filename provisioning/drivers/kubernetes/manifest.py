"""The building blocks every renderer shares: object metadata, an allocation's labels and placement, the restricted
security context, Secrets. Pure functions returning plain dicts (no Django, no I/O)."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

from provisioning.domain.capacity_classes import CLASSES, DEFAULT_CLASS, CapacityClass
from provisioning.drivers.kubernetes.shapes import (
    LABEL_ALLOCATION,
    LABEL_CAPACITY_CLASS,
    LABEL_TENANT,
    MANAGED_BY,
    AllocationShape,
)

Obj = dict[str, Any]

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
HOSTNAME = "kubernetes.io/hostname"
NAMESPACE_NAME = "kubernetes.io/metadata.name"  # the API server labels every namespace with its own name
SYSTEM_NAMESPACE = "ladder-system"
DEFAULT_BASE_DOMAIN = "ladder.localhost"
CLIQUE = "nvidia.com/gpu.clique"  # the NVLink clique a GPU node is in (GPU feature discovery)
GPU_PRODUCT = "nvidia.com/gpu.product"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"  # the WorkloadPriorityClass Kueue ranks a workload by
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
    labels = {**a.extra_labels, LABEL_TENANT: a.tenant, LABEL_ALLOCATION: str(a.id), MANAGED_BY_LABEL: MANAGED_BY}
    if a.capacity_class != DEFAULT_CLASS:
        labels[LABEL_CAPACITY_CLASS] = a.capacity_class
    return labels


def priority_class_name(capacity_class: str) -> str:
    """The Kueue WorkloadPriorityClass of a capacity class (``render.cluster_setup`` installs one per class)."""
    return "ladder-" + capacity_class.replace("_", "-")


def queued_labels(a: AllocationShape) -> dict[str, str]:
    """What a Kueue-managed object carries: the LocalQueue it is admitted from and its class's priority."""
    return {QUEUE_LABEL: LOCAL_QUEUE, PRIORITY_LABEL: priority_class_name(a.capacity_class)}


def preemptible_pod_fields(a: AllocationShape) -> Obj:
    """What a preemptible allocation's pods (or VM) add: tolerating nodes kept for its class (tainted
    ``ladder.io/capacity-class=<class>:NoSchedule``), and a grace period of its notice, so that SIGTERM comes at
    the notice and the kill at its deadline. Nothing for other classes."""
    if not CLASSES[CapacityClass(a.capacity_class)].preemptible or a.notice_seconds is None:
        return {}
    toleration = {"key": LABEL_CAPACITY_CLASS, "operator": "Equal", "value": a.capacity_class, "effect": "NoSchedule"}
    return {"tolerations": [toleration], "terminationGracePeriodSeconds": a.notice_seconds}


def preemptible_env(a: AllocationShape) -> list[Obj]:
    """The environment a preemptible workload starts with: its class, and the seconds it has from SIGTERM to the
    kill when preempted (its deadline is the SIGTERM plus these)."""
    if a.notice_seconds is None or a.capacity_class == DEFAULT_CLASS:
        return []
    return [
        {"name": "LADDER_CAPACITY_CLASS", "value": a.capacity_class},
        {"name": "LADDER_PREEMPTION_NOTICE_SECONDS", "value": str(a.notice_seconds)},
    ]


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
