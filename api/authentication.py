"""``Authorization: Bearer ldr_<prefix>_<secret>`` authentication."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.cache import cache
from django.utils import timezone
from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from core.tasks import enqueue
from tenancy.models import ApiKey
from tenancy.services import api_key_authenticate
from tenancy.tasks import api_key_touch
from tenancy.totp import second_factor_passed, staff_second_factor_passed

# last_used_at is bookkeeping: write it at most this often per key, off the request path.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None
        token = token.strip()
        if not token:
            raise exceptions.AuthenticationFailed("The Authorization header names no key.")
        # A token holding NUL names no key; PostgreSQL would refuse to even look it up.
        key = api_key_authenticate(token) if "\x00" not in token else None
        if key is None:
            raise exceptions.AuthenticationFailed("The API key is unknown, revoked or expired.")
        now = timezone.now()
        stale = key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION
        # The cache entry keeps a busy key from queueing a task per request while the first one is still queued.
        if stale and cache.add(f"api_key_touch:{key.pk}", 1, timeout=LAST_USED_RESOLUTION.total_seconds()):
            enqueue(api_key_touch, key.pk, now.isoformat(), best_effort=True)
        return key.user, key

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="api"'


class SessionAuthentication(authentication.SessionAuthentication):
    """DRF's session authentication (the browser and the admin's session), whose CSRF refusal carries the code
    ``csrf_failed`` instead of the generic ``permission_denied``. A session still owing its second factor's code is
    not signed in here either; a staff user's session must have given one (staff have no choice)."""

    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        found = super().authenticate(request)
        user = request._request.user
        if found is not None and not (
            staff_second_factor_passed(user) if user.is_staff else second_factor_passed(user)
        ):
            return None
        return found

    def enforce_csrf(self, request: Request) -> None:
        try:
            super().enforce_csrf(request)
        except exceptions.PermissionDenied as error:
            raise exceptions.PermissionDenied(str(error.detail), code="csrf_failed") from None


class SessionAuthenticationScheme(SessionScheme):
    target_class = "api.authentication.SessionAuthentication"


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "bearerFormat": "ldr_<prefix>_<secret>"}
