"""The Kubernetes provisioning driver (``LADDER_PROVISIONER=kubernetes``): the same ``provision`` / ``status`` /
``release`` as the simulated one, by rendering an allocation's objects (``render.py``), applying them to its
hall's cluster with server-side apply, and reading their status back.

Nothing here holds a database transaction across a call to a cluster. A cluster that does not answer raises
``ClusterUnavailable`` (the task retries with backoff; the beat reconcile looks again), and the allocation keeps
its state: a state changes only on what the cluster reported.

``logs`` and ``events`` read what the workload's pods wrote (their ``log`` subresource) and what the cluster
reported about its objects (core/v1 Events), and change nothing. ``release`` sends ``workload_ended`` with both
before the teardown, as the simulated driver does.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from decimal import Decimal
from math import ceil
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.crypto import salted_hmac
from kubernetes.client.exceptions import ApiException

from core.actor import Actor
from core.metrics import RECONCILE_ERRORS
from provisioning.events import workload_ended
from provisioning.fabric import FabricRefused
from provisioning.fleet_document import Rdma
from provisioning.kubernetes import health, render
from provisioning.kubernetes.client import ClusterUnavailable, Kube
from provisioning.kubernetes.credentials import unseal
from provisioning.kubernetes.output import (
    CHECKPOINT_READ_LINES,
    LOG_KEPT_LINES,
    LOG_READ_LINES,
    checkpoint_report,
    pods_of,
    read_logs,
    workload_event,
)
from provisioning.kubernetes.recovery import GANG_KINDS, job_replace, job_stale, placement_marked
from provisioning.kubernetes.render_slurm import LABEL_SLURM_ROLE
from provisioning.kubernetes.shapes import (
    LABEL_ALLOCATION,
    LABEL_DEDICATED,
    AllocationShape,
    DeviceShape,
    NodeShape,
    TenantShape,
    namespace_for,
)
from provisioning.models import Allocation, Cluster, Hall, Node, NodeState
from provisioning.placement.rungs import Rung
from provisioning.provisioners import Provisioner
from provisioning.services.allocations import (
    allocation_checkpoint_record,
    allocation_stop,
    allocation_transition,
    nodes_sanitized,
)
from provisioning.services.attestation import (
    attestation_credential,
    attestation_overdue,
    attestation_refuse,
    attested,
)
from provisioning.services.endpoints import allocation_replicas_set, endpoint_sleep
from provisioning.services.fleet import node_fault_recover
from provisioning.services.workloads import workload_materials
from provisioning.states import AllocationState
from provisioning.workloads import LogLine, Materials, Workload, WorkloadEvent, log_text
from tenancy.models import Tenant

log = logging.getLogger(__name__)
ANNOTATION_IDLE_SINCE = "ladder.io/idle-since"
ANNOTATION_ATTESTATION = "ladder.io/attestation"
ANNOTATION_REFUSED = "evidence from a pod annotation is not accepted"
S = AllocationState
SYSTEM = Actor.system("kubernetes")


# --- shapes from the database ---------------------------------------------------------------------------------------


def tenant_shape(tenant: Tenant) -> TenantShape:
    jurisdictions = tenant.residency_jurisdictions or []
    return TenantShape(
        slug=tenant.slug,
        jurisdiction=jurisdictions[0] if tenant.sovereign and len(jurisdictions) == 1 else None,
        gpu_quota_milli=tenant.gpu_quota_milli,
    )


def allocation_shape(allocation: Allocation, materials: Materials | None = None) -> AllocationShape:
    """The allocation as placed now; once released (no active device), as it was last placed. With its workload
    and what the workload names (``materials``: resolved by the services unless given)."""
    devices = list(allocation.devices.filter(active=True).select_related("gpu__node").order_by("pk"))
    if not devices:
        devices = list(allocation.devices.select_related("gpu__node").order_by("pk"))
    nodes: dict[str, NodeShape] = {}
    for device in devices:
        node = device.gpu.node if device.gpu else None
        if node is not None and node.hostname not in nodes:
            nodes[node.hostname] = NodeShape(
                hostname=node.hostname,
                nvlink_domain=node.nvlink_domain,
                cc_tee=(node.cpu_tee or None) if node.cc_mode else None,
                rdma=Rdma.from_json(node.rdma),
            )
    return AllocationShape(
        id=allocation.pk,
        name=allocation.name,
        tenant=allocation.tenant.slug,
        rung=allocation.rung,
        performance=allocation.performance,
        security=allocation.security,
        gpu_model=allocation.gpu_model.name,
        devices=tuple(
            DeviceShape(
                hostname=d.hostname,
                gpu_index=d.gpu_index,
                gpu_uuid=d.gpu_uuid,
                mig_profile=d.mig_profile or None,
                mig_start=d.mig_start,
                share_milli=d.share_milli,
            )
            for d in devices
        ),
        nodes=tuple(nodes.values()),
        gang_size=int(allocation.spec.get("gang_size") or 1),
        workload=Workload.from_json(allocation.workload) if allocation.workload else None,
        materials=materials if materials is not None else workload_materials(allocation),
        hall=allocation.hall.code,
        base_domain=settings.LADDER_BASE_DOMAIN,
        attestation=(
            (f"{settings.LADDER_PUBLIC_URL}/api/v1/attestation/{allocation.pk}", attestation_credential(allocation.pk))
            if allocation.rung == Rung.CONFIDENTIAL_VM
            else None
        ),
        slurm_key=_slurm_key(allocation) if allocation.workload_spec.is_slurm else None,
        fabric_partition=allocation.tenant_id,  # its partition key or VLAN derive from it (provisioning.fabric)
        fabric_resource_prefix=settings.LADDER_FABRIC_RESOURCE_PREFIX,
    )


def _slurm_key(allocation: Allocation) -> str:
    """The Slurm cluster's auth/slurm key: derived from the deployment's secret key and the allocation, so every
    render of the cluster carries the same key without storing one (a new SECRET_KEY re-keys running clusters)."""
    return salted_hmac("ladder.slurm-auth-key", str(allocation.pk), algorithm="sha512").hexdigest()


def allocation_namespace(allocation: Allocation) -> str:
    """The namespace holding the allocation's objects (``shapes.namespace_for``)."""
    return namespace_for(allocation.tenant.slug, allocation.workload_spec)


