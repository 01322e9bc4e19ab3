"""Scale to zero on Kubernetes, against the fake API server: an endpoint whose queue stays empty is scaled to 0
replicas, and once its last pod is gone it is idle (no GPU held, nothing billed); the gateway's check of its first
request wakes it (placed again, applied, scaled from 0 to 1) and answers once a replica is ready, after a
measured cold start; ready replicas drive the usage interval; a wake with no capacity answers 503."""

from __future__ import annotations

import time
from itertools import pairwise
from typing import Any

import pytest

from billing.models import UsageInterval
from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, GpuClaim
from tests.fakes.kubernetes import K8sServer
from tests.support import assert_problem
from tests.support.kubernetes import live, place, queue_depth, running_endpoint, state, warm_when_asked
from tests.support.kubernetes import replicas_ready as ready

GATEWAY = "/api/v1/gateway/authorize"


@pytest.fixture
def fleet(k8s_fleet: K8sServer) -> K8sServer:
    return k8s_fleet


def deployment(server: K8sServer, allocation: Allocation) -> dict[str, Any]:
    return live(server, "apps/v1", "Deployment", f"ldr-{allocation.pk}", "ladder-acme")


def test_an_idle_endpoint_releases_its_gpus_and_its_first_request_wakes_it(
    fleet: K8sServer, acme: Any, alice: Any, api: Any, settings: Any
) -> None:
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
    allocation = running_endpoint(fleet, acme)
    queue_depth(fleet, allocation, "0")
    allocations_reconcile()  # the queue is empty: noted
    assert "ladder.io/idle-since" in deployment(fleet, allocation)["metadata"]["annotations"]
    allocations_reconcile()  # empty past the window: scaled to zero
    assert deployment(fleet, allocation)["spec"]["replicas"] == 0
    assert state(allocation) == S.RUNNING  # its last pod may still be finishing its streams
    ready(fleet, allocation, 0)
    allocations_reconcile()  # no pod left: idle
    assert state(allocation) == S.IDLE
    assert not GpuClaim.objects.filter(allocation=allocation).exists()
    assert not UsageInterval.objects.filter(allocation=allocation, end_ms=None).exists()
    assert deployment(fleet, allocation)  # the endpoint keeps its objects, route and URL

    # The first request: the gateway asks Ladder, which wakes the endpoint and answers once a replica is ready.
    cluster = warm_when_asked(fleet, allocation, after=0.8)  # the cluster's side: warm 0.8 s after asked
    host = f"ldr-{allocation.pk}.ladder.localhost"
    began = time.monotonic()
    answer = api(alice).get(GATEWAY, HTTP_X_FORWARDED_HOST=host)
    held = time.monotonic() - began
    cluster.join()
    assert answer.status_code == 200
    allocation.refresh_from_db()
    assert (allocation.state, allocation.replicas) == (S.RUNNING, 1)
    assert allocation.cold_start_ms is not None
    assert 800 <= allocation.cold_start_ms <= held * 1000 + 50
    assert GpuClaim.objects.filter(allocation=allocation).exists()
    woken = deployment(fleet, allocation)
    assert "ladder.io/idle-since" not in (woken["metadata"].get("annotations") or {})
    print(f"kubernetes cold start {allocation.cold_start_ms} ms; the gateway's check held {held * 1000:.0f} ms")


def test_ready_replicas_drive_the_usage_interval(fleet: K8sServer, acme: Any) -> None:
    allocation = running_endpoint(fleet, acme)
    ready(fleet, allocation, 2)
    allocations_reconcile()
    allocation.refresh_from_db()
    assert allocation.replicas == 2
    rows = list(UsageInterval.objects.filter(allocation=allocation).order_by("start_ms"))
    # Each row starts where the one before ended (the ledger also cuts at each hour): not a millisecond lost or
    # billed twice; the units change once, at the scale-up, and the last row is open.
    assert all(a.end_ms == b.start_ms for a, b in pairwise(rows))
    units = [r.units_milli for r in rows]
    assert units == sorted(units)
    assert set(units) == {1000, 2000}
    assert rows[-1].end_ms is None


def test_a_wake_with_no_capacity_answers_503_with_retry_after(
    fleet: K8sServer, acme: Any, alice: Any, globex: Any, api: Any, settings: Any
) -> None:
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
    allocation = running_endpoint(fleet, acme)
    deployment_now = deployment(fleet, allocation)
    fleet.put_object({**deployment_now, "spec": {**deployment_now["spec"], "replicas": 0}})
    ready(fleet, allocation, 0)
    allocations_reconcile()
    assert state(allocation) == S.IDLE
    for gpus in (8, 8, 4):  # every H100 of the hall goes to another tenant meanwhile
        place(globex, rung="container", gpus=gpus)
    answer = api(alice).get(GATEWAY, HTTP_X_FORWARDED_HOST=f"ldr-{allocation.pk}.ladder.localhost")
    assert_problem(answer, 503, "endpoint_no_capacity")
    assert answer["Retry-After"] == "30"
    assert state(allocation) == S.IDLE
