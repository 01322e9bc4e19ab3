"""Provisioning drivers behind one interface (``Provisioner``), so nothing above them changes with the driver.

``simulated`` (the embedded default) moves allocations along with configurable delays; node failures are
injected by an operator failing a node (``POST /api/v1/ops/nodes/{id}/fail``). ``LADDER_PROVISIONER`` picks it.
"""

from __future__ import annotations

import base64
import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import ClassVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.db import DatabaseError
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from core.actor import Actor
from core.metrics import RECONCILE_ERRORS
from provisioning.domain.attestation_evidence import GuestKeys, open_sealed, sign
from provisioning.domain.cold_start import RequestTimes, percentiles
from provisioning.domain.os_images import DEFAULT_OS_IMAGE
from provisioning.domain.rungs import rung_facts, rungs_where
from provisioning.domain.states import WORKING, AllocationState
from provisioning.domain.workload_access import Access, access
from provisioning.domain.workload_output import LogLine, WorkloadEvent, log_text
from provisioning.domain.workloads import Workload
from provisioning.drivers import simulated
from provisioning.drivers.volumes import SimulatedVolumes, VolumeBackend
from provisioning.events import workload_ended
from provisioning.gpu_faults import xid_faults_recover
from provisioning.models import Allocation, Node, NodeState
from provisioning.selectors import endpoint_request_samples
from provisioning.services.attestation import (
    allocation_host,
    attestation_challenge,
    attestation_overdue,
    attestation_release,
    attestation_submit,
    attested,
)
from provisioning.services.cold_starts import (
    REQUEST_SAMPLES_KEPT,
    active_hosts,
    endpoint_image,
    images_pulled,
    prepull_hosts,
    simulated_cold_start,
)
from provisioning.services.devices import nodes_sanitized
from provisioning.services.endpoints import endpoint_sleep
from provisioning.services.placing import queued_place
from provisioning.services.preempting import released_state
from provisioning.services.stopping import allocation_stop
from provisioning.services.transitions import allocation_transition
from provisioning.services.workloads import endpoint_autoscaling, os_images

S = AllocationState
SYSTEM = Actor.system("provisioner")


