"""/metrics: Prometheus' text format through the real view, its access rule, the state it reads at scrape time
(cheaply, never writing), the counters the code moves, and the dashboard's and alert rules' metric names."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any

import pytest
import redis
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from api.metrics import PRIORITY_SEPARATOR, queue_names
from billing.models import PushState, UsageRollup
from compliance.services.audit import audit_checkpoint_take
from core.metrics import PLACEMENT_DECISIONS
from lifecycle.services.customers import allocation_request
from provisioning.services.placing import AllocationSpec, PlacementRefused
from tests.support import ROOT, SYSTEM, assert_problem, redis_reachable, require
from tests.support.billing import load_fleet, sku

WRITES = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE|MERGE)\b", re.IGNORECASE)
OBSERVABILITY = ROOT / "deploy" / "observability"
REDIS_URL = "redis://127.0.0.1:6379/12"  # this part's own database number


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape: (name, sorted labels) → value."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, tuple(sorted(labels.items()))), 0.0)


def exposed_names(text: str) -> set[str]:
    """The series names a scrape offers, from its families' types (a family with no sample yet counts too)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    return {
        family.name + suffix
        for family in text_string_to_metric_families(text)
        for suffix in suffixes.get(family.type, ("",))
    }


def test_metrics_are_prometheus_text_and_count_requests(client: Any, db: None) -> None:
    client.get("/healthz")
    first = client.get("/metrics")
    assert first.status_code == 200
    assert first["Content-Type"].startswith("text/plain; version=0.0.4")
    before = value(
        first.content.decode(), "ladder_http_requests_total", route="healthz", method="GET", status_class="2xx"
    )
    assert before >= 1
    client.get("/healthz")
    client.get("/api/v1/nothing-here")
    text = client.get("/metrics").content.decode()
    assert value(text, "ladder_http_requests_total", route="healthz", method="GET", status_class="2xx") == before + 1
    # The route is the URL pattern, never the raw path; an unknown API path falls to the catch-all pattern.
    assert "nothing-here" not in text
    assert value(text, "ladder_http_request_duration_seconds_count", route="healthz", method="GET", status_class="2xx")


def test_an_allocation_route_is_labelled_by_its_name_not_its_id(api: Any, alice: Any) -> None:
    response = api(alice).get("/api/v1/allocations/987654")
    assert response.status_code == 404
    text = api().get("/metrics").content.decode()
    assert value(text, "ladder_http_requests_total", route="allocation-detail", method="GET", status_class="4xx") >= 1
    # No label holds the id (a sample's value may hold those digits by chance: a duration's sum, say).
    assert [labels for _, labels in samples(text) if any("987654" in v for _, v in labels)] == []


