"""The audit signing key: Ed25519, signing the chain's checkpoints and the seals of exported bundles.

``LADDER_AUDIT_SIGNING_KEY`` holds the private key, as PEM (PKCS#8) or as the base64 of the raw 32-byte seed
(``LADDER_AUDIT_SIGNING_KEY_FILE`` reads either from a file). Empty, a key is derived from ``SECRET_KEY`` with
HKDF-SHA256 (info ``ladder audit signing``): the embedded default then signs without setup, but anyone holding
``SECRET_KEY`` holds the signing key too, and rotating ``SECRET_KEY`` changes it. Production sets its own.

Everything here is pure apart from ``audit_signer()``, the one function that reads settings (the key through
``core.keys``: in the environment, or wrapped by Vault's transit). The payloads that
are signed are defined by the offline verifier (``compliance.domain.verify``), so both sides spell them one way.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from compliance.domain.verify import checkpoint_payload, key_id, seal_payload
from core.domain.chain import format_time
from core.keys import key_setting

HKDF_INFO = b"ladder audit signing"


class SigningKeyError(ValueError):
    """LADDER_AUDIT_SIGNING_KEY holds no usable Ed25519 private key."""


def derive_private_key(secret_key: str) -> Ed25519PrivateKey:
    """The key used when none is configured: HKDF-SHA256 of ``SECRET_KEY``, as a 32-byte Ed25519 seed."""
    seed = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=HKDF_INFO).derive(secret_key.encode())
    return Ed25519PrivateKey.from_private_bytes(seed)


def load_private_key(configured: str) -> Ed25519PrivateKey:
    """An Ed25519 private key from PEM (PKCS#8, unencrypted) or base64 (standard or URL-safe) of the raw seed."""
    text = configured.strip()
    if text.startswith("-----BEGIN"):
        try:
            # An environment variable may carry the PEM on one line with literal "\n"s.
            key = serialization.load_pem_private_key(text.replace("\\n", "\n").encode(), password=None)
        except (ValueError, TypeError) as error:
            raise SigningKeyError(f"LADDER_AUDIT_SIGNING_KEY is not a readable PEM private key: {error}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningKeyError("LADDER_AUDIT_SIGNING_KEY must be an Ed25519 key")
        return key
    try:
        padded = text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4)
        seed = base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        raise SigningKeyError("LADDER_AUDIT_SIGNING_KEY is neither PEM nor base64") from None
    if len(seed) != 32:
        raise SigningKeyError(f"LADDER_AUDIT_SIGNING_KEY must be a 32-byte Ed25519 seed, not {len(seed)} bytes")
    return Ed25519PrivateKey.from_private_bytes(seed)


def public_pem(public_key: Ed25519PublicKey) -> str:
    return public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode(
        "ascii"
    )


@dataclass(frozen=True)
class Signer:
    private_key: Ed25519PrivateKey
    public_key: Ed25519PublicKey
    key_id: str
    public_key_pem: str

    @classmethod
    def of(cls, private_key: Ed25519PrivateKey) -> Signer:
        public = private_key.public_key()
        return cls(private_key, public, key_id(public), public_pem(public))

    def sign(self, payload: bytes) -> str:
        """Base64 of the Ed25519 signature over ``payload``."""
        return base64.b64encode(self.private_key.sign(payload)).decode("ascii")

    def sign_checkpoint(self, *, seq: int, hash_: str, at: datetime) -> str:
        return self.sign(checkpoint_payload(seq=seq, hash_=hash_, at=format_time(at), key_id=self.key_id))

    def sign_seal(self, *, sha256: str, events: int, links: int, checkpoints: int) -> str:
        payload = seal_payload(sha256=sha256, events=events, links=links, checkpoints=checkpoints, key_id=self.key_id)
        return self.sign(payload)


@lru_cache(maxsize=4)
def signer_for(configured: str, secret_key: str) -> Signer:
    """The signer of a configuration (cached: loading and deriving cost more than signing)."""
    return Signer.of(load_private_key(configured) if configured.strip() else derive_private_key(secret_key))


def audit_signer() -> Signer:
    """The signer the settings name: ``LADDER_AUDIT_SIGNING_KEY`` (from its key source, ``core.keys``), or the key
    derived from ``SECRET_KEY``."""
    return signer_for(key_setting("LADDER_AUDIT_SIGNING_KEY"), settings.SECRET_KEY)


def public_key_pem() -> str:
    return audit_signer().public_key_pem


def signing_key_id() -> str:
    return audit_signer().key_id
