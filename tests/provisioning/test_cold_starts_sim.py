"""Cold starts on the simulated fleet: a woken endpoint runs once its modelled cold start is over (the device wait,
the image unless its hosts hold it, the init and the model from its cache volume or the hub), each wake leaves a
row with its phases, an endpoint going idle has its image pulled in advance where its next replica goes, and each
request's queue delay and execution time are kept without a database write."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from time_machine import TimeMachineFixture

from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, EndpointColdStart, NodeImage
from provisioning.selectors import endpoint_request_samples
from provisioning.services.cold_starts import active_hosts, endpoint_request_observe
from provisioning.services.endpoints import endpoint_wake
from tests.support import SYSTEM
from tests.support.billing import at, load_fleet, place
from tests.support.volumes import volume_make

IMAGE = "ghcr.io/acme/server:1.0"


@pytest.fixture(autouse=True)
def modelled(settings: Any) -> None:
    """make run's figures: a 2 s device wait, a 1 s init, 8 GB images at 0.5 GB/s, weights at 0.25 GB/s from the
    hub and 2 GB/s from a volume."""
    settings.LADDER_SIM_PROVISION_SECONDS = 2
    settings.LADDER_SIM_INIT_SECONDS = 1
    settings.LADDER_SIM_IMAGE_GB = 8
    settings.LADDER_SIM_REGISTRY_GB_PER_SECOND = 0.5
    settings.LADDER_SIM_HUB_GB_PER_SECOND = 0.25
    settings.LADDER_SIM_VOLUME_GB_PER_SECOND = 2
    settings.LADDER_SERVERLESS_PREPULL = True


def endpoint(client: Any, capture: Any, model: dict[str, Any], volume: int | None = None) -> Allocation:
    workload: dict[str, Any] = {"image": IMAGE, "model": model}
    if volume is not None:
        workload["volumes"] = [{"volume": volume, "mount_path": "/models", "read_only": True}]
    body = {"name": "llm", "rung": "serverless", "gpu_model": "H100-SXM-80GB", "gpus": 1, "workload": workload}
    with capture(execute=True):
        made = client.post("/api/v1/allocations", body, format="json")
    assert made.status_code == 201, made.content
    return Allocation.objects.get(pk=made.json()["id"])


def reconciled_at(time_machine: TimeMachineFixture, when: datetime, allocation: Allocation) -> str:
    time_machine.move_to(when, tick=False)
    allocations_reconcile()
    allocation.refresh_from_db()
    return str(allocation.state)


def asleep(time_machine: TimeMachineFixture, when: datetime, allocation: Allocation, settings: Any) -> None:
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
    assert reconciled_at(time_machine, when, allocation) == S.IDLE
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 300


def woken(time_machine: TimeMachineFixture, when: datetime, allocation: Allocation, capture: Any) -> None:
    time_machine.move_to(when, tick=False)
    with capture(execute=True):  # its provisioning task runs at the commit, as under make run
        assert endpoint_wake(allocation=allocation, actor=SYSTEM)
    allocation.refresh_from_db()
    assert allocation.state == S.PROVISIONING


def test_a_wake_lasts_its_modelled_cold_start_and_leaves_a_row_with_its_phases(
    api: Any, alice: Any, settings: Any, time_machine: TimeMachineFixture, django_capture_on_commit_callbacks: Any
) -> None:
    load_fleet()
    time_machine.move_to(at(0), tick=False)
    client = api(alice)
    cache_volume = volume_make(client, django_capture_on_commit_callbacks, name="models", size_gb=100)
    model = {"size_gb": 20, "volume": cache_volume["id"]}
    llm = endpoint(client, django_capture_on_commit_callbacks, model, volume=cache_volume["id"])
    assert reconciled_at(time_machine, at(seconds=2), llm) == S.RUNNING  # a first start: the flat delay
    first = active_hosts(llm)
    assert set(NodeImage.objects.filter(image=IMAGE).values_list("node__hostname", flat=True)) >= set(first)
    assert not EndpointColdStart.objects.exists()  # no wake, no cold start

    asleep(time_machine, at(minutes=1), llm, settings)
    woken(time_machine, at(minutes=30), llm, django_capture_on_commit_callbacks)
    # 2 s for the device, no pull (its host holds the image), 1 s init and 20 GB at 2 GB/s from the volume: 13 s.
    assert reconciled_at(time_machine, at(minutes=30, seconds=12.9), llm) == S.PROVISIONING
    assert reconciled_at(time_machine, at(minutes=30, seconds=20), llm) == S.RUNNING
    assert llm.cold_start_ms == 13_000
    assert llm.running_since == at(minutes=30, seconds=13)  # warm then, and billed from then: not from the look
    row = EndpointColdStart.objects.get(allocation=llm)
    assert (row.device_wait_ms, row.image_pull_ms, row.model_load_ms, row.total_ms) == (2000, 0, 11_000, 13_000)
    assert (row.image_cached, row.model_source, row.tenant_id) == (True, "volume", llm.tenant_id)
    assert (row.woke_at, row.ready_at) == (at(minutes=30), at(minutes=30, seconds=13))


def test_without_its_image_or_a_model_cache_a_wake_pulls_and_downloads(
    api: Any, alice: Any, settings: Any, time_machine: TimeMachineFixture, django_capture_on_commit_callbacks: Any
) -> None:
    load_fleet()
    settings.LADDER_SERVERLESS_PREPULL = False
    time_machine.move_to(at(0), tick=False)
    llm = endpoint(api(alice), django_capture_on_commit_callbacks, {"size_gb": 20})
    assert reconciled_at(time_machine, at(seconds=2), llm) == S.RUNNING
    asleep(time_machine, at(minutes=1), llm, settings)
    NodeImage.objects.all().delete()  # the hosts' image stores were emptied meanwhile (the kubelet's image GC)
    woken(time_machine, at(minutes=30), llm, django_capture_on_commit_callbacks)
    # 2 s, 8 GB at 0.5 GB/s, then 1 s and 20 GB at 0.25 GB/s: 2 + 16 + 81 = 99 s.
    assert reconciled_at(time_machine, at(minutes=31, seconds=38), llm) == S.PROVISIONING
    assert reconciled_at(time_machine, at(minutes=31, seconds=39), llm) == S.RUNNING
    row = EndpointColdStart.objects.get(allocation=llm)
    assert (row.device_wait_ms, row.image_pull_ms, row.model_load_ms, row.total_ms) == (2000, 16_000, 81_000, 99_000)
    assert (row.image_cached, row.model_source) == (False, "hub")
    assert llm.cold_start_ms == 99_000
    assert NodeImage.objects.filter(image=IMAGE, node__hostname__in=active_hosts(llm)).exists()  # pulled now


def test_an_idle_endpoints_image_is_pulled_in_advance_where_its_next_replica_goes(
    api: Any,
    alice: Any,
    globex: Any,
    settings: Any,
    time_machine: TimeMachineFixture,
    django_capture_on_commit_callbacks: Any,
) -> None:
    load_fleet()
    time_machine.move_to(at(0), tick=False)
    llm = endpoint(api(alice), django_capture_on_commit_callbacks, {"size_gb": 4})
    assert reconciled_at(time_machine, at(seconds=2), llm) == S.RUNNING
    last = active_hosts(llm)
    # Another tenant leaves one GPU free on a host: the engine's tightest fit for the endpoint's next replica.
    with django_capture_on_commit_callbacks(execute=True):
        neighbour = place(globex, rung="container", gpus=7)
    NodeImage.objects.all().delete()  # nothing held before it goes idle: what follows is the pre-pull's
    asleep(time_machine, at(minutes=1), llm, settings)
    pulled = set(NodeImage.objects.filter(image=IMAGE).values_list("node__hostname", flat=True))
    woken(time_machine, at(minutes=30), llm, django_capture_on_commit_callbacks)
    now = active_hosts(llm)
    assert now == active_hosts(neighbour)  # placed beside the neighbour, not where it ran
    assert pulled == {*last, *now}  # pulled where it ran, and where the engine said it would go
    assert reconciled_at(time_machine, at(minutes=31), llm) == S.RUNNING
    row = EndpointColdStart.objects.get(allocation=llm)
    assert (row.image_pull_ms, row.image_cached) == (0, True)


def test_each_request_keeps_its_queue_delay_and_execution_time_without_a_database_write(
    api: Any, alice: Any, settings: Any, time_machine: TimeMachineFixture, django_capture_on_commit_callbacks: Any
) -> None:
    load_fleet()
    cache.clear()
    time_machine.move_to(at(0), tick=False)
    llm = endpoint(api(alice), django_capture_on_commit_callbacks, {"size_gb": 4})
    assert reconciled_at(time_machine, at(seconds=2), llm) == S.RUNNING
    running = llm.running_since
    assert running is not None
    with CaptureQueriesContext(connection) as queries:
        # Held by the wake: it came 3 s before the endpoint ran; answered 40 ms after.
        endpoint_request_observe(
            allocation_id=llm.pk, received_at=running - timedelta(seconds=3), answered_at=running + timedelta(0, 0.04)
        )
        # Warm: no wait.
        later = running + timedelta(minutes=1)
        endpoint_request_observe(allocation_id=llm.pk, received_at=later, answered_at=later + timedelta(0, 0.025))
    assert all(q["sql"].lstrip().upper().startswith("SELECT") for q in queries.captured_queries)
    assert endpoint_request_samples(llm.pk) == [(3000, 40), (0, 25)]
    assert endpoint_request_samples(llm.pk + 1) == []
    for _ in range(600):
        endpoint_request_observe(allocation_id=llm.pk, received_at=later, answered_at=later)
    assert len(endpoint_request_samples(llm.pk)) == 512  # bounded: the last ones
