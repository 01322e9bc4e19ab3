"""Where the product's keys come from: the master keys wrapping tenant keys (``LADDER_MASTER_KEYS``; tenant secrets
and data assets are envelope-encrypted under them), the audit signing key (``LADDER_AUDIT_SIGNING_KEY``) and the
key sealing cluster credentials (``LADDER_SECRETS_KEY``). Every reader asks ``key_setting(NAME)``.

``LADDER_KEY_SOURCE`` chooses the source:

- ``env`` (the default): the setting is the key, from the environment or a ``<NAME>_FILE``, as it always was.
- ``vault``: the setting holds the key *wrapped* by HashiCorp Vault's transit engine, the ``ciphertext``
  (``vault:v1:…``) its ``encrypt`` endpoint returned for the same text the ``env`` source would hold. At start
  (``keys_load``, from core's ``ready``) each one is unwrapped by transit's ``decrypt`` with the key
  ``VAULT_TRANSIT_KEY`` under the mount ``VAULT_TRANSIT_MOUNT``, at ``VAULT_ADDR`` with ``VAULT_TOKEN`` (or
  ``VAULT_TOKEN_FILE``), through the ``hvac`` client, and kept in the process's memory only: the plain keys are
  never on disk nor in the environment, and taking Vault's permission away stops every new process from starting.
  A process that cannot unwrap a key does not start, and says why (Vault unreachable or sealed, the token refused,
  no such transit key or mount, a value that is not a transit ciphertext).

An empty setting means the key derived from ``SECRET_KEY`` under both sources (the embedded default).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from functools import lru_cache

import hvac  # type: ignore[import-untyped]  # no stubs are pinned
import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from hvac import exceptions as vault_errors

KEY_SETTINGS = ("LADDER_MASTER_KEYS", "LADDER_AUDIT_SIGNING_KEY", "LADDER_SECRETS_KEY")
SOURCES = ("env", "vault")
CIPHERTEXT_PREFIX = "vault:v"


class KeySourceError(ImproperlyConfigured):
    """A key cannot be had from its source: the process must not start without it."""


@dataclass(frozen=True)
class VaultTransit:
    """Where and as whom keys are unwrapped."""

    addr: str
    token: str
    mount: str
    key: str
    namespace: str = ""
    timeout: float = 5.0

    @classmethod
    def from_settings(cls) -> VaultTransit:
        return cls(
            addr=settings.VAULT_ADDR,
            token=settings.VAULT_TOKEN.strip(),
            mount=settings.VAULT_TRANSIT_MOUNT,
            key=settings.VAULT_TRANSIT_KEY,
            namespace=settings.VAULT_NAMESPACE,
            timeout=settings.VAULT_TIMEOUT_SECONDS,
        )

    def client(self) -> hvac.Client:
        return hvac.Client(url=self.addr, token=self.token, namespace=self.namespace or None, timeout=self.timeout)


def key_setting(name: str) -> str:
    """The key setting ``name`` in the clear: as configured (``env``), or unwrapped by Vault (``vault``)."""
    if name not in KEY_SETTINGS:
        raise ValueError(f"{name} is not a key setting")
    configured: str = getattr(settings, name)
    if settings.LADDER_KEY_SOURCE == "env" or not configured.strip():
        return configured
    return unwrap(name, configured.strip(), VaultTransit.from_settings())


def keys_load() -> None:
    """Unwrap every configured key now (at start), so a process without its keys stops before it serves."""
    for name in KEY_SETTINGS:
        key_setting(name)


@lru_cache(maxsize=16)
def unwrap(name: str, ciphertext: str, transit: VaultTransit) -> str:
    """The text ``ciphertext`` wraps, decrypted by Vault's transit (once per process and value)."""
    if not ciphertext.startswith(CIPHERTEXT_PREFIX):
        raise KeySourceError(
            f"{name} is not a Vault transit ciphertext (vault:v1:…): with LADDER_KEY_SOURCE=vault it holds the "
            f"key wrapped by `vault write {transit.mount}/encrypt/{transit.key} plaintext=<base64 of the key>`."
        )
    where = f"{transit.mount}/decrypt/{transit.key} at {transit.addr}"
    try:
        answer = transit.client().secrets.transit.decrypt_data(
            name=transit.key, ciphertext=ciphertext, mount_point=transit.mount
        )
    except (requests.ConnectionError, requests.Timeout) as error:
        raise KeySourceError(
            f"{name} cannot be unwrapped: Vault does not answer at {transit.addr} ({type(error).__name__}). "
            "Check VAULT_ADDR and that Vault is up."
        ) from None
    except vault_errors.Forbidden:
        raise KeySourceError(
            f"{name} cannot be unwrapped: Vault refused the token (403 permission denied) for {where}. Check "
            f"VAULT_TOKEN (or VAULT_TOKEN_FILE), that it has not expired, and that its policy grants "
            f'"update" on {transit.mount}/decrypt/{transit.key}.'
        ) from None
    except vault_errors.VaultDown as error:
        raise KeySourceError(
            f"{name} cannot be unwrapped: Vault is sealed or down ({error}) at {transit.addr}."
        ) from None
    except vault_errors.InvalidPath as error:
        raise KeySourceError(
            f"{name} cannot be unwrapped: Vault has no transit engine mounted at {transit.mount!r} ({error}). "
            "Check VAULT_TRANSIT_MOUNT."
        ) from None
    except vault_errors.InvalidRequest as error:
        raise KeySourceError(
            f"{name} cannot be unwrapped by {where}: {error}. Check VAULT_TRANSIT_KEY (the transit key that "
            "wrapped it) and that the value is that key's ciphertext."
        ) from None
    except vault_errors.VaultError as error:
        raise KeySourceError(f"{name} cannot be unwrapped by {where}: {error}") from None
    try:
        return base64.b64decode(answer["data"]["plaintext"], validate=True).decode("utf-8")
    except (KeyError, TypeError, binascii.Error, UnicodeDecodeError):
        raise KeySourceError(f"{name}: Vault's answer from {where} holds no readable plaintext.") from None
