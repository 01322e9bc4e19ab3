"""Billing for customers: ``/api/v1/prices`` (public), ``/usage``, ``/invoices`` (+ ``/upcoming``), ``/budget``,
``/notifications``; the operators' storage price book ``/api/v1/ops/storage-prices`` (quoted per GB-month); and
Stripe's webhook endpoint ``/webhooks/stripe``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, ClassVar

import stripe
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework import mixins, serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import LadderView, StaffViewSet, TenantScopedViewSet
from api.permissions import IsTenantMember, TenantRoleAllows
from api.problems import PROBLEM_CONTENT_TYPE, problem_body
from api.serializers import StrictSerializer
from billing import selectors
from billing.domain.pricing import PRICE_PLACES, price_shown
from billing.models import BudgetAlert, Invoice, Notification, SkuPrice, StorageKind
from billing.selectors import stripe_enabled
from billing.services import accounts as services
from billing.services.storage import storage_price_set
from billing.services.stripe_sync import stripe_invoice_preview
from billing.services.webhooks import version_refusal, webhook_process
from lifecycle.services.customers import budget_update
from provisioning.models import Region
from tenancy.domain.roles import Action, StaffPermission

MODE_HELP = "`stripe` when invoices come from Stripe, `ledger_only` when they are local previews (no Stripe key)."


def _mode() -> str:
    return "stripe" if stripe_enabled() else "ledger_only"


# --- prices ------------------------------------------------------------------------------------------------------


class PriceField(serializers.DecimalField):
    """A price per unit-hour as the price book keeps it (ten places), shown to six places as compute's always were,
    and to ten where a price needs them (storage per GB-hour)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_digits=16, decimal_places=PRICE_PLACES, **kwargs)

    def to_representation(self, value: Any) -> Any:
        return None if value is None else str(price_shown(Decimal(value)))


def _per_month(price: SkuPrice) -> str | None:
    """A storage price per GB-month as operators quote it (None for compute)."""
    return str(price.per_gb_month) if price.sku.is_storage else None


class PriceSerializer(serializers.Serializer[Any]):
    sku = serializers.CharField()
    rung = serializers.CharField(allow_blank=True, help_text="Empty for storage and for vCPUs and memory.")
    gpu_model = serializers.CharField(allow_null=True, help_text="Null for storage and for vCPUs and memory.")
    storage_kind = serializers.CharField(allow_null=True, help_text="filesystem, block or snapshot; null for compute.")
    unit = serializers.CharField(
        help_text="gpu, mig, node, gb (storage), or vcpu and memory (per vCPU and GiB beyond the bundle a GPU is "
        "sold with)"
    )
    mig_profile = serializers.CharField(allow_blank=True)
    region = serializers.CharField()
    currency = serializers.CharField()
    unit_price_per_hour = PriceField(help_text="Per unit-hour: per GB-hour for storage.")
    unit_price_per_month = serializers.CharField(
        allow_null=True, help_text="Storage: the price per GB-month (730 hours) as quoted; null for compute."
    )
    effective_from = serializers.DateTimeField()
    next_price = serializers.DictField(allow_null=True, help_text="The next scheduled change, if any.")


class PricesView(LadderView):
    """The price book: every SKU's price now and its next scheduled change. Public."""

    base_permissions: ClassVar[list[type]] = [AllowAny]
    authentication_classes = ()

    @extend_schema(responses=PriceSerializer(many=True))
    def get(self, request: Request) -> Response:
        rows = []
        for sku, price, upcoming in selectors.prices_current(now=timezone.now()):
            rows.append(
                {
                    "sku": sku.code,
                    "rung": sku.rung,
                    "gpu_model": sku.gpu_model.name if sku.gpu_model is not None else None,
                    "storage_kind": sku.storage_kind or None,
                    "unit": sku.unit,
                    "mig_profile": sku.mig_profile,
                    "region": sku.region.code,
                    "currency": sku.currency,
                    "unit_price_per_hour": price.unit_price_per_hour,
                    "unit_price_per_month": _per_month(price),
                    "effective_from": price.effective_from,
                    "next_price": None
                    if upcoming is None
                    else {
                        "unit_price_per_hour": str(price_shown(upcoming.unit_price_per_hour)),
                        **({"unit_price_per_month": _per_month(upcoming)} if sku.is_storage else {}),
                        "effective_from": upcoming.effective_from.isoformat(),
                    },
                }
            )
        return Response(PriceSerializer(rows, many=True).data)


