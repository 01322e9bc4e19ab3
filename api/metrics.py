"""``GET /metrics``: Prometheus' text format, for a scraper inside the deployment (a plain Django view, like the
health probes: no API key, no throttling).

Access: with ``LADDER_METRICS_TOKEN`` empty the page is open, and must be kept off the public ingress (the
figures name clusters and counts, no tenant); with it set, only ``Authorization: Bearer <token>`` is answered,
and any other request gets the same 404 ``not_found`` as an unknown path, so the page does not announce itself.

What is exposed:
- what the code counted (``core.metrics``), summed over every process of the server when
  ``PROMETHEUS_MULTIPROC_DIR`` is set (gunicorn's workers), this process's own otherwise;
- gauges computed now by ``StateCollector`` from the database through each app's selectors, a handful of
  aggregate or by-key reads and never a write: allocations by state, the Stripe outbox's backlog and the age of
  its oldest row, the audit chain's lag behind its signed checkpoints, the retention sweep's backlog, tenants
  stopped by their budget, clusters' last reconcile;
- ``DeviceCollector``: ``ladder_allocation_device_info``, one series per device held now (its allocation's id,
  the GPU's ``UUID`` and its MIG instance's ``GPU_I_ID``), for the GPU metrics' rollup rules to join the
  exporter's series on (docs/telemetry.md, "Rollups"): allocation ids and device ids, no tenant;
- ``QueueCollector``: the length of each Celery queue (Redis ``LLEN``, priority lists included) when the broker is
  Redis and tasks do not run inline; for another broker (RabbitMQ: read its own exporter) nothing is exposed.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterable, Iterator
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import redis
from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from api.problems import PROBLEM_CONTENT_TYPE, problem_body
from billing.selectors import budget_hard_stopped, outbox_backlog, stripe_enabled
from compliance.selectors import audit_checkpoint_lag, shredding_backlog
from core.metrics import process_registry
from provisioning.selectors import allocation_state_counts, clusters_reconciled
from provisioning.telemetry import held_device_series

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Kombu's Redis transport keeps a queue's messages of priority p > 0 in "<queue>\x06\x16<p>" (its default steps).
PRIORITY_SEPARATOR = "\x06\x16"
PRIORITY_STEPS = (0, 3, 6, 9)


def _age(now: datetime, then: datetime | None) -> float:
    return max(0.0, (now - then).total_seconds()) if then is not None else 0.0


class StateCollector(Collector):
    """The database's state at scrape time. A database that does not answer costs these gauges only (and sets
    ``ladder_state_up`` to 0): the counters are still served, the readiness failures among them."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("ladder_state_up", "1 when the scrape read the database's state, else 0.")
        try:
            families = list(self._read())
        except DatabaseError as error:
            log.warning("state not read for metrics: %s", error)
            families = []
        up.add_metric([], 1 if families else 0)
        yield from families
        yield up

    def _read(self) -> Iterator[Metric]:
        now = timezone.now()
        allocations = GaugeMetricFamily(
            "ladder_allocations", "Allocations in each live state, by state and rung.", labels=["state", "rung"]
        )
        for (state, rung), count in sorted(allocation_state_counts().items()):
            allocations.add_metric([state, rung], count)
        yield allocations

        backlog = outbox_backlog()
        rows = GaugeMetricFamily(
            "ladder_stripe_outbox_rows", "Usage rollups waiting for the Stripe pusher, by push state.", labels=["state"]
        )
        for state, count in sorted(backlog.rows.items()):
            rows.add_metric([state], count)
        yield rows
        yield GaugeMetricFamily(
            "ladder_stripe_outbox_oldest_age_seconds",
            "Seconds since the oldest rollup still waiting for the pusher closed (0: none waiting).",
            value=_age(now, backlog.oldest),
        )
        yield GaugeMetricFamily(
            "ladder_stripe_enabled",
            "1 when STRIPE_API_KEY is set and the pusher sends; 0 ledger-only (the outbox is then never emptied).",
            value=1 if stripe_enabled() else 0,
        )

        lag = audit_checkpoint_lag()
        yield GaugeMetricFamily(
            "ladder_audit_uncovered_events",
            "Audit events after the last signed checkpoint (the chain head's seq minus the checkpoint's).",
            value=lag.head_seq - lag.checkpoint_seq,
        )
        yield GaugeMetricFamily(
            "ladder_audit_checkpoint_lag_seconds",
            "Seconds since the oldest audit event no signed checkpoint covers yet was written (0: all covered).",
            value=_age(now, lag.first_uncovered_at),
        )
        yield GaugeMetricFamily(
            "ladder_audit_checkpoint_age_seconds",
            "Seconds since the last signed checkpoint (0: none yet).",
            value=_age(now, lag.checkpoint_at),
        )

        shredding = shredding_backlog(now=now)
        remaining = GaugeMetricFamily(
            "ladder_retention_remaining_items",
            "Data assets in their waiting period before shredding (waiting), and those already due that the "
            "retention sweep has yet to shred (due).",
            labels=["stage"],
        )
        for stage, count in sorted(shredding.items()):
            remaining.add_metric([stage], count)
        yield remaining

        yield GaugeMetricFamily(
            "ladder_budget_hard_stopped_tenants",
            "Tenants whose monthly budget with a hard stop is used up this month (new work refused, work stopped).",
            value=budget_hard_stopped(now=now),
        )

        reconciled = GaugeMetricFamily(
            "ladder_cluster_reconcile_age_seconds",
            "Seconds since reconciliation last went round each registered cluster (absent: never).",
            labels=["cluster"],
        )
        healthy = GaugeMetricFamily(
            "ladder_cluster_healthy",
            "1 when a registered cluster's last check found it healthy, else 0.",
            labels=["cluster", "health"],
        )
        for name, health, at in clusters_reconciled():
            if at is not None:
                reconciled.add_metric([name], _age(now, at))
            healthy.add_metric([name, health], 1 if health == "healthy" else 0)
        yield reconciled
        yield healthy


