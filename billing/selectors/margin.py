"""Finance's revenue and margin as read from the database: the ledger's usage pieces (closed ones summed, running
work measured to now), the fleet's capacity samples, and the cost book (GPU-hours per model and hall, storage per
region and kind), handed to the pure arithmetic of ``billing.domain.margin``."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.db.models import Max, Sum

from billing.domain import metering
from billing.domain.margin import (
    Basis,
    CostBook,
    Held,
    MarginReport,
    Revenue,
    Sample,
    StorageBasis,
    StorageCostBook,
    Stored,
    margin,
)
from billing.domain.metering import to_ms
from billing.domain.pricing import MILLI_UNIT_MS_PER_HOUR, amount
from billing.models import CostBasis, Sku, SkuPrice, StorageCostBasis, Unit, UsageInterval
from billing.selectors.book import PriceBook
from provisioning.domain.placement.mig import COMPUTE_SLICES, GEOMETRY, MigKind
from provisioning.models import CapacitySample, GpuModel, Hall, Node, Region

# (window start ms, SKU id, price id or None, hall id, rung and GPU model id of the allocation (None for storage),
# quantity in milli-unit-seconds)
Piece = tuple[int, int, int | None, int | None, str | None, int | None, int]


def _month_key(ms: int) -> str:
    return metering.from_ms(ms).strftime("%Y-%m")


def _gpu_per_unit(sku: Sku, gpus_per_node: dict[tuple[int, int], int], hall_id: int) -> Decimal:
    """GPU equivalents one unit of the SKU holds: a whole GPU 1, a MIG slice its compute share of a GPU (a soft
    share's fraction is already in its units), a bare-metal node its GPUs."""
    if sku.unit == Unit.MIG and sku.gpu_model is not None:
        kind = sku.gpu_model.mig_profiles.get(sku.mig_profile)
        compute = GEOMETRY[MigKind(kind)].compute if kind else COMPUTE_SLICES
        return Decimal(compute) / COMPUTE_SLICES
    if sku.unit == Unit.NODE:
        return Decimal(gpus_per_node.get((hall_id, sku.gpu_model_id or 0), 0))
    return Decimal(1)


_ALLOCATION = ("allocation__hall_id", "allocation__rung", "allocation__gpu_model_id")


def _margin_pieces(start_ms: int, end_ms: int, now: datetime) -> list[Piece]:
    """(window, SKU, price, hall, quantity) of every usage piece with its window in ``[start, end)``, compute's
    and storage's (no hall): the closed ones summed (the pieces the rollups sum), and the open intervals measured up
    to ``now``, as the upcoming invoice measures them."""
    pieces: list[Piece] = list(
        UsageInterval.objects.filter(window_ms__gte=start_ms, window_ms__lt=end_ms, end_ms__isnull=False)
        .values_list("window_ms", "sku_id", "price_id", *_ALLOCATION)
        .annotate(quantity=Sum("quantity_milli"))
        .order_by()
    )
    still_open = list(
        UsageInterval.objects.filter(end_ms=None, start_ms__lt=end_ms).values_list(
            "sku_id", "start_ms", "units_milli", *_ALLOCATION
        )
    )
    book = PriceBook.load(row[0] for row in still_open)
    now_ms = to_ms(now)
    for sku_id, start, units, *allocation in still_open:
        stop = max(now_ms, start)
        for piece in metering.split(start, stop, book.changes(sku_id, start, stop)):
            if start_ms <= piece.window_ms < end_ms:
                price = book.at(sku_id, piece.start_ms)
                quantity = metering.quantity(units, piece.start_ms, piece.end_ms)
                pieces.append((piece.window_ms, sku_id, price.pk if price else None, *allocation, quantity))
    return pieces


def margin_report(*, start: datetime, end: datetime, now: datetime) -> MarginReport:
    """Revenue, allocated cost, idle and stranded capacity cost and gross margin per rung, GPU model, region and
    month, and storage's revenue, cost and margin per region, storage kind and month, for the usage windows and
    capacity samples in ``[start, end)`` (``billing.domain.margin``), running work measured to ``now``."""
    pieces = _margin_pieces(to_ms(start), to_ms(end), now)
    skus = Sku.objects.select_related("gpu_model", "region").in_bulk({p[1] for p in pieces})
    prices = dict(
        SkuPrice.objects.filter(id__in={p[2] for p in pieces if p[2]}).values_list("id", "unit_price_per_hour")
    )
    halls = {h.id: h for h in Hall.objects.select_related("region")}
    gpus_per_node = {
        (hall_id, model_id): most
        for hall_id, model_id, most in Node.objects.values_list("hall_id", "gpu_model_id")
        .annotate(most=Max("gpu_count"))
        .order_by()
    }
    revenue, held, stored = [], [], []
    models = dict(GpuModel.objects.values_list("id", "name"))
    for window_ms, sku_id, price_id, hall_id, rung, model_id, quantity in pieces:
        sku, month = skus[sku_id], _month_key(window_ms)
        money = amount(quantity, prices[price_id]) if price_id is not None else Decimal(0)
        if sku.is_storage:
            gb_hours = Decimal(quantity) / MILLI_UNIT_MS_PER_HOUR
            stored.append(Stored(month, sku.region.code, sku.storage_kind, sku.currency, window_ms, gb_hours, money))
            continue
        if sku.is_host:  # vCPUs and memory beyond the bundle: revenue of the allocation's rung and pool, no GPUs
            if price_id is not None and rung and model_id is not None:
                revenue.append(Revenue(month, rung, models[model_id], sku.region.code, sku.currency, money))
            continue
        if sku.gpu_model is None or hall_id is None:  # a compute SKU always has both (sku_storage_host_or_compute)
            continue
        hall = halls[hall_id]
        if price_id is not None:
            revenue.append(Revenue(month, sku.rung, sku.gpu_model.name, sku.region.code, sku.currency, money))
        gpu_hours = Decimal(quantity) * _gpu_per_unit(sku, gpus_per_node, hall_id) / 3_600_000
        held.append(
            Held(month, sku.rung, sku.gpu_model.name, hall.code, hall.region.code, sku.currency, window_ms, gpu_hours)
        )
    samples = [
        Sample(
            _month_key(to_ms(at) - 1),
            models[model_id],
            halls[hall_id].code,
            halls[hall_id].region.code,
            to_ms(at),
            seconds,
            gpus,
            idle,
            stranded,
        )
        for at, seconds, hall_id, model_id, gpus, idle, stranded in CapacitySample.objects.filter(
            at__gt=start, at__lte=end
        ).values_list("at", "seconds", "hall_id", "gpu_model_id", "gpus", "idle_milli", "stranded_milli")
    ]
    book = CostBook(
        (models[b.gpu_model_id], halls[b.hall_id].code, Basis(to_ms(b.effective_from), b.per_gpu_hour, b.currency))
        for b in CostBasis.objects.all()
    )
    regions = dict(Region.objects.values_list("id", "code"))
    storage_book = StorageCostBook(
        (
            regions[b.region_id],
            b.storage_kind,
            StorageBasis(to_ms(b.effective_from), b.cost_per_gb_month, b.currency),
        )
        for b in StorageCostBasis.objects.all()
    )
    return margin(revenue=revenue, held=held, samples=samples, book=book, stored=stored, storage_book=storage_book)