# --- the operators' storage price book ---------------------------------------------------------------------------


class StoragePriceSerializer(serializers.Serializer[Any]):
    region = serializers.CharField()
    storage_kind = serializers.CharField(help_text="filesystem, block or snapshot")
    sku = serializers.CharField()
    currency = serializers.CharField(allow_null=True)
    per_gb_month = serializers.CharField(allow_null=True, help_text="As quoted; null: not priced (volumes refused).")
    unit_price_per_hour = PriceField(allow_null=True, help_text="Per GB-hour, as the price book keeps it.")
    effective_from = serializers.DateTimeField(allow_null=True)
    next_price = serializers.DictField(allow_null=True, help_text="The next scheduled change, if any.")


def _storage_price_row(row: selectors.StoragePriceRow) -> dict[str, Any]:
    price, upcoming = row.current, row.upcoming
    shown = price or upcoming
    return {
        "region": row.region,
        "storage_kind": row.storage_kind,
        "sku": row.sku,
        "currency": shown.sku.currency if shown else None,
        "per_gb_month": str(price.per_gb_month) if price else None,
        "unit_price_per_hour": price.unit_price_per_hour if price else None,
        "effective_from": price.effective_from if price else None,
        "next_price": None
        if upcoming is None
        else {
            "per_gb_month": str(upcoming.per_gb_month),
            "unit_price_per_hour": str(price_shown(upcoming.unit_price_per_hour)),
            "effective_from": upcoming.effective_from.isoformat(),
        },
    }


class StoragePriceRequestSerializer(StrictSerializer):
    region = serializers.SlugRelatedField(slug_field="code", queryset=Region.objects.all())
    storage_kind = serializers.ChoiceField(choices=StorageKind.choices)
    per_gb_month = serializers.DecimalField(
        max_digits=12, decimal_places=6, min_value=Decimal(0), help_text="Price per provisioned GB per 730 hours."
    )
    effective_from = serializers.DateTimeField(required=False, help_text="Default: now. Never in the past.")


class StoragePriceViewSet(StaffViewSet):
    """Storage prices per region and kind, quoted per GB-month (kept per GB-hour): every region x kind, priced or
    not (an unpriced one refuses new volumes, 409 ``not_priced``). Operators schedule a price with a POST."""

    queryset = SkuPrice.objects.none()  # rows are every region x kind, not a queryset
    required_permission = StaffPermission.SKU_VIEW
    action_permissions: ClassVar[dict[str, StaffPermission]] = {"create": StaffPermission.PRICE_SET}
    pagination_class = None

    @extend_schema(responses=StoragePriceSerializer(many=True))
    def list(self, request: Request) -> Response:
        rows = selectors.storage_price_book(now=timezone.now())
        return Response(StoragePriceSerializer([_storage_price_row(r) for r in rows], many=True).data)

    @extend_schema(request=StoragePriceRequestSerializer, responses={201: StoragePriceSerializer})
    def create(self, request: Request) -> Response:
        body = StoragePriceRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        values = body.validated_data
        now = timezone.now()
        price = storage_price_set(
            region=values["region"],
            storage_kind=values["storage_kind"],
            price_per_gb_month=values["per_gb_month"],
            effective_from=values.get("effective_from") or now,
            actor=self.caller.actor,
        )
        starts_later = price.effective_from > now
        row = selectors.StoragePriceRow(
            values["region"].code,
            price.sku.storage_kind,
            price.sku.code,
            None if starts_later else price,
            price if starts_later else None,
        )
        return Response(StoragePriceSerializer(_storage_price_row(row)).data, status=201)


