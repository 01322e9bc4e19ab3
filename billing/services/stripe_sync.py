"""Everything that talks to Stripe, through the official SDK and never inside a database transaction: the
client, the catalog (a Product per SKU, a Billing Meter and a metered Price per price; storage's named in words
that say GB, its meters counting GB-seconds), customers and subscriptions,
Stripe's preview of an upcoming invoice and the payment method. The outbox pusher, which sends each closed rollup
as one meter event exactly once, is ``stripe_push.py``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import requests
import stripe
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from stripe.params import ProductCreateParams

from billing.domain.pricing import price_shown, stripe_unit_amount
from billing.models import BillingAccount, PushState, Sku, SkuPrice, UsageInterval, UsageRollup
from billing.selectors import stripe_enabled
from billing.services.accounts import billing_account
from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict
from tenancy.models import Tenant, TenantState

log = logging.getLogger(__name__)

# The Stripe API version Ladder speaks: the one the pinned ``stripe`` library (requirements.lock) is generated for, sent
# on every request and required of every webhook event (billing.services.webhooks). Upgrading the library moves it.
STRIPE_API_VERSION: str = stripe.api_version
SUBSCRIPTION_ITEM_LIMIT = 20  # Stripe's maximum items per subscription
INVOICE_FINALIZE_GRACE = timedelta(hours=1)  # Stripe finalizes a period's invoice an hour after it ends


_clients = threading.local()
TIMEOUT = (5, 20)  # connect, read (seconds): the pusher and tasks, which nobody waits on
# A request a person waits on (the upcoming invoice's Stripe preview, beside the ledger's): a Stripe that stopped
# answering must not hold a web worker for TIMEOUT's 20 s, or a handful of such requests starve the server.
INTERACTIVE_TIMEOUT = (2, 3)
PREVIEW_PAUSE_SECONDS = 30  # after a failed preview, this process answers without Stripe's for this long
_preview_paused_until = 0.0


def stripe_client(*, interactive: bool = False) -> stripe.StripeClient:
    """This thread's Stripe client (an HTTP session is not shared between threads); ``interactive``: the one with
    short timeouts, for requests a person waits on."""
    if not stripe_enabled():
        raise RuntimeError("Stripe is not configured (STRIPE_API_KEY is empty): the product is ledger-only")
    config = (settings.STRIPE_API_KEY, settings.STRIPE_API_BASE)
    slot = "interactive" if interactive else "client"
    cached = getattr(_clients, slot, None)
    if cached is None or cached[0] != config:
        session = requests.Session()
        # Left to itself, requests reads the proxy variables of the environment on every request: a quarter of
        # the pusher's CPU. Read them once, for Stripe's address.
        session.trust_env = False
        session.proxies = requests.utils.get_environ_proxies(settings.STRIPE_API_BASE)
        session.verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
        client = stripe.StripeClient(
            settings.STRIPE_API_KEY,
            stripe_version=STRIPE_API_VERSION,
            base_addresses={"api": settings.STRIPE_API_BASE},
            max_network_retries=0,  # retries are the outbox's (with backoff), so a slow Stripe never holds a row
            http_client=stripe.RequestsClient(timeout=INTERACTIVE_TIMEOUT if interactive else TIMEOUT, session=session),
        )
        cached = (config, client)
        setattr(_clients, slot, cached)
    return cached[1]


# --- catalog -------------------------------------------------------------------------------------------------------


@dataclass
class CatalogReport:
    meters: int = 0
    products: int = 0
    prices: int = 0
    unchanged: int = 0

    def __str__(self) -> str:
        return (
            f"created {self.meters} meters, {self.products} products, {self.prices} prices; "
            f"{self.unchanged} SKUs already in step"
        )


def stripe_sync_catalog() -> CatalogReport:
    """Create what Stripe lacks: a Product per SKU, and a meter and metered Price per price version. Safe to
    run any number of times: meters are found by event name, prices by lookup key, and every create carries an
    idempotency key."""
    client = stripe_client()
    report = CatalogReport()
    meters = {m.event_name: m.id for m in client.v1.billing.meters.list(params={"limit": 100}).auto_paging_iter()}
    for sku in Sku.objects.select_related("gpu_model", "region").prefetch_related("prices"):
        created = 0
        if not sku.stripe_product_id:
            product = client.v1.products.create(
                params=_product(sku), options={"idempotency_key": f"ladder-product-{sku.event_name}"}
            )
            sku.stripe_product_id = product.id
            Sku.objects.filter(pk=sku.pk).update(stripe_product_id=product.id)
            report.products += 1
            created += 1
        for price in sku.prices.all():
            if price.stripe_meter_id and price.stripe_price_id:
                continue
            meter_id = meters.get(price.event_name)
            if meter_id is None:
                meter = client.v1.billing.meters.create(
                    params={
                        "display_name": f"{_shown_name(sku)} from {price.effective_from:%Y-%m-%d %H:%M}"[:250],
                        "event_name": price.event_name,
                        "default_aggregation": {"formula": "sum"},
                        "customer_mapping": {"type": "by_id", "event_payload_key": "stripe_customer_id"},
                        "value_settings": {"event_payload_key": "value"},
                    },
                    options={"idempotency_key": f"ladder-meter-{price.event_name}"},
                )
                meter_id = meters[price.event_name] = meter.id
                report.meters += 1
            price.stripe_meter_id = meter_id
            price.stripe_price_id = price.stripe_price_id or _price_ensure(client, sku, price)
            SkuPrice.objects.filter(pk=price.pk).update(
                stripe_meter_id=price.stripe_meter_id, stripe_price_id=price.stripe_price_id
            )
            report.prices += 1
            created += 1
        report.unchanged += not created
    return report


# What Stripe's invoices call a storage SKU's product: its meter counts GB-seconds (whole ones, as for every SKU its
# unit-seconds), which Stripe prices per GB-second; the price book's is per GB-hour, quoted per GB-month.
STORAGE_NAMES = {"filesystem": "Filesystem storage", "block": "Block storage", "snapshot": "Snapshot storage"}
STORAGE_UNIT_LABEL = "GB-second"


# What Stripe's invoices call a host SKU's product: vCPUs or memory beyond the bundle, counted per second.
HOST_NAMES = {"vcpu": ("vCPUs beyond the bundle", "vCPU-second"), "memory": ("Memory beyond the bundle", "GiB-second")}


def _shown_name(sku: Sku) -> str:
    """A SKU as Stripe's dashboard and invoices name it: compute by its code, storage in words that say GB
    (``Filesystem storage, eu-west (GB-seconds)``), a host's vCPUs and memory in words that say their unit
    (``vCPUs beyond the bundle, eu-west (vCPU-seconds)``)."""
    if sku.is_host:
        words, unit = HOST_NAMES[sku.unit]
        return f"{words}, {sku.region.code} ({unit}s)"
    if not sku.is_storage:
        return sku.code
    kind = STORAGE_NAMES.get(sku.storage_kind, f"{sku.storage_kind.capitalize()} storage")
    return f"{kind}, {sku.region.code} (GB-seconds)"


def _product(sku: Sku) -> ProductCreateParams:
    if sku.is_host:
        return {"name": _shown_name(sku), "unit_label": HOST_NAMES[sku.unit][1], "metadata": {"ladder_sku": sku.code}}
    if not sku.is_storage:
        return {"name": _shown_name(sku), "metadata": {"ladder_sku": sku.code}}
    return {
        "name": _shown_name(sku),
        "unit_label": STORAGE_UNIT_LABEL,
        "metadata": {"ladder_sku": sku.code, "ladder_storage_kind": sku.storage_kind},
    }


def _price_ensure(client: stripe.StripeClient, sku: Sku, price: SkuPrice) -> str:
    lookup_key = f"ladder:{price.event_name}"
    found = client.v1.prices.list(params={"lookup_keys": [lookup_key], "limit": 1})
    if found.data:
        return str(found.data[0].id)
    created = client.v1.prices.create(
        params={
            "product": sku.stripe_product_id,
            "currency": sku.currency,
            # per meter unit = per unit-second (see docs/billing.md)
            "unit_amount_decimal": stripe_unit_amount(price.unit_price_per_hour, sku.currency),
            "recurring": {"interval": "month", "usage_type": "metered", "meter": price.stripe_meter_id},
            "lookup_key": lookup_key,
            "metadata": {
                "ladder_sku": sku.code,
                "unit_price_per_hour": str(price_shown(price.unit_price_per_hour)),
                **({"unit_price_per_gb_month": str(price.per_gb_month)} if sku.is_storage else {}),
            },
        },
        options={"idempotency_key": lookup_key},
    )
    return str(created.id)


# --- customers and subscriptions ----------------------------------------------------------------------------------


def current_stripe_prices() -> list[str]:
    """The Stripe price in effect now of every SKU that has one."""
    latest: dict[int, str] = {}
    found = SkuPrice.objects.filter(effective_from__lte=timezone.now()).exclude(stripe_price_id="")
    for sku_id, price_id in found.order_by("effective_from").values_list("sku_id", "stripe_price_id"):
        latest[sku_id] = price_id
    return [latest[sku_id] for sku_id in sorted(latest)]


def stripe_account_sync(*, tenant: Tenant, prices: list[str] | None = None) -> BillingAccount:
    """Make sure the tenant has a Stripe customer and an item for each price of ``prices`` on one of its
    subscriptions (default, at signup: the current prices of the catalog, as many as fit the first subscription;
    the pusher asks for the others when the tenant is first billed at them).

    Stripe allows 20 items per subscription. The first subscription (``stripe_subscription_id``) takes the first
    20; a price that finds no room first frees the items of prices that can bill nothing more (``_items_retire``),
    and failing that goes on a further subscription (a shard) on the same billing cycle: started at the first
    one's period start and anchored at its period end, so every shard's invoices cover the same calendar month."""
    client = stripe_client()
    account = billing_account(tenant)
    if not account.stripe_customer_id:
        customer = client.v1.customers.create(
            params={"name": tenant.name, "metadata": {"ladder_tenant": tenant.slug}},
            options={"idempotency_key": f"ladder-customer-{tenant.pk}"},
        )
        account.stripe_customer_id = customer.id
        BillingAccount.objects.filter(pk=account.pk).update(stripe_customer_id=customer.id)
    items = account_items(account)
    wanted = [p for p in (current_stripe_prices() if prices is None else prices) if p not in items]
    if prices is None:  # ahead of use, only what fits the first subscription: more shards come when billed
        wanted = wanted[: max(0, SUBSCRIPTION_ITEM_LIMIT - len(items))]
    if not account.stripe_subscription_id:
        if not wanted:
            return account  # nothing to subscribe to yet: the catalog has no Stripe prices
        first, wanted = wanted[:SUBSCRIPTION_ITEM_LIMIT], wanted[SUBSCRIPTION_ITEM_LIMIT:]
        subscription = client.v1.subscriptions.create(
            params={
                "customer": account.stripe_customer_id,
                "items": [{"price": p} for p in first],
                "metadata": {"ladder_tenant": tenant.slug},
                # Periods on the calendar month (UTC), as the ledger's invoices and budgets: the first one runs
                # to the next 1st and is billed for its usage only (metered prices have nothing to prorate).
                "billing_cycle_anchor": int(next_month(timezone.now()).timestamp()),
                "proration_behavior": "none",
            },
            options={"idempotency_key": f"ladder-subscription-{tenant.pk}"},
        )
        account.stripe_subscription_id = subscription.id
        account.subscription_status = subscription.status
        items.update(dict.fromkeys(first, subscription.id))
    for price_id in wanted:
        shard = _shard_with_room(items, account.stripe_subscription_id)
        if shard is None and _items_retire(client, account, items):
            shard = _shard_with_room(items, account.stripe_subscription_id)
        if shard is None:
            shard = _shard_open(client, tenant, account, items, price_id)
        else:
            client.v1.subscription_items.create(
                params={"subscription": shard, "price": price_id},
                options={"idempotency_key": f"ladder-item-{tenant.pk}-{shard}-{price_id}"},
            )
        items[price_id] = shard
    account.subscription_items = items
    account.subscribed_prices = list(items)
    BillingAccount.objects.filter(pk=account.pk).update(
        stripe_subscription_id=account.stripe_subscription_id,
        subscription_status=account.subscription_status,
        subscribed_prices=account.subscribed_prices,
        subscription_items=account.subscription_items,
    )
    return account


def account_items(account: BillingAccount) -> dict[str, str]:
    """Stripe price id -> the subscription billing it (accounts from before shards: all on the first one)."""
    items = {str(k): str(v) for k, v in (account.subscription_items or {}).items()}
    for price_id in account.subscribed_prices or []:
        items.setdefault(price_id, account.stripe_subscription_id)
    return items


def account_subscriptions(account: BillingAccount) -> list[str]:
    """The tenant's subscriptions, the first one first."""
    shards = [account.stripe_subscription_id] if account.stripe_subscription_id else []
    return shards + sorted(set(account_items(account).values()) - set(shards))


