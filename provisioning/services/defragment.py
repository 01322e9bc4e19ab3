"""Carrying out a defragmentation plan: one move at a time, each checked again just before it runs, all audited.

An operator's ``POST /api/v1/ops/defragment`` without ``dry_run`` starts a run: the plan of that moment
(``provisioning.domain.placement.defragment``) is stored as its steps, and the task ``defragment_advance`` (queued
at the
start, then run by the beat every ``LADDER_RECONCILE_EVERY_SECONDS``) carries them out in order. A step moves its
allocation (``allocation_move``: still running on the planned devices, the targets still free for it) and waits
until the allocation runs again on its new devices before the next step starts, so at most one tenant's work is
in flight because of a run. A step that is no longer sound is skipped with the reason; a moved allocation that
fails stops the run (an operator looks before anything else moves). Only one run is open at a time.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict
from core.tasks import enqueue
from provisioning.domain.placement.decision import Device
from provisioning.domain.placement.defragment import Move, Plan, movable_kind, plan_defragmentation
from provisioning.domain.rungs import RUNGS
from provisioning.domain.states import AllocationState
from provisioning.fleet_cache import fleet_read
from provisioning.models import Allocation, DefragmentRun
from provisioning.services.faults import LastCheckpoint
from provisioning.services.moves import allocation_move

S = AllocationState
ADVANCE = "provisioning.tasks.defragment_advance"
PENDING, MOVING, DONE, SKIPPED, FAILED = "pending", "moving", "done", "skipped", "failed"


def defragment_plan() -> tuple[Plan, dict[int, str]]:
    """The plan for the fleet as it is now, and the tenant (slug) of each allocation it may move."""
    movable_rungs = [rung for rung, facts in RUNGS.items() if facts.movable]
    rows = Allocation.objects.filter(state=S.RUNNING, rung__in=movable_rungs).values_list("pk", "rung", "tenant__slug")
    movable: dict[int, str] = {}
    tenants: dict[int, str] = {}
    for pk, rung, slug in rows:
        kind = movable_kind(rung)
        if kind is not None:
            movable[pk], tenants[pk] = kind, slug
    with fleet_read() as fleet:
        plan = plan_defragmentation(fleet.state, fleet.placements, movable)
    return plan, tenants


def plan_moves(plan: Plan, tenants: dict[int, str]) -> list[dict[str, Any]]:
    """The plan's moves as the API and the operator console show them."""
    return [
        {
            "allocation": m.allocation_id,
            "tenant": tenants[m.allocation_id],
            "kind": m.kind,
            "from_nodes": m.from_nodes,
            "to_nodes": m.to_nodes,
            "gpus": m.gpus,
        }
        for m in plan.moves
    ]


def _device_json(device: Device) -> dict[str, Any]:
    return {
        "node_id": device.node_id,
        "hostname": device.hostname,
        "gpu_index": device.gpu_index,
        "gpu_uuid": device.gpu_uuid,
        "mig_profile": device.mig_profile,
        "mig_start": device.mig_start,
        "share_milli": device.share_milli,
    }


def _device(data: dict[str, Any]) -> Device:
    return Device(**data)


def _step(move: Move, tenants: dict[int, str]) -> dict[str, Any]:
    return {
        "allocation": move.allocation_id,
        "tenant": tenants[move.allocation_id],
        "kind": move.kind,
        "from_nodes": move.from_nodes,
        "to_nodes": move.to_nodes,
        "gpus": move.gpus,
        "before": [_device_json(d) for d in move.before.devices],
        "after": [_device_json(d) for d in move.after.devices],
        "status": PENDING,
        "detail": "",
        "started_at": None,
        "finished_at": None,
    }


