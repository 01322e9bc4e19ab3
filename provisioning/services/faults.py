"""Node failures and job restarts: when a node dies, a job on it is placed again elsewhere and resumes from its
last checkpoint (billed on goodput: the work lost since is the provider's), everything else on it fails. The
checkpoints a job reports are kept here too, since a fault goes back to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, Q
from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from core.tasks import enqueue
from provisioning.domain.placement.decision import Refused
from provisioning.domain.states import HOLDS_DEVICES, AllocationState, can_move
from provisioning.events import allocation_stopped
from provisioning.fleet_cache import placement_section
from provisioning.models import Allocation, AllocationFault, Node
from provisioning.selectors import allocations_on, tenant_policy
from provisioning.services.devices import devices_release, devices_take, hosts_left_sanitize
from provisioning.services.placing import PROVISION, AllocationSpec, priced_request
from provisioning.services.preempting import LastCheckpoint
from provisioning.services.transitions import allocation_transition

S = AllocationState


def node_failed(
    *,
    node: Node,
    actor: Actor,
    last_checkpoint: LastCheckpoint,
    fault_at: datetime | None = None,
    cause: str = "",
) -> dict[str, int]:
    """A node died: jobs on it restart elsewhere from their checkpoint, everything else on it fails.

    ``fault_at`` is when the node went bad (a node condition's transition time; default now), ``cause`` what
    said so; both are kept with each job's fault record."""
    counts = {"restarted": 0, "failed": 0}
    now = timezone.now()
    fault = FaultAt(at=min(fault_at or now, now), detected=now, cause=cause or f"node {node.hostname} failed")
    live = allocations_on(node, HOLDS_DEVICES)
    for allocation in live:
        state = AllocationState(allocation.state)
        # A gang whose new node fails while it restarts is placed again too.
        restartable = allocation.workload_spec.restarts_from_checkpoint and (
            state == S.RESTARTING or can_move(state, S.RESTARTING)
        )
        if restartable and _restart_job(allocation, node, actor, last_checkpoint, fault):
            counts["restarted"] += 1
            continue
        if allocation.state in (S.FAILED, S.STOPPED):
            counts["failed"] += 1
            continue  # the restart found no room and failed it
        allocation_transition(allocation=allocation, to=S.FAILED, actor=actor, reason=f"node {node.hostname} failed")
        counts["failed"] += 1
    return counts


@dataclass(frozen=True)
class FaultAt:
    """What interrupted a job (a node fault, or a move) and when: it went bad ``at``, was seen ``detected``."""

    at: datetime
    detected: datetime
    cause: str


def goodput_stop(
    allocation: Allocation, current: AllocationState, last_checkpoint: LastCheckpoint, fault: FaultAt
) -> tuple[datetime | None, int]:
    """Where a faulted job's billing stops and the work lost (ms): a running gang goes back to its last
    checkpoint, never before this run began (it resumed from a checkpoint then) nor after the fault; a gang not
    running yet loses nothing and is not billed."""
    if current != S.RUNNING:
        return allocation.checkpoint_at, 0
    since = allocation.running_since or allocation.state_changed_at
    checkpoint = last_checkpoint(allocation, fault.at) or fault.at
    checkpoint = min(max(checkpoint, since), fault.at)
    return checkpoint, int((fault.at - checkpoint).total_seconds() * 1000)


def _fault_record(
    allocation: Allocation, node: Node, fault: FaultAt, checkpoint: datetime | None, lost_ms: int, outcome: str
) -> dict[str, Any]:
    """Keep the fault (per job, queryable) and its lost work on the allocation; the audit event's evidence."""
    AllocationFault.objects.create(
        tenant_id=allocation.tenant_id,
        allocation=allocation,
        hostname=node.hostname,
        cause=fault.cause[:300],
        fault_at=fault.at,
        detected_at=fault.detected,
        checkpoint_at=checkpoint,
        lost_ms=lost_ms,
        outcome=outcome,
    )
    Allocation.objects.filter(pk=allocation.pk).update(
        restarts=F("restarts") + (1 if outcome == "restarted" else 0),
        goodput_lost_ms=F("goodput_lost_ms") + lost_ms,
    )
    total = Allocation.objects.filter(pk=allocation.pk).values_list("goodput_lost_ms", flat=True).get()
    return {
        "failed_node": node.hostname,
        "cause": fault.cause[:300],
        "fault_at": fault.at.isoformat(),
        "checkpoint_at": checkpoint.isoformat() if checkpoint else None,
        "lost_ms": lost_ms,
        "goodput_lost_ms": total,
    }


def _restart_job(
    allocation: Allocation, node: Node, actor: Actor, last_checkpoint: LastCheckpoint, fault: FaultAt
) -> bool:
    """Place the gang again (the failed node is out of the pool); False when it no longer fits anywhere.

    The provider's fault is not billed: a job is billed on goodput, so metering stops at the gang's last
    checkpoint (the work since is lost and done again) and starts again when the gang runs again. The lost work
    is kept per fault (``AllocationFault``) and summed on the allocation (``goodput_lost_ms``)."""
    current = AllocationState(allocation.state)
    spec = AllocationSpec.from_json(allocation.spec)
    request = priced_request(spec, at=fault.detected)  # placed again: where its shape has a price now
    with placement_section() as section:
        if not Allocation.objects.filter(pk=allocation.pk, state=current).update(
            state=S.RESTARTING, state_changed_at=fault.detected
        ):
            return True  # someone else is handling it
        checkpoint, lost_ms = goodput_stop(allocation, current, last_checkpoint, fault)
        if current == S.RUNNING:
            allocation_stopped.send(sender=Allocation, allocation=allocation, at=checkpoint or fault.at)
            # The gang resumes from this checkpoint: it is the one a later fault goes back to, at the least.
            Allocation.objects.filter(pk=allocation.pk).update(checkpoint_at=checkpoint)
        held = devices_release(allocation)
        old = section.cache.placements.pop(allocation.pk, None)
        if old is not None:
            section.engine.release(old)
        section.journal("released", allocation=allocation)
        tenant = allocation.tenant
        result = section.engine.place(request, tenant_policy(tenant), quota_milli=tenant.gpu_quota_milli)
        if isinstance(result, Refused):
            evidence = _fault_record(allocation, node, fault, checkpoint, lost_ms, "failed")
            Allocation.objects.filter(pk=allocation.pk).update(
                state=S.FAILED,
                failure_reason=f"node {node.hostname} failed; no room to restart: {result.message}"[:300],
            )
            audit_record(
                actor=actor,
                action="allocation.failed",
                target_type="allocation",
                target_id=allocation.pk,
                tenant=tenant,
                data={"from": S.RESTARTING, "reason": result.message, **evidence},
            )
            hosts_left_sanitize(section, allocation, held, kept=(), actor=actor)
            return False
        devices_take(section, allocation, result)
        hosts_left_sanitize(section, allocation, held, kept={d.node_id for d in result.devices}, actor=actor)
        evidence = _fault_record(allocation, node, fault, checkpoint, lost_ms, "restarted")
        audit_record(
            actor=actor,
            action="allocation.restarting",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=tenant,
            data={
                "from": current,
                "devices": len(result.devices),
                "hosts": sorted({d.hostname for d in result.devices}),
                **evidence,
            },
        )
        enqueue(PROVISION, allocation.pk)
    return True


def allocation_checkpoint_record(*, allocation: Allocation, at: datetime, step: str = "") -> bool:
    """The workload reported a checkpoint (seen by reconciliation, while its nodes are alive): keep the latest, so
    a node fault later bills up to it and the gang resumes from it. Bookkeeping, not audited (the fault that uses
    it is); a report older than the one kept, or from before this run, changes nothing. True when kept."""
    since = allocation.running_since or allocation.state_changed_at
    if at < since:
        return False
    newer = Q(checkpoint_at__isnull=True) | Q(checkpoint_at__lt=at)
    return bool(
        Allocation.objects.filter(newer, pk=allocation.pk, state=S.RUNNING).update(
            checkpoint_at=at, checkpoint_step=step[:100]
        )
    )
