"""An endpoint's requests on Kubernetes when the operator's Prometheus does not answer: its cold starts are still
read, and its request figures count nothing and say why, at the API and on the portal's allocation page. (With
Prometheus answering: tests/provisioning/drivers/kubernetes/test_gateway_tokens.py.)"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from provisioning.drivers.base import provisioner
from provisioning.drivers.kubernetes import gateway_stats
from tests.fakes.kubernetes import K8sServer
from tests.support.consoles import signed_in
from tests.support.kubernetes import running_endpoint

DOWN = "http://127.0.0.1:9"


def test_the_queries_ask_for_each_routes_clusters_over_the_window() -> None:
    assert gateway_stats.count_query(["ldr-1", "ldr-22"]) == (
        'sum by (route) (label_replace(increase(envoy_cluster_upstream_rq_time_count{envoy_cluster_name=~"httproute/'
        '[^/]+/(ldr-1|ldr-22)/rule/[0-9]+"}[86400s]), "route", "$1", "envoy_cluster_name", '
        '"httproute/[^/]+/([^/]+)/rule/[0-9]+"))'
    )
    assert gateway_stats.quantile_query(0.9, ["ldr-1"]).startswith("histogram_quantile(0.9, sum by (route, le) (")
    assert gateway_stats.request_times([], now=timezone.now()) == {}


def test_without_prometheus_the_request_figures_say_why(
    k8s_fleet: K8sServer, acme: Any, alice: Any, api: Any, settings: Any
) -> None:
    settings.LADDER_PROMETHEUS_URL = DOWN
    endpoint = running_endpoint(k8s_fleet, acme)
    (times,) = provisioner().request_times([endpoint.pk], now=timezone.now()).values()
    assert times.unavailable == f"Prometheus at {DOWN} did not answer: ConnectionError."
    assert times.queue_delay.count == times.execution.count == 0

    body = api(alice).get(f"/api/v1/allocations/{endpoint.pk}/cold-starts").json()
    assert body["requests_unavailable"] == times.unavailable
    assert body["requests_window"] == "the last 24 hours at the gateway"
    assert body["queue_delay"] == {"count": 0, "p50_ms": None, "p90_ms": None, "p99_ms": None}

    page = signed_in(alice).get(f"/portal/allocations/{endpoint.pk}").content.decode()
    assert "Requests: the last 24 hours at the gateway." in page
    assert f'<span class="error" data-requests-unavailable>{times.unavailable}</span>' in page