class Provisioner(ABC):
    """What every driver does; nothing above the drivers asks which one runs."""

    name: ClassVar[str]
    # A running workload can fail, vanish or idle in its backend: reconciliation looks at every running one.
    watches_running: ClassVar[bool] = False

    @abstractmethod
    def provision(self, allocation_id: int) -> None:
        """Make the placed allocation real (placed -> provisioning -> running)."""

    @abstractmethod
    def status(self, allocation_id: int) -> None:
        """Read the backend and move the allocation to the state it is really in."""

    @abstractmethod
    def release(self, allocation_id: int) -> None:
        """Tear the allocation down (stopping -> stopped)."""

    @abstractmethod
    def sanitized_nodes(self, now: datetime) -> int:
        """Return the bare-metal hosts whose wipe has finished to the pool; how many."""

    @abstractmethod
    def last_checkpoint(self, allocation: Allocation, at: datetime) -> datetime | None:
        """When the job last saved a checkpoint before ``at`` (None: unknown). A job is billed on goodput:
        work since its last checkpoint, lost when a node fails under it, is not billed."""

    @abstractmethod
    def reconciled(self, at: datetime) -> None:
        """Every allocation in flight was looked at, at ``at``."""

    @abstractmethod
    def volumes(self) -> VolumeBackend:
        """Its backend for the tenants' volumes and snapshots."""

    def node_faults(self, now: datetime) -> int:
        """Look at the health of every node the backend reports on and recover from the failing ones (quarantine,
        then ``node_failed``); how many were found failing. Runs first on each reconcile. A backend without a
        health signal of its own (the simulated fleet: an operator fails a node) finds none."""
        return 0

    @abstractmethod
    def logs(self, allocation: Allocation, *, since: datetime | None = None, tail: int | None = None) -> list[LogLine]:
        """The workload's output in time order (``since``: after that moment; ``tail``: the last lines only).
        Reads only: never changes the allocation."""

    @abstractmethod
    def events(self, allocation: Allocation) -> list[WorkloadEvent]:
        """What the backend reports about the workload, in time order (Ladder's own state changes are added by
        the caller from the audit log)."""

    def endpoint_url(self, allocation: Allocation) -> str | None:
        """Where a serverless endpoint is served; None: at the gateway's hostname under the base domain."""
        return None

    def request_times(self, allocation_ids: Sequence[int], *, now: datetime) -> dict[int, RequestTimes]:
        """Each serverless endpoint's requests: P50/P90/P99 of their queue delay and execution time. Here (the
        simulated fleet, whose endpoints Ladder serves itself) the last requests each endpoint answered, as
        ``services.cold_starts.endpoint_request_observe`` kept them."""
        found = {}
        for allocation_id in allocation_ids:
            requests = endpoint_request_samples(allocation_id)
            found[allocation_id] = RequestTimes(
                queue_delay=percentiles(queue for queue, _ in requests),
                execution=percentiles(took for _, took in requests),
                window=f"the last {REQUEST_SAMPLES_KEPT} requests",
            )
        return found

    def access(self, allocation: Allocation) -> Access:
        """How the tenant reaches the allocation (the same on every driver but for ``endpoint_url``)."""
        return access(
            allocation_id=allocation.pk,
            tenant=allocation.tenant.slug,
            rung=allocation.rung,
            hall=allocation.hall.code,
            workload=Workload.from_json(allocation.workload) if allocation.workload else None,
            base_domain=settings.LADDER_BASE_DOMAIN,
            ssh_port=settings.LADDER_SSH_GATEWAY_PORT,
            endpoint_url=self.endpoint_url(allocation),
            console_url=f"{settings.LADDER_PUBLIC_URL}/api/v1/allocations/{allocation.pk}/logs?follow=1",
        )


def simulated_node_key(hostname: str) -> Ed25519PrivateKey:
    """The attestation key of a simulated confidential host (derived from ``SECRET_KEY`` and the hostname). Its
    public half is what an operator registers for the node (``seed_demo`` does for the demo fleet)."""
    seed = hashlib.sha256(f"ladder simulated node key\x00{settings.SECRET_KEY}\x00{hostname}".encode()).digest()
    return Ed25519PrivateKey.from_private_bytes(seed)


def simulated_node_public_key(hostname: str) -> str:
    return base64.b64encode(simulated_node_key(hostname).public_key().public_bytes_raw()).decode()