def _names_only(allocation: Allocation) -> AllocationShape:
    """The allocation's shape with placeholders for what its workload names: enough to find and delete its
    objects, without reading a secret (which may be gone by then)."""
    workload = Workload.from_json(allocation.workload) if allocation.workload else None
    return allocation_shape(allocation, materials=render.placeholder_materials(workload))


def desired_objects(allocation: Allocation, kube: Kube) -> list[dict[str, Any]]:
    """Everything the allocation needs in its cluster, in apply order: the tenant's namespace set first. Bare
    metal patches the held nodes, keeping the taints others put there (a node's taint list is applied whole), then
    has Metal3 boot the tenant's OS on them (with a workload)."""
    shape = allocation_shape(allocation)
    objects = render.namespace_set(tenant_shape(allocation.tenant))
    if allocation.workload_spec.is_slurm:
        objects += render.namespace_set(tenant_shape(allocation.tenant), slurm=True)
    if allocation.rung == Rung.BARE_METAL:
        taints = {n.hostname: _taints(kube, n.hostname) for n in shape.nodes}
        return objects + render.bare_metal_node_patches(shape, taints) + render.bare_metal_host_objects(shape)
    # A soft share's claim is the tenant's for its GPU, not the allocation's: applied here, never deleted with it.
    return (
        objects
        + render.share_claims(shape)
        + [placement_marked(obj, shape) for obj in render.allocation_objects(shape)]
    )


