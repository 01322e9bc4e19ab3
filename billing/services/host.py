"""A host's vCPUs and memory beyond the bundle in the usage ledger. Each GPU (slice, share) is sold with the bundle
of its rung (``RungFacts.host``), which its price includes; a request may ask more, and what a member takes beyond
the bundle (``node_host.host_extra``) is metered as vCPU-seconds and GiB-seconds on the region's host SKUs
(``host/vcpu/<region>``, ``host/memory/<region>``), beside its GPUs' interval: opened, cut, rolled up and sent to
Stripe exactly as compute is (``billing.services.ledger``). A request that asks beyond the bundle is placed only in
regions that price what it asks (``billing.selectors.host_priced_regions``; else 409 ``not_priced``)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from billing.domain.pricing import HOST_UNITS
from billing.models import SkuPrice
from billing.services.accounts import price_set
from billing.services.ledger import host_sku
from core.actor import Actor
from core.errors import Invalid
from provisioning.models import Region


def host_price_set(
    *, region: Region, unit: str, unit_price_per_hour: Decimal, effective_from: datetime, actor: Actor
) -> SkuPrice:
    """Schedule the price of a vCPU-hour (``vcpu``) or a GiB-hour (``memory``) beyond the bundle in ``region``
    from ``effective_from`` on (``price_set``: never in the past, audited as ``price.scheduled``)."""
    if unit not in HOST_UNITS:
        raise Invalid("validation_error", f"A host unit is {' or '.join(HOST_UNITS)}.", field="unit")
    return price_set(
        sku=host_sku(unit=unit, region=region),
        unit_price_per_hour=unit_price_per_hour,
        effective_from=effective_from,
        actor=actor,
    )
