"""A gang on new nodes (docs/kubernetes.md §8): its Job carries the placement it was rendered for, and one rendered
for another placement is replaced, its pods first. Called by the driver when it provisions a restarted gang.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from kubernetes.client.exceptions import ApiException

from provisioning.drivers.kubernetes.client import Kube, object_path
from provisioning.drivers.kubernetes.output import pods_of
from provisioning.drivers.kubernetes.shapes import AllocationShape
from provisioning.models import Allocation

log = logging.getLogger(__name__)
ANNOTATION_PLACEMENT = "ladder.io/placement"  # which devices a gang's Job was rendered for
GANG_KINDS = ("Job", "MPIJob", "RayJob")  # a gang's object, by framework: torchrun, mpi, ray


def placement_mark(shape: AllocationShape) -> str:
    """The devices an allocation's objects were rendered for, in short: a gang's Job for other ones is stale."""
    devices = ",".join(sorted(f"{d.hostname}/{d.gpu_uuid}/{d.mig_profile or ''}" for d in shape.devices))
    return hashlib.sha256(devices.encode()).hexdigest()[:16]


def placement_marked(obj: dict[str, Any], shape: AllocationShape) -> dict[str, Any]:
    """A gang's Job carries the placement it was rendered for (``ladder.io/placement``), so a restart on new nodes
    sees the old one for what it is. Pod templates are immutable: the Job is replaced, never patched. The same
    holds for an MPIJob or a RayJob, whose operators do not roll their pods to a changed template."""
    if obj["kind"] not in GANG_KINDS:
        return obj
    meta = obj["metadata"]
    return {
        **obj,
        "metadata": {
            **meta,
            "annotations": {**(meta.get("annotations") or {}), ANNOTATION_PLACEMENT: placement_mark(shape)},
        },
    }


def job_stale(live: dict[str, Any], desired: dict[str, Any]) -> bool:
    """The live Job was rendered for another placement (or is already going). A Job from before the annotation
    existed is judged by the hosts its pods are pinned to."""
    if live["metadata"].get("deletionTimestamp"):
        return True
    mark = (live["metadata"].get("annotations") or {}).get(ANNOTATION_PLACEMENT)
    if mark is not None:
        return bool(mark != desired["metadata"]["annotations"][ANNOTATION_PLACEMENT])
    pinned = [((o.get("spec") or {}).get("template") or {}).get("spec", {}).get("affinity") for o in (live, desired)]
    return pinned[0] != pinned[1]


def job_replace(kube: Kube, allocation: Allocation, live: dict[str, Any]) -> None:
    """Delete the old gang's Job, its pods first (foreground: the new Job must not meet them on the checkpoint
    volume, which is kept). A pod on a node whose kubelet no longer answers never confirms its end, so it is
    removed at once (grace 0), as the ``node.kubernetes.io/out-of-service`` taint would have it; its node is
    quarantined already and runs nothing of ours again."""
    if not live["metadata"].get("deletionTimestamp"):
        kube.delete(live)
        log.info("allocation %s: the gang's Job for its old placement deleted", allocation.pk)
    gone = {
        node["metadata"]["name"]
        for node in kube.list("v1", "Node")
        if not any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (node.get("status") or {}).get("conditions") or []
        )
        and (node.get("status") or {}).get("conditions")
    }
    for pod in pods_of(kube, allocation):
        if (pod.get("spec") or {}).get("nodeName") in gone:
            try:
                kube.request(
                    "DELETE",
                    object_path(pod),
                    body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
                    content_type="application/json",
                )
            except ApiException as error:
                if error.status != 404:
                    raise
