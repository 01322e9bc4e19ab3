"""Idempotency-Key on POST: replay, conflict, scope, redaction of shown-once secrets, expiry."""

from datetime import timedelta

import pytest
from django.utils import timezone

from api.idempotency import IdempotencyConflict, fingerprint, idempotency_claim, idempotency_purge
from api.models import IdempotencyRecord
from tenancy.models import ApiKey, Membership
from tests.support import assert_problem

MEMBERS = "/api/v1/members"
KEYS = "/api/v1/api-keys"


def _invite(client, key, username="dora"):
    return client.post(
        MEMBERS,
        {"username": username, "email": f"{username}@acme.test", "role": "member"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def test_the_same_key_and_body_replays_the_first_response(api, alice):
    client = api(alice)
    first = _invite(client, "k-1")
    second = _invite(client, "k-1")
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second["Idempotent-Replayed"] == "true"
    assert Membership.objects.filter(user__username="dora").count() == 1


def test_the_same_key_with_another_body_is_a_conflict(api, alice):
    client = api(alice)
    _invite(client, "k-1")
    assert_problem(_invite(client, "k-1", username="eve"), 422, "idempotency_conflict")
    assert not Membership.objects.filter(user__username="eve").exists()


def test_the_same_key_on_another_endpoint_is_a_conflict(db):
    idempotency_claim(scope="tenant:1", key="k-1", fingerprint=fingerprint("POST", MEMBERS, {"a": 1}))
    with pytest.raises(IdempotencyConflict):
        idempotency_claim(scope="tenant:1", key="k-1", fingerprint=fingerprint("POST", KEYS, {"a": 1}))


def test_keys_are_scoped_per_tenant(api, alice, charlie):
    assert _invite(api(alice), "shared").status_code == 201
    response = api(charlie).post(
        MEMBERS,
        {"username": "dora", "email": "d@g.test", "role": "member"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="shared",
    )
    assert_problem(response, 409, "username_taken")  # ran for globex, not replayed from acme


def test_teammates_share_the_tenants_key_space(api, alice, bob, acme):
    bob.membership.role = "admin"
    bob.membership.save()
    first = _invite(api(alice), "team-key")
    second = _invite(api(bob), "team-key")
    assert second["Idempotent-Replayed"] == "true"
    assert second.json() == first.json()


def test_error_responses_are_replayed_too(api, alice):
    client = api(alice)
    first = client.post(KEYS, {"name": "", "scopes": ["read"]}, format="json", HTTP_IDEMPOTENCY_KEY="bad")
    second = client.post(KEYS, {"name": "", "scopes": ["read"]}, format="json", HTTP_IDEMPOTENCY_KEY="bad")
    assert_problem(second, 422, "validation_error")
    assert second.json() == first.json()


def test_a_replayed_key_creation_never_returns_or_stores_the_secret(api, alice):
    client = api(alice)
    first = client.post(KEYS, {"name": "ci", "scopes": ["read"]}, format="json", HTTP_IDEMPOTENCY_KEY="mk")
    second = client.post(KEYS, {"name": "ci", "scopes": ["read"]}, format="json", HTTP_IDEMPOTENCY_KEY="mk")
    assert first.json()["token"].startswith("ldr_")
    assert second.json()["token"] is None
    assert second.json()["id"] == first.json()["id"]
    assert ApiKey.objects.filter(name="ci").count() == 1
    assert first.json()["token"] not in str(list(IdempotencyRecord.objects.values()))


def test_a_request_still_in_flight_is_not_run_twice(api, alice, acme):
    body = {"username": "dora", "email": "dora@acme.test", "role": "member"}
    IdempotencyRecord.objects.create(
        scope=f"tenant:{acme.pk}", key="busy", fingerprint=fingerprint("POST", MEMBERS, body)
    )
    assert_problem(_invite(api(alice), "busy"), 409, "idempotency_in_progress")
    assert not Membership.objects.filter(user__username="dora").exists()
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(minutes=6))  # the first one died
    assert _invite(api(alice), "busy").status_code == 201


def test_a_record_past_its_window_no_longer_replays(api, alice):
    client = api(alice)
    _invite(client, "old")
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=25))
    again = _invite(client, "old")
    assert_problem(again, 409, "username_taken")  # ran afresh
    assert idempotency_purge(now=timezone.now() + timedelta(hours=25)) == 1


def test_an_overlong_key_is_refused(api, alice):
    body = assert_problem(_invite(api(alice), "k" * 256), 422, "validation_error")
    assert "Idempotency-Key" in body["errors"]


def test_posts_without_a_key_are_not_recorded(api, alice):
    api(alice).post(KEYS, {"name": "x", "scopes": ["read"]}, format="json")
    assert not IdempotencyRecord.objects.exists()


def test_api_key_creation_keys_are_personal(api, alice, bob):
    body = {"name": "ci", "scopes": ["read"]}
    alices = api(alice).post(KEYS, body, format="json", HTTP_IDEMPOTENCY_KEY="same")
    bobs = api(bob).post(KEYS, body, format="json", HTTP_IDEMPOTENCY_KEY="same")
    assert bobs.status_code == 201
    assert "Idempotent-Replayed" not in bobs
    assert bobs.json()["owner"] == "bob"
    assert bobs.json()["id"] != alices.json()["id"]


def test_a_crashed_request_frees_its_key_for_a_retry(api, alice):
    from unittest import mock

    client = api(alice)
    client.raise_request_exception = False
    with mock.patch("tenancy.services.member_invite", side_effect=RuntimeError("boom")):
        crashed = _invite(client, "retry-me")
    assert crashed.status_code == 500
    assert crashed["Content-Type"] == "application/problem+json"
    assert _invite(client, "retry-me").status_code == 201


def test_a_view_nobody_signs_in_to_ignores_the_key(api, alice):
    """A serverless endpoint's own URL checks the key itself; an Idempotency-Key (which the command line sends on
    every POST) changes nothing there."""
    client = api(alice)
    without = client.post("/endpoints/999999/v1/predict", {"prompt": "hi"}, format="json")
    with_key = client.post("/endpoints/999999/v1/predict", {"prompt": "hi"}, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert without.status_code == with_key.status_code != 401
    assert without.json()["code"] == with_key.json()["code"]
    assert not IdempotencyRecord.objects.exists()
