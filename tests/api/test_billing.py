"""The billing API: prices (public), usage, the upcoming invoice, ledger-only invoices, budget, notifications,
and offerings with their prices; every tenant endpoint is tenant-scoped."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from billing.domain.metering import to_ms, window_of
from billing.models import Unit
from billing.services.accounts import budget_set, notify, price_set
from tests.support import SYSTEM, assert_problem
from tests.support.billing import H100, load_fleet, place, price, run, sku, stop

pytestmark = pytest.mark.own_price_book  # the price list and offerings show exactly the prices set here


@pytest.fixture
def priced(db):
    """The small fleet with a price book in force since well before any usage a test makes (the API reads the
    clock, so the price book is set relative to it, not to the fixed times of ``tests.support.billing``)."""
    load_fleet()
    since = timezone.now() - timedelta(days=90)
    price("2.40", since=since)
    price("0.60", since=since, unit=Unit.MIG, mig_profile="3g.40gb")


@pytest.fixture
def recent(mid_month):
    """An hour boundary two hours ago, in this month: the tests make usage from then on and ask the API (which
    reads the clock) about this month."""
    return mid_month.replace(minute=0) - timedelta(hours=2)


def test_prices_are_public_and_show_the_next_change(client, priced):
    later = timezone.now() + timedelta(days=3)
    price_set(sku=sku(), unit_price_per_hour=Decimal("2.10"), effective_from=later, actor=SYSTEM)
    response = client.get("/api/v1/prices")
    assert response.status_code == 200
    rows = {row["sku"]: row for row in response.json()}
    whole = rows["container/H100-SXM-80GB/gpu/eu-west"]
    assert (whole["unit_price_per_hour"], whole["currency"], whole["unit"]) == ("2.400000", "usd", "gpu")
    assert whole["next_price"]["unit_price_per_hour"] == "2.100000"
    assert rows["container/H100-SXM-80GB/mig-3g.40gb/eu-west"]["mig_profile"] == "3g.40gb"


def test_offerings_show_the_price(client, priced):
    rows = client.get("/api/v1/offerings").json()
    container = next(r for r in rows if (r["rung"], r["gpu_model"], r["region"]) == ("container", H100, "eu-west"))
    assert container["prices"] == {"gpu": "2.400000", "mig:3g.40gb": "0.600000"}
    assert container["currency"] == "usd"
    unpriced = next(r for r in rows if r["rung"] == "vm")
    assert (unpriced["prices"], unpriced["currency"]) == ({}, None)


def test_a_price_cannot_be_backdated(priced):
    from core.errors import Invalid

    with pytest.raises(Invalid) as refused:
        price_set(
            sku=sku(),
            unit_price_per_hour=Decimal("1"),
            effective_from=timezone.now() - timedelta(hours=1),
            actor=SYSTEM,
        )
    assert refused.value.code == "price_in_past"


def test_usage_shows_closed_and_open_windows(recent, api, alice, acme, priced):
    start = recent
    stop(run(place(acme, gpus=2), start), start + timedelta(seconds=90))
    run(place(acme, gpus=1), start + timedelta(hours=1))  # still running
    body = api(alice).get("/api/v1/usage", {"from": start.isoformat(), "granularity": "hour"}).json()
    rows = body["rows"]
    assert body["granularity"] == "hour"
    assert rows[0] == {
        "sku": "container/H100-SXM-80GB/gpu/eu-west",
        "window_start": start.isoformat().replace("+00:00", "Z"),
        "unit": "GPU-hours",
        "quantity": "0.050000",
        "gpu_seconds": "180.000",
        "amount": "0.12",
        "currency": "usd",
    }
    assert len(rows) >= 2  # the open interval's windows so far
    open_seconds = sum(Decimal(r["gpu_seconds"]) for r in rows[1:])
    expected = (timezone.now() - (start + timedelta(hours=1))).total_seconds()
    assert abs(open_seconds - Decimal(expected)) <= 2
    daily = api(alice).get("/api/v1/usage", {"from": start.isoformat(), "granularity": "day"}).json()["rows"]
    hourly_total = sum((Decimal(r["gpu_seconds"]) for r in rows), Decimal(0))
    daily_total = sum((Decimal(r["gpu_seconds"]) for r in daily), Decimal(0))
    assert abs(daily_total - hourly_total) < 1  # open usage grew meanwhile


def test_usage_input_is_checked(api, alice, priced):
    client = api(alice)
    assert_problem(
        client.get("/api/v1/usage", {"from": "2026-11-02T00:00:00Z", "to": "2026-11-01T00:00:00Z"}),
        422,
        "validation_error",
    )
    assert_problem(client.get("/api/v1/usage", {"from": "yesterday"}), 422, "validation_error")
    assert_problem(client.get("/api/v1/usage", {"granularity": "minute"}), 422, "validation_error")
    assert_problem(
        client.get("/api/v1/usage", {"from": "2025-01-01T00:00:00Z", "to": "2025-06-01T00:00:00Z"}),
        422,
        "validation_error",
    )


def test_another_tenants_usage_is_never_shown(recent, api, acme, charlie, priced):
    start = recent
    stop(run(place(acme, gpus=1), start), start + timedelta(seconds=60))
    client = api(charlie)
    assert client.get("/api/v1/usage", {"from": start.isoformat()}).json()["rows"] == []
    assert client.get("/api/v1/invoices/upcoming").json()["lines"] == []
    assert client.get("/api/v1/invoices").json()["results"] == []


def test_the_upcoming_invoice_prices_usage_from_the_price_book(recent, api, alice, acme, priced):
    start = recent
    stop(run(place(acme, gpus=1), start), start + timedelta(minutes=30))
    stop(run(place(acme, mig_profile="3g.40gb"), start), start + timedelta(minutes=60))
    body = api(alice).get("/api/v1/invoices/upcoming").json()
    assert body["mode"] == "ledger_only"
    assert body["currency"] == "usd"
    assert body["lines"] == [
        {
            "sku": "container/H100-SXM-80GB/gpu/eu-west",
            "unit": "GPU-hours",
            "quantity": "0.500000",
            "unit_price": "2.400000",
            "unit_price_per_month": None,
            "amount": "1.20",
        },
        {
            "sku": "container/H100-SXM-80GB/mig-3g.40gb/eu-west",
            "unit": "MIG slice-hours",
            "quantity": "1.000000",
            "unit_price": "0.600000",
            "unit_price_per_month": None,
            "amount": "0.60",
        },
    ]
    assert body["total"] == "1.80"
    assert "stripe_preview" not in body or body["stripe_preview"] is None


def test_ledger_only_invoices_are_local_previews(recent, api, alice, acme, priced):
    start = recent
    stop(run(place(acme, gpus=1), start), start + timedelta(minutes=30))
    [invoice] = api(alice).get("/api/v1/invoices").json()["results"]
    assert (invoice["status"], invoice["mode"], invoice["total"]) == ("preview", "ledger_only", "1.20")


def test_budget_is_read_by_members_and_set_by_admins(api, alice, bob, acme, priced):
    assert api(bob).get("/api/v1/budget").json() == {
        "monthly": None,
        "hard_stop": False,
        "currency": "usd",
        "spend": "0.00",
        "alerts": [],
    }
    assert_problem(api(bob).put("/api/v1/budget", {"monthly": "100.00"}, format="json"), 403, "permission_denied")
    response = api(alice).put("/api/v1/budget", {"monthly": "100.00", "hard_stop": True}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["monthly"], response.json()["hard_stop"]) == ("100.00", True)
    assert_problem(api(alice).put("/api/v1/budget", {"monthly": "lots"}, format="json"), 422, "validation_error")
    assert_problem(api(alice).put("/api/v1/budget", {"monthly": "-5"}, format="json"), 422, "invalid_budget")
    assert_problem(api(alice).put("/api/v1/budget", {"monthly": "0"}, format="json"), 422, "invalid_budget")
    from core.models import AuditEvent

    assert AuditEvent.objects.filter(action="budget.set", tenant=acme).count() == 1


def test_budget_and_notifications_are_per_tenant(api, alice, charlie, acme, globex, priced):
    budget_set(tenant=acme, monthly=Decimal("5"), hard_stop=False, actor=SYSTEM)
    notify(tenant=acme, kind="budget", subject="acme only", body="...")
    assert api(charlie).get("/api/v1/budget").json()["monthly"] is None
    assert api(charlie).get("/api/v1/notifications").json()["results"] == []
    [note] = api(alice).get("/api/v1/notifications").json()["results"]
    assert note["subject"] == "acme only"


def test_billing_endpoints_need_a_tenant_member(api, finance, client):
    assert_problem(client.get("/api/v1/usage"), 401, "not_authenticated")
    assert_problem(api(finance).get("/api/v1/usage"), 403, "tenant_required")


def test_window_arithmetic_used_by_the_api(priced):
    now = timezone.now()
    assert window_of(to_ms(now)) <= to_ms(now)
