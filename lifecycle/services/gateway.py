"""Who may call a serverless endpoint or a public port, and what answers while it sleeps (docs/serverless.md).

- ``endpoint_token_mint``: an endpoint token (a JWT signed by the tenant's key) for some or all of the tenant's
  endpoints, minted with an API key. The gateway checks it itself against the tenant's JWKS, so a running
  endpoint is called with no request to Ladder at all.
- ``gateway_authorize``: the check a gateway makes per request when it cannot check tokens itself, and the wake
  path every gateway takes for an idle endpoint (its route's token policy is withdrawn while it sleeps). It takes
  an API key or an endpoint token. For a running endpoint it reads no database row and writes nothing: the key
  and the endpoint are cached (``tenancy.gateway_keys.gateway_key``, ``provisioning.running_endpoints``) and
  forgotten on change.
- ``endpoint_call``: the same check for the simulated fleet's endpoints, which Ladder serves itself.

Each endpoint takes the calls a minute its tenant's plan sets, counted per tenant and endpoint (never per address:
the gateway is one address for every tenant), so one busy endpoint refuses only its own calls (429 ``throttled``).
An idle endpoint's first calls wake it once: one request places and starts it, every other request held meanwhile
waits for it without touching the cluster (``_awake``).
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from core.cache import LocalMemo
from core.errors import Forbidden, Invalid, ServiceError, TooManyRequests, Unavailable
from core.ratelimit import retry_after_seconds, window_take_batched
from provisioning.domain.rungs import rungs_where
from provisioning.domain.states import WORKING
from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import provisioner
from provisioning.models import Allocation
from provisioning.running_endpoints import running_entry
from provisioning.services.cold_starts import endpoint_hold_observe
from provisioning.services.endpoints import NO_CAPACITY_RETRY_AFTER, EndpointNoCapacity, endpoint_wake
from tenancy.domain.endpoint_tokens import (
    KEY_CLAIM,
    TENANT_CLAIM,
    TokenClaims,
    TokenRefused,
    endpoint_audience,
    kid_for,
    kid_parse,
    looks_like_token,
    tenant_audience,
    token_digest,
    token_kid,
    token_sign,
    token_verify,
)
from tenancy.gateway_keys import gateway_key, tenant_public_key, tenant_signing_key
from tenancy.models import ApiKey
from tenancy.selectors import endpoint_calls_per_minute
from tenancy.services import KEY_PREFIX, hash_secret, tenant_require_writable

GATEWAY = Actor.system("gateway")
TOKEN_LEEWAY_SECONDS = 5  # clock skew between Ladder and a gateway, as the gateway's JWT filter allows


# --- endpoint tokens ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MintedToken:
    token: str
    expires_at: datetime
    audiences: tuple[str, ...]
    endpoints: tuple[int, ...] | None  # None: every endpoint of the tenant, present and future
    kid: str


@transaction.atomic
def endpoint_token_mint(
    *, key: ApiKey, endpoints: list[int] | None, ttl_seconds: int | None, now: datetime
) -> MintedToken:
    """A token for ``endpoints`` (all the tenant's when None) that lives ``ttl_seconds`` (the default when None),
    never past the API key's own expiry. Refused for a staff key (it calls no endpoint) and for what is not an
    endpoint of the key's tenant."""
    tenant = key.tenant
    if tenant is None:
        raise Forbidden("endpoint_forbidden", "A staff key calls no endpoint: mint tokens with a tenant's key.")
    tenant_require_writable(tenant, actor=Actor.for_user(key.user))
    ttl = ttl_seconds if ttl_seconds is not None else settings.LADDER_ENDPOINT_TOKEN_TTL_SECONDS
    if not 60 <= ttl <= settings.LADDER_ENDPOINT_TOKEN_MAX_TTL_SECONDS:
        raise Invalid(
            "validation_error",
            f"A token lives 60 to {settings.LADDER_ENDPOINT_TOKEN_MAX_TTL_SECONDS} seconds.",
            field="ttl_seconds",
        )
    base = settings.LADDER_BASE_DOMAIN
    if endpoints is None:
        audiences: tuple[str, ...] = (tenant_audience(tenant.slug, base),)
    else:
        found = set(
            Allocation.objects.filter(
                pk__in=endpoints, tenant=tenant, rung__in=rungs_where(lambda f: f.endpoint), state__in=WORKING
            ).values_list("pk", flat=True)
        )
        for i, allocation_id in enumerate(endpoints):
            if allocation_id not in found:
                raise Invalid(
                    "validation_error",
                    f"Allocation {allocation_id} is no live serverless endpoint of yours.",
                    field=f"endpoints.{i}",
                )
        audiences = tuple(endpoint_audience(a, base) for a in sorted(set(endpoints)))
    expires = now + timedelta(seconds=ttl)
    if key.expires_at is not None:
        expires = min(expires, key.expires_at)
    generation, signing = tenant_signing_key(tenant)
    claims = TokenClaims(
        issuer=settings.LADDER_PUBLIC_URL,
        tenant=tenant.slug,
        key_prefix=key.prefix,
        audiences=audiences,
        generation=generation,
        issued_at=int(now.timestamp()),
        expires_at=int(expires.timestamp()),
        token_id=secrets.token_urlsafe(12),
    )
    token = token_sign(signing, claims)
    audit_record(
        actor=Actor.for_user(key.user),
        action="endpoint_token.issued",
        target_type="api_key",
        target_id=key.pk,
        tenant=tenant,
        data={"jti": claims.token_id, "audiences": list(audiences), "expires_at": expires.isoformat()},
    )
    return MintedToken(
        token=token,
        expires_at=datetime.fromtimestamp(claims.expires_at, tz=now.tzinfo),
        audiences=audiences,
        endpoints=tuple(sorted(set(endpoints))) if endpoints is not None else None,
        kid=kid_for(tenant.slug, generation),
    )


# --- who is calling -----------------------------------------------------------------------------------------------


def _refused(detail: str) -> ServiceError:
    return ServiceError("not_authenticated", detail, status=401)


def _caller_tenant(credential: str, allocation_id: int, now: float) -> int:
    """The tenant whose credential this is, for a call to ``allocation_id``: an API key of it, or an endpoint
    token it minted for that endpoint (or for all its endpoints). 401 otherwise."""
    if not credential or "\x00" in credential:
        raise _refused("Call an endpoint with an endpoint token or an API key of its tenant (Authorization: Bearer).")
    if looks_like_token(credential):
        return _token_tenant(credential, allocation_id, now)
    parts = credential.split("_", 2)
    entry = gateway_key(parts[1]) if len(parts) == 3 and parts[0] == KEY_PREFIX else None
    if (
        entry is None
        or not secrets.compare_digest(entry.secret_hash, hash_secret(parts[2]))
        or not entry.usable_at(now)
        or entry.tenant_id is None
    ):
        raise _refused("That API key is unknown, revoked or expired.")
    return entry.tenant_id


@dataclass(frozen=True)
class _Verified:
    """What a token's signature and issuer were found to say (checked once per process, then remembered)."""

    tenant: str
    kid: str
    key_prefix: str
    audiences: frozenset[str]
    expires_at: float


_verified = LocalMemo(seconds=60.0)  # token digest -> _Verified: a signature is checked once a minute per process


def _token_tenant(token: str, allocation_id: int, now: float) -> int:
    """The tenant of an endpoint token valid for ``allocation_id`` now: its signature by a key its tenant's JWKS
    lists, its issuer, expiry and audience, and the key that minted it still usable. 401 otherwise."""
    digest = token_digest(token)
    known, remembered = _verified.get(digest, time.monotonic())
    try:
        seen = remembered if known and isinstance(remembered, _Verified) else _token_verify(token, now)
        if not known:
            _verified.put(digest, seen, time.monotonic())
        if seen.expires_at + TOKEN_LEEWAY_SECONDS <= now:
            raise TokenRefused("the token has expired")
        base = settings.LADDER_BASE_DOMAIN
        if not {endpoint_audience(allocation_id, base), tenant_audience(seen.tenant, base)} & seen.audiences:
            raise TokenRefused("it was minted for other endpoints")
        if tenant_public_key(seen.tenant, seen.kid) is None:
            raise TokenRefused("it was signed by a key no longer in use; mint a new one")
    except TokenRefused as refused:
        raise _refused(f"That endpoint token is refused: {refused}.") from None
    # The gateway learns of a revoked key within its JWKS refresh; here it is refused at once.
    entry = gateway_key(seen.key_prefix)
    if entry is None or not entry.usable_at(now) or entry.tenant_slug != seen.tenant or entry.tenant_id is None:
        raise _refused("That endpoint token was minted with a key that is revoked or expired.")
    return entry.tenant_id


def _token_verify(token: str, now: float) -> _Verified:
    kid = token_kid(token)
    parsed = kid_parse(kid)
    public = tenant_public_key(parsed[0], kid) if parsed else None
    if parsed is None or public is None:
        raise TokenRefused("it was signed by a key no longer in use; mint a new one")
    claims = token_verify(
        token, public, issuer=settings.LADDER_PUBLIC_URL, audience=None, now=now, leeway=TOKEN_LEEWAY_SECONDS
    )
    if claims[TENANT_CLAIM] != parsed[0]:
        raise TokenRefused("it names another tenant than its key's")
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    return _Verified(
        tenant=parsed[0],
        kid=kid,
        key_prefix=str(claims.get(KEY_CLAIM, "")),
        audiences=frozenset(str(a) for a in audiences),
        expires_at=float(claims["exp"]),
    )


# --- the checks -------------------------------------------------------------------------------------------------


def _admit(tenant_id: int, allocation_id: int, limit: int) -> None:
    """Count a call to the endpoint against its tenant's limit, in the endpoint's own counter (per tenant and
    endpoint: another tenant's burst, or the same tenant's on another endpoint, never uses it up). Only calls that
    passed the key check are counted, so nobody else can spend an endpoint's allowance; a refusal says when the
    count starts again (429 ``throttled`` with ``Retry-After``). Counted before a wake, which a refused call must
    not start. Counted in batches per process (``window_take_batched``): this is the hot path."""
    verdict = window_take_batched(f"endpoint:{tenant_id}:{allocation_id}", limit=limit, seconds=60, now=time.time())
    if not verdict.allowed:
        wait = retry_after_seconds(verdict)
        raise TooManyRequests(
            "throttled",
            f"Endpoint {allocation_id} takes {limit} calls a minute; try again in {wait} seconds.",
            retry_after=wait,
        )


def _endpoint_of(tenant_id: int, allocation_id: int) -> Allocation:
    """The tenant's endpoint; another tenant's id reads as none at all (403, as for what is no endpoint)."""
    allocation = (
        Allocation.objects.select_related("tenant", "hall__region")
        .filter(pk=allocation_id, rung__in=rungs_where(lambda f: f.endpoint), tenant_id=tenant_id)
        .first()
    )
    if allocation is None:
        raise ServiceError("endpoint_forbidden", "This key may not call that endpoint.", status=403)
    return allocation


def endpoint_admit(*, allocation_id: int, credential: str) -> Allocation | None:
    """Whether a call to a serverless endpoint may go through: a credential of its tenant, within its calls a
    minute, while it runs (an idle one is woken and the call held while it starts, ``_awake``). Returns None when
    the cached view of a running endpoint sufficed (no database read), else the allocation as read."""
    now = time.time()
    tenant_id = _caller_tenant(credential, allocation_id, now)
    entry = running_entry(allocation_id)
    if entry is not None and entry.endpoint:
        if entry.tenant_id != tenant_id:
            raise ServiceError("endpoint_forbidden", "This key may not call that endpoint.", status=403)
        _admit(tenant_id, allocation_id, entry.calls_per_minute)
        return None
    allocation = _endpoint_of(tenant_id, allocation_id)
    _admit(tenant_id, allocation_id, endpoint_calls_per_minute(allocation.tenant))
    if allocation.state == S.RUNNING:
        return allocation
    arrived = time.monotonic()
    allocation = _awake(allocation)
    # The request's queue delay: how long this check held it while the endpoint woke (docs/serverless.md).
    held_ms = round((time.monotonic() - arrived) * 1000)
    endpoint_hold_observe(allocation_id=allocation_id, held_ms=held_ms, at=timezone.now())
    return allocation


_HOST = re.compile(r"ldr-(\d+)(?:-(\d+))?")


def gateway_authorize(*, host: str, credential: str) -> None:
    """Whether the gateway may forward a request for ``host`` (raises when not). A serverless endpoint
    (``ldr-<id>.<base domain>``) needs an endpoint token or API key of its tenant (see ``endpoint_admit``); for
    an idle one the check wakes it and answers only once it runs (or 503 with ``Retry-After``), so the gateway
    holds the request meanwhile. A public port (``ldr-<id>-<port>.<base domain>``) is public while its allocation
    runs and exposes it, within its allocation's calls a minute. Anything else: 403."""
    name, _, rest = host.lower().partition(".")
    domain = rest.rsplit(":", 1)[0] if rest.rsplit(":", 1)[-1].isdigit() else rest
    match = _HOST.fullmatch(name)
    if match is None or domain != settings.LADDER_BASE_DOMAIN:
        raise ServiceError("endpoint_forbidden", "That host names no endpoint.", status=403)
    allocation_id, port = int(match[1]), match[2]
    if port is None:
        endpoint_admit(allocation_id=allocation_id, credential=credential)
        return
    entry = running_entry(allocation_id)
    if entry is None or int(port) not in entry.public_ports:
        raise ServiceError("endpoint_forbidden", "That host names no public port.", status=403)
    _admit(entry.tenant_id, allocation_id, entry.calls_per_minute)


# --- waking ------------------------------------------------------------------------------------------------------

WAKE_POLL_SECONDS = 0.25  # how often the request driving a wake asks the driver whether the endpoint runs yet
HELD_POLL_SECONDS = 1.0  # how often every other held request reads the endpoint's state (between wake-ups)
WAKING_RETRY_AFTER = 5  # what a request held past the bound is told
WAKE_LOCK_SECONDS = 2  # the driving request renews its lock each poll; one that died frees it within this
NO_CAPACITY_SECONDS = 5  # a wake refused for capacity is not tried again by other held requests for this long
_awoken: dict[int, threading.Event] = {}  # per endpoint: set when the request driving its wake in this process ends
_awoken_lock = threading.Lock()


def _waking(allocation: Allocation) -> bool:
    """Woken from zero and not running yet (its cold start is under way)."""
    return (
        allocation.state in (S.PLACED, S.PROVISIONING)
        and allocation.woke_at is not None
        and allocation.cold_start_ms is None
    )


def _awake(allocation: Allocation) -> Allocation:
    """The endpoint, running. An idle one is woken by this request, which is held (at most
    ``LADDER_SERVERLESS_WAKE_WAIT_SECONDS``) while it is placed again and cold-starts. One held request per
    endpoint drives the start (a lock in the shared cache): it provisions the endpoint and asks its driver every
    ``WAKE_POLL_SECONDS`` rather than waiting for a worker or the reconcile beat. Every other held request only
    waits: for the driving request in its own process to end, or reading the state every ``HELD_POLL_SECONDS``,
    so a burst of a thousand requests places the endpoint once, changes its Deployment once and reads the
    database a few times a second. No capacity: 503 ``endpoint_no_capacity``; past the bound: 503
    ``endpoint_waking``; both with ``Retry-After``. An endpoint on its first start, stopping or ended: 503
    ``endpoint_not_running``."""
    if allocation.state == S.IDLE:
        refused = cache.get(f"endpoint-no-capacity:{allocation.pk}")
        if refused is not None:  # a request a moment ago found no room: the others are told so without trying
            raise Unavailable("endpoint_no_capacity", refused, retry_after=NO_CAPACITY_RETRY_AFTER)
        try:
            endpoint_wake(allocation=allocation, actor=GATEWAY)  # False: another request woke it first
        except EndpointNoCapacity as no_room:
            cache.set(f"endpoint-no-capacity:{allocation.pk}", no_room.detail, timeout=NO_CAPACITY_SECONDS)
            raise
        allocation.refresh_from_db()
    if _waking(allocation):
        deadline = time.monotonic() + settings.LADDER_SERVERLESS_WAKE_WAIT_SECONDS
        lock = f"endpoint-wake:{allocation.pk}"
        while _waking(allocation) and time.monotonic() < deadline:
            if cache.add(lock, 1, timeout=WAKE_LOCK_SECONDS):
                _drive(allocation, deadline, lock)
            else:
                with _awoken_lock:
                    event = _awoken.get(allocation.pk)
                wait = min(HELD_POLL_SECONDS, max(0.0, deadline - time.monotonic()))
                if event is not None:
                    event.wait(wait)
                else:
                    time.sleep(wait)
            allocation.refresh_from_db()
        if _waking(allocation):
            raise Unavailable(
                "endpoint_waking",
                "The endpoint is starting from zero replicas; try again in a few seconds.",
                retry_after=WAKING_RETRY_AFTER,
            )
    if allocation.state != S.RUNNING:
        raise ServiceError("endpoint_not_running", f"The endpoint is {allocation.state}, not running.", status=503)
    return allocation


def _drive(allocation: Allocation, deadline: float, lock: str) -> None:
    """Start the endpoint and ask its driver until it runs or the bound passes, holding the wake lock (renewed
    as it goes, so a driver that died leaves it to another request within a few polls). Provisioning is
    idempotent and moves by compare-and-swap, so the held request may start it itself rather than wait for the
    queued task (which then finds it under way)."""
    driver = provisioner()
    event = threading.Event()
    with _awoken_lock:
        _awoken[allocation.pk] = event
    try:
        while _waking(allocation) and time.monotonic() < deadline:
            if allocation.state == S.PLACED:
                driver.provision(allocation.pk)
            else:
                driver.status(allocation.pk)
            allocation.refresh_from_db()
            if _waking(allocation):
                cache.touch(lock, WAKE_LOCK_SECONDS)
                time.sleep(WAKE_POLL_SECONDS)
    finally:
        cache.delete(lock)
        with _awoken_lock:
            if _awoken.get(allocation.pk) is event:
                del _awoken[allocation.pk]
        event.set()


def endpoint_called(allocation_id: int, at: datetime) -> None:
    """The simulated endpoint's idle clock starts again (written at most once a second: bookkeeping, not a log;
    the simulated fleet's stand-in for the queue depth a cluster's gateway reports)."""
    recent = at - timedelta(seconds=1)
    Allocation.objects.filter(pk=allocation_id).filter(
        Q(last_called_at__isnull=True) | Q(last_called_at__lt=recent)
    ).update(last_called_at=at)