# --- usage and invoices ------------------------------------------------------------------------------------------


class UsageQuerySerializer(serializers.Serializer[Any]):
    MAX_RANGE: ClassVar[dict[str, timedelta]] = {"hour": timedelta(days=31), "day": timedelta(days=400)}

    from_ = serializers.DateTimeField(required=False, help_text="Default: the start of this month (UTC).")
    to = serializers.DateTimeField(required=False, help_text="Default: now (the open window included).")
    granularity = serializers.ChoiceField(choices=["hour", "day"], default="hour")

    def to_internal_value(self, data: Any) -> Any:
        data = {("from_" if k == "from" else k): v for k, v in data.items()}
        values = super().to_internal_value(data)
        now = timezone.now()
        values.setdefault("from_", selectors.month_of(now)[0])
        values.setdefault("to", now + timedelta(hours=1))
        if values["to"] <= values["from_"]:
            raise serializers.ValidationError({"to": ["must be after from"]})
        if values["to"] - values["from_"] > self.MAX_RANGE[values["granularity"]]:
            days = self.MAX_RANGE[values["granularity"]].days
            raise serializers.ValidationError({"to": [f"a {values['granularity']}ly range spans at most {days} days"]})
        return values


class UsageRowSerializer(serializers.Serializer[Any]):
    sku = serializers.CharField()
    window_start = serializers.DateTimeField()
    unit = serializers.CharField(
        help_text="What quantity counts: GPU-hours, MIG slice-hours, node-hours, GB-hours, vCPU-hours or GiB-hours."
    )
    quantity = serializers.DecimalField(max_digits=20, decimal_places=6, help_text="Unit-hours of the SKU.")
    gpu_seconds = serializers.DecimalField(
        max_digits=20, decimal_places=3, help_text="Unit-seconds of the SKU (GB-seconds for storage)."
    )
    amount = serializers.DecimalField(max_digits=16, decimal_places=2)
    currency = serializers.CharField()


class UsageSerializer(serializers.Serializer[Any]):
    granularity = serializers.CharField()
    rows = UsageRowSerializer(many=True)


class BillingView(LadderView):
    extra_permissions = [IsTenantMember, TenantRoleAllows]
    role_actions: ClassVar[dict[str, Action]] = {"get": Action.BILLING_VIEW}


class UsageView(BillingView):
    """The tenant's usage per SKU and hour (or day), including the open window so far."""

    @extend_schema(
        parameters=[
            OpenApiParameter("from", datetime, description="Start (ISO-8601); default: the start of this month."),
            OpenApiParameter("to", datetime, description="End (ISO-8601, exclusive); default: now."),
            OpenApiParameter("granularity", str, enum=["hour", "day"]),
        ],
        responses=UsageSerializer,
    )
    def get(self, request: Request) -> Response:
        query = UsageQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        rows = selectors.usage_rows(
            tenant=self.membership.tenant,
            start=q["from_"],
            end=q["to"],
            granularity=q["granularity"],
            now=timezone.now(),
        )
        return Response(UsageSerializer({"granularity": q["granularity"], "rows": [r.__dict__ for r in rows]}).data)


class InvoiceLineSerializer(serializers.Serializer[Any]):
    sku = serializers.CharField()
    unit = serializers.CharField(
        help_text="What quantity counts: GPU-hours, MIG slice-hours, node-hours, GB-hours, vCPU-hours or GiB-hours."
    )
    quantity = serializers.DecimalField(max_digits=20, decimal_places=6, help_text="Unit-hours of the SKU.")
    unit_price = PriceField(help_text="Per unit-hour (per GB-hour for storage).")
    unit_price_per_month = serializers.DecimalField(
        max_digits=16, decimal_places=6, allow_null=True, help_text="Storage: per GB-month; null for compute."
    )
    amount = serializers.DecimalField(max_digits=16, decimal_places=2)