def next_month(moment: datetime) -> datetime:
    moment = moment.astimezone(UTC)
    year, month = divmod(moment.year * 12 + moment.month, 12)  # month is 0-based here: next month
    return datetime(year, month + 1, 1, tzinfo=UTC)


def _shard_with_room(items: dict[str, str], first: str) -> str | None:
    counts = Counter(items.values())
    shards = [first, *sorted(set(counts) - {first})]
    return next((s for s in shards if counts[s] < SUBSCRIPTION_ITEM_LIMIT), None)


def _shard_open(
    client: stripe.StripeClient, tenant: Tenant, account: BillingAccount, items: dict[str, str], price_id: str
) -> str:
    """A further subscription for the tenant, on the first one's billing cycle, with an item for ``price_id``."""
    first = client.v1.subscriptions.retrieve(account.stripe_subscription_id)
    period = first["items"].data[0]
    number = len(set(items.values()) | {account.stripe_subscription_id}) + 1
    subscription = client.v1.subscriptions.create(
        params={
            "customer": account.stripe_customer_id,
            "items": [{"price": price_id}],
            "metadata": {"ladder_tenant": tenant.slug, "ladder_shard": str(number)},
            # Usage since the period's start (the meter's events carry their window's time) is billed on the
            # shard's first invoice, which ends with the first subscription's.
            "backdate_start_date": int(period.current_period_start),
            "billing_cycle_anchor": int(period.current_period_end),
            "proration_behavior": "none",
        },
        options={"idempotency_key": f"ladder-subscription-{tenant.pk}-{number}"},
    )
    log.info("tenant %s billed at more than %d prices: subscription %d", tenant.pk, SUBSCRIPTION_ITEM_LIMIT, number)
    return str(subscription.id)


