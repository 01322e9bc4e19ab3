"""Provisioning drivers behind one interface (``Provisioner``), so nothing above them changes with the driver.

``simulated`` (the embedded default) moves allocations along with configurable delays; node failures are
injected by an operator failing a node (``POST /api/v1/ops/nodes/{id}/fail``). ``LADDER_PROVISIONER`` picks it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from datetime import datetime, timedelta
from typing import ClassVar

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from core.actor import Actor
from provisioning.models import Allocation, Node, NodeState
from provisioning.placement.isolation import Rung
from provisioning.services.allocations import allocation_stop, allocation_transition, nodes_sanitized
from provisioning.services.attestation import attestation_record
from provisioning.states import AllocationState

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


class SimulatedProvisioner(Provisioner):
    name = "simulated"

    @property
    def delay(self) -> timedelta:
        return timedelta(seconds=settings.LADDER_SIM_PROVISION_SECONDS)

    def provision(self, allocation_id: int) -> None:
        allocation = Allocation.objects.get(pk=allocation_id)
        if allocation.state in (S.PLACED, S.RESTARTING):
            allocation_transition(allocation=allocation, to=S.PROVISIONING, actor=SYSTEM)
        self.status(allocation_id)

    def status(self, allocation_id: int) -> None:
        allocation = Allocation.objects.get(pk=allocation_id)
        now = timezone.now()
        if allocation.state == S.PROVISIONING and now - allocation.state_changed_at >= self.delay:
            if allocation.rung == Rung.CONFIDENTIAL_VM and not self._attest(allocation):
                return
            allocation_transition(allocation=allocation, to=S.RUNNING, actor=SYSTEM)
        elif (
            allocation.state == S.RUNNING
            and allocation.stop_at_checkpoint_since is not None
            and now >= self.next_checkpoint(allocation)
        ):
            allocation_stop(allocation=allocation, actor=SYSTEM)

    def _attest(self, allocation: Allocation) -> bool:
        """The simulated host reports its TEE and the GPU's CC mode; the configured verifier judges it."""
        node = Node.objects.filter(gpus__allocation_devices__allocation=allocation).first()
        evidence = {
            "tee": (node.cpu_tee or "snp") if node and node.cc_mode else None,
            "gpu_cc_mode": "on" if node and node.cc_mode else "off",
            "host": node.hostname if node else None,
            "simulated": True,
        }
        record = attestation_record(allocation=allocation, evidence=evidence, actor=SYSTEM)
        if not record.verified:
            allocation_transition(
                allocation=allocation, to=S.FAILED, actor=SYSTEM, reason=f"attestation: {record.detail}"
            )
        return record.verified

    def next_checkpoint(self, allocation: Allocation) -> datetime:
        """A simulated job checkpoints every LADDER_SIM_CHECKPOINT_SECONDS of running; the first one after the
        stop was asked for."""
        asked = allocation.stop_at_checkpoint_since or allocation.running_since or allocation.state_changed_at
        return self._checkpoints(allocation, asked) + timedelta(seconds=settings.LADDER_SIM_CHECKPOINT_SECONDS)

    def last_checkpoint(self, allocation: Allocation, at: datetime) -> datetime | None:
        return self._checkpoints(allocation, at)

    def _checkpoints(self, allocation: Allocation, at: datetime) -> datetime:
        """The last simulated checkpoint at or before ``at`` (the start of running counts as one)."""
        every = settings.LADDER_SIM_CHECKPOINT_SECONDS
        since = allocation.running_since or allocation.state_changed_at
        done = max(0.0, (at - since).total_seconds())
        return since + timedelta(seconds=math.floor(done / every) * every)

    def release(self, allocation_id: int) -> None:
        allocation = Allocation.objects.get(pk=allocation_id)
        if allocation.state == S.STOPPING:
            allocation_transition(allocation=allocation, to=S.STOPPED, actor=SYSTEM)

    def sanitized_nodes(self, now: datetime) -> int:
        """A simulated wipe takes LADDER_SIM_SANITIZE_SECONDS."""
        return nodes_sanitized(actor=SYSTEM, older_than=now - timedelta(seconds=settings.LADDER_SIM_SANITIZE_SECONDS))

    def reconciled(self, at: datetime) -> None:
        """Nothing to record: the simulated fleet has no clusters."""


# LADDER_PROVISIONER names a driver; each is found by its dotted path, as Django finds its backends (the
# Kubernetes client is loaded only by the process that uses it).
DRIVERS = {
    "simulated": "provisioning.provisioners.SimulatedProvisioner",
    "kubernetes": "provisioning.kubernetes.driver.KubernetesProvisioner",
}


def provisioner() -> Provisioner:
    name = settings.LADDER_PROVISIONER
    if name not in DRIVERS:
        raise LookupError(f"LADDER_PROVISIONER={name!r} is not a known driver ({', '.join(sorted(DRIVERS))})")
    driver: Provisioner = import_string(DRIVERS[name])()
    return driver


def allocations_reconcile(*, tenant_id: int | None = None, now: datetime | None = None) -> int:
    """Ask the driver about every allocation that is on its way somewhere; returns how many were looked at.

    The only place allocations follow their backend: the ``allocations_reconcile`` beat task, the embedded
    scheduler of ``make run``, and an operator's ``POST /api/v1/ops/reconcile``. Reads never call it. ``now`` is
    the moment recorded as ``observed_at`` (default: now)."""
    driver = provisioner()
    now = now or timezone.now()
    if Node.objects.filter(state=NodeState.SANITIZING).exists():
        driver.sanitized_nodes(now)
    watched = Q(state__in=(S.PROVISIONING, S.STOPPING)) | Q(state=S.RUNNING, stop_at_checkpoint_since__isnull=False)
    if driver.watches_running:
        watched |= Q(state=S.RUNNING)
    pending = Allocation.objects.filter(watched)
    if tenant_id is not None:
        pending = pending.filter(tenant_id=tenant_id)
    ids = list(pending.values_list("pk", flat=True))
    for allocation_id in ids:
        driver.status(allocation_id)
    Allocation.objects.filter(pk__in=ids).update(observed_at=now)
    if tenant_id is None:
        driver.reconciled(now)
    return len(ids)
