"""Storage meets Stripe, through the official SDK and the local Stripe server (``tests/fakes/stripe.py``): a Product,
a Billing Meter and a metered Price per storage SKU price, named in words that say GB; a volume's and a snapshot's
rollups reach the meters as GB-seconds, exactly once; and the month reconciles clean, Stripe's invoice agreeing
with the ledger's to the cent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import stripe
from django.db.models import Sum
from django.utils import timezone
from time_machine import TimeMachineFixture

from billing.domain.pricing import stripe_unit_amount
from billing.models import BillingAccount, PushState, SkuPrice, UsageRollup
from billing.selectors import invoice_for
from billing.services import stripe_sync
from billing.services.ledger import windows_close
from billing.services.reconcile import reconciliation_month
from billing.services.stripe_push import billing_push
from billing.services.stripe_sync import stripe_account_sync
from lifecycle.services.volumes import volume_create, volume_grow, volume_snapshot_create
from provisioning.domain.volumes import SnapshotState, VolumeState
from provisioning.models import Region
from provisioning.services import volumes as provisioning
from provisioning.services.volumes import snapshot_transition, volume_transition
from tenancy.models import Tenant
from tests.fakes.stripe import StripeServer
from tests.support import SYSTEM
from tests.support.billing import load_fleet, storage_price

pytestmark = pytest.mark.own_price_book  # the catalog synced to Stripe is the tests' own

MONTH = datetime(2027, 5, 1, tzinfo=UTC)
NEXT = datetime(2027, 6, 1, tzinfo=UTC)
DAY3 = MONTH + timedelta(days=3)
AFTER = NEXT + timedelta(hours=2)  # Stripe finalized May's invoice an hour after the month ended
FILESYSTEM, SNAPSHOT = "storage/filesystem/eu-west", "storage/snapshot/eu-west"


def sdk(server: StripeServer) -> stripe.StripeClient:
    return stripe.StripeClient("sk_test_ladder", base_addresses={"api": server.url}, max_network_retries=0)


@pytest.fixture
def may(db: None, acme: Tenant, stripe_server: StripeServer, settings: Any, time_machine: TimeMachineFixture) -> Any:
    """May 2027, acme subscribed from its first minute; filesystems at 0.07 and snapshots at 0.05 per GB-month in
    eu-west, in Stripe's catalog."""
    settings.LADDER_BILLING_GRACE_MINUTES = 0
    time_machine.move_to(MONTH + timedelta(minutes=1))
    load_fleet()
    storage_price("0.07", since=MONTH - timedelta(days=40))
    storage_price("0.05", kind="snapshot", since=MONTH - timedelta(days=40))
    stripe_sync.stripe_sync_catalog()
    stripe_account_sync(tenant=acme)
    return time_machine


def stored(tenant: Tenant) -> None:
    """A 2,000 GB filesystem from DAY3 01:00, snapshotted at 02:00, grown to 3,000 GB at 10:00, deleted (with its
    snapshot) at 20:00: 2,000 x 9 + 3,000 x 10 = 48,000 GB-hours, and a snapshot of 2,000 GB for 18 hours."""
    start = DAY3 + timedelta(hours=1)
    volume = volume_create(
        tenant=tenant,
        name="datasets",
        region=Region.objects.get(code="eu-west"),
        kind="filesystem",
        size_gb=2000,
        actor=SYSTEM,
        now=start,
    )
    volume_transition(volume=volume, to=VolumeState.AVAILABLE, actor=SYSTEM, at=start)
    snapshot = volume_snapshot_create(volume=volume, name="s1", actor=SYSTEM, now=start + timedelta(hours=1))
    snapshot_transition(snapshot=snapshot, to=SnapshotState.READY, actor=SYSTEM, at=start + timedelta(hours=1))
    volume = volume_grow(volume=volume, size_gb=3000, actor=SYSTEM, now=start + timedelta(hours=9))
    end = start + timedelta(hours=19)
    snapshot_transition(snapshot=snapshot, to=SnapshotState.DELETING, actor=SYSTEM, at=end)
    volume_transition(volume=volume, to=VolumeState.DELETING, actor=SYSTEM, at=end)


