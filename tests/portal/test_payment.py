"""Adding a payment method from the portal: Stripe's own page (Checkout in setup mode, on the local Stripe server),
the completed session's webhook, the card becoming the customer's default for invoices; without Stripe, a plain
notice. Only owners and admins manage it."""

from __future__ import annotations

from typing import Any

from django.test import Client

from billing.models import BillingAccount
from billing.services.stripe_sync import stripe_account_sync
from core.models import AuditEvent
from tests.fakes.stripe import signed_webhook


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_owner_adds_a_card_on_stripes_page_and_invoices_are_charged_to_it(
    alice: Any, acme: Any, stripe_server: Any, django_capture_on_commit_callbacks: Any
) -> None:
    stripe_account_sync(tenant=acme)
    client = signed_in(alice)
    assert b'data-payment="none"' in client.get("/portal/payment").content
    sent = client.post("/portal/payment")
    assert sent.status_code == 302
    [session] = stripe_server.checkout_sessions.values()
    assert sent["Location"] == session["url"]
    assert session["success_url"] == "http://testserver/portal/payment?added=1"
    customer = BillingAccount.objects.get(tenant=acme).stripe_customer_id
    assert session["customer"] == customer

    body, header = signed_webhook(stripe_server.checkout_complete(session["id"]), "whsec_test")
    with django_capture_on_commit_callbacks(execute=True):
        delivered = Client().post(
            "/webhooks/stripe", data=body, content_type="application/json", HTTP_STRIPE_SIGNATURE=header
        )
    assert delivered.status_code == 200
    account = BillingAccount.objects.get(tenant=acme)
    assert account.payment_method_summary == "visa •••• 4242"
    assert stripe_server.customers[customer]["invoice_settings"]["default_payment_method"] == account.payment_method_id
    assert AuditEvent.objects.filter(action="billing.payment_method_set", tenant=acme).count() == 1
    assert "visa •••• 4242" in client.get("/portal/payment?added=1").content.decode()


def test_without_stripe_the_page_says_there_is_nothing_to_add(alice: Any, bob: Any) -> None:
    client = signed_in(alice)
    assert b"bills without Stripe" in client.get("/portal/payment").content
    refused = client.post("/portal/payment", follow=True)
    assert b"bills without Stripe" in refused.content
    assert signed_in(bob).get("/portal/payment").status_code == 403  # members do not manage billing
