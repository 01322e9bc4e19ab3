"""SSH public keys: what is accepted, what is refused and why, and OpenSSH's fingerprint."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from tenancy.domain.ssh import SshKeyError, parse


def public(key) -> str:
    return key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


@pytest.mark.parametrize(
    ("key", "key_type", "bits"),
    [
        (ed25519.Ed25519PrivateKey.generate(), "ssh-ed25519", 256),
        (ec.generate_private_key(ec.SECP256R1()), "ecdsa-sha2-nistp256", 256),
        (ec.generate_private_key(ec.SECP521R1()), "ecdsa-sha2-nistp521", 521),
        (rsa.generate_private_key(65537, 3072), "ssh-rsa", 3072),
    ],
)
def test_it_accepts_ed25519_ecdsa_and_long_rsa_keys(key, key_type, bits):
    line = public(key)
    parsed = parse(f"  {line}   alice@laptop  \n")
    blob = base64.b64decode(line.split()[1])
    expected = "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    assert (parsed.key_type, parsed.bits, parsed.fingerprint) == (key_type, bits, expected)
    assert parsed.line == f"{line} alice@laptop"
    assert parsed.comment == "alice@laptop"


def test_it_refuses_short_rsa_naming_the_size():
    with pytest.raises(SshKeyError, match="at least 3072 bits; this one has 2048"):
        parse(public(rsa.generate_private_key(65537, 2048)))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "reads '<type> <base64>"),
        ("ssh-ed25519", "reads '<type> <base64>"),
        ("ssh-ed25519 not*base64", "not valid base64"),
        ("ssh-dss AAAAB3NzaC1kc3M=", "DSA keys are not accepted"),
        ("ssh-ed25519-cert-v01@openssh.com AAAA", "certificates are not accepted"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----", "private key"),
        ("ssh-ed25519 AAAA\nssh-ed25519 AAAA", "one public key, on one line"),
        ("ssh-ed25519 AAAAB3NzaC1yc2E=", "Not an SSH public key"),
        ("ssh-ed25519 " + "A" * 20_000, "at most 16384 characters"),
    ],
)
def test_it_refuses_what_is_not_one_acceptable_public_key(text, why):
    with pytest.raises(SshKeyError, match=why.replace("(", r"\(")):
        parse(text)
