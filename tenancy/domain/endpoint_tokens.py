"""Endpoint tokens: short-lived JWTs that let the gateway admit a call to a serverless endpoint without asking
Ladder (docs/serverless.md, "Who may call an endpoint").

Each tenant has its own signing key, an ES256 (P-256) key pair derived from Ladder's token secret, the tenant's
slug and the key's generation, so nothing private is stored. A tenant's JWKS lists two generations: the one that
signs now and the next one, published ahead so that a gateway already holds it when it starts signing. Rotating
(which revoking any of the tenant's API keys does) moves signing to the next generation and drops the old one
from the JWKS: a gateway that refreshes the JWKS every N seconds refuses every token the old key signed within N
seconds, whatever their expiry, and accepts the new ones at once. Because each endpoint's gateway policy names
only its own tenant's JWKS and requires its tenant's claim, another tenant's token cannot pass there.

Pure: ``cryptography`` and PyJWT, no Django.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ALGORITHM = "ES256"
TENANT_CLAIM = "ladder_tenant"  # the tenant's slug: each endpoint's gateway policy requires its own
KEY_CLAIM = "ladder_key"  # the API key's prefix, for the audit and the compatibility check
_P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
_SALT = b"ladder endpoint tokens v1"


class TokenRefused(Exception):
    """A token that does not admit its bearer; ``str()`` says why in words."""


def kid_for(tenant_slug: str, generation: int) -> str:
    return f"{tenant_slug}.{generation}"


def kid_parse(kid: str) -> tuple[str, int] | None:
    """The tenant's slug and the generation a ``kid`` names; None when it names none."""
    slug, _, generation = kid.rpartition(".")
    return (slug, int(generation)) if slug and generation.isdigit() else None


def endpoint_audience(allocation_id: int, base_domain: str) -> str:
    """What a token for one endpoint names: the endpoint's host, as the gateway's policy for it expects."""
    return f"ldr-{allocation_id}.{base_domain}"


def tenant_audience(tenant_slug: str, base_domain: str) -> str:
    """What a token for every endpoint of its tenant (present and future) names."""
    return f"endpoints.{tenant_slug}.{base_domain}"


def signing_key(secret: bytes, tenant_slug: str, generation: int) -> ec.EllipticCurvePrivateKey:
    """The tenant's signing key of a generation: HKDF-SHA256 of Ladder's token secret, bound to the tenant and
    the generation, reduced to a P-256 scalar (FIPS 186-5 A.2.1). The same inputs always give the same key."""
    info = f"{tenant_slug}:{generation}".encode()
    okm = HKDF(algorithm=hashes.SHA256(), length=48, salt=_SALT, info=info).derive(secret)
    scalar = int.from_bytes(okm, "big") % (_P256_ORDER - 1) + 1  # 384 bits reduced: no measurable bias
    return ec.derive_private_key(scalar, ec.SECP256R1())


def _b64(n: int) -> str:
    return base64.urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()


def public_jwk(key: ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey, kid: str) -> dict[str, str]:
    """The public half as a JWK (RFC 7517/7518), as a JWKS lists it."""
    public = key.public_key() if isinstance(key, ec.EllipticCurvePrivateKey) else key
    numbers = public.public_numbers()
    return {
        "kty": "EC",
        "crv": "P-256",
        "x": _b64(numbers.x),
        "y": _b64(numbers.y),
        "kid": kid,
        "alg": ALGORITHM,
        "use": "sig",
    }


@dataclass(frozen=True)
class TokenClaims:
    issuer: str
    tenant: str  # slug
    key_prefix: str
    audiences: tuple[str, ...]
    generation: int  # of the tenant's signing key
    issued_at: int  # seconds since the epoch
    expires_at: int
    token_id: str

    def as_jwt_claims(self) -> dict[str, Any]:
        return {
            "iss": self.issuer,
            "sub": f"ldr_{self.key_prefix}",
            "aud": list(self.audiences),
            "iat": self.issued_at,
            "nbf": self.issued_at,
            "exp": self.expires_at,
            "jti": self.token_id,
            TENANT_CLAIM: self.tenant,
            KEY_CLAIM: self.key_prefix,
        }


def token_sign(key: ec.EllipticCurvePrivateKey, claims: TokenClaims) -> str:
    return jwt.encode(
        claims.as_jwt_claims(),
        key,
        algorithm=ALGORITHM,
        headers={"kid": kid_for(claims.tenant, claims.generation), "typ": "JWT"},
    )


def looks_like_token(credential: str) -> bool:
    """A JWT (three base64url parts) rather than an API key (``ldr_<prefix>_<secret>``)."""
    return credential.count(".") == 2 and credential.startswith("eyJ")


def token_kid(token: str) -> str:
    """The ``kid`` a token's header names (unverified: only to find the key that verifies it)."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as error:
        raise TokenRefused(f"not a token: {error}") from None
    kid = header.get("kid")
    if not isinstance(kid, str) or header.get("alg") != ALGORITHM:
        raise TokenRefused(f"a token needs an {ALGORITHM} signature and a kid")
    return kid


def token_verify(
    token: str,
    public_key: ec.EllipticCurvePublicKey,
    *,
    issuer: str,
    audience: str | tuple[str, ...] | None,
    now: float,
    leeway: float = 0,
) -> dict[str, Any]:
    """The claims of a token signed by ``public_key`` for one of ``audience`` (None: whatever its audiences; the
    caller checks them), issued by ``issuer``, valid at ``now``; ``TokenRefused`` otherwise. Checks what the
    gateway's JWT filter checks."""
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            public_key,
            algorithms=[ALGORITHM],
            audience=list(audience) if isinstance(audience, tuple) else audience,
            issuer=issuer,
            leeway=leeway,
            options={
                "require": ["exp", "iat", "aud", "iss", TENANT_CLAIM],
                "verify_exp": False,
                "verify_nbf": False,
                "verify_aud": audience is not None,
            },
        )
    except jwt.PyJWTError as error:
        raise TokenRefused(str(error)) from None
    if float(claims["exp"]) + leeway <= now:
        raise TokenRefused("the token has expired")
    if float(claims.get("nbf", claims["iat"])) - leeway > now:
        raise TokenRefused("the token is not valid yet")
    return claims


def token_digest(token: str) -> str:
    """A short one-way name for a token (never the token itself in a log or a counter)."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]
