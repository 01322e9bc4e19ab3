"""Pulling an idle serverless endpoint's image in advance: a DaemonSet ``ldr-<id>-prepull`` in the tenant's namespace
whose pods run only on the hosts its next replica is likely to take (docs/serverless.md, "Cold starts"). Pure
functions returning plain dicts (no Django, no I/O).

Each pod's init container is the endpoint's own image running a no-op, so the kubelet pulls the image onto that
node (with the endpoint's pull credentials, when it has them); then a pause container keeps the pod, and with it
the finished init container, in place, so the image stays in use and the kubelet's image garbage collection spares
it. No GPU, no volume, no port: Pod Security "restricted" like every other object of the tenant's. Its pods carry no
``ladder.io/allocation`` label, so the endpoint's Service, its replica count and its logs never see them.
"""

from __future__ import annotations

from collections.abc import Iterable

from provisioning.drivers.kubernetes.manifest import MANAGED_BY_LABEL, UID, Obj, obj, own, pinned_to, restricted
from provisioning.drivers.kubernetes.render_devices import GPU
from provisioning.drivers.kubernetes.render_workload import pull_name
from provisioning.drivers.kubernetes.shapes import LABEL_TENANT, MANAGED_BY, AllocationShape

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
LABEL_PREPULL = "ladder.io/prepull"  # the endpoint whose image a pre-pull pod holds (never ladder.io/allocation)
NO_OP = ["true"]  # the image is pulled before its container starts: a missing ``true`` still leaves it on the node


def prepull_name(a: AllocationShape) -> str:
    return f"{a.object_name}-prepull"


def prepull_ref(a: AllocationShape) -> Obj:
    """The pre-pull DaemonSet by name, enough to read or delete it."""
    return obj("apps/v1", "DaemonSet", own(a, prepull_name(a)))


def _small() -> Obj:
    return {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}}


def prepull_daemonset(a: AllocationShape, hostnames: Iterable[str]) -> Obj:
    """The DaemonSet that pulls the endpoint's image onto ``hostnames`` (required node affinity), tolerating the
    GPU nodes' taint as the endpoint's replicas do, and asking for no GPU."""
    hosts = sorted(set(hostnames))
    if not hosts:
        raise ValueError(f"allocation {a.id}: a pre-pull needs at least one host")
    w = a.workload
    image = (w.image if w is not None else None) or a.image
    labels = {MANAGED_BY_LABEL: MANAGED_BY, LABEL_TENANT: a.tenant, LABEL_PREPULL: str(a.id)}
    security = {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "seccompProfile": {"type": "RuntimeDefault"}}
    pull = {"name": "pull", "image": image, "command": NO_OP, "resources": _small()}
    pause = {"name": "pause", "image": PAUSE_IMAGE, "resources": _small()}
    spec: Obj = {
        "affinity": pinned_to(hosts),
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
        "initContainers": [{**pull, "securityContext": {**restricted(), "readOnlyRootFilesystem": True}}],
        "containers": [{**pause, "securityContext": {**restricted(), "readOnlyRootFilesystem": True}}],
        "securityContext": security,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 1,
    }
    if w is not None and w.pull_secret:
        spec["imagePullSecrets"] = [{"name": pull_name(a)}]  # the endpoint's own, kept while it is idle
    daemonset = {
        "selector": {"matchLabels": {LABEL_PREPULL: str(a.id)}},
        "template": {"metadata": {"labels": labels}, "spec": spec},
    }
    return obj("apps/v1", "DaemonSet", own(a, prepull_name(a), **{LABEL_PREPULL: str(a.id)}), spec=daemonset)
