"""The allocation lifecycle: states, the transitions allowed between them, and which states hold devices.

    requested -> placed -> provisioning -> running -> stopping -> stopped
    plus failed (from any live state) and, for jobs, restarting (a node died under the gang: it is placed again
    elsewhere and provisioned from its last checkpoint; it reads ``restarting`` until the new gang runs, then
    goes straight back to ``running``).

A serverless endpoint scaled to zero replicas is ``idle``: running -> idle gives its devices back to the engine
and closes its usage interval; its URL, workload and access stay. Its first request wakes it: idle -> placed
(placed again, possibly on other GPUs) -> provisioning -> running, the time from the wake to ``running`` being its
cold start. When nothing fits at the wake it stays idle (the caller is answered 503 and tries again).

Spot work preempted to make room (docs/capacity.md) goes to ``stopping`` at the notice, its devices handed over at
once, its usage closed; once torn down it is ``stopped``, or ``queued`` when it asked to be requeued
(``on_preemption: requeue``): it holds no devices and costs nothing until capacity returns and it is placed again
(queued -> placed -> provisioning -> running, from its last checkpoint).
``requested`` is the moment of the decision inside ``allocation_request``; a refused request leaves nothing
behind, so persisted allocations start at ``placed``. Metering follows ``running`` (docs/design.md §6).
"""

from __future__ import annotations

from enum import StrEnum


class AllocationState(StrEnum):
    REQUESTED = "requested"
    PLACED = "placed"
    PROVISIONING = "provisioning"
    RUNNING = "running"
    RESTARTING = "restarting"
    IDLE = "idle"
    QUEUED = "queued"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


S = AllocationState

TRANSITIONS: dict[AllocationState, frozenset[AllocationState]] = {
    S.REQUESTED: frozenset({S.PLACED, S.FAILED}),
    S.PLACED: frozenset({S.PROVISIONING, S.RESTARTING, S.STOPPING, S.FAILED}),
    S.PROVISIONING: frozenset({S.RUNNING, S.RESTARTING, S.STOPPING, S.FAILED}),
    S.RUNNING: frozenset({S.STOPPING, S.RESTARTING, S.IDLE, S.FAILED}),
    S.IDLE: frozenset({S.PLACED, S.STOPPING, S.FAILED}),
    S.RESTARTING: frozenset({S.PROVISIONING, S.RUNNING, S.STOPPING, S.FAILED}),
    S.QUEUED: frozenset({S.PLACED, S.STOPPED, S.FAILED}),
    S.STOPPING: frozenset({S.STOPPED, S.QUEUED, S.FAILED}),
    S.STOPPED: frozenset(),
    S.FAILED: frozenset(),
}

# States whose allocation holds its devices (the database's uniqueness rules apply to these). ``idle`` and
# ``queued`` hold none (nor does a preempted allocation while ``stopping``: it gave them up at the notice).
HOLDS_DEVICES = frozenset({S.PLACED, S.PROVISIONING, S.RUNNING, S.RESTARTING, S.STOPPING})
TERMINAL = frozenset({S.STOPPED, S.FAILED})
# States of an allocation that is at work or on its way there (not stopping or ended); an idle endpoint is still
# the tenant's (it answers its URL, it is stopped with the others).
WORKING = frozenset({S.PLACED, S.PROVISIONING, S.RUNNING, S.RESTARTING, S.IDLE, S.QUEUED})


def can_move(old: AllocationState, new: AllocationState) -> bool:
    return new in TRANSITIONS[old]