def _items_retire(client: stripe.StripeClient, account: BillingAccount, items: dict[str, str]) -> int:
    """Remove the items of prices that can bill nothing more: superseded before the current period began, with
    the last period's invoice finalized (an hour after its end) and no usage at them waiting to be sent. So shards
    grow only with the prices billing in one period, not with every price a long-lived tenant ever paid."""
    first = client.v1.subscriptions.retrieve(account.stripe_subscription_id)
    period_start = datetime.fromtimestamp(int(first["items"].data[0].current_period_start), UTC)
    if timezone.now() < period_start + INVOICE_FINALIZE_GRACE:
        return 0
    superseded = set()
    for price in SkuPrice.objects.filter(stripe_price_id__in=list(items)):
        successor = SkuPrice.objects.filter(sku_id=price.sku_id, effective_from__gt=price.effective_from).first()
        if successor is not None and successor.effective_from <= period_start:
            superseded.add(price)
    waiting = set(
        UsageRollup.objects.filter(
            tenant_id=account.tenant_id,
            price__in=superseded,
            push_state__in=(PushState.PENDING, PushState.SENDING, PushState.FAILED),
        ).values_list("price__stripe_price_id", flat=True)
    )
    retired = 0
    for price in superseded:
        if price.stripe_price_id in waiting:
            continue
        shard = items[price.stripe_price_id]
        listed = client.v1.subscription_items.list(params={"subscription": shard, "limit": 100})
        item = next((i for i in listed.data if i.price.id == price.stripe_price_id), None)
        if item is not None and len(listed.data) > 1:  # a subscription keeps at least one item
            client.v1.subscription_items.delete(item.id)
        elif item is not None:
            continue
        del items[price.stripe_price_id]
        retired += 1
    return retired


