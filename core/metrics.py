"""The product's Prometheus metrics that code counts as it runs: requests, placement decisions, Stripe pushes,
reconcile errors, audit verifications, the retention sweep, budget hard stops.

Every metric is defined here, once, so a name never differs between the place that counts it and the dashboard
that reads it (``docs/operations.md``, "Metrics and logs", lists them). Labels are low-cardinality by rule: a route
pattern, never a raw path with ids; an outcome or state from a fixed set; a cluster name. Gauges that describe the
state of the database (allocation states, the Stripe outbox, the audit chain head's lag, queue depths) are not here:
``api.metrics`` computes them at scrape time.

With ``PROMETHEUS_MULTIPROC_DIR`` set (gunicorn with several workers, Celery's prefork pool), prometheus-client
writes each process's values to files in that directory and ``/metrics`` adds them up
(``prometheus_client.multiprocess``); without it, the values live in this process's default registry.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, multiprocess, start_http_server

from core.errors import ServiceError

# Latency buckets (seconds): an API request is a few milliseconds to a few seconds; the long tail is a stream.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
PLACEMENT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

HTTP_REQUESTS = Counter(
    "ladder_http_requests",
    "HTTP requests answered, by route pattern (the URL name, or 'unmatched'), method and status class.",
    ["route", "method", "status_class"],
)
HTTP_REQUEST_DURATION = Histogram(
    "ladder_http_request_duration_seconds",
    "Time from a request's arrival in Django to its response, by route pattern and status class.",
    ["route", "method", "status_class"],
    buckets=REQUEST_BUCKETS,
)
PLACEMENT_DECISIONS = Counter(
    "ladder_placement_decisions",
    "Placement decisions of new allocations, by rung and outcome: placed, or the refusal's code "
    "(no_capacity, residency, quota_exceeded, ...), or error.",
    ["rung", "outcome"],
)
PLACEMENT_DURATION = Histogram(
    "ladder_placement_duration_seconds",
    "Time a placement decision took (the placement section, the engine and the persisted claim), by outcome.",
    ["outcome"],
    buckets=PLACEMENT_BUCKETS,
)
STRIPE_PUSHES = Counter(
    "ladder_stripe_pushes",
    "Usage rollups the pusher sent to Stripe, by outcome: sent, already_sent, failed (Stripe refused: a person "
    "must look), stale (too old for Stripe), deferred (Stripe unavailable: retried with backoff).",
    ["outcome"],
)
RECONCILE_ERRORS = Counter(
    "ladder_reconcile_errors",
    "Errors while allocations were brought up to date with their cluster, by cluster and stage "
    "(status: an allocation's status; node_health: a cluster's node list).",
    ["cluster", "stage"],
)
AUDIT_VERIFICATIONS = Counter(
    "ladder_audit_verifications",
    "Verifications of the audit chain (scheduled or asked for), by result: ok or broken.",
    ["result"],
)
RETENTION_SWEPT = Counter(
    "ladder_retention_swept_items",
    "Data assets the retention sweep acted on, by action: scheduled (waiting period started), shredded, "
    "held (kept by a legal hold), suspended (a shredding a hold stopped), deferred (an expired volume that running "
    "work still mounts).",
    ["action"],
)
BUDGET_HARD_STOPS = Counter(
    "ladder_budget_hard_stops",
    "Work stopped by a tenant's budget hard stop, by effect: stopped (allocations stopped at once) or "
    "jobs_noticed (jobs told to stop at their next checkpoint).",
    ["effect"],
)


def status_class(status: int) -> str:
    """``200`` → ``2xx``: a status class keeps the label set small."""
    return f"{status // 100}xx"


@contextmanager
def placement_observed(rung: str) -> Iterator[None]:
    """Count and time one placement decision. A service error carries its code as the outcome (a refusal's
    first reason, ``no_capacity`` after a stale fleet); anything else is ``error`` and propagates unchanged."""
    start = time.perf_counter()
    outcome = "error"
    try:
        yield
        outcome = "placed"
    except ServiceError as error:
        outcome = error.code
        raise
    finally:
        PLACEMENT_DURATION.labels(outcome).observe(time.perf_counter() - start)
        PLACEMENT_DECISIONS.labels(rung, outcome).inc()


# --- serving -------------------------------------------------------------------------------------------------------


def multiprocess_dir() -> str | None:
    """``PROMETHEUS_MULTIPROC_DIR`` (prometheus-client reads it from the environment itself), when set."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def process_registry() -> CollectorRegistry:
    """What this process's code counted: every process's values added up from the multiprocess directory when
    there is one, else this process's own registry."""
    if multiprocess_dir() is None:
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def process_dead(pid: int) -> None:
    """A worker process ended (gunicorn's ``child_exit``, Celery's ``worker_process_shutdown``): its live gauges
    go; its counters stay summed in."""
    if multiprocess_dir() is not None:
        multiprocess.mark_process_dead(pid)


def worker_metrics_serve(port: int, addr: str = "0.0.0.0") -> None:  # noqa: S104 - scraped from inside the cluster
    """A Celery worker's own ``/metrics`` on ``port`` (``LADDER_WORKER_METRICS_PORT``), served from a thread of its
    main process; with the prefork pool, ``PROMETHEUS_MULTIPROC_DIR`` makes the pool's processes count there."""
    start_http_server(port, addr=addr, registry=process_registry())
