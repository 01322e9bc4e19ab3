"""Reconciliation of a month against Stripe, and what a person does about a failed push.

``reconciliation_month`` reads the ledger's rollups (quantities, amounts, and the outbox state of each), and, when
Stripe is on, Stripe's side through the official client: each meter's event summary for the month per customer
(``GET /v1/billing/meters/{id}/event_summaries``) and the month's invoices of every subscription of the tenant.
The comparison itself is ``billing.domain.reconcile`` (pure). It only reads: nothing here writes to the database or to
Stripe. Without ``STRIPE_API_KEY`` it compares the ledger with the outbox only and says so (``mode``).

``usage_rollup_retry`` puts a ``failed`` push back in the outbox (audited, idempotent);
``usage_rollups_needing_a_person`` lists them with Stripe's message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import stripe
from django.db import transaction
from django.db.models import QuerySet, Sum
from django.utils import timezone

from billing.domain.metering import to_ms
from billing.domain.pricing import exponent, stripe_unit_amount
from billing.domain.reconcile import Key, Line, Result, reconcile
from billing.models import (
    BillingAccount,
    PushState,
    ReconciliationRun,
    ReconciliationState,
    Sku,
    SkuPrice,
    UsageRollup,
)
from billing.selectors import stripe_enabled
from billing.services.stripe_push import DEDUP_WINDOW, STALE_MARGIN_MS, STRIPE_MAX_AGE_MS
from billing.services.stripe_sync import account_items, stripe_client
from core.actor import Actor
from core.audit import audit_record
from core.domain.months import month_end, month_of, month_start, month_text
from core.errors import Conflict, Invalid, ServiceError, Unavailable
from core.tasks import enqueue
from tenancy.models import Tenant

NEEDS_A_PERSON = (PushState.FAILED, PushState.STALE)


def month_parse(value: str, *, now: datetime) -> tuple[datetime, datetime]:
    """``YYYY-MM`` -> the month's first instant and the next month's (UTC). A month not yet begun is refused."""
    start = month_start(value, field="month", code="month_invalid")
    if start > now:
        raise Invalid("month_in_future", f"{value} has not begun: there is nothing to reconcile yet.", field="month")
    return start, month_end(start)


@dataclass
class Reconciliation:
    month: str
    start: datetime
    end: datetime
    mode: str  # "stripe" or "ledger_only"
    result: Result
    notes: list[str]
    labels: dict[Key, dict[str, Any]]  # per key: tenant, sku and price as people read them

    @property
    def clean(self) -> bool:
        return self.result.clean


def reconciliation_as_json(report: Reconciliation) -> dict[str, Any]:
    """The reconciliation as the API and ``--json`` give it."""

    def num(value: Decimal) -> str:
        return format(value.normalize(), "f") if value else "0"

    return {
        "month": report.month,
        "mode": report.mode,
        "clean": report.clean,
        "notes": report.notes,
        "unexplained": len(report.result.unexplained),
        "differences": [
            {
                **{k: v for k, v in report.labels[d.key].items() if k != "price_id"},
                "stage": d.stage.value,
                "cause": d.cause.value,
                "quantity_unit_seconds": num(d.quantity),
                "amount_minor": num(d.amount),
                "detail": d.detail,
            }
            for d in report.result.differences
        ],
        "lines": [
            {
                **{k: v for k, v in report.labels[line.key].items() if k != "price_id"},
                "ledger_unit_seconds": num(Decimal(line.ledger_milli) / 1000),
                "ledger_amount": num(line.ledger_amount),
                "sent": line.sent,
                "pending": line.pending,
                "failed": line.failed,
                "stripe_meter": line.meter,
                "invoiced": line.invoiced,
                "invoiced_amount_minor": line.invoiced_amount,
            }
            for line in report.result.lines
        ],
    }


def _label(price: SkuPrice | None) -> str:
    if price is None:
        return "unpriced"
    return f"{price.unit_price_per_hour.normalize()}/h from {price.effective_from.astimezone(UTC):%Y-%m-%d %H:%M}"


def reconciliation_month(*, month: str, tenant: Tenant | None = None, now: datetime | None = None) -> Reconciliation:
    """The month's reconciliation for every tenant with usage or a Stripe account (or one tenant)."""
    now = now or timezone.now()
    start, end = month_parse(month, now=now)
    rollups = UsageRollup.objects.filter(window_ms__gte=to_ms(start), window_ms__lt=to_ms(end))
    accounts = BillingAccount.objects.select_related("tenant").exclude(stripe_customer_id="")
    if tenant is not None:
        rollups, accounts = rollups.filter(tenant=tenant), accounts.filter(tenant=tenant)

    prices = {p.pk: p for p in SkuPrice.objects.select_related("sku")}
    by_stripe_price = {p.stripe_price_id: p for p in prices.values() if p.stripe_price_id}
    tenants = dict(Tenant.objects.values_list("pk", "slug"))
    lines: dict[Key, Line] = {}
    labels: dict[Key, dict[str, Any]] = {}

    def line_of(tenant_id: int, price: SkuPrice | None, sku_code: str | None = None) -> Line:
        key = Key(tenants[tenant_id], price.sku.code if price else (sku_code or ""), _label(price))
        if key not in lines:
            lines[key] = Line(key=key)
            labels[key] = {"tenant": key.tenant, "sku": key.sku, "price": key.price, "price_id": price and price.pk}
        return lines[key]

    sku_codes = dict(Sku.objects.values_list("pk", "code"))
    grouped = rollups.values("tenant_id", "sku_id", "price_id", "push_state").annotate(
        q=Sum("quantity_milli"), a=Sum("amount"), v=Sum("meter_value")
    )
    for row in grouped:
        line = line_of(row["tenant_id"], prices.get(row["price_id"]), sku_codes.get(row["sku_id"]))
        line.ledger_milli += row["q"] or 0
        line.ledger_amount += row["a"] or Decimal(0)
        value, state = row["v"] or 0, row["push_state"]
        if state == PushState.SENT:
            line.sent += value
        elif state in (PushState.PENDING, PushState.SENDING):
            line.pending += value
        elif state in NEEDS_A_PERSON:
            line.failed += value
    refused = rollups.filter(push_state__in=NEEDS_A_PERSON).values_list("tenant_id", "sku_id", "price_id", "push_error")
    for tenant_id, sku_id, price_id, message in refused:
        line = line_of(tenant_id, prices.get(price_id), sku_codes.get(sku_id))
        line.failed_messages.append(message or "no message")

    notes: list[str] = []
    mode = "stripe" if stripe_enabled() else "ledger_only"
    if mode == "ledger_only":
        notes.append("Ledger-only mode (no STRIPE_API_KEY): the ledger is compared with the outbox only.")
    else:
        for account in accounts:
            try:
                _read_stripe(account, start, end, rollups, by_stripe_price, line_of, notes)
            except stripe.StripeError as error:
                raise Unavailable(
                    "stripe_unavailable",
                    f"Stripe could not be read for {account.tenant.slug}: {error.user_message or error}",
                    retry_after=60,
                ) from error
    ccy_exponent = exponent(accounts.first().currency) if accounts.exists() else 2  # type: ignore[union-attr]
    result = reconcile(lines.values(), exponent=ccy_exponent)
    return Reconciliation(month, start, end, mode, result, notes, labels)


