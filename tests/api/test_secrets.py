"""/api/v1/secrets: values go in, encrypted under the tenant's key, and never come out through the API, the audit
log or an error; a new value is a new version; another tenant's secrets answer 404."""

from __future__ import annotations

import json

import pytest

from compliance.models import TenantSecret
from compliance.services.secrets import secret_values
from core.errors import Invalid
from core.models import AuditEvent
from tests.support import assert_problem, teammate

URL = "/api/v1/secrets"
VALUE = "hf_s3cr3t-Value_that_must_never_leak"


def test_a_secret_is_stored_encrypted_and_read_back_only_by_the_tenants_provisioning(api, alice, acme):
    client = api(alice)
    made = client.post(URL, {"name": "HF_TOKEN", "value": VALUE}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert made.status_code == 201, made.content
    assert made.json() == {
        "name": "HF_TOKEN",
        "version": 1,
        "created_at": made.json()["created_at"],
        "updated_at": made.json()["updated_at"],
        "updated_by": "alice",
    }
    row = TenantSecret.objects.get()
    assert VALUE.encode() not in bytes(row.ciphertext)
    assert secret_values(tenant=acme, names=["HF_TOKEN"]) == {"HF_TOKEN": VALUE}

    changed = client.put(f"{URL}/HF_TOKEN", {"value": "second"}, format="json")
    assert changed.json()["version"] == 2
    assert secret_values(tenant=acme, names=["HF_TOKEN"]) == {"HF_TOKEN": "second"}
    assert client.get(f"{URL}/HF_TOKEN").json()["version"] == 2
    assert [s["name"] for s in client.get(URL).json()["results"]] == ["HF_TOKEN"]

    events = AuditEvent.objects.filter(action__startswith="secret.").order_by("seq")
    assert [(e.action, e.data) for e in events] == [
        ("secret.created", {"name": "HF_TOKEN", "version": 1}),
        ("secret.updated", {"name": "HF_TOKEN", "version": 2}),
    ]
    assert client.delete(f"{URL}/HF_TOKEN").status_code == 204
    assert not TenantSecret.objects.exists()
    assert AuditEvent.objects.filter(action="secret.deleted").count() == 1


def test_no_answer_event_or_error_carries_a_value(api, alice, acme):
    client = api(alice)
    answers = [
        client.post(URL, {"name": "TOKEN", "value": VALUE}, format="json"),
        client.post(URL, {"name": "TOKEN", "value": VALUE}, format="json"),  # 409 secret_exists
        client.post(URL, {"name": "bad name", "value": VALUE}, format="json"),  # 422
        client.post(URL, {"name": "OTHER", "value": VALUE, "extra": 1}, format="json"),  # unknown field
        client.put(f"{URL}/MISSING", {"value": VALUE}, format="json"),  # 404
        client.get(URL),
        client.get(f"{URL}/TOKEN"),
    ]
    for answer in answers:
        assert VALUE not in answer.content.decode(), answer.content
    assert [a.status_code for a in answers] == [201, 409, 422, 422, 404, 200, 200]
    assert VALUE not in json.dumps(list(AuditEvent.objects.values("data")))


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"name": "1ST", "value": "v"}, "invalid_secret_name"),
        ({"name": "WITH-DASH", "value": "v"}, "invalid_secret_name"),
        ({"name": "EMPTY", "value": ""}, "validation_error"),
        ({"name": "HUGE", "value": "x" * (64 * 1024 + 1)}, "validation_error"),
        ({"name": "NOVALUE"}, "validation_error"),
    ],
)
def test_bad_secrets_are_refused_naming_the_field(api, alice, body, code):
    assert_problem(api(alice).post(URL, body, format="json"), 422, code)
    assert not TenantSecret.objects.exists()


def test_unknown_names_are_refused_when_read_for_a_workload(acme):
    with pytest.raises(Invalid) as refused:
        secret_values(tenant=acme, names=["NOPE"])
    assert refused.value.code == "unknown_secret"


def test_viewers_see_names_but_do_not_write(api, alice, acme):
    api(alice).post(URL, {"name": "TOKEN", "value": VALUE}, format="json")
    viewer = teammate(acme, "viewer")
    assert [s["name"] for s in viewer.get(URL).json()["results"]] == ["TOKEN"]
    assert_problem(viewer.put(f"{URL}/TOKEN", {"value": "x"}, format="json"), 403, "permission_denied")


def test_another_tenants_secrets_are_invisible_and_a_copied_row_does_not_open(api, alice, charlie, acme, globex):
    api(alice).post(URL, {"name": "TOKEN", "value": VALUE}, format="json")
    theirs = api(charlie)
    assert theirs.get(URL).json()["results"] == []
    for answer in (
        theirs.get(f"{URL}/TOKEN"),
        theirs.put(f"{URL}/TOKEN", {"value": "x"}, format="json"),
        theirs.delete(f"{URL}/TOKEN"),
    ):
        assert_problem(answer, 404, "not_found")
    # globex's row holding acme's ciphertext and wrapped key does not decrypt: bound to tenant, name, version.
    mine = TenantSecret.objects.get(tenant=acme)
    TenantSecret.objects.create(
        tenant=globex,
        name="TOKEN",
        version=1,
        wrapped_key=mine.wrapped_key,
        ciphertext=mine.ciphertext,
        updated_by="x",
    )
    with pytest.raises(Exception):  # noqa: B017, PT011 - any failure to open is right; a value is not
        secret_values(tenant=globex, names=["TOKEN"])
