"""Per-key request throttling (rate from LADDER_API_RATE)."""

from typing import Any

from rest_framework.throttling import SimpleRateThrottle

from tenancy.models import ApiKey


class PerKeyThrottle(SimpleRateThrottle):
    """One bucket per API key; session users per user; anonymous callers per client address."""

    scope = "per_key"

    def get_cache_key(self, request: Any, view: Any) -> str:
        if isinstance(request.auth, ApiKey):
            ident = f"key:{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"addr:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