def test_the_catalog_names_storage_in_gb_and_prices_it_per_gb_second(may: Any, stripe_server: StripeServer) -> None:
    client = sdk(stripe_server)
    products = {p.metadata["ladder_sku"]: p for p in client.v1.products.list(params={"limit": 100}).auto_paging_iter()}
    assert products[FILESYSTEM].name == "Filesystem storage, eu-west (GB-seconds)"
    assert products[SNAPSHOT].name == "Snapshot storage, eu-west (GB-seconds)"
    assert products[FILESYSTEM]["unit_label"] == "GB-second"
    assert products[FILESYSTEM].metadata["ladder_storage_kind"] == "filesystem"
    meters = {m.event_name: m for m in client.v1.billing.meters.list(params={"limit": 100}).auto_paging_iter()}
    price = SkuPrice.objects.get(sku__code=FILESYSTEM)
    assert meters[price.event_name].display_name.startswith("Filesystem storage, eu-west (GB-seconds) from ")
    assert price.event_name.startswith("ladder.storage.filesystem.eu-west.")
    remote = client.v1.prices.retrieve(price.stripe_price_id)
    # Per GB-second, in cents: 0.07 / 730 per GB-hour is 0.0000958904, / 3,600 x 100.
    assert Decimal(str(remote.unit_amount_decimal)) == stripe_unit_amount(Decimal("0.0000958904"), "usd")
    assert Decimal(str(remote.unit_amount_decimal)) == Decimal("0.000002663622")
    assert remote.metadata is not None
    assert (remote.metadata["unit_price_per_hour"], remote.metadata["unit_price_per_gb_month"]) == (
        "0.0000958904",
        "0.070000",
    )
    account = BillingAccount.objects.get(tenant__slug="acme")
    assert price.stripe_price_id in account.subscribed_prices  # storage is on the subscription from signup


def test_storage_reaches_the_meters_as_gb_seconds_and_the_month_reconciles(
    may: Any, acme: Tenant, stripe_server: StripeServer
) -> None:
    stored(acme)
    may.move_to(DAY3 + timedelta(hours=22))
    windows_close(now=timezone.now())
    report = billing_push(now=timezone.now())
    rollups = UsageRollup.objects.filter(tenant=acme)
    assert report.failed == 0
    assert set(rollups.values_list("push_state", flat=True)) == {PushState.SENT}
    customer = BillingAccount.objects.get(tenant=acme).stripe_customer_id
    for code, gb_seconds in ((FILESYSTEM, (2000 * 9 + 3000 * 10) * 3600), (SNAPSHOT, 2000 * 18 * 3600)):
        price = SkuPrice.objects.get(sku__code=code)
        assert stripe_server.meter_total(event_name=price.event_name, customer=customer) == gb_seconds
        assert rollups.filter(sku=price.sku).aggregate(v=Sum("meter_value"))["v"] == gb_seconds
    # A repeated push sends nothing twice.
    again = billing_push(now=timezone.now())
    assert again.sent == 0

    may.move_to(AFTER)
    result = reconciliation_month(month="2027-05")
    assert result.mode == "stripe"
    assert result.clean, result.result.unexplained
    by_sku = {line.key.sku: line for line in result.result.lines}
    assert by_sku[FILESYSTEM].invoiced == by_sku[FILESYSTEM].meter == (2000 * 9 + 3000 * 10) * 3600
    # Stripe's invoice bills what the ledger's does, to the cent: 48,000 GB-hours x 0.0000958904 = 4.6027392.
    ledger = invoice_for(tenant=acme, start=MONTH, end=NEXT, now=AFTER)
    amounts = {line["sku"]: line["amount"] for line in ledger.lines}
    assert amounts == {FILESYSTEM: Decimal("4.60"), SNAPSHOT: Decimal("2.47")}  # 36,000 x 0.0000684932
    assert by_sku[FILESYSTEM].invoiced_amount == 460
    assert by_sku[SNAPSHOT].invoiced_amount == 247


def test_storage_metered_without_a_price_waits_for_a_person_and_bills_nothing(
    may: Any, acme: Tenant, stripe_server: StripeServer
) -> None:
    """Block storage is not priced in eu-west: a volume made before the rule refused it (made here below the rule,
    through provisioning alone) is metered, never billed silently."""
    start = DAY3 + timedelta(hours=1)
    volume = provisioning.volume_create(
        tenant=acme,
        name="old-disk",
        region=Region.objects.get(code="eu-west"),
        kind="block",
        size_gb=100,
        actor=SYSTEM,
        now=start,
    )
    volume_transition(volume=volume, to=VolumeState.AVAILABLE, actor=SYSTEM, at=start)
    may.move_to(start + timedelta(hours=2, minutes=30))
    windows_close(now=timezone.now())
    report = billing_push(now=timezone.now())
    rollups = UsageRollup.objects.filter(tenant=acme, sku__code="storage/block/eu-west")
    assert report.failed == rollups.count() == 2
    assert {r.push_state for r in rollups} == {PushState.FAILED}
    assert all("storage/block/eu-west had no price" in r.push_error for r in rollups)
    assert stripe_server.events() == []
    preview = invoice_for(tenant=acme, start=MONTH, end=NEXT, now=timezone.now())
    assert (preview.lines, preview.total) == ([], Decimal(0))  # usage without a price is on no invoice line
