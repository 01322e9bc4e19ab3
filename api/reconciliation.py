"""Finance staff: the reconciliation of a month, live (``GET /api/v1/finance/reconciliation?month=YYYY-MM[&tenant=]``)
or as a run computed by a task (``/api/v1/finance/reconciliation-runs``: POST starts one, GETs read them); the
pushes Stripe refused or that came too late for it (``GET /api/v1/finance/pushes?state=failed``) and putting a
failed one back in the outbox (``POST /api/v1/finance/pushes/{id}/retry``)."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import LadderView, StaffViewSet
from api.permissions import HasStaffPermission
from api.problems import Problem
from api.serializers import StrictSerializer, refuse_body
from billing.domain.metering import HOUR_MS, from_ms
from billing.models import ReconciliationRun, UsageRollup
from billing.services.reconcile import (
    NEEDS_A_PERSON,
    reconciliation_as_json,
    reconciliation_month,
    reconciliation_run_start,
    retry_refusal,
    usage_rollup_retry,
    usage_rollups_needing_a_person,
)
from core.domain.months import MONTH
from tenancy.domain.roles import StaffPermission
from tenancy.models import Tenant


class ReconciliationView(LadderView):
    """The month's ledger against what the outbox sent, Stripe's meters and Stripe's invoices, per tenant x SKU x
    price, with every difference and its cause (`pending_push`, `failed_push`, `late_adjustment`,
    `rounding_carry`, `unexplained`); `clean` is true when none is unexplained. Reads Stripe live (a few requests
    per tenant and price); without Stripe configured, `mode` is `ledger_only`."""

    extra_permissions: ClassVar[list[type]] = [HasStaffPermission]

    def get_required_permission(self) -> StaffPermission:
        return StaffPermission.INVOICE_VIEW

    @extend_schema(
        parameters=[
            OpenApiParameter("month", OpenApiTypes.STR, required=True, description="The month, YYYY-MM (UTC)."),
            OpenApiParameter("tenant", OpenApiTypes.STR, description="Only this tenant (its slug)."),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request) -> Response:
        tenant = None
        if slug := request.query_params.get("tenant"):
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is None:
                raise Problem(404, "not_found", f"No tenant {slug!r}.")
        month = request.query_params.get("month")
        if not month:
            raise Problem(422, "validation_error", "Give the month: ?month=YYYY-MM.", errors={"month": ["Required."]})
        return Response(reconciliation_as_json(reconciliation_month(month=month, tenant=tenant)))


class PushSerializer(serializers.ModelSerializer[UsageRollup]):
    tenant: serializers.SlugRelatedField[Tenant] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    sku = serializers.CharField(source="sku.code", read_only=True)
    identifier = serializers.CharField(read_only=True, help_text="The meter event's identifier at Stripe.")
    window_start = serializers.SerializerMethodField()
    window_end = serializers.SerializerMethodField()
    stripe_message = serializers.CharField(source="push_error", read_only=True, help_text="Why it was not sent.")
    retry_refused = serializers.SerializerMethodField(help_text="Why it cannot be retried; null when it can.")

    class Meta:
        model = UsageRollup
        fields = [
            "id",
            "identifier",
            "tenant",
            "sku",
            "window_start",
            "window_end",
            "seq",
            "quantity_milli",
            "meter_value",
            "amount",
            "currency",
            "push_state",
            "push_attempts",
            "stripe_message",
            "retry_refused",
        ]
        read_only_fields = fields

    def get_window_start(self, row: UsageRollup) -> str:
        return from_ms(row.window_ms).isoformat()

    def get_window_end(self, row: UsageRollup) -> str:
        return from_ms(row.window_ms + HOUR_MS).isoformat()

    def get_retry_refused(self, row: UsageRollup) -> str | None:
        return retry_refusal(row, timezone.now())


class PushViewSet(mixins.ListModelMixin, StaffViewSet):
    """Usage rollups that need a person: refused by Stripe (`failed`, with Stripe's message) or too old for it
    (`stale`); `?state=` narrows to one. `retry` puts a failed one back in the outbox."""

    serializer_class = PushSerializer
    required_permission = StaffPermission.USAGE_VIEW
    action_permissions: ClassVar[dict[str, StaffPermission]] = {"retry": StaffPermission.PUSH_RETRY}
    cursor_ordering = "pk"

    def get_queryset(self) -> QuerySet[UsageRollup]:
        if getattr(self, "action", None) != "list":
            return UsageRollup.objects.select_related("tenant", "sku")
        state = self.request.query_params.get("state")
        if state is not None and state not in NEEDS_A_PERSON:
            choices = ", ".join(NEEDS_A_PERSON)
            raise Problem(422, "validation_error", f"state is one of {choices}.", errors={"state": [choices]})
        return usage_rollups_needing_a_person(state=state)

    @extend_schema(
        parameters=[OpenApiParameter("state", OpenApiTypes.STR, enum=[s.value for s in NEEDS_A_PERSON])],
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=None, responses=PushSerializer)
    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str) -> Response:
        """Back to `pending`, due at once (audited `billing.push_retried`). Idempotent: a row already pending,
        sending or sent is returned as it is. 409 `push_not_retryable` for a stale row, one now too old for
        Stripe, or one whose earlier send has an unknown outcome."""
        refuse_body(request)
        row = self.get_object()
        row = usage_rollup_retry(rollup_id=row.pk, actor=self.caller.actor)
        return Response(PushSerializer(row).data)


# --- runs -------------------------------------------------------------------------------------------------------


class RunStartSerializer(StrictSerializer):
    month = serializers.RegexField(MONTH, help_text="YYYY-MM (UTC).")  # its shape; the service reads the month
    tenant = serializers.SlugField(required=False, allow_null=True, default=None, help_text="Only this tenant.")


class RunSerializer(serializers.ModelSerializer[ReconciliationRun]):
    tenant: serializers.SlugRelatedField[Tenant] = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = ReconciliationRun
        fields = [
            "id",
            "month",
            "tenant",
            "state",
            "requested_by",
            "created_at",
            "finished_at",
            "mode",
            "is_clean",
            "unexplained",
            "error",
        ]
        read_only_fields = fields


class RunDetailSerializer(RunSerializer):
    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "result"]
        read_only_fields = fields


class ReconciliationRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, StaffViewSet):
    """Reconciliation runs, newest first: started here (POST, 202; the task reads the ledger and Stripe) or by the
    monthly beat once a month's invoices are final. A run's `result` is the reconciliation's JSON; reading runs
    never calls Stripe."""

    queryset = ReconciliationRun.objects.select_related("tenant")
    required_permission = StaffPermission.RECONCILIATION_VIEW
    action_permissions: ClassVar[dict[str, StaffPermission]] = {"create": StaffPermission.RECONCILIATION_START}
    cursor_ordering = "-pk"

    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        return RunDetailSerializer if getattr(self, "action", None) == "retrieve" else RunSerializer

    @extend_schema(request=RunStartSerializer, responses={202: RunSerializer, 200: RunSerializer})
    def create(self, request: Request) -> Response:
        """Start a run of the month (202), or answer the one of the same month and tenant still running (200)."""
        data = RunStartSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        tenant = None
        if slug := data.validated_data["tenant"]:
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is None:
                raise Problem(404, "not_found", f"No tenant {slug!r}.")
        run, started = reconciliation_run_start(
            month=data.validated_data["month"], tenant=tenant, actor=self.caller.actor
        )
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED if started else status.HTTP_200_OK)
