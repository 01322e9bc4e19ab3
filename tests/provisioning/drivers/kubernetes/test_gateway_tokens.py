"""Serverless endpoints behind the gateway, end to end: Ladder over real HTTP, its cluster the fake API server,
and the gateway a double that enforces the Envoy Gateway policies Ladder rendered there (read through the official
client). A running endpoint is called many times with endpoint tokens and no call reaches Ladder but the JWKS
fetch; another tenant's token and a bare API key are refused at the gateway; a revoked key's tokens are refused
within the stated bound, while a token minted after passes at once; an idle endpoint's burst goes to Ladder's
check, wakes it exactly once and every held request is answered; the tenant then reads its requests' queue delay
and execution time, from the double's Envoy histograms scraped by a real Prometheus and the check's own holds."""

from __future__ import annotations

import json
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core.signals import request_started
from kubernetes import client

from core.models import AuditEvent
from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import allocations_reconcile
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.render_access import LADDER_API_SERVICE
from provisioning.models import Allocation
from tenancy.services import api_key_create
from tests.fakes.envoy_gateway import EnvoyGatewayDouble
from tests.fakes.kubernetes import K8sServer
from tests.support import K8S_TOKEN, SYSTEM
from tests.support import k8s_schemas as schemas
from tests.support.kubernetes import live, queue_depth, replicas_ready, running_endpoint, state, warm_when_asked
from tests.support.prometheus import Prometheus

pytestmark = pytest.mark.django_db(transaction=True)
ENVOY = "gateway.envoyproxy.io"
BOUND = 30  # LADDER_GATEWAY_KEYS_SECONDS: the revocation bound this test holds Ladder to


class Clock:
    def __init__(self) -> None:
        self.at = time.time()

    def __call__(self) -> float:
        return self.at


@pytest.fixture
def ladder_calls() -> Iterator[Counter[str]]:
    """Every request that reaches Ladder's web tier, by path."""
    seen: Counter[str] = Counter()

    def count(sender: Any, environ: dict[str, Any], **kwargs: Any) -> None:
        seen[str(environ.get("PATH_INFO"))] += 1

    request_started.connect(count, dispatch_uid="test.ladder_calls")
    yield seen
    request_started.disconnect(dispatch_uid="test.ladder_calls")


@pytest.fixture
def gateway(k8s_fleet: K8sServer, live_server: Any, settings: Any) -> Iterator[EnvoyGatewayDouble]:
    settings.LADDER_PUBLIC_URL = live_server.url
    settings.LADDER_GATEWAY_KEYS_SECONDS = BOUND
    for obj in render.gateway_check_policy(LADDER_API_SERVICE, hold_seconds=20):
        schemas.validate(obj)
        k8s_fleet.put_object(obj)
    config = client.Configuration()
    config.host = k8s_fleet.url
    config.api_key = {"BearerToken": K8S_TOKEN}
    config.api_key_prefix = {"BearerToken": "Bearer"}
    replica_calls = Counter[str]()

    def replica(route: str) -> float:  # every twentieth request takes a replica 400 ms, the others 40 ms
        replica_calls[route] += 1
        return 400.0 if replica_calls[route] % 20 == 0 else 40.0

    double = EnvoyGatewayDouble(
        client.ApiClient(config), services={LADDER_API_SERVICE: live_server.url}, now=Clock(), replica=replica
    )
    yield double
    double.close()


