"""Endpoint calls are limited per tenant and endpoint, never per address: every tenant's calls reach Ladder from the
gateway's one address, so a busy endpoint refuses only its own calls (429 ``throttled`` with ``Retry-After``) while
another tenant's endpoint, and the same tenant's other endpoints, go on answering. The limit is the tenant's plan
(``Tenant.endpoint_calls_per_minute``, else ``LADDER_ENDPOINT_CALLS_PER_MINUTE``); operators set it with the quota.

Through real HTTP: the Django test client for the gateway's check, a live server for the endpoint's own URL. The
window is the moved clock's (time-machine), so a minute passes without waiting for it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from api.throttling import PerKeyThrottle
from core.models import AuditEvent
from lifecycle.services.customers import allocation_request
from provisioning.domain.states import AllocationState as S
from provisioning.domain.workloads import Port, Workload
from provisioning.drivers.base import allocations_reconcile, provisioner
from provisioning.models import Allocation
from provisioning.services.placing import AllocationSpec
from tenancy.models import Tenant
from tenancy.services import api_key_create
from tests.support import SYSTEM, assert_problem
from tests.support.billing import H100, load_fleet, place

GATEWAY = "/api/v1/gateway/authorize"
GATEWAY_ADDRESS = "10.0.0.7"  # the gateway's proxy: one address for every tenant's calls
LIMIT = 10  # a minute's worth of calls per endpoint, small so the test is fast


@pytest.fixture
def small_limits(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten endpoint calls a minute; and the API's own per-key throttle at three a minute, so a call counted per
    address (as the gateway's were) would be refused by the fourth."""
    settings.LADDER_ENDPOINT_CALLS_PER_MINUTE = LIMIT
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    monkeypatch.setattr(PerKeyThrottle, "THROTTLE_RATES", {"per_key": "3/min"})
    cache.clear()


@pytest.fixture
def clock(time_machine: Any) -> Callable[[float], None]:
    """``clock(s)``: the wall clock stands ``s`` seconds into a fresh minute (the counters' window)."""
    start = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)

    def at(seconds: float) -> None:
        time_machine.move_to(start + timedelta(seconds=seconds), tick=False)

    at(0)
    return at


def serverless(tenant: Tenant) -> Allocation:
    return place(tenant, rung="serverless", gpus=1)


def running(*allocations: Allocation) -> None:
    for allocation in allocations:
        provisioner().provision(allocation.pk)  # what the task queued at commit does
    allocations_reconcile()
    for allocation in allocations:
        allocation.refresh_from_db()
        assert allocation.state == S.RUNNING


def key_of(user: Any) -> str:
    return api_key_create(user=user, name="caller", scopes=["read"], expires_at=None, actor=SYSTEM).token


def through_gateway(host: str, key: str | None = None) -> Any:
    """The gateway's check for one request: the same client address every time, whoever calls."""
    client = APIClient(REMOTE_ADDR=GATEWAY_ADDRESS)
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client.get(GATEWAY, HTTP_X_FORWARDED_HOST=host)


def host(allocation: Allocation, port: int | None = None) -> str:
    return f"ldr-{allocation.pk}{'' if port is None else f'-{port}'}.ladder.localhost"


def test_a_busy_endpoint_behind_the_gateway_refuses_only_its_own_calls(
    small_limits: None, acme: Any, alice: Any, globex: Any, charlie: Any, clock: Callable[[float], None]
) -> None:
    load_fleet()
    busy, quiet = serverless(acme), serverless(acme)
    neighbour = serverless(globex)
    running(busy, quiet, neighbour)
    alices, charlies = key_of(alice), key_of(charlie)

    for _ in range(LIMIT):  # a minute's worth, all from the gateway's one address
        assert through_gateway(host(busy), alices).status_code == 200
    clock(12)
    for _ in range(10):
        refused = through_gateway(host(busy), alices)
        assert_problem(refused, 429, "throttled")
        assert refused["Retry-After"] == "48"  # when the minute ends
        assert f"Endpoint {busy.pk} takes {LIMIT} calls a minute" in refused.json()["detail"]
        assert through_gateway(host(neighbour), charlies).status_code == 200  # another tenant: never slowed
    # The same tenant's other endpoint has its own count.
    for _ in range(LIMIT):
        assert through_gateway(host(quiet), alices).status_code == 200
    assert_problem(through_gateway(host(quiet), alices), 429, "throttled")

    clock(60)  # the next minute
    assert through_gateway(host(busy), alices).status_code == 200


def test_calls_another_tenant_makes_at_an_endpoint_do_not_spend_its_allowance(
    small_limits: None, acme: Any, alice: Any, globex: Any, charlie: Any, clock: Callable[[float], None]
) -> None:
    load_fleet()
    endpoint = serverless(acme)
    running(endpoint)
    alices, charlies = key_of(alice), key_of(charlie)
    for _ in range(3 * LIMIT):
        assert_problem(through_gateway(host(endpoint), charlies), 403, "endpoint_forbidden")
        assert_problem(through_gateway(host(endpoint)), 401, "not_authenticated")
        assert_problem(through_gateway(host(endpoint), "ldr_000000000000_wrong"), 401, "not_authenticated")
    for _ in range(LIMIT):
        assert through_gateway(host(endpoint), alices).status_code == 200
    assert_problem(through_gateway(host(endpoint), alices), 429, "throttled")