def _read_stripe(
    account: BillingAccount,
    start: datetime,
    end: datetime,
    rollups: QuerySet[UsageRollup],
    by_stripe_price: dict[str, SkuPrice],
    line_of: Callable[..., Line],
    notes: list[str],
) -> None:
    client = stripe_client()
    tenant_id, customer = account.tenant_id, account.stripe_customer_id
    # Every price the tenant is billed at this month (the ledger's), and every price it has an item for.
    priced = {p for p in rollups.filter(tenant_id=tenant_id).values_list("price__stripe_price_id", flat=True) if p}
    for price_id in sorted(priced | set(account_items(account))):
        price = by_stripe_price.get(price_id)
        if price is None or not price.stripe_meter_id:
            continue
        summaries = client.v1.billing.meters.event_summaries.list(
            price.stripe_meter_id,
            params={"customer": customer, "start_time": int(start.timestamp()), "end_time": int(end.timestamp())},
        )
        held = int(sum(Decimal(str(s.aggregated_value)) for s in summaries.data))
        line = line_of(tenant_id, price)
        line.meter = (line.meter or 0) + held
        line.unit_amount = _unit_amount(price)

    # The month's usage lines: a metered line's period is the usage period it bills (an invoice's own period
    # fields describe when its items were added, which for a renewal is not the same thing).
    month_lines = [
        (invoice, item)
        for invoice in client.v1.invoices.list(params={"customer": customer, "limit": 100}).auto_paging_iter()
        if invoice.status not in ("draft", "void")
        for item in invoice.lines.auto_paging_iter()
        if start.timestamp() <= item.period.start < end.timestamp()
    ]
    if not month_lines:
        notes.append(f"{account.tenant.slug}: Stripe has not finalized an invoice for the month yet.")
        return
    # Every shard's invoice of the month is finalized at the same time (same period, same grace).
    finalized = min(int(i.status_transitions.finalized_at or i.created) for i, _ in month_lines)
    for invoice, item in month_lines:
        price_id = str(item.pricing.price_details.price) if item.pricing and item.pricing.price_details else ""
        price = by_stripe_price.get(price_id)
        if price is None:
            notes.append(f"{account.tenant.slug}: invoice {invoice.id} bills a price Ladder does not know.")
            continue
        line = line_of(tenant_id, price)
        line.invoiced = (line.invoiced or 0) + int(item.quantity or 0)
        line.invoiced_amount = (line.invoiced_amount or 0) + int(item.amount)
        line.unit_amount = _unit_amount(price)
    for price in by_stripe_price.values():  # lines Stripe left off an issued invoice bill nothing
        if price.stripe_price_id in priced:
            line = line_of(tenant_id, price)
            line.invoiced = line.invoiced or 0
            line.invoiced_amount = line.invoiced_amount or 0
    # What reached Stripe after the invoice was finalized: mostly late adjustments (seq > 0), or a push a person
    # retried. Stripe has it in the month's meter, not on the month's invoice.
    late = (
        rollups.filter(tenant_id=tenant_id, push_state=PushState.SENT)
        .filter(pushed_at__gt=datetime.fromtimestamp(finalized, UTC))
        .values("price_id")
        .annotate(v=Sum("meter_value"))
    )
    for row in late:
        line_of(tenant_id, SkuPrice.objects.select_related("sku").get(pk=row["price_id"])).late += row["v"] or 0


