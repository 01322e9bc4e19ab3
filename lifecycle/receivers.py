"""The subscriptions between apps, all in one place: what happens elsewhere when provisioning reports a fact.

Signals are sent inside the transaction of the change (``provisioning/events.py``), so metering commits or rolls
back with the state change that caused it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.dispatch import receiver

from billing.services.ledger import usage_close, usage_open, usage_rescale
from lifecycle.services.workloads import workload_output_keep
from provisioning.events import allocation_scaled, allocation_started, allocation_stopped, workload_ended
from provisioning.models import Allocation


@receiver(allocation_started, dispatch_uid="lifecycle.usage_open")
def _usage_open(sender: Any, *, allocation: Allocation, at: datetime, **kwargs: Any) -> None:
    """Entering ``running`` opens the allocation's usage interval."""
    usage_open(allocation=allocation, at=at)


@receiver(allocation_stopped, dispatch_uid="lifecycle.usage_close")
def _usage_close(sender: Any, *, allocation: Allocation, at: datetime, **kwargs: Any) -> None:
    """Leaving ``running`` closes it, at the end of the billable work."""
    usage_close(allocation=allocation, at=at)


@receiver(allocation_scaled, dispatch_uid="lifecycle.usage_rescale")
def _usage_rescale(sender: Any, *, allocation: Allocation, at: datetime, **kwargs: Any) -> None:
    """A serverless endpoint's ready replicas changed: its interval is cut and reopened for the new count."""
    usage_rescale(allocation=allocation, at=at)


@receiver(workload_ended, dispatch_uid="lifecycle.workload_output_keep")
def _workload_output_keep(
    sender: Any, *, allocation: Allocation, logs: str, checkpoint: dict[str, object] | None, at: datetime, **kwargs: Any
) -> None:
    """What a workload wrote (its logs, its last checkpoint) becomes the tenant's governed data."""
    workload_output_keep(allocation=allocation, logs=logs, checkpoint=checkpoint, at=at)
