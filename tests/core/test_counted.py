"""The counters the code moves where things happen (core/metrics.py), each through the real service or task:
Stripe pushes against the local Stripe server, reconcile errors against a Kubernetes API that stops answering,
audit verifications of a whole and a tampered chain, the retention sweep, a budget's hard stop; and the gauges the
scrape reads for the same state."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone
from prometheus_client import Counter

from billing.models import SkuPrice
from billing.services import stripe_push, stripe_sync
from billing.services.accounts import budget_set
from billing.services.ledger import windows_close
from compliance.tasks import audit_verify_scheduled, retention_sweep_scheduled
from core.metrics import (
    AUDIT_VERIFICATIONS,
    BUDGET_HARD_STOPS,
    RECONCILE_ERRORS,
    RETENTION_SWEPT,
    STRIPE_PUSHES,
)
from core.models import AuditEvent
from lifecycle.services.customers import allocation_request, budget_enforce
from provisioning.drivers.base import allocations_reconcile
from provisioning.drivers.kubernetes.client import ClusterUnavailable
from provisioning.models import Cluster
from provisioning.services.placing import AllocationSpec
from tests.api.test_metrics import value
from tests.billing.test_stripe import hour_start, use
from tests.fakes.kubernetes import K8sServer
from tests.support import SYSTEM
from tests.support.audit_tamper import tamper_update
from tests.support.billing import at, load_fleet, place, price, run
from tests.support.data import asset


def count(counter: Counter, *labels: str) -> float:
    return float(counter.labels(*labels)._value.get())


def test_pushes_are_counted_by_outcome(stripe_server: Any, acme: Any) -> None:
    load_fleet()
    price("2.50", since=timezone.now() - timedelta(days=60))
    stripe_sync.stripe_sync_catalog()
    assert SkuPrice.objects.exclude(stripe_meter_id="").exists()
    sent = count(STRIPE_PUSHES, "sent")
    use(acme, hour_start(4) + timedelta(minutes=40), timedelta(minutes=90), gpus=1)
    rollups = windows_close(now=timezone.now()).rollups
    assert rollups >= 2
    report = stripe_push.billing_push()
    assert report.sent == rollups
    assert count(STRIPE_PUSHES, "sent") == sent + rollups
    assert stripe_push.billing_push().sent == 0  # nothing left: nothing more counted
    assert count(STRIPE_PUSHES, "sent") == sent + rollups


def test_reconcile_errors_are_counted_per_cluster(
    k8s_fleet: K8sServer, acme: Any, client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):  # applied to the cluster: provisioning, watched
        allocation = allocation_request(
            tenant=acme,
            name="work",
            spec=AllocationSpec(rung="container", gpu_models=("H100-SXM-80GB",), gpus=1),
            actor=SYSTEM,
        )
    name = Cluster.objects.get(hall=allocation.hall_id).name
    before = count(RECONCILE_ERRORS, name, "node_health"), count(RECONCILE_ERRORS, name, "status")
    allocations_reconcile()  # a cluster that answers: nothing counted
    assert (count(RECONCILE_ERRORS, name, "node_health"), count(RECONCILE_ERRORS, name, "status")) == before
    k8s_fleet.down = True
    with pytest.raises(ClusterUnavailable):
        allocations_reconcile()
    assert count(RECONCILE_ERRORS, name, "node_health") == before[0] + 1
    assert count(RECONCILE_ERRORS, name, "status") == before[1] + 1
    text = client.get("/metrics").content.decode()
    assert value(text, "ladder_reconcile_errors_total", cluster=name, stage="status") == before[1] + 1
    assert value(text, "ladder_cluster_reconcile_age_seconds", cluster=name) >= 0


def test_audit_verifications_are_counted_by_result(acme: Any) -> None:
    ok, broken = count(AUDIT_VERIFICATIONS, "ok"), count(AUDIT_VERIFICATIONS, "broken")
    assert audit_verify_scheduled() is True
    assert count(AUDIT_VERIFICATIONS, "ok") == ok + 1
    first = AuditEvent.objects.order_by("seq").first()
    assert first is not None
    tamper_update(first.seq, action="tenant.renamed")
    assert audit_verify_scheduled() is False
    assert count(AUDIT_VERIFICATIONS, "broken") == broken + 1


def test_the_retention_sweep_counts_what_it_did_and_the_scrape_what_remains(acme: Any, client: Any) -> None:
    load_fleet()
    old = timezone.now() - timedelta(days=400)
    asset(acme, category="job_log", at=old, name="old-log")  # kept 90 days by default: due for shredding
    asset(acme, category="job_log", at=timezone.now() - timedelta(days=1), name="new-log")
    scheduled = count(RETENTION_SWEPT, "scheduled")
    report = retention_sweep_scheduled()
    assert report["scheduled"] == {"job_log": 1}
    assert count(RETENTION_SWEPT, "scheduled") == scheduled + 1
    text = client.get("/metrics").content.decode()
    assert value(text, "ladder_retention_remaining_items", stage="waiting") == 1
    assert value(text, "ladder_retention_remaining_items", stage="due") == 0  # its waiting period has begun


def test_a_budget_hard_stop_is_counted_and_the_tenant_shows_stopped(acme: Any, client: Any, time_machine: Any) -> None:
    load_fleet()
    price("1.00")
    price("1.00", rung="job")
    run(place(acme, gpus=1), at(0))
    run(place(acme, rung="job", gpus=1), at(0))
    budget_set(tenant=acme, monthly=Decimal("2.00"), hard_stop=True, actor=SYSTEM)
    stopped, noticed = count(BUDGET_HARD_STOPS, "stopped"), count(BUDGET_HARD_STOPS, "jobs_noticed")
    assert budget_enforce(tenant=acme, now=at(61)) == [50, 80, 100]
    assert count(BUDGET_HARD_STOPS, "stopped") == stopped + 1
    assert count(BUDGET_HARD_STOPS, "jobs_noticed") == noticed + 1
    time_machine.move_to(at(62))  # the scrape reads the month it is in
    assert value(client.get("/metrics").content.decode(), "ladder_budget_hard_stopped_tenants") == 1
