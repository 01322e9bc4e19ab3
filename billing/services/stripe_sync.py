"""Everything that talks to Stripe, through the official SDK and never inside a database transaction:
the catalog (a Product per SKU, a Billing Meter and a metered Price per price), customers and subscriptions, and
the outbox pusher that sends each closed rollup as one meter event, exactly once.

Exactly once is two locks on one door. Locally, a pusher claims rows (``pending`` -> ``sending`` with a lease and
a token) with ``SKIP LOCKED``, so two pushers never send the same row at the same time. At Stripe, each rollup
always sends the same ``identifier`` (``UsageRollup.identifier``) with the same ``Idempotency-Key``: a row re-sent
after a crash between Stripe's answer and our commit is answered from Stripe's idempotency cache or refused as a
duplicate identifier, and either way counted as already sent, never billed twice. Stripe remembers both for 24
hours, so a send with an unknown outcome is never repeated after that (``_set_aside``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import requests
import stripe
from django.conf import settings
from django.db import transaction
from django.db.models import Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from billing.metering import DAY_MS, to_ms
from billing.models import BillingAccount, PushState, Sku, SkuPrice, UsageInterval, UsageRollup
from billing.pricing import stripe_unit_amount
from billing.selectors import stripe_enabled
from billing.services.accounts import billing_account
from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict
from core.metrics import STRIPE_PUSHES
from core.progress import QUIET, Progress
from tenancy.models import Tenant, TenantState

log = logging.getLogger(__name__)

STRIPE_MAX_AGE_MS = 35 * DAY_MS  # Stripe refuses meter events older than 35 days
STALE_MARGIN_MS = DAY_MS  # flag a day early rather than race the limit
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
                params={"name": sku.code, "metadata": {"ladder_sku": sku.code}},
                options={"idempotency_key": f"ladder-product-{sku.event_name}"},
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
                        "display_name": f"{sku.code} from {price.effective_from:%Y-%m-%d %H:%M}"[:250],
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
            "metadata": {"ladder_sku": sku.code, "unit_price_per_hour": str(price.unit_price_per_hour)},
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
                "billing_cycle_anchor": int(_next_month(timezone.now()).timestamp()),
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


def _next_month(moment: datetime) -> datetime:
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


# --- the outbox pusher -------------------------------------------------------------------------------------------


class TokenBucket:
    """At most ``rate`` events per second on average, bursts up to ``capacity``; shared by the pusher's threads."""

    def __init__(self, rate: float, capacity: float | None = None, clock: Callable[[], float] = time.monotonic):
        self.rate = rate
        self.capacity = capacity if capacity is not None else max(1.0, rate / 10)
        self.tokens = self.capacity
        self.clock = clock
        self.stamp = clock()
        self.lock = threading.Lock()

    def take(self) -> None:
        while True:
            with self.lock:
                now = self.clock()
                self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                wait = (1 - self.tokens) / self.rate
            time.sleep(wait)


def meter_event_rate() -> float:
    if settings.STRIPE_METER_EVENTS_PER_SECOND > 0:
        return float(settings.STRIPE_METER_EVENTS_PER_SECOND)
    return 1000.0 if "_live_" in settings.STRIPE_API_KEY else 25.0


@dataclass
class PushReport:
    sent: int = 0
    already_sent: int = 0  # Stripe had it already (a retry after a crash)
    failed: int = 0  # refused by Stripe: a person must look
    stale: int = 0  # too old for Stripe: a person must bill it by hand
    deferred: int = 0  # Stripe unavailable: retried later with backoff
    errors: list[str] = field(default_factory=list)

    def outcomes(self) -> dict[str, int]:
        """The counts by outcome, as the ``ladder_stripe_pushes`` metric labels them."""
        return {
            "sent": self.sent,
            "already_sent": self.already_sent,
            "failed": self.failed,
            "stale": self.stale,
            "deferred": self.deferred,
        }

    def __str__(self) -> str:
        return (
            f"sent {self.sent}, skipped as already sent {self.already_sent}, failed {self.failed}, "
            f"stale {self.stale}, deferred {self.deferred}"
        )


# Outcomes of one send. RETRY: Stripe certainly did not take it; UNSURE: it may have (a timeout, a 5xx).
SENT, REPLAYED, ALREADY, FAILED, RETRY, UNSURE = "sent", "replayed", "already", "failed", "retry", "unsure"
# Stripe forgets identifiers and idempotency keys after 24 hours: a send whose outcome is unknown must not be
# repeated blindly after that, or it could bill twice.
DEDUP_WINDOW = timedelta(hours=23)


