"""Compliance: legal holds (``/api/v1/compliance/legal-holds``), erasure requests (``/api/v1/erasure-requests``,
for a tenant's owner and for compliance staff acting for a data subject) and the compliance residency report
(``/api/v1/compliance/residency-report``)."""

from __future__ import annotations

from typing import Any, ClassVar

import django_filters
from django.db.models import Prefetch, QuerySet
from django.urls import URLPattern, path
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import SimpleRouter

from api.base import LadderView, StaffViewSet, TenantOrStaffViewSet
from api.data import ResidencyReportSerializer
from api.permissions import HasStaffPermission
from api.serializers import IdField, StrictSerializer
from compliance.domain.retention import Category
from compliance.models import (
    CATEGORY_CHOICES,
    ErasureItem,
    ErasureOutcome,
    ErasureRequest,
    ErasureState,
    HoldState,
    LegalHold,
)
from compliance.reports import residency_report
from compliance.services.assets import AssetScope
from compliance.services.erasure import erasure_request_create
from compliance.services.holds import (
    holds_of,
    legal_hold_create,
    legal_hold_preview,
    legal_hold_register,
    legal_hold_release,
)
from tenancy.domain.roles import Action, StaffPermission
from tenancy.models import Tenant
from tenancy.selectors import tenants_nameable

RETRAIN_NEEDED = "retrain needed"
MAX_NAMED_ASSETS = 1000
CATEGORY_NAMES = ", ".join(f"`{c.value}`" for c in Category)


def category_list(help_text: str, **kwargs: Any) -> serializers.ListField:
    """A list of data categories, as plain strings: the services refuse unknown ones (422 naming ``categories``).
    Not an enum in the schema, where it would give the category choices a second name beside ``CategoryEnum``."""
    return serializers.ListField(
        child=serializers.CharField(), help_text=f"{help_text} Among {CATEGORY_NAMES}.", **kwargs
    )


def _tenants_nameable_by(request: Any) -> QuerySet[Tenant]:
    # django-filter hands a callable queryset the request; the view on it knows the caller (none: the schema).
    if request is None:
        return Tenant.objects.none()
    return tenants_nameable(tenant=request.parser_context["view"].caller.tenant)


# --- legal holds: serializers -------------------------------------------------------------------------------------


class CategoryFigureSerializer(serializers.Serializer[Any]):
    assets = serializers.IntegerField()
    bytes = serializers.IntegerField()


class PreservationSerializer(serializers.Serializer[Any]):
    assets = serializers.IntegerField()
    bytes = serializers.IntegerField()
    by_category = serializers.DictField(child=CategoryFigureSerializer(), help_text="Per category, those covered.")


class HoldPreviewSerializer(PreservationSerializer):
    tenant = serializers.CharField(help_text="Tenant slug.")


class HoldScopeSerializer(StrictSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", queryset=Tenant.objects.all(), help_text="Tenant slug.")
    categories = category_list("Categories covered; empty or absent: every category.", required=False, default=list)
    created_from = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text="Covers assets created at or after (ISO-8601)."
    )
    created_to = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text="Covers assets created at or before (ISO-8601)."
    )

    def scope(self) -> AssetScope:
        data = self.validated_data
        return AssetScope(
            categories=data["categories"], created_from=data["created_from"], created_to=data["created_to"]
        )


class LegalHoldCreateSerializer(HoldScopeSerializer):
    matter = serializers.CharField(max_length=200)
    reason = serializers.CharField()
    lock_until = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Preservation lock: the hold cannot be released before this moment.",
    )


class LegalHoldReleaseSerializer(StrictSerializer):
    reason = serializers.CharField()


