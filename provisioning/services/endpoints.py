"""A serverless endpoint's life around zero replicas: asleep it holds no device and bills nothing, its first
request wakes it, and while it runs its usage follows its ready replicas.

- ``endpoint_sleep``: ``running`` -> ``idle``. The state machine closes the usage interval and gives the devices
  back to the engine; the URL, workload and access stay (docs/design.md, "Serverless at zero").
- ``endpoint_wake``: ``idle`` -> ``placed``: placed again from its spec (on whatever fits now) and provisioned; the
  time until ``running`` is its cold start (``Allocation.cold_start_ms``, audited with ``allocation.running``).
  Nothing fits: ``EndpointNoCapacity`` (503 with ``Retry-After``), and it stays idle.
- ``allocation_replicas_set``: the driver saw the ready replicas change; the usage interval is cut there and a new
  one opened for the new count (``allocation_scaled``), so usage is exact replica-seconds.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, Unavailable
from core.tasks import enqueue
from provisioning.domain.placement.decision import Refused
from provisioning.domain.rungs import rung_facts
from provisioning.domain.states import AllocationState
from provisioning.events import allocation_scaled
from provisioning.fleet_cache import placement_section
from provisioning.models import Allocation
from provisioning.selectors import tenant_policy
from provisioning.services.devices import devices_take
from provisioning.services.placing import PROVISION, AllocationSpec, priced_request, stale_fleet_retry
from provisioning.services.transitions import allocation_transition

S = AllocationState
# How long a caller refused for want of capacity is told to wait before trying again (seconds).
NO_CAPACITY_RETRY_AFTER = 30


class EndpointNoCapacity(Unavailable):
    """The endpoint woke but nothing fits it now: 503 ``endpoint_no_capacity`` with the engine's reasons."""

    def __init__(self, refusal: Refused) -> None:
        super().__init__(
            "endpoint_no_capacity",
            f"The endpoint is scaled to zero and no capacity is free to start it: {refusal.message} Try again later.",
            retry_after=NO_CAPACITY_RETRY_AFTER,
            extra={"reasons": [{"code": r.code.value, "message": r.message} for r in refusal.reasons]},
        )


def _endpoint(allocation: Allocation) -> None:
    if not rung_facts(allocation.rung).endpoint:
        raise Conflict("not_an_endpoint", f"Allocation {allocation.pk} is not a serverless endpoint.")


def endpoint_sleep(*, allocation: Allocation, actor: Actor, at: datetime | None = None) -> bool:
    """The endpoint is at zero replicas (its driver saw the last one go): ``idle``, devices released, usage
    closed at ``at``. False when it was not running (someone else moved it first)."""
    _endpoint(allocation)
    if allocation.state != S.RUNNING:
        return False
    return allocation_transition(allocation=allocation, to=S.IDLE, actor=actor, expect=S.RUNNING, at=at)


def endpoint_wake(*, allocation: Allocation, actor: Actor, at: datetime | None = None) -> bool:
    """Place an idle endpoint again and have its driver start it; False when it was not idle (another request
    woke it already). Raises ``EndpointNoCapacity`` when nothing fits: it stays idle."""
    _endpoint(allocation)
    now = at or timezone.now()
    spec = AllocationSpec.from_json(allocation.spec)
    request = priced_request(spec, at=now)  # placed again: only where its shape has a price now

    def decide() -> bool:
        with placement_section() as section:
            woke = Allocation.objects.filter(pk=allocation.pk, state=S.IDLE).update(
                state=S.PLACED, state_changed_at=now, woke_at=now, cold_start_ms=None
            )
            if not woke:
                return False
            tenant = allocation.tenant
            result = section.engine.place(request, tenant_policy(tenant), quota_milli=tenant.gpu_quota_milli)
            if isinstance(result, Refused):
                raise EndpointNoCapacity(result)  # the section's transaction undoes the wake
            devices_take(section, allocation, result)
            audit_record(
                actor=actor,
                action="allocation.placed",
                target_type="allocation",
                target_id=allocation.pk,
                tenant=tenant,
                data={
                    "from": S.IDLE,
                    "wake": True,
                    "spec": spec.to_json(),
                    "devices": len(result.devices),
                    "hosts": sorted({d.hostname for d in result.devices}),
                },
            )
            enqueue(PROVISION, allocation.pk)
        allocation.refresh_from_db()
        return True

    return stale_fleet_retry(decide)


def allocation_replicas_set(*, allocation: Allocation, replicas: int, actor: Actor, at: datetime | None = None) -> bool:
    """A running endpoint's ready replicas are now ``replicas`` (1 or more; zero is ``endpoint_sleep``): its usage
    interval is cut at ``at`` and reopened for the new count. False when nothing changed or it is not running."""
    _endpoint(allocation)
    if replicas < 1:
        raise ValueError("an endpoint at zero replicas sleeps (endpoint_sleep)")
    now = at or timezone.now()
    old = allocation.replicas
    if old == replicas or allocation.state != S.RUNNING:
        return False
    with transaction.atomic():
        if not Allocation.objects.filter(pk=allocation.pk, state=S.RUNNING, replicas=old).update(replicas=replicas):
            return False
        allocation.replicas = replicas
        allocation_scaled.send(sender=Allocation, allocation=allocation, at=now)
        audit_record(
            actor=actor,
            action="allocation.scaled",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=allocation.tenant,
            data={"from": old, "to": replicas},
        )
    return True
