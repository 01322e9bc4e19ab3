"""Owners and admins change members' roles and remove them from the team page, under the API's rules: only an
owner touches an owner, the last owner stays, and the refusal is shown on the page in the service's words."""

from __future__ import annotations

from typing import Any

from django.test import Client

from core.models import AuditEvent
from tenancy.models import ApiKey, Membership
from tests.support import teammate


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_owner_changes_a_role_and_removes_a_member_after_confirming(alice: Any, bob: Any, acme: Any) -> None:
    client = signed_in(alice)
    bobs = Membership.objects.get(user=bob)
    page = client.get("/portal/team")
    assert b"Change role of bob" in page.content
    changed = client.post(f"/portal/team/members/{bobs.pk}/role", {"role": "admin"}, follow=True)
    assert b"bob is now admin" in changed.content
    assert Membership.objects.get(pk=bobs.pk).role == "admin"
    assert AuditEvent.objects.filter(tenant=acme, action="member.role_changed").exists()

    confirm = client.get(f"/portal/team/members/{bobs.pk}/remove")
    assert confirm.status_code == 200
    assert b"Remove bob?" in confirm.content
    assert Membership.objects.filter(pk=bobs.pk).exists()  # a GET removes nothing
    removed = client.post(f"/portal/team/members/{bobs.pk}/remove", follow=True)
    assert b"bob is removed" in removed.content
    assert not Membership.objects.filter(pk=bobs.pk).exists()
    bob.refresh_from_db()
    assert not bob.is_active


def test_the_last_owner_stays_and_the_page_says_why(alice: Any, acme: Any) -> None:
    client = signed_in(alice)
    mine = Membership.objects.get(user=alice)
    demoted = client.post(f"/portal/team/members/{mine.pk}/role", {"role": "member"}, follow=True)
    assert b"A tenant must keep at least one owner" in demoted.content
    refused = client.post(f"/portal/team/members/{mine.pk}/remove")
    assert refused.status_code == 409
    assert b"A tenant must keep at least one owner" in refused.content
    assert Membership.objects.get(pk=mine.pk).role == "owner"


def test_only_an_owner_touches_an_owner(alice: Any, bob: Any, acme: Any) -> None:
    teammate(acme, "admin")
    admin = signed_in(Membership.objects.get(role="admin").user)
    owner = Membership.objects.get(user=alice)
    refused = admin.post(f"/portal/team/members/{owner.pk}/role", {"role": "member"}, follow=True)
    assert b"Only an owner can make or unmake an owner" in refused.content
    kept = admin.post(f"/portal/team/members/{owner.pk}/remove")
    assert kept.status_code == 403
    assert b"Only an owner can remove an owner" in kept.content
    assert Membership.objects.get(pk=owner.pk).role == "owner"
    bobs = Membership.objects.get(user=bob)
    promoted = admin.post(f"/portal/team/members/{bobs.pk}/role", {"role": "owner"}, follow=True)
    assert b"Only an owner can make or unmake an owner" in promoted.content
    assert admin.post(f"/portal/team/members/{bobs.pk}/role", {"role": "viewer"}).status_code == 302
    assert Membership.objects.get(pk=bobs.pk).role == "viewer"


def test_a_demoted_members_keys_lose_write_and_a_member_may_not_manage(alice: Any, bob: Any, acme: Any) -> None:
    member = signed_in(bob)
    member.post("/portal/team", {"form": "key", "name": "bobs", "write": "on"})
    assert ApiKey.objects.get(name="bobs").scopes == ["read", "write"]
    mine = Membership.objects.get(user=alice)
    assert member.post(f"/portal/team/members/{mine.pk}/role", {"role": "member"}).status_code == 403
    assert member.get(f"/portal/team/members/{mine.pk}/remove").status_code == 403
    assert b"Change role of" not in member.get("/portal/team").content
    signed_in(alice).post(f"/portal/team/members/{Membership.objects.get(user=bob).pk}/role", {"role": "viewer"})
    assert ApiKey.objects.get(name="bobs").scopes == ["read"]


def test_another_tenants_members_are_not_found(alice: Any, bob: Any, charlie: Any) -> None:
    other = signed_in(charlie)  # an owner, of another tenant
    bobs = Membership.objects.get(user=bob)
    assert other.post(f"/portal/team/members/{bobs.pk}/role", {"role": "viewer"}).status_code == 404
    assert other.get(f"/portal/team/members/{bobs.pk}/remove").status_code == 404
    assert other.post(f"/portal/team/members/{bobs.pk}/remove").status_code == 404
    assert Membership.objects.get(pk=bobs.pk).role == "member"
