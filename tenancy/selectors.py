"""Reads of tenants, members and API keys."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import QuerySet

from tenancy.domain.roles import StaffPermission
from tenancy.models import ApiKey, Membership, Tenant


def membership_of(user: Any) -> Membership | None:
    if not getattr(user, "is_authenticated", False):
        return None
    if get_user_model().membership.is_cached(user):  # loaded with the API key (api_key_authenticate)
        try:
            membership: Membership = user.membership
        except ObjectDoesNotExist:  # staff: no membership
            return None
        return membership
    return Membership.objects.select_related("tenant").filter(user=user).first()


def api_keys_visible(*, tenant: Tenant | None, user: Any, see_all: bool) -> QuerySet[ApiKey]:
    """A tenant admin sees the tenant's keys; anyone else sees their own. Staff keys have no tenant."""
    keys = ApiKey.objects.select_related("user")
    if tenant is None:
        return keys.filter(tenant=None, user=user)
    keys = keys.filter(tenant=tenant)
    return keys if see_all else keys.filter(user=user)


def tenants_nameable(*, tenant: Tenant | None) -> QuerySet[Tenant]:
    """Tenants a caller may name (in a ``tenant`` field or filter): every one for staff (no tenant), its own for a
    tenant's member, to whom another tenant's slug answers as an unknown one."""
    return Tenant.objects.filter(pk=tenant.pk) if tenant is not None else Tenant.objects.all()


def endpoint_calls_per_minute(tenant: Tenant) -> int:
    """Calls a minute each of the tenant's endpoints takes: the tenant's own limit, else
    ``LADDER_ENDPOINT_CALLS_PER_MINUTE``."""
    own = tenant.endpoint_calls_per_minute
    return own if own is not None else int(settings.LADDER_ENDPOINT_CALLS_PER_MINUTE)


def staff_may(user: Any, permission: StaffPermission) -> bool:
    """May this user act as staff with ``permission``: signed in, active, staff, and granted it by a staff group.
    Every staff check (the API's staff views, the consoles' pages and the controls they draw) asks here."""
    return bool(
        getattr(user, "is_authenticated", False)
        and user.is_active
        and user.is_staff
        and user.has_perm(permission.value)
    )