def _unit_amount(price: SkuPrice) -> Decimal:
    return stripe_unit_amount(price.unit_price_per_hour, price.sku.currency)


# --- failed pushes ---------------------------------------------------------------------------------------------


def usage_rollups_needing_a_person(*, state: str | None = None) -> QuerySet[UsageRollup]:
    """Rollups Stripe refused (``failed``) or that were too old for it (``stale``), oldest window first."""
    states = NEEDS_A_PERSON if state is None else (state,)
    return (
        UsageRollup.objects.filter(push_state__in=states)
        .select_related("tenant", "sku", "price")
        .order_by("window_ms", "id")
    )


def retry_refusal(row: UsageRollup, now: datetime) -> str | None:
    """Why a row may not go back to the outbox, or None when it may.

    ``failed`` may, unless its window is now too old for Stripe (it would only go stale) or an earlier send has
    an unknown outcome and is older than Stripe's 24 hours of deduplication (a resend could bill twice: a person
    must check the meter's event summaries first). ``stale`` never may: Stripe refuses events older than 35 days,
    and the pusher marks a row stale a day before that, so a stale row can only be billed by hand."""
    if row.push_state == PushState.STALE:
        return "It is older than Stripe accepts (35 days): bill this usage by hand."
    if row.push_state != PushState.FAILED:
        return None
    if row.window_ms < to_ms(now) - STRIPE_MAX_AGE_MS + STALE_MARGIN_MS:
        return "It is now too old for Stripe (35 days): bill this usage by hand."
    if row.uncertain_since is not None and row.uncertain_since < now - DEDUP_WINDOW:
        return (
            "An earlier send has an unknown outcome and Stripe no longer deduplicates it: check the meter's event "
            "summaries (reconciliation) before billing it again."
        )
    return None


