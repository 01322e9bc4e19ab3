"""Tenant data: ``/api/v1/data-assets`` (register, read, move, delete and cancel), ``/retention-policies``,
``/data/capture-policy``, signed ``/data/downloads``, the tenant's ``/residency-report`` and account closure
(``/tenant/close``).

Every write goes through one service of ``compliance``; refusals come back as problem+json with the service's
code (``residency``, ``zero_retention``, ``legal_hold``, ``asset_shredding``, ``below_legal_minimum``, ...).
"""

from __future__ import annotations

from typing import Any, ClassVar

import django_filters
from django.db.models import Prefetch
from django.http import Http404, HttpResponse
from django.urls import URLPattern, path
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, renderers, serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import SimpleRouter

from api.base import LadderView, TenantScopedViewSet
from api.permissions import IsTenantMember, TenantRoleAllows
from api.serializers import IdField, StrictSerializer, refuse_body
from compliance.domain import retention
from compliance.models import CATEGORY_CHOICES, AccountClosure, AssetState, DataAsset, RetentionPolicy, ShredReason
from compliance.reports import residency_report
from compliance.services.assets import (
    content_decode,
    data_asset_content,
    data_asset_create,
    data_asset_delete,
    data_asset_move,
    data_asset_shred_cancel,
    retention_keep_days,
)
from compliance.services.capture import capture_policy, capture_policy_set
from compliance.services.downloads import asset_download
from compliance.services.sweep import retention_policy_set
from core.ratelimit import credential_digest
from lifecycle.services.closure import tenant_close
from tenancy.domain.roles import Action
from tenancy.models import Tenant

# --- data assets -------------------------------------------------------------------------------------------------


class DataAssetSerializer(serializers.ModelSerializer[DataAsset]):
    region = serializers.CharField(source="region.code")
    derived_from = serializers.SerializerMethodField(help_text="Ids of the assets this one was made from.")
    derivatives = serializers.SerializerMethodField(help_text="Ids of the assets made from this one.")
    # Empty until shredding is scheduled; stated, so the schema says "" is one of its values.
    shred_reason = serializers.ChoiceField(choices=ShredReason.choices, allow_blank=True, read_only=True)

    class Meta:
        model = DataAsset
        fields = [
            "id",
            "name",
            "category",
            "region",
            "size_bytes",
            "created_at",
            "location",
            "key_id",
            "derived_from",
            "derivatives",
            "state",
            "shred_reason",
            "shred_after",
            "shredded_at",
        ]
        read_only_fields = fields

    def get_derived_from(self, asset: DataAsset) -> list[int]:
        return sorted(a.pk for a in asset.derived_from.all())

    def get_derivatives(self, asset: DataAsset) -> list[int]:
        return sorted(a.pk for a in asset.derivatives.all())


class DataAssetCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200)
    category = serializers.ChoiceField(choices=CATEGORY_CHOICES)
    region = serializers.SlugField(max_length=40, help_text="Region code; the tenant's residency must allow it.")
    size_bytes = serializers.IntegerField(
        min_value=0,
        max_value=2**63 - 1,
        required=False,
        allow_null=True,
        default=None,
        help_text="Required without content; with content, it must match (or be left out).",
    )
    derived_from = serializers.ListField(
        child=IdField(),
        required=False,
        default=list,
        max_length=1000,
        help_text="Ids of this tenant's assets this one was made from.",
    )
    content = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        default=None,
        trim_whitespace=False,
        help_text="The content itself, base64 (small: register larger data by size only). Stored encrypted.",
    )


class DataAssetMoveSerializer(StrictSerializer):
    region = serializers.SlugField(max_length=40, help_text="Region code; the tenant's residency must allow it.")


class DataAssetFilter(django_filters.FilterSet):
    category = django_filters.ChoiceFilter(choices=CATEGORY_CHOICES)
    state = django_filters.ChoiceFilter(choices=AssetState.choices)
    region = django_filters.CharFilter(field_name="region__code", help_text="Region code.")

    class Meta:
        model = DataAsset
        fields: list[str] = []


class OctetStreamRenderer(renderers.BaseRenderer):
    """Lets a client ask for ``application/octet-stream``; a problem on that path is still rendered as JSON."""

    media_type = "application/octet-stream"
    format = "bin"
    charset = None
    render_style = "binary"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if isinstance(data, bytes):
            return data
        return renderers.JSONRenderer().render(data)


