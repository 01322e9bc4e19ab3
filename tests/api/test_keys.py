"""/api/v1/api-keys — keys are shown once, stored hashed, scoped, revocable; tenants never see each other's."""

import hashlib
from datetime import timedelta

from django.utils import timezone

from core.models import AuditEvent
from tenancy.models import ApiKey
from tests.support import assert_problem

URL = "/api/v1/api-keys"


def test_it_creates_a_key_shown_once_and_stored_hashed(api, alice):
    response = api(alice).post(URL, {"name": "ci", "scopes": ["read"]}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    token = body["token"]
    _, prefix, secret = token.split("_", 2)
    key = ApiKey.objects.get(pk=body["id"])
    assert key.prefix == prefix == body["prefix"]
    assert key.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in str(ApiKey.objects.filter(pk=key.pk).values().get())
    listed = api(alice).get(URL).json()["results"]
    assert all("token" not in k for k in listed)
    assert AuditEvent.objects.filter(action="api_key.created", data__prefix=prefix).exists()


def test_the_new_key_works_and_records_its_last_use(api, alice, django_capture_on_commit_callbacks):
    token = api(alice).post(URL, {"name": "ci", "scopes": ["read"]}, format="json").json()["token"]
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    with django_capture_on_commit_callbacks(execute=True) as queued:
        assert client.get("/api/v1/tenant").status_code == 200
    assert len(queued) == 1
    with django_capture_on_commit_callbacks(execute=True) as queued:
        assert client.get("/api/v1/tenant").status_code == 200
    assert queued == []  # bookkeeping is written at most once a minute per key
    assert ApiKey.objects.get(prefix=token.split("_")[1]).last_used_at is not None


def test_owners_see_all_tenant_keys_members_only_their_own(api, alice, bob, charlie):
    api(bob)
    api(charlie)
    owners_view = {k["owner"] for k in api(alice).get(URL).json()["results"]}
    members_view = {k["owner"] for k in api(bob).get(URL).json()["results"]}
    assert owners_view == {"alice", "bob"}
    assert members_view == {"bob"}


def test_it_revokes_a_key_and_the_key_stops_working(api, alice):
    created = api(alice).post(URL, {"name": "ci", "scopes": ["read"]}, format="json").json()
    victim = api()
    victim.credentials(HTTP_AUTHORIZATION=f"Bearer {created['token']}")
    assert api(alice).delete(f"{URL}/{created['id']}").status_code == 204
    assert_problem(victim.get("/api/v1/tenant"), 401, "authentication_failed")
    assert api(alice).delete(f"{URL}/{created['id']}").status_code == 204  # harmless twice
    assert AuditEvent.objects.filter(action="api_key.revoked").count() == 1


def test_an_expired_key_is_refused(api, alice):
    expires = (timezone.now() + timedelta(hours=1)).isoformat()
    created = api(alice).post(URL, {"name": "short", "scopes": ["read"], "expires_at": expires}, format="json")
    assert created.status_code == 201
    ApiKey.objects.filter(pk=created.json()["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {created.json()['token']}")
    assert_problem(client.get("/api/v1/tenant"), 401, "authentication_failed")


def test_another_tenants_key_is_not_found(api, alice, charlie):
    charlies = api(charlie).post(URL, {"name": "mine", "scopes": ["read"]}, format="json").json()
    assert_problem(api(alice).delete(f"{URL}/{charlies['id']}"), 404, "not_found")
    assert_problem(api(alice).get(f"{URL}/{charlies['id']}"), 404, "not_found")
    assert ApiKey.objects.get(pk=charlies["id"]).revoked_at is None


def test_a_member_cannot_revoke_a_teammates_key(api, alice, bob):
    alices = api(alice).post(URL, {"name": "mine", "scopes": ["read"]}, format="json").json()
    assert_problem(api(bob).delete(f"{URL}/{alices['id']}"), 404, "not_found")


def test_a_viewer_may_hold_read_only_keys_only(api, alice, bob, acme):
    bob.membership.role = "viewer"
    bob.membership.save()
    session = api()
    session.force_login(bob)
    assert session.post(URL, {"name": "r", "scopes": ["read"]}, format="json").status_code == 201
    assert_problem(session.post(URL, {"name": "w", "scopes": ["write"]}, format="json"), 403, "scope_not_allowed")


def test_staff_keys_belong_to_no_tenant(api, operator, alice):
    api(alice)
    response = api(operator).post(URL, {"name": "ops", "scopes": ["read"]}, format="json")
    assert response.status_code == 201
    assert ApiKey.objects.get(pk=response.json()["id"]).tenant is None
    assert {k["owner"] for k in api(operator).get(URL).json()["results"]} == {"operator"}


def test_bad_input_gets_field_errors(api, alice):
    past = (timezone.now() - timedelta(days=1)).isoformat()
    body = assert_problem(api(alice).post(URL, {"scopes": []}, format="json"), 422, "validation_error")
    assert set(body["errors"]) == {"name", "scopes"}
    body = assert_problem(
        api(alice).post(URL, {"name": "x", "scopes": ["read"], "expires_at": past}, format="json"),
        422,
        "validation_error",
    )
    assert "expires_at" in body["errors"]


def test_anonymous_callers_are_refused(api, acme):
    assert_problem(api().get(URL), 401, "not_authenticated")
    assert_problem(api().post(URL, {"name": "x", "scopes": ["read"]}, format="json"), 401, "not_authenticated")
    assert_problem(api().delete(f"{URL}/1"), 401, "not_authenticated")


def test_a_read_only_key_cannot_create_keys(api, alice):
    response = api(alice, scopes=("read",)).post(URL, {"name": "x", "scopes": ["read"]}, format="json")
    assert_problem(response, 403, "insufficient_scope")


def test_an_unreachable_broker_never_fails_a_request(api, alice, django_capture_on_commit_callbacks):
    from unittest import mock

    from kombu.exceptions import OperationalError

    client = api(alice)
    with (
        mock.patch("tenancy.tasks.api_key_touch.delay", side_effect=OperationalError("broker down")),
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert client.get("/api/v1/tenant").status_code == 200