def _taints(kube: Kube, hostname: str) -> list[dict[str, Any]]:
    node = kube.get("v1", "Node", hostname) or {}
    taints: list[dict[str, Any]] = (node.get("spec") or {}).get("taints") or []
    return taints


def kube_for(hall: Hall) -> Kube:
    return kube_for_cluster(Cluster.objects.get(hall=hall))


def kube_for_cluster(cluster: Cluster) -> Kube:
    return Kube.connect(api_server=cluster.api_server, credentials=unseal(cluster.credentials, cluster=cluster.name))


# --- reading status back ---------------------------------------------------------------------------------------------


_SUFFIXES = {
    **{"": Decimal(1), "m": Decimal("0.001"), "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9)},
    **{"T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18), "Ki": Decimal(2**10), "Mi": Decimal(2**20)},
    **{"Gi": Decimal(2**30), "Ti": Decimal(2**40), "Pi": Decimal(2**50), "Ei": Decimal(2**60)},
}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)")


def _exact_quantity(value: str) -> Decimal:
    """A Kubernetes quantity ("500m", "2k", "128Gi", "1e9") as an exact number."""
    m = _QUANTITY.fullmatch(value.strip())
    if not m or m[2] not in _SUFFIXES:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    return Decimal(m[1]) * _SUFFIXES[m[2]]


def _quantity(value: str) -> float:
    """A Kubernetes quantity as a number ("500m" is 0.5, "2k" is 2000)."""
    return float(_exact_quantity(value))


def _read(kube: Kube, obj: dict[str, Any]) -> dict[str, Any] | None:
    meta = obj["metadata"]
    return kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))


def _primary(objects: list[dict[str, Any]], allocation: Allocation) -> dict[str, Any] | None:
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
        # (``KubernetesProvisioner._slurm_ready``).
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