_ids_only = DataAsset.objects.only("pk")
_REFUSED = OpenApiResponse(description="Refused: problem+json whose `code` names the rule.")


class DataAssetViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    """The tenant's data assets. Content is stored encrypted under a data key of each asset's own; deleting starts
    a waiting period (cancellable) after which the key is destroyed (crypto-shredding)."""

    queryset = DataAsset.objects.select_related("region").prefetch_related(
        Prefetch("derived_from", queryset=_ids_only), Prefetch("derivatives", queryset=_ids_only)
    )
    serializer_class = DataAssetSerializer
    filterset_class = DataAssetFilter
    http_method_names = ["get", "post", "delete", "head", "options"]
    role_actions: ClassVar[dict[str, Action]] = {
        "list": Action.DATA_VIEW,
        "retrieve": Action.DATA_VIEW,
        "content": Action.DATA_VIEW,
        "create": Action.DATA_MANAGE,
        "destroy": Action.DATA_MANAGE,
        "move": Action.DATA_MANAGE,
        "cancel_shredding": Action.DATA_MANAGE,
    }
    cursor_ordering = "-pk"  # newest first

    def _answer(self, asset: DataAsset, code: int = status.HTTP_200_OK) -> Response:
        return Response(DataAssetSerializer(self.get_queryset().get(pk=asset.pk)).data, status=code)

    @extend_schema(
        request=DataAssetCreateSerializer,
        responses={
            201: DataAssetSerializer,
            409: OpenApiResponse(
                description="`residency` (the region is outside the tenant's residency) or "
                "`zero_retention` (the tenant does not let the category persist)."
            ),
        },
    )
    def create(self, request: Request) -> Response:
        """Register an asset, with its content (base64) when small."""
        body = DataAssetCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        content = content_decode(data["content"]) if data["content"] is not None else None
        asset = data_asset_create(
            tenant=self.membership.tenant,
            name=data["name"],
            category=data["category"],
            region=data["region"],
            size_bytes=data["size_bytes"],
            derived_from=data["derived_from"],
            content=content,
            actor=self.caller.actor,
        )
        return self._answer(asset, status.HTTP_201_CREATED)

    @extend_schema(
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="The content."),
            404: OpenApiResponse(description="`no_content`: registered by size only (or `not_found`)."),
            409: OpenApiResponse(description="`asset_shredding` or `asset_shredded`."),
        },
    )
    @action(detail=True, methods=["get"], renderer_classes=[renderers.JSONRenderer, OctetStreamRenderer])
    def content(self, request: Request, pk: str) -> HttpResponse:
        """The asset's content, decrypted."""
        data = data_asset_content(asset=self.get_object())
        # A plain response: the bytes go out as they are, whichever renderer the Accept header picked.
        return HttpResponse(data, content_type="application/octet-stream")

    @extend_schema(
        responses={
            202: OpenApiResponse(DataAssetSerializer, description="Shredding is scheduled after the waiting period."),
            409: OpenApiResponse(description="`legal_hold` (with `holds`): a legal hold preserves it."),
        }
    )
    def destroy(self, request: Request, pk: str) -> Response:
        """Delete: the asset goes to ``shredding`` and its key is destroyed when the waiting period ends (deleting
        twice changes nothing)."""
        asset = data_asset_delete(asset=self.get_object(), actor=self.caller.actor)
        return self._answer(asset, status.HTTP_202_ACCEPTED)

    @extend_schema(request=DataAssetMoveSerializer, responses={200: DataAssetSerializer, 409: _REFUSED})
    @action(detail=True, methods=["post"])
    def move(self, request: Request, pk: str) -> Response:
        """Move the content to another region (409 ``residency`` outside the residency, ``asset_not_live`` for an
        asset being shredded)."""
        body = DataAssetMoveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        asset = data_asset_move(asset=self.get_object(), region=body.validated_data["region"], actor=self.caller.actor)
        return self._answer(asset)

    @extend_schema(request=None, responses={200: DataAssetSerializer, 409: _REFUSED})
    @action(detail=True, methods=["post"], url_path="cancel-shredding")
    def cancel_shredding(self, request: Request, pk: str) -> Response:
        """Take the asset back from its waiting period (a delete or retention; 409 ``not_shredding``,
        ``not_cancellable`` for an erasure or closure)."""
        refuse_body(request)
        asset = data_asset_shred_cancel(asset=self.get_object(), actor=self.caller.actor)
        return self._answer(asset)


