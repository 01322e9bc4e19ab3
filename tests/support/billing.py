"""Helpers for billing tests: a priced fleet, and allocations driven through their lifecycle at given times
(the ledger's clock is injectable: ``allocation_transition(at=...)``, ``windows_close(now=...)``).

Nothing is placed without a price, so the suite's fleets come priced: ``tests/conftest.py`` prices every shape of
each pool (GPU model x region) a test's fleet offers as its first node is saved (``price_pool``: the default price
book, in force since ``PRICE_BOOK_SINCE``), and every storage kind of each region as the region is saved
(``price_storage``: nothing is stored without a price either). A test that keeps a price book of its own (the price
list, the Stripe catalog, ``seed_demo``'s) is marked ``own_price_book`` and prices what it places itself."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings

from billing.domain.pricing import per_gb_hour
from billing.models import Sku, SkuPrice, StorageKind, Unit
from billing.selectors import sku_shapes
from provisioning.domain.capacity_classes import CapacityClass
from provisioning.domain.states import AllocationState as S
from provisioning.models import Allocation, GpuModel, Region
from provisioning.services.fleet import fleet_load
from provisioning.services.placing import AllocationSpec, allocation_request
from provisioning.services.transitions import allocation_transition
from tests.support import SYSTEM
from tests.support.fleet_documents import small_fleet

H100 = "H100-SXM-80GB"
# An hour boundary well in the past, so every test time is "past" for Stripe-less checks and prices.
BASE = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


# The default price book's start: before any instant a test uses, on any clock.
PRICE_BOOK_SINCE = datetime(2000, 1, 1, tzinfo=UTC)
DEFAULT_PRICE = Decimal("1.00")  # per unit-hour, every shape
DEFAULT_SPOT_DISCOUNT = Decimal("60.00")  # percent off on demand
DEFAULT_SPOT_PRICE = Decimal("0.40")
DEFAULT_STORAGE_PER_GB_MONTH = Decimal("0.10")  # every storage kind: per_gb_hour() of it per GB-hour


def price_pool(model: GpuModel, region: Region) -> int:
    """Price every shape a pool sells (``billing.selectors.sku_shapes``) that has no price yet, at ``DEFAULT_PRICE``
    on demand and ``DEFAULT_SPOT_PRICE`` as spot (``DEFAULT_SPOT_DISCOUNT`` off), from ``PRICE_BOOK_SINCE``; returns
    the prices made. A handful of statements, however many shapes."""
    shapes = sku_shapes(model)
    made = 0
    for klass, price, discount in (
        (CapacityClass.ON_DEMAND, DEFAULT_PRICE, None),
        (CapacityClass.SPOT, DEFAULT_SPOT_PRICE, DEFAULT_SPOT_DISCOUNT),
    ):
        skus = Sku.objects.filter(gpu_model=model, region=region, capacity_class=klass)
        have = set(skus.values_list("rung", "unit", "mig_profile"))
        Sku.objects.bulk_create(
            Sku(
                code=Sku.make_code(rung, model.name, unit, profile, region.code, klass),
                rung=rung,
                gpu_model=model,
                unit=unit,
                mig_profile=profile,
                region=region,
                capacity_class=klass,
                currency=settings.LADDER_BILLING_CURRENCY,
            )
            for rung, unit, profile in shapes
            if (rung, unit, profile) not in have
        )
        wanted = set(shapes)
        unpriced = [sku for sku in skus.filter(prices__isnull=True) if (sku.rung, sku.unit, sku.mig_profile) in wanted]
        SkuPrice.objects.bulk_create(
            SkuPrice(sku=sku, unit_price_per_hour=price, effective_from=PRICE_BOOK_SINCE, discount_pct=discount)
            for sku in unpriced
        )
        made += len(unpriced)
    return made


def price_storage(region: Region, per_gb_month: Decimal = DEFAULT_STORAGE_PER_GB_MONTH) -> int:
    """Price every storage kind (filesystem, block, snapshot) of a region that has no price yet, per GB-month, from
    ``PRICE_BOOK_SINCE``; returns the prices made."""
    made = 0
    for kind in StorageKind.values:
        found, _ = Sku.objects.get_or_create(
            unit=Unit.GB,
            storage_kind=kind,
            region=region,
            defaults={"code": Sku.storage_code(kind, region.code), "currency": settings.LADDER_BILLING_CURRENCY},
        )
        if not found.prices.exists():
            SkuPrice.objects.create(
                sku=found, unit_price_per_hour=per_gb_hour(per_gb_month), effective_from=PRICE_BOOK_SINCE
            )
            made += 1
    return made


def storage_price(
    per_gb_month: str, *, kind: str = "filesystem", region: str = "eu-west", since: datetime = BASE - timedelta(days=60)
) -> SkuPrice:
    """A storage price quoted per GB-month, as setup data (the service refuses to backdate prices)."""
    found, _ = Sku.objects.get_or_create(
        unit=Unit.GB,
        storage_kind=kind,
        region=Region.objects.get(code=region),
        defaults={"code": Sku.storage_code(kind, region), "currency": settings.LADDER_BILLING_CURRENCY},
    )
    return SkuPrice.objects.create(
        sku=found, unit_price_per_hour=per_gb_hour(Decimal(per_gb_month)), effective_from=since
    )


def host_price(
    per_hour: str, *, unit: str = Unit.VCPU, region: str = "eu-west", since: datetime = BASE - timedelta(days=60)
) -> SkuPrice:
    """A price per vCPU-hour (``unit`` vcpu) or GiB-hour (memory) beyond the bundle, as setup data."""
    found, _ = Sku.objects.get_or_create(
        unit=unit,
        region=Region.objects.get(code=region),
        defaults={"code": Sku.host_code(unit, region), "currency": settings.LADDER_BILLING_CURRENCY},
    )
    return SkuPrice.objects.create(sku=found, unit_price_per_hour=Decimal(per_hour), effective_from=since)


def at(minutes: float = 0, seconds: float = 0) -> datetime:
    return BASE + timedelta(minutes=minutes, seconds=seconds)


def load_fleet() -> None:
    fleet_load(document=small_fleet(), actor=SYSTEM)


def sku(
    rung: str = "container",
    model: str = H100,
    unit: str = Unit.GPU,
    mig_profile: str = "",
    region: str = "eu-west",
    capacity_class: str = CapacityClass.ON_DEMAND,
):
    found, _ = Sku.objects.get_or_create(
        rung=rung,
        gpu_model=GpuModel.objects.get(name=model),
        unit=unit,
        mig_profile=mig_profile,
        region=Region.objects.get(code=region),
        capacity_class=capacity_class,
    )
    return found


def price(per_hour: str, *, since: datetime = BASE - timedelta(days=60), **sku_args: Any) -> SkuPrice:
    """A price row as setup data (the service refuses to backdate prices; tests need a past price book)."""
    return SkuPrice.objects.create(sku=sku(**sku_args), unit_price_per_hour=Decimal(per_hour), effective_from=since)


def place(tenant: Any, *, rung: str = "container", gpus: int = 0, mig_profile: str | None = None, **extra: Any):
    spec = AllocationSpec(rung=rung, gpu_models=(H100,), gpus=gpus, mig_profile=mig_profile, **extra)
    return allocation_request(tenant=tenant, name="work", spec=spec, actor=SYSTEM)


def run(allocation: Allocation, start: datetime) -> Allocation:
    """placed -> provisioning (a minute before) -> running at ``start``."""
    allocation_transition(allocation=allocation, to=S.PROVISIONING, actor=SYSTEM, at=start - timedelta(minutes=1))
    allocation_transition(allocation=allocation, to=S.RUNNING, actor=SYSTEM, at=start)
    allocation.refresh_from_db()
    return allocation


def stop(allocation: Allocation, end: datetime) -> Allocation:
    allocation_transition(allocation=allocation, to=S.STOPPING, actor=SYSTEM, at=end)
    allocation_transition(allocation=allocation, to=S.STOPPED, actor=SYSTEM, at=end + timedelta(seconds=5))
    allocation.refresh_from_db()
    return allocation
