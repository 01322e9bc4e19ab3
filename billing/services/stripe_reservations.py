"""Reservations' terms in Stripe (docs/capacity.md, "Reservations as a product"), through the official SDK and
never inside a database transaction.

A term is a subscription of its own to a licensed monthly price: a Product and a Price per reservation (the price
per GPU-month: 730 hours at the price per GPU-hour the tenant committed to), quantity its GPUs. Stripe bills it in
advance each calendar month (UTC) as the ledger does (``billing.domain.commitments.billed_milli``): the first month
prorated from the term's start (the subscription is backdated to it and anchored on the next 1st), the last one to
its end (``cancel_at``), every whole month at 730 GPU-hours a GPU. A term ended early is cancelled with a prorated
credit for the part of the month it no longer covers, on a final invoice.

The subscription is opened once the term has begun (Stripe cannot backdate into the future), by the billing push
that runs every ``LADDER_BILLING_PUSH_EVERY_SECONDS``; creating and ending a reservation also ask for it at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

import stripe
from django.db.models import F, Q
from django.utils import timezone

from billing.domain.pricing import exponent
from billing.selectors import stripe_enabled
from billing.services.stripe_sync import next_month, stripe_account_sync, stripe_client
from provisioning.domain.volumes import HOURS_PER_MONTH
from provisioning.models import Reservation

log = logging.getLogger(__name__)

UNIT_LABEL = "GPU"  # shown beside the quantity on Stripe's invoices (at most 12 characters)


@dataclass
class ReservationsReport:
    opened: int = 0
    closed: int = 0

    def __str__(self) -> str:
        return f"reservations opened in Stripe: {self.opened}, ended early: {self.closed}"


def stripe_reservations_sync(*, now: datetime | None = None) -> ReservationsReport:
    """Open the Stripe subscription of every term that has begun and has none, and close the subscription of every
    term ended early. Safe to run any number of times: each create carries an idempotency key."""
    report = ReservationsReport()
    if not stripe_enabled():
        return report
    now = now or timezone.now()
    # A term ended early before it reached Stripe is opened and closed all the same: the ledger bills it until then.
    due = Reservation.objects.filter(stripe_subscription_id="", starts_at__lte=now, ends_at__gt=now).filter(
        Q(cancelled_at=None) | Q(cancelled_at__gt=F("starts_at"))
    )
    for reservation in due.select_related("tenant", "gpu_model", "hall__region").order_by("pk"):
        stripe_reservation_open(reservation, now=now)
        report.opened += 1
    ended = Reservation.objects.exclude(stripe_subscription_id="").filter(
        cancelled_at__isnull=False, stripe_closed_at=None
    )
    for reservation in ended.order_by("pk"):
        stripe_reservation_close(reservation, now=now)
        report.closed += 1
    return report


def month_price_minor(price_per_gpu_hour: Decimal, currency: str) -> Decimal:
    """A reservation's Stripe ``unit_amount_decimal``: minor units per GPU-month (730 GPU-hours), exact."""
    return price_per_gpu_hour * HOURS_PER_MONTH * Decimal(10) ** exponent(currency)


def stripe_reservation_open(reservation: Reservation, *, now: datetime) -> str:
    """The reservation's Product, licensed monthly Price and subscription (backdated to the term's start, anchored
    on the next 1st, cancelled at its end); returns the subscription's id, also kept on the reservation."""
    client = stripe_client()
    account = stripe_account_sync(tenant=reservation.tenant, prices=[])  # its customer, made if need be
    key = f"ladder-reservation-{reservation.pk}"
    product = client.v1.products.create(
        params={
            "name": f"Reserved {reservation.gpu_model.name} GPUs in {reservation.hall.code} "
            f"(reservation {reservation.pk})",
            "unit_label": UNIT_LABEL,
            "metadata": {"ladder_reservation": str(reservation.pk), "ladder_tenant": reservation.tenant.slug},
        },
        options={"idempotency_key": f"{key}-product"},
    )
    found = client.v1.prices.list(params={"lookup_keys": [key], "limit": 1})
    price = found.data[0] if found.data else None
    if price is None:
        price = client.v1.prices.create(
            params={
                "product": product.id,
                "currency": reservation.currency,
                "unit_amount_decimal": month_price_minor(reservation.price_per_gpu_hour, reservation.currency),
                "recurring": {"interval": "month", "usage_type": "licensed"},
                "lookup_key": key,
                "metadata": {"price_per_gpu_hour": str(reservation.price_per_gpu_hour), "hours_per_month": "730"},
            },
            options={"idempotency_key": f"{key}-price"},
        )
    subscription = client.v1.subscriptions.create(
        params={
            "customer": account.stripe_customer_id,
            "items": [{"price": price.id, "quantity": reservation.gpus}],
            "metadata": {"ladder_tenant": reservation.tenant.slug, "ladder_reservation": str(reservation.pk)},
            # Billed in advance per calendar month: from the term's start to the next 1st prorated, then monthly,
            # the last month prorated to the term's end.
            "backdate_start_date": int(min(reservation.starts_at, now).timestamp()),
            "billing_cycle_anchor": int(next_month(now).timestamp()),
            "cancel_at": int(reservation.ends_at.timestamp()),
            "proration_behavior": "create_prorations",
        },
        options={"idempotency_key": f"{key}-subscription"},
    )
    Reservation.objects.filter(pk=reservation.pk).update(stripe_subscription_id=subscription.id)
    reservation.stripe_subscription_id = subscription.id
    log.info("reservation %s billed by Stripe subscription %s", reservation.pk, subscription.id)
    return str(subscription.id)


def stripe_reservation_close(reservation: Reservation, *, now: datetime) -> None:
    """A term ended early: cancel its subscription now, crediting the part of the month already billed that it
    no longer covers, on a final invoice."""
    client = stripe_client()
    try:
        client.v1.subscriptions.cancel(
            reservation.stripe_subscription_id, params={"prorate": True, "invoice_now": True}
        )
    except stripe.InvalidRequestError:
        # Cancelled already: our earlier call whose answer was lost, or its term's end came first.
        if client.v1.subscriptions.retrieve(reservation.stripe_subscription_id).status != "canceled":
            raise
    Reservation.objects.filter(pk=reservation.pk).update(stripe_closed_at=now)
