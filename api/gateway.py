"""The gateway's side of serverless endpoints (docs/serverless.md): endpoint tokens minted with an API key, each
tenant's JWKS the gateway checks them against, and the per-request check (``/api/v1/gateway/authorize``) for idle
endpoints' wake and for gateways that cannot check tokens themselves.

The check and the JWKS are plain Django views: no authentication classes, no content negotiation, no throttle per
address (every tenant's calls come from the gateway's few addresses; the service counts them per tenant and
endpoint). They are the hot path of every serverless call that still reaches Ladder.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import LadderView
from api.permissions import IsTenantMember, TenantRoleAllows
from api.problems import Problem, service_error_response
from api.serializers import StrictSerializer, refuse_body
from core.errors import ServiceError
from lifecycle.services.gateway import endpoint_token_mint, gateway_authorize
from tenancy.domain.roles import Action
from tenancy.gateway_keys import tenant_jwks
from tenancy.models import ApiKey
from tenancy.services import endpoint_tokens_rotate_requested


def bearer(request: HttpRequest) -> str:
    """The credential in ``Authorization: Bearer ...`` (an API key or an endpoint token), or ""."""
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    return credential.strip() if scheme.lower() == "bearer" else ""


@require_GET
def authorize(request: HttpRequest) -> HttpResponse:
    """``GET /api/v1/gateway/authorize``: may the gateway forward this request? ``Host`` (or
    ``X-Forwarded-Host``) names what is called. 200 (forward it), 401 without a valid credential, 403 for
    another tenant's or for what is not an endpoint, 429 ``throttled`` past the endpoint's calls a minute, 503
    while it does not run; an idle endpoint is woken and the answer held until it runs."""
    host = (request.headers.get("X-Forwarded-Host") or request.get_host()).split(",")[0].strip()
    try:
        gateway_authorize(host=host, credential=bearer(request))
    except ServiceError as refused:
        return service_error_response(refused)
    return HttpResponse(status=200)


@require_GET
def jwks(request: HttpRequest, tenant: str) -> HttpResponse:
    """``GET /api/v1/gateway/jwks/<tenant>``: the public keys the gateway checks the tenant's endpoint tokens
    against (RFC 7517). Public: it holds public keys only."""
    document = tenant_jwks(tenant)
    if document is None:
        return service_error_response(ServiceError("not_found", "No such tenant.", status=404))
    response = HttpResponse(json.dumps(document), content_type="application/jwk-set+json")
    # A cache in front may keep it no longer than the gateway does: the revocation bound holds end to end.
    response["Cache-Control"] = f"public, max-age={settings.LADDER_GATEWAY_KEYS_SECONDS}"
    return response


class EndpointTokenMintSerializer(StrictSerializer):
    endpoints = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        min_length=1,
        max_length=100,
        required=False,
        help_text="The endpoints (allocation ids) the token may call; omitted: every endpoint of yours, present and "
        "future.",
    )
    ttl_seconds = serializers.IntegerField(
        min_value=60,
        required=False,
        help_text="How long the token lives (default LADDER_ENDPOINT_TOKEN_TTL_SECONDS, one hour); never past the "
        "key's own expiry.",
    )


class EndpointTokenSerializer(serializers.Serializer[Any]):
    token = serializers.CharField(help_text="Send it as Authorization: Bearer <token> to the endpoints' URLs.")
    token_type = serializers.CharField()
    expires_at = serializers.DateTimeField()
    audiences = serializers.ListField(child=serializers.CharField())
    endpoints = serializers.ListField(child=serializers.IntegerField(), allow_null=True)
    kid = serializers.CharField(help_text="The signing key, as your tenant's JWKS lists it.")


class EndpointTokenRotationSerializer(serializers.Serializer[Any]):
    generation = serializers.IntegerField(help_text="The signing key's generation from now on.")
    refused_within_seconds = serializers.IntegerField(
        help_text="Every token signed before is refused at the gateway within this many seconds."
    )


class EndpointTokenView(LadderView):
    """Endpoint tokens: what callers of your serverless endpoints send, checked by the gateway itself, so a
    running endpoint's calls never reach Ladder. Minted with an API key (not a portal session), read-only keys
    included: a token may do what its key may at an endpoint (call it), nothing more."""

    base_permissions: ClassVar[list[type]] = [IsAuthenticated]
    extra_permissions = [IsTenantMember, TenantRoleAllows]
    role_actions: ClassVar[dict[str, Action]] = {"post": Action.ALLOCATION_VIEW}
    idempotency_redact = ("token",)
    idempotency_per_user = True

    @extend_schema(
        request=EndpointTokenMintSerializer,
        responses={201: EndpointTokenSerializer},
        operation_id="endpoint_tokens_create",
    )
    def post(self, request: Request) -> Response:
        key = request.auth
        if not isinstance(key, ApiKey):
            raise Problem(403, "api_key_required", "Mint endpoint tokens with an API key (Authorization: Bearer).")
        data = EndpointTokenMintSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        minted = endpoint_token_mint(
            key=key,
            endpoints=data.validated_data.get("endpoints"),
            ttl_seconds=data.validated_data.get("ttl_seconds"),
            now=timezone.now(),
        )
        body = {
            "token": minted.token,
            "token_type": "Bearer",
            "expires_at": minted.expires_at,
            "audiences": list(minted.audiences),
            "endpoints": list(minted.endpoints) if minted.endpoints is not None else None,
            "kid": minted.kid,
        }
        return Response(EndpointTokenSerializer(body).data, status=status.HTTP_201_CREATED)


class EndpointTokenRotationView(LadderView):
    """Rotate your tenant's token signing key: every endpoint token minted before is refused at the gateway
    within ``refused_within_seconds``; tokens minted after pass at once. Revoking an API key does this too."""

    extra_permissions = [IsTenantMember, TenantRoleAllows]
    role_actions: ClassVar[dict[str, Action]] = {"post": Action.API_KEY_MANAGE_ANY}

    @extend_schema(
        request=None,
        responses={200: EndpointTokenRotationSerializer, 403: OpenApiResponse(description="Owners and admins only.")},
        operation_id="endpoint_tokens_rotate",
    )
    def post(self, request: Request) -> Response:
        refuse_body(request)
        generation = endpoint_tokens_rotate_requested(tenant=self.membership.tenant, actor=self.caller.actor)
        body = {"generation": generation, "refused_within_seconds": settings.LADDER_GATEWAY_KEYS_SECONDS}
        return Response(EndpointTokenRotationSerializer(body).data)
