"""The Kubernetes provisioning driver (``LADDER_PROVISIONER=kubernetes``): the same ``provision`` / ``status`` /
``release`` as the simulated one, by rendering the objects an allocation needs (``desired.py``, ``render.py``),
applying them to its hall's cluster with server-side apply, and reading their status back (``status.py``; a
serverless endpoint's replicas in ``scaling.py``).

Nothing here holds a database transaction across a call to a cluster. A cluster that does not answer raises
``ClusterUnavailable`` (the task retries with backoff; the beat reconcile looks again), and the allocation keeps
its state: a state changes only on what the cluster reported.

``logs`` and ``events`` read what the workload's pods wrote (their ``log`` subresource) and what the cluster
reported about its objects (core/v1 Events), and change nothing (``output.py``). ``release`` sends
``workload_ended`` with both before the teardown, as the simulated driver does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from math import ceil
from typing import Any

from django.conf import settings
from django.utils import timezone
from kubernetes.client.exceptions import ApiException

from core.actor import Actor
from core.metrics import RECONCILE_ERRORS
from provisioning.domain.cold_start import RequestTimes
from provisioning.domain.fabric import FabricRefused
from provisioning.domain.rungs import Rung
from provisioning.domain.states import AllocationState
from provisioning.domain.workload_output import LogLine, WorkloadEvent, log_text
from provisioning.drivers.base import Provisioner
from provisioning.drivers.kubernetes import gateway_stats, health, render
from provisioning.drivers.kubernetes.client import ClusterUnavailable, Kube
from provisioning.drivers.kubernetes.clusters import kube_for, kube_for_cluster
from provisioning.drivers.kubernetes.cold_starts import cold_start_read, prepull_apply, prepull_delete
from provisioning.drivers.kubernetes.desired import (
    allocation_namespace,
    allocation_shape,
    desired_objects,
    node_taints,
    teardown_shape,
)
from provisioning.drivers.kubernetes.output import (
    CHECKPOINT_READ_LINES,
    LOG_KEPT_LINES,
    LOG_READ_LINES,
    checkpoint_report,
    pods_of,
    read_logs,
    workload_event,
)
from provisioning.drivers.kubernetes.recovery import GANG_KINDS, job_replace, job_stale
from provisioning.drivers.kubernetes.render_prepull import prepull_ref
from provisioning.drivers.kubernetes.scaling import (
    ANNOTATION_IDLE_SINCE,
    deployment_scale,
    deployment_wake,
    token_policy_apply,
    token_policy_withdraw,
)
from provisioning.drivers.kubernetes.shapes import LABEL_DEDICATED
from provisioning.drivers.kubernetes.status import (
    exact_quantity,
    live_object,
    observed_state,
    primary_object,
    slurm_ready,
)
from provisioning.drivers.kubernetes.volumes import KubernetesVolumes, volume_cluster_refusal
from provisioning.drivers.volumes import VolumeBackend
from provisioning.events import workload_ended
from provisioning.models import Allocation, Cluster, Node, NodeState
from provisioning.selectors import allocations_on
from provisioning.services.attestation import attestation_overdue, attestation_refuse, attested
from provisioning.services.cold_starts import active_hosts, prepull_hosts
from provisioning.services.devices import nodes_sanitized
from provisioning.services.endpoints import allocation_replicas_set, endpoint_sleep
from provisioning.services.faults import allocation_checkpoint_record
from provisioning.services.fleet import node_fault_recover
from provisioning.services.preempting import released_state
from provisioning.services.stopping import allocation_stop
from provisioning.services.transitions import allocation_transition

log = logging.getLogger(__name__)
ANNOTATION_ATTESTATION = "ladder.io/attestation"
ANNOTATION_REFUSED = "evidence from a pod annotation is not accepted"
S = AllocationState
SYSTEM = Actor.system("kubernetes")


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
        refused = volume_cluster_refusal(allocation)
        if refused is not None:
            # A claim is mounted in its own cluster only: a pod here would wait for it for ever.
            allocation_transition(allocation=allocation, to=S.FAILED, actor=SYSTEM, reason=f"volumes: {refused}")
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
                live = live_object(kube, obj)
                if live is not None and job_stale(live, obj):
                    job_replace(kube, allocation, live)
                if live is not None:
                    continue
            kube.apply(obj)
        if allocation.rung == Rung.SERVERLESS:
            deployment_wake(kube, allocation)
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
        primary = primary_object(desired, allocation)
        if primary is None:
            raise LookupError(f"no workload is rendered for rung {allocation.rung}")
        live = live_object(kube, primary)
        if live is not None and primary["kind"] in GANG_KINDS and job_stale(live, primary):
            # The old gang's Job, pinned to the failed node: gone first (its pods with it), then applied anew.
            job_replace(kube, allocation, live)
            return
        state, why = observed_state(live, allocation.rung)
        if state == "running" and primary["kind"] == "NodeSet":
            state, why = slurm_ready(kube, allocation, desired)
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
            if allocation.rung == Rung.SERVERLESS:
                token_policy_apply(kube, allocation)
            woken = allocation.rung == Rung.SERVERLESS and allocation.woke_at is not None
            woken = woken and allocation.cold_start_ms is None  # its wake ends here
            cold = cold_start_read(kube, allocation) if woken else None
            if allocation_transition(allocation=allocation, to=S.RUNNING, actor=SYSTEM, cold_start=cold) and woken:
                prepull_delete(kube, allocation)  # its image is where it runs: the pods holding it elsewhere go
        elif state == "running" and allocation.rung == Rung.JOB:
            self._checkpoint_learn(kube, allocation)
        elif state == "running" and allocation.rung == Rung.SERVERLESS and live is not None:
            ready = int((live.get("status") or {}).get("readyReplicas") or 0)
            if ready >= 1:  # usage is replica-seconds: it follows the ready replicas
                allocation_replicas_set(allocation=allocation, replicas=ready, actor=SYSTEM)
                if not (live.get("metadata") or {}).get("annotations", {}).get(ANNOTATION_IDLE_SINCE):
                    token_policy_apply(kube, allocation)  # put back if someone deleted it
            deployment_scale(kube, allocation, live)
        elif state == "idle" and allocation.state == S.RUNNING and not pods_of(kube, allocation):
            # The last replica is gone (its streams drained in its grace period): the devices go back, its calls go
            # to Ladder's check, which wakes it (its token policy withdrawn already unless its autoscaler went to
            # zero), and its image is pulled in advance where the next replica is likely to go.
            token_policy_withdraw(kube, allocation)
            hosts = active_hosts(allocation)
            if endpoint_sleep(allocation=allocation, actor=SYSTEM) and settings.LADDER_SERVERLESS_PREPULL:
                allocation.refresh_from_db()
                prepull_apply(kube, allocation, prepull_hosts(allocation=allocation, last_hosts=hosts))
        elif state == "idle" and allocation.state == S.PROVISIONING:
            deployment_wake(kube, allocation)

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
        shape = teardown_shape(allocation)
        if allocation.rung == Rung.BARE_METAL:
            # Metal3 deprovisions each host first (its image and user data dropped); then the wipe runs before
            # the host returns to the pool (the node stays sanitizing until it is done), in Ladder's own namespace
            # (normally installed once with the cluster setup).
            wipes = [render.sanitize_job(node.hostname, allocation.tenant.slug) for node in shape.nodes]
            if allocation.workload and not any(live_object(kube, job) for job in wipes):
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
            primary = primary_object(objects, allocation)
            if allocation.workload and not _teardown_begun(kube, primary):
                self._ended(kube, cluster, allocation, objects)
            first = [primary] if primary is not None else []
            if allocation.rung == Rung.SERVERLESS:  # not in the rendered set: it exists only while it runs
                first.append(render.endpoint_token_policy(shape))
            for obj in [*first, *(o for o in reversed(objects) if o is not primary)]:
                kube.delete(obj)
            if allocation.rung == Rung.SERVERLESS:
                kube.delete(prepull_ref(shape))  # the pods that held its image on the hosts it might have gone to
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
        """``stopped`` once the cluster holds nothing of the allocation any more (``queued``: preempted work that
        is to be requeued, ``released_state``)."""
        if allocation.state != S.STOPPING:
            return
        if allocation.rung != Rung.BARE_METAL:
            kube = kube_for(allocation.hall)
            left = [obj for obj in render.allocation_objects(teardown_shape(allocation)) if live_object(kube, obj)]
            if left:
                return
        allocation_transition(allocation=allocation, to=released_state(allocation), actor=SYSTEM)

    def sanitized_nodes(self, now: datetime) -> int:
        """Hosts whose sanitize Job completed lose the tenant's taint and label and return to the pool. A sanitizing
        host without its Job (one a Slurm cluster left when a fault or defragmentation moved it; a Job deleted out
        of band) gets it now: no host leaves sanitizing unwiped."""
        done = []
        for node in Node.objects.filter(state=NodeState.SANITIZING).select_related("hall"):
            job = render.sanitize_job(node.hostname, "")
            kube = kube_for(node.hall)
            live = live_object(kube, job)
            if live is None:
                kube.apply(render.system_namespace())
                kube.apply(job)
            elif observed_state(live, Rung.BARE_METAL)[0] == "finished":
                kube.apply(render.node_release(node.hostname, node_taints(kube, node.hostname)))
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
        running = allocations_on(node, (S.RUNNING,)).filter(rung=Rung.JOB)
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

    def volumes(self) -> VolumeBackend:
        """PersistentVolumeClaims, VolumeSnapshots and the key Secrets beside them (``volumes.py``)."""
        return KubernetesVolumes()

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

    def request_times(self, allocation_ids: Sequence[int], *, now: datetime) -> dict[int, RequestTimes]:
        """From the gateway's request histograms in Prometheus and the check's holds (``gateway_stats``)."""
        return gateway_stats.request_times(allocation_ids, now=now)

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
    live = live_object(kube, primary) if primary is not None else None
    return live is None or bool(live["metadata"].get("deletionTimestamp"))


def _checkpoint(
    kube: Kube, cluster: Cluster, allocation: Allocation, objects: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """A job's checkpoint volume: where it is and its size (the claim's bound capacity); None for other rungs, or
    when the claim never bound (nothing could be written)."""
    if allocation.rung != Rung.JOB:
        return None
    claim = next((obj for obj in objects if obj["kind"] == "PersistentVolumeClaim"), None)
    live = live_object(kube, claim) if claim is not None else None
    storage = (((live or {}).get("status") or {}).get("capacity") or {}).get("storage")
    if live is None or not storage:
        return None
    meta = live["metadata"]
    return {
        "location": f"pvc://{cluster.name}/{meta['namespace']}/{meta['name']}",
        "size_bytes": ceil(exact_quantity(str(storage))),
    }
