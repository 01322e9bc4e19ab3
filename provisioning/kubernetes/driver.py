"""The Kubernetes provisioning driver (``LADDER_PROVISIONER=kubernetes``): the same ``provision`` / ``status`` /
``release`` as the simulated one, by rendering an allocation's objects (``render.py``), applying them to its
hall's cluster with server-side apply, and reading their status back.

Nothing here holds a database transaction across a call to a cluster. A cluster that does not answer raises
``ClusterUnavailable`` (the task retries with backoff; the beat reconcile looks again), and the allocation keeps
its state: a state changes only on what the cluster reported.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone
from kubernetes.client.exceptions import ApiException

from core.actor import Actor
from provisioning.kubernetes import render
from provisioning.kubernetes.client import Kube
from provisioning.kubernetes.credentials import unseal
from provisioning.kubernetes.shapes import (
    LABEL_ALLOCATION,
    LABEL_DEDICATED,
    AllocationShape,
    DeviceShape,
    NodeShape,
    TenantShape,
)
from provisioning.models import Allocation, Cluster, Hall, Node, NodeState
from provisioning.placement.isolation import Rung
from provisioning.provisioners import Provisioner
from provisioning.services.allocations import allocation_stop, allocation_transition, nodes_sanitized
from provisioning.services.attestation import attestation_record, attested
from provisioning.services.workloads import workload_materials
from provisioning.states import AllocationState
from provisioning.workloads import LogLine, Materials, Workload, WorkloadEvent
from tenancy.models import Tenant

log = logging.getLogger(__name__)
ANNOTATION_IDLE_SINCE = "ladder.io/idle-since"
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
    )


def desired_objects(allocation: Allocation, kube: Kube) -> list[dict[str, Any]]:
    """Everything the allocation needs in its cluster, in apply order: the tenant's namespace set first. Bare
    metal patches the held nodes, keeping the taints others put there (a node's taint list is applied whole), then
    has Metal3 boot the tenant's OS on them (with a workload)."""
    shape = allocation_shape(allocation)
    objects = render.namespace_set(tenant_shape(allocation.tenant))
    if allocation.rung == Rung.BARE_METAL:
        taints = {n.hostname: _taints(kube, n.hostname) for n in shape.nodes}
        return objects + render.bare_metal_node_patches(shape, taints) + render.bare_metal_host_objects(shape)
    return objects + render.allocation_objects(shape)


def _taints(kube: Kube, hostname: str) -> list[dict[str, Any]]:
    node = kube.get("v1", "Node", hostname) or {}
    taints: list[dict[str, Any]] = (node.get("spec") or {}).get("taints") or []
    return taints


def kube_for(hall: Hall) -> Kube:
    return kube_for_cluster(Cluster.objects.get(hall=hall))


def kube_for_cluster(cluster: Cluster) -> Kube:
    return Kube.connect(api_server=cluster.api_server, credentials=unseal(cluster.credentials, cluster=cluster.name))


# --- reading status back ---------------------------------------------------------------------------------------------


_SUFFIXES = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9}


def _quantity(value: str) -> float:
    """A Kubernetes quantity as a number ("500m" is 0.5, "2k" is 2000)."""
    scale = _SUFFIXES.get(value[-1:], 1.0)
    return float(value[:-1] if value[-1:] in _SUFFIXES else value) * scale


def _read(kube: Kube, obj: dict[str, Any]) -> dict[str, Any] | None:
    meta = obj["metadata"]
    return kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))


def _primary(objects: list[dict[str, Any]], allocation: Allocation) -> dict[str, Any] | None:
    """The object whose status says whether the allocation runs: its Pod, Job, VirtualMachine or Deployment."""
    kinds = ("Pod", "Job", "VirtualMachine", "Deployment")
    ours = [o for o in objects if o["kind"] in kinds and (o["metadata"].get("labels") or {}).get(LABEL_ALLOCATION)]
    return ours[0] if ours else None


def observed_state(obj: dict[str, Any] | None, rung: str) -> tuple[str, str]:
    """Map a workload's status to ``(running|pending|failed|finished|missing, why)``."""
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
    if kind == "VirtualMachine":
        printable = status.get("printableStatus", "")
        if status.get("ready") is True or printable == "Running":
            return "running", ""
        if printable in ("ErrorUnschedulable", "ErrImagePull", "CrashLoopBackOff", "ErrorPvcNotFound"):
            return "failed", printable
        return "pending", printable or "starting"
    if kind == "Deployment":
        if (status.get("availableReplicas") or 0) >= 1 or ((obj.get("spec") or {}).get("replicas") == 0):
            return "running", ""  # scaled to zero by the driver still counts as a live endpoint
        return "pending", "no replica is available yet"
    return "running", ""


