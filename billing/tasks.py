"""Billing's Celery tasks: each takes ids or nothing, calls one service and owns its retry policy."""

from __future__ import annotations

import logging

from celery import shared_task
from django.utils import timezone

from billing.services import reconcile, stripe_push, stripe_reservations, stripe_sync
from billing.services.accounts import tenants_suspend_overdue
from tenancy.models import Tenant

log = logging.getLogger(__name__)


@shared_task
def billing_push() -> str:
    """Send due rollups; then close the subscriptions of leaving tenants whose usage has all reached Stripe, and
    bring reservations' terms to Stripe (opened when begun, closed when ended early)."""
    report = str(stripe_push.billing_push())
    closed = stripe_sync.stripe_subscriptions_close()
    reservations = stripe_reservations.stripe_reservations_sync()
    return f"{report}; subscriptions closed: {', '.join(closed) or 'none'}; {reservations}"


@shared_task(autoretry_for=(Exception,), retry_backoff=30, retry_backoff_max=3600, max_retries=10)
def stripe_reservations_sync() -> str:
    """A reservation made or ended: its term in Stripe at once, not at the next push."""
    return str(stripe_reservations.stripe_reservations_sync())


@shared_task
def billing_enforce() -> int:
    return tenants_suspend_overdue(now=timezone.now())


@shared_task(autoretry_for=(Exception,), retry_backoff=30, retry_backoff_max=3600, max_retries=10)
def stripe_account_sync(tenant_id: int) -> None:
    if stripe_sync.stripe_enabled():
        stripe_sync.stripe_account_sync(tenant=Tenant.objects.get(pk=tenant_id))


@shared_task(autoretry_for=(Exception,), retry_backoff=30, retry_backoff_max=3600, max_retries=10)
def payment_method_confirm(customer_id: str, setup_intent_id: str) -> None:
    stripe_sync.payment_method_confirm(customer_id=customer_id, setup_intent_id=setup_intent_id)


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=60, max_retries=5)
def reconciliation_run(run_id: int) -> str:
    """Compute a reconciliation run (reads the ledger and Stripe; records the result once)."""
    run = reconcile.reconciliation_run_execute(run_id=run_id)
    return f"{run}: {run.unexplained} unexplained" if run.state == "done" else f"{run}: {run.error}"


@shared_task
def reconciliation_monthly() -> str:
    """Last month's reconciliation across tenants, once its invoices are final."""
    run = reconcile.reconciliation_monthly(now=timezone.now())
    return f"started run {run.pk} for {run.month}" if run is not None else "nothing to start"