class InvoicePreviewSerializer(serializers.Serializer[Any]):
    mode = serializers.CharField(help_text=MODE_HELP)
    period_start = serializers.DateTimeField()
    period_end = serializers.DateTimeField()
    currency = serializers.CharField()
    lines = InvoiceLineSerializer(many=True)
    total = serializers.DecimalField(max_digits=16, decimal_places=2)
    stripe_preview = serializers.DictField(
        allow_null=True, required=False, help_text="Stripe's own preview (minor units), when Stripe is configured."
    )


class UpcomingInvoiceView(BillingView):
    """This month so far, priced from the price book (and, with Stripe, Stripe's own preview beside it)."""

    @extend_schema(responses=InvoicePreviewSerializer)
    def get(self, request: Request) -> Response:
        tenant = self.membership.tenant
        preview = selectors.invoice_upcoming(tenant=tenant, now=timezone.now())
        body: dict[str, Any] = {"mode": _mode(), **preview.__dict__}
        if stripe_enabled():
            try:
                body["stripe_preview"] = stripe_invoice_preview(tenant=tenant)
            except stripe.StripeError:
                body["stripe_preview"] = None  # Stripe unreachable: the ledger's preview stands on its own
        return Response(InvoicePreviewSerializer(body).data)


class InvoiceSerializer(serializers.ModelSerializer[Invoice]):
    class Meta:
        model = Invoice
        fields = [
            "id",
            "stripe_id",
            "status",
            "currency",
            "period_start",
            "period_end",
            "subtotal",
            "total",
            "amount_due",
            "amount_paid",
            "lines",
            "hosted_invoice_url",
        ]
        read_only_fields = fields


class InvoiceLedgerPreviewSerializer(InvoicePreviewSerializer):
    """A month's local preview as the invoice list shows it in ledger-only mode."""

    status = serializers.CharField(help_text="`preview`: priced from the price book, not an invoice of Stripe's.")


_INVOICE_ROW = PolymorphicProxySerializer(
    component_name="InvoiceListed",
    serializers=[InvoiceSerializer, InvoiceLedgerPreviewSerializer],
    resource_type_field_name=None,
    many=True,
)


class InvoiceViewSet(mixins.ListModelMixin, TenantScopedViewSet):
    """Invoices: Stripe's, mirrored from its webhooks (amounts in minor units); in ledger-only mode, the
    local previews of every month with usage (status ``preview``, amounts as decimals)."""

    queryset = Invoice.objects.all()
    serializer_class = InvoiceSerializer
    role_actions: ClassVar[dict[str, Action]] = {"list": Action.BILLING_VIEW}

    @extend_schema(responses=_INVOICE_ROW)
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if stripe_enabled():
            return super().list(request, *args, **kwargs)
        previews = selectors.invoice_previews(tenant=self.caller.tenant, now=timezone.now())  # type: ignore[arg-type]
        data = [
            {
                "mode": "ledger_only",
                "status": "preview",
                **InvoicePreviewSerializer({"mode": "ledger_only", **p.__dict__}).data,
            }
            for p in previews
        ]
        return Response({"next": None, "previous": None, "results": data})


# --- budget and notifications --------------------------------------------------------------------------------------


class BudgetSerializer(StrictSerializer):
    monthly = serializers.DecimalField(
        max_digits=14, decimal_places=2, allow_null=True, help_text="Monthly budget in the account's currency."
    )
    hard_stop = serializers.BooleanField(
        default=False,
        help_text="At 100%: refuse new allocations, volumes and volume growth, stop running allocations (jobs at "
        "their next checkpoint); volumes and their data are kept.",
    )


