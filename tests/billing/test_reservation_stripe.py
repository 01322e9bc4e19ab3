"""A reservation's term in Stripe (billing.services.stripe_reservations), through the official SDK and the local
Stripe server (``tests/fakes/stripe.py``): a licensed monthly price per reservation, its GPUs the quantity, billed in
advance each calendar month, prorated at both ends of the term, and credited when the term is ended early. Every
month's Stripe charge is the ledger's reservation line to the cent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from time_machine import TimeMachineFixture

from billing.domain.pricing import from_minor
from billing.selectors import invoice_for
from billing.services.stripe_reservations import stripe_reservations_sync
from lifecycle.services.capacity import reservation_create, reservation_end
from provisioning.models import GpuModel, Hall, Reservation
from provisioning.services.fleet import fleet_load
from tenancy.models import Tenant
from tests.fakes.stripe import StripeServer
from tests.support import SYSTEM
from tests.support.fleet_documents import small_fleet

START = datetime(2027, 5, 10, 6, tzinfo=UTC)  # ten days and six hours into May
END = datetime(2027, 7, 20, tzinfo=UTC)
MONTHS = [datetime(2027, m, 1, tzinfo=UTC) for m in (5, 6, 7, 8)]


@pytest.fixture
def term(db: None, acme: Tenant, stripe_server: StripeServer, settings: Any, time_machine: TimeMachineFixture) -> Any:
    """8 H100s reserved for acme from START to END at 2.00 an hour, its term opened in Stripe at START."""
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    time_machine.move_to(START, tick=False)
    fleet_load(document=small_fleet(), actor=SYSTEM)
    reservation = reservation_create(
        tenant=acme,
        gpu_model=GpuModel.objects.get(name="H100-SXM-80GB"),
        hall=Hall.objects.get(code="eu-west-1a"),
        gpus=8,
        starts_at=START,
        ends_at=END,
        price_per_gpu_hour=Decimal("2.00"),
        actor=SYSTEM,
        now=START,
    )
    report = stripe_reservations_sync(now=START)
    assert (report.opened, report.closed) == (1, 0)
    reservation.refresh_from_db()
    return reservation


def stripe_lines(server: StripeServer, reservation: Reservation) -> list[tuple[int, int, int]]:
    """``(line start, line end, amount in cents)`` of every line its subscription was invoiced, in order."""
    return [
        (line["period"]["start"], line["period"]["end"], line["amount"])
        for invoice in server.invoices.values()
        if invoice["parent"]["subscription_details"]["subscription"] == reservation.stripe_subscription_id
        for line in invoice["lines"]["data"]
    ]


def ledger_line(reservation: Reservation, month: datetime, following: datetime) -> Decimal:
    preview = invoice_for(tenant=reservation.tenant, start=month, end=following, now=following)
    (line,) = [line for line in preview.lines if line["sku"] == f"reservation/{reservation.pk}"]
    return Decimal(line["amount"])


def test_a_term_is_a_licensed_monthly_price_billed_in_advance_and_prorated(
    term: Reservation, stripe_server: StripeServer, time_machine: TimeMachineFixture
) -> None:
    subscription = stripe_server.subscriptions[term.stripe_subscription_id]
    assert subscription["cancel_at"] == int(END.timestamp())
    (item,) = [i for i in stripe_server.items.values() if i["subscription"] == subscription["id"]]
    price = stripe_server.prices[item["price"]]
    assert item["quantity"] == 8
    assert price["recurring"]["usage_type"] == "licensed"
    assert Decimal(price["unit_amount_decimal"]) == Decimal("146000")  # 2.00 x 730 hours, in cents, per GPU-month

    # At the start: May's rest, in advance; June and July at their renewals (July to the term's end); no more.
    may = stripe_lines(stripe_server, term)
    assert [(s, e) for s, e, _ in may] == [(int(START.timestamp()), int(MONTHS[1].timestamp()))]
    time_machine.move_to(MONTHS[3] + timedelta(days=2), tick=False)
    stripe_server._invoices_due()
    lines = stripe_lines(stripe_server, term)
    assert [(s, e) for s, e, _ in lines] == [
        (int(START.timestamp()), int(MONTHS[1].timestamp())),
        (int(MONTHS[1].timestamp()), int(MONTHS[2].timestamp())),
        (int(MONTHS[2].timestamp()), int(END.timestamp())),
    ]
    assert stripe_server.subscriptions[term.stripe_subscription_id]["status"] == "canceled"
    # June is a whole month: 730 GPU-hours a GPU, as any month. Each month is the ledger's line to the cent.
    assert lines[1][2] == 8 * 146000
    for (_, _, cents), month, following in zip(lines, MONTHS[:3], MONTHS[1:], strict=True):
        assert from_minor(cents, "usd") == ledger_line(term, month, following)
    assert sum(from_minor(c, "usd") for _, _, c in lines) == Decimal("27033.55")  # the whole term


def test_a_term_ended_early_is_credited_for_the_rest_of_the_month(
    term: Reservation, stripe_server: StripeServer, time_machine: TimeMachineFixture
) -> None:
    ended_at = datetime(2027, 6, 16, tzinfo=UTC)  # half of June used
    time_machine.move_to(ended_at, tick=False)
    reservation_end(reservation=term, actor=SYSTEM, now=ended_at)
    assert stripe_reservations_sync(now=ended_at).closed == 1
    assert stripe_reservations_sync(now=ended_at).closed == 0  # once
    assert stripe_server.subscriptions[term.stripe_subscription_id]["status"] == "canceled"
    lines = stripe_lines(stripe_server, term)
    june = [cents for start, _, cents in lines if start >= int(MONTHS[1].timestamp())]
    assert june == [8 * 146000, -8 * 146000 // 2]  # June in advance, then half of it given back
    # What Stripe kept for June is the ledger's June line (ended halfway) to the cent.
    assert from_minor(sum(june), "usd") == ledger_line(term, MONTHS[1], MONTHS[2])


def test_a_term_starting_later_reaches_stripe_when_it_begins(
    acme: Tenant, stripe_server: StripeServer, time_machine: TimeMachineFixture, settings: Any
) -> None:
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    time_machine.move_to(START, tick=False)
    fleet_load(document=small_fleet(), actor=SYSTEM)
    later = reservation_create(
        tenant=acme,
        gpu_model=GpuModel.objects.get(name="H100-SXM-80GB"),
        hall=Hall.objects.get(code="eu-west-1a"),
        gpus=8,
        starts_at=START + timedelta(days=3),
        ends_at=END,
        price_per_gpu_hour=Decimal("2.00"),
        actor=SYSTEM,
        now=START,
    )
    assert stripe_reservations_sync(now=START).opened == 0
    time_machine.move_to(START + timedelta(days=3, minutes=1), tick=False)
    assert stripe_reservations_sync().opened == 1
    later.refresh_from_db()
    ((start, end, _),) = stripe_lines(stripe_server, later)
    assert (start, end) == (int((START + timedelta(days=3)).timestamp()), int(MONTHS[1].timestamp()))
