"""/api/v1/ssh-keys: a tenant's SSH public keys, with fingerprints; refusals name the field; another tenant's key
answers 404."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from core.models import AuditEvent
from tenancy.models import SshKey
from tests.support import assert_problem, teammate

URL = "/api/v1/ssh-keys"


def public(key=None) -> str:
    key = key or ed25519.Ed25519PrivateKey.generate()
    return key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


def test_a_member_registers_lists_reads_and_removes_a_key(api, alice, bob):
    client = api(bob)
    line = public()
    made = client.post(URL, {"name": "laptop", "public_key": f"{line} bob@laptop"}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["key_type"] == "ssh-ed25519"
    assert body["bits"] == 256
    assert body["fingerprint"].startswith("SHA256:")
    assert body["public_key"] == f"{line} bob@laptop"
    assert body["created_by"] == "bob"
    assert [k["id"] for k in api(alice).get(URL).json()["results"]] == [body["id"]]  # the tenant's keys
    assert client.get(f"{URL}/{body['id']}").json()["fingerprint"] == body["fingerprint"]
    event = AuditEvent.objects.get(action="ssh_key.added")
    assert event.data == {"name": "laptop", "fingerprint": body["fingerprint"], "type": "ssh-ed25519", "bits": 256}
    assert client.delete(f"{URL}/{body['id']}").status_code == 204
    assert not SshKey.objects.exists()
    assert AuditEvent.objects.filter(action="ssh_key.removed", target_id=str(body["id"])).count() == 1
    assert_problem(client.get(f"{URL}/{body['id']}"), 404, "not_found")


def test_bad_keys_are_refused_naming_the_field(api, alice):
    client = api(alice)
    short = public(rsa.generate_private_key(65537, 2048))
    body = assert_problem(client.post(URL, {"name": "old", "public_key": short}, format="json"), 422, "invalid_ssh_key")
    assert "3072" in body["detail"]
    assert "public_key" in body["errors"]
    assert_problem(client.post(URL, {"name": "x", "public_key": "hello"}, format="json"), 422, "invalid_ssh_key")
    assert_problem(client.post(URL, {"name": "x"}, format="json"), 422, "validation_error")
    assert not SshKey.objects.exists()


def test_a_key_or_a_name_registered_twice_is_a_conflict(api, alice, bob):
    line = public()
    assert api(alice).post(URL, {"name": "laptop", "public_key": line}, format="json").status_code == 201
    again = api(bob).post(URL, {"name": "other", "public_key": line + " same key"}, format="json")
    assert "'laptop'" in assert_problem(again, 409, "ssh_key_exists")["detail"]
    taken = api(bob).post(URL, {"name": "laptop", "public_key": public()}, format="json")
    assert_problem(taken, 409, "ssh_key_name_taken")


def test_viewers_read_keys_but_do_not_register_them(api, alice, acme):
    viewer = teammate(acme, "viewer")
    assert viewer.get(URL).status_code == 200
    assert_problem(viewer.post(URL, {"name": "v", "public_key": public()}, format="json"), 403, "permission_denied")


def test_another_tenants_keys_are_invisible(api, alice, charlie):
    line = public()
    mine = api(alice).post(URL, {"name": "laptop", "public_key": line}, format="json").json()
    theirs = api(charlie)
    assert theirs.get(URL).json()["results"] == []
    assert_problem(theirs.get(f"{URL}/{mine['id']}"), 404, "not_found")
    assert_problem(theirs.delete(f"{URL}/{mine['id']}"), 404, "not_found")
    # The same public key may be registered by another tenant: keys are per tenant.
    assert theirs.post(URL, {"name": "laptop", "public_key": line}, format="json").status_code == 201
    assert SshKey.objects.count() == 2
