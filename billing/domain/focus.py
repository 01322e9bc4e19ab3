"""FinOps FOCUS 1.2 rows of the usage ledger, free of the ORM: the columns, and one row from one charge.

A charge is a slice of the ledger: for the summary export a usage rollup (tenant x SKU x price x hour, ``seq`` > 0
a late adjustment), for the detail export the pieces of one resource (an allocation, a volume or a snapshot) in
one hour at one price counted by one rollup batch. The row formats every FOCUS column the validator checks for 1.2
plus Ladder's own (``x_``). Compute is in the FOCUS service category ``Compute``, volumes and snapshots in
``Storage`` (``STORAGE_SERVICES``), counted in GB-hours.

Costs reconcile with the invoice exactly. An invoice line is ``round_half_up(amount(sum of quantities, price))``
per tenant x SKU x price x month (``billing.domain.pricing.invoice_lines``); an exact amount is rarely a finite decimal
(``quantity x price / 3,600,000``), so rows cannot each carry it. ``CostCarry`` gives each row the difference of
the running exact amount of its line, truncated to ``COST_PLACES`` decimal places: ``T(amount(before + q)) -
T(amount(before))``. Summed over a line's rows that telescopes to ``T(amount(total))``, which rounds to the
invoice line's cents: every half cent is on the grid of 16 places, so truncating to it never carries an amount
across one, whatever the price's places (a storage price per GB-hour has ten); and each row is within 1e-16 of
its own exact amount.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any, NamedTuple

from billing.domain.pricing import HOST_UNITS, per_gb_month
from provisioning.domain.rungs import RUNGS, RungFacts, rung_facts

FOCUS_VERSION = "1.2"
PROVIDER = "Ladder"
SERVICE_CATEGORY = "Compute"
STORAGE_CATEGORY = "Storage"
# A storage kind's service, its FOCUS subcategory and the type of its resource (one subcategory per service).
STORAGE_SERVICES = {
    "filesystem": ("Ladder Filesystem Volumes", "File Storage", "Filesystem Volume"),
    "block": ("Ladder Block Volumes", "Block Storage", "Block Volume"),
    "snapshot": ("Ladder Volume Snapshots", "Backup Storage", "Volume Snapshot"),
}
_OTHER_STORAGE = ("Ladder Storage", "Other (Storage)", "Storage")
PRICE_PLACES = 10  # a price per unit-hour (``billing.domain.pricing.PRICE_PLACES``)
# One service per rung, so each has one subcategory (FOCUS: a ServiceName has one ServiceSubcategory): the table
# of rungs names them (``RungFacts.focus``); a SKU of a rung it does not know is this one.
_OTHER_SERVICE = ("Ladder GPU Compute", "Other (Compute)")
HOUR_MS = 3_600_000
COST_PLACES = 16
QUANTITY_PLACES = 12
TAG_PREFIX = "ladder/"


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "string", "decimal", "datetime", "json", "integer"
    required: bool  # never null in a Ladder export
    meaning: str


_C = Column
COLUMNS: tuple[Column, ...] = (
    _C("BilledCost", "decimal", True, "What the row adds to the invoice (unrounded, see CostCarry)."),
    _C("EffectiveCost", "decimal", True, "Usage: as BilledCost; a reservation's rows: its term amortized (below)."),
    _C("ListCost", "decimal", True, "ListUnitPrice x PricingQuantity (same as BilledCost)."),
    _C("ContractedCost", "decimal", True, "ContractedUnitPrice x PricingQuantity (same as BilledCost)."),
    _C(
        "PricingCurrencyEffectiveCost",
        "decimal",
        True,
        "EffectiveCost in the pricing currency: the same (one currency).",
    ),
    _C("PricingQuantity", "decimal", True, "Unit-hours of the SKU's unit, to 12 decimal places."),
    _C("ConsumedQuantity", "decimal", False, "Same as PricingQuantity; null on a term's purchase and unused rows."),
    _C("ChargePeriodStart", "datetime", True, "Start of the hour (UTC)."),
    _C("ChargePeriodEnd", "datetime", True, "End of the hour (exclusive)."),
    _C("ChargeClass", "string", False, "Correction for a late adjustment counted after its month had ended."),
    _C("ChargeDescription", "string", True, "Plain words: SKU, hour, late adjustment."),
    _C("x_GoodputSecondsLost", "decimal", True, "Seconds of work lost to provider faults, attributed to this row."),
    _C("x_UsageQuantityMilli", "integer", True, "The ledger's exact quantity (milli-unit-seconds)."),
    _C("x_LateAdjustment", "integer", True, "The rollup's seq: 0 on time, n > 0 the n-th late adjustment."),
    _C("ListUnitPrice", "decimal", True, "The price per unit-hour of the price version (0 for an unpriced SKU)."),
    _C("ContractedUnitPrice", "decimal", True, "Same as ListUnitPrice: no negotiated prices."),
    _C("PricingCurrency", "string", True, "The currency prices are set in: the billing currency."),
    _C("PricingCurrencyListUnitPrice", "decimal", True, "ListUnitPrice in the pricing currency: the same."),
    _C("PricingCurrencyContractedUnitPrice", "decimal", True, "ContractedUnitPrice in the pricing currency: the same."),
    _C("PricingUnit", "string", True, "GPU-Hours, MIG Slice-Hours, Node-Hours or GB-Hours (storage)."),
    _C("ConsumedUnit", "string", False, "Same as PricingUnit where ConsumedQuantity is not null."),
    _C("CommitmentDiscountId", "string", False, "A reservation's rows: reservation/<id>; null otherwise."),
    _C("CommitmentDiscountName", "string", False, "A reservation's rows: its GPUs, model, hall and term."),
    _C("CommitmentDiscountCategory", "string", False, "A reservation's rows: Usage (a quantity of GPU-hours)."),
    _C("CommitmentDiscountType", "string", False, "A reservation's rows: Reservation."),
    _C("CommitmentDiscountQuantity", "decimal", False, "A reservation's rows: GPU-hours eligible, used or unused."),
    _C("CommitmentDiscountUnit", "string", False, "A reservation's rows: GPU-Hours."),
    _C("CommitmentDiscountStatus", "string", False, "A reservation's usage rows: Used or Unused; null otherwise."),
    _C(
        "PricingCategory",
        "string",
        True,
        "Dynamic for spot (priced by the provider, may change); Committed for reserved work (its reservation's "
        "term pays for it); Standard otherwise: the public price book's, and a term's purchase.",
    ),
    _C("BillingCurrency", "string", True, "ISO 4217 code of the SKU's currency, upper case."),
    _C("BillingPeriodStart", "datetime", True, "First instant of the calendar month (UTC) the hour is invoiced in."),
    _C("BillingPeriodEnd", "datetime", True, "First instant of the next month (exclusive)."),
    _C("ChargeCategory", "string", True, "Usage; Purchase for a reservation's month of its term."),
    _C("ChargeFrequency", "string", True, "Usage-Based; Recurring for a reservation's rows."),
    _C("BillingAccountId", "string", True, "The tenant's billing account (one invoice per tenant)."),
    _C("BillingAccountName", "string", True, "The tenant's name."),
    _C("SubAccountId", "string", True, "The tenant (its slug)."),
    _C("SubAccountName", "string", True, "The tenant's name."),
    _C("ProviderName", "string", True, "Ladder."),
    _C("PublisherName", "string", True, "Ladder."),
    _C("InvoiceIssuerName", "string", True, "Ladder."),
    _C("RegionId", "string", True, "The region's code."),
    _C("RegionName", "string", True, "The region's name."),
    _C("AvailabilityZone", "string", False, "Detail: the hall the allocation ran in; summary and storage: null."),
    _C("ResourceId", "string", False, "Detail: allocation/<id>, volume/<id> or snapshot/<id>; summary: null (many)."),
    _C("ResourceName", "string", False, "Detail: the allocation's, volume's or snapshot's name."),
    _C("ResourceType", "string", False, "Detail: Bare Metal Server, ..., Container, Job, Endpoint; Block Volume, ..."),
    _C(
        "ServiceName",
        "string",
        True,
        "One per rung (Ladder Containers, ...) and storage kind (Ladder Block Volumes).",
    ),
    _C("ServiceCategory", "string", True, "Compute, or Storage for volumes and snapshots."),
    _C("ServiceSubcategory", "string", True, "Containers, ..., Other (Compute); File, Block or Backup Storage."),
    _C("InvoiceId", "string", True, "The tenant's invoice of the billing period: ladder-<tenant id>-<YYYY-MM>."),
    _C(
        "SkuId",
        "string",
        True,
        ("The SKU's code: rung/GPU model/unit/region, storage/kind/region or host/vcpu|memory/region."),
    ),
    _C("SkuPriceId", "string", True, "The price version: <SKU code>@<effective from, UTC>."),
    _C(
        "SkuMeter",
        "string",
        True,
        (
            "What is metered: GPU time, MIG slice time, node time, provisioned storage, or vCPU time or memory beyond "
            "the bundle."
        ),
    ),
    _C(
        "SkuPriceDetails", "json", True, "x_Unit, x_MigProfile, x_StorageKind, x_PricePerUnitHour, x_PricePerGbMonth..."
    ),
    _C("Tags", "json", True, "Detail: the resource's provider tags (ladder/...); summary: {}."),
    _C("x_Rung", "string", False, "The rung sold (bare_metal, vm, ...); null for storage."),
    _C("x_PerformanceIsolation", "string", False, "How the GPU is shared; summary: null where the SKU allows several."),
    _C("x_SecurityIsolation", "string", False, "The boundary between tenants the rung promises; null for storage."),
    _C("x_GpuModel", "string", False, "The GPU model; null for storage."),
    _C("x_TenantSlug", "string", True, "The tenant's slug."),
    _C("x_StorageKind", "string", False, "Storage: filesystem, block or snapshot; null for compute."),
)
COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
COMMITMENT_COLUMNS = tuple(name for name in COLUMN_NAMES if name.startswith("CommitmentDiscount"))
INDEX = {name: i for i, name in enumerate(COLUMN_NAMES)}

# FOCUS's PricingCategory of each capacity class's SKUs: spot is priced by the provider and may change (Dynamic);
# reserved work is subject to its reservation, metered at nothing on its own SKUs while the term is billed
# (Committed: the term's own rows, ``billing.domain.focus_commitments``, carry its cost).
PRICING_CATEGORIES = {"spot": "Dynamic", "reserved": "Committed"}

UNIT_WORDS = {
    "gpu": ("GPU-Hours", "GPU time"),
    "mig": ("MIG Slice-Hours", "MIG slice time"),
    "node": ("Node-Hours", "node time"),
    "gb": ("GB-Hours", "provisioned storage"),
    "vcpu": ("vCPU-Hours", "vCPU time beyond the bundle"),
    "memory": ("GiB-Hours", "memory beyond the bundle"),
}


@dataclass(frozen=True)
class Sku:
    code: str
    rung: str  # "" for storage and host units
    unit: str  # gpu, mig, node, gb (storage), vcpu or memory (beyond the bundle: ``HOST_UNITS``)
    mig_profile: str
    gpu_model: str  # "" for storage
    region_code: str
    region_name: str
    currency: str
    storage_kind: str = ""  # filesystem, block, snapshot; "" for compute
    capacity_class: str = "on_demand"  # on_demand, spot, reserved (docs/capacity.md); storage: on_demand


@dataclass(frozen=True)
class Price:
    """A price version; ``id`` None and ``per_hour`` 0 for usage of a SKU that had no price yet."""

    id: int | None
    effective_from_ms: int | None
    per_hour: Decimal


UNPRICED = Price(None, None, Decimal(0))


@dataclass(frozen=True)
class Tenant:
    id: int
    slug: str
    name: str


RESOURCE_KINDS = ("allocation", "volume", "snapshot")


def resource_key(kind: str, pk: int) -> int:
    """One integer for a detail row's resource, whichever kind it is (ids of two kinds may be equal)."""
    return pk * len(RESOURCE_KINDS) + RESOURCE_KINDS.index(kind)