def test_the_token_guards_the_page_when_set(client: Any, db: None, settings: Any) -> None:
    settings.LADDER_METRICS_TOKEN = "scrape-me-please"
    assert_problem(client.get("/metrics"), 404, "not_found")
    assert_problem(client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong-token"), 404, "not_found")
    assert_problem(client.get("/metrics", HTTP_AUTHORIZATION="Basic scrape-me-please"), 404, "not_found")
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-me-please")
    assert response.status_code == 200
    assert b"ladder_http_requests_total" in response.content


def test_the_scrape_reads_state_cheaply_and_never_writes(
    client: Any, acme: Any, django_assert_max_num_queries: Any
) -> None:
    load_fleet()
    allocation_request(
        tenant=acme,
        name="a",
        spec=AllocationSpec(rung="container", gpu_models=("H100-SXM-80GB",), gpus=1),
        actor=SYSTEM,
    )
    with django_assert_max_num_queries(10), CaptureQueriesContext(connection) as queries:
        text = client.get("/metrics").content.decode()
    assert [q["sql"] for q in queries.captured_queries if WRITES.match(q["sql"])] == []
    live = sum(v for (name, _), v in samples(text).items() if name == "ladder_allocations")
    assert live == 1
    assert value(text, "ladder_state_up") == 1


def test_the_devices_held_now_are_served_as_the_exporter_names_them_for_the_rollups(
    client: Any, acme: Any, globex: Any
) -> None:
    load_fleet()
    whole = allocation_request(
        tenant=acme, name="w", spec=AllocationSpec(rung="job", gpu_models=("H100-SXM-80GB",), gpus=2), actor=SYSTEM
    )
    slice_ = allocation_request(
        tenant=globex,
        name="s",
        spec=AllocationSpec(rung="container", gpu_models=("H100-SXM-80GB",), mig_profile="3g.40gb"),
        actor=SYSTEM,
    )
    released = allocation_request(
        tenant=acme, name="r", spec=AllocationSpec(rung="job", gpu_models=("H100-SXM-80GB",), gpus=1), actor=SYSTEM
    )
    released.devices.update(active=False, released_at=timezone.now())
    text = client.get("/metrics").content.decode()
    info = {labels for (name, labels), v in samples(text).items() if name == "ladder_allocation_device_info" and v == 1}
    mig = slice_.devices.get()
    expected = {
        (("GPU_I_ID", ""), ("UUID", d.gpu_uuid), ("allocation", str(whole.pk))) for d in whole.devices.all()
    } | {(("GPU_I_ID", str(1 + (mig.mig_start or 0) // 4)), ("UUID", mig.gpu_uuid), ("allocation", str(slice_.pk)))}
    assert info == expected  # no tenant named, the released device gone


def test_the_rollup_rules_are_valid_and_read_every_metric_the_api_serves() -> None:
    from provisioning.telemetry import METRICS

    rules = yaml.safe_load((OBSERVABILITY / "gpu-rollups.rules.yml").read_text())
    recorded = {rule["record"]: rule["expr"] for group in rules["groups"] for rule in group["rules"]}
    assert sorted(recorded) == sorted(m.rollup for m in METRICS)
    for expr in recorded.values():
        assert "on (UUID, GPU_I_ID) group_right" in expr
        assert "ladder_allocation_device_info" in expr


def test_the_outbox_backlog_and_its_oldest_row(client: Any, acme: Any, settings: Any) -> None:
    settings.STRIPE_API_KEY = "sk_test_metrics"
    load_fleet()
    rolled = sku()
    now = timezone.now()
    for i, (state, age) in enumerate([(PushState.PENDING, 7200), (PushState.SENDING, 60), (PushState.SENT, 90000)]):
        UsageRollup.objects.create(
            tenant=acme,
            sku=rolled,
            window_ms=i,
            batch=0,
            quantity_milli=1000,
            amount=1,
            currency="usd",
            meter_value=3600,
            push_state=state,
            closed_at=now - timedelta(seconds=age),
        )
    text = client.get("/metrics").content.decode()
    assert value(text, "ladder_stripe_outbox_rows", state="pending") == 1
    assert value(text, "ladder_stripe_outbox_rows", state="sending") == 1
    assert 7200 <= value(text, "ladder_stripe_outbox_oldest_age_seconds") < 7200 + 120
    assert value(text, "ladder_stripe_enabled") == 1


def test_the_audit_checkpoint_lag(client: Any, acme: Any) -> None:
    text = client.get("/metrics").content.decode()
    assert value(text, "ladder_audit_uncovered_events") >= 1  # the signup's events, no checkpoint yet
    assert value(text, "ladder_audit_checkpoint_lag_seconds") >= 0
    audit_checkpoint_take()
    text = client.get("/metrics").content.decode()
    assert value(text, "ladder_audit_uncovered_events") == 0  # the checkpoint covers its own audit event too
    assert value(text, "ladder_audit_checkpoint_lag_seconds") == 0
    assert value(text, "ladder_audit_checkpoint_age_seconds") < 60


def test_placement_decisions_are_counted_by_outcome(acme: Any) -> None:
    load_fleet()
    spec = AllocationSpec(rung="container", gpu_models=("H100-SXM-80GB",), gpus=1)
    placed = PLACEMENT_DECISIONS.labels("container", "placed")._value.get()
    allocation_request(tenant=acme, name="a", spec=spec, actor=SYSTEM)
    assert PLACEMENT_DECISIONS.labels("container", "placed")._value.get() == placed + 1
    huge = AllocationSpec(rung="container", gpu_models=("H100-SXM-80GB",), gpus=4096)
    with pytest.raises(PlacementRefused) as refused:
        allocation_request(tenant=acme, name="b", spec=huge, actor=SYSTEM)
    assert PLACEMENT_DECISIONS.labels("container", refused.value.code)._value.get() >= 1


def test_a_database_that_does_not_answer_costs_the_state_only(client: Any, db: None) -> None:
    from unittest import mock

    from django.db import OperationalError

    with mock.patch("api.metrics.allocation_state_counts", side_effect=OperationalError("database down")):
        response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert value(text, "ladder_state_up") == 0
    assert "ladder_http_requests_total" in text


def test_queue_depths_from_the_redis_broker(client: Any, db: None, settings: Any) -> None:
    require(redis_reachable(REDIS_URL), f"Redis at {REDIS_URL}")
    settings.LADDER_TASKS_INLINE = False
    settings.CELERY_BROKER_URL = REDIS_URL
    settings.CELERY_TASK_DEFAULT_QUEUE = "ladder-metrics-test"
    assert queue_names() == ["ladder-metrics-test"]
    broker = redis.Redis.from_url(REDIS_URL)
    broker.delete("ladder-metrics-test", f"ladder-metrics-test{PRIORITY_SEPARATOR}3")
    try:
        broker.rpush("ladder-metrics-test", "a", "b")
        broker.rpush(f"ladder-metrics-test{PRIORITY_SEPARATOR}3", "c")
        text = client.get("/metrics").content.decode()
        assert value(text, "ladder_celery_queue_length", queue="ladder-metrics-test") == 3
        assert value(text, "ladder_celery_broker_up") == 1
    finally:
        broker.delete("ladder-metrics-test", f"ladder-metrics-test{PRIORITY_SEPARATOR}3")


def test_no_queue_depths_for_another_broker_or_inline_tasks(client: Any, db: None, settings: Any) -> None:
    settings.LADDER_TASKS_INLINE = False
    settings.CELERY_BROKER_URL = "amqp://guest:guest@127.0.0.1:5672//"
    assert "ladder_celery_queue_length" not in client.get("/metrics").content.decode()
    settings.LADDER_TASKS_INLINE = True
    settings.CELERY_BROKER_URL = REDIS_URL
    assert "ladder_celery_queue_length" not in client.get("/metrics").content.decode()


def test_metrics_and_request_id_over_http(live_server: Any, transactional_db: None) -> None:
    def call(path: str, headers: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
        request = urllib.request.Request(f"{live_server.url}{path}", headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()

    _, _, page = call("/metrics")
    before = value(page.decode(), "ladder_http_requests_total", route="readyz", method="GET", status_class="2xx")
    status, headers, _ = call("/readyz", {"X-Request-ID": "probe-42.a:b_c"})
    assert status == 200
    assert headers["X-Request-ID"] == "probe-42.a:b_c"  # a sane id is echoed
    status, headers, _ = call("/api/v1/tenant", {"X-Request-ID": "x" * 129})
    assert status == 401
    assert headers["Content-Type"] == "application/problem+json"
    assert re.fullmatch(r"[0-9a-f]{32}", headers["X-Request-ID"])  # too long: a new one, on the problem too
    status, headers, _ = call("/login")
    assert status == 200
    assert re.fullmatch(r"[0-9a-f]{32}", headers["X-Request-ID"])  # and on the portal's pages
    status, headers, _ = call("/healthz", {"X-Request-ID": "bad id\twith spaces"})
    assert headers["X-Request-ID"] != "bad id\twith spaces"
    _, _, page = call("/metrics")
    text = page.decode()
    assert value(text, "ladder_http_requests_total", route="readyz", method="GET", status_class="2xx") == before + 1
    assert value(text, "ladder_http_requests_total", route="portal:login", method="GET", status_class="2xx") >= 1


# --- the dashboard and the alert rules --------------------------------------------------------------------------

NAME = re.compile(r"\bladder_[a-z0-9_]+\b")


def _dashboard_exprs() -> list[str]:
    dashboard = json.loads((OBSERVABILITY / "grafana-dashboard.json").read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def _rules() -> list[dict[str, Any]]:
    document = yaml.safe_load((OBSERVABILITY / "alerts.yaml").read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def test_every_metric_the_dashboard_and_the_rules_read_is_exposed(client: Any, db: None, settings: Any) -> None:
    # The broker's gauges are exposed only with a Redis broker and tasks queued: scrape once that way too.
    text = client.get("/metrics").content.decode()
    if redis_reachable(REDIS_URL):
        settings.LADDER_TASKS_INLINE = False
        settings.CELERY_BROKER_URL = REDIS_URL
        text += client.get("/metrics").content.decode()
    else:
        require(False, f"Redis at {REDIS_URL}")
    exposed = exposed_names(text)
    used = {name for expr in _dashboard_exprs() + [r["expr"] for r in _rules()] for name in NAME.findall(expr)}
    assert used, "no metric read at all"
    assert used - exposed == set()


def test_the_rules_cover_the_operational_risks_and_carry_a_runbook() -> None:
    rules = _rules()
    names = {rule["alert"] for rule in rules}
    assert {
        "LadderStripeOutboxStale",
        "LadderAuditChainBroken",
        "LadderReconcileFailing",
        "LadderBudgetHardStop",
        "LadderHigh5xxRate",
        "LadderNotReady",
    } <= names
    operations = (ROOT / "docs" / "operations.md").read_text()
    for rule in rules:
        assert rule["annotations"]["summary"]
        runbook = rule["annotations"]["runbook"]
        assert runbook.startswith("docs/operations.md#")
        anchor = runbook.split("#", 1)[1]
        headings = {
            re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", operations, re.M)
        }
        assert anchor in headings, f"{rule['alert']}: no section {anchor} in docs/operations.md"
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}


def test_the_dashboard_is_grafana_json() -> None:
    dashboard = json.loads((OBSERVABILITY / "grafana-dashboard.json").read_text())
    assert dashboard["uid"] == "ladder-overview"
    assert dashboard["title"] == "Ladder"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    assert all(panel["targets"] for panel in dashboard["panels"])
