"""``/webhooks/stripe`` over real HTTP (the Django test client), signed as Stripe signs: signature checks, once-only
processing, the invoice mirror and its tenant scoping, subscription status, and payment standing (suspension after
a failed payment's grace, reinstatement when paid); and ``/api/v1/invoices`` in both modes."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import stripe
from django.utils import timezone

from billing.models import BillingAccount, Invoice, StripeEvent
from billing.selectors import month_of
from billing.services.accounts import tenants_suspend_overdue
from billing.services.stripe_sync import STRIPE_API_VERSION
from core.models import AuditEvent
from tenancy.models import Tenant, TenantState
from tests.fakes.stripe import event, signed_webhook
from tests.support import assert_problem
from tests.support.billing import H100, load_fleet, place, price, run, stop

URL = "/webhooks/stripe"
SECRET = "whsec_test"
CUSTOMER, SUBSCRIPTION = "cus_acme_test", "sub_acme_test"


def deliver(client: Any, payload: dict[str, Any], *, secret: str = SECRET, timestamp: int | None = None) -> Any:
    body, header = signed_webhook(payload, secret, timestamp)
    return client.post(URL, data=body, content_type="application/json", HTTP_STRIPE_SIGNATURE=header)


def accepted(client: Any, payload: dict[str, Any]) -> dict[str, Any]:
    response = deliver(client, payload)
    assert response.status_code == 200, response.content
    return response.json()


def invoice(status: str, *, id: str = "in_acme_1", customer: str = CUSTOMER, paid: int = 0) -> dict[str, Any]:
    """A Stripe invoice object (the fields the mirror reads), for this month, 750.07 USD."""
    start, end = (int(moment.timestamp()) for moment in month_of(timezone.now()))
    line = {
        "id": "il_1",
        "object": "line_item",
        "description": "18001 x GPU time (at 4.1666 / unit)",
        "quantity": 18_001,
        "amount": 75_007,
        "currency": "usd",
        "period": {"start": start, "end": end},
    }
    return {
        "id": id,
        "object": "invoice",
        "customer": customer,
        "status": status,
        "currency": "usd",
        "period_start": start,
        "period_end": end,
        "subtotal": 75_007,
        "total": 75_007,
        "amount_due": 75_007,
        "amount_paid": paid,
        "hosted_invoice_url": f"https://invoice.stripe.test/{id}",
        "created": start + 60,
        "lines": {"object": "list", "data": [line], "has_more": False},
    }


@pytest.fixture
def customer(acme: Tenant, stripe_server: Any) -> BillingAccount:
    """Acme's billing account, linked to a Stripe customer and subscription (as the pusher or signup leaves it)."""
    BillingAccount.objects.filter(tenant=acme).update(
        stripe_customer_id=CUSTOMER, stripe_subscription_id=SUBSCRIPTION, subscription_status="active"
    )
    return BillingAccount.objects.get(tenant=acme)


def audited(tenant: Tenant, action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(tenant=tenant, action=action, target_id=str(tenant.pk)))


def ask_for_gpus(api: Any, user: Any) -> Any:
    body = {"name": "work", "rung": "container", "gpu_model": H100, "gpus": 1}
    return api(user).post("/api/v1/allocations", body, format="json")


# --- the door ------------------------------------------------------------------------------------------------------


def test_it_refuses_a_bad_signature(client, customer):
    payload = event("invoice.finalized", invoice("open"))
    assert_problem(deliver(client, payload, secret="whsec_someone_else"), 400, "invalid_signature")

    body, header = signed_webhook(payload, SECRET)
    tampered = body.replace(b'"amount_due": 75007', b'"amount_due": 1')
    assert tampered != body
    response = client.post(URL, data=tampered, content_type="application/json", HTTP_STRIPE_SIGNATURE=header)
    assert_problem(response, 400, "invalid_signature")

    response = client.post(URL, data=body, content_type="application/json")  # no header at all
    assert_problem(response, 400, "invalid_signature")
    assert not StripeEvent.objects.exists()
    assert not Invoice.objects.exists()


def test_it_refuses_a_signature_older_than_five_minutes(client, customer):
    old = deliver(client, event("invoice.finalized", invoice("open")), timestamp=int(time.time()) - 301)
    assert_problem(old, 400, "invalid_signature")
    assert not Invoice.objects.exists()
    recent = deliver(client, event("invoice.finalized", invoice("open")), timestamp=int(time.time()) - 240)
    assert recent.status_code == 200  # within the 300 s tolerance
    assert Invoice.objects.count() == 1


def test_it_refuses_webhooks_when_no_secret_is_set(client, customer, settings):
    settings.STRIPE_WEBHOOK_SECRET = ""
    assert_problem(deliver(client, event("invoice.finalized", invoice("open"))), 503, "webhooks_disabled")
    assert not StripeEvent.objects.exists()