def resource_of(key: int) -> tuple[str, int]:
    """``resource_key`` undone: the kind and the id."""
    return RESOURCE_KINDS[key % len(RESOURCE_KINDS)], key // len(RESOURCE_KINDS)


@dataclass(frozen=True)
class Resource:
    """The resource of a detail row: an allocation (its rung, isolation and hall), or a volume or snapshot (``kind``;
    no rung, isolation nor hall: storage lives in a region)."""

    id: int
    name: str
    rung: str
    performance: str
    security: str
    hall: str
    tags: Mapping[str, str | int | bool | None] = field(default_factory=dict)
    kind: str = "allocation"

    @property
    def key(self) -> int:
        return resource_key(self.kind, self.id)


class Charge(NamedTuple):
    """One row's source (a named tuple: an export makes one per row, so it must be cheap)."""

    tenant: Tenant
    sku: Sku
    price: Price
    window_ms: int
    seq: int
    quantity_milli: int
    closed_ms: int  # when the rollup that counted it was made (a late one after its month: a correction)
    goodput_lost_ms: int = 0
    resource: Resource | None = None


def iso(ms: int) -> str:
    """FOCUS date/time: ``YYYY-MM-DDTHH:mm:ssZ`` (UTC, whole seconds)."""
    return datetime.fromtimestamp(ms // 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@lru_cache(maxsize=65_536)
def month_bounds(ms: int) -> tuple[int, int]:
    """The calendar month (UTC) containing ``ms``, as epoch ms ``[start, end)``."""
    moment = datetime.fromtimestamp(ms // 1000, tz=UTC)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
    return int(start.timestamp()) * 1000, int(end.timestamp()) * 1000


def price_units(per_hour: Decimal) -> int:
    """A price per unit-hour in units of 1e-10 (the price book keeps ten decimal places)."""
    units = per_hour.scaleb(PRICE_PLACES)
    if units != units.to_integral_value() or units < 0:
        raise ValueError(f"a price has at most {PRICE_PLACES} decimal places and is not negative: {per_hour}")
    return int(units)


def cost_units(quantity_milli: int, price: int) -> int:
    """``billing.domain.pricing.amount`` in units of 1e-16, truncated: ``q x P / 3,600,000`` with ``P = price /
    1e10`` is ``q x price / 3.6`` units, ``q x price x 20 / 72`` in integers (exact, and fast)."""
    return quantity_milli * price * 20 // 72


def quantity_units(quantity_milli: int) -> int:
    """Unit-hours in units of 1e-12, rounded half up: ``q / 3,600,000`` is ``q x 1e7 / 36`` units."""
    return (quantity_milli * 20_000_000 + 36) // 72


def fixed(units: int, places: int) -> str:
    """``units x 10^-places`` in plain decimal notation (never an exponent)."""
    if units < 0:
        return "-" + fixed(-units, places)
    digits = str(units)
    if len(digits) <= places:
        digits = digits.rjust(places + 1, "0")
    return digits[:-places] + "." + digits[-places:]


def decimal(units: int, places: int) -> Decimal:
    return Decimal(units).scaleb(-places)


class CostCarry:
    """Row costs (units of 1e-16) whose sum per invoice line (tenant x SKU x price x month) is that line's exact
    amount quantized, whatever the order of its rows. Memory: the running quantity of each line since the last
    change of tenant or SKU, so an export ordered by tenant and SKU holds a handful of lines at a time."""

    def __init__(self) -> None:
        self._scope: tuple[int, str] | None = None
        self._running: dict[tuple[int | None, int], int] = {}
        self._prices: dict[int | None, int] = {}

    def units(self, charge: Charge) -> int:
        scope = (charge.tenant.id, charge.sku.code)
        if scope != self._scope:
            self._scope, self._running = scope, {}
        key = (charge.price.id, month_bounds(charge.window_ms)[0])
        before = self._running.get(key, 0)
        after = before + charge.quantity_milli
        self._running[key] = after
        price = self._prices.get(charge.price.id)
        if price is None:
            price = self._prices[charge.price.id] = price_units(charge.price.per_hour)
        return cost_units(after, price) - cost_units(before, price)


def exact_amount(quantity_milli: int, per_hour: Decimal) -> Decimal:
    """``billing.domain.pricing.amount`` truncated to ``COST_PLACES`` places."""
    return decimal(cost_units(quantity_milli, price_units(per_hour)), COST_PLACES)


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(dict(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def price_id(sku: Sku, price: Price) -> str:
    if price.effective_from_ms is None:
        return f"{sku.code}@unpriced"
    return f"{sku.code}@{iso(price.effective_from_ms)}"


def is_correction(charge: Charge) -> bool:
    """A late adjustment counted once its hour's month had ended: it corrects an invoiced billing period."""
    return charge.seq > 0 and charge.closed_ms >= month_bounds(charge.window_ms)[1]


VARYING = 14  # the first columns change from row to row; the others are the same for a tenant, SKU, price,
# allocation and month, and are made once per such combination (``Static``)


def _facts(rung: str) -> RungFacts | None:
    """The table of rungs' row of a SKU's or an allocation's rung (None: a rung it does not know)."""
    return rung_facts(rung) if rung in RUNGS else None


def _resource_type(rung: str) -> str:
    facts = _facts(rung)
    return facts.focus.resource_type if facts else "Other"


@dataclass(frozen=True)
class _Sold:
    """What a row's SKU (and resource) sold, in FOCUS's words."""

    service: str
    category: str
    subcategory: str
    resource_type: str | None
    performance: str | None
    security: str | None


def _sold(sku: Sku, resource: Resource | None) -> _Sold:
    if sku.unit == "gb":  # storage: no rung, GPU or hall; its kind is the service
        service, subcategory, kind_type = STORAGE_SERVICES.get(sku.storage_kind, _OTHER_STORAGE)
        return _Sold(service, STORAGE_CATEGORY, subcategory, kind_type if resource else None, None, None)
    if sku.unit in HOST_UNITS:  # vCPUs and memory beyond the bundle: sold with the allocation's GPUs, its service
        facts = _facts(resource.rung) if resource else None
        service, subcategory = (facts.focus.service, facts.focus.subcategory) if facts else _OTHER_SERVICE
        resource_type = _resource_type(resource.rung) if resource else None
        return _Sold(service, SERVICE_CATEGORY, subcategory, resource_type, None, None)
    facts = _facts(sku.rung)
    service, subcategory = (facts.focus.service, facts.focus.subcategory) if facts else _OTHER_SERVICE
    if resource is not None:
        performance: str | None = resource.performance
    elif sku.unit == "mig":
        performance = "mig"
    elif facts is None or not facts.soft_sharing:
        performance = "whole_gpu"  # MIG slices have SKUs of their own; only serverless sells soft shares
    else:
        performance = None  # sold whole and as soft shares on one SKU: the detail export names each
    security = resource.security if resource else facts.security.value if facts else sku.rung
    resource_type = _resource_type(resource.rung) if resource else None
    return _Sold(service, SERVICE_CATEGORY, subcategory, resource_type, performance, security)


def _static(charge: Charge) -> tuple[Any, ...]:
    """The values of the columns after ``VARYING`` (every one but the row's cost, quantity, hour and counts)."""
    sku, price, tenant, resource = charge.sku, charge.price, charge.tenant, charge.resource
    pricing_unit, meter = UNIT_WORDS[sku.unit]
    month_start, month_end = month_bounds(charge.window_ms)
    sold = _sold(sku, resource)
    details: dict[str, Any] = {"x_Unit": sku.unit, "x_PricePerUnitHour": str(price.per_hour)}
    if sku.mig_profile:
        details["x_MigProfile"] = sku.mig_profile
    if sku.storage_kind:  # storage is quoted per GB-month: the price as people read it, beside the kept one
        details["x_StorageKind"] = sku.storage_kind
        details["x_PricePerGbMonth"] = str(per_gb_month(price.per_hour))
    if price.effective_from_ms is not None:
        details["x_EffectiveFrom"] = iso(price.effective_from_ms)
    values: dict[str, Any] = {
        "ListUnitPrice": price.per_hour,
        "ContractedUnitPrice": price.per_hour,
        "PricingCurrency": sku.currency.upper(),
        "PricingCurrencyListUnitPrice": price.per_hour,
        "PricingCurrencyContractedUnitPrice": price.per_hour,
        "PricingUnit": pricing_unit,
        "ConsumedUnit": pricing_unit,
        **dict.fromkeys(COMMITMENT_COLUMNS),
        "PricingCategory": PRICING_CATEGORIES.get(sku.capacity_class, "Standard"),
        "BillingCurrency": sku.currency.upper(),
        "BillingPeriodStart": iso(month_start),
        "BillingPeriodEnd": iso(month_end),
        "ChargeCategory": "Usage",
        "ChargeFrequency": "Usage-Based",
        "BillingAccountId": f"ladder-billing-{tenant.id}",
        "BillingAccountName": tenant.name,
        "SubAccountId": tenant.slug,
        "SubAccountName": tenant.name,
        "ProviderName": PROVIDER,
        "PublisherName": PROVIDER,
        "InvoiceIssuerName": PROVIDER,
        "RegionId": sku.region_code,
        "RegionName": sku.region_name,
        "AvailabilityZone": (resource.hall or None) if resource else None,
        "ResourceId": f"{resource.kind}/{resource.id}" if resource else None,
        "ResourceName": resource.name if resource else None,
        "ResourceType": sold.resource_type,
        "ServiceName": sold.service,
        "ServiceCategory": sold.category,
        "ServiceSubcategory": sold.subcategory,
        "InvoiceId": f"ladder-{tenant.id}-{iso(month_start)[:7]}",
        "SkuId": sku.code,
        "SkuPriceId": price_id(sku, price),
        "SkuMeter": meter,
        "SkuPriceDetails": _json(details),
        "Tags": _json({TAG_PREFIX + k: v for k, v in resource.tags.items()}) if resource else "{}",
        "x_Rung": sku.rung or None,
        "x_PerformanceIsolation": sold.performance,
        "x_SecurityIsolation": sold.security,
        "x_GpuModel": sku.gpu_model or None,
        "x_TenantSlug": tenant.slug,
        "x_StorageKind": sku.storage_kind or None,
    }
    return tuple(values[name] for name in COLUMN_NAMES[VARYING:])


def csv_cell(value: Any) -> str:
    cell = text(value)
    if any(c in cell for c in ',"\n\r'):
        return '"' + cell.replace('"', '""') + '"'
    return cell


@dataclass
class Static:
    """The unchanging columns of a combination: as values, as CSV text, and what the description starts with."""

    values: tuple[Any, ...]
    csv: str
    describe: str
    describe_csv: str  # the opening quote and ``describe`` escaped: the rest of a description needs no escaping


def static_of(charge: Charge) -> Static:
    """The unchanging columns of the charge's combination (tenant x SKU x price x allocation x month)."""
    values = _static(charge)
    what = charge.sku.code
    if charge.resource is not None:
        what = f"{charge.resource.name} ({charge.resource.kind} {charge.resource.id}): {what}"
    quoted = '"' + what.replace('"', '""')
    return Static(values, ",".join(csv_cell(v) for v in values), what, quoted)


class Rows:
    """The rows of an export one at a time, in order (each call advances the cost carry, ``CostCarry``): the
    reference the columnar writers (``billing.domain.focus_columns``) are tested against. ``values`` gives Python values
    (Decimal, int, str, None) in ``COLUMN_NAMES`` order; ``csv_line`` the same row as one CSV line."""

    def __init__(self) -> None:
        self.carry = CostCarry()
        self._statics: dict[tuple[Any, ...], Static] = {}

    def _static_of(self, charge: Charge) -> Static:
        resource = charge.resource.key if charge.resource else None
        key = (charge.tenant.id, charge.sku.code, charge.price.id, resource, month_bounds(charge.window_ms)[0])
        static = self._statics.get(key)
        if static is None:
            static = self._statics[key] = static_of(charge)
        return static

    def _parts(self, charge: Charge) -> tuple[int, Static, str, str, str | None, str]:
        units = self.carry.units(charge)
        static = self._static_of(charge)
        start, end = iso(charge.window_ms), iso(charge.window_ms + HOUR_MS)
        description = f"{static.describe} for the hour from {start}"
        if charge.seq:
            correction = "Correction" if is_correction(charge) else None
            return units, static, start, end, correction, description + f", late adjustment {charge.seq}"
        return units, static, start, end, None, description

    def values(self, charge: Charge) -> tuple[Any, ...]:
        units, static, start, end, correction, description = self._parts(charge)
        cost = decimal(units, COST_PLACES)
        quantity = decimal(quantity_units(charge.quantity_milli), QUANTITY_PLACES)
        lost = decimal(charge.goodput_lost_ms, 3)
        head = (cost, cost, cost, cost, cost, quantity, quantity, start, end, correction, description, lost)
        return (*head, charge.quantity_milli, charge.seq, *static.values)

    def csv_line(self, charge: Charge) -> str:
        units, static, start, end, correction, description = self._parts(charge)
        cost = fixed(units, COST_PLACES)
        quantity = fixed(quantity_units(charge.quantity_milli), QUANTITY_PLACES)
        lost = fixed(charge.goodput_lost_ms, 3)
        # The description is always quoted (its unchanging part escaped once), so no row is scanned for commas.
        text_ = static.describe_csv + description[len(static.describe) :] + '"'
        return (
            f"{cost},{cost},{cost},{cost},{cost},{quantity},{quantity},{start},{end},{correction or ''},"
            f"{text_},{lost},{charge.quantity_milli},{charge.seq},{static.csv}"
        )


def text(value: Any) -> str:
    """A value as a CSV cell: null is empty, decimals in plain notation (never exponents)."""
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)