def defragment_start(*, actor: Actor) -> DefragmentRun:
    """Plan now and start carrying the plan out; 409 ``defragment_running`` while another run is open."""
    plan, tenants = defragment_plan()
    try:
        with transaction.atomic():
            if DefragmentRun.objects.filter(state=DefragmentRun.State.RUNNING).exists():
                raise IntegrityError
            run = DefragmentRun.objects.create(steps=[_step(m, tenants) for m in plan.moves], ordered_by=actor.label)
            audit_record(
                actor=actor,
                action="defragment.started",
                target_type="defragment_run",
                target_id=run.pk,
                data={"moves": len(plan.moves), "allocations": [m.allocation_id for m in plan.moves]},
            )
            enqueue(ADVANCE, run.pk)
    except IntegrityError:
        open_run = DefragmentRun.objects.filter(state=DefragmentRun.State.RUNNING).values_list("pk", flat=True).first()
        raise Conflict(
            "defragment_running", f"Defragmentation run {open_run} is still carrying out its moves; wait for it."
        ) from None
    run.refresh_from_db()  # the first advance may have run at the commit (tasks run inline on the embedded default)
    return run


def defragment_advance(*, run_id: int, last_checkpoint: LastCheckpoint, now: datetime | None = None) -> DefragmentRun:
    """Carry a run forward as far as it can go now: finish the step in flight once its allocation runs again,
    then start the next sound step. Safe to call at any time and from several workers (the run's row is locked;
    lock order: the run, then the placement lock)."""
    with transaction.atomic():
        run = DefragmentRun.objects.select_for_update(no_key=True).get(pk=run_id)
        if run.state != DefragmentRun.State.RUNNING:
            return run
        system = Actor.system("defragment")
        at = now or timezone.now()
        while True:
            step = next((s for s in run.steps if s["status"] in (PENDING, MOVING)), None)
            if step is None:
                _finish(run, system, DefragmentRun.State.DONE, at)
                break
            if step["status"] == MOVING:
                if not _settle(step, at):
                    break  # still on its way up: look again on the next advance
                if step["status"] == FAILED:
                    _finish(run, system, DefragmentRun.State.FAILED, at)
                    break
                continue
            why = allocation_move(
                allocation_id=step["allocation"],
                before=frozenset(_device(d) for d in step["before"]),
                after=tuple(_device(d) for d in step["after"]),
                actor=system,
                last_checkpoint=last_checkpoint,
                why=f"defragmentation run {run.pk}",
            )
            step["started_at"] = at.isoformat()
            if why is None:
                step["status"] = MOVING
                break
            step.update(status=SKIPPED, detail=why, finished_at=at.isoformat())
        run.updated_at = at
        run.save(update_fields=["steps", "state", "updated_at", "finished_at"])
    return run


def _settle(step: dict[str, Any], at: datetime) -> bool:
    """Whether the step in flight is over (its status then says how)."""
    state = Allocation.objects.filter(pk=step["allocation"]).values_list("state", "failure_reason").first()
    if state is None or state[0] in (S.PLACED, S.PROVISIONING, S.RESTARTING):
        return False
    if state[0] == S.RUNNING:
        step.update(status=DONE, finished_at=at.isoformat())
    elif state[0] == S.FAILED:
        step.update(status=FAILED, detail=f"it failed on its new devices: {state[1]}", finished_at=at.isoformat())
    else:  # the tenant stopped it meanwhile: nothing of the move is left to watch
        step.update(status=DONE, detail=f"the tenant stopped it ({state[0]})", finished_at=at.isoformat())
    return True


def _finish(run: DefragmentRun, actor: Actor, state: DefragmentRun.State, at: datetime) -> None:
    run.state, run.finished_at = state, at
    counts: dict[str, int] = {}
    for step in run.steps:
        counts[step["status"]] = counts.get(step["status"], 0) + 1
    audit_record(actor=actor, action=f"defragment.{state}", target_type="defragment_run", target_id=run.pk, data=counts)


def defragment_advance_open(*, last_checkpoint: LastCheckpoint) -> int:
    """Beat: advance every open run (at most one); returns how many were looked at."""
    runs = list(DefragmentRun.objects.filter(state=DefragmentRun.State.RUNNING).values_list("pk", flat=True))
    for pk in runs:
        defragment_advance(run_id=pk, last_checkpoint=last_checkpoint)
    return len(runs)
