"""The price book as the ledger reads it: every price version of some SKUs, and the one in effect at an instant
(the metering services split usage at price changes with it; the margin measures open usage with it)."""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from billing.domain.metering import to_ms
from billing.models import SkuPrice


@dataclass(frozen=True)
class PriceBook:
    """Price versions per SKU, ordered by start (epoch ms)."""

    starts: dict[int, list[int]]
    prices: dict[int, list[SkuPrice]]

    @classmethod
    def load(cls, sku_ids: Iterable[int]) -> PriceBook:
        starts: dict[int, list[int]] = defaultdict(list)
        prices: dict[int, list[SkuPrice]] = defaultdict(list)
        for price in SkuPrice.objects.filter(sku_id__in=set(sku_ids)).order_by("sku_id", "effective_from"):
            starts[price.sku_id].append(to_ms(price.effective_from))
            prices[price.sku_id].append(price)
        return cls(starts, prices)

    def at(self, sku_id: int, ms: int) -> SkuPrice | None:
        index = bisect.bisect_right(self.starts.get(sku_id, []), ms) - 1
        return self.prices[sku_id][index] if index >= 0 else None

    def changes(self, sku_id: int, start_ms: int, end_ms: int) -> list[int]:
        return [s for s in self.starts.get(sku_id, []) if start_ms < s < end_ms]