def usage_rollup_retry(*, rollup_id: int, actor: Actor, now: datetime | None = None) -> UsageRollup:
    """Put a ``failed`` push back in the outbox, due at once. Idempotent: a row already back (pending, sending
    or sent) is returned as it is, unaudited."""
    now = now or timezone.now()
    with transaction.atomic():
        row = UsageRollup.objects.select_related("tenant", "sku").get(pk=rollup_id)
        if row.push_state not in NEEDS_A_PERSON:
            return row
        why = retry_refusal(row, now)
        if why is not None:
            raise Conflict("push_not_retryable", why)
        changed = UsageRollup.objects.filter(pk=row.pk, push_state=PushState.FAILED).update(
            push_state=PushState.PENDING, next_attempt_at=now, push_attempts=0, lease_until=None
        )
        if changed:
            audit_record(
                actor=actor,
                action="billing.push_retried",
                target_type="usage_rollup",
                target_id=row.pk,
                tenant=row.tenant,
                data={"identifier": row.identifier, "sku": row.sku.code, "error": row.push_error[:500]},
            )
        row.refresh_from_db()
    return row


# --- runs ------------------------------------------------------------------------------------------------------

# Stripe finalizes a month's invoices an hour after it ends; the monthly run waits a little longer.
MONTHLY_RUN_AFTER = timedelta(hours=2)


def reconciliation_run_start(
    *, month: str, tenant: Tenant | None, actor: Actor, now: datetime | None = None
) -> tuple[ReconciliationRun, bool]:
    """Start a run of the month's reconciliation (the task ``billing.tasks.reconciliation_run`` computes it after
    commit). Idempotent while one runs: the running run of the same month and tenant is returned, with False."""
    now = now or timezone.now()
    month_parse(month, now=now)  # a clear refusal before anything is written
    with transaction.atomic():
        running = ReconciliationRun.objects.filter(month=month, tenant=tenant, state=ReconciliationState.RUNNING)
        if (found := running.first()) is not None:
            return found, False
        run = ReconciliationRun.objects.create(month=month, tenant=tenant, requested_by=actor.label, created_at=now)
        audit_record(
            actor=actor,
            action="billing.reconciliation_started",
            target_type="reconciliation_run",
            target_id=run.pk,
            tenant=tenant,
            data={"month": month},
        )
        enqueue("billing.tasks.reconciliation_run", run.pk)
    return run, True


def reconciliation_run_execute(*, run_id: int) -> ReconciliationRun:
    """Compute a running run (reading Stripe, outside any transaction) and record its result once."""
    run = ReconciliationRun.objects.select_related("tenant").get(pk=run_id)
    if run.state != ReconciliationState.RUNNING:
        return run
    fields: dict[str, Any]
    try:
        report = reconciliation_month(month=run.month, tenant=run.tenant)
    except (ServiceError, stripe.StripeError) as error:
        detail = error.detail if isinstance(error, ServiceError) else str(error.user_message or error)
        fields = {"state": ReconciliationState.FAILED, "error": detail[:2000]}
    else:
        body = reconciliation_as_json(report)
        fields = {
            "state": ReconciliationState.DONE,
            "mode": report.mode,
            "is_clean": report.clean,
            "unexplained": body["unexplained"],
            "result": body,
        }
    ReconciliationRun.objects.filter(pk=run.pk, state=ReconciliationState.RUNNING).update(
        finished_at=timezone.now(), **fields
    )
    run.refresh_from_db()
    return run


def reconciliation_monthly(*, now: datetime | None = None) -> ReconciliationRun | None:
    """The beat's run: last month's reconciliation across tenants, once its invoices are final (two hours into
    the new month), once (a month with a run already, running or done, gets none)."""
    now = now or timezone.now()
    this_month = month_of(now)
    if now < this_month + MONTHLY_RUN_AFTER:
        return None
    last = month_text(this_month - timedelta(days=1))
    if ReconciliationRun.objects.filter(month=last, tenant=None).exclude(state=ReconciliationState.FAILED).exists():
        return None
    run, _ = reconciliation_run_start(month=last, tenant=None, actor=RECONCILER, now=now)
    return run


RECONCILER = Actor.system("reconciliation")
