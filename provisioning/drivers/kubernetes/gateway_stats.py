"""A serverless endpoint's requests on Kubernetes, from the gateway's own signals as the operator's Prometheus holds
them (``core.prometheus``): Envoy's per-cluster request-time histogram, ``envoy_cluster_upstream_rq_time`` (in ms),
for the endpoint's route (Envoy Gateway names the cluster ``httproute/<namespace>/<route>/rule/<index>``).

- **Execution time**: that histogram over ``WINDOW``: from the request leaving the gateway for a replica until the
  replica's answer (a wait for a free connection and the model server's own queue included).
- **Queue delay**: a request waits before the gateway forwards it only while Ladder's check holds it as the
  endpoint wakes (the gateway's external authorization, ``lifecycle.services.gateway``), which Ladder records
  (``endpoint_hold_observe``). The histogram's count is how many requests the gateway forwarded; every one not
  held waited 0. P50/P90/P99 are taken over all of them (``percentiles_among``).

Four queries answer any number of endpoints (a count and three quantiles, each summed by route).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from core.prometheus import PrometheusUnavailable, instant
from provisioning.domain.cold_start import NO_REQUESTS, Percentiles, RequestTimes, percentiles_among
from provisioning.drivers.kubernetes.shapes import object_name
from provisioning.selectors import endpoint_holds

WINDOW = timedelta(hours=24)
WINDOW_WORDS = "the last 24 hours at the gateway"
HISTOGRAM = "envoy_cluster_upstream_rq_time"
QUANTILES = (0.5, 0.9, 0.99)


def _per_route(series: str, routes: Sequence[str]) -> str:
    """``increase`` of ``series`` over the window for the routes' clusters, labelled ``route`` by route name."""
    wanted = "|".join(routes)
    selector = f'envoy_cluster_name=~"httproute/[^/]+/({wanted})/rule/[0-9]+"'
    increase = f"increase({series}{{{selector}}}[{int(WINDOW.total_seconds())}s])"
    return f'label_replace({increase}, "route", "$1", "envoy_cluster_name", "httproute/[^/]+/([^/]+)/rule/[0-9]+")'


def count_query(routes: Sequence[str]) -> str:
    """PromQL: how many requests the gateway forwarded to each route over the window."""
    return f"sum by (route) ({_per_route(f'{HISTOGRAM}_count', routes)})"


def quantile_query(q: float, routes: Sequence[str]) -> str:
    """PromQL: the ``q`` quantile of each route's request time over the window (ms)."""
    return f"histogram_quantile({q}, sum by (route, le) ({_per_route(f'{HISTOGRAM}_bucket', routes)}))"


def request_times(allocation_ids: Sequence[int], *, now: datetime) -> dict[int, RequestTimes]:
    """Each endpoint's queue delay and execution time over ``WINDOW`` up to ``now``. When Prometheus does not
    answer, every endpoint's figures count nothing and say why."""
    if not allocation_ids:
        return {}
    route_of = {object_name(a): a for a in allocation_ids}
    routes = sorted(route_of)
    try:
        counts = {s.labels.get("route"): round(s.value) for s in instant(count_query(routes), at=now)}
        quantiles = [
            {s.labels.get("route"): round(s.value) for s in instant(quantile_query(q, routes), at=now)}
            for q in QUANTILES
        ]
    except PrometheusUnavailable as error:
        return {a: RequestTimes(NO_REQUESTS, NO_REQUESTS, WINDOW_WORDS, unavailable=str(error)) for a in allocation_ids}
    found = {}
    for route, allocation_id in route_of.items():
        count = counts.get(route, 0)
        p50, p90, p99 = (q.get(route) for q in quantiles)
        execution = Percentiles(count, p50, p90, p99) if count else NO_REQUESTS
        holds = endpoint_holds(allocation_id, since=now - WINDOW)
        found[allocation_id] = RequestTimes(percentiles_among(holds, count), execution, WINDOW_WORDS)
    return found
