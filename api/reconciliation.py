"""Finance staff: the reconciliation of a month (``GET /api/v1/finance/reconciliation?month=YYYY-MM[&tenant=]``),
the pushes Stripe refused or that came too late for it (``GET /api/v1/finance/pushes?state=failed``) and putting a
failed one back in the outbox (``POST /api/v1/finance/pushes/{id}/retry``)."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import LadderView, StaffViewSet
from api.permissions import HasStaffPermission
from api.problems import Problem
from api.serializers import refuse_body
from billing.metering import HOUR_MS, from_ms
from billing.models import UsageRollup
from billing.services.reconcile import (
    NEEDS_A_PERSON,
    reconciliation_as_json,
    reconciliation_month,
    retry_refusal,
    usage_rollup_retry,
    usage_rollups_needing_a_person,
)
from tenancy.models import Tenant


class ReconciliationView(LadderView):
    """The month's ledger against what the outbox sent, Stripe's meters and Stripe's invoices, per tenant x SKU x
    price, with every difference and its cause (`pending_push`, `failed_push`, `late_adjustment`,
    `rounding_carry`, `unexplained`); `clean` is true when none is unexplained. Reads Stripe live (a few requests
    per tenant and price); without Stripe configured, `mode` is `ledger_only`."""

    extra_permissions: ClassVar[list[type]] = [HasStaffPermission]

    def get_required_permission(self) -> str:
        return "billing.view_invoice"

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
    required_permission = "billing.view_usagerollup"
    action_permissions: ClassVar[dict[str, str]] = {"retry": "billing.change_usagerollup"}
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