# --- retention policies ------------------------------------------------------------------------------------------


class RetentionPolicySerializer(serializers.Serializer[Any]):
    category = serializers.ChoiceField(choices=CATEGORY_CHOICES)
    days = serializers.IntegerField(allow_null=True, help_text="Effective retention in days; null: zero retention.")
    zero_retention = serializers.BooleanField(help_text="The product does not persist this category at all.")
    # Declared fields leave the class namespace (DRF's metaclass), so this shadows nothing at run time.
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=["default", "tenant"], help_text="The product default or the tenant's."
    )
    legal_minimum_days = serializers.IntegerField(allow_null=True, help_text="What the law asks; null: no minimum.")


class RetentionPolicySetSerializer(StrictSerializer):
    # Bounded: the sweep adds the days to creation dates, and a date past the year 9999 would stop it.
    days = serializers.IntegerField(
        min_value=1, max_value=retention.MAX_DAYS, required=False, allow_null=True, default=None
    )
    zero_retention = serializers.BooleanField(
        required=False, default=False, help_text="Never persist this category (instead of days)."
    )


def _policies(tenant: Tenant) -> list[dict[str, Any]]:
    effective = retention_keep_days([tenant.pk])[tenant.pk]
    own = set(RetentionPolicy.objects.filter(tenant=tenant).values_list("category", flat=True))
    return [
        {
            "category": category.value,
            "days": effective[category.value],
            "zero_retention": effective[category.value] is None,
            "source": "tenant" if category.value in own else "default",
            "legal_minimum_days": retention.LEGAL_MINIMUM_DAYS.get(category.value),
        }
        for category in retention.Category
    ]


def _category(name: str) -> str:
    if name not in set(retention.Category):
        raise NotFound(f"There is no data category {name!r}.")
    return name