def queue_names() -> list[str]:
    """The queues tasks go to, as the settings name them: the default queue, those ``CELERY_TASK_QUEUES``
    declares and those ``CELERY_TASK_ROUTES`` routes to."""
    names = {settings.CELERY_TASK_DEFAULT_QUEUE}
    for queue in getattr(settings, "CELERY_TASK_QUEUES", None) or ():
        names.add(getattr(queue, "name", queue))
    routes = getattr(settings, "CELERY_TASK_ROUTES", None)
    if isinstance(routes, dict):
        names |= {r["queue"] for r in routes.values() if isinstance(r, dict) and r.get("queue")}
    return sorted(str(name) for name in names)


@cache
def _redis(url: str) -> redis.Redis:
    """One client per broker URL and process; short timeouts: a scrape must not hang on a broker."""
    return redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)


def redis_broker(url: str) -> bool:
    return urlsplit(url).scheme in ("redis", "rediss")


class QueueCollector(Collector):
    """Celery's queue depths, read from the Redis broker."""

    def collect(self) -> Iterator[Metric]:
        url = settings.CELERY_BROKER_URL
        if settings.LADDER_TASKS_INLINE or not redis_broker(url):
            return
        depth = GaugeMetricFamily(
            "ladder_celery_queue_length", "Messages waiting in each Celery queue (Redis broker).", labels=["queue"]
        )
        up = GaugeMetricFamily("ladder_celery_broker_up", "1 when the Redis broker answered the scrape, else 0.")
        try:
            client = _redis(url)
            with client.pipeline(transaction=False) as pipe:
                names = queue_names()
                for name in names:
                    for step in PRIORITY_STEPS:
                        pipe.llen(name if step == 0 else f"{name}{PRIORITY_SEPARATOR}{step}")
                lengths = pipe.execute()
        except redis.RedisError as error:
            log.warning("queue depths not read: %s", error)
            up.add_metric([], 0)
            yield up
            return
        for i, name in enumerate(names):
            depth.add_metric([name], sum(lengths[i * len(PRIORITY_STEPS) : (i + 1) * len(PRIORITY_STEPS)]))
        up.add_metric([], 1)
        yield depth
        yield up


class DeviceCollector(Collector):
    """Which allocation holds each device now, as the exporter names the device (``held_device_series``)."""

    def collect(self) -> Iterator[Metric]:
        try:
            held = held_device_series()
        except DatabaseError as error:
            log.warning("held devices not read: %s", error)
            return
        info = GaugeMetricFamily(
            "ladder_allocation_device_info",
            "A device an allocation holds now (1), as dcgm-exporter labels it: UUID, and GPU_I_ID for a MIG instance.",
            labels=["allocation", "UUID", "GPU_I_ID"],
        )
        for allocation, uuid, instance in held:
            info.add_metric([str(allocation), uuid, instance], 1)
        yield info


class _Registered(Collector):
    """Another registry's metrics, as one collector of the scrape's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterable[Metric]:
        return self.registry.collect()


def scrape() -> bytes:
    """The page: the code's counters, then the state read now."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Registered(process_registry()))
    registry.register(StateCollector())
    registry.register(DeviceCollector())
    registry.register(QueueCollector())
    return generate_latest(registry)


def _allowed(request: HttpRequest) -> bool:
    token = settings.LADDER_METRICS_TOKEN
    if not token:
        return True
    sent = request.headers.get("Authorization", "")
    scheme, _, credential = sent.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(credential.strip().encode(), token.encode())


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        body: dict[str, Any] = problem_body(404, "not_found", "Not found.")
        return HttpResponse(json.dumps(body), status=404, content_type=PROBLEM_CONTENT_TYPE)
    return HttpResponse(scrape(), content_type=CONTENT_TYPE)
