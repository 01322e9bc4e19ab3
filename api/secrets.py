"""A tenant's secrets (``/api/v1/secrets``): values go in and never come out; reads show name, version and times."""

from __future__ import annotations

from typing import ClassVar

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantScopedViewSet
from api.serializers import StrictSerializer
from compliance.models import TenantSecret
from compliance.services.secrets import MAX_VALUE_BYTES, secret_create, secret_delete, secret_update
from tenancy.domain.roles import Action


class SecretSerializer(serializers.ModelSerializer[TenantSecret]):
    class Meta:
        model = TenantSecret
        fields = ["name", "version", "created_at", "updated_at", "updated_by"]
        read_only_fields = fields


class SecretValueSerializer(StrictSerializer):
    value = serializers.CharField(
        write_only=True,
        trim_whitespace=False,
        max_length=MAX_VALUE_BYTES,
        help_text="The value (UTF-8, at most 64 KiB). Never shown again.",
    )


class SecretCreateSerializer(SecretValueSerializer):
    name = serializers.CharField(max_length=100, help_text="Letters, digits and underscores: an environment variable.")


class SecretViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    """Create a secret (POST), give it a new value (PUT ``/secrets/{name}``: its next version), delete it. No
    answer, audit event or error ever carries a value."""

    queryset = TenantSecret.objects.all()
    serializer_class = SecretSerializer
    lookup_field = "name"
    http_method_names = ["get", "post", "put", "delete", "head", "options"]
    role_actions: ClassVar[dict[str, Action]] = {
        "list": Action.SECRET_VIEW,
        "retrieve": Action.SECRET_VIEW,
        "create": Action.SECRET_MANAGE,
        "update": Action.SECRET_MANAGE,
        "destroy": Action.SECRET_MANAGE,
    }

    @extend_schema(
        request=SecretCreateSerializer,
        responses={201: SecretSerializer, 409: OpenApiResponse(description="`secret_exists`: PUT a new value.")},
    )
    def create(self, request: Request) -> Response:
        body = SecretCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        secret = secret_create(tenant=self.membership.tenant, actor=self.caller.actor, **body.validated_data)
        return Response(SecretSerializer(secret).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=SecretValueSerializer, responses=SecretSerializer)
    def update(self, request: Request, name: str) -> Response:
        body = SecretValueSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        secret = secret_update(secret=self.get_object(), value=body.validated_data["value"], actor=self.caller.actor)
        return Response(SecretSerializer(secret).data)

    @extend_schema(responses={204: OpenApiResponse(description="Deleted; the value is gone for good.")})
    def destroy(self, request: Request, name: str) -> Response:
        secret_delete(secret=self.get_object(), actor=self.caller.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)
