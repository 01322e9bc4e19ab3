"""A confidential VM's guest, as tests play it: it asks for a nonce, signs nonce-bound evidence with its host's
attestation key, and opens what the key broker released to it."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from rest_framework.test import APIClient

from provisioning.domain.attestation_evidence import GuestKeys, b64e, open_sealed, sign
from provisioning.drivers.base import simulated_node_public_key
from provisioning.models import Node
from provisioning.services.attestation import attestation_credential
from provisioning.services.fleet import node_attestation_key_set
from tests.support import SYSTEM


def host_key_registered(node: Node) -> Ed25519PrivateKey:
    """A fresh attestation key for the host, its public half registered as an operator does."""
    key = Ed25519PrivateKey.generate()
    node_attestation_key_set(node=node, public_key=b64e(key.public_key().public_bytes_raw()), actor=SYSTEM)
    return key


def guest_attests(allocation_id: int, host: Node, host_key: Ed25519PrivateKey, **claims: Any) -> dict[str, Any]:
    """Challenge, then evidence, through the API with the allocation's credential; the opened release."""
    guest = APIClient()
    guest.credentials(HTTP_AUTHORIZATION=f"Bearer {attestation_credential(allocation_id)}")
    base = f"/api/v1/attestation/{allocation_id}"
    challenge = guest.post(f"{base}/challenge")
    assert challenge.status_code == 200, challenge.content
    keys = GuestKeys.generate()
    body = {
        "allocation": allocation_id,
        "host": host.hostname,
        "eat_nonce": challenge.json()["nonce"],
        "tee": host.cpu_tee,
        "gpu_cc_mode": "on",
        "measurements": {"launch": "cd" * 48},
        "tee_pubkey": keys.public_b64,
        **claims,
    }
    answer = guest.post(f"{base}/evidence", {"evidence": sign(host_key, body)}, format="json")
    assert answer.status_code == 200, answer.content
    opened: dict[str, Any] = open_sealed(answer.json()["release"], keys.private)
    return opened


def simulated_keys_registered() -> None:
    """Every CC host's simulated attestation key registered, as ``seed_demo`` does for the demo fleet."""
    for node in Node.objects.filter(cc_mode=True):
        node_attestation_key_set(node=node, public_key=simulated_node_public_key(node.hostname), actor=SYSTEM)