def billing_push(
    *,
    now: datetime | None = None,
    batch_size: int | None = None,
    threads: int = 8,
    max_batches: int | None = None,
    on_sent: Callable[[list[int]], None] | None = None,
    progress: Progress = QUIET,
) -> PushReport:
    """Send every due rollup to Stripe, oldest window first; stop at the first sign Stripe is unavailable.

    ``on_sent`` is called with the ids Stripe accepted before they are recorded (tests use it to crash there).
    ``progress`` counts the rollups handled, out of those due when the push began (counted only when shown)."""
    report = PushReport()
    if not stripe_enabled():
        return report
    rate = meter_event_rate()
    bucket = TokenBucket(rate)
    if batch_size is None:  # big batches (fewer database round trips), sent well within their lease
        batch_size = max(1, min(1000, int(rate * push_lease().total_seconds() / 4)))
    batches = 0
    if progress.active:
        progress.set_total(_due(now or timezone.now()).count())
    with ThreadPoolExecutor(max_workers=threads) as pool:
        while max_batches is None or batches < max_batches:
            moment = now or timezone.now()
            token = uuid.uuid4().hex
            rows = _claim(moment, batch_size, token)
            if not rows:
                break
            batches += 1
            before = report.outcomes()
            rows = _set_aside(rows, moment, token, report)
            accounts = _accounts(rows)
            outcomes = list(pool.map(partial(_send, bucket, accounts=accounts), rows))
            if on_sent is not None:
                on_sent([r.pk for r, (o, _) in zip(rows, outcomes, strict=True) if o in (SENT, REPLAYED, ALREADY)])
            stop = _record(rows, outcomes, moment, token, report)
            for outcome, count in report.outcomes().items():
                STRIPE_PUSHES.labels(outcome).inc(count - before[outcome])
            progress.advance(len(rows))
            if stop:
                break
    progress.finish()
    return report


def _claim(now: datetime, limit: int, token: str) -> list[UsageRollup]:
    """Take up to ``limit`` due rows, oldest window first; rows another pusher holds are skipped."""
    due = _due_rows(now)
    with transaction.atomic():
        ids = list(
            UsageRollup.objects.select_for_update(skip_locked=True)
            .filter(due)
            .order_by("window_ms", "id")
            .values_list("id", flat=True)[:limit]
        )
        UsageRollup.objects.filter(pk__in=ids).filter(due).update(
            push_state=PushState.SENDING,
            lease_until=now + push_lease(),
            lease_token=token,
            uncertain_since=Coalesce("uncertain_since", Value(now)),
        )
    rows = UsageRollup.objects.filter(lease_token=token, push_state=PushState.SENDING).select_related(
        "sku", "price__sku"
    )
    return sorted(rows, key=lambda r: (r.window_ms, r.pk))


def _due_rows(now: datetime) -> Q:
    return Q(push_state=PushState.PENDING, next_attempt_at__lte=now) | Q(
        push_state=PushState.SENDING, lease_until__lt=now
    )


def _due(now: datetime) -> Any:
    return UsageRollup.objects.filter(_due_rows(now))


def push_lease() -> timedelta:
    return timedelta(seconds=settings.LADDER_BILLING_PUSH_LEASE_SECONDS)


def _set_aside(rows: list[UsageRollup], now: datetime, token: str, report: PushReport) -> list[UsageRollup]:
    """Rows no pusher may send: too old for Stripe (stale), or sent with an unknown outcome longer ago than
    Stripe remembers identifiers (resending could bill twice). Both need a person."""
    oldest = to_ms(now) - STRIPE_MAX_AGE_MS + STALE_MARGIN_MS
    mine = UsageRollup.objects.filter(lease_token=token, push_state=PushState.SENDING)
    kept = []
    for row in rows:
        if row.window_ms < oldest:
            state, why = PushState.STALE, "Older than Stripe accepts (35 days): bill this usage by hand."
            report.stale += 1
        elif row.uncertain_since is not None and row.uncertain_since < now - DEDUP_WINDOW:
            state, why = (
                PushState.FAILED,
                (
                    f"A send on {row.uncertain_since:%Y-%m-%d %H:%M} UTC has an unknown outcome and Stripe no longer "
                    "deduplicates it: check the meter's event summaries, then mark it sent or pending."
                ),
            )
            report.failed += 1
        else:
            kept.append(row)
            continue
        mine.filter(pk=row.pk).update(push_state=state, push_error=why, lease_until=None)
        report.errors.append(f"{row.identifier}: {why}")
    if len(kept) < len(rows):
        log.error("%d rollups need a person: %s", len(rows) - len(kept), report.errors[-20:])
    return kept


@dataclass(frozen=True)
class _Account:
    customer: str
    prices: frozenset[str]  # Stripe prices with an item on one of the tenant's subscriptions