class KubernetesProvisioner(Provisioner):
    name = "kubernetes"
    watches_running = True

    def provision(self, allocation_id: int) -> None:
        allocation = Allocation.objects.select_related("tenant", "hall", "gpu_model").get(pk=allocation_id)
        if allocation.state in (S.PLACED, S.RESTARTING):
            allocation_transition(allocation=allocation, to=S.PROVISIONING, actor=SYSTEM)
            allocation.refresh_from_db()
        if allocation.state != S.PROVISIONING:
            return
        kube = kube_for(allocation.hall)
        for obj in desired_objects(allocation, kube):
            # A gang's Job is created once: applied again it would be suspended anew and Kueue would requeue the
            # running gang. (A restart after a node failure is the Job's own: its pods are replaced.)
            if obj["kind"] == "Job" and _read(kube, obj) is not None:
                continue
            kube.apply(obj)
        self.status(allocation_id)

    def status(self, allocation_id: int) -> None:
        allocation = Allocation.objects.select_related("tenant", "hall", "gpu_model").get(pk=allocation_id)
        if allocation.state == S.STOPPING:
            self._finish_release(allocation)
            return
        if allocation.state not in (S.PROVISIONING, S.RUNNING):
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
        state, why = observed_state(live, allocation.rung)
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
        elif state == "running" and allocation.state == S.PROVISIONING:
            if allocation.rung == Rung.CONFIDENTIAL_VM and not self._attest(allocation, live or {}):
                return
            allocation_transition(allocation=allocation, to=S.RUNNING, actor=SYSTEM)
        elif state == "running" and allocation.rung == Rung.SERVERLESS and live is not None:
            self._scale_to_zero(kube, allocation, live)

    def _scale_to_zero(self, kube: Kube, allocation: Allocation, deployment: dict[str, Any]) -> None:
        """An endpoint idle for ``LADDER_SERVERLESS_IDLE_SECONDS`` goes to 0 replicas (an HPA never does); the
        first queued request brings it back to 1, and the HPA takes over. Queue depth is the external metric
        ``ladder_queue_depth`` the HPA scales on; without it, nothing is changed."""
        depth = self._queue_depth(kube, allocation, deployment["metadata"]["namespace"])
        if depth is None:
            return
        replicas = (deployment.get("spec") or {}).get("replicas")
        annotations = (deployment.get("metadata") or {}).get("annotations") or {}
        idle_since = annotations.get(ANNOTATION_IDLE_SINCE)
        now = timezone.now()
        if depth > 0:
            patch: dict[str, Any] = {"metadata": {"annotations": {ANNOTATION_IDLE_SINCE: None}}}
            if replicas == 0:
                patch["spec"] = {"replicas": 1}
                log.info("allocation %s: %s queued requests, scaling from zero", allocation.pk, depth)
            if replicas == 0 or idle_since:
                kube.merge_patch(deployment, patch)
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
        """A confidential pod runs only with verified evidence, which the guest's attestation agent reports in
        the pod annotation ``ladder.io/attestation`` (JSON)."""
        if attested(allocation):
            return True
        raw = ((pod.get("metadata") or {}).get("annotations") or {}).get("ladder.io/attestation")
        if not raw:
            return False  # not reported yet: look again on the next reconcile
        try:
            evidence = json.loads(raw)
        except ValueError:
            evidence = {"unreadable": raw[:200]}
        record = attestation_record(allocation=allocation, evidence=evidence, actor=SYSTEM)
        if not record.verified:
            allocation_transition(
                allocation=allocation, to=S.FAILED, actor=SYSTEM, reason=f"attestation: {record.detail}"
            )
        return record.verified

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
        allocation = Allocation.objects.select_related("tenant", "hall", "gpu_model").get(pk=allocation_id)
        if allocation.state != S.STOPPING:
            return
        kube = kube_for(allocation.hall)
        shape = allocation_shape(allocation)
        if allocation.rung == Rung.BARE_METAL:
            # The wipe runs before the host returns to the pool (the node stays sanitizing until it is done), in
            # Ladder's own namespace (normally installed once with the cluster setup).
            kube.apply(render.system_namespace())
            for node in shape.nodes:
                kube.apply(render.sanitize_job(node.hostname, allocation.tenant.slug))
        else:
            for obj in reversed(render.allocation_objects(shape)):
                kube.delete(obj)
        self._finish_release(allocation)

    def _finish_release(self, allocation: Allocation) -> None:
        """``stopped`` once the cluster holds nothing of the allocation any more."""
        if allocation.state != S.STOPPING:
            return
        if allocation.rung != Rung.BARE_METAL:
            kube = kube_for(allocation.hall)
            left = [obj for obj in render.allocation_objects(allocation_shape(allocation)) if _read(kube, obj)]
            if left:
                return
        allocation_transition(allocation=allocation, to=S.STOPPED, actor=SYSTEM)

    def sanitized_nodes(self, now: datetime) -> int:
        """Hosts whose sanitize Job completed lose the tenant's taint and label and return to the pool."""
        done = []
        for node in Node.objects.filter(state=NodeState.SANITIZING).select_related("hall"):
            job = render.sanitize_job(node.hostname, "")
            kube = kube_for(node.hall)
            live = _read(kube, job)
            if observed_state(live, Rung.BARE_METAL)[0] == "finished":
                kube.apply(render.node_release(node.hostname, _taints(kube, node.hostname)))
                kube.delete(job)
                done.append(node.hostname)
        return nodes_sanitized(actor=SYSTEM, older_than=now, hostnames=done) if done else 0

    def last_checkpoint(self, allocation: Allocation, at: datetime) -> datetime | None:
        return None  # the cluster does not report checkpoints yet: the fault's time is billed up to

    def reconciled(self, at: datetime) -> None:
        Cluster.objects.update(reconciled_at=at)

    def logs(self, allocation: Allocation, *, since: datetime | None = None, tail: int | None = None) -> list[LogLine]:
        return []  # read from the pods' log subresource: being built

    def events(self, allocation: Allocation) -> list[WorkloadEvent]:
        return []  # read from the namespace's Events: being built