class SimulatedProvisioner(Provisioner):
    name = "simulated"

    @property
    def delay(self) -> timedelta:
        return timedelta(seconds=settings.LADDER_SIM_PROVISION_SECONDS)

    def provision(self, allocation_id: int) -> None:
        allocation = Allocation.objects.get(pk=allocation_id)
        if allocation.state == S.PLACED:
            allocation_transition(allocation=allocation, to=S.PROVISIONING, actor=SYSTEM)
        self.status(allocation_id)

    def status(self, allocation_id: int) -> None:
        allocation = Allocation.objects.get(pk=allocation_id)
        now = timezone.now()
        if allocation.state in (S.PROVISIONING, S.RESTARTING):
            self._start(allocation, now)
        elif (
            allocation.state == S.RUNNING
            and allocation.stop_at_checkpoint_since is not None
            and now >= self.next_checkpoint(allocation)
        ):
            allocation_stop(allocation=allocation, actor=SYSTEM)
        elif allocation.state == S.RUNNING and rung_facts(allocation.rung).endpoint:
            self._scale_to_zero(allocation, now)

    def _start(self, allocation: Allocation, now: datetime) -> None:
        """``running`` after ``LADDER_SIM_PROVISION_SECONDS`` (a restarted gang reads restarting until it runs again
        on its new nodes, as long as a first start takes). An endpoint woken from zero runs once its modelled cold
        start is over (``simulated_cold_start``: the device wait, the image unless its hosts hold it, the init and
        the model), from the moment it was warm; its hosts then hold its image."""
        endpoint = rung_facts(allocation.rung).endpoint
        woke_at = allocation.woke_at if endpoint and allocation.cold_start_ms is None else None
        modelled = simulated_cold_start(allocation) if woke_at is not None else None
        at = None  # now, for a start whose moment is no model's
        if woke_at is not None and modelled is not None:
            at = max(woke_at + timedelta(milliseconds=modelled.total_ms), allocation.state_changed_at)
        if now < (at or allocation.state_changed_at + self.delay):
            return
        if rung_facts(allocation.rung).attested and not self._attest(allocation):
            return
        ran = allocation_transition(allocation=allocation, to=S.RUNNING, actor=SYSTEM, at=at, cold_start=modelled)
        if ran and endpoint:
            images_pulled(hostnames=active_hosts(allocation), image=endpoint_image(allocation), at=at or now)

    def _scale_to_zero(self, allocation: Allocation, now: datetime) -> None:
        """A simulated endpoint not called for its ``idle_seconds`` (by default ``LADDER_SERVERLESS_IDLE_SECONDS``)
        goes to zero replicas: idle, its devices released and its usage closed at the end of the idle window (it
        was not billed past it). One with ``min_replicas`` 1 or more never does. With ``LADDER_SERVERLESS_PREPULL``,
        its image is then on the hosts its next replica is likely to take."""
        scaling = endpoint_autoscaling(allocation)
        if scaling is None or scaling.idle_seconds is None:
            return
        quiet_since = max(allocation.last_called_at or allocation.state_changed_at, allocation.state_changed_at)
        at = quiet_since + timedelta(seconds=scaling.idle_seconds)
        if now < at:
            return
        hosts = active_hosts(allocation)
        if endpoint_sleep(allocation=allocation, actor=SYSTEM, at=min(at, now)) and settings.LADDER_SERVERLESS_PREPULL:
            allocation.refresh_from_db()
            targets = prepull_hosts(allocation=allocation, last_hosts=hosts)
            images_pulled(hostnames=targets, image=endpoint_image(allocation), at=now)

    def _attest(self, allocation: Allocation) -> bool:
        """The simulated guest attests as a real one does, through the same services as the guest's API: it asks
        for a nonce, has its host sign nonce-bound evidence with the host's simulated attestation key, and takes its
        secrets from the key broker once verified. The verifier checks it against the key the operator registered
        for the node; a host with none registered fails the allocation (nothing it says can be verified)."""
        if attested(allocation):
            return True
        now = timezone.now()
        if attestation_overdue(allocation, now):
            allocation_transition(
                allocation=allocation, to=S.FAILED, actor=SYSTEM, reason="attestation: no verified evidence in time"
            )
            return False
        host = allocation_host(allocation)
        if host is None:
            return False
        challenge = attestation_challenge(allocation=allocation, now=now)
        guest = GuestKeys.generate()
        claims = {
            "allocation": allocation.pk,
            "host": host.hostname,
            "eat_nonce": challenge.nonce,
            "tee": host.cpu_tee or None,
            "gpu_cc_mode": "on" if host.cc_mode else "off",
            "measurements": {"launch": hashlib.sha384(f"ladder-sim/{allocation.rung}".encode()).hexdigest()},
            "tee_pubkey": guest.public_b64,
        }
        evidence = sign(simulated_node_key(host.hostname), claims)
        record = attestation_submit(allocation=allocation, evidence=evidence, actor=SYSTEM, now=now)
        if not record.verified:
            return False
        open_sealed(attestation_release(attestation=record, actor=SYSTEM, now=now), guest.private)
        return True

    def next_checkpoint(self, allocation: Allocation) -> datetime:
        """A simulated job checkpoints every LADDER_SIM_CHECKPOINT_SECONDS of running; the first one after the
        stop was asked for."""
        asked = allocation.stop_at_checkpoint_since or allocation.running_since or allocation.state_changed_at
        return self._checkpoints(allocation, asked) + timedelta(seconds=self._every(allocation))

    def last_checkpoint(self, allocation: Allocation, at: datetime) -> datetime | None:
        """The simulated workload's checkpoint clock: the same contract as a real one, computed instead of reported
        (the fault keeps it on the allocation as ``checkpoint_at``, as the Kubernetes driver keeps a reported one)."""
        return self._checkpoints(allocation, at)

    @staticmethod
    def _every(allocation: Allocation) -> float:
        """A job checkpoints at its workload's interval; without one, every LADDER_SIM_CHECKPOINT_SECONDS."""
        checkpoint = allocation.workload_spec.checkpoint
        return float(checkpoint.interval_s) if checkpoint else settings.LADDER_SIM_CHECKPOINT_SECONDS

    def _checkpoints(self, allocation: Allocation, at: datetime) -> datetime:
        """The last simulated checkpoint at or before ``at`` (the start of running counts as one)."""
        every = self._every(allocation)
        since = allocation.running_since or allocation.state_changed_at
        done = max(0.0, (at - since).total_seconds())
        return since + timedelta(seconds=math.floor(done / every) * every)

    def release(self, allocation_id: int) -> None:
        allocation = Allocation.objects.select_related("tenant", "hall").get(pk=allocation_id)
        if allocation.state != S.STOPPING:
            return
        if allocation.workload:
            self._ended(allocation)
        allocation_transition(allocation=allocation, to=released_state(allocation), actor=SYSTEM)

    def _ended(self, allocation: Allocation) -> None:
        """What the workload wrote goes to the apps above (kept as the tenant's data) before it is torn down."""
        timeline = self.timeline(allocation)
        at = timeline.end(timezone.now())
        text = log_text(self.logs(allocation))
        checkpoint = None
        step = simulated.last_checkpoint_step(timeline, at)
        if step is not None:
            checkpoint = {
                "location": f"sim://{allocation.hall.code}/ladder-{allocation.tenant.slug}/ldr-{allocation.pk}-"
                f"checkpoints/step-{step}",
                "size_bytes": simulated.checkpoint_bytes(allocation.pk, step),
            }
        workload_ended.send(type(self), allocation=allocation, logs=text, checkpoint=checkpoint, at=at)

    def timeline(self, allocation: Allocation) -> simulated.Timeline:
        workload = Workload.from_json(allocation.workload) if allocation.workload else None
        # idle: no replica writes anything; queued (preempted, waiting for room): nothing runs
        ended = allocation.state not in WORKING or allocation.state in (S.IDLE, S.QUEUED)
        return simulated.Timeline(
            allocation_id=allocation.pk,
            rung=allocation.rung,
            hosts=tuple(sorted({d.hostname for d in allocation.devices.all()})),
            gpu_model=allocation.gpu_model.name,
            created_at=allocation.created_at,
            running_since=allocation.running_since,
            ended_at=allocation.state_changed_at if ended else None,
            workload=workload,
            os_image=os_images().get(workload.os_image or DEFAULT_OS_IMAGE) if workload else None,
            log_every=settings.LADDER_SIM_LOG_SECONDS,
            checkpoint_every=self._every(allocation),
            provision_seconds=settings.LADDER_SIM_PROVISION_SECONDS,
        )

    def logs(self, allocation: Allocation, *, since: datetime | None = None, tail: int | None = None) -> list[LogLine]:
        return simulated.log_lines(self.timeline(allocation), now=timezone.now(), since=since, tail=tail)

    def events(self, allocation: Allocation) -> list[WorkloadEvent]:
        return simulated.events(self.timeline(allocation), now=timezone.now())

    def endpoint_url(self, allocation: Allocation) -> str | None:
        """The simulated fleet's endpoints are served by Ladder itself, so ``make run`` can call them."""
        return f"{settings.LADDER_PUBLIC_URL}/endpoints/{allocation.pk}/"

    def sanitized_nodes(self, now: datetime) -> int:
        """A simulated wipe takes LADDER_SIM_SANITIZE_SECONDS."""
        return nodes_sanitized(actor=SYSTEM, older_than=now - timedelta(seconds=settings.LADDER_SIM_SANITIZE_SECONDS))

    def reconciled(self, at: datetime) -> None:
        """Nothing to record: the simulated fleet has no clusters."""

    def volumes(self) -> VolumeBackend:
        return SimulatedVolumes()


