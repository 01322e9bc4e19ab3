"""A serverless endpoint at zero replicas: ``idle`` holds no device (database and engine) and accrues no usage,
keeps its URL and workload; a wake places it again and its cold start is measured and audited; a wake with no
capacity is refused 503 and leaves it idle; usage while it runs is replica-seconds, exactly; the simulated fleet
sends an endpoint to zero after its own idle window, never one with ``min_replicas``."""

from __future__ import annotations

from typing import Any

import pytest

from billing.domain.metering import to_ms
from billing.models import UsageInterval
from billing.services.ledger import usage_close
from core.models import AuditEvent
from provisioning.domain.states import AllocationState as S
from provisioning.domain.workloads import Autoscaling, Workload
from provisioning.drivers.base import SimulatedProvisioner
from provisioning.fleet_cache import fleet_read
from provisioning.models import Allocation, AllocationDevice, GpuClaim
from provisioning.services.endpoints import (
    EndpointNoCapacity,
    allocation_replicas_set,
    endpoint_sleep,
    endpoint_wake,
)
from provisioning.services.placing import AllocationSpec, allocation_request
from provisioning.services.stopping import allocation_stop
from provisioning.services.transitions import allocation_transition
from tests.support import SYSTEM
from tests.support.billing import H100, at, load_fleet, place, run


@pytest.fixture
def endpoint(acme: Any) -> Allocation:
    """Two whole H100s, running since ``at(0)`` with one ready replica."""
    load_fleet()
    return run(place(acme, rung="serverless", gpus=2), at(0))


def held_in_engine(allocation: Allocation) -> int:
    """GPUs the in-memory fleet (what the engine decides on) gives the allocation's tenant."""
    with fleet_read() as cache:
        assert cache.engine is not None
        tenant = allocation.tenant_id
        return sum(1 for n in cache.engine.state.nodes.values() for g in n.gpus if g.whole_tenant == tenant)


def usage(allocation: Allocation) -> list[tuple[int, int, int | None]]:
    rows = UsageInterval.objects.filter(allocation=allocation).order_by("start_ms")
    return [(r.units_milli, r.start_ms, r.end_ms) for r in rows]


def test_an_idle_endpoint_holds_no_gpu_and_accrues_nothing(endpoint: Allocation) -> None:
    assert held_in_engine(endpoint) == 2
    assert GpuClaim.objects.filter(allocation=endpoint).exists()

    assert endpoint_sleep(allocation=endpoint, actor=SYSTEM, at=at(minutes=5))
    endpoint.refresh_from_db()
    assert (endpoint.state, endpoint.replicas) == (S.IDLE, 0)
    assert not GpuClaim.objects.filter(allocation=endpoint).exists()
    assert not AllocationDevice.objects.filter(allocation=endpoint, active=True).exists()
    assert held_in_engine(endpoint) == 0
    # Its configuration stays: the spec to place it again and the workload it serves.
    assert endpoint.spec["gpus"] == 2
    # Billed for five minutes of one replica, and nothing open: an hour later there is nothing more to close.
    assert usage(endpoint) == [(1000, to_ms(at(0)), to_ms(at(minutes=5)))]
    assert usage_close(allocation=endpoint, at=at(minutes=65)) == 0
    assert AuditEvent.objects.filter(action="allocation.idle", target_id=str(endpoint.pk)).exists()


def test_usage_follows_the_ready_replicas_to_the_millisecond(endpoint: Allocation) -> None:
    assert allocation_replicas_set(allocation=endpoint, replicas=2, actor=SYSTEM, at=at(seconds=10))
    assert not allocation_replicas_set(allocation=endpoint, replicas=2, actor=SYSTEM, at=at(seconds=20))  # no change
    assert allocation_replicas_set(allocation=endpoint, replicas=1, actor=SYSTEM, at=at(seconds=30.5))
    endpoint_sleep(allocation=endpoint, actor=SYSTEM, at=at(seconds=40))
    assert usage(endpoint) == [
        (1000, to_ms(at(0)), to_ms(at(seconds=10))),
        (2000, to_ms(at(seconds=10)), to_ms(at(seconds=30.5))),
        (1000, to_ms(at(seconds=30.5)), to_ms(at(seconds=40))),
    ]
    total = sum(
        q or 0 for q in UsageInterval.objects.filter(allocation=endpoint).values_list("quantity_milli", flat=True)
    )
    assert total == 1000 * 10 + 2000 * 20.5 + 1000 * 9.5  # replica-seconds, in milli-GPU-seconds
    scaled = AuditEvent.objects.filter(action="allocation.scaled", target_id=str(endpoint.pk)).order_by("seq")
    assert [(e.data["from"], e.data["to"]) for e in scaled] == [(1, 2), (2, 1)]
    with pytest.raises(ValueError, match="endpoint_sleep"):
        allocation_replicas_set(allocation=endpoint, replicas=0, actor=SYSTEM)


