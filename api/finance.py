"""Finance and the cost book: ``/api/v1/finance/margin`` (revenue, cost and gross margin per rung, model, region
and month, and storage's per region and kind), ``/api/v1/finance/budgets`` (tenants against their budgets),
``/api/v1/finance/reservations`` (what reservations bill, their utilisation, the revenue they lock in), and the
operators' cost basis per GPU-hour ``/api/v1/ops/cost-basis`` and per storage GB-month
``/api/v1/ops/storage-cost-basis``. Finance staff read every tenant's billing and change no tenant's data."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import StaffViewSet
from api.serializers import StrictSerializer
from billing import selectors
from billing.domain.margin import MarginReport
from billing.domain.pricing import unit_hours
from billing.models import CostBasis, StorageCostBasis, StorageKind
from billing.selectors.commitments import reservations_report
from billing.services.accounts import COST_PARTS, cost_basis_add, storage_cost_basis_add
from core.domain.months import month_range
from core.errors import Invalid
from provisioning.models import GpuModel, Hall, Region
from tenancy.domain.roles import StaffPermission


def _money(value: Decimal) -> str:
    """Costs and revenue to the hundredth of a cent: exact enough to add up, rounded only for display."""
    return str(value.quantize(Decimal("0.0001")))


def _hours(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.001")))


def margin_body(report: MarginReport) -> dict[str, Any]:
    return {
        "rungs": [
            {
                "month": r.month,
                "rung": r.rung,
                "gpu_model": r.model,
                "region": r.region,
                "currency": r.currency,
                "revenue": _money(r.revenue),
                "allocated_gpu_hours": _hours(r.allocated_gpu_hours),
                "allocated_cost": _money(r.allocated_cost),
                "gross_margin": _money(r.gross_margin),
                "margin_pct": None if r.margin_pct is None else str(r.margin_pct.quantize(Decimal("0.1"))),
                "uncosted_gpu_hours": _hours(r.uncosted_gpu_hours),
            }
            for r in report.rungs
        ],
        "capacity": [
            {
                "month": c.month,
                "gpu_model": c.model,
                "region": c.region,
                "currency": c.currency,
                "gpu_hours": _hours(c.gpu_hours),
                "fleet_cost": _money(c.fleet_cost),
                "revenue": _money(c.revenue),
                "allocated_cost": _money(c.allocated_cost),
                "idle_gpu_hours": _hours(c.idle_gpu_hours),
                "idle_cost": _money(c.idle_cost),
                "stranded_gpu_hours": _hours(c.stranded_gpu_hours),
                "stranded_cost": _money(c.stranded_cost),
                "unbilled_cost": _money(c.unbilled_cost),
                "gross_margin": _money(c.gross_margin),
            }
            for c in report.capacity
        ],
        "totals": [
            {"month": month, "currency": currency, **{k: _money(v) for k, v in values.items()}}
            for (month, currency), values in sorted(report.totals().items())
        ],
        "uncosted": [
            {"month": month, "gpu_model": model, "hall": hall, "gpu_hours": _hours(hours)}
            for (month, model, hall), hours in report.uncosted.items()
        ],
        "storage": [
            {
                "month": r.month,
                "region": r.region,
                "storage_kind": r.kind,
                "currency": r.currency,
                "revenue": _money(r.revenue),
                "gb_hours": _hours(r.gb_hours),
                "cost": _money(r.cost),
                "gross_margin": _money(r.gross_margin),
                "margin_pct": None if r.margin_pct is None else str(r.margin_pct.quantize(Decimal("0.1"))),
                "uncosted_gb_hours": _hours(r.uncosted_gb_hours),
            }
            for r in report.storage
        ],
    }


class MarginViewSet(StaffViewSet):
    """Revenue and gross margin per rung, GPU model, region and month, with the cost of idle and stranded
    capacity, and storage's revenue, cost and margin per region, storage kind and month; see docs/finance.md for
    each figure."""

    queryset = CostBasis.objects.none()  # figures come from the ledger, samples and cost book, not a queryset
    required_permission = StaffPermission.USAGE_VIEW  # revenue is finance's: operators keep the cost book only
    pagination_class = None

    @extend_schema(
        parameters=[
            OpenApiParameter("from", str, description="First month, YYYY-MM (default: this month)."),
            OpenApiParameter("to", str, description="Last month, YYYY-MM, inclusive (default: `from`)."),
        ],
        responses={200: dict},
    )
    def list(self, request: Request) -> Response:
        now = timezone.now()
        months = month_range(request.query_params.get("from"), request.query_params.get("to"), default=now)
        report = selectors.margin_report(start=months.start, end=months.end, now=now)
        first, last = months.labels
        return Response({"from": first, "to": last, **margin_body(report)})


class ReservationsReportViewSet(StaffViewSet):
    """What reservations bill over months, how much of them their tenants used, and the revenue their terms still
    lock in (docs/capacity.md, "Reservations"): one row per reservation whose term meets the months, and the totals
    (utilisation: used over committed GPU-hours)."""

    queryset = CostBasis.objects.none()  # figures come from the reservations and the ledger
    required_permission = StaffPermission.USAGE_VIEW
    pagination_class = None

    @extend_schema(
        parameters=[
            OpenApiParameter("from", str, description="First month, YYYY-MM (default: this month)."),
            OpenApiParameter("to", str, description="Last month, YYYY-MM, inclusive (default: `from`)."),
        ],
        responses={200: dict},
    )
    def list(self, request: Request) -> Response:
        now = timezone.now()
        months = month_range(request.query_params.get("from"), request.query_params.get("to"), default=now)
        rows = reservations_report(start=months.start, end=months.end, now=now)
        committed = sum(r.committed_milli for r in rows)
        used = sum(r.used_milli for r in rows)
        first, last = months.labels
        return Response(
            {
                "from": first,
                "to": last,
                "reservations": [
                    {
                        "id": r.reservation.pk,
                        "tenant": r.reservation.tenant.slug,
                        "gpu_model": r.reservation.gpu_model.name,
                        "hall": r.reservation.hall.code,
                        "gpus": r.reservation.gpus,
                        "currency": r.reservation.currency,
                        "committed_gpu_hours": _hours(unit_hours(r.committed_milli)),
                        "used_gpu_hours": _hours(unit_hours(r.used_milli)),
                        "utilisation": None if r.utilisation is None else round(r.utilisation, 4),
                        "billed": _money(r.billed),
                        "locked_in": _money(r.locked_in),
                    }
                    for r in rows
                ],
                "committed_gpu_hours": _hours(unit_hours(committed)),
                "used_gpu_hours": _hours(unit_hours(used)),
                "utilisation": round(used / committed, 4) if committed else None,
                "billed": _money(sum((r.billed for r in rows), Decimal(0))),
                "locked_in": _money(sum((r.locked_in for r in rows), Decimal(0))),
            }
        )


class BudgetStandingSerializer(serializers.Serializer[Any]):
    tenant = serializers.CharField(source="tenant.slug")
    tenant_name = serializers.CharField(source="tenant.name")
    currency = serializers.CharField()
    budget = serializers.DecimalField(max_digits=14, decimal_places=2)
    spend = serializers.DecimalField(max_digits=14, decimal_places=2)
    used_pct = serializers.DecimalField(max_digits=8, decimal_places=1)
    over = serializers.BooleanField()
    hard_stop = serializers.BooleanField()


class BudgetStandingViewSet(StaffViewSet):
    """Every tenant with a monthly budget, this month's spend against it, the most used first."""

    queryset = CostBasis.objects.none()
    required_permission = StaffPermission.USAGE_VIEW
    pagination_class = None

    @extend_schema(
        parameters=[OpenApiParameter("over", bool, description="true: only tenants at or over their budget.")],
        responses=BudgetStandingSerializer(many=True),
    )
    def list(self, request: Request) -> Response:
        over = request.query_params.get("over", "")
        if over not in ("", "true", "false"):
            raise Invalid("validation_error", "over must be true or false.", field="over")
        rows = selectors.budgets_standing(now=timezone.now())
        if over:
            rows = [r for r in rows if r.over == (over == "true")]
        return Response(BudgetStandingSerializer(rows, many=True).data)