def mint(live_server: Any, key: str, **body: Any) -> str:
    request = urllib.request.Request(
        f"{live_server.url}/api/v1/endpoint-tokens", data=json.dumps(body).encode(), method="POST"
    )
    request.add_header("Authorization", f"Bearer {key}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.loads(response.read())["token"])


def revoke(live_server: Any, key_id: int, key: str) -> None:
    request = urllib.request.Request(f"{live_server.url}/api/v1/api-keys/{key_id}", method="DELETE")
    request.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 204


def token_policy(server: K8sServer, allocation: Allocation) -> dict[str, Any] | None:
    return server.get_object(f"{ENVOY}/v1alpha1", "SecurityPolicy", f"ldr-{allocation.pk}", "ladder-acme")


def test_a_running_endpoint_is_served_without_ladder_and_a_revoked_key_is_refused_within_the_bound(
    k8s_fleet: K8sServer,
    gateway: EnvoyGatewayDouble,
    live_server: Any,
    ladder_calls: Counter[str],
    acme: Any,
    alice: Any,
    charlie: Any,
    globex: Any,
) -> None:
    endpoint = running_endpoint(k8s_fleet, acme)
    host = f"ldr-{endpoint.pk}.ladder.localhost"
    policy = token_policy(k8s_fleet, endpoint)
    assert policy is not None  # applied as it started running
    schemas.validate(policy)
    provider = policy["spec"]["jwt"]["providers"][0]
    assert provider["remoteJWKS"] == {
        "uri": f"{live_server.url}/api/v1/gateway/jwks/acme",
        "cacheDuration": f"{BOUND}s",
    }
    assert provider["issuer"] == live_server.url
    calls = live(
        k8s_fleet, "gateway.envoyproxy.io/v1alpha1", "BackendTrafficPolicy", f"ldr-{endpoint.pk}", "ladder-acme"
    )
    assert calls["spec"]["rateLimit"]["local"]["rules"][0]["limit"] == {"requests": 1200, "unit": "Minute"}

    issued = api_key_create(user=alice, name="serving", scopes=["read", "write"], expires_at=None, actor=SYSTEM)
    spare = api_key_create(user=alice, name="spare", scopes=["read"], expires_at=None, actor=SYSTEM)
    token = mint(live_server, issued.token, endpoints=[endpoint.pk])
    ladder_calls.clear()

    answers = [gateway.request(host, f"Bearer {token}") for _ in range(300)]
    assert {a.status for a in answers} == {200}
    assert {a.forwarded_to for a in answers} == {f"ladder-acme/ldr-{endpoint.pk}:80"}
    assert ladder_calls == Counter({"/api/v1/gateway/jwks/acme": 1})  # once per cache duration, never per call

    # Another tenant's token, or an API key instead of a token, is refused by the gateway itself.
    theirs = api_key_create(user=charlie, name="theirs", scopes=["read"], expires_at=None, actor=SYSTEM)
    foreign = mint(live_server, theirs.token)
    assert gateway.request(host, f"Bearer {foreign}").status == 401
    assert gateway.request(host, f"Bearer {issued.token}").status == 401
    assert gateway.request(host).status == 401
    assert "/api/v1/gateway/authorize" not in ladder_calls

    # Revoked: the gateway keeps its JWKS for the bound, then refuses the key's tokens; a token minted with
    # another key after the revocation passes at once (its signing key was published ahead).
    revoke(live_server, issued.key.pk, issued.token)
    fresh = mint(live_server, spare.token)
    assert gateway.request(host, f"Bearer {fresh}").status == 200
    gateway.now.at += BOUND  # type: ignore[attr-defined]
    assert gateway.request(host, f"Bearer {token}").status == 401
    assert gateway.request(host, f"Bearer {fresh}").status == 200
    assert AuditEvent.objects.filter(action="endpoint_tokens.rotated").count() == 1


# Two dozen requests at once, one of them writing the endpoint's row while the others read it: on PostgreSQL, as in
# production. The suite's SQLite database is in memory with a shared cache, whose table locks refuse a concurrent
# reader outright (SQLITE_LOCKED, no busy wait), unlike `make run`'s database file.
@pytest.mark.postgres
def test_an_idle_endpoints_burst_wakes_it_once_and_its_requests_are_read_from_the_gateways_histograms(
    prometheus_clock: Prometheus,
    k8s_fleet: K8sServer,
    gateway: EnvoyGatewayDouble,
    live_server: Any,
    ladder_calls: Counter[str],
    acme: Any,
    alice: Any,
    settings: Any,
) -> None:
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
    endpoint = running_endpoint(k8s_fleet, acme)
    host = f"ldr-{endpoint.pk}.ladder.localhost"
    key = api_key_create(user=alice, name="serving", scopes=["read"], expires_at=None, actor=SYSTEM).token
    token = mint(live_server, key)  # every endpoint of acme's
    envoy = prometheus_clock.scrape("envoy", gateway.serve_stats())  # the route's cluster, from zero

    queue_depth(k8s_fleet, endpoint, "0")
    allocations_reconcile()  # an empty queue: noted
    allocations_reconcile()  # past the window: the token policy is withdrawn, then zero replicas
    assert token_policy(k8s_fleet, endpoint) is None
    replicas_ready(k8s_fleet, endpoint, 0)
    allocations_reconcile()
    assert state(endpoint) == S.IDLE

    cluster = warm_when_asked(k8s_fleet, endpoint, after=1.0)  # the cluster's side: warm 1 s after asked
    ladder_calls.clear()
    with ThreadPoolExecutor(max_workers=24) as pool:
        answers = list(pool.map(lambda _: gateway.request(host, f"Bearer {token}"), range(24)))
    cluster.join()
    assert all(a.status == 200 or (a.status == 503 and "Retry-After" in a.headers) for a in answers)
    assert sum(a.status == 200 for a in answers) >= 20
    wakes = AuditEvent.objects.filter(action="allocation.placed", target_id=str(endpoint.pk), data__wake=True)
    assert wakes.count() == 1  # one placement for the whole burst
    assert ladder_calls["/api/v1/gateway/authorize"] == 24  # idle: each call went to Ladder's check
    assert state(endpoint) == S.RUNNING
    assert token_policy(k8s_fleet, endpoint) is not None  # running again: the gateway checks tokens itself

    ladder_calls.clear()
    forwarded = sum(a.status == 200 for a in answers)
    more = 100 - forwarded
    assert all(gateway.request(host, f"Bearer {token}").status == 200 for _ in range(more))
    assert "/api/v1/gateway/authorize" not in ladder_calls

    # The wake's cold start, as the tenant reads it: one wake, its total and phases from the cluster's signals.
    request = urllib.request.Request(f"{live_server.url}/api/v1/allocations/{endpoint.pk}/cold-starts")
    request.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(request, timeout=10) as response:
        figures = json.loads(response.read())
    assert figures["count"] == 1
    assert figures["total"]["p50_ms"] >= 1000  # the replica came up warm a second after it was asked for
    assert figures["recent"][0]["total_ms"] == figures["total"]["p99_ms"]

    # Its requests, once Prometheus has scraped the gateway after the last one: 100 forwarded (Prometheus's
    # increase() extrapolates a little past the last scrape), the burst's held by the wake, the rest not at all;
    # every twentieth took its replica 400 ms, the others 40 ms (Envoy's buckets: ..., 25, 50, ..., 250, 500, ...).
    prometheus_clock.scraped(envoy)
    with urllib.request.urlopen(request, timeout=10) as response:
        figures = json.loads(response.read())
    assert figures["requests_unavailable"] is None
    assert figures["requests_window"] == "the last 24 hours at the gateway"
    queue, execution = figures["queue_delay"], figures["execution"]
    assert 100 <= execution["count"] <= 115
    assert queue["count"] == execution["count"]
    assert queue["p50_ms"] == 0  # most were never held
    assert queue["p90_ms"] >= 500  # the burst's, held about a second
    assert queue["p99_ms"] >= queue["p90_ms"]
    assert 25 < execution["p50_ms"] <= 50
    assert 25 < execution["p90_ms"] <= 50
    assert 250 < execution["p99_ms"] <= 500
