"""What Stripe's webhooks change: the invoice mirror, the subscription's status, the payment standing, and the
payment method a completed setup session collected.

Each event id is processed once (``StripeEvent``); the insert and the changes commit together, so a crash
mid-way lets Stripe's redelivery do it again. Stripe does not promise order: an invoice is only overwritten by
an event at least as new as the one that wrote it.

An event is rendered in the API version of the webhook endpoint that sent it, and its objects are read here in the
shapes of the version Ladder speaks (``STRIPE_API_VERSION``, the one the pinned ``stripe`` library is built for).
An event of another version is refused before anything is applied (``version_refusal``): the endpoint in Stripe's
dashboard must be set to that version, and Stripe's redelivery brings the event again once it is.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from django.db import IntegrityError, transaction

from billing.models import BillingAccount, Invoice, StripeEvent
from billing.services.accounts import payment_failed, payment_succeeded
from billing.services.stripe_sync import STRIPE_API_VERSION
from core.tasks import enqueue

log = logging.getLogger(__name__)


def _when(seconds: int | None) -> datetime | None:
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds else None


def version_refusal(event: dict[str, Any]) -> str | None:
    """Why ``event`` may not be applied (its ``api_version`` is not Ladder's), logged; None when it may."""
    version = event.get("api_version")
    if version == STRIPE_API_VERSION:
        return None
    log.warning(
        "Stripe event %s (%s) refused: API version %r, Ladder reads %s; set the webhook endpoint's version to it",
        event.get("id"),
        event.get("type"),
        version,
        STRIPE_API_VERSION,
    )
    return (
        f"The event is in Stripe API version {version!r}; Ladder reads {STRIPE_API_VERSION}. Set the webhook "
        "endpoint's API version to it in Stripe: the event is redelivered then."
    )


def webhook_process(event: dict[str, Any]) -> bool:
    """Apply one verified Stripe event; False when it had been processed before."""
    try:
        with transaction.atomic():
            StripeEvent.objects.create(id=event["id"], type=event["type"])
            _apply(event)
    except IntegrityError:
        if StripeEvent.objects.filter(id=event["id"]).exists():
            return False
        raise
    return True


def _apply(event: dict[str, Any]) -> None:
    kind: str = event["type"]
    obj: dict[str, Any] = event["data"]["object"]
    created = _when(event.get("created")) or datetime.now(tz=UTC)
    if kind.startswith("invoice."):
        account = _account(obj.get("customer"))
        if account is None:
            return
        invoice = _mirror_invoice(account, obj, created, failed={"invoice.payment_failed": True}.get(kind))
        if invoice is None:
            return  # an event older than what the mirror holds changes nothing, standing included
        if kind == "invoice.payment_failed" and invoice.status == "open":
            payment_failed(account=account, at=created)
        elif kind in ("invoice.paid", "invoice.payment_succeeded"):
            payment_succeeded(account=account)
    elif kind == "checkout.session.completed" and obj.get("mode") == "setup" and obj.get("setup_intent"):
        # Reading the SetupIntent and setting the default are calls to Stripe: after this event commits.
        enqueue("billing.tasks.payment_method_confirm", str(obj.get("customer")), str(obj["setup_intent"]))
    elif kind.startswith("customer.subscription."):
        account = _account(obj.get("customer"))
        if account is not None and obj.get("id") in (account.stripe_subscription_id, None, ""):
            status = "canceled" if kind == "customer.subscription.deleted" else str(obj.get("status", ""))
            BillingAccount.objects.filter(pk=account.pk).update(subscription_status=status)


def _account(customer: Any) -> BillingAccount | None:
    customer_id = customer.get("id") if isinstance(customer, dict) else customer
    account = (
        BillingAccount.objects.select_related("tenant").filter(stripe_customer_id=customer_id).first()
        if customer_id
        else None
    )
    if account is None:
        log.warning("Stripe event for unknown customer %r ignored", customer_id)
    return account


def _mirror_invoice(
    account: BillingAccount, obj: dict[str, Any], created: datetime, *, failed: bool | None
) -> Invoice | None:
    """Write the invoice as the event shows it; None when the event is older than the mirror (by event time,
    then by status: an invoice only moves forward)."""
    lines = [
        {
            "description": line.get("description") or "",
            "quantity": line.get("quantity"),
            "amount": line.get("amount"),
            "currency": line.get("currency") or obj.get("currency"),
            "period_start": (line.get("period") or {}).get("start"),
            "period_end": (line.get("period") or {}).get("end"),
        }
        for line in (obj.get("lines") or {}).get("data", [])
    ]
    status = str(obj.get("status") or "draft")
    invoice, fresh = Invoice.objects.select_for_update(no_key=True).get_or_create(
        stripe_id=obj["id"],
        defaults={
            "tenant_id": account.tenant_id,
            "status": status,
            "currency": obj.get("currency") or "",
            "subtotal": 0,
            "total": 0,
        },
    )
    if invoice.tenant_id != account.tenant_id:
        log.error("Stripe invoice %s moved customers; left as it was", obj["id"])
        return None
    if not fresh and (
        (invoice.event_created is not None and created < invoice.event_created) or _rank(status) < _rank(invoice.status)
    ):
        return None  # an older event arrived late: keep the newer state
    invoice.event_created = created
    if failed is not None:
        invoice.payment_failed = failed
    if status == "paid":
        invoice.payment_failed = False
    invoice.status = status
    invoice.currency = obj.get("currency") or invoice.currency
    invoice.period_start = _when(obj.get("period_start"))
    invoice.period_end = _when(obj.get("period_end"))
    invoice.subtotal = int(obj.get("subtotal") or 0)
    invoice.total = int(obj.get("total") or 0)
    invoice.amount_due = int(obj.get("amount_due") or 0)
    invoice.amount_paid = int(obj.get("amount_paid") or 0)
    invoice.lines = lines
    invoice.hosted_invoice_url = obj.get("hosted_invoice_url") or ""
    invoice.stripe_created = _when(obj.get("created"))
    invoice.save()
    return invoice


# An invoice only moves forward: draft -> open -> paid | uncollectible | void.
_ORDER = {"draft": 0, "open": 1, "uncollectible": 2, "paid": 3, "void": 3}


def _rank(status: str) -> int:
    return _ORDER.get(status, 0)