def stripe_invoice_preview(*, tenant: Tenant) -> dict[str, Any] | None:
    """Stripe's own preview of the tenant's upcoming invoice (for comparison with the ledger's), or None.

    A person waits on it: it uses the short timeouts, and once it has failed (``stripe.StripeError``, raised to the
    caller) this process skips Stripe's preview for ``PREVIEW_PAUSE_SECONDS`` (``StripePaused``), so an outage
    costs each web worker one slow request, not one per page view."""
    global _preview_paused_until
    account = BillingAccount.objects.filter(tenant=tenant).exclude(stripe_customer_id="").first()
    if account is None or not account.stripe_subscription_id:
        return None
    if time.monotonic() < _preview_paused_until:
        raise StripePaused("Stripe's preview is paused after a failure")
    client = stripe_client(interactive=True)
    total = amount_due = 0
    currency = account.currency
    try:
        for shard in account_subscriptions(account):  # one invoice per subscription: the tenant's is their sum
            invoice = client.v1.invoices.create_preview(
                params={"customer": account.stripe_customer_id, "subscription": shard}
            )
            total, amount_due, currency = total + invoice.total, amount_due + invoice.amount_due, invoice.currency
    except stripe.StripeError:
        _preview_paused_until = time.monotonic() + PREVIEW_PAUSE_SECONDS
        raise
    return {"total": total, "currency": currency, "amount_due": amount_due}