def test_a_wake_places_it_again_and_measures_the_cold_start(endpoint: Allocation) -> None:
    endpoint_sleep(allocation=endpoint, actor=SYSTEM, at=at(minutes=5))
    endpoint.refresh_from_db()
    assert endpoint_wake(allocation=endpoint, actor=SYSTEM, at=at(minutes=30))
    assert not endpoint_wake(allocation=endpoint, actor=SYSTEM, at=at(minutes=30))  # a second request: already woken
    endpoint.refresh_from_db()
    assert (endpoint.state, endpoint.woke_at) == (S.PLACED, at(minutes=30))
    assert held_in_engine(endpoint) == 2
    assert AllocationDevice.objects.filter(allocation=endpoint, active=True).count() == 2
    allocation_transition(allocation=endpoint, to=S.PROVISIONING, actor=SYSTEM, at=at(minutes=30, seconds=1))
    allocation_transition(allocation=endpoint, to=S.RUNNING, actor=SYSTEM, at=at(minutes=30, seconds=7.25))
    endpoint.refresh_from_db()
    assert (endpoint.state, endpoint.cold_start_ms, endpoint.replicas) == (S.RUNNING, 7250, 1)
    running = AuditEvent.objects.filter(action="allocation.running", target_id=str(endpoint.pk)).order_by("seq")
    assert running.last().data["cold_start_ms"] == 7250  # type: ignore[union-attr]
    # Billed again from the moment it runs, not while it was idle or cold-starting.
    assert usage(endpoint)[-1] == (1000, to_ms(at(minutes=30, seconds=7.25)), None)


def test_a_wake_with_no_capacity_is_refused_and_stays_idle(endpoint: Allocation, globex: Any) -> None:
    endpoint_sleep(allocation=endpoint, actor=SYSTEM, at=at(minutes=5))
    for gpus in (8, 8, 4):  # another tenant takes every H100 meanwhile
        place(globex, rung="container", gpus=gpus)
    endpoint.refresh_from_db()
    with pytest.raises(EndpointNoCapacity) as refused:
        endpoint_wake(allocation=endpoint, actor=SYSTEM, at=at(minutes=30))
    assert (refused.value.status, refused.value.code, refused.value.retry_after) == (503, "endpoint_no_capacity", 30)
    assert refused.value.extra["reasons"][0]["code"] == "no_capacity"
    endpoint.refresh_from_db()
    assert (endpoint.state, endpoint.woke_at) == (S.IDLE, None)
    assert not GpuClaim.objects.filter(allocation=endpoint).exists()


def test_an_idle_endpoint_stops_and_only_endpoints_sleep(
    endpoint: Allocation, acme: Any, django_capture_on_commit_callbacks: Any
) -> None:
    endpoint_sleep(allocation=endpoint, actor=SYSTEM, at=at(minutes=5))
    endpoint.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):  # the driver's release runs after the commit
        allocation_stop(allocation=endpoint, actor=SYSTEM, at=at(minutes=6))
    assert Allocation.objects.get(pk=endpoint.pk).state == S.STOPPED
    container = run(place(acme, rung="container", gpus=1), at(0))
    with pytest.raises(Exception, match="not a serverless endpoint"):
        endpoint_sleep(allocation=container, actor=SYSTEM)
    assert not endpoint_sleep(allocation=endpoint, actor=SYSTEM)  # stopped: nothing to do


def own_endpoint(tenant: Any, autoscaling: Autoscaling) -> Allocation:
    """Two whole H100s serving a workload with its own autoscaling, running since ``at(0)``, never called."""
    load_fleet()
    spec = AllocationSpec(rung="serverless", gpu_models=(H100,), gpus=2)
    workload = Workload(image="vllm/vllm-openai:v0.11.0", autoscaling=autoscaling)
    return run(allocation_request(tenant=tenant, name="chat", spec=spec, actor=SYSTEM, workload=workload), at(0))


def test_a_simulated_endpoint_sleeps_after_its_own_idle_window(acme: Any, settings: Any, time_machine: Any) -> None:
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 60  # the operator's: the endpoint's own wins
    endpoint = own_endpoint(acme, Autoscaling(idle_seconds=600))
    time_machine.move_to(at(seconds=599), tick=False)
    SimulatedProvisioner().status(endpoint.pk)
    assert Allocation.objects.get(pk=endpoint.pk).state == S.RUNNING
    time_machine.move_to(at(seconds=630), tick=False)
    SimulatedProvisioner().status(endpoint.pk)
    assert Allocation.objects.get(pk=endpoint.pk).state == S.IDLE
    assert usage(endpoint) == [(1000, to_ms(at(0)), to_ms(at(seconds=600)))]  # billed to the end of its window


def test_a_simulated_endpoint_with_min_replicas_never_sleeps(acme: Any, settings: Any, time_machine: Any) -> None:
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
    endpoint = own_endpoint(acme, Autoscaling(min_replicas=1))
    time_machine.move_to(at(minutes=24 * 60), tick=False)
    SimulatedProvisioner().status(endpoint.pk)
    assert Allocation.objects.get(pk=endpoint.pk).state == S.RUNNING
    assert GpuClaim.objects.filter(allocation=endpoint).exists()