# LADDER_PROVISIONER names a driver; each is found by its dotted path, as Django finds its backends (the
# Kubernetes client is loaded only by the process that uses it).
DRIVERS = {
    "simulated": "provisioning.drivers.base.SimulatedProvisioner",
    "kubernetes": "provisioning.drivers.kubernetes.driver.KubernetesProvisioner",
}


def provisioner() -> Provisioner:
    name = settings.LADDER_PROVISIONER
    if name not in DRIVERS:
        raise LookupError(f"LADDER_PROVISIONER={name!r} is not a known driver ({', '.join(sorted(DRIVERS))})")
    driver: Provisioner = import_string(DRIVERS[name])()
    return driver


def _cluster_of(allocation_id: int) -> str:
    """The ``cluster`` label of a reconcile error: the allocation's hall's cluster, or the hall's code where no
    cluster is registered (the simulated fleet)."""
    try:
        row = Allocation.objects.filter(pk=allocation_id).values_list("hall__cluster__name", "hall__code").first()
    except DatabaseError:  # the error being counted may be the database's: it must still propagate as it was
        return "unknown"
    return (row[0] or row[1] or "") if row else ""


def allocations_reconcile(*, tenant_id: int | None = None, now: datetime | None = None) -> int:
    """Ask the driver about every allocation that is on its way somewhere; returns how many were looked at.

    The only place allocations follow their backend: the ``allocations_reconcile`` beat task, the embedded
    scheduler of ``make run``, and an operator's ``POST /api/v1/ops/reconcile``. Reads never call it. ``now`` is
    the moment recorded as ``observed_at`` (default: now)."""
    driver = provisioner()
    now = now or timezone.now()
    if tenant_id is None:
        driver.node_faults(now)  # first: the work on a failing node is placed again before it is looked at
        xid_faults_recover(now=now, last_checkpoint=driver.last_checkpoint)  # and on a GPU with a fatal XID
    if Node.objects.filter(state=NodeState.SANITIZING).exists():
        driver.sanitized_nodes(now)
    if tenant_id is None and Allocation.objects.filter(state=S.QUEUED).exists():
        queued_place(actor=SYSTEM, now=now)  # preempted spot work, placed again where room has returned
    watched = Q(state__in=(S.PROVISIONING, S.RESTARTING, S.STOPPING)) | Q(
        state=S.RUNNING, stop_at_checkpoint_since__isnull=False
    )
    watched |= Q(state=S.RUNNING, rung__in=rungs_where(lambda f: f.endpoint))  # an endpoint scales to zero idle
    if driver.watches_running:
        watched |= Q(state=S.RUNNING)
    pending = Allocation.objects.filter(watched)
    if tenant_id is not None:
        pending = pending.filter(tenant_id=tenant_id)
    ids = list(pending.values_list("pk", flat=True))
    for allocation_id in ids:
        try:
            driver.status(allocation_id)
        except Exception:
            RECONCILE_ERRORS.labels(_cluster_of(allocation_id), "status").inc()
            raise
    Allocation.objects.filter(pk__in=ids).update(observed_at=now)
    if tenant_id is None:
        driver.volumes().reconcile(now)
        driver.reconciled(now)
    return len(ids)