def test_an_event_of_another_api_version_is_refused_logged_and_not_processed(client, customer, caplog):
    assert stripe.api_version == STRIPE_API_VERSION  # the version of the pinned library, sent on every request
    payload = {**event("invoice.finalized", invoice("open")), "api_version": "2024-06-20"}
    with caplog.at_level(logging.WARNING, logger="billing.services.webhooks"):
        refused = deliver(client, payload)
    body = assert_problem(refused, 400, "stripe_api_version")
    assert "2024-06-20" in body["detail"]
    assert STRIPE_API_VERSION in body["detail"]
    assert not StripeEvent.objects.exists()
    assert not Invoice.objects.exists()
    assert any(payload["id"] in r.getMessage() and "2024-06-20" in r.getMessage() for r in caplog.records)

    missing = event("invoice.finalized", invoice("open"))
    del missing["api_version"]
    assert_problem(deliver(client, missing), 400, "stripe_api_version")
    assert accepted(client, {**payload, "api_version": STRIPE_API_VERSION}) == {"received": True, "duplicate": False}
    assert Invoice.objects.count() == 1  # the same event, redelivered in Ladder's version, is applied


def test_the_same_event_twice_is_processed_once(client, customer):
    payload = event("customer.subscription.updated", {"id": SUBSCRIPTION, "customer": CUSTOMER, "status": "past_due"})
    assert accepted(client, payload) == {"received": True, "duplicate": False}
    assert BillingAccount.objects.get(pk=customer.pk).subscription_status == "past_due"
    BillingAccount.objects.filter(pk=customer.pk).update(subscription_status="active")  # moved on since

    assert accepted(client, payload) == {"received": True, "duplicate": True}
    assert BillingAccount.objects.get(pk=customer.pk).subscription_status == "active"  # not applied again
    assert list(StripeEvent.objects.values_list("id", "type")) == [(payload["id"], "customer.subscription.updated")]


# --- the invoice mirror --------------------------------------------------------------------------------------------


def test_invoices_are_mirrored_for_the_customers_tenant_only(client, customer, acme, alice, charlie, api):
    accepted(client, event("invoice.finalized", invoice("open")))
    mirrored = Invoice.objects.get()
    assert (mirrored.tenant_id, mirrored.status, mirrored.amount_due, mirrored.amount_paid) == (
        acme.pk,
        "open",
        75_007,
        0,
    )

    accepted(client, event("invoice.paid", invoice("paid", paid=75_007)))
    mirrored = Invoice.objects.get()
    start, end = month_of(timezone.now())
    assert mirrored.status == "paid"
    assert (mirrored.period_start, mirrored.period_end) == (start, end)
    assert (mirrored.subtotal, mirrored.total, mirrored.amount_due, mirrored.amount_paid) == (
        75_007,
        75_007,
        75_007,
        75_007,
    )
    assert mirrored.lines == [
        {
            "description": "18001 x GPU time (at 4.1666 / unit)",
            "quantity": 18_001,
            "amount": 75_007,
            "currency": "usd",
            "period_start": int(start.timestamp()),
            "period_end": int(end.timestamp()),
        }
    ]

    listed = api(alice).get("/api/v1/invoices")
    assert listed.status_code == 200, listed.content
    [row] = listed.json()["results"]
    assert (row["stripe_id"], row["status"], row["total"], row["amount_paid"]) == ("in_acme_1", "paid", 75_007, 75_007)
    assert row["hosted_invoice_url"] == "https://invoice.stripe.test/in_acme_1"
    assert len(row["lines"]) == 1

    other = api(charlie).get("/api/v1/invoices")  # globex's member: acme's invoice is not there
    assert other.status_code == 200
    assert other.json()["results"] == []


def test_an_invoice_for_an_unknown_customer_is_ignored(client, customer):
    response = deliver(client, event("invoice.finalized", invoice("open", customer="cus_nobody")))
    assert response.status_code == 200  # acknowledged, so Stripe stops retrying
    assert not Invoice.objects.exists()


def test_an_older_event_arriving_late_does_not_move_an_invoice_backwards(client, customer):
    now = int(time.time())
    finalized = event("invoice.finalized", invoice("open"), created=now - 60)
    paid = event("invoice.paid", invoice("paid", paid=75_007), created=now)
    accepted(client, paid)
    assert accepted(client, finalized)["duplicate"] is False
    mirrored = Invoice.objects.get()
    assert (mirrored.status, mirrored.amount_paid) == ("paid", 75_007)


def test_an_older_update_of_an_open_invoice_does_not_overwrite_a_newer_one(client, customer):
    now = int(time.time())
    part_paid = {**invoice("open", paid=70_000), "amount_due": 5_007}
    accepted(client, event("invoice.updated", part_paid, created=now))
    accepted(client, event("invoice.updated", invoice("open"), created=now - 60))  # delivered late
    assert Invoice.objects.get().amount_paid == 70_000


