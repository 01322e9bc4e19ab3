"""Scale to zero on the simulated fleet, over real HTTP (a live server, real commits, tasks inline as under
``make run``): an idle endpoint's first request is held while it wakes and answers after a measured cold start;
a wake that outlasts the bound, or finds no capacity, answers 503 problem+json with ``Retry-After``."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from core.models import AuditEvent
from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, GpuClaim
from tenancy.services import api_key_create
from tests.support import SYSTEM
from tests.support.billing import load_fleet, place

pytestmark = pytest.mark.django_db(transaction=True)


def call(url: str, key: str) -> tuple[int, Any, dict[str, Any]]:
    request = urllib.request.Request(url, method="POST", data=json.dumps({"prompt": "hello"}).encode())
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read())


def asleep(allocation: Allocation, settings: Any) -> None:
    """Reconcile with a zero idle window: a running endpoint nobody called goes to zero at once."""
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
    allocations_reconcile()
    allocation.refresh_from_db()
    assert allocation.state == S.IDLE
    assert not GpuClaim.objects.filter(allocation=allocation).exists()
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 300


def test_the_first_request_wakes_an_idle_endpoint_after_a_measured_cold_start(
    live_server: Any, acme: Any, alice: Any, globex: Any, settings: Any
) -> None:
    load_fleet()
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    # The cold start is the device wait alone (no fixed init; its image stays on its hosts, and it names no model),
    # so each wake below lasts what the test sets.
    settings.LADDER_SIM_INIT_SECONDS = 0
    key = api_key_create(user=alice, name="caller", scopes=["read"], expires_at=None, actor=SYSTEM).token
    endpoint = place(acme, rung="serverless", gpus=2)
    allocations_reconcile()
    endpoint.refresh_from_db()
    assert endpoint.state == S.RUNNING
    asleep(endpoint, settings)
    url = f"{live_server.url}/endpoints/{endpoint.pk}/v1/predict"

    settings.LADDER_SIM_PROVISION_SECONDS = 1.5  # the cold start: placing, pulling, loading the model
    began = time.monotonic()
    status, _, body = call(url, key)
    waited = time.monotonic() - began
    assert status == 200, body
    assert body["path"] == "/v1/predict"
    endpoint.refresh_from_db()
    assert (endpoint.state, endpoint.replicas) == (S.RUNNING, 1)
    assert endpoint.cold_start_ms is not None
    assert 1500 <= endpoint.cold_start_ms <= waited * 1000 + 50
    running = AuditEvent.objects.filter(action="allocation.running", target_id=str(endpoint.pk)).order_by("seq")
    assert running.last().data["cold_start_ms"] == endpoint.cold_start_ms  # type: ignore[union-attr]
    print(f"cold start {endpoint.cold_start_ms} ms; the request was held {waited * 1000:.0f} ms")

    # A wake that outlasts the bound: 503, try again; the endpoint keeps starting meanwhile.
    asleep(endpoint, settings)
    settings.LADDER_SIM_PROVISION_SECONDS = 60
    settings.LADDER_SERVERLESS_WAKE_WAIT_SECONDS = 0.5
    status, headers, body = call(url, key)
    assert (status, body["code"], headers["Retry-After"]) == (503, "endpoint_waking", "5")
    assert headers["Content-Type"] == "application/problem+json"
    endpoint.refresh_from_db()
    assert endpoint.state == S.PROVISIONING
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    status, _, _ = call(url, key)
    assert status == 200

    # No capacity at the wake: 503 with Retry-After, never a hang; it stays idle, holding nothing.
    asleep(endpoint, settings)
    for gpus in (8, 8, 4):  # another tenant takes every H100 meanwhile
        place(globex, rung="container", gpus=gpus)
    began = time.monotonic()
    status, headers, body = call(url, key)
    assert time.monotonic() - began < 5
    assert (status, body["code"], headers["Retry-After"]) == (503, "endpoint_no_capacity", "30")
    assert body["reasons"][0]["code"] == "no_capacity"
    endpoint.refresh_from_db()
    assert endpoint.state == S.IDLE
    assert not GpuClaim.objects.filter(allocation=endpoint).exists()
