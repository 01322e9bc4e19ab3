"""The API's base views. Every view inherits ``LadderView``; every view over tenant-owned data inherits
``TenantScopedViewSet``, whose queryset is always filtered by the caller's tenant, so another tenant's id
answers 404 by construction; ``TenantOrStaffViewSet`` is the same for views both a tenant and staff use.

``LadderView`` resolves who is calling (``request.tenant``, ``request.membership``, ``request.actor``) right
after authentication, and implements ``Idempotency-Key`` for every POST.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from django.db.models import QuerySet
from rest_framework import exceptions, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import idempotency
from api.models import IdempotencyRecord
from api.permissions import (
    HasStaffPermission,
    IsTenantMember,
    KeyScopeAllows,
    TenantRoleAllows,
    TenantRoleOrStaffPermission,
)
from api.problems import Problem
from core.actor import Actor
from core.logs import context_bind
from tenancy.domain.roles import Action, StaffPermission
from tenancy.models import ApiKey, Membership, Tenant, TenantState
from tenancy.selectors import membership_of

IDEMPOTENCY_HEADER = "Idempotency-Key"
_CONTROL = re.compile("[\x00-\x1f\x7f]")  # HTTP allows none but a tab in a header; PostgreSQL stores no NUL


@dataclass(frozen=True)
class Caller:
    """Who is calling: resolved once per request, right after authentication."""

    user: Any
    membership: Membership | None
    actor: Actor

    @property
    def tenant(self) -> Tenant | None:
        return self.membership.tenant if self.membership else None

    @property
    def role(self) -> str | None:
        return self.membership.role if self.membership else None


class _Replay(Exception):
    def __init__(self, record: Any) -> None:
        self.record = record


class LadderView(APIView):
    base_permissions: ClassVar[list[type]] = [IsAuthenticated, KeyScopeAllows]
    extra_permissions: ClassVar[list[type]] = []
    # Response fields never written to the idempotency store (secrets shown once); a replay returns them as null.
    idempotency_redact: ClassVar[tuple[str, ...]] = ()
    # Keys are shared by a tenant's members, unless the resource is personal (then each person has their own).
    idempotency_per_user: ClassVar[bool] = False

    def get_permissions(self) -> list[Any]:
        return [p() for p in (*self.base_permissions, *self.extra_permissions)]

    _caller: Caller | None = None
    _idempotency_record: IdempotencyRecord | None = None

    @property
    def caller(self) -> Caller:
        """The authenticated caller; views behind ``IsAuthenticated`` always have one."""
        if self._caller is None:
            raise exceptions.NotAuthenticated()
        return self._caller

    @property
    def membership(self) -> Membership:
        """The caller's membership, for views behind ``IsTenantMember``."""
        membership = self.caller.membership
        if membership is None:
            raise exceptions.PermissionDenied(IsTenantMember.message, code=IsTenantMember.code)
        return membership

    def perform_authentication(self, request: Request) -> None:
        user = request.user
        if not user.is_authenticated:
            return
        membership = membership_of(user)
        if membership is not None and membership.tenant.state == TenantState.CLOSED:
            raise exceptions.AuthenticationFailed("This tenant is closed.")
        key = request.auth if isinstance(request.auth, ApiKey) else None
        self._caller = Caller(user=user, membership=membership, actor=Actor.for_user(user, key))
        context_bind(tenant_id=membership.tenant_id if membership else None, actor=self._caller.actor.log_label)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        # A path parameter holding NUL names nothing; PostgreSQL would refuse to even compare it (a 500).
        if any("\x00" in str(value) for value in kwargs.values()):
            raise exceptions.NotFound()
        key = request.headers.get(IDEMPOTENCY_HEADER)
        # A view nobody signs in to (a serverless endpoint's own URL, the gateway's check) has no caller to keep
        # the key for: the header is ignored there, as any other header it does not read.
        if request.method != "POST" or key is None or not request.user.is_authenticated:
            return
        if not key or len(key) > idempotency.MAX_KEY_LENGTH or _CONTROL.search(key):
            raise Problem(
                422,
                "validation_error",
                f"{IDEMPOTENCY_HEADER} must be 1 to 255 characters, none of them a control character.",
                errors={IDEMPOTENCY_HEADER: ["must be 1 to 255 characters, none of them a control character"]},
            )
        tenant = self.caller.tenant
        if tenant is not None and not self.idempotency_per_user:
            scope = f"tenant:{tenant.pk}"
        else:
            scope = f"user:{request.user.pk}"
        try:
            claim = idempotency.idempotency_claim(
                scope=scope, key=key, fingerprint=idempotency.fingerprint(request.method, request.path, request.data)
            )
        except idempotency.IdempotencyConflict:
            raise Problem(
                422,
                "idempotency_conflict",
                f"This {IDEMPOTENCY_HEADER} was used with a different request; use a new key for a new request.",
            ) from None
        except idempotency.IdempotencyInProgress:
            raise Problem(
                409, "idempotency_in_progress", f"A request with this {IDEMPOTENCY_HEADER} is still being handled."
            ) from None
        if claim.replay:
            raise _Replay(claim.record)
        self._idempotency_record = claim.record

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, _Replay):
            record = exc.record
            return Response(
                record.response_body,
                status=record.status_code,
                content_type=record.content_type or None,
                headers={"Idempotent-Replayed": "true"},
            )
        try:
            return super().handle_exception(exc)
        except BaseException:
            # An unhandled error becomes a 500 without passing finalize_response: free the key for a retry.
            self._finish_idempotency(500, None, "")
            raise

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        self._finish_idempotency(
            response.status_code, getattr(response, "data", None), getattr(response, "content_type", None) or ""
        )
        return response

    def _finish_idempotency(self, status_code: int, body: Any, content_type: str) -> None:
        record = self._idempotency_record
        if record is None:
            return
        self._idempotency_record = None
        if isinstance(body, dict) and self.idempotency_redact:
            body = {k: (None if k in self.idempotency_redact else v) for k, v in body.items()}
        idempotency.idempotency_finish(record=record, status_code=status_code, body=body, content_type=content_type)


