"""Spot prices (docs/capacity.md): a discount the operator sets per on-demand SKU, made into the spot SKU's own
prices (its own Stripe meters and invoice lines), which follow every later on-demand price."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from billing.domain.pricing import discounted
from billing.models import Sku
from billing.services.accounts import price_set, spot_price_set
from core.errors import Invalid
from core.models import AuditEvent
from tests.support import SYSTEM
from tests.support.billing import load_fleet, price, sku

pytestmark = pytest.mark.own_price_book  # each test prices exactly what it sells


@pytest.fixture
def on_demand(db):
    load_fleet()
    price("2.40", since=timezone.now() - timedelta(days=30))
    return sku()


def test_the_spot_price_is_the_discount_off_on_demand_and_follows_it(on_demand):
    soon = timezone.now() + timedelta(minutes=5)
    first = spot_price_set(sku=on_demand, discount_pct=Decimal("60"), effective_from=soon, actor=SYSTEM)
    spot = Sku.objects.get(code="container/H100-SXM-80GB/gpu/eu-west/spot")
    assert (first.sku_id, first.unit_price_per_hour, first.discount_pct) == (spot.pk, Decimal("0.96"), Decimal("60"))
    later = soon + timedelta(days=7)
    price_set(sku=on_demand, unit_price_per_hour=Decimal("2.00"), effective_from=later, actor=SYSTEM)
    followed = spot.prices.get(effective_from=later)
    assert (followed.unit_price_per_hour, followed.discount_pct) == (Decimal("0.80"), Decimal("60"))
    scheduled = AuditEvent.objects.filter(action="price.scheduled", data__sku=spot.code)
    assert scheduled.count() == 2


def test_a_discount_set_after_a_scheduled_change_covers_it_too(on_demand):
    later = timezone.now() + timedelta(days=7)
    price_set(sku=on_demand, unit_price_per_hour=Decimal("3.00"), effective_from=later, actor=SYSTEM)
    spot_price_set(sku=on_demand, discount_pct=Decimal("25.5"), effective_from=timezone.now(), actor=SYSTEM)
    spot = Sku.objects.get(code=f"{on_demand.code}/spot")
    assert [p.unit_price_per_hour for p in spot.prices.order_by("effective_from")] == [
        Decimal("1.788"),  # 2.40 less 25.5%
        Decimal("2.235"),  # 3.00 less 25.5%
    ]


@pytest.mark.parametrize("pct", ["0", "100", "-5", "12.345"])
def test_a_discount_is_more_than_nothing_and_less_than_everything(on_demand, pct):
    with pytest.raises(Invalid) as refused:
        spot_price_set(sku=on_demand, discount_pct=Decimal(pct), effective_from=timezone.now(), actor=SYSTEM)
    assert refused.value.field == "discount_pct"


def test_spot_is_a_discount_off_an_on_demand_compute_sku_that_has_a_price(on_demand):
    spot_price_set(sku=on_demand, discount_pct=Decimal("50"), effective_from=timezone.now(), actor=SYSTEM)
    with pytest.raises(Invalid, match="on-demand compute"):
        spot_price_set(
            sku=Sku.objects.get(code=f"{on_demand.code}/spot"),
            discount_pct=Decimal("50"),
            effective_from=timezone.now(),
            actor=SYSTEM,
        )
    unpriced = sku(rung="vm")
    with pytest.raises(Invalid) as refused:
        spot_price_set(sku=unpriced, discount_pct=Decimal("50"), effective_from=timezone.now(), actor=SYSTEM)
    assert refused.value.code == "not_priced"


def test_discounted_rounds_to_the_millionth():
    assert discounted(Decimal("2.10"), Decimal("33.33")) == Decimal("1.400070")
    with pytest.raises(ValueError, match="0 to 100"):
        discounted(Decimal(1), Decimal(101))
