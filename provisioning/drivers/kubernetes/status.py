"""Reading an allocation's status back from its cluster: the live object of a rendered one, the object whose
status says whether the allocation runs, and what that status means per kind (a Pod, a gang's Job, MPIJob or
RayJob, a VirtualMachine, a Slurm cluster's NodeSet, a serverless Deployment); and the quantities the cluster
reports sizes and metrics in. Nothing here changes anything.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from provisioning.drivers.kubernetes.client import Kube
from provisioning.drivers.kubernetes.output import pods_of
from provisioning.drivers.kubernetes.recovery import GANG_KINDS
from provisioning.drivers.kubernetes.render_slurm import LABEL_SLURM_ROLE
from provisioning.drivers.kubernetes.shapes import LABEL_ALLOCATION
from provisioning.models import Allocation


def live_object(kube: Kube, obj: dict[str, Any]) -> dict[str, Any] | None:
    """A rendered object as the cluster holds it now; None when it is not there."""
    meta = obj["metadata"]
    return kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))


def primary_object(objects: list[dict[str, Any]], allocation: Allocation) -> dict[str, Any] | None:
    """The object whose status says whether the allocation runs: its Pod, Job, MPIJob, RayJob, VirtualMachine,
    Deployment, or a Slurm cluster's NodeSet (the gang)."""
    kinds = ("Pod", *GANG_KINDS, "VirtualMachine", "Deployment", "NodeSet")
    ours = [o for o in objects if o["kind"] in kinds and (o["metadata"].get("labels") or {}).get(LABEL_ALLOCATION)]
    return ours[0] if ours else None


def observed_state(obj: dict[str, Any] | None, rung: str) -> tuple[str, str]:
    """Map a workload's status to ``(running|pending|idle|failed|finished|missing, why)``; ``idle``: a Deployment
    scaled to zero."""
    if obj is None:
        return "missing", "the object is gone from the cluster"
    status = obj.get("status") or {}
    kind = obj["kind"]
    if kind == "Pod":
        phase = status.get("phase", "Pending")
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        if phase == "Running" and ready:
            return "running", ""
        if phase == "Failed":
            return "failed", status.get("message") or status.get("reason") or "the pod failed"
        if phase == "Succeeded":
            return "finished", "the pod completed"
        return "pending", phase
    if kind == "Job":
        for condition in status.get("conditions") or []:
            if condition.get("status") != "True":
                continue
            if condition.get("type") == "Failed":
                return "failed", condition.get("message") or condition.get("reason") or "the job failed"
            if condition.get("type") == "Complete":
                return "finished", "the job completed"
        wanted = (obj.get("spec") or {}).get("parallelism") or 1
        return ("running", "") if (status.get("ready") or 0) >= wanted else ("pending", "the gang is not all up")
    if kind == "MPIJob":
        return _mpi_job_state(status)
    if kind == "RayJob":
        return _ray_job_state(status)
    if kind == "VirtualMachine":
        printable = status.get("printableStatus", "")
        if status.get("ready") is True or printable == "Running":
            return "running", ""
        if printable in ("ErrorUnschedulable", "ErrImagePull", "CrashLoopBackOff", "ErrorPvcNotFound"):
            return "failed", printable
        return "pending", printable or "starting"
    if kind == "NodeSet":
        # The gang is up once every member's slurmd is ready; the Controller and LoginSet are read beside it
        # (``slurm_ready``).
        members = int((obj.get("spec") or {}).get("replicas") or 1)
        up = int(status.get("readyReplicas") or 0)
        return ("running", "") if up >= members else ("pending", f"{up} of {members} slurmd nodes are ready")
    if kind == "Deployment":
        if (obj.get("spec") or {}).get("replicas") == 0:
            return "idle", "scaled to zero replicas"
        if (status.get("availableReplicas") or 0) >= 1:
            return "running", ""
        return "pending", "no replica is available yet"
    return "running", ""


