"""Storage in the usage ledger: a volume's (or snapshot's) provisioned GB are metered like GPUs, as GB-seconds on
a storage SKU (storage kind x region), from the moment the backend holds them until their deletion begins.

The intervals are the ledger's own (``billing.services.ledger``): they are cut at hour boundaries and price changes,
rolled up hourly and sent to Stripe's meter of the SKU's price exactly as compute is. ``units_milli`` is 1000 per
GB, so a rollup's quantity is milli-GB-seconds and its price is per GB-hour.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import transaction

from billing.domain.metering import to_ms, window_of
from billing.models import Sku, StorageKind, Unit, UsageInterval
from billing.selectors import PriceBook
from billing.services.ledger import intervals_close
from provisioning.models import Region, Volume, VolumeSnapshot


def storage_sku(*, storage_kind: str, region: Region) -> Sku:
    """The storage SKU of a kind in a region, made on first use (unpriced until an operator prices it)."""
    sku = Sku.objects.filter(unit=Unit.GB, storage_kind=storage_kind, region=region).first()
    if sku is None:
        sku = Sku(unit=Unit.GB, storage_kind=storage_kind, region=region, currency=settings.LADDER_BILLING_CURRENCY)
        with transaction.atomic():
            sku.save()
    return sku


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
