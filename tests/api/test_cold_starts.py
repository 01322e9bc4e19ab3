"""``GET /api/v1/allocations/{id}/cold-starts``: an endpoint's wakes and requests as P50/P90/P99 (nearest rank) of
the totals, of each phase, of queue delay and execution time, with its latest wakes; tenant-scoped (another
tenant's id answers 404), refused for what is not an endpoint; and the workload's ``model`` refused with the field
it is wrong in."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache

from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, EndpointColdStart
from provisioning.selectors import endpoint_request_samples
from provisioning.services.cold_starts import endpoint_request_observe
from tests.support import assert_problem
from tests.support.billing import at, load_fleet, place, run

URL = "/api/v1/allocations"


@pytest.fixture
def endpoint(acme: Any) -> Allocation:
    """An endpoint with twenty wakes: totals 1..20 s, the device wait a tenth of each, the pull 0 or 5 s, the model
    load what is left; the tenth reported no phases. And a hundred requests: five held by a wake."""
    load_fleet()
    cache.clear()
    allocation = run(place(acme, rung="serverless", gpus=1), at(0))
    for i in range(1, 21):
        total = i * 1000
        pull = 5000 if i % 2 else 0
        phases = (
            (None, None, None)
            if i == 10
            else (total // 10, min(pull, total - total // 10), max(0, total - total // 10 - pull))
        )
        EndpointColdStart.objects.create(
            tenant=acme,
            allocation=allocation,
            woke_at=at(minutes=i),
            ready_at=at(minutes=i) + timedelta(milliseconds=total),
            device_wait_ms=phases[0],
            image_pull_ms=phases[1],
            model_load_ms=phases[2],
            total_ms=total,
            image_cached=None if i == 10 else not i % 2,
            model_source="hub",
        )
    running = allocation.running_since
    assert running is not None
    for i in range(100):
        held = timedelta(seconds=2 * (i + 1)) if i < 5 else timedelta(0)  # 2, 4, 6, 8, 10 s
        received = running - held if i < 5 else running + timedelta(minutes=1, seconds=i)  # before it ran: held
        endpoint_request_observe(
            allocation_id=allocation.pk, received_at=received, answered_at=received + held + timedelta(milliseconds=i)
        )
    return allocation


def test_an_endpoints_cold_starts_are_published_as_percentiles(api: Any, alice: Any, endpoint: Allocation) -> None:
    response = api(alice).get(f"{URL}/{endpoint.pk}/cold-starts")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["allocation"], body["count"]) == (endpoint.pk, 20)
    assert body["total"] == {"count": 20, "p50_ms": 10_000, "p90_ms": 18_000, "p99_ms": 20_000}
    # The tenth wake reported no phases: each phase is of the other nineteen.
    assert body["phases"]["device_wait"] == {"count": 19, "p50_ms": 1100, "p90_ms": 1900, "p99_ms": 2000}
    assert body["phases"]["image_pull"]["count"] == 19
    # Nine wakes found the image (0), ten pulled it (0.9, 2.7, 4.5 s, then 5 s): the tenth sample of nineteen is 0.9 s.
    assert body["phases"]["image_pull"] == {"count": 19, "p50_ms": 900, "p90_ms": 5000, "p99_ms": 5000}
    assert body["phases"]["model_load"]["count"] == 19
    # Ninety-five requests found a replica running; five were held by a wake (2 to 10 s).
    assert body["queue_delay"] == {"count": 100, "p50_ms": 0, "p90_ms": 0, "p99_ms": 8000}
    assert body["execution"] == {"count": 100, "p50_ms": 49, "p90_ms": 89, "p99_ms": 98}
    recent = body["recent"]
    assert len(recent) == 10
    assert [r["total_ms"] for r in recent] == [20_000 - 1000 * i for i in range(10)]  # newest first
    assert recent[0] == {
        "woke_at": "2026-11-02T10:20:00Z",
        "ready_at": "2026-11-02T10:20:20Z",
        "total_ms": 20_000,
        "device_wait_ms": 2000,
        "image_pull_ms": 0,
        "model_load_ms": 18_000,
        "image_cached": True,
        "model_source": "hub",
    }


def test_another_tenants_endpoint_is_not_found_and_a_member_reads_it(
    api: Any, alice: Any, bob: Any, charlie: Any, endpoint: Allocation
) -> None:
    assert_problem(api(charlie).get(f"{URL}/{endpoint.pk}/cold-starts"), 404, "not_found")
    assert api(bob).get(f"{URL}/{endpoint.pk}/cold-starts").status_code == 200
    assert_problem(api().get(f"{URL}/{endpoint.pk}/cold-starts"), 401, "not_authenticated")


def test_an_endpoint_never_woken_has_none_and_what_is_no_endpoint_is_refused(api: Any, alice: Any, acme: Any) -> None:
    load_fleet()
    cache.clear()
    fresh = run(place(acme, rung="serverless", gpus=1), at(0))
    body = api(alice).get(f"{URL}/{fresh.pk}/cold-starts").json()
    nothing = {"count": 0, "p50_ms": None, "p90_ms": None, "p99_ms": None}
    assert (body["count"], body["total"], body["queue_delay"], body["recent"]) == (0, nothing, nothing, [])
    container = place(acme, rung="container", gpus=1)
    problem = assert_problem(api(alice).get(f"{URL}/{container.pk}/cold-starts"), 409, "not_an_endpoint")
    assert "not a serverless endpoint" in problem["detail"]
    assert fresh.state == S.RUNNING


@pytest.mark.parametrize(
    ("rung", "model", "volumes", "field"),
    [
        ("serverless", {"size_gb": 0}, [], "workload.model.size_gb"),
        ("serverless", {"size_gb": 20, "volume": 3}, [], "workload.model.volume"),
        ("container", {"size_gb": 20}, [], "workload.model"),
        ("serverless", {"size_gb": 20, "weights": "x"}, [], "workload.model.weights"),
    ],
)
def test_a_model_the_rung_cannot_load_is_refused_naming_the_field(
    api: Any, alice: Any, rung: str, model: dict[str, Any], volumes: list[Any], field: str
) -> None:
    load_fleet()
    workload = {"image": "ghcr.io/acme/server:1.0", "model": model, "volumes": volumes}
    body = {"name": "llm", "rung": rung, "gpu_model": "H100-SXM-80GB", "gpus": 1, "workload": workload}
    problem = assert_problem(api(alice).post(URL, body, format="json"), 422, "validation_error")
    assert list(problem["errors"]) == [field], problem
    assert not Allocation.objects.exists()


def test_the_simulated_endpoint_keeps_each_answered_requests_queue_delay_and_execution_time(
    api: Any, alice: Any, acme: Any, settings: Any
) -> None:
    load_fleet()
    cache.clear()
    settings.LADDER_SIM_PROVISION_SECONDS = 0.3  # the wake: a device in 0.3 s, no init, the image on its host
    settings.LADDER_SIM_INIT_SECONDS = 0
    endpoint = run(place(acme, rung="serverless", gpus=1), at(0))
    client = api(alice)
    assert client.post(f"/endpoints/{endpoint.pk}/v1/predict", {"prompt": "hi"}, format="json").status_code == 200
    samples = endpoint_request_samples(endpoint.pk)
    assert len(samples) == 1
    assert samples[0][0] == 0  # it was running: no wait

    settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
    allocations_reconcile()
    endpoint.refresh_from_db()
    assert endpoint.state == S.IDLE
    assert client.post(f"/endpoints/{endpoint.pk}/v1/predict", {"prompt": "hi"}, format="json").status_code == 200
    queue, _ = endpoint_request_samples(endpoint.pk)[-1]
    assert 300 <= queue < 2000  # held by the wake: until the endpoint ran
    figures = client.get(f"{URL}/{endpoint.pk}/cold-starts").json()
    assert figures["queue_delay"]["count"] == 2
    assert figures["queue_delay"]["p99_ms"] == queue
    assert figures["count"] == 1