class KubernetesProvisioner(Provisioner):
    name = "kubernetes"
    watches_running = True

    def provision(self, allocation_id: int) -> None:
        allocation = Allocation.objects.select_related("tenant", "hall", "gpu_model").get(pk=allocation_id)
        if allocation.state == S.PLACED:
            allocation_transition(allocation=allocation, to=S.PROVISIONING, actor=SYSTEM)
            allocation.refresh_from_db()
        # A gang placed again after a node fault stays ``restarting`` until its new Job runs.
        if allocation.state not in (S.PROVISIONING, S.RESTARTING):
            return
        kube = kube_for(allocation.hall)
        try:
            desired = desired_objects(allocation, kube)
        except FabricRefused as refused:
            # Never run on a fabric it cannot be fenced on (nodes on two fabrics, a tenant without a partition).
            allocation_transition(allocation=allocation, to=S.FAILED, actor=SYSTEM, reason=f"fabric: {refused}")
            return
        for obj in desired:
            # A gang's Job (MPIJob, RayJob) is created once: applied again it would be suspended anew and Kueue
            # would requeue the running gang. One rendered for an earlier placement is replaced (``job_replace``).
            if obj["kind"] in GANG_KINDS:
                live = _read(kube, obj)
                if live is not None and job_stale(live, obj):
                    job_replace(kube, allocation, live)
                if live is not None:
                    continue
            kube.apply(obj)
        if allocation.rung == Rung.SERVERLESS:
            self._wake(kube, allocation)
        self.status(allocation_id)

    def status(self, allocation_id: int) -> None:
        allocation = Allocation.objects.select_related("tenant", "hall", "gpu_model").get(pk=allocation_id)
        if allocation.state == S.STOPPING:
            self._finish_release(allocation)
            return
        if allocation.state not in (S.PROVISIONING, S.RESTARTING, S.RUNNING):
            return
        if allocation.state == S.RUNNING and allocation.stop_at_checkpoint_since is not None:
            # The job checkpoints on SIGTERM within its grace period: stopping it now loses no work.
            allocation_stop(allocation=allocation, actor=SYSTEM)
            return
        kube = kube_for(allocation.hall)
        desired = desired_objects(allocation, kube)
        if allocation.rung == Rung.BARE_METAL:
            self._bare_metal_status(allocation, kube, desired)
            return
        primary = _primary(desired, allocation)
        if primary is None:
            raise LookupError(f"no workload is rendered for rung {allocation.rung}")
        live = _read(kube, primary)
        if live is not None and primary["kind"] in GANG_KINDS and job_stale(live, primary):
            # The old gang's Job, pinned to the failed node: gone first (its pods with it), then applied anew.
            job_replace(kube, allocation, live)
            return
        state, why = observed_state(live, allocation.rung)
        if state == "running" and primary["kind"] == "NodeSet":
            state, why = self._slurm_ready(kube, allocation, desired)
        if state == "missing":
            # Deleted out of band: put it back (the allocation is still ours to run).
            log.warning("allocation %s: %s; re-creating it", allocation.pk, why)
            for obj in desired:
                kube.apply(obj)
            return
        if state == "failed":
            allocation_transition(allocation=allocation, to=S.FAILED, actor=SYSTEM, reason=why)
        elif state == "finished":
            allocation_transition(allocation=allocation, to=S.STOPPING, actor=SYSTEM, reason=why)
            self.release(allocation_id)
        elif state == "running" and allocation.state in (S.PROVISIONING, S.RESTARTING):
            if allocation.rung == Rung.CONFIDENTIAL_VM and not self._attest(allocation, live or {}):
                return
            allocation_transition(allocation=allocation, to=S.RUNNING, actor=SYSTEM)
        elif state == "running" and allocation.rung == Rung.JOB:
            self._checkpoint_learn(kube, allocation)
        elif state == "running" and allocation.rung == Rung.SERVERLESS and live is not None:
            ready = int((live.get("status") or {}).get("readyReplicas") or 0)
            if ready >= 1:  # usage is replica-seconds: it follows the ready replicas
                allocation_replicas_set(allocation=allocation, replicas=ready, actor=SYSTEM)
            self._scale_to_zero(kube, allocation, live)
        elif state == "idle" and allocation.state == S.RUNNING and not pods_of(kube, allocation):
            # The last replica is gone (its streams drained in its grace period): the devices go back.
            endpoint_sleep(allocation=allocation, actor=SYSTEM)
        elif state == "idle" and allocation.state == S.PROVISIONING:
            self._wake(kube, allocation)

    def _slurm_ready(self, kube: Kube, allocation: Allocation, desired: list[dict[str, Any]]) -> tuple[str, str]:
        """A Slurm cluster whose gang is ready runs once its slurmctld and login node are ready too. The Controller's
        status has conditions only, and the LoginSet's counts its pods but not their readiness, so both are read
        from their pods (label ``ladder.io/slurm-role``), after their objects are found with at least their
        replicas (``LoginSet.status.replicas``)."""
        found = {o["kind"]: _read(kube, o) for o in desired if o["kind"] in ("Controller", "LoginSet")}
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

    def _wake(self, kube: Kube, allocation: Allocation) -> None:
        """A woken endpoint's Deployment (applied with its new placement) goes from 0 to 1 replica; the HPA, which
        does not act on a target at zero, takes over from there."""
        deployment = next(
            (o for o in render.allocation_objects(allocation_shape(allocation)) if o["kind"] == "Deployment"), None
        )
        live = _read(kube, deployment) if deployment is not None else None
        if live is not None and (live.get("spec") or {}).get("replicas") == 0:
            patch = {"metadata": {"annotations": {ANNOTATION_IDLE_SINCE: None}}, "spec": {"replicas": 1}}
            kube.merge_patch(live, patch)
            log.info("allocation %s: woken, scaling from zero", allocation.pk)

    def _scale_to_zero(self, kube: Kube, allocation: Allocation, deployment: dict[str, Any]) -> None:
        """An endpoint whose queue has been empty for ``LADDER_SERVERLESS_IDLE_SECONDS`` goes to 0 replicas (an
        HPA never does); once its last pod is gone it is ``idle`` and its devices are released (``status``). The
        first request after that wakes it through the gateway's check (``gateway_authorize``), not the metric:
        at zero there is no device to start a replica on until the engine places one. Queue depth is the external
        metric ``ladder_queue_depth`` the HPA scales on; without it, nothing is changed."""
        depth = self._queue_depth(kube, allocation, deployment["metadata"]["namespace"])
        if depth is None:
            return
        replicas = (deployment.get("spec") or {}).get("replicas")
        annotations = (deployment.get("metadata") or {}).get("annotations") or {}
        idle_since = annotations.get(ANNOTATION_IDLE_SINCE)
        now = timezone.now()
        if depth > 0:
            if idle_since:
                kube.merge_patch(deployment, {"metadata": {"annotations": {ANNOTATION_IDLE_SINCE: None}}})
        elif replicas != 0:
            if not idle_since:
                kube.merge_patch(deployment, {"metadata": {"annotations": {ANNOTATION_IDLE_SINCE: now.isoformat()}}})
            elif (now - datetime.fromisoformat(idle_since)).total_seconds() >= settings.LADDER_SERVERLESS_IDLE_SECONDS:
                kube.merge_patch(deployment, {"spec": {"replicas": 0}})
                log.info("allocation %s: idle since %s, scaled to zero", allocation.pk, idle_since)

    def _queue_depth(self, kube: Kube, allocation: Allocation, namespace: str) -> float | None:
        try:
            found = kube.request(
                "GET",
                f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/ladder_queue_depth",
                query=[("labelSelector", f"{LABEL_ALLOCATION}={allocation.pk}")],
            )
        except ApiException:
            return None  # no metrics adapter serving it
        return sum(_quantity(str(item.get("value", "0"))) for item in (found or {}).get("items", []))

    def _attest(self, allocation: Allocation, pod: dict[str, Any]) -> bool:
        """A confidential pod runs only once the guest's own evidence was verified: it asks Ladder for a nonce and
        sends its signed evidence to the attestation API (``api/attestation.py``). Evidence in a pod annotation
        proves nothing (whoever may edit the pod can write one): it is refused, once, on the record. A guest with
        no verified verdict after ``LADDER_ATTESTATION_DEADLINE_SECONDS`` fails the allocation."""
        if attested(allocation):
            return True
        raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_ATTESTATION)
        if (
            raw
            and not allocation.attestations.filter(verifier="ladder", detail__startswith=ANNOTATION_REFUSED).exists()
        ):
            attestation_refuse(
                allocation=allocation,
                evidence={"annotation": str(raw)[:2000]},
                detail=f"{ANNOTATION_REFUSED}: the guest posts its evidence to /api/v1/attestation/{allocation.pk}/",
                actor=SYSTEM,
            )
        if attestation_overdue(allocation, timezone.now()):
            allocation_transition(
                allocation=allocation, to=S.FAILED, actor=SYSTEM, reason="attestation: no verified evidence in time"
            )
        return False

    def _bare_metal_status(self, allocation: Allocation, kube: Kube, desired: list[dict[str, Any]]) -> None:
        patches = [o for o in desired if o["kind"] == "Node"]
        nodes = [kube.get("v1", "Node", p["metadata"]["name"]) for p in patches]
        if any(n is None for n in nodes):
            allocation_transition(allocation=allocation, to=S.FAILED, actor=SYSTEM, reason="a held node is gone")
            return
        labels = [((n or {}).get("metadata") or {}).get("labels") or {} for n in nodes]
        labelled = all(found.get(LABEL_DEDICATED) == allocation.tenant.slug for found in labels)
        if not labelled:
            for patch in patches:
                kube.apply(patch)
        elif allocation.state == S.PROVISIONING:
            allocation_transition(allocation=allocation, to=S.RUNNING, actor=SYSTEM)

    def release(self, allocation_id: int) -> None:
        """Tear the allocation down; first, when it runs a workload, send ``workload_ended`` with what the workload
        wrote and, for a job, what its checkpoint volume holds (as the simulated driver does).

        A cluster that does not answer while the logs are read raises ``ClusterUnavailable`` before anything is sent
        or deleted: the task retries and nothing is lost. The workload's object is deleted first, so a release
        retried after its teardown began (the object deleting or gone) does not send again."""
        allocation = Allocation.objects.select_related("tenant", "hall", "gpu_model").get(pk=allocation_id)
        if allocation.state != S.STOPPING:
            return
        cluster = Cluster.objects.get(hall=allocation.hall)
        kube = kube_for_cluster(cluster)
        shape = _names_only(allocation)
        if allocation.rung == Rung.BARE_METAL:
            # Metal3 deprovisions each host first (its image and user data dropped); then the wipe runs before
            # the host returns to the pool (the node stays sanitizing until it is done), in Ladder's own namespace
            # (normally installed once with the cluster setup).
            wipes = [render.sanitize_job(node.hostname, allocation.tenant.slug) for node in shape.nodes]
            if allocation.workload and not any(_read(kube, job) for job in wipes):
                self._ended(kube, cluster, allocation, [])
            for obj in render.bare_metal_host_objects(shape):
                if obj["kind"] == "BareMetalHost":
                    kube.apply(render.bare_metal_host_release(obj["metadata"]["name"]))
                else:  # the user data Secret and the SSH route
                    kube.delete(obj)
            kube.apply(render.system_namespace())
            for job in wipes:
                kube.apply(job)
        else:
            objects = render.allocation_objects(shape)
            primary = _primary(objects, allocation)
            if allocation.workload and not _teardown_begun(kube, primary):
                self._ended(kube, cluster, allocation, objects)
            first = [primary] if primary is not None else []
            for obj in [*first, *(o for o in reversed(objects) if o is not primary)]:
                kube.delete(obj)
            if allocation.workload_spec.leaves_host_dirty:
                # A Slurm cluster's slurmd ran as root with host capabilities: its hosts are wiped as bare metal's
                # are, and stay sanitizing until the wipe completes (``sanitized_nodes``).
                kube.apply(render.system_namespace())
                for node in shape.nodes:
                    kube.apply(render.sanitize_job(node.hostname, allocation.tenant.slug))
        self._finish_release(allocation)

    def _ended(self, kube: Kube, cluster: Cluster, allocation: Allocation, objects: list[dict[str, Any]]) -> None:
        """Everything is read before anything is sent: a partial log is never sent."""
        lines = read_logs(kube, allocation, tail=LOG_KEPT_LINES + 1)
        head = ""
        if len(lines) > LOG_KEPT_LINES:
            lines = lines[1:]
            head = (
                f"{lines[0].at.isoformat()} [ladder] earlier output not kept: its last {LOG_KEPT_LINES} lines follow\n"
            )
        text = head + log_text(lines)
        checkpoint = _checkpoint(kube, cluster, allocation, objects)
        workload_ended.send(type(self), allocation=allocation, logs=text, checkpoint=checkpoint, at=timezone.now())

    def _finish_release(self, allocation: Allocation) -> None:
        """``stopped`` once the cluster holds nothing of the allocation any more."""
        if allocation.state != S.STOPPING:
            return
        if allocation.rung != Rung.BARE_METAL:
            kube = kube_for(allocation.hall)
            left = [obj for obj in render.allocation_objects(_names_only(allocation)) if _read(kube, obj)]
            if left:
                return
        allocation_transition(allocation=allocation, to=S.STOPPED, actor=SYSTEM)

    def sanitized_nodes(self, now: datetime) -> int:
        """Hosts whose sanitize Job completed lose the tenant's taint and label and return to the pool. A sanitizing
        host without its Job (one a Slurm cluster left when a fault or defragmentation moved it; a Job deleted out
        of band) gets it now: no host leaves sanitizing unwiped."""
        done = []
        for node in Node.objects.filter(state=NodeState.SANITIZING).select_related("hall"):
            job = render.sanitize_job(node.hostname, "")
            kube = kube_for(node.hall)
            live = _read(kube, job)
            if live is None:
                kube.apply(render.system_namespace())
                kube.apply(job)
            elif observed_state(live, Rung.BARE_METAL)[0] == "finished":
                kube.apply(render.node_release(node.hostname, _taints(kube, node.hostname)))
                kube.delete(job)
                done.append(node.hostname)
        return nodes_sanitized(actor=SYSTEM, older_than=now, hostnames=done) if done else 0

    def last_checkpoint(self, allocation: Allocation, at: datetime) -> datetime | None:
        """The last checkpoint the workload reported before ``at`` (kept on the allocation by reconciliation while
        its nodes were alive); without one in this run, the start of the run, which resumed from a checkpoint."""
        since = allocation.running_since
        reported = allocation.checkpoint_at
        if reported is not None and reported <= at and (since is None or reported >= since):
            return reported
        return since

    # --- fault recovery --------------------------------------------------------------------------------------------

    def node_faults(self, now: datetime) -> int:
        """Read every GPU node of each registered cluster (one list per cluster) and recover from the failing ones
        (``health.node_fault``): quarantined, audited with the condition, then ``node_failed``. A cluster that does
        not answer is skipped whole: nothing changes on a missing answer. Returns how many nodes were found
        failing (already quarantined ones included)."""
        faults = health.fault_conditions(settings.LADDER_NODE_FAULT_CONDITIONS or health.DEFAULT_FAULT_CONDITIONS)
        found = 0
        for cluster in Cluster.objects.select_related("hall"):
            ours = {n.hostname: n for n in Node.objects.filter(hall=cluster.hall).exclude(state=NodeState.FAILED)}
            if not ours:
                continue
            try:
                kube = kube_for_cluster(cluster)
                listed = kube.list("v1", "Node")
            except ClusterUnavailable as error:
                log.warning("cluster %s: node health not read: %s", cluster.name, error)
                RECONCILE_ERRORS.labels(cluster.name, "node_health").inc()
                continue
            for obj in listed:
                node = ours.get(obj["metadata"]["name"])
                fault = health.node_fault(
                    obj, faults=faults, now=now, not_ready_grace=settings.LADDER_NODE_NOT_READY_GRACE_SECONDS
                )
                if node is None or fault is None:
                    continue
                found += 1
                self._checkpoints_before_fault(kube, node)
                recovered = node_fault_recover(
                    node=node,
                    cause=fault.cause,
                    evidence=fault.as_dict(),
                    fault_at=min(fault.since or now, now),
                    actor=SYSTEM,
                    last_checkpoint=self.last_checkpoint,
                )
                if recovered is not None:
                    log.warning("node %s failing (%s): %s", node.hostname, fault.cause, recovered)
        return found

    def _checkpoints_before_fault(self, kube: Kube, node: Node) -> None:
        """One last look at the logs of the jobs running on a failing node: a member on a healthy node may have
        reported a checkpoint since the last reconcile. Best effort: the node's own pods may not answer."""
        running = Allocation.objects.filter(
            state=S.RUNNING, rung=Rung.JOB, devices__gpu__node=node, devices__active=True
        ).distinct()
        for allocation in running.select_related("tenant"):
            try:
                self._checkpoint_learn(kube, allocation)
            except (ApiException, ClusterUnavailable) as error:
                log.info("allocation %s: checkpoint not read before the fault: %s", allocation.pk, error)

    def _checkpoint_learn(self, kube: Kube, allocation: Allocation) -> None:
        """Keep the latest checkpoint the gang reported on stdout (``LADDER_CHECKPOINT`` lines) since the one kept."""
        since = max(filter(None, (allocation.checkpoint_at, allocation.running_since)), default=None)
        lines = read_logs(kube, allocation, since=since, tail=CHECKPOINT_READ_LINES)
        reported = [found for line in lines if (found := checkpoint_report(line)) is not None]
        if reported:
            at, step = reported[-1]
            allocation_checkpoint_record(allocation=allocation, at=min(at, timezone.now()), step=step)

    def reconciled(self, at: datetime) -> None:
        Cluster.objects.update(reconciled_at=at)

    def logs(self, allocation: Allocation, *, since: datetime | None = None, tail: int | None = None) -> list[LogLine]:
        """The containers of the allocation's pods (label ``ladder.io/allocation`` in the tenant's namespace), from
        their ``log`` subresource, merged in time order, at most ``LOG_READ_LINES``. A line's source is the pod's
        name, a gang member's ``worker-<completion index>``, or ``console`` for a VM: KubeVirt's serial console log,
        the ``guest-console-log`` container of the VM's virt-launcher pod.

        Bare metal has none: the tenant holds the whole host and Ladder runs no pod on it, so its console is the
        host's BMC (Metal3/Ironic), which the cluster's API does not serve."""
        if allocation.rung == Rung.BARE_METAL:
            return []
        limit = max(0, min(tail, LOG_READ_LINES)) if tail is not None else LOG_READ_LINES
        return read_logs(kube_for(allocation.hall), allocation, since=since, tail=limit)

    def events(self, allocation: Allocation) -> list[WorkloadEvent]:
        """The core/v1 Events of the tenant's namespace about the allocation's objects and pods (the Job's, VM's
        and Deployment's events, and their pods' scheduling, pulls, starts, restarts), in time order. The
        events.k8s.io/v1 API serves the same Events, so they are read once. Bare metal has no object there: none."""
        if not allocation.devices.exists():
            return []  # never placed: nothing of it was ever in the cluster
        kube = kube_for(allocation.hall)
        namespace = allocation_namespace(allocation)
        names = {
            obj["metadata"]["name"]
            for obj in render.allocation_objects(allocation_shape(allocation))
            if obj["metadata"].get("namespace") == namespace
        }
        names |= {pod["metadata"]["name"] for pod in pods_of(kube, allocation)}
        found = [
            workload_event(event)
            for name in sorted(names)
            for event in kube.list("v1", "Event", namespace=namespace, fields={"involvedObject.name": name})
        ]
        return sorted(found, key=lambda event: event.at)


def _teardown_begun(kube: Kube, primary: dict[str, Any] | None) -> bool:
    """The workload's object is deleting or gone: an earlier release began the teardown (and sent what it wrote),
    or there is nothing left of it to read."""
    live = _read(kube, primary) if primary is not None else None
    return live is None or bool(live["metadata"].get("deletionTimestamp"))


def _checkpoint(
    kube: Kube, cluster: Cluster, allocation: Allocation, objects: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """A job's checkpoint volume: where it is and its size (the claim's bound capacity); None for other rungs, or
    when the claim never bound (nothing could be written)."""
    if allocation.rung != Rung.JOB:
        return None
    claim = next((obj for obj in objects if obj["kind"] == "PersistentVolumeClaim"), None)
    live = _read(kube, claim) if claim is not None else None
    storage = (((live or {}).get("status") or {}).get("capacity") or {}).get("storage")
    if live is None or not storage:
        return None
    meta = live["metadata"]
    return {
        "location": f"pvc://{cluster.name}/{meta['namespace']}/{meta['name']}",
        "size_bytes": ceil(_exact_quantity(str(storage))),
    }