def test_subscription_events_set_the_accounts_status(client, customer):
    sub = {"id": SUBSCRIPTION, "object": "subscription", "customer": CUSTOMER}
    accepted(client, event("customer.subscription.updated", {**sub, "status": "past_due"}))
    assert BillingAccount.objects.get(pk=customer.pk).subscription_status == "past_due"
    accepted(client, event("customer.subscription.updated", {**sub, "id": "sub_other", "status": "unpaid"}))
    assert BillingAccount.objects.get(pk=customer.pk).subscription_status == "past_due"  # not our subscription
    accepted(client, event("customer.subscription.updated", {**sub, "status": "active"}))
    assert BillingAccount.objects.get(pk=customer.pk).subscription_status == "active"
    accepted(client, event("customer.subscription.deleted", {**sub, "status": "canceled"}))
    assert BillingAccount.objects.get(pk=customer.pk).subscription_status == "canceled"


# --- payment standing --------------------------------------------------------------------------------------------


def test_a_failed_payment_without_grace_suspends_at_once_and_payment_reinstates(
    client, customer, acme, alice, api, settings
):
    settings.LADDER_PAYMENT_GRACE_HOURS = 0
    load_fleet()
    accepted(client, event("invoice.payment_failed", invoice("open")))
    acme.refresh_from_db()
    assert acme.state == TenantState.SUSPENDED
    [suspended] = audited(acme, "tenant.suspended")
    assert suspended.data["why"] == "payment failed"
    assert BillingAccount.objects.get(pk=customer.pk).payment_failed_at is not None
    assert_problem(ask_for_gpus(api, alice), 402, "payment_required")

    accepted(client, event("invoice.paid", invoice("paid", paid=75_007)))
    acme.refresh_from_db()
    assert acme.state == TenantState.ACTIVE
    [reinstated] = audited(acme, "tenant.reinstated")
    assert reinstated.seq > suspended.seq
    assert BillingAccount.objects.get(pk=customer.pk).payment_failed_at is None
    assert ask_for_gpus(api, alice).status_code == 201


def test_a_failed_payment_suspends_only_after_the_grace(client, customer, acme, alice, api, settings):
    settings.LADDER_PAYMENT_GRACE_HOURS = 72
    load_fleet()
    failed_at = int(time.time())
    accepted(client, event("invoice.payment_failed", invoice("open"), created=failed_at))
    acme.refresh_from_db()
    assert acme.state == TenantState.ACTIVE
    assert BillingAccount.objects.get(pk=customer.pk).payment_failed_at == datetime.fromtimestamp(failed_at, UTC)
    assert not audited(acme, "tenant.suspended")
    allowed = ask_for_gpus(api, alice)
    assert allowed.status_code == 201, allowed.content

    moment = datetime.fromtimestamp(failed_at, UTC)
    assert tenants_suspend_overdue(now=moment + timedelta(hours=71)) == 0
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.ACTIVE
    assert tenants_suspend_overdue(now=moment + timedelta(hours=73)) == 1
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.SUSPENDED
    assert len(audited(acme, "tenant.suspended")) == 1
    assert_problem(ask_for_gpus(api, alice), 402, "payment_required")
    assert tenants_suspend_overdue(now=moment + timedelta(hours=74)) == 0  # once

    accepted(client, event("invoice.paid", invoice("paid", paid=75_007)))
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.ACTIVE
    assert len(audited(acme, "tenant.reinstated")) == 1
    assert ask_for_gpus(api, alice).status_code == 201


def test_a_late_payment_failed_for_a_paid_invoice_does_not_suspend(client, customer, acme, settings):
    settings.LADDER_PAYMENT_GRACE_HOURS = 0
    now = int(time.time())
    accepted(client, event("invoice.paid", invoice("paid", paid=75_007), created=now))
    accepted(client, event("invoice.payment_failed", invoice("open"), created=now - 60))  # delivered late
    assert Invoice.objects.get().status == "paid"
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.ACTIVE


# --- ledger-only mode ----------------------------------------------------------------------------------------------


def test_ledger_only_mode_lists_local_previews(acme, alice, api, settings):
    settings.STRIPE_API_KEY = ""
    load_fleet()
    price("2.50", since=timezone.now() - timedelta(days=90))
    hour = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
    stop(run(place(acme, gpus=2), hour), hour + timedelta(minutes=30))  # 1 GPU-hour at 2.50

    response = api(alice).get("/api/v1/invoices")
    assert response.status_code == 200, response.content
    previews = response.json()["results"]  # one per month from the first usage to now, newest first
    assert {(p["mode"], p["status"], p["currency"]) for p in previews} == {("ledger_only", "preview", "usd")}
    by_month = {datetime.fromisoformat(p["period_start"]): p for p in previews}
    assert list(by_month) == sorted(by_month, reverse=True)
    preview = by_month.pop(month_of(hour)[0])
    assert datetime.fromisoformat(preview["period_end"]) == month_of(hour)[1]
    [line] = preview["lines"]
    assert (Decimal(line["quantity"]), Decimal(line["amount"])) == (Decimal(1), Decimal("2.50"))
    assert Decimal(preview["total"]) == Decimal("2.50")
    assert all(Decimal(p["total"]) == 0 for p in by_month.values())  # a month begun since has nothing yet
    assert not Invoice.objects.exists()
