"""What capacity classes mean to a tenant beyond placement (docs/capacity.md): being told when spot work is
preempted."""

from __future__ import annotations

from billing.services.accounts import notify
from provisioning.models import Allocation, AllocationPreemption


def preemption_notify(*, allocation: Allocation, preemption: AllocationPreemption) -> None:
    """Tell the tenant its spot work was preempted: the deadline it has to save by, the work at stake since its last
    checkpoint, and whether it will be requeued. Sent in the preemption's transaction (the e-mail after commit)."""
    seconds = round((preemption.deadline - preemption.noticed_at).total_seconds())
    then = (
        "It goes back to the queue and is placed again, from its checkpoint, when capacity returns."
        if preemption.requeued
        else "It stops; start it again when you need it (or ask for on_preemption: requeue on a job)."
    )
    since = preemption.checkpoint_at.isoformat() if preemption.checkpoint_at else "its start"
    notify(
        tenant=allocation.tenant,
        kind="preemption",
        subject=f"Ladder: spot allocation {allocation.name} is preempted; {seconds} s to save",
        body=f"Allocation {allocation.pk} ({allocation.name}) runs on spot capacity, and on-demand or reserved work "
        f"needs its GPUs. It was given notice at {preemption.noticed_at.isoformat()} (billing stopped then) and is "
        f"stopped at {preemption.deadline.isoformat()}: a job saves its checkpoint on SIGTERM within that time. "
        f"Work since {since} is at stake ({preemption.lost_ms / 1000:.0f} s). {then}",
    )