class StripePaused(stripe.APIConnectionError):
    """Stripe's preview is not asked for a while after it failed (a ``stripe.StripeError``, so callers that fall
    back on one fall back on this too)."""


# --- the payment method -----------------------------------------------------------------------------------------


def payment_method_setup(*, tenant: Tenant, success_url: str, cancel_url: str) -> str:
    """A Stripe Checkout session in setup mode for the tenant's customer: the URL of Stripe's page where the
    customer enters a card. Completing it comes back as a ``checkout.session.completed`` webhook."""
    if not stripe_enabled():
        raise Conflict("stripe_disabled", "This installation bills without Stripe: there is no payment method to add.")
    account = billing_account(tenant)
    if not account.stripe_customer_id:
        account = stripe_account_sync(tenant=tenant)
    session = stripe_client().v1.checkout.sessions.create(
        params={
            "mode": "setup",
            "customer": account.stripe_customer_id,
            "currency": account.currency,
            "success_url": success_url,
            "cancel_url": cancel_url,
            "metadata": {"ladder_tenant": tenant.slug},
        }
    )
    return str(session.url)


def payment_method_confirm(*, customer_id: str, setup_intent_id: str) -> BillingAccount | None:
    """After a setup session completed: the payment method it collected becomes the customer's default for
    invoices, and the account remembers which it is. Idempotent; None for an unknown customer."""
    account = BillingAccount.objects.select_related("tenant").filter(stripe_customer_id=customer_id).first()
    if account is None:
        return None
    client = stripe_client()
    intent = client.v1.setup_intents.retrieve(setup_intent_id)
    method_id = str(intent.payment_method)
    client.v1.customers.update(customer_id, params={"invoice_settings": {"default_payment_method": method_id}})
    method = client.v1.payment_methods.retrieve(method_id)
    card = getattr(method, "card", None)
    summary = f"{card.brand} •••• {card.last4}" if card is not None else str(method.type)
    with transaction.atomic():
        BillingAccount.objects.filter(pk=account.pk).update(
            payment_method_id=method_id, payment_method_summary=summary, payment_method_at=timezone.now()
        )
        audit_record(
            actor=CLOSER,
            action="billing.payment_method_set",
            target_type="billing_account",
            target_id=account.pk,
            tenant=account.tenant,
            data={"payment_method": method_id, "summary": summary},
        )
    account.refresh_from_db()
    return account


CLOSER = Actor.system("stripe-sync")


def stripe_subscriptions_close() -> list[str]:
    """Cancel the subscription of each leaving (closing or closed) tenant with a final invoice (``invoice_now``),
    once every second of its usage has reached Stripe: no piece of usage left to roll up, no rollup left to send.
    Called after each push; returns the tenants whose subscription it closed."""
    if not stripe_enabled():
        return []
    closed = []
    leaving = (
        BillingAccount.objects.filter(tenant__state__in=(TenantState.CLOSING, TenantState.CLOSED))
        .exclude(stripe_subscription_id="")
        .exclude(subscription_status="canceled")
        .select_related("tenant")
    )
    for account in leaving:
        tenant = account.tenant
        if UsageInterval.objects.filter(tenant=tenant, batch=None).exists():
            continue  # usage not rolled up yet (a window still open or in its grace period)
        if UsageRollup.objects.filter(tenant=tenant, push_state__in=(PushState.PENDING, PushState.SENDING)).exists():
            continue
        client = stripe_client()
        for shard in reversed(account_subscriptions(account)):  # the first one last: its status is the account's
            try:
                subscription = client.v1.subscriptions.cancel(shard, params={"invoice_now": True, "prorate": False})
            except stripe.InvalidRequestError:
                # Cancelled already (our earlier call whose answer was lost, or by hand in the dashboard)?
                subscription = client.v1.subscriptions.retrieve(shard)
                if subscription.status != "canceled":
                    raise
        with transaction.atomic():
            BillingAccount.objects.filter(pk=account.pk).update(subscription_status=subscription.status)
            audit_record(
                actor=CLOSER,
                action="billing.subscription_closed",
                target_type="tenant",
                target_id=tenant.slug,
                tenant=tenant,
                data={"subscription": subscription.id, "status": subscription.status},
            )
        closed.append(tenant.slug)
    return closed