class RetentionPolicyListView(LadderView):
    """How long each category of the tenant's data is kept: the tenant's own rule or the product default, never
    below a legal minimum."""

    extra_permissions = [IsTenantMember, TenantRoleAllows]
    role_actions: ClassVar[dict[str, Action]] = {"get": Action.DATA_VIEW}

    @extend_schema(responses=RetentionPolicySerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(RetentionPolicySerializer(_policies(self.membership.tenant), many=True).data)


class RetentionPolicyView(LadderView):
    """One category's retention; the owner sets it (a shorter rule applies to existing data at the next sweep)."""

    extra_permissions = [IsTenantMember, TenantRoleAllows]
    role_actions: ClassVar[dict[str, Action]] = {"get": Action.DATA_VIEW, "put": Action.RETENTION_MANAGE}

    def _one(self, category: str) -> dict[str, Any]:
        row = next(p for p in _policies(self.membership.tenant) if p["category"] == category)
        return RetentionPolicySerializer(row).data

    @extend_schema(responses=RetentionPolicySerializer)
    def get(self, request: Request, category: str) -> Response:
        return Response(self._one(_category(category)))

    @extend_schema(
        request=RetentionPolicySetSerializer,
        responses={
            200: RetentionPolicySerializer,
            422: OpenApiResponse(description="`below_legal_minimum` for finance records, or `validation_error`."),
        },
    )
    def put(self, request: Request, category: str) -> Response:
        """``{"days": N}`` or ``{"zero_retention": true}``."""
        category = _category(category)
        body = RetentionPolicySetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        retention_policy_set(
            tenant=self.membership.tenant,
            category=category,
            days=body.validated_data["days"],
            zero_retention=body.validated_data["zero_retention"],
            actor=self.caller.actor,
        )
        return Response(self._one(category))


# --- capture policy and signed downloads ------------------------------------------------------------------------


class CapturePolicySerializer(StrictSerializer):
    inference_payloads = serializers.BooleanField(
        help_text="Keep serverless request and response payloads as inference_payload assets (off by default; a "
        "zero-retention rule for inference_payload still wins)."
    )


class CapturePolicyView(LadderView):
    """What the product may capture from the tenant's running work; the owner decides."""

    extra_permissions = [IsTenantMember, TenantRoleAllows]
    role_actions: ClassVar[dict[str, Action]] = {"get": Action.DATA_VIEW, "put": Action.RETENTION_MANAGE}

    @extend_schema(responses=CapturePolicySerializer)
    def get(self, request: Request) -> Response:
        policy = capture_policy(self.membership.tenant)
        return Response({"inference_payloads": policy.inference_payloads})

    @extend_schema(request=CapturePolicySerializer, responses=CapturePolicySerializer)
    def put(self, request: Request) -> Response:
        body = CapturePolicySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        policy = capture_policy_set(
            tenant=self.membership.tenant,
            inference_payloads=body.validated_data["inference_payloads"],
            actor=self.caller.actor,
        )
        return Response({"inference_payloads": policy.inference_payloads})


class DownloadQuerySerializer(StrictSerializer):
    expires = serializers.CharField(max_length=20)
    signature = serializers.CharField(max_length=64)


class AssetDownloadView(LadderView):
    """A data asset's content behind a signed link (how a workload's init container fetches a dataset it
    mounts): the link is the credential, so no API key is asked. 403 ``download_refused`` for a wrong or
    expired link."""

    base_permissions: ClassVar[list[type]] = [AllowAny]
    authentication_classes = ()
    renderer_classes = [renderers.JSONRenderer, OctetStreamRenderer]

    def throttle_subject(self, request: Request) -> str | None:
        """Counted per link, never per address: tenants' workloads fetch their datasets through shared NATs."""
        signature = str(request.query_params.get("signature", ""))
        if not signature:
            return None
        return f"download:{self.kwargs.get('asset_id')}:{credential_digest(signature)}"

    @extend_schema(
        parameters=[DownloadQuerySerializer],
        responses={(200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY)},
    )
    def get(self, request: Request, asset_id: int) -> HttpResponse:
        query = DownloadQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        content = asset_download(asset_id=asset_id, now=timezone.now(), **query.validated_data)
        return HttpResponse(content, content_type="application/octet-stream")


# --- residency report --------------------------------------------------------------------------------------------


class ReportPolicySerializer(serializers.Serializer[Any]):
    regions = serializers.ListField(child=serializers.CharField(), allow_null=True)
    jurisdictions = serializers.ListField(child=serializers.CharField(), allow_null=True)
    sovereign = serializers.BooleanField()


class ComputePlaceSerializer(serializers.Serializer[Any]):
    hall = serializers.CharField()
    region = serializers.CharField()
    jurisdiction = serializers.CharField()
    fenced_for = serializers.CharField(allow_null=True)
    allocations = serializers.IntegerField()
    first = serializers.DateTimeField(help_text="The first allocation placed here.")
    last = serializers.DateTimeField(allow_null=True, help_text="The last state change of one placed here.")
    violation = serializers.CharField(allow_null=True, help_text="Why the residency now forbids this place.")
    allocation_ids = serializers.ListField(
        child=serializers.IntegerField(), required=False, help_text="With a violation: the first ids."
    )


class DataPlaceSerializer(serializers.Serializer[Any]):
    region = serializers.CharField()
    jurisdiction = serializers.CharField()
    assets = serializers.IntegerField(help_text="Assets not shredded.")
    bytes = serializers.IntegerField()
    violation = serializers.CharField(allow_null=True, help_text="Why the residency now forbids this place.")
    asset_ids = serializers.ListField(
        child=serializers.IntegerField(), required=False, help_text="With a violation: the first ids."
    )


class VolumePlaceSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    region = serializers.CharField()
    jurisdiction = serializers.CharField()
    kind = serializers.CharField(help_text="`filesystem` or `block`.")
    size_gb = serializers.IntegerField(help_text="Provisioned size.")
    used_gb = serializers.IntegerField(allow_null=True, help_text="In use, as the backend last reported.")
    state = serializers.CharField()
    snapshots = serializers.IntegerField(help_text="Snapshots not deleted (they live in the volume's region).")
    violation = serializers.CharField(allow_null=True, help_text="Why the residency now forbids its region.")


class ResidencyReportSerializer(serializers.Serializer[Any]):
    tenant = serializers.CharField()
    policy = ReportPolicySerializer(help_text="The tenant's residency as it stands now.")
    compute = ComputePlaceSerializer(many=True, help_text="Where the tenant's allocations ran, by hall.")
    # Declared fields leave the class namespace (DRF's metaclass), so this shadows nothing at run time.
    data = DataPlaceSerializer(many=True, help_text="Where the tenant's data lives, by region.")  # type: ignore[assignment]
    volumes = VolumePlaceSerializer(
        many=True, help_text="Its volumes not deleted, one by one (each is also counted in `data` by region)."
    )
    violations = serializers.IntegerField(help_text="Places the residency now forbids.")


class ResidencyReportView(LadderView):
    """Where the tenant's compute ran and its data lives, each place judged against its residency now."""

    extra_permissions = [IsTenantMember, TenantRoleAllows]
    role_actions: ClassVar[dict[str, Action]] = {"get": Action.DATA_VIEW}

    @extend_schema(responses=ResidencyReportSerializer)
    def get(self, request: Request) -> Response:
        return Response(ResidencyReportSerializer(residency_report(tenant=self.membership.tenant)).data)


# --- account closure ---------------------------------------------------------------------------------------------


class ClosureSerializer(serializers.ModelSerializer[AccountClosure]):
    state = serializers.CharField(source="tenant.state", help_text="The tenant's state: `closing`.")
    final_invoice: serializers.PrimaryKeyRelatedField[DataAsset] = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True, help_text="Id of the final invoice (a data asset, category invoice)."
    )
    export: serializers.PrimaryKeyRelatedField[DataAsset] = serializers.PrimaryKeyRelatedField(
        read_only=True,
        allow_null=True,
        help_text="Id of the export bundle (a data asset: JSON lines); download it before `closes_at`.",
    )

    class Meta:
        model = AccountClosure
        fields = [
            "id",
            "state",
            "step",
            "requested_by",
            "requested_at",
            "updated_at",
            "attempts",
            "last_error",
            "closes_at",
            "allocations_stopped",
            "final_invoice",
            "export",
            "report",
        ]
        read_only_fields = fields


