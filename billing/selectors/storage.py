"""Reads of storage's price book: the price in force for a storage kind in a region (what a new volume or snapshot
asks before it is made: nothing is stored without a price), every storage price by region and kind, and the
operators' view of them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from billing.models import Sku, SkuPrice, StorageKind, Unit
from provisioning.models import Region


def storage_prices(*, now: datetime) -> dict[tuple[str, str], SkuPrice]:
    """The storage prices in force at ``now`` by (region code, storage kind: filesystem, block or snapshot); a
    price is per GB-hour (``provisioning.domain.volumes.HOURS_PER_MONTH`` of them make a storage month)."""
    found: dict[tuple[str, str], SkuPrice] = {}
    rows = SkuPrice.objects.filter(sku__unit=Unit.GB, effective_from__lte=now).select_related("sku__region")
    for price in rows.order_by("effective_from"):
        found[(price.sku.region.code, price.sku.storage_kind)] = price
    return found


def storage_price_at(*, region_code: str, storage_kind: str, at: datetime) -> SkuPrice | None:
    """The price per GB-hour of ``storage_kind`` in a region in effect at ``at`` (None: not priced then; a price
    that starts later does not count yet)."""
    return (
        SkuPrice.objects.filter(
            sku__unit=Unit.GB, sku__storage_kind=storage_kind, sku__region__code=region_code, effective_from__lte=at
        )
        .select_related("sku")
        .order_by("-effective_from")
        .first()
    )


def storage_sku_code(*, storage_kind: str, region_code: str) -> str:
    """The name of the SKU storage of a kind is sold as in a region, priced or not."""
    return Sku.storage_code(storage_kind, region_code)


@dataclass(frozen=True)
class StoragePriceRow:
    """A storage kind in a region as the operators' price book shows it: its SKU, the price in force (None: not
    priced, so no volume or snapshot of it is made) and the next scheduled one."""

    region: str
    storage_kind: str
    sku: str
    current: SkuPrice | None
    upcoming: SkuPrice | None


def storage_price_book(*, now: datetime) -> list[StoragePriceRow]:
    """Every region x storage kind (filesystem, block, snapshot), priced or not, with its price now and its next
    scheduled change: what is sold, and what is refused ``not_priced``, at a glance."""
    by_key: dict[tuple[str, str], list[SkuPrice]] = defaultdict(list)
    for price in SkuPrice.objects.filter(sku__unit=Unit.GB).select_related("sku__region").order_by("effective_from"):
        by_key[(price.sku.region.code, price.sku.storage_kind)].append(price)
    rows = []
    for region in Region.objects.order_by("code").values_list("code", flat=True):
        for kind in StorageKind.values:
            versions = by_key.get((region, kind), [])
            past = [p for p in versions if p.effective_from <= now]
            future = [p for p in versions if p.effective_from > now]
            rows.append(
                StoragePriceRow(
                    region,
                    kind,
                    storage_sku_code(storage_kind=kind, region_code=region),
                    past[-1] if past else None,
                    future[0] if future else None,
                )
            )
    return rows
