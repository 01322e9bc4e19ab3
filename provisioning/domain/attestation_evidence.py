"""Attestation evidence of a confidential VM and the sealed release of its secrets: pure cryptography, no Django.

The built-in evidence format (``ladder-node-key``) is a set of claims signed with Ed25519 by the host's attestation
key, whose public half the operator registered for the node::

    {"format": "ladder-node-key",
     "claims": {"allocation": 12, "host": "euw1b-01", "eat_nonce": "<nonce Ladder issued>",
                "tee": "snp", "gpu_cc_mode": "on", "measurements": {"launch": "<hex>"},
                "tee_pubkey": "<base64 X25519 public key of the guest>"},
     "signature": "<base64 Ed25519 signature of the claims' canonical JSON>"}

Claim names follow the Entity Attestation Token (RFC 9711) where one exists (``eat_nonce``). ``tee_pubkey`` is a
key the guest made inside its TEE: the key broker seals the workload's secrets to it (``seal``), so only that
guest can open them, whoever else sees the response.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from core.domain.chain import canonical_json

FORMAT = "ladder-node-key"
SEAL_ALG = "X25519-HKDF-SHA256-A256GCM"
_SEAL_INFO = b"ladder attestation release"


class EvidenceError(ValueError):
    """Evidence that is not in the format, or whose signature does not verify."""


def b64d(value: object, what: str, size: int | None = None) -> bytes:
    if not isinstance(value, str):
        raise EvidenceError(f"{what} must be a base64 string")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise EvidenceError(f"{what} is not base64") from None
    if size is not None and len(raw) != size:
        raise EvidenceError(f"{what} must be {size} bytes, not {len(raw)}")
    return raw


def b64e(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def public_key_check(value: str) -> str:
    """A node's attestation key as the operator gives it: base64 of the raw 32-byte Ed25519 public key."""
    Ed25519PublicKey.from_public_bytes(b64d(value, "the public key", 32))
    return value


def claims_bytes(claims: dict[str, Any]) -> bytes:
    return canonical_json(claims).encode()


def sign(key: Ed25519PrivateKey, claims: dict[str, Any]) -> dict[str, Any]:
    """Evidence in the built-in format: what a host's attestation agent sends (the simulated fleet's does)."""
    return {"format": FORMAT, "claims": claims, "signature": b64e(key.sign(claims_bytes(claims)))}


def verified_claims(evidence: object, public_key: str) -> dict[str, Any]:
    """The claims of ``evidence`` when its signature verifies with ``public_key``; raises ``EvidenceError``."""
    if not isinstance(evidence, dict) or evidence.get("format") != FORMAT:
        raise EvidenceError(f'evidence must be an object with "format": "{FORMAT}"')
    claims = evidence.get("claims")
    if not isinstance(claims, dict):
        raise EvidenceError("evidence has no claims object")
    signature = b64d(evidence.get("signature"), "the signature", 64)
    key = Ed25519PublicKey.from_public_bytes(b64d(public_key, "the registered key", 32))
    try:
        key.verify(signature, claims_bytes(claims))
    except InvalidSignature:
        raise EvidenceError("the signature does not verify with the host's registered attestation key") from None
    return claims


# --- the sealed release --------------------------------------------------------------------------------------


def _aead_key(shared: bytes, epk: bytes, recipient: bytes) -> bytes:
    kdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=epk + recipient, info=_SEAL_INFO)
    return kdf.derive(shared)


def seal(payload: dict[str, Any], recipient_b64: str) -> dict[str, str]:
    """``payload`` encrypted to the guest's X25519 key (ephemeral-static ECDH, HKDF-SHA256, AES-256-GCM)."""
    recipient = b64d(recipient_b64, "tee_pubkey", 32)
    ephemeral = X25519PrivateKey.generate()
    epk = ephemeral.public_key().public_bytes_raw()
    key = _aead_key(ephemeral.exchange(X25519PublicKey.from_public_bytes(recipient)), epk, recipient)
    iv = os.urandom(12)
    ciphertext = AESGCM(key).encrypt(iv, json.dumps(payload, sort_keys=True).encode(), None)
    return {"alg": SEAL_ALG, "epk": b64e(epk), "iv": b64e(iv), "ciphertext": b64e(ciphertext)}


def open_sealed(sealed: dict[str, str], private_key: X25519PrivateKey) -> dict[str, Any]:
    """What the guest does with a release: only the holder of the key the evidence named can read it."""
    if sealed.get("alg") != SEAL_ALG:
        raise EvidenceError(f"unknown seal {sealed.get('alg')!r}")
    epk = b64d(sealed["epk"], "epk", 32)
    recipient = private_key.public_key().public_bytes_raw()
    key = _aead_key(private_key.exchange(X25519PublicKey.from_public_bytes(epk)), epk, recipient)
    try:
        plain = AESGCM(key).decrypt(b64d(sealed["iv"], "iv", 12), b64d(sealed["ciphertext"], "ciphertext"), None)
    except InvalidTag:
        raise EvidenceError("the release was not sealed to this key") from None
    opened: dict[str, Any] = json.loads(plain)
    return opened


@dataclass(frozen=True)
class GuestKeys:
    """What a guest makes inside its TEE for one attestation: the X25519 key its secrets are sealed to."""

    private: X25519PrivateKey

    @classmethod
    def generate(cls) -> GuestKeys:
        return cls(X25519PrivateKey.generate())

    @property
    def public_b64(self) -> str:
        return b64e(self.private.public_key().public_bytes_raw())
