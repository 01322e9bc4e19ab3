"""Storage in the usage ledger: a volume's (or snapshot's) provisioned GB are metered like GPUs, as GB-seconds on
a storage SKU (storage kind x region), from the moment the backend holds them until their deletion begins.

The intervals are the ledger's own (``billing.services.ledger``): they are cut at hour boundaries and price changes,
rolled up hourly and sent to Stripe's meter of the SKU's price exactly as compute is. ``units_milli`` is 1000 per
GB, so a rollup's quantity is milli-GB-seconds and its price is per GB-hour.

Operators quote a storage price per GB-month (``storage_price_set``); the price book keeps it per GB-hour
(``billing.domain.pricing.per_gb_hour``). A volume or snapshot is refused where its SKU has no price
(``lifecycle.services.volumes``, 409 ``not_priced``); storage that is metered unpriced all the same (a volume made
before its region was priced) is billed at nothing and its rollups wait, ``failed``, for a person
(docs/volumes.md, "Billing").
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.db import transaction

from billing.domain.metering import to_ms, window_of
from billing.domain.pricing import MONTH_PRICE_PLACES, per_gb_hour, per_gb_month, places
from billing.models import Sku, SkuPrice, StorageKind, Unit, UsageInterval
from billing.selectors import PriceBook
from billing.services.accounts import price_set
from billing.services.ledger import intervals_close
from core.actor import Actor
from core.errors import Invalid
from provisioning.models import Region, Volume, VolumeSnapshot


def storage_sku(*, storage_kind: str, region: Region) -> Sku:
    """The storage SKU of a kind in a region, made on first use (unpriced until an operator prices it)."""
    sku = Sku.objects.filter(unit=Unit.GB, storage_kind=storage_kind, region=region).first()
    if sku is None:
        sku = Sku(unit=Unit.GB, storage_kind=storage_kind, region=region, currency=settings.LADDER_BILLING_CURRENCY)
        with transaction.atomic():
            sku.save()
    return sku


def storage_price_set(
    *, region: Region, storage_kind: str, price_per_gb_month: Decimal, effective_from: datetime, actor: Actor
) -> SkuPrice:
    """Schedule the price of ``storage_kind`` (filesystem, block, snapshot) in ``region`` from ``effective_from``
    on, quoted per GB-month (at most six decimal places) and kept per GB-hour. A price never starts in the past
    (``price_set``, which audits it as ``price.scheduled`` with the quoted price beside the hourly one)."""
    if storage_kind not in StorageKind.values:
        raise Invalid("validation_error", f"A storage kind is {', '.join(StorageKind.values)}.", field="storage_kind")
    if price_per_gb_month < 0:
        raise Invalid("invalid_price", "A price cannot be negative.", field="per_gb_month")
    if places(price_per_gb_month) > MONTH_PRICE_PLACES:
        raise Invalid(
            "invalid_price",
            f"A price per GB-month has at most {MONTH_PRICE_PLACES} decimal places.",
            field="per_gb_month",
        )
    sku = storage_sku(storage_kind=storage_kind, region=region)
    per_hour = per_gb_hour(price_per_gb_month)
    return price_set(
        sku=sku,
        unit_price_per_hour=per_hour,
        effective_from=effective_from,
        actor=actor,
        quoted={"per_gb_month": str(per_gb_month(per_hour))},
    )


def _owner(volume: Volume | None, snapshot: VolumeSnapshot | None) -> tuple[dict[str, object], int, str, Region, int]:
    """What an interval belongs to, its tenant, storage kind, region and size."""
    if volume is not None:
        return {"volume": volume}, volume.tenant_id, volume.kind, volume.region, volume.size_gb
    if snapshot is None:
        raise ValueError("storage is metered for a volume or a snapshot")
    return {"snapshot": snapshot}, snapshot.tenant_id, StorageKind.SNAPSHOT, snapshot.volume.region, snapshot.size_gb


def storage_open(
    *, at: datetime, volume: Volume | None = None, snapshot: VolumeSnapshot | None = None
) -> UsageInterval | None:
    """The backend holds the volume (or snapshot) from ``at``: open its interval at its size (once)."""
    owner, tenant_id, kind, region, size_gb = _owner(volume, snapshot)
    if UsageInterval.objects.filter(end_ms=None, **owner).exists():
        return None
    sku = storage_sku(storage_kind=kind, region=region)
    start = to_ms(at)
    return UsageInterval.objects.create(
        tenant_id=tenant_id,
        sku=sku,
        price=PriceBook.load([sku.pk]).at(sku.pk, start),
        units_milli=1000 * size_gb,
        start_ms=start,
        window_ms=window_of(start),
        **owner,
    )


def storage_close(*, at: datetime, volume: Volume | None = None, snapshot: VolumeSnapshot | None = None) -> int:
    """Its deletion began at ``at``: close its interval; returns the milli-GB-seconds it used."""
    owner, *_ = _owner(volume, snapshot)
    return intervals_close(at=at, **owner)


def storage_rescale(*, volume: Volume, at: datetime) -> UsageInterval | None:
    """The volume grew at ``at``: its interval is cut there and one opens at the new size."""
    storage_close(volume=volume, at=at)
    return storage_open(volume=volume, at=at)