class CostBasisSerializer(serializers.ModelSerializer[CostBasis]):
    gpu_model = serializers.CharField(source="gpu_model.name")
    hall = serializers.CharField(source="hall.code")
    capex = serializers.DecimalField(source="capex_per_gpu_hour", max_digits=12, decimal_places=6)
    power = serializers.DecimalField(source="power_per_gpu_hour", max_digits=12, decimal_places=6)
    space = serializers.DecimalField(source="space_per_gpu_hour", max_digits=12, decimal_places=6)
    network = serializers.DecimalField(source="network_per_gpu_hour", max_digits=12, decimal_places=6)
    per_gpu_hour = serializers.DecimalField(max_digits=14, decimal_places=6, read_only=True)

    class Meta:
        model = CostBasis
        fields = [
            "id",
            "gpu_model",
            "hall",
            "effective_from",
            "currency",
            "capex",
            "power",
            "space",
            "network",
            "per_gpu_hour",
            "created_at",
        ]


class CostBasisRequestSerializer(StrictSerializer):
    gpu_model = serializers.SlugRelatedField(slug_field="name", queryset=GpuModel.objects.all())
    hall = serializers.SlugRelatedField(slug_field="code", queryset=Hall.objects.all())
    effective_from = serializers.DateTimeField()
    currency = serializers.RegexField(r"^[a-z]{3}$", default="usd", help_text="ISO code in lower case.")
    capex = serializers.DecimalField(max_digits=12, decimal_places=6, min_value=Decimal(0))
    power = serializers.DecimalField(max_digits=12, decimal_places=6, min_value=Decimal(0))
    space = serializers.DecimalField(max_digits=12, decimal_places=6, min_value=Decimal(0))
    network = serializers.DecimalField(max_digits=12, decimal_places=6, min_value=Decimal(0))


