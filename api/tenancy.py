"""Tenant, members and API keys: ``/api/v1/tenant``, ``/api/v1/members``, ``/api/v1/api-keys``."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import LadderView, TenantScopedViewSet
from api.permissions import IsTenantMember, TenantRoleAllows
from api.serializers import StrictSerializer
from provisioning.models import Region
from tenancy import services
from tenancy.domain.roles import Action, TenantRole, role_allows
from tenancy.models import ApiKey, ApiKeyScope, Membership, SshKey, Tenant
from tenancy.selectors import api_keys_visible, endpoint_calls_per_minute

# --- serializers ----------------------------------------------------------------------------------------------


class ResidencySerializer(StrictSerializer):
    regions = serializers.ListField(
        child=serializers.SlugField(),
        allow_null=True,
        required=False,
        default=None,
        help_text="Region codes the tenant's compute and data may use; null: any.",
    )
    jurisdictions = serializers.ListField(
        child=serializers.RegexField(r"^[A-Z]{2,8}\Z"),
        allow_null=True,
        required=False,
        default=None,
        help_text="Jurisdictions (e.g. EU, US) allowed; null: any. A sovereign tenant names exactly one.",
    )
    sovereign = serializers.BooleanField(default=False, help_text="Use only halls fenced for the jurisdiction.")

    def validate_regions(self, value: list[str] | None) -> list[str] | None:
        if value is not None:
            unknown = set(value) - set(Region.objects.filter(code__in=value).values_list("code", flat=True))
            if unknown:
                raise serializers.ValidationError(f"Unknown region(s): {', '.join(sorted(unknown))}.")
        return value


class IsolationSerializer(StrictSerializer):
    dedicated_hardware = serializers.BooleanField(
        required=False, help_text="Never share a GPU with another tenant, not even by MIG."
    )
    allow_soft_sharing = serializers.BooleanField(
        required=False, help_text="Let this tenant's own workloads soft-share a GPU (never across tenants)."
    )


class TenantSerializer(serializers.ModelSerializer[Tenant]):
    residency = serializers.SerializerMethodField()
    isolation = serializers.SerializerMethodField()
    gpu_quota = serializers.SerializerMethodField(help_text="GPUs the tenant may hold at once; null: no quota.")
    endpoint_calls_per_minute = serializers.SerializerMethodField(
        help_text="Calls a minute each of the tenant's endpoints and public ports takes, counted per endpoint (429 "
        "throttled past it)."
    )

    class Meta:
        model = Tenant
        fields = [
            "id",
            "slug",
            "name",
            "state",
            "created_at",
            "residency",
            "isolation",
            "gpu_quota",
            "endpoint_calls_per_minute",
        ]
        read_only_fields = fields

    @extend_schema_field(ResidencySerializer)
    def get_residency(self, tenant: Tenant) -> dict[str, Any]:
        return {
            "regions": tenant.residency_regions,
            "jurisdictions": tenant.residency_jurisdictions,
            "sovereign": tenant.sovereign,
        }

    @extend_schema_field(IsolationSerializer)
    def get_isolation(self, tenant: Tenant) -> dict[str, bool]:
        return {"dedicated_hardware": tenant.dedicated_hardware, "allow_soft_sharing": tenant.allow_soft_sharing}

    def get_gpu_quota(self, tenant: Tenant) -> str | None:
        return None if tenant.gpu_quota_milli is None else f"{tenant.gpu_quota_milli / 1000:g}"

    def get_endpoint_calls_per_minute(self, tenant: Tenant) -> int:
        return endpoint_calls_per_minute(tenant)


class TenantUpdateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200, required=False)
    residency = ResidencySerializer(required=False)
    isolation = IsolationSerializer(required=False)


class MemberSerializer(serializers.ModelSerializer[Membership]):
    username = serializers.CharField(source="user.username", read_only=True)
    email = serializers.EmailField(source="user.email", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "username", "email", "role", "created_at"]
        read_only_fields = fields


class MemberInviteSerializer(StrictSerializer):
    username = serializers.RegexField(r"^[\w.@+-]+\Z", max_length=150)
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=[r.value for r in TenantRole])


class MemberRoleSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=[r.value for r in TenantRole])


class ApiKeySerializer(serializers.ModelSerializer[ApiKey]):
    owner = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = ApiKey
        fields = ["id", "name", "prefix", "owner", "scopes", "created_at", "expires_at", "revoked_at", "last_used_at"]
        read_only_fields = fields


class ApiKeyCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=[s.value for s in ApiKeyScope]), min_length=1, max_length=2
    )
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)


class ApiKeyCreatedSerializer(ApiKeySerializer):
    token = serializers.CharField(read_only=True, help_text="The whole key; shown this once and never again.")

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "token"]
        read_only_fields = fields


# --- views ----------------------------------------------------------------------------------------------------


class TenantView(LadderView):
    """The caller's own tenant."""

    extra_permissions = [IsTenantMember, TenantRoleAllows]
    role_actions: ClassVar[dict[str, Action]] = {"get": Action.TENANT_VIEW, "patch": Action.TENANT_UPDATE}
    serializer_class = TenantSerializer

    @extend_schema(responses=TenantSerializer)
    def get(self, request: Request) -> Response:
        return Response(TenantSerializer(self.membership.tenant).data)

    @extend_schema(request=TenantUpdateSerializer, responses=TenantSerializer)
    def patch(self, request: Request) -> Response:
        data = TenantUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        residency = data.validated_data.get("residency")
        isolation = data.validated_data.get("isolation", {})
        tenant = services.tenant_update(
            tenant=self.membership.tenant,
            actor=self.caller.actor,
            name=data.validated_data.get("name"),
            residency=services.Residency(**residency) if residency is not None else None,
            dedicated_hardware=isolation.get("dedicated_hardware"),
            allow_soft_sharing=isolation.get("allow_soft_sharing"),
        )
        return Response(TenantSerializer(tenant).data)


class MemberViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    TenantScopedViewSet,
):
    queryset = Membership.objects.select_related("user")
    serializer_class = MemberSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    role_actions: ClassVar[dict[str, Action]] = {
        "list": Action.MEMBER_VIEW,
        "retrieve": Action.MEMBER_VIEW,
        "create": Action.MEMBER_MANAGE,
        "partial_update": Action.MEMBER_MANAGE,
        "destroy": Action.MEMBER_MANAGE,
    }

    @extend_schema(request=MemberInviteSerializer, responses={201: MemberSerializer})
    def create(self, request: Request) -> Response:
        data = MemberInviteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.member_invite(
            tenant=self.membership.tenant,
            actor_role=self.membership.role,
            actor=self.caller.actor,
            **data.validated_data,
        )
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=MemberRoleSerializer, responses=MemberSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        membership = self.get_object()
        data = MemberRoleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.member_change_role(
            membership=membership,
            actor_role=self.membership.role,
            role=data.validated_data["role"],
            actor=self.caller.actor,
        )
        return Response(MemberSerializer(membership).data)

    @extend_schema(responses={204: OpenApiResponse(description="Removed; the person's API keys are revoked.")})
    def destroy(self, request: Request, pk: str) -> Response:
        services.member_remove(
            membership=self.get_object(),
            actor_role=self.membership.role,
            actor=self.caller.actor,
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class ApiKeyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, LadderView, viewsets.GenericViewSet):
    """API keys. Keys belong to people: tenant owners and admins see and revoke all of their tenant's keys,
    anyone else (staff included) only their own. Another tenant's key answers 404."""

    queryset = ApiKey.objects.all()
    serializer_class = ApiKeySerializer
    idempotency_redact = ("token",)
    idempotency_per_user = True
    http_method_names = ["get", "post", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[ApiKey]:
        if getattr(self, "swagger_fake_view", False):
            return ApiKey.objects.none()
        caller = self.caller
        see_all = role_allows(caller.role, Action.API_KEY_MANAGE_ANY)
        return api_keys_visible(tenant=caller.tenant, user=caller.user, see_all=see_all)

    @extend_schema(request=ApiKeyCreateSerializer, responses={201: ApiKeyCreatedSerializer})
    def create(self, request: Request) -> Response:
        data = ApiKeyCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        issued = services.api_key_create(user=self.caller.user, actor=self.caller.actor, **data.validated_data)
        body = ApiKeyCreatedSerializer(issued.key).data
        body["token"] = issued.token
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(responses={204: OpenApiResponse(description="Revoked (revoking twice is harmless).")})
    def destroy(self, request: Request, pk: str) -> Response:
        services.api_key_revoke(key=self.get_object(), actor=self.caller.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- SSH keys ----------------------------------------------------------------------------------------------------


class SshKeySerializer(serializers.ModelSerializer[SshKey]):
    class Meta:
        model = SshKey
        fields = ["id", "name", "key_type", "bits", "fingerprint", "public_key", "created_by", "created_at"]
        read_only_fields = fields


class SshKeyCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)
    public_key = serializers.CharField(
        max_length=16_384, trim_whitespace=True, help_text="One line, as in ~/.ssh/id_ed25519.pub."
    )


class SshKeyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    """The tenant's SSH public keys (ed25519, ECDSA, RSA of 3072 bits or more), named by their fingerprint as
    ``ssh-keygen -l`` prints it. Work that offers SSH access (bare metal, VMs, containers) names keys by id."""

    queryset = SshKey.objects.all()
    serializer_class = SshKeySerializer
    http_method_names = ["get", "post", "delete", "head", "options"]
    role_actions: ClassVar[dict[str, Action]] = {
        "list": Action.SSH_KEY_VIEW,
        "retrieve": Action.SSH_KEY_VIEW,
        "create": Action.SSH_KEY_MANAGE,
        "destroy": Action.SSH_KEY_MANAGE,
    }

    @extend_schema(request=SshKeyCreateSerializer, responses={201: SshKeySerializer})
    def create(self, request: Request) -> Response:
        body = SshKeyCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        key = services.ssh_key_add(tenant=self.membership.tenant, actor=self.caller.actor, **body.validated_data)
        return Response(SshKeySerializer(key).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={204: OpenApiResponse(description="Removed.")})
    def destroy(self, request: Request, pk: str) -> Response:
        services.ssh_key_remove(key=self.get_object(), actor=self.caller.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)
