"""SSH public keys as tenants register them: parsed and checked without Django.

Accepted: ed25519, ECDSA (NIST P-256, P-384, P-521) and RSA of at least 3072 bits; refused: DSA, shorter RSA,
certificates, private keys, anything unparsable. The fingerprint is OpenSSH's (``ssh-keygen -l``): ``SHA256:`` and
the unpadded base64 of the SHA-256 of the key blob.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

RSA_MIN_BITS = 3072
MAX_LENGTH = 16_384  # an RSA-16384 key line is about 2,800 characters; anything far longer is not a public key
_ECDSA = {"nistp256": 256, "nistp384": 384, "nistp521": 521}


class SshKeyError(ValueError):
    """Why a public key is refused, in words a person can act on."""


@dataclass(frozen=True)
class PublicKey:
    key_type: str  # "ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa", ...
    bits: int
    fingerprint: str  # "SHA256:..."
    line: str  # "<type> <base64>" with the comment, if any, normalised to single spaces
    comment: str


def parse(text: str) -> PublicKey:
    """The public key on one line (``ssh-ed25519 AAAA... comment``), or ``SshKeyError``."""
    if len(text) > MAX_LENGTH:
        raise SshKeyError(f"A public key is one line of at most {MAX_LENGTH} characters.")
    stripped = text.strip()
    if "PRIVATE KEY" in stripped:
        raise SshKeyError("This is a private key: give the public key (the .pub file), and keep the private key.")
    if "\n" in stripped or "\r" in stripped:
        raise SshKeyError("Give one public key, on one line.")
    parts = stripped.split(None, 2)
    if len(parts) < 2:
        raise SshKeyError("A public key reads '<type> <base64> [comment]', e.g. 'ssh-ed25519 AAAAC3... you@laptop'.")
    key_type, blob_b64 = parts[0], parts[1]
    comment = parts[2].strip() if len(parts) == 3 else ""
    if key_type == "ssh-dss":
        raise SshKeyError("DSA keys are not accepted; use ed25519 (or ECDSA, or RSA of 3072 bits or more).")
    if "-cert-v01@openssh.com" in key_type:
        raise SshKeyError("SSH certificates are not accepted here; give the plain public key.")
    try:
        blob = base64.b64decode(blob_b64, validate=True)
    except (binascii.Error, ValueError):
        raise SshKeyError("The key's base64 part is not valid base64.") from None
    try:
        key = serialization.load_ssh_public_key(f"{key_type} {blob_b64}".encode())
    except (ValueError, TypeError) as error:
        raise SshKeyError(f"Not an SSH public key this service accepts ({_reason(error)}).") from None
    if isinstance(key, ed25519.Ed25519PublicKey):
        bits = 256
    elif isinstance(key, ec.EllipticCurvePublicKey):
        bits = key.curve.key_size
        if bits not in _ECDSA.values():
            raise SshKeyError("Only ECDSA keys on NIST P-256, P-384 or P-521 are accepted.")
    elif isinstance(key, rsa.RSAPublicKey):
        bits = key.key_size
        if bits < RSA_MIN_BITS:
            raise SshKeyError(f"RSA keys need at least {RSA_MIN_BITS} bits; this one has {bits}. Use ed25519.")
    else:
        raise SshKeyError("Only ed25519, ECDSA and RSA keys are accepted (DSA is not).")
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    line = f"{key_type} {blob_b64}" + (f" {' '.join(comment.split())}" if comment else "")
    return PublicKey(key_type=key_type, bits=bits, fingerprint=f"SHA256:{digest}", line=line, comment=comment)


def _reason(error: Exception) -> str:
    message = str(error).strip().rstrip(".")
    return message[:120] if message else type(error).__name__