def _mpi_job_state(status: dict[str, Any]) -> tuple[str, str]:
    """An MPIJob by its conditions (mpi-operator v2beta1): Failed, Succeeded, Running (launcher and workers
    running), else pending (Created; Suspended until Kueue admits it; Restarting after a failed launcher)."""
    true = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
    if "Failed" in true:
        found = true["Failed"]
        return "failed", found.get("message") or found.get("reason") or "the MPI job failed"
    if "Succeeded" in true:
        return "finished", "the MPI job completed"
    if "Running" in true and "Restarting" not in true:
        return "running", ""
    waiting = next((t for t in ("Restarting", "Suspended", "Created") if t in true), None)
    return "pending", {"Suspended": "queued for admission", None: "not created yet"}.get(waiting, waiting or "")


RAY_FAILED_DEPLOYMENT = ("Failed", "ValidationFailed")


def _ray_job_state(status: dict[str, Any]) -> tuple[str, str]:
    """A RayJob by KubeRay's ``jobDeploymentStatus`` (its cluster and submission) and ``jobStatus`` (the Ray
    job's own: PENDING, RUNNING, STOPPED, SUCCEEDED, FAILED). Running once the cluster is up and the job
    submitted; a job stopped from inside Ray counts as failed (it did not finish its work)."""
    deployment = status.get("jobDeploymentStatus") or ""
    job = status.get("jobStatus") or ""
    why = status.get("message") or status.get("reason") or ""
    if deployment in RAY_FAILED_DEPLOYMENT or job in ("FAILED", "STOPPED"):
        return "failed", why or f"the Ray job is {(job or deployment).lower()}"
    if job == "SUCCEEDED" or deployment == "Complete":
        return "finished", "the Ray job succeeded"
    if deployment == "Running":
        return "running", ""
    return "pending", {"Suspended": "queued for admission", "": "not started yet"}.get(deployment, deployment)


def slurm_ready(kube: Kube, allocation: Allocation, desired: list[dict[str, Any]]) -> tuple[str, str]:
    """A Slurm cluster whose gang is ready runs once its slurmctld and login node are ready too. The Controller's
    status has conditions only, and the LoginSet's counts its pods but not their readiness, so both are read
    from their pods (label ``ladder.io/slurm-role``), after their objects are found with at least their
    replicas (``LoginSet.status.replicas``)."""
    found = {o["kind"]: live_object(kube, o) for o in desired if o["kind"] in ("Controller", "LoginSet")}
    if any(live is None for live in found.values()):
        return "missing", "a part of the Slurm cluster is gone from the cluster"
    login_set = found.get("LoginSet") or {}
    wanted = (login_set.get("spec") or {}).get("replicas") or 1
    if ((login_set.get("status") or {}).get("replicas") or 0) < wanted:
        return "pending", "the login node is not created yet"
    ready: dict[str, int] = {}
    for pod in pods_of(kube, allocation):
        role = (pod["metadata"].get("labels") or {}).get(LABEL_SLURM_ROLE)
        conditions = (pod.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions) and role:
            ready[role] = ready.get(role, 0) + 1
    for role, what in (("slurmctld", "slurmctld"), ("login", "the login node")):
        if not ready.get(role):
            return "pending", f"{what} is not ready"
    return "running", ""


# --- quantities ------------------------------------------------------------------------------------------------

_SUFFIXES = {
    **{"": Decimal(1), "m": Decimal("0.001"), "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9)},
    **{"T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18), "Ki": Decimal(2**10), "Mi": Decimal(2**20)},
    **{"Gi": Decimal(2**30), "Ti": Decimal(2**40), "Pi": Decimal(2**50), "Ei": Decimal(2**60)},
}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)")


def exact_quantity(value: str) -> Decimal:
    """A Kubernetes quantity ("500m", "2k", "128Gi", "1e9") as an exact number."""
    m = _QUANTITY.fullmatch(value.strip())
    if not m or m[2] not in _SUFFIXES:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    return Decimal(m[1]) * _SUFFIXES[m[2]]


def quantity(value: str) -> float:
    """A Kubernetes quantity as a number ("500m" is 0.5, "2k" is 2000)."""
    return float(exact_quantity(value))