class BudgetStatusSerializer(BudgetSerializer):
    currency = serializers.CharField()
    spend = serializers.DecimalField(max_digits=16, decimal_places=2, help_text="This month so far, open usage too.")
    alerts = serializers.ListField(child=serializers.IntegerField(), help_text="Thresholds (%) crossed this month.")


class BudgetView(LadderView):
    extra_permissions = [IsTenantMember, TenantRoleAllows]
    role_actions: ClassVar[dict[str, Action]] = {"get": Action.BILLING_VIEW, "put": Action.BUDGET_MANAGE}

    def _status(self) -> dict[str, Any]:
        tenant = self.membership.tenant
        account = services.billing_account(tenant)
        now = timezone.now()
        month = selectors.month_of(now)[0].date()
        return {
            "monthly": account.budget_monthly,
            "hard_stop": account.budget_hard_stop,
            "currency": account.currency,
            "spend": selectors.month_spend(tenant=tenant, now=now),
            "alerts": sorted(
                BudgetAlert.objects.filter(tenant=tenant, month=month).values_list("threshold", flat=True)
            ),
        }

    @extend_schema(responses=BudgetStatusSerializer)
    def get(self, request: Request) -> Response:
        return Response(BudgetStatusSerializer(self._status()).data)

    @extend_schema(request=BudgetSerializer, responses=BudgetStatusSerializer)
    def put(self, request: Request) -> Response:
        body = BudgetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        budget_update(
            tenant=self.membership.tenant,
            monthly=body.validated_data["monthly"],
            hard_stop=body.validated_data["hard_stop"],
            actor=self.caller.actor,
            now=timezone.now(),
        )
        return Response(BudgetStatusSerializer(self._status()).data)


class NotificationSerializer(serializers.ModelSerializer[Notification]):
    class Meta:
        model = Notification
        fields = ["id", "kind", "subject", "body", "created_at", "emailed_to"]
        read_only_fields = fields


class NotificationViewSet(mixins.ListModelMixin, TenantScopedViewSet):
    queryset = Notification.objects.all()
    serializer_class = NotificationSerializer
    role_actions: ClassVar[dict[str, Action]] = {"list": Action.BILLING_VIEW}


# --- Stripe's webhook -------------------------------------------------------------------------------------------


def _problem(status: int, code: str, detail: str) -> HttpResponse:
    return HttpResponse(
        json.dumps(problem_body(status, code, detail)), status=status, content_type=PROBLEM_CONTENT_TYPE
    )


@csrf_exempt
@require_POST
def stripe_webhook(request: HttpRequest) -> HttpResponse:
    """Verify ``Stripe-Signature`` (HMAC-SHA256 over the raw body, 300 s tolerance), refuse an event of another
    Stripe API version than Ladder's, and apply the event once."""
    secret = settings.STRIPE_WEBHOOK_SECRET
    if not secret:
        return _problem(503, "webhooks_disabled", "STRIPE_WEBHOOK_SECRET is not set: webhooks are not accepted.")
    header = request.headers.get("Stripe-Signature", "")
    try:
        stripe.Webhook.construct_event(request.body.decode("utf-8"), header, secret, tolerance=300)
        event = json.loads(request.body)
    except stripe.SignatureVerificationError:
        return _problem(400, "invalid_signature", "The Stripe-Signature header does not match the body.")
    except (ValueError, UnicodeDecodeError):
        return _problem(400, "invalid_payload", "The body is not a Stripe event.")
    if not isinstance(event, dict) or not {"id", "type", "data"} <= event.keys():
        return _problem(400, "invalid_payload", "The body is not a Stripe event.")
    refusal = version_refusal(event)
    if refusal is not None:
        return _problem(400, "stripe_api_version", refusal)
    processed = webhook_process(event)
    return JsonResponse({"received": True, "duplicate": not processed})
