"""Per-key request throttling (rate from LADDER_API_RATE).

A fixed-window counter: one cache key per caller and window, incremented atomically, so a request costs one
``add`` and one ``incr`` whatever the rate, and several web processes sharing a Redis cache count together.
(DRF's default keeps a list of every request time in the window and rewrites it on each request, which grows
with the rate.) A caller can burst up to twice the rate across a window boundary; the rate is a guard against
runaway clients, not a billing meter.
"""

from typing import Any

from rest_framework.throttling import SimpleRateThrottle

from tenancy.models import ApiKey


class PerKeyThrottle(SimpleRateThrottle):
    """One counter per API key; session users per user; anonymous callers per client address."""

    scope = "per_key"

    def get_cache_key(self, request: Any, view: Any) -> str:
        if isinstance(request.auth, ApiKey):
            ident = f"key:{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"addr:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request: Any, view: Any) -> bool:
        limit, duration = self.parse_rate(self.rate)
        if limit is None or duration is None:
            return True
        self.now = self.timer()
        window = int(self.now // duration)
        self.window_end = (window + 1) * duration
        counter = f"{self.get_cache_key(request, view)}:{window}"
        self.cache.add(counter, 0, timeout=duration + 1)
        try:
            count = self.cache.incr(counter)
        except ValueError:  # expired between add and incr
            self.cache.set(counter, 1, timeout=duration + 1)
            count = 1
        return bool(count <= limit)

    def wait(self) -> float:
        return max(self.window_end - self.now, 1.0)
