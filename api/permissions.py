"""Role-based permissions. The role table and the staff permissions live in ``tenancy.domain.roles``.

Whether the caller's tenant may change anything (a closing tenant only reads) is not asked here: the services ask
``tenancy.services.tenant_require_writable``, so the portal and the consoles refuse the same way."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission

from tenancy.domain.roles import StaffPermission, role_allows
from tenancy.models import ApiKey, ApiKeyScope
from tenancy.selectors import staff_may


class KeyScopeAllows(BasePermission):
    """A key without the ``write`` scope may only read."""

    message = "This API key has the read scope only."
    code = "insufficient_scope"

    def has_permission(self, request: Any, view: Any) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey) or request.method in SAFE_METHODS:
            return True
        return key.has_scope(ApiKeyScope.WRITE)


class IsTenantMember(BasePermission):
    message = "This endpoint is for members of a tenant."
    code = "tenant_required"

    def has_permission(self, request: Any, view: Any) -> bool:
        return view.caller.tenant is not None


class TenantRoleAllows(BasePermission):
    """The view maps each DRF action (or HTTP method) to an ``Action``; the caller's role must allow it."""

    message = "Your role in this tenant does not allow this action."
    code = "permission_denied"

    def has_permission(self, request: Any, view: Any) -> bool:
        if request.method == "OPTIONS":
            return True  # metadata only
        name = getattr(view, "action", None) or ("get" if request.method == "HEAD" else request.method.lower())
        action = view.role_actions.get(name)
        if action is None:
            # No handler at all: let the view answer 405. A handler nobody mapped to an action is nobody's.
            return not hasattr(view, name)
        return role_allows(view.caller.role, action)


class HasStaffPermission(BasePermission):
    """Staff endpoints: the user's groups must grant the ``StaffPermission`` ``view.get_required_permission()``
    names."""

    message = "This endpoint is for Ladder staff with the right role."

    def has_permission(self, request: Any, view: Any) -> bool:
        return staff_may(request.user, view.get_required_permission())


class TenantRoleOrStaffPermission(BasePermission):
    """A tenant's member passes by role (the view's ``role_actions``, as ``TenantRoleAllows``); anyone else (staff
    belong to no tenant) by the Django permission ``view.get_required_permission()`` names (as
    ``HasStaffPermission``). A refusal answers as the class that refused would."""

    message: str = TenantRoleAllows.message
    code: str | None = TenantRoleAllows.code

    def has_permission(self, request: Any, view: Any) -> bool:
        check = TenantRoleAllows() if view.caller.tenant is not None else HasStaffPermission()
        self.message, self.code = check.message, getattr(check, "code", None)
        return check.has_permission(request, view)


def staff_permission_require(request: Any, permission: StaffPermission, what: str) -> None:
    """For the one step of a staff action that needs more than the view's permission, decided by what was sent
    (carrying out a plan, not only planning it): 403 ``permission_denied`` naming the permission."""
    if not staff_may(request.user, permission):
        raise PermissionDenied(f"{what} needs the {permission.value} permission.")
