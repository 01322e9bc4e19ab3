"""A reservation's term in FOCUS 1.2 (docs/capacity.md, docs/finance.md "FOCUS"): for each calendar month the term
meets, three rows beside the usage rows, free of the ORM.

- **Purchase** (``ChargeCategory`` Purchase, ``ChargeFrequency`` Recurring): what the month's invoice bills for the
  term, in advance (``BilledCost``: the invoice line ``reservation/<id>``, exact before its one rounding;
  ``PricingQuantity``: its GPU-hours at 730 a GPU for a whole month); ``EffectiveCost`` 0, since the purchase
  covers the month's reserved work, whose rows carry it.
- **Used** (Usage, ``CommitmentDiscountStatus`` Used): the GPU-hours the reservation's work ran in the month, and
  their share of the month's charge as ``EffectiveCost`` (amortized: the charge x used / eligible).
- **Unused** (Usage, Unused): the GPU-hours it did not use (to come, for a month not over) and the rest of the
  charge.

The two usage rows' ``EffectiveCost`` add up to the purchase's ``BilledCost`` exactly, as FOCUS requires of a
commitment; their ``BilledCost`` is 0 (the purchase bills). The reserved work's own hourly rows are priced
``Committed`` at nothing (``billing.domain.focus.PRICING_CATEGORIES``). All three rows name the commitment:
``CommitmentDiscountId`` ``reservation/<id>`` (as the invoice line), type ``Reservation``, category ``Usage``, unit
``GPU-Hours``; ``CommitmentDiscountQuantity`` is the GPU-hours eligible in the month (the real time the term covers,
on the purchase), used, or unused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from billing.domain.focus import (
    COLUMN_NAMES,
    COST_PLACES,
    PROVIDER,
    QUANTITY_PLACES,
    SERVICE_CATEGORY,
    Tenant,
    cost_units,
    csv_cell,
    decimal,
    iso,
    month_bounds,
    price_units,
    quantity_units,
)
from provisioning.domain.volumes import HOURS_PER_MONTH

SERVICE = ("Ladder Reserved Capacity", "Other (Compute)")
UNIT = "GPU-Hours"


@dataclass(frozen=True)
class CommitmentMonth:
    """A reservation's term in one calendar month: ``start_ms``..``end_ms`` the part of the month it covers;
    quantities in milli-GPU-seconds (``billed``: at 730 GPU-hours a GPU-month; ``committed``: the real time covered;
    ``used``: its reserved work's, up to the export's end)."""

    tenant: Tenant
    reservation: int
    gpus: int
    gpu_model: str
    hall: str
    region_code: str
    region_name: str
    currency: str
    price_per_hour: Decimal
    term_start_ms: int
    term_end_ms: int
    start_ms: int
    end_ms: int
    billed_milli: int
    committed_milli: int
    used_milli: int

    @property
    def id(self) -> str:
        return f"reservation/{self.reservation}"


def commitment_rows(month: CommitmentMonth) -> list[tuple[Any, ...]]:
    """The month's purchase, used and unused rows, each in ``COLUMN_NAMES`` order."""
    price = month.price_per_hour
    charge = cost_units(month.billed_milli, price_units(price))  # units of 1e-16, as every row's cost
    used_milli = min(month.used_milli, month.committed_milli)
    used = charge * used_milli // month.committed_milli if month.committed_milli else 0
    unused_milli = month.committed_milli - used_milli
    month_start, month_end = month_bounds(month.start_ms)
    hours = (iso(month.start_ms), iso(month.end_ms))
    name = (
        f"{month.gpus} x {month.gpu_model} in {month.hall}, {iso(month.term_start_ms)[:10]} to "
        f"{iso(month.term_end_ms)[:10]}"
    )
    details = {"x_Unit": "gpu", "x_PricePerUnitHour": str(price), "x_HoursPerMonth": HOURS_PER_MONTH}
    common: dict[str, Any] = {
        "ChargePeriodStart": hours[0],
        "ChargePeriodEnd": hours[1],
        "ChargeClass": None,
        "x_GoodputSecondsLost": Decimal("0.000"),
        "x_LateAdjustment": 0,
        "ListUnitPrice": price,
        "ContractedUnitPrice": price,
        "PricingCurrency": month.currency.upper(),
        "PricingCurrencyListUnitPrice": price,
        "PricingCurrencyContractedUnitPrice": price,
        "PricingUnit": UNIT,
        "CommitmentDiscountId": month.id,
        "CommitmentDiscountName": name,
        "CommitmentDiscountCategory": "Usage",
        "CommitmentDiscountType": "Reservation",
        "CommitmentDiscountUnit": UNIT,
        "BillingCurrency": month.currency.upper(),
        "BillingPeriodStart": iso(month_start),
        "BillingPeriodEnd": iso(month_end),
        "ChargeFrequency": "Recurring",
        "BillingAccountId": f"ladder-billing-{month.tenant.id}",
        "BillingAccountName": month.tenant.name,
        "SubAccountId": month.tenant.slug,
        "SubAccountName": month.tenant.name,
        "ProviderName": PROVIDER,
        "PublisherName": PROVIDER,
        "InvoiceIssuerName": PROVIDER,
        "RegionId": month.region_code,
        "RegionName": month.region_name,
        "AvailabilityZone": month.hall,
        "ResourceId": None,
        "ResourceName": None,
        "ResourceType": None,
        "ServiceName": SERVICE[0],
        "ServiceCategory": SERVICE_CATEGORY,
        "ServiceSubcategory": SERVICE[1],
        "InvoiceId": f"ladder-{month.tenant.id}-{iso(month_start)[:7]}",
        "SkuId": month.id,
        "SkuPriceId": f"{month.id}@{iso(month.term_start_ms)}",
        "SkuMeter": "committed GPU time",
        "SkuPriceDetails": json.dumps(details, sort_keys=True, separators=(",", ":")),
        "Tags": "{}",
        "x_Rung": None,
        "x_PerformanceIsolation": None,
        "x_SecurityIsolation": None,
        "x_GpuModel": month.gpu_model,
        "x_TenantSlug": month.tenant.slug,
        "x_StorageKind": None,
    }

    def row(cost: int, effective: int, quantity_milli: int, **values: Any) -> tuple[Any, ...]:
        quantity = decimal(quantity_units(quantity_milli), QUANTITY_PLACES)
        listed = decimal(cost_units(quantity_milli, price_units(price)), COST_PLACES)
        values = {
            **common,
            "BilledCost": decimal(cost, COST_PLACES),
            "EffectiveCost": decimal(effective, COST_PLACES),
            "PricingCurrencyEffectiveCost": decimal(effective, COST_PLACES),
            "ListCost": listed,
            "ContractedCost": listed,
            "PricingQuantity": quantity,
            "x_UsageQuantityMilli": quantity_milli,
            **values,
        }
        return tuple(values[column] for column in COLUMN_NAMES)

    eligible = decimal(quantity_units(month.committed_milli), QUANTITY_PLACES)
    return [
        row(
            charge,
            0,
            month.billed_milli,
            ChargeCategory="Purchase",
            ChargeDescription=f"{name}: its term from {hours[0]} to {hours[1]}, billed in advance",
            ConsumedQuantity=None,
            ConsumedUnit=None,
            CommitmentDiscountQuantity=eligible,
            CommitmentDiscountStatus=None,
            PricingCategory="Standard",
        ),
        row(
            0,
            used,
            used_milli,
            ChargeCategory="Usage",
            ChargeDescription=f"{name}: GPU-hours its reserved work used from {hours[0]} to {hours[1]}",
            ConsumedQuantity=decimal(quantity_units(used_milli), QUANTITY_PLACES),
            ConsumedUnit=UNIT,
            CommitmentDiscountQuantity=decimal(quantity_units(used_milli), QUANTITY_PLACES),
            CommitmentDiscountStatus="Used",
            PricingCategory="Committed",
        ),
        row(
            0,
            charge - used,
            unused_milli,
            ChargeCategory="Usage",
            ChargeDescription=f"{name}: GPU-hours not used from {hours[0]} to {hours[1]}",
            ConsumedQuantity=None,
            ConsumedUnit=None,
            CommitmentDiscountQuantity=decimal(quantity_units(unused_milli), QUANTITY_PLACES),
            CommitmentDiscountStatus="Unused",
            PricingCategory="Committed",
        ),
    ]


def csv_lines(rows: list[tuple[Any, ...]]) -> bytes:
    """Rows as CSV lines, as the usage rows are written."""
    return "".join(",".join(csv_cell(value) for value in row) + "\n" for row in rows).encode()