class TenantScopedViewSet(LadderView, viewsets.GenericViewSet):
    """Views over a ``TenantOwned`` model. Subclasses set ``queryset`` and ``role_actions``."""

    extra_permissions = [IsTenantMember, TenantRoleAllows]
    role_actions: ClassVar[dict[str, Action]] = {}

    def get_queryset(self) -> QuerySet[Any]:
        queryset = super().get_queryset()
        if getattr(self, "swagger_fake_view", False):  # schema generation has no request tenant
            return queryset.none()
        return queryset.filter(tenant=self.caller.tenant)


class StaffViewSet(LadderView, viewsets.GenericViewSet):
    """Views for staff roles; ``required_permission`` names the ``StaffPermission`` the role must hold, and
    ``action_permissions`` the one a particular action needs instead (``{"drain": StaffPermission.NODE_CHANGE}``)."""

    extra_permissions = [HasStaffPermission]
    required_permission: ClassVar[StaffPermission]
    action_permissions: ClassVar[dict[str, StaffPermission]] = {}

    def get_required_permission(self) -> StaffPermission:
        return self.action_permissions.get(getattr(self, "action", None) or "", self.required_permission)


class TenantOrStaffViewSet(LadderView, viewsets.GenericViewSet):
    """Views over a tenant-owned model that both the tenant and staff use. A tenant's member sees its own tenant's
    rows only (another tenant's id answers 404), by ``role_actions``; staff see every tenant's rows, by
    ``required_permission`` and ``action_permissions`` (as ``StaffViewSet``)."""

    extra_permissions = [TenantRoleOrStaffPermission]
    role_actions: ClassVar[dict[str, Action]] = {}
    required_permission: ClassVar[StaffPermission]
    action_permissions: ClassVar[dict[str, StaffPermission]] = {}

    def get_required_permission(self) -> StaffPermission:
        return self.action_permissions.get(getattr(self, "action", None) or "", self.required_permission)

    def get_queryset(self) -> QuerySet[Any]:
        queryset = super().get_queryset()
        if getattr(self, "swagger_fake_view", False):  # schema generation has no caller
            return queryset.none()
        tenant = self.caller.tenant
        if tenant is not None:
            return queryset.filter(tenant=tenant)
        # Only staff get past the permission without a tenant; this keeps the queryset safe on its own.
        return queryset if self.caller.user.is_staff else queryset.none()
