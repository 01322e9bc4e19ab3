"""The tenant's side of endpoint tokens (docs/serverless.md): its signing keys and JWKS, rotating them, and the
cached view of an API key the gateway's compatibility check reads on every call.

Both cached reads live ``LADDER_GATEWAY_KEYS_SECONDS`` at most and are forgotten on change (a revoked key, a
rotation), so with a cache shared by every web process (Redis) a change is seen at once, and with one cache per
process within that bound. The bound is the one the gateway's own JWKS refresh gives.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import F

from core.actor import Actor
from core.audit import audit_record
from core.cache import LocalMemo, cache_forget
from tenancy.domain.endpoint_tokens import kid_for, kid_parse, public_jwk, signing_key
from tenancy.models import ApiKey, Membership, Tenant

_memo = LocalMemo(seconds=1.0)  # this process's: every call of the hot path reads it first


@functools.lru_cache(maxsize=4096)
def _signing_key(tenant_slug: str, generation: int) -> ec.EllipticCurvePrivateKey:
    return signing_key(settings.LADDER_ENDPOINT_TOKEN_SECRET.encode(), tenant_slug, generation)


def tenant_signing_key(tenant: Tenant) -> tuple[int, ec.EllipticCurvePrivateKey]:
    """The generation that signs the tenant's tokens now, and its key."""
    generation = Tenant.objects.values_list("endpoint_token_generation", flat=True).get(pk=tenant.pk)
    return generation, _signing_key(tenant.slug, generation)


def _jwks_key(tenant_slug: str) -> str:
    return f"gateway:jwks:{tenant_slug}"


@functools.lru_cache(maxsize=4096)
def _public_key(tenant_slug: str, generation: int) -> ec.EllipticCurvePublicKey:
    return _signing_key(tenant_slug, generation).public_key()


def tenant_jwks(tenant_slug: str) -> dict[str, Any] | None:
    """The tenant's JWKS: the generation that signs now and the next one, published ahead so a gateway holds it
    before it signs anything. None for no such tenant."""
    now = time.monotonic()
    known, document = _memo.get(f"jwks:{tenant_slug}", now)
    if not known:
        document = _tenant_jwks_read(tenant_slug)
        _memo.put(f"jwks:{tenant_slug}", document, now)
    return dict(document) if document is not None else None


def _tenant_jwks_read(tenant_slug: str) -> dict[str, Any] | None:
    document = cache.get(_jwks_key(tenant_slug))
    if document is None:
        generation = Tenant.objects.filter(slug=tenant_slug).values_list("endpoint_token_generation", flat=True).first()
        if generation is None:
            return None
        keys = [public_jwk(_public_key(tenant_slug, g), kid_for(tenant_slug, g)) for g in (generation, generation + 1)]
        document = {"keys": keys}
        cache.set(_jwks_key(tenant_slug), document, timeout=settings.LADDER_GATEWAY_KEYS_SECONDS)
    return dict(document)


def tenant_public_key(tenant_slug: str, kid: str) -> ec.EllipticCurvePublicKey | None:
    """The public key a ``kid`` of the tenant's JWKS names, or None when the JWKS lists no such key."""
    document = tenant_jwks(tenant_slug)
    for jwk in (document or {}).get("keys", []):
        if jwk["kid"] == kid:
            parsed = kid_parse(kid)
            return _public_key(*parsed) if parsed else None
    return None


@transaction.atomic
def endpoint_tokens_rotate(*, tenant: Tenant, actor: Actor, reason: str) -> int:
    """Sign the tenant's tokens with its next key from now on and drop the current one from its JWKS: every
    token signed before is refused by the gateway within ``LADDER_GATEWAY_KEYS_SECONDS``; tokens minted from now
    on pass at once (their key was already published). Returns the new generation."""
    Tenant.objects.filter(pk=tenant.pk).update(endpoint_token_generation=F("endpoint_token_generation") + 1)
    generation = Tenant.objects.values_list("endpoint_token_generation", flat=True).get(pk=tenant.pk)
    tenant.endpoint_token_generation = generation
    audit_record(
        actor=actor,
        action="endpoint_tokens.rotated",
        target_type="tenant",
        target_id=tenant.pk,
        tenant=tenant,
        data={"generation": generation, "reason": reason},
    )
    _memo.forget(f"jwks:{tenant.slug}")
    cache_forget(_jwks_key(tenant.slug))
    return generation


# --- the compatibility check's view of an API key ------------------------------------------------------------


@dataclass(frozen=True)
class GatewayKey:
    """What the gateway's per-request check needs of an API key, without the database."""

    prefix: str
    secret_hash: str
    tenant_id: int | None  # None: a staff key, or a key whose owner left its tenant
    tenant_slug: str
    expires_at: float | None  # seconds since the epoch
    usable: bool  # not revoked, its owner active and still a member of the key's tenant

    def usable_at(self, now: float) -> bool:
        return self.usable and (self.expires_at is None or self.expires_at > now)


_NO_KEY = "none"  # cached for a prefix that names no key, so guessing prefixes does not reach the database


def _gateway_key_key(prefix: str) -> str:
    return f"gateway:key:{prefix}"


def gateway_key(prefix: str) -> GatewayKey | None:
    """The key a prefix names, as of at most ``LADDER_GATEWAY_KEYS_SECONDS`` ago (forgotten when revoked: at once
    in the process that revoked it and, through a shared cache, within a second in the others)."""
    now = time.monotonic()
    known, entry = _memo.get(f"key:{prefix}", now)
    if known:
        return entry if isinstance(entry, GatewayKey) else None
    entry = _gateway_key_read(prefix)
    _memo.put(f"key:{prefix}", entry, now)
    return entry


def _gateway_key_read(prefix: str) -> GatewayKey | None:
    found = cache.get(_gateway_key_key(prefix))
    if found == _NO_KEY:
        return None
    if isinstance(found, GatewayKey):
        return found
    key = ApiKey.objects.select_related("user", "tenant").filter(prefix=prefix).first()
    entry: GatewayKey | None = None
    if key is not None:
        member_of = Membership.objects.filter(user_id=key.user_id).values_list("tenant_id", flat=True).first()
        tenant_id = key.tenant_id if key.tenant_id is not None and member_of == key.tenant_id else None
        entry = GatewayKey(
            prefix=key.prefix,
            secret_hash=key.secret_hash,
            tenant_id=tenant_id,
            tenant_slug=key.tenant.slug if key.tenant is not None else "",
            expires_at=_timestamp(key.expires_at),
            usable=key.revoked_at is None and key.user.is_active and tenant_id is not None,
        )
    cache.set(_gateway_key_key(prefix), entry or _NO_KEY, timeout=settings.LADDER_GATEWAY_KEYS_SECONDS)
    return entry


def gateway_key_forget(prefix: str) -> None:
    """Read the key afresh on its next use (it was revoked, or its owner changed)."""
    _memo.forget(f"key:{prefix}")
    cache_forget(_gateway_key_key(prefix))


def _timestamp(at: datetime | None) -> float | None:
    return at.timestamp() if at is not None else None
