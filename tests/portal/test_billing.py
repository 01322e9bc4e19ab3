"""The billing page: owners and admins set or lift the monthly budget with its hard stop (through the service the
API's ``PUT /budget`` uses), everyone reads this month's alerts and the notices, and past invoices: Stripe's with
its hosted link where Stripe is configured, the local monthly previews otherwise."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.test import Client, override_settings
from django.utils import timezone

from billing.models import BillingAccount, Invoice, Notification
from core.models import AuditEvent
from tests.support.billing import load_fleet, place, price, run, stop


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_owner_sets_and_lifts_the_budget(alice: Any, acme: Any) -> None:
    client = signed_in(alice)
    assert client.get("/portal/billing").status_code == 200
    set_ = client.post("/portal/billing", {"monthly": "250.00", "hard_stop": "on"}, follow=True)
    assert b"The budget is set" in set_.content
    account = BillingAccount.objects.get(tenant=acme)
    assert (account.budget_monthly, account.budget_hard_stop) == (Decimal("250.00"), True)
    assert b"of 250.00 (hard stop)" in set_.content
    zero = client.post("/portal/billing", {"monthly": "0", "hard_stop": "on"})
    assert zero.status_code == 422
    assert b"A budget must be more than zero" in zero.content
    lifted = client.post("/portal/billing", {"monthly": ""}, follow=True)
    assert b"The budget is lifted" in lifted.content
    account.refresh_from_db()
    assert (account.budget_monthly, account.budget_hard_stop) == (None, False)
    assert AuditEvent.objects.filter(tenant=acme, action="budget.set").count() == 2


def test_members_read_billing_but_only_owners_and_admins_set_the_budget(alice: Any, bob: Any, acme: Any) -> None:
    member = signed_in(bob)
    page = member.get("/portal/billing")
    assert page.status_code == 200
    assert b"Save the budget" not in page.content
    assert member.post("/portal/billing", {"monthly": "10"}).status_code == 403
    assert BillingAccount.objects.get(tenant=acme).budget_monthly is None


def test_alerts_and_notices_are_the_tenants_own(alice: Any, acme: Any, globex: Any) -> None:
    Notification.objects.create(tenant=acme, kind="budget_alert", subject="Ladder: 80% of budget", body="Acme's.")
    Notification.objects.create(tenant=globex, kind="budget_alert", subject="Globex alert", body="Globex's.")
    page = signed_in(alice).get("/portal/billing")
    assert b"Ladder: 80% of budget" in page.content
    assert b"Globex" not in page.content


@override_settings(STRIPE_API_KEY="")
def test_without_stripe_past_invoices_are_the_monthly_previews(alice: Any, acme: Any) -> None:
    load_fleet()
    price("2.50", since=timezone.now() - timedelta(days=90))
    hour = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
    stop(run(place(acme, gpus=2), hour), hour + timedelta(minutes=30))  # 1 GPU-hour at 2.50
    page = signed_in(alice).get("/portal/billing")
    assert b"previews priced from the price book" in page.content
    assert f'data-invoice="{hour:%Y-%m}"'.encode() in page.content
    assert b"2.50 USD" in page.content


@override_settings(STRIPE_API_KEY="sk_test_portal")
def test_with_stripe_past_invoices_link_to_stripes_hosted_page(alice: Any, acme: Any, globex: Any) -> None:
    start = timezone.now().replace(day=1, hour=0, minute=0, second=0, microsecond=0) - timedelta(days=20)
    common = {"status": "paid", "currency": "usd", "period_start": start, "subtotal": 12345, "total": 12345}
    Invoice.objects.create(
        tenant=acme, stripe_id="in_acme", hosted_invoice_url="https://invoice.stripe.com/i/acme", **common
    )
    Invoice.objects.create(
        tenant=globex, stripe_id="in_glx", hosted_invoice_url="https://invoice.stripe.com/i/glx", **common
    )
    page = signed_in(alice).get("/portal/billing")
    assert b'href="https://invoice.stripe.com/i/acme"' in page.content
    assert b"123.45 USD" in page.content
    assert b"invoice.stripe.com/i/glx" not in page.content
