"""A tenant (or the closure of its account, or an endpoint's owner) stops an allocation: it goes to ``stopping``
and the driver tears it down."""

from __future__ import annotations

from datetime import datetime

from core.actor import Actor
from core.errors import Conflict
from core.tasks import enqueue
from provisioning.domain.states import AllocationState
from provisioning.models import Allocation
from provisioning.services.preempting import requeue_cancel
from provisioning.services.transitions import allocation_transition
from tenancy.services import tenant_require_writable

S = AllocationState
# The driver's task, queued by name: the drivers call these services, so the services do not import them.
RELEASE = "provisioning.tasks.allocation_release"

STOP_ATTEMPTS = 5  # states a stop follows before it gives up (each move is one step of the state machine)


def allocation_stop(*, allocation: Allocation, actor: Actor, at: datetime | None = None) -> Allocation:
    """The tenant stops an allocation: it goes to ``stopping`` (at ``at``, default now) and the provisioner tears
    it down.

    The state read may be stale: the driver moves allocations too (``placed`` to ``provisioning`` to ``running``)
    between the caller's read and this compare-and-swap. The swap then fails, and the state is read again and the
    stop tried from there, so a stop is never lost to a move it raced (the answer would say ``provisioning`` and
    the allocation run on, billed).

    Preempted work waiting in the queue holds nothing to tear down: it stops at once. Preempted work still being
    torn down stops there instead of being requeued.

    A suspended tenant may stop its work; a closing one's work is stopped by the closure itself."""
    if actor.for_tenant:
        tenant_require_writable(allocation.tenant, actor=actor)
    for _ in range(STOP_ATTEMPTS):
        state = AllocationState(allocation.state)
        if state == S.STOPPING:
            requeue_cancel(allocation)
        if state in (S.STOPPING, S.STOPPED, S.FAILED):
            return allocation  # stopping twice is harmless
        if state == S.QUEUED:
            if allocation_transition(allocation=allocation, to=S.STOPPED, actor=actor, expect=state, at=at):
                allocation.refresh_from_db()
                return allocation
            allocation.refresh_from_db()
            continue
        if allocation_transition(allocation=allocation, to=S.STOPPING, actor=actor, expect=state, at=at):
            enqueue(RELEASE, allocation.pk)
            allocation.refresh_from_db()
            return allocation
        allocation.refresh_from_db()
    raise Conflict("allocation_busy", "The allocation kept changing state while it was being stopped; try again.")