def _accounts(rows: list[UsageRollup]) -> dict[int, _Account]:
    """Each tenant's Stripe customer and subscribed prices; a tenant without a customer, or without an item for
    a price it is billed at, is set up first."""
    found = {a.tenant_id: a for a in BillingAccount.objects.filter(tenant_id__in={r.tenant_id for r in rows})}
    needed: dict[int, set[str]] = {}
    for r in rows:
        account = found.get(r.tenant_id)
        price_id = r.price.stripe_price_id if r.price else ""
        missing = account is None or not account.stripe_customer_id
        if missing or (price_id and price_id not in account_items(account)):  # type: ignore[arg-type]
            needed.setdefault(r.tenant_id, set()).update({price_id} - {""})
    for tenant in Tenant.objects.filter(pk__in=needed):
        try:
            found[tenant.pk] = stripe_account_sync(tenant=tenant, prices=sorted(needed[tenant.pk]))
        except stripe.StripeError:
            log.warning("could not set up Stripe customer for tenant %s", tenant.pk, exc_info=True)
    return {
        t: _Account(a.stripe_customer_id, frozenset(account_items(a))) for t, a in found.items() if a.stripe_customer_id
    }


def _send(bucket: TokenBucket, row: UsageRollup, *, accounts: dict[int, _Account]) -> tuple[str, str]:
    price = row.price
    if price is None:
        return FAILED, f"SKU {row.sku.code} had no price for this usage: price it, then set the row pending."
    if not price.stripe_meter_id or not price.stripe_price_id:
        return RETRY, f"the price of {row.sku.code} is not in Stripe yet: run stripe_sync_catalog"
    account = accounts.get(row.tenant_id)
    if account is None:
        return RETRY, "the tenant has no Stripe customer yet"
    if price.stripe_price_id not in account.prices:
        return RETRY, f"{row.sku.code} is not on the tenant's subscription yet"
    params: Any = {
        "event_name": price.event_name,
        "identifier": row.identifier,
        "timestamp": row.window_ms // 1000,  # inside the window the usage belongs to
        "payload": {"stripe_customer_id": account.customer, "value": str(row.meter_value)},
    }
    client = stripe_client()
    delay = 0.5
    for attempt in range(6):
        bucket.take()
        try:
            event = client.v1.billing.meter_events.create(params=params, options={"idempotency_key": row.identifier})
        except stripe.RateLimitError:
            time.sleep(delay * (attempt + 1))
            continue
        except (stripe.APIConnectionError, stripe.APIError) as error:
            if attempt >= 2:
                return UNSURE, str(error.user_message or error)
            time.sleep(delay * 2**attempt)
            continue
        except stripe.InvalidRequestError as error:
            if error.code == "resource_already_exists":
                return ALREADY, ""
            return FAILED, str(error.user_message or error)
        except (stripe.AuthenticationError, stripe.PermissionError) as error:
            log.error("Stripe refused the API key: %s", error.user_message or error)
            return RETRY, f"Stripe refused the API key: {error.user_message or error}"
        except stripe.StripeError as error:
            if (error.http_status or 0) >= 500:
                return UNSURE, str(error.user_message or error)
            return FAILED, str(error.user_message or error)
        replayed = event.last_response is not None and event.last_response.headers.get("Idempotent-Replayed")
        return (REPLAYED if replayed == "true" else SENT), ""
    return RETRY, "Stripe kept answering 429 (rate limited)"


def _record(
    rows: list[UsageRollup], outcomes: list[tuple[str, str]], now: datetime, token: str, report: PushReport
) -> bool:
    """Write the batch's outcomes, only on rows this claim still holds; True when Stripe looked unavailable."""
    mine = UsageRollup.objects.filter(lease_token=token, push_state=PushState.SENDING)
    done = [row.pk for row, (outcome, _) in zip(rows, outcomes, strict=True) if outcome in (SENT, REPLAYED, ALREADY)]
    mine.filter(pk__in=done).update(push_state=PushState.SENT, pushed_at=now, lease_until=None, push_error="")
    for row, (outcome, message) in zip(rows, outcomes, strict=True):
        if outcome == SENT:
            report.sent += 1
        elif outcome in (REPLAYED, ALREADY):
            report.already_sent += 1
        elif outcome == FAILED:
            # A refusal is certain: Stripe did not take this send. Only an earlier send (before this claim) can
            # have an unknown outcome still, so the mark is kept only then (a person retrying needs to know).
            earlier = row.uncertain_since if row.uncertain_since is not None and row.uncertain_since < now else None
            mine.filter(pk=row.pk).update(
                push_state=PushState.FAILED, push_error=message[:2000], lease_until=None, uncertain_since=earlier
            )
            report.failed += 1
            report.errors.append(f"{row.identifier}: {message}")
        else:
            backoff = timedelta(seconds=min(3600, 15 * 2 ** min(row.push_attempts, 8)))
            mine.filter(pk=row.pk).update(
                push_state=PushState.PENDING,
                push_attempts=row.push_attempts + 1,
                next_attempt_at=now + backoff,
                lease_until=None,
                push_error=message[:2000],
                uncertain_since=row.uncertain_since if outcome == UNSURE else None,
            )
            report.deferred += 1
    return any(outcome in (RETRY, UNSURE) for outcome, _ in outcomes)