class CostBasisViewSet(mixins.ListModelMixin, StaffViewSet):
    """The cost book: what a GPU-hour of each model in each hall costs from a date on (capex amortisation, power,
    space, network). Entries are added, never edited; the latest in force applies."""

    queryset = CostBasis.objects.select_related("gpu_model", "hall").order_by("gpu_model__name", "hall__code", "id")
    serializer_class = CostBasisSerializer
    required_permission = StaffPermission.COST_BASIS_VIEW
    action_permissions = {"create": StaffPermission.COST_BASIS_ADD}

    @extend_schema(request=CostBasisRequestSerializer, responses={201: CostBasisSerializer})
    def create(self, request: Request) -> Response:
        data = CostBasisRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        basis = cost_basis_add(
            gpu_model=values["gpu_model"],
            hall=values["hall"],
            effective_from=values["effective_from"],
            currency=values["currency"],
            parts={name: values[name] for name in COST_PARTS},
            actor=self.caller.actor,
        )
        return Response(CostBasisSerializer(self.get_queryset().get(pk=basis.pk)).data, status=201)


class StorageCostBasisSerializer(serializers.ModelSerializer[StorageCostBasis]):
    region = serializers.CharField(source="region.code")
    cost_per_gb_month = serializers.DecimalField(max_digits=12, decimal_places=6)

    class Meta:
        model = StorageCostBasis
        fields = ["id", "region", "storage_kind", "effective_from", "currency", "cost_per_gb_month", "created_at"]


class StorageCostBasisRequestSerializer(StrictSerializer):
    region = serializers.SlugRelatedField(slug_field="code", queryset=Region.objects.all())
    storage_kind = serializers.ChoiceField(choices=StorageKind.choices)
    effective_from = serializers.DateTimeField()
    currency = serializers.RegexField(r"^[a-z]{3}$", default="usd", help_text="ISO code in lower case.")
    cost_per_gb_month = serializers.DecimalField(
        max_digits=12, decimal_places=6, min_value=Decimal(0), help_text="Per provisioned GB per 730 hours."
    )


class StorageCostBasisViewSet(mixins.ListModelMixin, StaffViewSet):
    """The storage cost book: what a provisioned GB of each storage kind in each region costs per GB-month from a
    date on (disks and their replicas, servers, power, space). Added, never edited; the latest in force applies."""

    queryset = StorageCostBasis.objects.select_related("region").order_by("region__code", "storage_kind", "id")
    serializer_class = StorageCostBasisSerializer
    required_permission = StaffPermission.COST_BASIS_VIEW  # the one cost book: GPU-hours and storage alike
    action_permissions = {"create": StaffPermission.COST_BASIS_ADD}

    @extend_schema(request=StorageCostBasisRequestSerializer, responses={201: StorageCostBasisSerializer})
    def create(self, request: Request) -> Response:
        data = StorageCostBasisRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        basis = storage_cost_basis_add(
            region=values["region"],
            storage_kind=values["storage_kind"],
            effective_from=values["effective_from"],
            cost_per_gb_month=values["cost_per_gb_month"],
            currency=values["currency"],
            actor=self.caller.actor,
        )
        return Response(StorageCostBasisSerializer(self.get_queryset().get(pk=basis.pk)).data, status=201)


def register(router: Any) -> None:
    router.register("finance/margin", MarginViewSet, basename="finance-margin")
    router.register("finance/budgets", BudgetStandingViewSet, basename="finance-budgets")
    router.register("finance/reservations", ReservationsReportViewSet, basename="finance-reservations")
    router.register("ops/cost-basis", CostBasisViewSet, basename="cost-basis")
    router.register("ops/storage-cost-basis", StorageCostBasisViewSet, basename="storage-cost-basis")
