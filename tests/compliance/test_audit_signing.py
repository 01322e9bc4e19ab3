"""The audit signing key, signed checkpoints of the chain, and who may see and take them through the API."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings as django_settings
from django.db import transaction

from compliance.domain.verify import checkpoint_payload, key_id, load_public_key, signature_valid
from compliance.models import AuditCheckpoint
from compliance.selectors import audit_chain_verify
from compliance.services.audit import CHECKPOINT_ACTION, audit_checkpoint_take
from compliance.signing import (
    Signer,
    SigningKeyError,
    audit_signer,
    derive_private_key,
    load_private_key,
    public_key_pem,
    signing_key_id,
)
from compliance.tasks import audit_checkpoint_scheduled
from core.audit import audit_record
from core.domain.chain import format_time
from core.models import AuditChainHead, AuditEvent
from tests.support import ROOT, SYSTEM, assert_problem


def take(**kwargs: Any) -> AuditCheckpoint:
    checkpoint = audit_checkpoint_take(**kwargs)
    assert checkpoint is not None
    return checkpoint


CHECKPOINTS = "/api/v1/compliance/audit-checkpoints"
KEY = "/api/v1/compliance/audit-key"


def raw_public(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def pem_of(key: Ed25519PrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def seed_of(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())


def checkpoint_verifies(checkpoint: AuditCheckpoint, signer: Signer) -> bool:
    payload = checkpoint_payload(
        seq=checkpoint.seq, hash_=checkpoint.hash, at=format_time(checkpoint.at), key_id=checkpoint.key_id
    )
    return signature_valid(signer.public_key, checkpoint.signature, payload)


def record(action: str = "thing.done") -> AuditEvent:
    with transaction.atomic():
        return audit_record(actor=SYSTEM, action=action, target_type="thing", target_id=1)


# --- the key -----------------------------------------------------------------------------------------------------


def test_it_derives_the_key_from_the_secret_key_with_hkdf():
    expected = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"ladder audit signing").derive(b"s3cret")
    derived = derive_private_key("s3cret")
    assert seed_of(derived) == expected
    assert raw_public(derive_private_key("s3cret")) == raw_public(derived)  # deterministic
    assert raw_public(derive_private_key("another")) != raw_public(derived)


def test_it_loads_a_pem_key_and_a_base64_seed():
    key = Ed25519PrivateKey.generate()
    seed = seed_of(key)
    for configured in (
        pem_of(key),
        pem_of(key) + "\n\n",
        pem_of(key).replace("\n", "\\n"),  # one line in an environment variable
        base64.b64encode(seed).decode(),
        base64.urlsafe_b64encode(seed).decode().rstrip("=") + "\n",  # as read from a file
    ):
        assert raw_public(load_private_key(configured)) == raw_public(key), configured


@pytest.mark.parametrize(
    ("configured", "message"),
    [
        (base64.b64encode(b"x" * 31).decode(), "32-byte"),
        ("not a key at all!", "neither PEM nor base64"),
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "not a readable PEM"),
    ],
)
def test_it_refuses_what_is_no_ed25519_key(configured, message):
    with pytest.raises(SigningKeyError, match=message):
        load_private_key(configured)


def test_it_refuses_a_key_of_another_algorithm():
    rsa_pem = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        .decode()
    )
    with pytest.raises(SigningKeyError, match="must be an Ed25519 key"):
        load_private_key(rsa_pem)


def test_it_signs_with_the_configured_key_else_the_derived_one(settings):
    settings.LADDER_AUDIT_SIGNING_KEY = ""
    derived = audit_signer()
    assert raw_public(derived.private_key) == raw_public(derive_private_key(django_settings.SECRET_KEY))
    key = Ed25519PrivateKey.generate()
    settings.LADDER_AUDIT_SIGNING_KEY = pem_of(key)
    configured = audit_signer()
    assert raw_public(configured.private_key) == raw_public(key)
    assert signing_key_id() == configured.key_id == hashlib.sha256(raw_public(key)).hexdigest()[:16]
    assert signing_key_id() != derived.key_id
    assert load_public_key(public_key_pem().encode()).public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    ) == raw_public(key)


def test_the_key_may_come_from_a_file(tmp_path):
    key = Ed25519PrivateKey.generate()
    path = tmp_path / "audit-signing.pem"
    path.write_text(pem_of(key))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_AUDIT_SIGNING_KEY")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", SECRET_KEY="x", LADDER_AUDIT_SIGNING_KEY_FILE=str(path))
    code = "import django; django.setup(); from compliance.signing import signing_key_id; print(signing_key_id())"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.strip() == key_id(key.public_key()), done.stderr


# --- checkpoints -------------------------------------------------------------------------------------------------


def test_it_signs_nothing_while_the_log_is_empty(db):
    assert audit_checkpoint_take() is None
    assert not AuditCheckpoint.objects.exists()
    assert not AuditEvent.objects.exists()


def test_it_signs_the_head_including_its_own_event(acme):
    checkpoint = take()

    assert checkpoint is not None
    event = AuditEvent.objects.get(seq=checkpoint.seq)
    assert (event.action, event.actor_label, event.target_type) == (
        CHECKPOINT_ACTION,
        "audit-checkpoint",
        "audit_checkpoint",
    )
    assert event.target_id == str(checkpoint.seq)
    assert event.data == {"key_id": checkpoint.key_id, "previous_checkpoint": None}
    assert AuditChainHead.objects.values_list("seq", "hash").get() == (checkpoint.seq, checkpoint.hash)
    assert checkpoint.hash == event.hash
    assert checkpoint.key_id == signing_key_id()
    assert checkpoint_verifies(checkpoint, audit_signer())
    assert audit_chain_verify().ok


def test_it_is_idempotent_while_the_head_does_not_move(acme):
    first = take()
    events = AuditEvent.objects.count()

    again = take()

    assert again == first
    assert AuditEvent.objects.count() == events  # no second event: the head it left is the head it signed
    assert AuditCheckpoint.objects.count() == 1
    assert audit_checkpoint_scheduled() == first.seq  # the beat of an idle system changes nothing either
    assert AuditCheckpoint.objects.count() == 1


def test_it_takes_a_new_checkpoint_once_the_head_moved(acme):
    first = take()
    moved = record()

    second = take(actor=SYSTEM)

    assert second.seq == moved.seq + 1
    assert AuditEvent.objects.get(seq=second.seq).data["previous_checkpoint"] == first.seq
    assert AuditEvent.objects.get(seq=second.seq).actor_label == "tests"
    assert list(AuditCheckpoint.objects.values_list("seq", flat=True)) == [first.seq, second.seq]
    assert all(checkpoint_verifies(c, audit_signer()) for c in AuditCheckpoint.objects.all())


def test_a_changed_checkpoint_no_longer_verifies(acme):
    checkpoint = take()
    signer = audit_signer()
    for change in ({"seq": checkpoint.seq - 1}, {"hash": "0" * 64}, {"at": checkpoint.at.replace(microsecond=1)}):
        fields = {f: getattr(checkpoint, f) for f in ("seq", "hash", "at", "key_id", "signature")}
        changed = AuditCheckpoint(**{**fields, **change})
        assert not checkpoint_verifies(changed, signer), change
    other = Signer.of(Ed25519PrivateKey.generate())
    assert not checkpoint_verifies(checkpoint, other)


def test_the_beat_takes_checkpoints(settings, acme):
    entry = settings.CELERY_BEAT_SCHEDULE["audit-checkpoint"]
    assert entry == {"task": "compliance.tasks.audit_checkpoint_scheduled", "schedule": 3600}
    assert audit_checkpoint_scheduled() == AuditCheckpoint.objects.get().seq


# --- the API -----------------------------------------------------------------------------------------------------


def test_it_takes_a_checkpoint_on_demand(api, compliance, acme):
    officer = api(compliance)
    response = officer.post(CHECKPOINTS)
    assert response.status_code == 201, response.content
    body = response.json()
    checkpoint = AuditCheckpoint.objects.get()
    assert body == {
        "seq": checkpoint.seq,
        "hash": checkpoint.hash,
        "at": body["at"],
        "key_id": signing_key_id(),
        "signature": checkpoint.signature,
    }
    event = AuditEvent.objects.get(seq=checkpoint.seq)
    assert (event.action, event.actor_label, event.actor_type) == (CHECKPOINT_ACTION, "compliance", "api_key")

    again = officer.post(CHECKPOINTS)
    assert again.status_code == 200  # the head did not move: the same checkpoint
    assert again.json() == body


def test_it_lists_checkpoints_newest_first(api, compliance, acme):
    audit_checkpoint_take()
    record()
    audit_checkpoint_take()
    response = api(compliance).get(CHECKPOINTS)
    assert response.status_code == 200
    assert [c["seq"] for c in response.json()["results"]] == list(
        AuditCheckpoint.objects.order_by("-seq").values_list("seq", flat=True)
    )
    assert len(response.json()["results"]) == 2


@pytest.mark.parametrize("who", ["alice", "finance", "operator"])
def test_it_refuses_checkpoints_to_everyone_but_compliance(api, request, acme, who):
    client = api(request.getfixturevalue(who))
    assert_problem(client.get(CHECKPOINTS), 403, "permission_denied")
    assert_problem(client.post(CHECKPOINTS), 403, "permission_denied")
    assert not AuditCheckpoint.objects.exists()


def test_it_refuses_anonymous_checkpoint_callers(api, acme):
    assert_problem(api().get(CHECKPOINTS), 401, "not_authenticated")
    assert_problem(api().post(CHECKPOINTS), 401, "not_authenticated")


def test_the_public_key_is_public(api, acme):
    checkpoint = take()
    response = api().get(KEY)  # no credentials: a verifier needs the key, and it is a public key
    assert response.status_code == 200
    body = response.json()
    assert body["algorithm"] == "Ed25519"
    assert body["key_id"] == signing_key_id()
    public = load_public_key(body["public_key"].encode())
    assert key_id(public) == body["key_id"]
    payload = checkpoint_payload(
        seq=checkpoint.seq, hash_=checkpoint.hash, at=format_time(checkpoint.at), key_id=checkpoint.key_id
    )
    assert signature_valid(public, checkpoint.signature, payload)


def test_it_answers_409_when_there_is_nothing_to_sign(api, compliance, monkeypatch):
    # Creating the compliance user is an event itself, so an empty log is simulated.
    monkeypatch.setattr("api.audit.audit_checkpoint_take", lambda **kwargs: None)
    assert_problem(api(compliance).post(CHECKPOINTS), 409, "audit_log_empty")