class HeldVolumeSerializer(serializers.Serializer[Any]):
    """A volume a hold preserves: it is not deleted, erased nor shredded while the hold is active."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    region = serializers.CharField(source="region.code")
    kind = serializers.CharField()
    size_gb = serializers.IntegerField()
    state = serializers.CharField()


class HoldEntrySerializer(serializers.Serializer[Any]):
    """A hold of the register: the hold, what it preserves now and the erasure requests it suspends."""

    id = serializers.IntegerField(source="hold.pk")
    tenant = serializers.CharField(source="hold.tenant.slug")
    matter = serializers.CharField(source="hold.matter")
    reason = serializers.CharField(source="hold.reason")
    categories = category_list("Categories covered; empty: every category.", source="hold.categories")
    created_from = serializers.DateTimeField(source="hold.created_from", allow_null=True)
    created_to = serializers.DateTimeField(source="hold.created_to", allow_null=True)
    lock_until = serializers.DateTimeField(source="hold.lock_until", allow_null=True)
    state = serializers.ChoiceField(choices=HoldState.choices, source="hold.state")
    created_at = serializers.DateTimeField(source="hold.created_at")
    created_by = serializers.CharField(source="hold.created_by")
    released_at = serializers.DateTimeField(source="hold.released_at", allow_null=True)
    released_by = serializers.CharField(source="hold.released_by")
    release_reason = serializers.CharField(source="hold.release_reason")
    preserves = PreservationSerializer(help_text="What it preserves now (nothing once released).")
    suspends = serializers.ListField(
        child=serializers.IntegerField(), help_text="Ids of the erasure requests it suspends (data withheld)."
    )
    volumes = HeldVolumeSerializer(many=True, help_text="The volumes it preserves now (none once released).")


class LegalHoldFilter(django_filters.FilterSet):
    tenant = django_filters.ModelChoiceFilter(
        field_name="tenant", to_field_name="slug", queryset=Tenant.objects.all(), help_text="Tenant slug."
    )
    state = django_filters.ChoiceFilter(choices=HoldState.choices)

    class Meta:
        model = LegalHold
        fields: list[str] = []


# --- legal holds: the view ----------------------------------------------------------------------------------------


class LegalHoldViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, StaffViewSet):
    """The legal-hold register, for compliance staff: place, preview, release; newest first."""

    queryset = holds_of()
    serializer_class = HoldEntrySerializer
    filterset_class = LegalHoldFilter
    required_permission = StaffPermission.HOLD_VIEW
    action_permissions: ClassVar[dict[str, StaffPermission]] = {
        "create": StaffPermission.HOLD_PLACE,
        "release": StaffPermission.HOLD_RELEASE,
    }
    cursor_ordering = "-pk"

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(HoldEntrySerializer(legal_hold_register(page or []), many=True).data)

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return Response(_entry(self.get_object()))

    @extend_schema(request=LegalHoldCreateSerializer, responses={201: HoldEntrySerializer})
    def create(self, request: Request) -> Response:
        """Place a hold: from now on nothing it covers is deleted, and shreddings already waiting stop."""
        data = LegalHoldCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        hold = legal_hold_create(
            tenant=data.validated_data["tenant"],
            matter=data.validated_data["matter"],
            reason=data.validated_data["reason"],
            scope=data.scope(),
            lock_until=data.validated_data["lock_until"],
            actor=self.caller.actor,
        )
        return Response(_entry(hold), status=status.HTTP_201_CREATED)

    @extend_schema(request=HoldScopeSerializer, responses=HoldPreviewSerializer, filters=False)
    @action(detail=False, methods=["post"], filterset_class=None, pagination_class=None)
    def preview(self, request: Request) -> Response:
        """What a hold with this scope would preserve now; nothing is written."""
        data = HoldScopeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        tenant = data.validated_data["tenant"]
        return Response({"tenant": tenant.slug, **legal_hold_preview(tenant=tenant, scope=data.scope()).as_dict()})

    @extend_schema(request=LegalHoldReleaseSerializer, responses=HoldEntrySerializer, filters=False)
    @action(detail=True, methods=["post"], filterset_class=None)
    def release(self, request: Request, pk: str) -> Response:
        """Release a hold (409 ``hold_locked`` before its preservation lock, ``hold_released`` twice). Nothing is
        deleted by this; erasure requests it suspended go on, and so do the deletions of volumes it stopped."""
        data = LegalHoldReleaseSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        hold = legal_hold_release(hold=self.get_object(), reason=data.validated_data["reason"], actor=self.caller.actor)
        return Response(_entry(hold))


def _entry(hold: LegalHold) -> Any:
    return HoldEntrySerializer(legal_hold_register([hold])[0]).data


# --- erasure requests ---------------------------------------------------------------------------------------------


class ErasureScopeSerializer(serializers.Serializer[Any]):
    assets = serializers.ListField(child=serializers.IntegerField())
    categories = category_list("Categories asked for.")
    created_from = serializers.DateTimeField(allow_null=True)
    created_to = serializers.DateTimeField(allow_null=True)


class WithheldSerializer(serializers.Serializer[Any]):
    asset = serializers.IntegerField()
    hold = serializers.IntegerField(help_text="The legal hold that preserves it (GDPR Art. 17(3)(e)).")


class AffectedSerializer(serializers.Serializer[Any]):
    asset = serializers.IntegerField()
    name = serializers.CharField()
    category = serializers.ChoiceField(choices=CATEGORY_CHOICES)
    note = serializers.CharField()


class ErasureRequestSerializer(serializers.ModelSerializer[ErasureRequest]):
    tenant: serializers.SlugRelatedField[Tenant] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    scope = ErasureScopeSerializer(read_only=True, help_text="What was asked.")
    deleted = serializers.SerializerMethodField(help_text="Assets scheduled for crypto-shredding.")
    withheld = serializers.SerializerMethodField(help_text="Assets preserved under a legal hold, for now.")
    affected = serializers.SerializerMethodField(help_text="Derived from erased data: retrain needed.")

    class Meta:
        model = ErasureRequest
        fields = [
            "id",
            "tenant",
            "state",
            "on_behalf_of",
            "scope",
            "requested_by",
            "created_at",
            "completed_at",
            "deleted",
            "withheld",
            "affected",
        ]
        read_only_fields = fields

    @staticmethod
    def _items(request: ErasureRequest, outcome: str) -> list[ErasureItem]:
        return [item for item in request.items.all() if item.outcome == outcome]

    def get_deleted(self, request: ErasureRequest) -> list[int]:
        return [item.asset_id for item in self._items(request, ErasureOutcome.DELETED)]

    @extend_schema_field(WithheldSerializer(many=True))
    def get_withheld(self, request: ErasureRequest) -> list[dict[str, Any]]:
        return [{"asset": i.asset_id, "hold": i.hold_id} for i in self._items(request, ErasureOutcome.WITHHELD)]

    @extend_schema_field(AffectedSerializer(many=True))
    def get_affected(self, request: ErasureRequest) -> list[dict[str, Any]]:
        return [
            {"asset": i.asset_id, "name": i.asset.name, "category": i.asset.category, "note": RETRAIN_NEEDED}
            for i in self._items(request, ErasureOutcome.AFFECTED)
        ]


class ErasureRequestCreateSerializer(StrictSerializer):
    """Name the assets, or categories and/or a creation date range (both: the named assets among those).
    Compliance staff name the tenant and the data subject (``on_behalf_of``); a tenant's owner erases its own
    tenant's data (another tenant's slug answers as an unknown one)."""

    tenant = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=Tenant.objects.all(),
        required=False,
        help_text="The tenant whose data is erased: required for compliance staff; a tenant's own by default.",
    )
    on_behalf_of = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        help_text="The data subject who asked: required for compliance staff, optional for a tenant.",
    )
    assets = serializers.ListField(
        child=IdField(),
        required=False,
        default=list,
        max_length=MAX_NAMED_ASSETS,
        help_text=f"Asset ids (at most {MAX_NAMED_ASSETS}; name categories and dates for more).",
    )
    categories = category_list("Erase the tenant's assets of these categories.", required=False, default=list)
    created_from = serializers.DateTimeField(required=False, allow_null=True, default=None)
    created_to = serializers.DateTimeField(required=False, allow_null=True, default=None)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        caller = self.context.get("caller")
        if caller is None:  # the schema: one body for both audiences
            return
        nameable = tenants_nameable(tenant=caller.tenant)
        if caller.tenant is not None:
            self.fields["tenant"] = serializers.SlugRelatedField(
                slug_field="slug", queryset=nameable, default=caller.tenant
            )
        else:
            self.fields["tenant"] = serializers.SlugRelatedField(slug_field="slug", queryset=nameable)
            self.fields["on_behalf_of"] = serializers.CharField(max_length=200)


class ErasureRequestFilter(django_filters.FilterSet):
    tenant = django_filters.ModelChoiceFilter(
        field_name="tenant", to_field_name="slug", queryset=_tenants_nameable_by, help_text="Tenant slug (staff)."
    )
    state = django_filters.ChoiceFilter(choices=ErasureState.choices)

    class Meta:
        model = ErasureRequest
        fields: list[str] = []


class ErasureRequestViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantOrStaffViewSet):
    """Erasure requests, newest first: a tenant's owner erases (and follows) its own tenant's data; compliance
    staff erase a data subject's data in any tenant, and see every request.

    Reading is the owner's too, not every member's: a request names a data subject (``on_behalf_of``) and lists
    exactly what of theirs was erased."""

    queryset = ErasureRequest.objects.select_related("tenant").prefetch_related(
        Prefetch("items", queryset=ErasureItem.objects.select_related("asset").order_by("pk"))
    )
    serializer_class = ErasureRequestSerializer
    filterset_class = ErasureRequestFilter
    role_actions: ClassVar[dict[str, Action]] = {
        "list": Action.ERASURE_REQUEST,
        "retrieve": Action.ERASURE_REQUEST,
        "create": Action.ERASURE_REQUEST,
    }
    required_permission = StaffPermission.ERASURE_VIEW
    action_permissions: ClassVar[dict[str, StaffPermission]] = {"create": StaffPermission.ERASURE_REQUEST}
    cursor_ordering = "-pk"

    @extend_schema(request=ErasureRequestCreateSerializer, responses={201: ErasureRequestSerializer})
    def create(self, request: Request) -> Response:
        """Erase now what no legal hold preserves (crypto-shredding after the waiting period), withhold the rest
        until its holds are released, and name the assets derived from erased data."""
        data = ErasureRequestCreateSerializer(data=request.data, context={"caller": self.caller})
        data.is_valid(raise_exception=True)
        made = erasure_request_create(
            tenant=data.validated_data["tenant"],
            actor=self.caller.actor,
            asset_ids=data.validated_data["assets"],
            categories=data.validated_data["categories"],
            created_from=data.validated_data["created_from"],
            created_to=data.validated_data["created_to"],
            on_behalf_of=data.validated_data["on_behalf_of"],
        )
        return Response(self.get_serializer(self.get_queryset().get(pk=made.pk)).data, status=status.HTTP_201_CREATED)


# --- the compliance residency report -------------------------------------------------------------------------------


class ResidencyReportQuerySerializer(serializers.Serializer[Any]):
    tenant = serializers.SlugField(help_text="Tenant slug.")


class ComplianceResidencyReportView(LadderView):
    """A tenant's residency report, for compliance staff: where its compute ran and its data lives, each place
    judged against its residency as it stands now."""

    extra_permissions: ClassVar[list[type]] = [HasStaffPermission]

    def get_required_permission(self) -> StaffPermission:
        return StaffPermission.DATA_ASSET_VIEW

    @extend_schema(
        parameters=[OpenApiParameter("tenant", str, required=True, description="Tenant slug.")],
        responses=ResidencyReportSerializer,
    )
    def get(self, request: Request) -> Response:
        query = ResidencyReportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        slug = query.validated_data["tenant"]
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise NotFound(f"There is no tenant {slug!r}.")
        return Response(ResidencyReportSerializer(residency_report(tenant=tenant)).data)


def register(router: SimpleRouter) -> None:
    """Add this module's viewsets to the API router."""
    router.register("compliance/legal-holds", LegalHoldViewSet, basename="legal-hold")
    router.register("erasure-requests", ErasureRequestViewSet, basename="erasure-request")


urlpatterns: list[URLPattern] = [
    path("compliance/residency-report", ComplianceResidencyReportView.as_view(), name="compliance-residency-report"),
]
