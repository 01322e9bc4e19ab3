"""/api/v1/finance/reconciliation and /api/v1/finance/pushes (finance staff): the month's reconciliation, the pushes
that need a person with Stripe's message, and retrying a failed one (audited, idempotent)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from billing.domain.metering import HOUR_MS, from_ms, to_ms
from billing.models import PushState, Sku, SkuPrice, UsageRollup
from core.models import AuditEvent
from tenancy.domain.roles import STAFF_PERMISSIONS, StaffRole
from tenancy.models import Tenant
from tests.support import assert_problem
from tests.support.billing import load_fleet, sku

RECONCILIATION = "/api/v1/finance/reconciliation"
PUSHES = "/api/v1/finance/pushes"


def rollup(tenant: Tenant, item: Sku, *, hours_ago: int, state: str, error: str = "", **extra: Any) -> UsageRollup:
    """An outbox row as the pusher leaves it (setup data)."""
    window = to_ms(timezone.now()) // HOUR_MS * HOUR_MS - hours_ago * HOUR_MS
    return UsageRollup.objects.create(
        tenant=tenant,
        sku=item,
        price=SkuPrice.objects.filter(sku=item).first(),
        window_ms=window,
        batch=1,
        quantity_milli=1_800_000,
        amount=Decimal("1.25"),
        currency="usd",
        meter_value=1800,
        push_state=state,
        push_error=error,
        **extra,
    )


@pytest.fixture
def rows(db: None, acme: Tenant, globex: Tenant) -> dict[str, UsageRollup]:
    load_fleet()
    item = sku()
    SkuPrice.objects.create(
        sku=item, unit_price_per_hour=Decimal("2.50"), effective_from=timezone.now() - timedelta(days=90)
    )
    return {
        "failed": rollup(acme, item, hours_ago=3, state=PushState.FAILED, error="No such customer: 'cus_gone'"),
        "other": rollup(globex, item, hours_ago=3, state=PushState.FAILED, error="Invalid payload"),
        "stale": rollup(acme, item, hours_ago=36 * 24, state=PushState.STALE, error="Older than Stripe accepts"),
        "sent": rollup(acme, item, hours_ago=5, state=PushState.SENT),
        "unknown": rollup(
            acme,
            item,
            hours_ago=6,
            state=PushState.FAILED,
            error="unknown outcome",
            uncertain_since=timezone.now() - timedelta(days=2),
        ),
    }


def test_the_finance_group_may_retry_pushes_and_read_invoices(finance):
    group = Group.objects.get(name=StaffRole.FINANCE)
    held = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")}
    assert held == set(STAFF_PERMISSIONS[StaffRole.FINANCE])
    assert finance.has_perm("billing.change_usagerollup")
    assert finance.has_perm("billing.view_invoice")
    assert not finance.has_perm("tenancy.change_tenant")  # never tenant data


@pytest.mark.parametrize(
    ("method", "path"),
    [("get", RECONCILIATION + "?month=2026-01"), ("get", PUSHES), ("post", PUSHES + "/{id}/retry")],
)
@pytest.mark.parametrize("who", ["alice", "charlie", "operator", "compliance"])
def test_only_finance_staff_reach_it(api, rows, request, method, path, who):
    response = getattr(api(request.getfixturevalue(who)), method)(path.format(id=rows["failed"].pk))
    assert_problem(response, 403, "permission_denied")
    assert UsageRollup.objects.get(pk=rows["failed"].pk).push_state == PushState.FAILED


def test_failed_pushes_list_with_stripes_message(api, finance, rows):
    response = api(finance).get(PUSHES, {"state": "failed"})
    assert response.status_code == 200, response.content
    listed = {r["id"]: r for r in response.json()["results"]}
    assert set(listed) == {rows["failed"].pk, rows["other"].pk, rows["unknown"].pk}
    failed = listed[rows["failed"].pk]
    assert failed["tenant"] == "acme"
    assert failed["sku"] == rows["failed"].sku.code
    assert failed["stripe_message"] == "No such customer: 'cus_gone'"
    assert failed["identifier"] == rows["failed"].identifier
    assert failed["retry_refused"] is None
    assert "unknown outcome" in listed[rows["unknown"].pk]["retry_refused"]

    both = api(finance).get(PUSHES).json()["results"]
    assert {r["push_state"] for r in both} == {"failed", "stale"}
    assert_problem(api(finance).get(PUSHES, {"state": "sent"}), 422, "validation_error")


def test_a_retry_puts_a_failed_push_back_once_audited(api, finance, rows):
    row = rows["failed"]
    first = api(finance).post(f"{PUSHES}/{row.pk}/retry")
    assert first.status_code == 200, first.content
    assert first.json()["push_state"] == "pending"
    again = api(finance).post(f"{PUSHES}/{row.pk}/retry")
    assert (again.status_code, again.json()["push_state"]) == (200, "pending")
    events = AuditEvent.objects.filter(action="billing.push_retried")
    assert [(e.target_id, e.tenant_id) for e in events] == [(str(row.pk), row.tenant_id)]
    row.refresh_from_db()
    assert (row.push_state, row.push_attempts) == (PushState.PENDING, 0)
    assert row.next_attempt_at <= timezone.now()


@pytest.mark.parametrize("which", ["stale", "unknown"])
def test_what_cannot_be_retried_is_refused_and_left_alone(api, finance, rows, which):
    row = rows[which]
    response = api(finance).post(f"{PUSHES}/{row.pk}/retry")
    body = assert_problem(response, 409, "push_not_retryable")
    assert "by hand" in body["detail"] or "event summaries" in body["detail"]
    assert UsageRollup.objects.get(pk=row.pk).push_state == row.push_state
    assert not AuditEvent.objects.filter(action="billing.push_retried").exists()


def test_retry_refuses_a_body_and_an_unknown_id(api, finance, rows):
    assert_problem(api(finance).post(f"{PUSHES}/999999/retry"), 404, "not_found")
    response = api(finance).post(f"{PUSHES}/{rows['failed'].pk}/retry", {"force": True}, format="json")
    assert_problem(response, 422, "validation_error")
    assert UsageRollup.objects.get(pk=rows["failed"].pk).push_state == PushState.FAILED


def test_the_reconciliation_of_a_month_in_ledger_only_mode(api, finance, rows, settings):
    settings.STRIPE_API_KEY = ""
    month = from_ms(rows["failed"].window_ms).strftime("%Y-%m")  # the failed push's month, whatever the clock
    response = api(finance).get(RECONCILIATION, {"month": month})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["mode"] == "ledger_only"
    assert body["month"] == month
    assert any("outbox only" in note for note in body["notes"])
    causes = {(d["tenant"], d["cause"]) for d in body["differences"]}
    assert ("acme", "failed_push") in causes
    assert body["clean"] is True  # failed pushes are explained: they need a person, they are not a mystery

    only = api(finance).get(RECONCILIATION, {"month": month, "tenant": "globex"}).json()
    assert {d["tenant"] for d in only["differences"]} == {"globex"}
    assert any("Invalid payload" in d["detail"] for d in only["differences"])


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({}, 422, "validation_error"),
        ({"month": "2026-13"}, 422, "month_invalid"),
        ({"month": "yesterday"}, 422, "month_invalid"),
        ({"month": "2999-01"}, 422, "month_in_future"),
        ({"month": "2026-01", "tenant": "nobody"}, 404, "not_found"),
    ],
)
def test_bad_input_gets_a_clear_problem(api, finance, db, params, status, code):
    assert_problem(api(finance).get(RECONCILIATION, params), status, code)


# --- runs ---------------------------------------------------------------------------------------------------

RUNS = "/api/v1/finance/reconciliation-runs"


def test_a_run_is_computed_by_its_task_and_read_back(api, finance, rows, settings, django_capture_on_commit_callbacks):
    settings.STRIPE_API_KEY = ""  # ledger-only: the run compares the ledger with the outbox
    month = from_ms(rows["failed"].window_ms).strftime("%Y-%m")  # the failed push's month, whatever the clock
    with django_capture_on_commit_callbacks(execute=True):
        started = api(finance).post(RUNS, {"month": month, "tenant": "acme"}, format="json")
    assert started.status_code == 202, started.content
    run = started.json()
    assert (run["month"], run["tenant"], run["requested_by"]) == (month, "acme", "finance")
    assert AuditEvent.objects.filter(action="billing.reconciliation_started", target_id=str(run["id"])).exists()

    detail = api(finance).get(f"{RUNS}/{run['id']}").json()
    assert (detail["state"], detail["mode"], detail["is_clean"], detail["unexplained"]) == (
        "done",
        "ledger_only",
        True,
        0,
    )
    assert {d["cause"] for d in detail["result"]["differences"]} >= {"failed_push"}
    assert {d["tenant"] for d in detail["result"]["differences"]} == {"acme"}
    listed = api(finance).get(RUNS).json()["results"]
    assert [r["id"] for r in listed] == [run["id"]]
    assert "result" not in listed[0]


def test_a_run_of_the_same_month_still_running_is_answered_not_doubled(api, finance, db):
    first = api(finance).post(RUNS, {"month": "2026-01"}, format="json")  # its task waits for the commit
    assert first.status_code == 202, first.content
    again = api(finance).post(RUNS, {"month": "2026-01"}, format="json")
    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"month": "2026-13"}, 422, "month_invalid"),
        ({"month": "2999-01"}, 422, "month_in_future"),
        ({"month": "May"}, 422, "validation_error"),
        ({}, 422, "validation_error"),
        ({"month": "2026-01", "tenant": "nobody"}, 404, "not_found"),
    ],
)
def test_a_bad_run_is_refused(api, finance, db, body, status, code):
    assert_problem(api(finance).post(RUNS, body, format="json"), status, code)


@pytest.mark.parametrize("who", ["alice", "charlie", "operator", "compliance"])
def test_only_finance_staff_start_or_read_runs(api, request, db, who):
    client = api(request.getfixturevalue(who))
    assert_problem(client.post(RUNS, {"month": "2026-01"}, format="json"), 403, "permission_denied")
    assert_problem(client.get(RUNS), 403, "permission_denied")
    assert_problem(client.get(f"{RUNS}/1"), 403, "permission_denied")


def test_an_unknown_run_is_404(api, finance, db):
    assert_problem(api(finance).get(f"{RUNS}/424242"), 404, "not_found")
