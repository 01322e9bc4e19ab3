"""/api/v1/members — list, invite, change role, remove."""

import pytest

from core.models import AuditEvent
from tenancy.models import ApiKey, Membership
from tests.support import assert_problem

URL = "/api/v1/members"


def _member_id(tenant, username):
    return Membership.objects.get(tenant=tenant, user__username=username).pk


def test_it_lists_only_the_callers_tenant(api, alice, bob, charlie):
    response = api(bob).get(URL)
    assert response.status_code == 200
    assert [m["username"] for m in response.json()["results"]] == ["alice", "bob"]
    assert [m["username"] for m in api(charlie).get(URL).json()["results"]] == ["charlie"]


def test_it_invites_a_new_member(api, alice, acme):
    response = api(alice).post(URL, {"username": "dora", "email": "dora@acme.test", "role": "viewer"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["role"] == "viewer"
    assert Membership.objects.get(user__username="dora").tenant == acme
    assert AuditEvent.objects.filter(action="member.added", data__username="dora").exists()


def test_it_does_not_say_where_a_taken_username_lives(api, alice, charlie):
    body = assert_problem(
        api(alice).post(URL, {"username": "charlie", "email": "c@x.test", "role": "member"}, format="json"),
        409,
        "username_taken",
    )
    assert "globex" not in body["detail"]
    assert "username" in body["errors"]


def test_it_refuses_a_member_inviting(api, bob):
    response = api(bob).post(URL, {"username": "eve", "email": "e@x.test", "role": "member"}, format="json")
    assert_problem(response, 403, "permission_denied")


def test_only_an_owner_makes_owners(api, alice, acme):
    admin = api(alice).post(URL, {"username": "ada", "email": "a@acme.test", "role": "admin"}, format="json")
    assert admin.status_code == 201
    ada = Membership.objects.get(user__username="ada").user
    response = api(ada).post(URL, {"username": "olga", "email": "o@acme.test", "role": "owner"}, format="json")
    assert_problem(response, 403, "owner_role_required")


def test_it_rejects_bad_input_with_field_errors(api, alice):
    body = assert_problem(
        api(alice).post(URL, {"username": "bad name!", "email": "nope", "role": "emperor"}, format="json"),
        422,
        "validation_error",
    )
    assert set(body["errors"]) == {"username", "email", "role"}


def test_it_changes_a_role(api, alice, bob, acme):
    response = api(alice).patch(f"{URL}/{_member_id(acme, 'bob')}", {"role": "admin"}, format="json")
    assert response.status_code == 200
    assert response.json()["role"] == "admin"
    event = AuditEvent.objects.get(action="member.role_changed")
    assert event.data == {"username": "bob", "old": "member", "new": "admin"}


def test_demoting_to_viewer_strips_write_scopes(api, alice, bob, acme):
    client = api(bob)
    api(alice).patch(f"{URL}/{_member_id(acme, 'bob')}", {"role": "viewer"}, format="json")
    assert all(k.scopes == ["read"] for k in ApiKey.objects.filter(user=bob))
    assert_problem(
        client.post("/api/v1/api-keys", {"name": "x", "scopes": ["read"]}, format="json"), 403, "insufficient_scope"
    )


def test_the_last_owner_cannot_step_down_or_leave(api, alice, acme):
    member_id = _member_id(acme, "alice")
    assert_problem(api(alice).patch(f"{URL}/{member_id}", {"role": "admin"}, format="json"), 409, "last_owner")
    assert_problem(api(alice).delete(f"{URL}/{member_id}"), 409, "last_owner")


def test_it_removes_a_member_and_revokes_their_keys(api, alice, bob, acme):
    bobs_client = api(bob)
    response = api(alice).delete(f"{URL}/{_member_id(acme, 'bob')}")
    assert response.status_code == 204
    assert not Membership.objects.filter(user=bob).exists()
    assert not ApiKey.objects.filter(user=bob, revoked_at=None).exists()
    assert_problem(bobs_client.get("/api/v1/tenant"), 401, "authentication_failed")
    assert AuditEvent.objects.filter(action="member.removed").count() == 1


@pytest.mark.parametrize("method", ["patch", "delete"])
def test_another_tenants_member_is_not_found(api, alice, charlie, globex, method):
    url = f"{URL}/{_member_id(globex, 'charlie')}"
    response = getattr(api(alice), method)(url, {"role": "viewer"}, format="json")
    assert_problem(response, 404, "not_found")
    assert Membership.objects.get(user=charlie).role == "owner"


def test_anonymous_callers_are_refused(api, acme):
    assert_problem(api().get(URL), 401, "not_authenticated")
    assert_problem(api().post(URL, {}, format="json"), 401, "not_authenticated")


def test_a_viewer_signed_in_to_the_portal_cannot_change_roles(api, alice, bob, acme):
    api(alice).patch(f"{URL}/{_member_id(acme, 'bob')}", {"role": "viewer"}, format="json")
    session = api()
    session.force_login(bob)
    assert session.get(URL).status_code == 200
    response = session.patch(f"{URL}/{_member_id(acme, 'alice')}", {"role": "viewer"}, format="json")
    assert_problem(response, 403, "permission_denied")
    assert Membership.objects.get(user=alice).role == "owner"


def test_put_is_not_offered(api, alice, acme):
    response = api(alice).put(f"{URL}/{_member_id(acme, 'alice')}", {"role": "owner"}, format="json")
    assert_problem(response, 405, "method_not_allowed")


def test_a_removed_persons_account_is_never_handed_to_another_tenant(api, alice, bob, charlie, acme):
    api(alice).delete(f"{URL}/{_member_id(acme, 'bob')}")
    response = api(charlie).post(URL, {"username": "bob", "email": "bob@globex.test", "role": "member"}, format="json")
    assert_problem(response, 409, "username_taken")
    assert not Membership.objects.filter(user=bob).exists()
