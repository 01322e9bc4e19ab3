"""The allocation state machine: every move from one state to another is a compare-and-swap on the current state
(``provisioning.domain.states`` says which moves exist), opening or closing usage and giving the devices back as it
goes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict
from provisioning.domain.cold_start import ColdStart, model_source
from provisioning.domain.rungs import rung_facts
from provisioning.domain.states import HOLDS_DEVICES, TERMINAL, AllocationState, can_move
from provisioning.events import allocation_started, allocation_stopped
from provisioning.fleet_cache import placement_section
from provisioning.models import Allocation, AllocationFault, EndpointColdStart
from provisioning.running_endpoints import running_entry_forget
from provisioning.services.devices import devices_release, hosts_left_sanitize
from provisioning.services.volumes import attachments_release

S = AllocationState


def allocation_transition(
    *,
    allocation: Allocation,
    to: AllocationState,
    actor: Actor,
    reason: str = "",
    expect: AllocationState | None = None,
    at: datetime | None = None,
    cold_start: ColdStart | None = None,
) -> bool:
    """Move an allocation by compare-and-swap on its current state; False when someone else moved it first.

    Entering ``running`` opens its usage interval and leaving it closes it (docs/design.md §6), at ``at`` (default now;
    the provider's own time when it reports one). Leaving the device-holding states gives the devices back
    (journaled for the engine). A serverless endpoint woken from zero that enters ``running`` ends its cold start:
    an ``EndpointColdStart`` row is written with it, with the phases its driver reports in ``cold_start``."""
    current = AllocationState(expect or allocation.state)
    if not can_move(current, to):
        raise Conflict("invalid_transition", f"An allocation cannot go from {current} to {to}.")
    now = at or timezone.now()
    with placement_section() as section:
        fields: dict[str, Any] = {"state": to, "state_changed_at": now, **_endpoint_fields(allocation, to, now)}
        if to == S.RUNNING:
            fields["running_since"] = now
        if reason:
            fields["failure_reason"] = reason[:300]
        if not Allocation.objects.filter(pk=allocation.pk, state=current).update(**fields):
            return False
        allocation.refresh_from_db()
        if S.RUNNING in (current, to):
            running_entry_forget(allocation.pk)
        if "cold_start_ms" in fields:
            _cold_start_record(allocation, fields["cold_start_ms"], cold_start)
        if to == S.RUNNING:
            allocation_started.send(sender=Allocation, allocation=allocation, at=now)
        if current == S.RESTARTING and to == S.RUNNING:
            # The fault's recovery ends here: detection-to-restart is running_at less detected_at.
            AllocationFault.objects.filter(allocation=allocation, running_at=None).update(running_at=now)
        elif current == S.RUNNING:
            allocation_stopped.send(sender=Allocation, allocation=allocation, at=now)
        if current in HOLDS_DEVICES and to not in HOLDS_DEVICES:
            held = devices_release(allocation)
            placement = section.cache.placements.pop(allocation.pk, None)
            if placement is not None:
                section.engine.release(placement)
            section.journal("released", allocation=allocation)
            hosts_left_sanitize(section, allocation, held, kept=(), actor=actor)
        if to in TERMINAL and allocation.workload_spec.volume_ids:
            attachments_release(allocation=allocation, actor=actor, at=now)
        audit_record(
            actor=actor,
            action=f"allocation.{to}",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=allocation.tenant,
            data={
                "from": current,
                "to": to,
                **({"reason": reason} if reason else {}),
                **({"cold_start_ms": fields["cold_start_ms"]} if "cold_start_ms" in fields else {}),
            },
        )
    return True


def _endpoint_fields(allocation: Allocation, to: AllocationState, now: datetime) -> dict[str, Any]:
    """A serverless endpoint enters ``running`` with one ready replica (its driver reports more as they come:
    ``allocation_replicas_set``) and has none when ``idle``; entering ``running`` after a wake ends its cold start,
    measured from the wake."""
    if not rung_facts(allocation.rung).endpoint:
        return {}
    if to == S.IDLE:
        return {"replicas": 0}
    if to != S.RUNNING:
        return {}
    fields: dict[str, Any] = {"replicas": 1}
    if allocation.woke_at is not None and allocation.cold_start_ms is None:
        fields["cold_start_ms"] = max(0, round((now - allocation.woke_at).total_seconds() * 1000))
    return fields


def _cold_start_record(allocation: Allocation, total_ms: int, reported: ColdStart | None) -> None:
    """The wake's row: the phases its driver reported, ready when they say (the cluster's own time, or the
    simulated fleet's model); without a report, its total from the wake to ``running``, phases unknown."""
    woke_at = allocation.woke_at
    if woke_at is None:
        return
    if reported is None:
        spec = allocation.workload_spec
        reported = ColdStart(None, None, None, total_ms, None, model_source(spec.workload))
    EndpointColdStart.objects.create(
        tenant_id=allocation.tenant_id,
        allocation=allocation,
        woke_at=woke_at,
        ready_at=woke_at + timedelta(milliseconds=reported.total_ms),
        device_wait_ms=reported.device_wait_ms,
        image_pull_ms=reported.image_pull_ms,
        model_load_ms=reported.model_load_ms,
        total_ms=reported.total_ms,
        image_cached=reported.image_cached,
        model_source=reported.model_source,
    )
