"""Reconciling a month against the local Stripe server (``tests/fakes/stripe.py``, through the official SDK):
``manage.py billing_reconcile`` reports a clean month clean (exit 0), finds each injected cause (a push still
pending, a push Stripe refused with its message, an adjustment that reached Stripe after the month's invoice, the
carry of fractional shares) and calls a real discrepancy (an event removed at Stripe) unexplained (exit 1)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from time_machine import TimeMachineFixture

from billing.models import PushState, UsageRollup
from billing.services import stripe_sync
from billing.services.ledger import windows_close
from billing.services.reconcile import (
    reconciliation_month,
    reconciliation_monthly,
    reconciliation_run_start,
    usage_rollup_retry,
)
from billing.services.stripe_push import PushReport, billing_push
from billing.services.stripe_sync import stripe_account_sync
from core.models import AuditEvent
from provisioning.domain.states import AllocationState as S
from provisioning.services.transitions import allocation_transition
from tenancy.models import Tenant
from tests.fakes.stripe import StripeServer
from tests.support import SYSTEM
from tests.support.billing import load_fleet, place, price, run, stop

pytestmark = pytest.mark.own_price_book  # May's price book is the whole catalog in Stripe

MONTH = datetime(2027, 5, 1, tzinfo=UTC)
NEXT = datetime(2027, 6, 1, tzinfo=UTC)
DAY3 = MONTH + timedelta(days=3)
AFTER = NEXT + timedelta(hours=2)  # Stripe finalized May's invoice an hour after the month ended


@pytest.fixture
def may(db: None, acme: Tenant, stripe_server: StripeServer, settings: Any, time_machine: TimeMachineFixture) -> Any:
    """May 2027 with acme subscribed from its first minute: H100s in containers at 3.60 an hour, serverless at
    2.50."""
    settings.LADDER_BILLING_GRACE_MINUTES = 0
    time_machine.move_to(MONTH + timedelta(minutes=1))
    load_fleet()
    price("3.60", since=MONTH - timedelta(days=40))
    price("2.50", since=MONTH - timedelta(days=40), rung="serverless")
    stripe_sync.stripe_sync_catalog()
    stripe_account_sync(tenant=acme)
    return time_machine


def use(tenant: Tenant, start: datetime, duration: timedelta, **spec: Any) -> None:
    allocation = place(tenant, **spec)
    allocation.refresh_from_db()
    if allocation.state == S.PLACED:
        allocation = run(allocation, start)
    else:
        allocation_transition(allocation=allocation, to=S.RUNNING, actor=SYSTEM, at=start)
    stop(allocation, start + duration)


def close_and_push(clock: TimeMachineFixture, at: datetime) -> PushReport:
    clock.move_to(at)
    windows_close(now=timezone.now())
    return billing_push(now=timezone.now())


def reconcile(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("billing_reconcile", *args, stdout=out)
    except CommandError as error:
        return error.returncode, out.getvalue() + str(error)
    return 0, out.getvalue()


def month_of_usage(clock: TimeMachineFixture, tenant: Tenant) -> None:
    """Whole GPUs for 2 h 0.4 s, and a third of a GPU (time-sliced) for 80 min 0.9 s: its milli-unit-seconds
    leave a remainder the pusher carries, so Stripe's whole unit-seconds fall short of the ledger by a fraction."""
    clock.move_to(DAY3 + timedelta(hours=5))
    use(tenant, DAY3 + timedelta(hours=1, minutes=7), timedelta(hours=2, milliseconds=400), gpus=2)
    third = {"rung": "serverless", "share_mode": "time_slicing", "share_milli": 333}
    use(tenant, DAY3 + timedelta(hours=1), timedelta(minutes=80, milliseconds=900), **third)


def test_a_clean_month_reports_clean(may, acme):
    month_of_usage(may, acme)
    report = close_and_push(may, DAY3 + timedelta(hours=5))
    assert (report.sent, report.failed) == (UsageRollup.objects.count(), 0)
    may.move_to(AFTER)

    code, out = reconcile("--month", "2027-05")
    assert code == 0, out
    assert "0 unexplained" in out
    result = reconciliation_month(month="2027-05")
    assert result.mode == "stripe"
    assert result.clean
    assert {d.cause.value for d in result.result.differences} <= {"rounding_carry"}
    assert any(d.cause.value == "rounding_carry" for d in result.result.differences)  # the third of a GPU
    line = result.result.lines[0]
    assert line.invoiced == line.meter == line.sent > 0

    code, out = reconcile("--month", "2027-05", "--tenant", "acme", "--json")
    body = json.loads(out)
    assert (code, body["clean"], body["unexplained"], body["mode"]) == (0, True, 0, "stripe")
    assert body["lines"][0]["tenant"] == "acme"


def test_a_pending_push_is_explained(may, acme, stripe_server):
    month_of_usage(may, acme)
    stripe_server.down = True  # Stripe is out when the month's usage is pushed, and the backlog waits
    report = close_and_push(may, DAY3 + timedelta(hours=5))
    assert report.deferred > 0
    may.move_to(AFTER)
    code, out = reconcile("--month", "2027-05")
    assert (code, "Stripe could not be read for acme" in out) == (2, True)  # still out: said, not guessed

    stripe_server.down = False  # Stripe is back; the backlog is not pushed yet
    code, out = reconcile("--month", "2027-05")
    assert code == 0, out
    assert "pending_push" in out
    result = reconciliation_month(month="2027-05")
    assert {d.cause.value for d in result.result.differences} >= {"pending_push"}
    assert result.clean


