"""A tenant's volumes: ``/api/v1/volumes`` (create, or restore from a snapshot; list, read, grow and rename with
PATCH, delete; snapshot) and ``/api/v1/volume-snapshots`` (list, read, delete).

Every write goes through ``lifecycle.services.volumes``; refusals come back as problem+json with the service's code
(``residency``, ``quota``, ``name_taken``, ``volume_in_use``, ``legal_hold``, ``volume_state``, ``budget_exceeded``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import django_filters
from django.db.models import Count, Q
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantScopedViewSet
from api.serializers import IdField, StrictSerializer
from compliance.models import DataAsset
from lifecycle.services.volumes import (
    volume_create,
    volume_delete,
    volume_grow,
    volume_rename,
    volume_snapshot_create,
    volume_snapshot_delete,
)
from provisioning.domain.volumes import (
    ACCESS_MODES,
    MAX_GB,
    MIN_GB,
    NAME_MAX,
    SnapshotState,
    VolumeKind,
    VolumeState,
)
from provisioning.models import Volume, VolumeSnapshot
from provisioning.selectors import volumes_attached_to
from provisioning.services.volumes import region_of
from tenancy.domain.roles import Action

KINDS = [k.value for k in VolumeKind]  # the schema's VolumeKindEnum (config/settings.py, ENUM_NAME_OVERRIDES)
_REFUSED = OpenApiResponse(description="Refused: problem+json whose `code` names the rule.")


class VolumeSerializer(serializers.ModelSerializer[Volume]):
    region = serializers.CharField(source="region.code")
    access_mode = serializers.SerializerMethodField(help_text="ReadWriteMany (filesystem) or ReadWriteOnce (block).")
    attached_to = serializers.SerializerMethodField(help_text="Ids of the allocations that mount it now.")
    snapshots = serializers.IntegerField(source="live_snapshots", read_only=True, help_text="Snapshots it has.")
    data_asset = serializers.SerializerMethodField(help_text="Its data asset (retention, holds, erasure).")
    key_id = serializers.SerializerMethodField(help_text="Fingerprint of its own data key; empty once shredded.")

    class Meta:
        model = Volume
        fields = [
            "id",
            "name",
            "region",
            "kind",
            "size_gb",
            "used_gb",
            "state",
            "access_mode",
            "attached_to",
            "snapshots",
            "restored_from",
            "data_asset",
            "key_id",
            "created_at",
            "state_changed_at",
        ]
        read_only_fields = fields

    def get_access_mode(self, volume: Volume) -> str:
        return ACCESS_MODES[VolumeKind(volume.kind)]

    def get_attached_to(self, volume: Volume) -> list[int]:
        attached: dict[int, list[int]] = self.context.get("attached") or volumes_attached_to([volume.pk])
        return attached.get(volume.pk, [])

    def _asset(self, volume: Volume) -> DataAsset | None:
        assets: dict[int, DataAsset] | None = self.context.get("assets")
        if assets is None:
            return DataAsset.objects.filter(volume=volume).first()
        return assets.get(volume.pk)

    def get_data_asset(self, volume: Volume) -> int | None:
        asset = self._asset(volume)
        return asset.pk if asset is not None else None

    def get_key_id(self, volume: Volume) -> str:
        asset = self._asset(volume)
        return asset.key_id if asset is not None and asset.wrapped_key is not None else ""


class VolumeCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200, help_text=f"A DNS label, 1 to {NAME_MAX} characters.")
    region = serializers.CharField(max_length=40, help_text="Region code; the tenant's residency must allow it.")
    kind = serializers.ChoiceField(choices=KINDS)
    size_gb = serializers.IntegerField(min_value=MIN_GB, max_value=MAX_GB)
    snapshot = IdField(required=False, help_text="Restore from this ready snapshot of yours (same region and kind).")


class VolumeChangeSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200, required=False, help_text="A new name.")
    size_gb = serializers.IntegerField(
        min_value=MIN_GB, max_value=MAX_GB, required=False, help_text="A larger size: a volume never shrinks."
    )


class SnapshotCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200, help_text=f"A DNS label, 1 to {NAME_MAX} characters.")


class SnapshotSerializer(serializers.ModelSerializer[VolumeSnapshot]):
    class Meta:
        model = VolumeSnapshot
        fields = ["id", "name", "volume", "size_gb", "state", "created_at", "state_changed_at"]
        read_only_fields = fields


class VolumeFilter(django_filters.FilterSet):
    state = django_filters.ChoiceFilter(choices=[(s.value, s.value) for s in VolumeState])
    kind = django_filters.ChoiceFilter(choices=[(k.value, k.value) for k in VolumeKind])
    region = django_filters.CharFilter(field_name="region__code", help_text="Region code.")

    class Meta:
        model = Volume
        fields: list[str] = []


_LIVE_SNAPSHOTS = Count("snapshots", filter=~Q(snapshots__state=SnapshotState.DELETED))


class VolumeViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    """The tenant's volumes: storage that outlives its allocations, in one region, under a data key of its own.
    A workload mounts one with ``{"volume": id, "mount_path": ..., "read_only": ...}`` in its ``volumes``."""

    queryset = Volume.objects.select_related("region").annotate(live_snapshots=_LIVE_SNAPSHOTS)
    serializer_class = VolumeSerializer
    filterset_class = VolumeFilter
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    role_actions: ClassVar[dict[str, Action]] = {
        "list": Action.DATA_VIEW,
        "retrieve": Action.DATA_VIEW,
        "create": Action.DATA_MANAGE,
        "partial_update": Action.DATA_MANAGE,
        "destroy": Action.DATA_MANAGE,
        "snapshots": Action.DATA_VIEW,
        "snapshot_create": Action.DATA_MANAGE,
    }
    cursor_ordering = "-pk"

    def get_serializer_context(self) -> dict[str, Any]:
        context = dict(super().get_serializer_context())
        if self.action == "list":
            page = getattr(self, "_page_ids", None)
            if page is not None:
                context["attached"] = volumes_attached_to(page)
                context["assets"] = {a.volume_id: a for a in DataAsset.objects.filter(volume_id__in=page)}
        return context

    def paginate_queryset(self, queryset: Any) -> Any:
        page = super().paginate_queryset(queryset)
        if page is not None:
            self._page_ids = [v.pk for v in page]
        return page

    def _answer(self, volume: Volume, code: int = status.HTTP_200_OK) -> Response:
        return Response(VolumeSerializer(self.get_queryset().get(pk=volume.pk)).data, status=code)

    @extend_schema(
        request=VolumeCreateSerializer,
        responses={
            201: VolumeSerializer,
            402: OpenApiResponse(
                description="`budget_exceeded` (a hard-stop budget is used up) or `payment_required`."
            ),
            409: OpenApiResponse(
                description="`residency` (the region is outside the tenant's residency), `quota` (over the storage "
                "quota), `name_taken`, `zero_retention`, `snapshot_not_ready`."
            ),
        },
    )
    def create(self, request: Request) -> Response:
        """Create a volume (``creating`` until the backend has it), or restore one from a snapshot."""
        body = VolumeCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        tenant = self.membership.tenant
        snapshot = None
        if "snapshot" in data:
            snapshot = (
                VolumeSnapshot.objects.select_related("volume__region")
                .filter(tenant=tenant, pk=data["snapshot"])
                .first()
            )
            if snapshot is None:
                raise serializers.ValidationError({"snapshot": [f"You have no snapshot {data['snapshot']}."]})
        volume = volume_create(
            tenant=tenant,
            name=data["name"],
            region=region_of(data["region"]),
            kind=data["kind"],
            size_gb=data["size_gb"],
            snapshot=snapshot,
            actor=self.caller.actor,
        )
        return self._answer(volume, status.HTTP_201_CREATED)

    @extend_schema(request=VolumeChangeSerializer, responses={200: VolumeSerializer, 409: _REFUSED})
    def partial_update(self, request: Request, pk: str) -> Response:
        """Rename (``name``) and grow (``size_gb``; a volume never shrinks: 422)."""
        body = VolumeChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        volume = self.get_object()
        if "name" in body.validated_data:
            volume = volume_rename(volume=volume, name=body.validated_data["name"], actor=self.caller.actor)
        if "size_gb" in body.validated_data:
            volume = volume_grow(volume=volume, size_gb=body.validated_data["size_gb"], actor=self.caller.actor)
        return self._answer(volume)

    @extend_schema(
        responses={
            202: OpenApiResponse(VolumeSerializer, description="Deletion began: the volume is `deleting`."),
            409: OpenApiResponse(
                description="`volume_in_use` (mounted by an allocation that has not ended) or `legal_hold` (with "
                "`holds`)."
            ),
        }
    )
    def destroy(self, request: Request, pk: str) -> Response:
        """Delete the volume and its snapshots: it stops being mounted and billed at once, its data key is destroyed
        when the waiting period ends, then the volume itself (docs/volumes.md). Deleting twice changes nothing."""
        volume = volume_delete(volume=self.get_object(), actor=self.caller.actor)
        return self._answer(volume, status.HTTP_202_ACCEPTED)

    @extend_schema(responses=SnapshotSerializer(many=True))
    @action(detail=True, methods=["get"], filterset_class=None, pagination_class=None)
    def snapshots(self, request: Request, pk: str) -> Response:
        """The volume's snapshots, newest first."""
        rows = VolumeSnapshot.objects.filter(volume=self.get_object()).order_by("-pk")
        return Response(SnapshotSerializer(rows, many=True).data)

    @extend_schema(request=SnapshotCreateSerializer, responses={201: SnapshotSerializer, 409: _REFUSED})
    @snapshots.mapping.post
    def snapshot_create(self, request: Request, pk: str) -> Response:
        """Take a snapshot (``creating`` until the backend has it; billed per GB-hour once ``ready``)."""
        body = SnapshotCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        snapshot = volume_snapshot_create(
            volume=self.get_object(), name=body.validated_data["name"], actor=self.caller.actor
        )
        return Response(SnapshotSerializer(snapshot).data, status=status.HTTP_201_CREATED)


class SnapshotViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    """The tenant's snapshots; a ready one restores into a new volume (``POST /api/v1/volumes`` with
    ``snapshot``)."""

    queryset = VolumeSnapshot.objects.all()
    serializer_class = SnapshotSerializer
    http_method_names = ["get", "delete", "head", "options"]
    role_actions: ClassVar[dict[str, Action]] = {
        "list": Action.DATA_VIEW,
        "retrieve": Action.DATA_VIEW,
        "destroy": Action.DATA_MANAGE,
    }
    cursor_ordering = "-pk"

    @extend_schema(
        responses={
            202: SnapshotSerializer,
            409: OpenApiResponse(description="`legal_hold`: a hold over its volume preserves it."),
        }
    )
    def destroy(self, request: Request, pk: str) -> Response:
        snapshot = volume_snapshot_delete(snapshot=self.get_object(), actor=self.caller.actor)
        return Response(SnapshotSerializer(snapshot).data, status=status.HTTP_202_ACCEPTED)
