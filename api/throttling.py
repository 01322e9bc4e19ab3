"""Per-key request throttling (rate from LADDER_API_RATE).

Whose calls a request is: an API key's (one counter per key), a session user's (per user), or, for the anonymous
callers of a view that names them (``throttle_subject``: a guest's attestation credential, a signed download
link), theirs; only the rest (anonymous public reads) are counted per client address, derived in one place
(``core.ratelimit.client_address``). A tenant's workloads and its endpoints' callers reach Ladder through shared
gateways, proxies and NATs, so an address never keys their calls: one tenant's burst would refuse every other
tenant behind the same address. A serverless endpoint's calls (the gateway's check, the endpoint's own URL) are not
throttled here at all: the service counts them per tenant and endpoint at the tenant's rate.

The counter is ``core.ratelimit.window_take``'s fixed window: a request costs one ``add`` and one ``incr`` whatever
the rate, and several web processes sharing a Redis cache count together. (DRF's default keeps a list of every
request time in the window and rewrites it on each request, which grows with the rate.)
"""

from typing import Any

from rest_framework.throttling import SimpleRateThrottle

from core.ratelimit import Verdict, client_address, retry_after_seconds, window_take
from tenancy.models import ApiKey


class PerKeyThrottle(SimpleRateThrottle):
    """One counter per API key; session users per user; a view's named anonymous callers per what it names; other
    anonymous callers per client address."""

    scope = "per_key"

    def get_cache_key(self, request: Any, view: Any) -> str:
        subject = getattr(view, "throttle_subject", None)
        if isinstance(request.auth, ApiKey):
            ident = f"key:{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        elif subject is not None and (named := subject(request)):
            ident = named
        else:
            ident = f"addr:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def get_ident(self, request: Any) -> str:
        return client_address(request)

    def allow_request(self, request: Any, view: Any) -> bool:
        limit, duration = self.parse_rate(self.rate)
        if limit is None or duration is None:
            return True
        self.verdict: Verdict = window_take(
            self.get_cache_key(request, view), limit=limit, seconds=duration, now=self.timer()
        )
        return self.verdict.allowed

    def wait(self) -> float:
        return retry_after_seconds(self.verdict)
