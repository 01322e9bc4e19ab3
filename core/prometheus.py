"""Reading the operator's Prometheus through its HTTP API (``LADDER_PROMETHEUS_URL``): an instant query
(``/api/v1/query``) or a range query (``/api/v1/query_range``), each answered as plain samples. Ladder never scrapes
a node or a proxy itself: what the gateway's proxies and the GPU nodes' exporters report reaches it this way.

A Prometheus that does not answer, answers with an error, or refuses the query raises ``PrometheusUnavailable``
with a sentence a person can act on; callers show it beside what they could read instead of failing the page.
``NaN`` (a quantile of no requests, a ratio of nothing) is left out: a series with no value has no sample.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import requests
from django.conf import settings

CONNECT_SECONDS = 2.0  # a Prometheus that does not take the connection by then is down, as far as a page goes
TIMEOUT_SECONDS = 5.0  # a query that takes longer is reported as unavailable, never waited for by a page

CONCURRENT_QUERIES = 4  # how many queries one read has Prometheus evaluate at once (``ranged_all``)

_local = threading.local()  # a connection pool per thread: requests' sessions are not shared across threads
_pool: ThreadPoolExecutor | None = None  # made on first use (after a server's fork), kept: its threads keep sessions
_pool_lock = threading.Lock()


def _session() -> requests.Session:
    session: requests.Session | None = getattr(_local, "session", None)
    if session is None:
        session = _local.session = requests.Session()
    return session


class PrometheusUnavailable(Exception):
    """Prometheus did not answer the query; the message says where and why."""


@dataclass(frozen=True)
class Sample:
    """One series' value at one instant."""

    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class Series:
    """One series over a range: (unix seconds, value) pairs in time order."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


def _get(path: str, params: dict[str, str], url: str | None) -> Any:
    base = (url or settings.LADDER_PROMETHEUS_URL).rstrip("/")
    try:
        # POST (form-encoded), as Prometheus's API takes it: a selector of a thousand devices is longer than a URL
        # should be.
        response = _session().post(f"{base}{path}", data=params, timeout=(CONNECT_SECONDS, TIMEOUT_SECONDS))
    except requests.RequestException as error:
        raise PrometheusUnavailable(f"Prometheus at {base} did not answer: {type(error).__name__}.") from error
    try:
        body = response.json()
    except ValueError:
        raise PrometheusUnavailable(f"Prometheus at {base} answered {response.status_code} without JSON.") from None
    if response.status_code != 200 or body.get("status") != "success":
        raise PrometheusUnavailable(
            f"Prometheus at {base} refused the query ({response.status_code}): {body.get('error', 'no reason given')}."
        )
    return body["data"]


def _number(value: str) -> float | None:
    number = float(value)
    return None if math.isnan(number) else number


def instant(query: str, *, at: datetime, url: str | None = None) -> list[Sample]:
    """The query's value at ``at``, one sample per series (``NaN`` ones left out)."""
    data = _get("/api/v1/query", {"query": query, "time": f"{at.timestamp():.3f}"}, url)
    if data["resultType"] == "scalar":
        number = _number(data["result"][1])
        return [] if number is None else [Sample({}, number)]
    found = []
    for row in data["result"]:
        number = _number(row["value"][1])
        if number is not None:
            found.append(Sample(dict(row["metric"]), number))
    return found


def ranged(query: str, *, start: datetime, end: datetime, step_seconds: float, url: str | None = None) -> list[Series]:
    """The query evaluated every ``step_seconds`` from ``start`` to ``end``, one series per label set."""
    params = {
        "query": query,
        "start": f"{start.timestamp():.3f}",
        "end": f"{end.timestamp():.3f}",
        "step": f"{step_seconds:g}",
    }
    data = _get("/api/v1/query_range", params, url)
    found = []
    for row in data["result"]:
        points = [(float(t), n) for t, v in row["values"] if (n := _number(v)) is not None]
        found.append(Series(dict(row["metric"]), points))
    return found


def ranged_all(
    queries: Sequence[tuple[str, datetime, datetime]], *, step_seconds: float, url: str | None = None
) -> list[list[Series]]:
    """Each ``(query, start, end)`` evaluated every ``step_seconds``, up to ``CONCURRENT_QUERIES`` at once: their
    series in the order asked. The first query that fails raises (``PrometheusUnavailable``)."""
    if len(queries) <= 1:
        return [ranged(q, start=s, end=e, step_seconds=step_seconds, url=url) for q, s, e in queries]
    futures = [_executor().submit(ranged, q, start=s, end=e, step_seconds=step_seconds, url=url) for q, s, e in queries]
    return [f.result() for f in futures]


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=CONCURRENT_QUERIES, thread_name_prefix="prometheus")
        return _pool