class TenantCloseView(LadderView):
    """The owner closes the tenant: work stops, the final invoice and an export bundle are stored, everything else
    not held is scheduled for shredding, and at ``closes_at`` the tenant is closed for good. The steps run in the
    background (``step`` says where the closure is); GET shows the closure.

    Volumes are listed in the export bundle, not copied into it, and a closing tenant runs no work: copy out what
    you need from your volumes *before* closing. Their keys, then the volumes, are destroyed at ``closes_at``."""

    extra_permissions = [IsTenantMember, TenantRoleAllows]
    role_actions: ClassVar[dict[str, Action]] = {"get": Action.TENANT_VIEW, "post": Action.TENANT_CLOSE}

    @extend_schema(
        responses={200: ClosureSerializer, 404: OpenApiResponse(description="The tenant has not asked to close.")}
    )
    def get(self, request: Request) -> Response:
        closure = AccountClosure.objects.select_related("tenant").filter(tenant=self.membership.tenant).first()
        if closure is None:
            raise Http404("The tenant has not asked to close.")
        return Response(ClosureSerializer(closure).data)

    @extend_schema(request=None, responses={202: ClosureSerializer})
    def post(self, request: Request) -> Response:
        refuse_body(request)
        closure = tenant_close(tenant=self.membership.tenant, actor=self.caller.actor)
        closure = AccountClosure.objects.select_related("tenant").get(pk=closure.pk)
        return Response(ClosureSerializer(closure).data, status=status.HTTP_202_ACCEPTED)


# --- routes ------------------------------------------------------------------------------------------------------


def register(router: SimpleRouter) -> None:
    """Add this module's viewsets to the API router."""
    router.register("data-assets", DataAssetViewSet, basename="data-asset")


urlpatterns: list[URLPattern] = [
    path("retention-policies", RetentionPolicyListView.as_view(), name="retention-policies"),
    path("retention-policies/<str:category>", RetentionPolicyView.as_view(), name="retention-policy"),
    path("residency-report", ResidencyReportView.as_view(), name="residency-report"),
    path("tenant/close", TenantCloseView.as_view(), name="tenant-close"),
    path("data/capture-policy", CapturePolicyView.as_view(), name="capture-policy"),
    path("data/downloads/<int:asset_id>", AssetDownloadView.as_view(), name="asset-download"),
]
