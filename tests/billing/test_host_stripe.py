"""vCPUs and memory beyond the bundle meet Stripe, through the official SDK and the local Stripe server
(``tests/fakes/stripe.py``): a Product, a Billing Meter and a metered Price per host SKU price, named in words that say
their unit; an allocation's rollups reach the meters as vCPU-seconds and GiB-seconds, exactly once, beside its
GPU-seconds; and the month reconciles clean, Stripe's invoice agreeing with the ledger's to the cent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import stripe
from django.utils import timezone
from time_machine import TimeMachineFixture

from billing.models import BillingAccount, PushState, SkuPrice, Unit, UsageRollup
from billing.selectors import invoice_for
from billing.services import stripe_sync
from billing.services.ledger import windows_close
from billing.services.reconcile import reconciliation_month
from billing.services.stripe_push import billing_push
from billing.services.stripe_sync import stripe_account_sync
from tenancy.models import Tenant
from tests.fakes.stripe import StripeServer
from tests.support.billing import host_price, load_fleet, place, price, run, stop

pytestmark = pytest.mark.own_price_book  # the catalog synced to Stripe is the tests' own

MONTH = datetime(2027, 5, 1, tzinfo=UTC)
NEXT = datetime(2027, 6, 1, tzinfo=UTC)
DAY3 = MONTH + timedelta(days=3)
AFTER = NEXT + timedelta(hours=2)
GPU, VCPU, MEMORY = "container/H100-SXM-80GB/gpu/eu-west", "host/vcpu/eu-west", "host/memory/eu-west"


@pytest.fixture
def may(db: None, acme: Tenant, stripe_server: StripeServer, settings: Any, time_machine: TimeMachineFixture) -> Any:
    """May 2027, acme subscribed from its first minute; an H100 container GPU at 2.40, a vCPU at 0.02 and a GiB at
    0.004 an hour beyond the bundle in eu-west, in Stripe's catalog."""
    settings.LADDER_BILLING_GRACE_MINUTES = 0
    time_machine.move_to(MONTH + timedelta(minutes=1))
    load_fleet()
    since = MONTH - timedelta(days=40)
    price("2.40", since=since)
    host_price("0.02", unit=Unit.VCPU, since=since)
    host_price("0.004", unit=Unit.MEMORY, since=since)
    stripe_sync.stripe_sync_catalog()
    stripe_account_sync(tenant=acme)
    return time_machine


def test_the_catalog_names_host_skus_by_their_unit(may: Any, stripe_server: StripeServer) -> None:
    client = stripe.StripeClient("sk_test_ladder", base_addresses={"api": stripe_server.url}, max_network_retries=0)
    products = {p.metadata["ladder_sku"]: p for p in client.v1.products.list(params={"limit": 100}).auto_paging_iter()}
    assert products[VCPU].name == "vCPUs beyond the bundle, eu-west (vCPU-seconds)"
    assert products[MEMORY]["unit_label"] == "GiB-second"
    account = BillingAccount.objects.get(tenant__slug="acme")
    assert SkuPrice.objects.get(sku__code=VCPU).stripe_price_id in account.subscribed_prices


def test_beyond_the_bundle_reaches_the_meters_and_the_month_reconciles(
    may: Any, acme: Tenant, stripe_server: StripeServer
) -> None:
    # Two GPUs with 24 vCPUs and 192 GiB for 10 hours: 8 vCPUs and 64 GiB beyond the bundle.
    may.move_to(DAY3)
    allocation = place(acme, gpus=2, cpu_milli=24_000, memory_mib=192 * 1024)
    stop(run(allocation, DAY3 + timedelta(hours=1)), DAY3 + timedelta(hours=11))
    may.move_to(DAY3 + timedelta(hours=12))
    windows_close(now=timezone.now())
    report = billing_push(now=timezone.now())
    assert report.failed == 0
    rollups = UsageRollup.objects.filter(tenant=acme)
    assert set(rollups.values_list("push_state", flat=True)) == {PushState.SENT}
    customer = BillingAccount.objects.get(tenant=acme).stripe_customer_id
    for code, unit_seconds in ((GPU, 2 * 36_000), (VCPU, 8 * 36_000), (MEMORY, 64 * 36_000)):
        event = SkuPrice.objects.get(sku__code=code).event_name
        assert stripe_server.meter_total(event_name=event, customer=customer) == unit_seconds
    assert billing_push(now=timezone.now()).sent == 0  # exactly once

    may.move_to(AFTER)
    result = reconciliation_month(month="2027-05")
    assert result.clean, result.result.unexplained
    by_sku = {line.key.sku: line for line in result.result.lines}
    ledger = invoice_for(tenant=acme, start=MONTH, end=NEXT, now=AFTER)
    amounts = {line["sku"]: line["amount"] for line in ledger.lines}
    assert amounts == {GPU: Decimal("48.00"), VCPU: Decimal("1.60"), MEMORY: Decimal("2.56")}
    assert (by_sku[VCPU].invoiced_amount, by_sku[MEMORY].invoiced_amount) == (160, 256)
