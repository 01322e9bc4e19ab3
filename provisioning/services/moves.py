"""Moving a running allocation onto other devices, one move of a defragmentation plan (``defragment.py`` carries
the plan out): checked again under the placement lock, then restarted on its new devices as after a fault.
"""

from __future__ import annotations

from dataclasses import replace

from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from core.tasks import enqueue
from provisioning.domain.placement.decision import Device
from provisioning.domain.placement.defragment import move_check
from provisioning.domain.states import AllocationState
from provisioning.events import allocation_stopped
from provisioning.fleet_cache import placement_section, spec_host
from provisioning.models import Allocation
from provisioning.services.devices import devices_release, devices_take, hosts_left_sanitize
from provisioning.services.faults import FaultAt, LastCheckpoint, goodput_stop
from provisioning.services.placing import PROVISION

S = AllocationState


def allocation_move(
    *,
    allocation_id: int,
    before: frozenset[Device],
    after: tuple[Device, ...],
    actor: Actor,
    last_checkpoint: LastCheckpoint,
    why: str,
) -> str | None:
    """Move a running job or serverless allocation from the devices it holds (``before``) onto ``after``, planned
    by the defragmenter; returns why it could not (and nothing changed), or None once it is moving.

    Everything is checked again under the placement lock: the allocation still runs on exactly ``before`` and
    every device of ``after`` is still free for it under the engine's rules (``move_check``). Then it goes to
    ``restarting`` on the new devices and the driver provisions it there: a job resumes from its checkpoint (its
    usage closes at that checkpoint, as after a fault: the work since is redone at the provider's cost), an
    endpoint's replicas are re-created (its usage closes now). Usage opens again when it runs."""
    with placement_section() as section:
        allocation = Allocation.objects.select_related("tenant").filter(pk=allocation_id).first()
        if allocation is None or allocation.state != S.RUNNING:
            return "it is no longer running"
        current = section.cache.placements.get(allocation.pk)
        if current is None or frozenset(current.devices) != before:
            return "its devices changed since the plan was made"
        moved = replace(current, devices=after, host=spec_host(after, allocation.spec))  # its host share moves too
        section.engine.release(current)  # its own devices count as free for the check (a gang may shift)
        refusal = move_check(section.engine.state, moved)
        now = timezone.now()
        if refusal is None and not Allocation.objects.filter(pk=allocation.pk, state=S.RUNNING).update(
            state=S.RESTARTING, state_changed_at=now
        ):
            refusal = "it is no longer running"
        if refusal is not None:
            section.engine.apply(current)
            return refusal
        ended, lost_ms = now, 0
        if allocation.workload_spec.restarts_from_checkpoint:  # as after a fault: the work since redone unbilled
            move = FaultAt(at=now, detected=now, cause=why)
            checkpoint, lost_ms = goodput_stop(allocation, S.RUNNING, last_checkpoint, move)
            ended = checkpoint or now
            Allocation.objects.filter(pk=allocation.pk).update(checkpoint_at=checkpoint)
        allocation_stopped.send(sender=Allocation, allocation=allocation, at=ended)
        held = devices_release(allocation)
        section.journal("released", allocation=allocation)
        section.engine.apply(moved)
        devices_take(section, allocation, moved)
        hosts_left_sanitize(section, allocation, held, kept={d.node_id for d in moved.devices}, actor=actor)
        audit_record(
            actor=actor,
            action="allocation.moved",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=allocation.tenant,
            data={
                "from": sorted({d.hostname for d in current.devices}),
                "to": sorted({d.hostname for d in moved.devices}),
                "devices": len(moved.devices),
                "why": why,
                "lost_ms": lost_ms,
            },
        )
        enqueue(PROVISION, allocation.pk)
    return None