def test_a_public_port_counts_against_its_allocations_limit(
    small_limits: None, acme: Any, alice: Any, globex: Any, clock: Callable[[float], None]
) -> None:
    load_fleet()
    spec = AllocationSpec(rung="container", gpu_models=(H100,), gpus=1)
    web = Workload(image="nginx:1.27", ports=(Port(8000, expose="public"),))
    notebook = allocation_request(tenant=acme, name="notebook", spec=spec, actor=SYSTEM, workload=web)
    other = allocation_request(tenant=globex, name="site", spec=spec, actor=SYSTEM, workload=web)
    running(notebook, other)
    for _ in range(LIMIT):  # public: no key
        assert through_gateway(host(notebook, 8000)).status_code == 200
    refused = through_gateway(host(notebook, 8000))
    assert_problem(refused, 429, "throttled")
    assert refused["Retry-After"] == "60"
    assert through_gateway(host(other, 8000)).status_code == 200
    # A port it does not expose is refused as before, and spends nothing.
    assert_problem(through_gateway(host(other, 9)), 403, "endpoint_forbidden")


def test_the_tenants_plan_sets_the_limit_and_operators_set_the_plan(
    small_limits: None,
    api: Callable[..., APIClient],
    acme: Any,
    alice: Any,
    globex: Any,
    charlie: Any,
    operator: Any,
    clock: Callable[[float], None],
) -> None:
    load_fleet()
    endpoint, neighbour = serverless(acme), serverless(globex)
    running(endpoint, neighbour)
    alices, charlies = key_of(alice), key_of(charlie)
    tenant_url = "/api/v1/ops/tenants/acme/quota"

    def ops(body: dict[str, Any]) -> Any:
        return api(operator).put(tenant_url, body, format="json")  # a key of its own: its own API counter

    assert ops({"gpus": "4", "endpoint_calls_per_minute": 2}).json() == {
        "gpus": "4",
        "endpoint_calls_per_minute": 2,
        "volume_gb": None,
    }
    event = AuditEvent.objects.filter(action="tenant.quota_set").latest("seq")
    assert event.data["endpoint_calls_per_minute"] == {"old": None, "new": 2}
    assert api(alice).get("/api/v1/tenant").json()["endpoint_calls_per_minute"] == 2

    for _ in range(2):
        assert through_gateway(host(endpoint), alices).status_code == 200
    assert_problem(through_gateway(host(endpoint), alices), 429, "throttled")
    for _ in range(LIMIT):  # globex keeps the default
        assert through_gateway(host(neighbour), charlies).status_code == 200

    # Setting only the GPU quota leaves the calls as they are; null gives the default back.
    assert ops({"gpus": "2"}).json() == {"gpus": "2", "endpoint_calls_per_minute": 2, "volume_gb": None}
    assert ops({"gpus": None, "endpoint_calls_per_minute": None}).json() == {
        "gpus": None,
        "endpoint_calls_per_minute": LIMIT,
        "volume_gb": None,
    }
    assert Tenant.objects.get(pk=acme.pk).endpoint_calls_per_minute is None
    assert through_gateway(host(endpoint), alices).status_code == 200  # the third of ten this minute

    refused = ops({"gpus": None, "endpoint_calls_per_minute": 0})
    assert_problem(refused, 422, "validation_error")
    assert "endpoint_calls_per_minute" in refused.json()["errors"]
    assert_problem(api(alice).put(tenant_url, {"gpus": None}, format="json"), 403, "permission_denied")


# --- the endpoint's own URL, over a live server -------------------------------------------------------------------


def call(url: str, key: str) -> tuple[int, Any, dict[str, Any]]:
    request = urllib.request.Request(url, method="POST", data=json.dumps({"prompt": "hello"}).encode())
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read())


@pytest.mark.django_db(transaction=True)
def test_a_busy_endpoints_own_url_refuses_only_its_own_calls(
    live_server: Any,
    small_limits: None,
    acme: Any,
    alice: Any,
    globex: Any,
    charlie: Any,
    clock: Callable[[float], None],
) -> None:
    load_fleet()
    busy, quiet = serverless(acme), serverless(acme)
    neighbour = serverless(globex)
    running(busy, quiet, neighbour)
    alices, charlies = key_of(alice), key_of(charlie)
    url = f"{live_server.url}/endpoints/{{}}/v1/predict"

    for _ in range(LIMIT):  # every call from 127.0.0.1
        status, _, body = call(url.format(busy.pk), alices)
        assert status == 200, body
    clock(30)
    for _ in range(10):
        status, headers, body = call(url.format(busy.pk), alices)
        assert (status, body["code"], headers["Retry-After"]) == (429, "throttled", "30")
        assert headers["Content-Type"] == "application/problem+json"
        status, _, body = call(url.format(neighbour.pk), charlies)
        assert status == 200, body
    status, _, body = call(url.format(quiet.pk), alices)
    assert status == 200, body

    clock(61)
    status, _, body = call(url.format(busy.pk), alices)
    assert status == 200, body
