"""The outbox pusher: each closed rollup goes to Stripe as one meter event, exactly once, through the client of
``stripe_sync.py`` and never inside a database transaction.

Exactly once is two locks on one door. Locally, a pusher claims rows (``pending`` -> ``sending`` with a lease and
a token) with ``SKIP LOCKED``, so two pushers never send the same row at the same time. At Stripe, each rollup
always sends the same ``identifier`` (``UsageRollup.identifier``) with the same ``Idempotency-Key``: a row re-sent
after a crash between Stripe's answer and our commit is answered from Stripe's idempotency cache or refused as a
duplicate identifier, and either way counted as already sent, never billed twice. Stripe remembers both for 24
hours, so a send with an unknown outcome is never repeated after that (``_set_aside``).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import stripe
from django.conf import settings
from django.db import transaction
from django.db.models import Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from billing.domain.metering import DAY_MS, to_ms
from billing.models import BillingAccount, PushState, UsageRollup
from billing.selectors import stripe_enabled
from billing.services.stripe_sync import account_items, stripe_account_sync, stripe_client
from core.metrics import STRIPE_PUSHES
from core.progress import QUIET, Progress
from tenancy.models import Tenant

log = logging.getLogger(__name__)

STRIPE_MAX_AGE_MS = 35 * DAY_MS  # Stripe refuses meter events older than 35 days
STALE_MARGIN_MS = DAY_MS  # flag a day early rather than race the limit


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
            UsageRollup.objects.select_for_update(no_key=True, skip_locked=True)
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
