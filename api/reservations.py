"""Reservations (``/api/v1/reservations``, docs/capacity.md): whole GPUs of one model in one hall kept for a tenant
over a term and billed for it. Operators create them at any price and end them early; a tenant's owners and admins
order them within limits, priced by the book; its members read theirs, with their use: the GPUs its reserved work
holds now, and the GPU-hours used against those committed so far."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantOrStaffViewSet
from api.serializers import StrictSerializer, refuse_body
from billing.domain.pricing import unit_hours
from billing.selectors.commitments import reservation_use
from core.errors import Invalid
from lifecycle.services.capacity import reservation_create, reservation_end, reservation_order
from provisioning.models import GpuModel, Hall, Reservation
from tenancy.domain.roles import Action, StaffPermission
from tenancy.models import Tenant


class ReservationUseSerializer(serializers.Serializer[Any]):
    in_use_gpus = serializers.DecimalField(
        max_digits=10, decimal_places=3, help_text="GPUs its reserved work holds now."
    )
    used_gpu_hours = serializers.DecimalField(
        max_digits=16, decimal_places=6, help_text="GPU-hours its reserved work ran inside it so far."
    )
    committed_gpu_hours = serializers.DecimalField(
        max_digits=16, decimal_places=6, help_text="GPU-hours of its term from its start until now (or its end)."
    )
    utilisation = serializers.DecimalField(
        max_digits=8, decimal_places=4, allow_null=True, help_text="Used over committed; null before it starts."
    )


class ReservationSerializer(serializers.ModelSerializer[Reservation]):
    tenant = serializers.CharField(source="tenant.slug")
    gpu_model = serializers.CharField(source="gpu_model.name")
    region = serializers.CharField(source="hall.region.code")
    hall = serializers.CharField(source="hall.code")
    ended_at = serializers.DateTimeField(source="ends", help_text="When its term ends: its end, or ended early.")
    use = serializers.SerializerMethodField()

    class Meta:
        model = Reservation
        fields = [
            "id",
            "tenant",
            "gpu_model",
            "region",
            "hall",
            "gpus",
            "starts_at",
            "ends_at",
            "cancelled_at",
            "ended_at",
            "price_per_gpu_hour",
            "currency",
            "created_at",
            "use",
        ]
        read_only_fields = fields

    @extend_schema_field(ReservationUseSerializer)
    def get_use(self, reservation: Reservation) -> dict[str, Any]:
        use = reservation_use(reservation, now=timezone.now())
        share = use.utilisation
        return ReservationUseSerializer(
            {
                "in_use_gpus": use.in_use_gpus,
                "used_gpu_hours": unit_hours(use.used_milli),
                "committed_gpu_hours": unit_hours(use.committed_milli),
                "utilisation": None if share is None else Decimal(share).quantize(Decimal("0.0001")),
            }
        ).data


class ReservationRequestSerializer(StrictSerializer):
    tenant: serializers.SlugRelatedField[Tenant] = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=Tenant.objects.all(),
        required=False,
        help_text="Operators: the tenant it is for. A tenant's own order leaves it out (or names itself).",
    )
    gpu_model: serializers.SlugRelatedField[GpuModel] = serializers.SlugRelatedField(
        slug_field="name", queryset=GpuModel.objects.all()
    )
    hall: serializers.SlugRelatedField[Hall] = serializers.SlugRelatedField(
        slug_field="code", queryset=Hall.objects.select_related("region")
    )
    gpus = serializers.IntegerField(min_value=1, max_value=100_000, help_text="Whole nodes' worth of GPUs.")
    starts_at = serializers.DateTimeField(required=False, help_text="Default: now.")
    ends_at = serializers.DateTimeField()
    price_per_gpu_hour = serializers.DecimalField(
        max_digits=16,
        decimal_places=6,
        required=False,
        help_text="Operators: what the tenant pays per GPU-hour of the term, used or not. A tenant's own order is "
        "priced by the book: on demand less its term's discount.",
    )


class ReservationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantOrStaffViewSet):
    """A tenant's members read its reservations; operators read every tenant's, create them (POST) and end one
    early (``POST .../{id}/end``)."""

    queryset = Reservation.objects.select_related("tenant", "gpu_model", "hall__region").order_by("-starts_at", "id")
    serializer_class = ReservationSerializer
    role_actions: ClassVar[dict[str, Action]] = {
        "list": Action.ALLOCATION_VIEW,
        "retrieve": Action.ALLOCATION_VIEW,
        "create": Action.RESERVATION_ORDER,
    }
    required_permission = StaffPermission.RESERVATION_VIEW
    action_permissions: ClassVar[dict[str, StaffPermission]] = {
        "create": StaffPermission.RESERVATION_ADD,
        "end": StaffPermission.RESERVATION_CHANGE,
    }

    @extend_schema(request=ReservationRequestSerializer, responses={201: ReservationSerializer})
    def create(self, request: Request) -> Response:
        """Keep whole GPUs of a model in a hall for a tenant over a term (422 for a term, count or hall that is not
        one; 409 ``no_capacity`` when the pool cannot keep them). An operator names the tenant and the price; a
        tenant's owner or admin orders one for its own tenant within limits, priced by the book (409
        ``reservation_limit`` over them; docs/capacity.md, "Ordering one")."""
        body = ReservationRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        place = {
            "gpu_model": data["gpu_model"],
            "hall": data["hall"],
            "gpus": data["gpus"],
            "starts_at": data.get("starts_at") or timezone.now(),
            "ends_at": data["ends_at"],
            "actor": self.caller.actor,
        }
        own = self.caller.tenant
        if own is not None:
            if data.get("tenant", own) != own:
                raise Invalid("validation_error", "You order reservations for your own tenant only.", field="tenant")
            if "price_per_gpu_hour" in data:
                raise Invalid(
                    "validation_error",
                    "A reservation you order is priced by the book (on demand less its term's discount).",
                    field="price_per_gpu_hour",
                )
            reservation = reservation_order(tenant=own, **place)
        else:
            for name in ("tenant", "price_per_gpu_hour"):
                if name not in data:
                    raise Invalid("validation_error", "This field is required.", field=name)
            reservation = reservation_create(
                tenant=data["tenant"], price_per_gpu_hour=data["price_per_gpu_hour"], **place
            )
        return Response(ReservationSerializer(self.get_queryset().get(pk=reservation.pk)).data, status=201)

    @extend_schema(request=None, responses={200: ReservationSerializer})
    @action(detail=True, methods=["post"])
    def end(self, request: Request, pk: str) -> Response:
        """End it now: its room is no longer kept and its term is billed up to now."""
        refuse_body(request)
        reservation_end(reservation=self.get_object(), actor=self.caller.actor)
        return Response(ReservationSerializer(self.get_queryset().get(pk=pk)).data, status=status.HTTP_200_OK)
