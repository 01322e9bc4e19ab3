"""Cluster credentials at rest: AES-256-GCM under a key from settings, bound to the cluster's name.

``LADDER_SECRETS_KEY`` (32 bytes, base64; from its key source, ``core.keys``) is the key; without it one is
derived from ``SECRET_KEY`` with HKDF-SHA256, so the embedded default works and production sets its own. A sealed
value is ``v1.<nonce>.<ciphertext>`` (URL-safe base64); the cluster's name is the associated data, so a sealed
credential moved to another cluster's row does not open.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from core.keys import key_setting


class CredentialsError(ValueError):
    """The sealed credentials cannot be opened (another key, another cluster, or damaged)."""


def _key() -> bytes:
    configured = key_setting("LADDER_SECRETS_KEY")
    if configured:
        key = base64.urlsafe_b64decode(configured + "=" * (-len(configured) % 4))
        if len(key) != 32:
            raise CredentialsError("LADDER_SECRETS_KEY must be 32 bytes, base64-encoded")
        return key
    kdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"ladder cluster credentials")
    return kdf.derive(settings.SECRET_KEY.encode())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def seal(credentials: dict[str, Any], *, cluster: str) -> str:
    nonce = os.urandom(12)
    sealed = AESGCM(_key()).encrypt(nonce, json.dumps(credentials).encode(), cluster.encode())
    return f"v1.{_b64(nonce)}.{_b64(sealed)}"


def unseal(token: str, *, cluster: str) -> dict[str, Any]:
    try:
        version, nonce, sealed = token.split(".")
        if version != "v1":
            raise ValueError(version)
        opened: dict[str, Any] = json.loads(AESGCM(_key()).decrypt(_unb64(nonce), _unb64(sealed), cluster.encode()))
    except (ValueError, InvalidTag) as error:
        raise CredentialsError(f"the credentials of cluster {cluster} cannot be opened") from error
    return opened