def test_a_failed_push_shows_stripes_message_and_a_retry_sends_it(may, acme, stripe_server):
    may.move_to(DAY3 + timedelta(hours=5))
    use(acme, DAY3 + timedelta(hours=1), timedelta(minutes=30), gpus=1)
    stripe_server.fail_next = [400]  # Stripe refuses the one event
    report = close_and_push(may, DAY3 + timedelta(hours=5))
    assert report.failed == 1
    may.move_to(AFTER)

    code, out = reconcile("--month", "2027-05")
    assert code == 0, out
    assert "failed_push" in out
    assert "Injected failure 400" in out  # Stripe's message, for the person who looks
    failed = UsageRollup.objects.get()
    assert failed.push_state == PushState.FAILED

    # A person retries it: back in the outbox, audited; Stripe now has it, after the month's invoice.
    finance_actor = SYSTEM
    usage_rollup_retry(rollup_id=failed.pk, actor=finance_actor)
    usage_rollup_retry(rollup_id=failed.pk, actor=finance_actor)  # idempotent: once is enough
    assert AuditEvent.objects.filter(action="billing.push_retried").count() == 1
    assert billing_push(now=timezone.now()).sent == 1
    result = reconciliation_month(month="2027-05")
    assert result.clean
    assert [d.cause.value for d in result.result.differences] == ["late_adjustment"]  # billed on June's invoice


def test_a_late_adjustment_after_the_invoice_is_explained(may, acme):
    may.move_to(DAY3 + timedelta(hours=5))
    use(acme, DAY3 + timedelta(hours=1), timedelta(minutes=30), gpus=1)
    close_and_push(may, DAY3 + timedelta(hours=5))
    may.move_to(AFTER)
    # A provider reports late a piece of the same hour: the window already has its rollup, so an adjustment.
    use(acme, DAY3 + timedelta(hours=1, minutes=40), timedelta(minutes=10), gpus=1)
    windows_close(now=timezone.now())
    assert billing_push(now=timezone.now()).sent == 1
    assert UsageRollup.objects.filter(seq=1).exists()

    code, out = reconcile("--month", "2027-05")
    assert code == 0, out
    result = reconciliation_month(month="2027-05")
    late = [d for d in result.result.differences if d.cause.value == "late_adjustment"]
    assert [d.quantity for d in late] == [600]  # 10 GPU-minutes, in the meter, not on May's invoice
    assert result.clean


def test_an_event_removed_at_stripe_is_unexplained(may, acme, stripe_server):
    month_of_usage(may, acme)
    close_and_push(may, DAY3 + timedelta(hours=5))
    sent = UsageRollup.objects.filter(push_state=PushState.SENT, meter_value__gt=0).order_by("pk").first()
    assert sent is not None
    stripe_server.event_alter(sent.identifier)  # gone from Stripe, though Stripe said it took it
    may.move_to(AFTER)

    code, out = reconcile("--month", "2027-05")
    assert code == 1
    assert "UNEXPLAINED" in out
    assert "the outbox sent" in out
    assert "1 unexplained differences" in out


def test_ledger_only_mode_says_so(db, acme, settings, time_machine):
    settings.STRIPE_API_KEY = ""
    settings.LADDER_BILLING_GRACE_MINUTES = 0
    time_machine.move_to(DAY3 + timedelta(hours=5))
    load_fleet()
    price("3.60", since=MONTH - timedelta(days=40))
    use(acme, DAY3 + timedelta(hours=1), timedelta(minutes=30, milliseconds=500), gpus=1)
    windows_close(now=timezone.now())

    code, out = reconcile("--month", "2027-05")
    assert code == 0, out
    assert "ledger_only" in out
    assert "compared with the outbox only" in out
    assert "pending_push" in out  # nothing is sent without Stripe: the rows wait


@pytest.mark.parametrize(
    ("month", "message"),
    [("2027-13", "is not a month"), ("May 2027", "is not a month"), ("2099-01", "has not begun"), ("", "not a month")],
)
def test_a_bad_month_is_refused_readably(db, month, message):
    code, out = reconcile("--month", month)
    assert code == 2
    assert message in out


def test_an_unknown_tenant_is_refused(db):
    code, out = reconcile("--month", "2026-01", "--tenant", "nobody")
    assert (code, "No tenant 'nobody'" in out) == (2, True)


def test_the_monthly_run_reconciles_last_month_once_final(may, acme, django_capture_on_commit_callbacks):
    month_of_usage(may, acme)
    close_and_push(may, DAY3 + timedelta(hours=5))
    may.move_to(NEXT + timedelta(minutes=30))
    assert reconciliation_monthly(now=timezone.now()) is None  # May's invoices are not final yet

    may.move_to(AFTER)
    with django_capture_on_commit_callbacks(execute=True):  # the task runs inline after the commit
        run = reconciliation_monthly(now=timezone.now())
    assert run is not None
    run.refresh_from_db()
    assert (run.month, run.state, run.mode, run.is_clean, run.unexplained) == ("2027-05", "done", "stripe", True, 0)
    assert run.result["lines"]
    assert reconciliation_monthly(now=timezone.now()) is None  # once a month


def test_a_run_that_cannot_read_stripe_fails_with_the_reason(
    may, acme, stripe_server, django_capture_on_commit_callbacks
):
    may.move_to(AFTER)
    stripe_server.down = True
    with django_capture_on_commit_callbacks(execute=True):
        run, started = reconciliation_run_start(month="2027-05", tenant=acme, actor=SYSTEM)
    assert started
    run.refresh_from_db()
    assert run.state == "failed"
    assert "Stripe could not be read" in run.error
