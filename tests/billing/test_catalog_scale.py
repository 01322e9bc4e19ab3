"""A tenant billed at more prices than one Stripe subscription holds (20 items): 60 SKUs in a month, ten of them
changing price in the middle of it, pushed to the local Stripe server through the official SDK. Stripe's finalized
invoices (computed by the server from the meter events and prices) total the ledger's invoice to the cent, on
subscriptions of at most 20 items each, all on the same calendar month, and nothing is failed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import stripe
from django.utils import timezone
from time_machine import TimeMachineFixture

from billing.domain.metering import HOUR_MS, quantity, to_ms
from billing.models import BillingAccount, PushState, Sku, SkuPrice, Unit, UsageInterval, UsageRollup
from billing.selectors import invoice_for
from billing.services import stripe_sync
from billing.services.ledger import windows_close
from billing.services.stripe_push import billing_push
from billing.services.stripe_sync import account_subscriptions, stripe_account_sync
from tenancy.models import Tenant
from tests.fakes.stripe import StripeServer
from tests.support.billing import load_fleet, place, sku

pytestmark = pytest.mark.own_price_book  # the 60 SKUs' prices are the whole catalog Stripe must hold

MONTH = datetime(2027, 3, 1, tzinfo=UTC)
NEXT = datetime(2027, 4, 1, tzinfo=UTC)
CHANGE = MONTH + timedelta(days=14, hours=6)  # ten SKUs change price here
RUNGS = ("container", "vm", "job", "serverless", "confidential_vm")
# A whole GPU and eleven MIG profiles (names only matter as SKU keys here)
UNITS = ("", "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.5gb", "2g.10gb", "3g.20gb")


def catalog() -> list[tuple[Sku, SkuPrice, SkuPrice | None]]:
    """60 SKUs, each with a price from before the month; every sixth gets a second price at ``CHANGE``. Prices
    are multiples of 0.036 an hour, so a unit-second costs a whole number of thousandths of a cent and Stripe's
    per-second price is exact: the ledger and Stripe can then agree to the cent on every line."""
    made = []
    for n, (rung, profile) in enumerate((r, p) for r in RUNGS for p in (*UNITS, "4g.20gb", "1g.12gb")):
        unit = Unit.MIG if profile else Unit.GPU
        item = sku(rung=rung, unit=unit, mig_profile=profile)
        rate = Decimal("0.036") * (50 + 7 * n)
        first = SkuPrice.objects.create(sku=item, unit_price_per_hour=rate, effective_from=MONTH - timedelta(days=40))
        second = None
        if n % 6 == 0:
            second = SkuPrice.objects.create(sku=item, unit_price_per_hour=rate * 2, effective_from=CHANGE)
        made.append((item, first, second))
    assert len(made) == 60
    return made


def usage(tenant: Tenant, made: list[tuple[Sku, SkuPrice, SkuPrice | None]]) -> None:
    """Closed pieces of running time (setup data, as the state machine would record them): on each SKU four pieces
    on days 2, 9, 16 and 23 of the month, of 1-3 units for 37 minutes 13 seconds, so the changed SKUs have usage
    at both prices."""
    allocation = place(tenant, gpus=1)
    rows = []
    for n, (item, first, second) in enumerate(made):
        for day in (1, 8, 15, 22):
            start = to_ms(MONTH + timedelta(days=day, hours=n % 20, minutes=5))
            end = start + (37 * 60 + 13) * 1000
            units = 1000 * (1 + n % 3)
            at = second if second is not None and start >= to_ms(CHANGE) else first
            window = start - start % HOUR_MS
            rows.append(
                UsageInterval(
                    tenant=tenant,
                    allocation=allocation,
                    sku=item,
                    price=at,
                    units_milli=units,
                    start_ms=start,
                    end_ms=end,
                    window_ms=window,
                    quantity_milli=quantity(units, start, end),
                )
            )
    UsageInterval.objects.bulk_create(rows)


def test_a_tenant_on_60_skus_with_price_changes_is_billed_exactly_in_stripe(
    db: None, acme: Tenant, stripe_server: StripeServer, settings: object, time_machine: TimeMachineFixture
) -> None:
    settings.LADDER_BILLING_GRACE_MINUTES = 0  # type: ignore[attr-defined]
    time_machine.move_to(MONTH + timedelta(minutes=1))
    load_fleet()
    made = catalog()
    stripe_sync.stripe_sync_catalog()
    account = stripe_account_sync(tenant=acme)  # signup: as many current prices as one subscription holds
    assert len(account_subscriptions(account)) == 1
    assert len(account.subscription_items) == 20

    usage(acme, made)
    for moment in (MONTH + timedelta(days=15, hours=12), NEXT - timedelta(minutes=5)):  # mid-month, month end
        time_machine.move_to(moment)
        windows_close(now=moment)
        report = billing_push(now=timezone.now())  # the clock ticks: rows made a moment ago are due
        assert (report.failed, report.stale, report.deferred) == (0, 0, 0), report.errors
    rollups = UsageRollup.objects.filter(tenant=acme)
    assert rollups.count() == 240
    assert set(rollups.values_list("push_state", flat=True)) == {PushState.SENT}
    assert rollups.values("price").distinct().count() == 70

    account = BillingAccount.objects.get(tenant=acme)
    shards = account_subscriptions(account)
    assert len(shards) == 4  # 70 prices: 20 + 20 + 20 + 10
    client = stripe.StripeClient("sk_test_ladder", base_addresses={"api": stripe_server.url}, max_network_retries=0)
    for shard in shards:
        items = client.v1.subscription_items.list(params={"subscription": shard, "limit": 100}).data
        assert 1 <= len(items) <= 20
    assert sorted(account.subscription_items) == sorted(SkuPrice.objects.values_list("stripe_price_id", flat=True))

    time_machine.move_to(NEXT + timedelta(hours=2))  # Stripe finalized the month's invoices an hour after its end
    invoices = list(
        client.v1.invoices.list(params={"customer": account.stripe_customer_id, "limit": 100}).auto_paging_iter()
    )
    billed = sorted(str(i.parent.subscription_details.subscription) for i in invoices)  # type: ignore[union-attr]
    assert billed == sorted(shards)  # one invoice per subscription
    (start, end), *others = {(i.period_start, i.period_end) for i in invoices}  # one period for every shard
    assert not others
    assert (MONTH.timestamp() <= start < MONTH.timestamp() + 300, end) == (True, NEXT.timestamp())
    lines = [line for i in invoices for line in i.lines.data]
    assert len(lines) == 70  # a line per price: each part of a changed SKU's usage at its own price
    ledger = invoice_for(tenant=acme, start=MONTH, end=NEXT, now=NEXT + timedelta(hours=2))
    assert ledger.total > 0
    assert sum(i.total for i in invoices) == ledger.total * 100  # to the cent
    assert sum(line.amount for line in lines) == ledger.total * 100


def test_a_price_that_can_bill_nothing_more_gives_its_item_up_before_a_new_subscription_is_opened(
    db: None, acme: Tenant, stripe_server: StripeServer, settings: object, time_machine: TimeMachineFixture
) -> None:
    settings.LADDER_BILLING_GRACE_MINUTES = 0  # type: ignore[attr-defined]
    time_machine.move_to(MONTH + timedelta(minutes=1))
    load_fleet()
    made = catalog()[:20]
    SkuPrice.objects.exclude(sku__in=[item for item, _, _ in made]).delete()
    SkuPrice.objects.filter(effective_from=CHANGE).delete()
    first = made[0][1]
    stripe_sync.stripe_sync_catalog()
    first.refresh_from_db()
    assert first.stripe_price_id
    account = stripe_account_sync(tenant=acme)
    assert account_subscriptions(account) == [account.stripe_subscription_id]  # 20 prices: one subscription, full
    # The first SKU's price changes in March; April's usage is at the new price only.
    newer = SkuPrice.objects.create(sku=first.sku, unit_price_per_hour=Decimal("7.20"), effective_from=CHANGE)
    stripe_sync.stripe_sync_catalog()
    newer.refresh_from_db()
    start = NEXT + timedelta(hours=1, minutes=5)
    allocation = place(acme, gpus=1)
    UsageInterval.objects.create(
        tenant=acme,
        allocation=allocation,
        sku=first.sku,
        price=newer,
        units_milli=1000,
        start_ms=to_ms(start),
        end_ms=to_ms(start) + 600_000,
        window_ms=to_ms(start) // HOUR_MS * HOUR_MS,
        quantity_milli=600_000,
    )
    time_machine.move_to(NEXT + timedelta(hours=3))  # March's invoice is final: the old price can bill nothing more
    windows_close(now=timezone.now())
    report = billing_push(now=timezone.now())
    assert (report.sent, report.failed) == (1, 0), report.errors

    account = BillingAccount.objects.get(tenant=acme)
    assert account_subscriptions(account) == [account.stripe_subscription_id]  # no second subscription needed
    client = stripe.StripeClient("sk_test_ladder", base_addresses={"api": stripe_server.url}, max_network_retries=0)
    items = client.v1.subscription_items.list(params={"subscription": account.stripe_subscription_id, "limit": 100})
    on_it = {item.price.id for item in items.data}
    assert len(on_it) == 20
    assert newer.stripe_price_id in on_it
    assert first.stripe_price_id not in on_it  # retired from Stripe
    assert first.stripe_price_id not in account.subscription_items
