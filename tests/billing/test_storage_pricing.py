"""Storage prices: quoted per GB-month, kept per GB-hour to ten places so a storage month at the kept price comes back
to the quoted one to the cent for any volume size (``billing.domain.pricing``); the service that schedules them
(``storage_price_set``, audited with the quoted price) and its command."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from billing.domain.metering import HOUR_MS
from billing.domain.pricing import amount, per_gb_hour, per_gb_month, price_shown, round_money
from billing.models import Sku, SkuPrice
from billing.services.accounts import price_set
from billing.services.storage import storage_price_set
from core.errors import Conflict, Invalid
from core.models import AuditEvent
from provisioning.domain.volumes import HOURS_PER_MONTH, MAX_GB, MIN_GB
from provisioning.models import Region
from tests.support import SYSTEM
from tests.support.billing import load_fleet

pytestmark = pytest.mark.own_price_book  # each test prices exactly what it sells

D = Decimal


def month_of_storage(size_gb: int, per_hour: Decimal) -> Decimal:
    """What a volume of ``size_gb`` costs for a storage month at ``per_hour`` per GB-hour, as the ledger bills it:
    milli-GB-seconds priced exactly, rounded once, like an invoice line."""
    quantity_milli = 1000 * size_gb * HOURS_PER_MONTH * HOUR_MS // 1000
    return round_money(amount(quantity_milli, per_hour), "usd")


# --- the arithmetic ------------------------------------------------------------------------------------------------


def test_seven_cents_a_gb_month_is_kept_per_gb_hour_and_comes_back_to_the_cent():
    per_hour = per_gb_hour(D("0.07"))
    assert per_hour == D("0.0000958904")  # 0.07 / 730, to ten places
    assert per_gb_month(per_hour) == D("0.070000")
    assert price_shown(per_hour) == D("0.0000958904")
    for size in (1, 500, 1000, 10_000, MAX_GB):
        assert month_of_storage(size, per_hour) == D("0.07") * size, size
    # Six places, as compute prices are kept, would not do: a 1 TB volume's month would bill 70.08.
    assert month_of_storage(1000, per_hour.quantize(D("0.000001"))) == D("70.08")


@given(
    st.integers(min_value=0, max_value=100_000).map(lambda cents: D(cents).scaleb(-2)),
    st.integers(min_value=MIN_GB, max_value=MAX_GB),
)
def test_any_price_in_cents_comes_back_to_the_cent_for_any_volume(per_month: Decimal, size_gb: int):
    per_hour = per_gb_hour(per_month)
    assert per_gb_month(per_hour) == per_month
    assert month_of_storage(size_gb, per_hour) == per_month * size_gb


@given(
    st.integers(min_value=0, max_value=10**9).map(lambda millionths: D(millionths).scaleb(-6)),
    st.integers(min_value=MIN_GB, max_value=MAX_GB),
)
def test_any_quoted_price_stays_within_half_a_cent_over_a_month(per_month: Decimal, size_gb: int):
    per_hour = per_gb_hour(per_month)
    assert per_gb_month(per_hour) == per_month  # six places as quoted come back exactly
    exact = amount(1000 * size_gb * HOURS_PER_MONTH * 3600, per_hour)
    assert abs(exact - per_month * size_gb) < D("0.004")


def test_compute_prices_are_shown_to_six_places_as_always():
    assert str(price_shown(D("2.4900000000"))) == "2.490000"
    assert str(price_shown(D("0.0000958904"))) == "0.0000958904"


# --- scheduling a price --------------------------------------------------------------------------------------------


def test_a_storage_price_is_scheduled_per_gb_month_and_audited(db):
    load_fleet()
    region = Region.objects.get(code="eu-west")
    start = timezone.now() + timedelta(hours=1)
    price = storage_price_set(
        region=region, storage_kind="filesystem", price_per_gb_month=D("0.07"), effective_from=start, actor=SYSTEM
    )
    assert price.sku.code == "storage/filesystem/eu-west"
    assert (price.sku.unit, price.sku.storage_kind, price.sku.rung, price.sku.gpu_model) == (
        "gb",
        "filesystem",
        "",
        None,
    )
    stored = SkuPrice.objects.get(pk=price.pk)
    assert stored.unit_price_per_hour == D("0.0000958904")  # ten places survive the database
    assert stored.per_gb_month == D("0.070000")
    event = AuditEvent.objects.get(action="price.scheduled", target_id=str(price.sku.pk))
    assert event.data["per_gb_month"] == "0.070000"
    assert event.data["unit_price_per_hour"] == "0.0000958904"
    assert event.data["sku"] == "storage/filesystem/eu-west"

    # A second kind in the same region is a SKU of its own; the same kind again is a new price of the same SKU.
    block = storage_price_set(
        region=region, storage_kind="block", price_per_gb_month=D("0.10"), effective_from=start, actor=SYSTEM
    )
    assert block.sku.code == "storage/block/eu-west"
    later = storage_price_set(
        region=region,
        storage_kind="filesystem",
        price_per_gb_month=D("0.08"),
        effective_from=start + timedelta(days=30),
        actor=SYSTEM,
    )
    assert later.sku_id == price.sku_id
    assert Sku.objects.filter(unit="gb").count() == 2


@pytest.mark.parametrize(
    ("kind", "per_month", "start", "code", "field"),
    [
        ("tape", "0.07", timedelta(0), "validation_error", "storage_kind"),
        ("filesystem", "-0.01", timedelta(0), "invalid_price", "per_gb_month"),
        ("filesystem", "0.0700001", timedelta(0), "invalid_price", "per_gb_month"),
        ("filesystem", "0.07", timedelta(days=-1), "price_in_past", "effective_from"),
    ],
)
def test_a_bad_storage_price_is_refused_naming_the_field(db, kind, per_month, start, code, field):
    load_fleet()
    with pytest.raises(Invalid) as refused:
        storage_price_set(
            region=Region.objects.get(code="eu-west"),
            storage_kind=kind,
            price_per_gb_month=D(per_month),
            effective_from=timezone.now() + start,
            actor=SYSTEM,
        )
    assert (refused.value.code, refused.value.field) == (code, field)
    assert not SkuPrice.objects.exists()


def test_two_prices_at_one_moment_conflict(db):
    load_fleet()
    region, start = Region.objects.get(code="eu-west"), timezone.now() + timedelta(hours=1)
    storage_price_set(
        region=region, storage_kind="block", price_per_gb_month=D("0.10"), effective_from=start, actor=SYSTEM
    )
    with pytest.raises(Conflict) as refused:
        storage_price_set(
            region=region, storage_kind="block", price_per_gb_month=D("0.12"), effective_from=start, actor=SYSTEM
        )
    assert refused.value.code == "price_exists"


def test_a_price_per_hour_with_more_than_ten_places_is_refused(db):
    load_fleet()
    price = storage_price_set(
        region=Region.objects.get(code="eu-west"),
        storage_kind="snapshot",
        price_per_gb_month=D("0.05"),
        effective_from=timezone.now() + timedelta(hours=1),
        actor=SYSTEM,
    )
    with pytest.raises(Invalid) as refused:
        price_set(
            sku=price.sku,
            unit_price_per_hour=D("0.00000000001"),
            effective_from=timezone.now() + timedelta(hours=2),
            actor=SYSTEM,
        )
    assert (refused.value.code, refused.value.field) == ("invalid_price", "unit_price_per_hour")


# --- the command -------------------------------------------------------------------------------------------------


def test_the_command_schedules_a_price_and_names_a_bad_argument(db):
    load_fleet()
    out = StringIO()
    call_command("storage_price_set", "--region", "us-east", "--kind", "block", "--per-gb-month", "0.10", stdout=out)
    assert out.getvalue().startswith("storage/block/us-east: 0.100000 usd per GB-month (0.0001369863 per GB-hour)")
    assert SkuPrice.objects.get(sku__code="storage/block/us-east").per_gb_month == D("0.100000")
    for argv, message in [
        (["--region", "mars-1", "--kind", "block", "--per-gb-month", "0.1"], "--region: there is no region"),
        (["--region", "us-east", "--kind", "block", "--per-gb-month", "lots"], "--per-gb-month: 'lots' is not"),
        (["--region", "us-east", "--kind", "block", "--per-gb-month", "-1"], "--per-gb-month: A price cannot"),
        (["--region", "us-east", "--kind", "block", "--per-gb-month", "0.1", "--from", "soon"], "--from: 'soon'"),
    ]:
        with pytest.raises(CommandError) as refused:
            call_command("storage_price_set", *argv, stdout=StringIO())
        assert str(refused.value).startswith(message), refused.value


# --- the admin -----------------------------------------------------------------------------------------------------


def test_the_admin_shows_a_storage_price_per_gb_month_beside_the_price_it_keeps(db, admin_client):
    load_fleet()
    price = storage_price_set(
        region=Region.objects.get(code="eu-west"),
        storage_kind="filesystem",
        price_per_gb_month=D("0.07"),
        effective_from=timezone.now() + timedelta(hours=1),
        actor=SYSTEM,
    )
    page = admin_client.get(f"/admin/billing/sku/{price.sku_id}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "0.0000958904" in text
    assert "0.070000" in text
    listed = admin_client.get("/admin/billing/sku/", {"storage_kind": "filesystem"}).content.decode()
    assert "storage/filesystem/eu-west" in listed
