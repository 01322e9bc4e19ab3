"""The SSH keys and secrets page: keys added, listed by fingerprint and removed; secrets created, given a new
value and deleted through the API's services, with no value ever in a page (not even a form sent back with an
error); another tenant's keys and secrets are not found, a viewer may look but not change."""

from __future__ import annotations

import re
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from django.test import Client

from compliance.models import TenantSecret
from core.models import AuditEvent
from provisioning.services.fleet import fleet_load
from tenancy.models import Membership, SshKey
from tests.support import SYSTEM, teammate
from tests.support.fleet_documents import small_fleet

VALUE = "hf_s3cr3t-VALUE-never-shown"


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def public_key() -> str:
    key = ed25519.Ed25519PrivateKey.generate().public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


def test_ssh_keys_are_added_shown_by_fingerprint_and_removed(alice: Any, acme: Any) -> None:
    client = signed_in(alice)
    line = public_key()
    added = client.post("/portal/access", {"form": "ssh_key", "name": "laptop", "public_key": line}, follow=True)
    key = SshKey.objects.get(tenant=acme, name="laptop")
    assert key.fingerprint.startswith("SHA256:")
    assert key.fingerprint.encode() in added.content
    again = client.post("/portal/access", {"form": "ssh_key", "name": "other", "public_key": line})
    assert again.status_code == 422
    assert b"This key is registered already, as &#x27;laptop&#x27;" in again.content
    bad = client.post(
        "/portal/access", {"form": "ssh_key", "name": "bad", "public_key": "ssh-ed25519 AAAAB3NzaC1yc2E="}
    )
    assert bad.status_code == 422
    assert b"Not an SSH public key" in bad.content
    client.post(f"/portal/access/ssh-keys/{key.pk}/remove")
    assert not SshKey.objects.filter(pk=key.pk).exists()
    assert AuditEvent.objects.filter(tenant=acme, action="ssh_key.removed").exists()


def test_secrets_are_created_renewed_and_deleted_and_no_value_is_ever_shown(
    alice: Any, acme: Any, django_capture_on_commit_callbacks: Any
) -> None:
    fleet_load(document=small_fleet(), actor=SYSTEM)
    client = signed_in(alice)
    pages = []
    pages.append(client.post("/portal/access", {"form": "secret", "name": "1bad", "value": VALUE}))
    assert pages[-1].status_code == 422
    assert b"A secret&#x27;s name is a letter or underscore" in pages[-1].content
    assert b'type="password"' in pages[-1].content
    pages.append(client.post("/portal/access", {"form": "secret", "name": "HF_TOKEN", "value": VALUE}, follow=True))
    assert b"HF_TOKEN is stored (version 1)" in pages[-1].content
    pages.append(client.post("/portal/access", {"form": "secret", "name": "HF_TOKEN", "value": VALUE}))
    assert b"A secret named HF_TOKEN exists" in pages[-1].content
    pages.append(client.get("/portal/access/secrets/HF_TOKEN/value"))
    pages.append(client.post("/portal/access/secrets/HF_TOKEN/value", {"value": ""}))
    assert pages[-1].status_code == 422
    pages.append(client.post("/portal/access/secrets/HF_TOKEN/value", {"value": VALUE + "2"}, follow=True))
    assert b"HF_TOKEN has a new value (version 2)" in pages[-1].content
    assert TenantSecret.objects.get(tenant=acme, name="HF_TOKEN").version == 2

    page = client.get("/portal/launch?rung=container")
    token = re.search(r'name="idempotency" value="([0-9a-f]+)"', page.content.decode())
    assert token
    body = {"idempotency": token[1], "rung": "container", "name": "uses-it", "gpu_model": "H100-SXM-80GB", "gpus": 1}
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/portal/launch", {**body, "image": "nvcr.io/nvidia/pytorch:25.01-py3", "secrets": ["HF_TOKEN"]})
    pages.append(client.get("/portal/access/secrets/HF_TOKEN/delete"))
    pages.append(client.post("/portal/access/secrets/HF_TOKEN/delete"))
    assert pages[-1].status_code == 409
    assert b"use the secret HF_TOKEN; stop them first" in pages[-1].content
    assert TenantSecret.objects.filter(tenant=acme, name="HF_TOKEN").exists()

    client.post("/portal/access", {"form": "secret", "name": "SPARE", "value": VALUE})
    pages.append(client.post("/portal/access/secrets/SPARE/delete", follow=True))
    assert b"SPARE is deleted" in pages[-1].content
    assert not TenantSecret.objects.filter(tenant=acme, name="SPARE").exists()
    pages.append(client.get("/portal/access"))
    for response in pages:
        assert VALUE.encode() not in response.content
    assert not any(VALUE in str(e.data) for e in AuditEvent.objects.filter(tenant=acme))


def test_another_tenants_keys_and_secrets_are_not_found(alice: Any, charlie: Any, acme: Any) -> None:
    client = signed_in(alice)
    client.post("/portal/access", {"form": "ssh_key", "name": "laptop", "public_key": public_key()})
    client.post("/portal/access", {"form": "secret", "name": "HF_TOKEN", "value": VALUE})
    key = SshKey.objects.get(tenant=acme)
    other = signed_in(charlie)
    assert other.post(f"/portal/access/ssh-keys/{key.pk}/remove").status_code == 404
    assert other.get("/portal/access/secrets/HF_TOKEN/value").status_code == 404
    assert other.post("/portal/access/secrets/HF_TOKEN/value", {"value": "x"}).status_code == 404
    assert other.post("/portal/access/secrets/HF_TOKEN/delete").status_code == 404
    page = other.get("/portal/access")
    assert b"laptop" not in page.content
    assert b"HF_TOKEN" not in page.content
    assert SshKey.objects.filter(pk=key.pk).exists()
    assert TenantSecret.objects.get(tenant=acme).version == 1


@pytest.mark.parametrize("role", ["viewer", "billing"])
def test_viewers_and_billing_users_look_but_do_not_change(alice: Any, acme: Any, role: str) -> None:
    client = signed_in(alice)
    client.post("/portal/access", {"form": "ssh_key", "name": "laptop", "public_key": public_key()})
    client.post("/portal/access", {"form": "secret", "name": "HF_TOKEN", "value": VALUE})
    teammate(acme, role)
    looker = signed_in(Membership.objects.get(role=role).user)
    page = looker.get("/portal/access")
    assert page.status_code == 200
    assert b"HF_TOKEN" in page.content
    assert b"Store the secret" not in page.content
    key = SshKey.objects.get(tenant=acme)
    assert looker.post("/portal/access", {"form": "secret", "name": "MINE", "value": "x"}).status_code == 403
    assert (
        looker.post("/portal/access", {"form": "ssh_key", "name": "k", "public_key": public_key()}).status_code == 403
    )
    assert looker.post(f"/portal/access/ssh-keys/{key.pk}/remove").status_code == 403
    assert looker.post("/portal/access/secrets/HF_TOKEN/delete").status_code == 403
    assert looker.get("/portal/access/secrets/HF_TOKEN/value").status_code == 403
