"""GET /api/v1/compliance/audit-events and /audit-events/verify — the audit log for compliance staff only."""

from __future__ import annotations

import pytest

from api.audit import changes_of
from core.models import AuditEvent
from tests.support import assert_problem
from tests.support.audit_tamper import tamper_update

URL = "/api/v1/compliance/audit-events"
VERIFY_URL = f"{URL}/verify"


@pytest.fixture
def officer(api, compliance, alice, charlie):
    """A compliance officer's client, with two tenants' worth of events in the log."""
    return api(compliance)


def all_seqs(**filters) -> list[int]:
    return list(AuditEvent.objects.filter(**filters).order_by("-seq").values_list("seq", flat=True))


def listed(client, **params) -> list[dict]:
    response = client.get(URL, params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


# --- listing ------------------------------------------------------------------------------------------------------


def test_it_lists_every_event_newest_first(officer, acme):
    results = listed(officer)
    assert [e["seq"] for e in results] == all_seqs()
    first = AuditEvent.objects.select_related("tenant").get(seq=1)
    shown = results[-1]
    assert shown["seq"] == 1
    assert (shown["action"], shown["actor_label"], shown["data"]) == (first.action, "tests", first.data)
    assert shown["tenant"] == (first.tenant.slug if first.tenant else None)
    assert (shown["prev_hash"], shown["hash"]) == (first.prev_hash, first.hash)
    assert {e["tenant"] for e in results} == {None, "acme", "globex"}


def test_it_shows_one_event(officer):
    event = AuditEvent.objects.get(action="tenant.created", tenant__slug="acme")
    response = officer.get(f"{URL}/{event.seq}")
    assert response.status_code == 200
    assert response.json()["hash"] == event.hash
    assert response.json()["data"] == {"slug": "acme", "name": "Acme Robotics"}
    assert_problem(officer.get(f"{URL}/99999"), 404, "not_found")


def test_it_filters_by_tenant_slug(officer):
    results = listed(officer, tenant="acme")
    assert [e["seq"] for e in results] == all_seqs(tenant__slug="acme")
    assert {e["tenant"] for e in results} == {"acme"}
    assert {e["action"] for e in results} == {"tenant.created", "member.added"}
    assert listed(officer, tenant="nobody") == []


def test_it_filters_by_actor_username(api, officer, alice):
    assert api(alice).patch("/api/v1/tenant", {"name": "Acme Labs"}, format="json").status_code == 200
    results = listed(officer, actor="alice")
    assert [(e["action"], e["actor_type"], e["tenant"]) for e in results] == [("tenant.updated", "api_key", "acme")]
    assert results[0]["api_key_prefix"]
    assert [e["seq"] for e in listed(officer, actor="tests")] == all_seqs(actor_label="tests")


def test_it_filters_by_action_prefix(officer):
    tenant_events = listed(officer, action="tenant.")
    assert [e["seq"] for e in tenant_events] == all_seqs(action__startswith="tenant.")
    assert sorted((e["action"], e["tenant"]) for e in tenant_events) == [
        ("tenant.created", "acme"),
        ("tenant.created", "globex"),
    ]
    assert [e["seq"] for e in listed(officer, action="api_key.")] == all_seqs(action__startswith="api_key.")
    assert listed(officer, action="tenant.created.") == []


def test_it_filters_by_time(officer):
    boundary = AuditEvent.objects.get(action="tenant.created", tenant__slug="globex").at
    since = listed(officer, **{"from": boundary.isoformat()})
    before = listed(officer, to=boundary.isoformat())

    assert [e["seq"] for e in since] == all_seqs(at__gte=boundary)
    assert [e["seq"] for e in before] == all_seqs(at__lt=boundary)
    assert {e["seq"] for e in since} | {e["seq"] for e in before} == set(all_seqs())
    assert boundary in {e.at for e in AuditEvent.objects.filter(seq__in=[r["seq"] for r in since])}
    assert before  # the boundary splits the log
    window = listed(officer, **{"from": boundary.isoformat(), "to": boundary.isoformat()})
    assert window == []  # from is inclusive, to exclusive


def test_it_filters_by_target_type_and_id(officer, acme, globex):
    tenants = listed(officer, target="tenant")
    assert [e["seq"] for e in tenants] == all_seqs(target_type="tenant")
    assert {(e["target_type"], e["tenant"]) for e in tenants} == {("tenant", "acme"), ("tenant", "globex")}
    one = listed(officer, target=f"tenant:{acme.pk}")
    assert [(e["action"], e["target_id"], e["tenant"]) for e in one] == [("tenant.created", str(acme.pk), "acme")]
    assert listed(officer, target=f"membership:{globex.pk + 1000}") == []
    assert listed(officer, target="nothing") == []
    both = listed(officer, target="membership", tenant="globex")
    assert [(e["action"], e["tenant"]) for e in both] == [("member.added", "globex")]


def test_it_shows_what_changed(api, officer, alice):
    assert api(alice).patch("/api/v1/tenant", {"name": "Acme Labs"}, format="json").status_code == 200
    [updated] = listed(officer, action="tenant.updated")
    assert updated["data"] == {"name": {"old": "Acme Robotics", "new": "Acme Labs"}}
    assert updated["changes"] == [{"field": "name", "old": "Acme Robotics", "new": "Acme Labs"}]
    [created] = listed(officer, action="tenant.created", tenant="acme")
    assert created["changes"] == []  # a creation records what it made in ``data``


def test_changes_follow_both_conventions_of_data():
    assert changes_of({"hostname": "n1", "from": "ready", "to": "draining"}) == [
        {"field": "state", "old": "ready", "new": "draining"}
    ]
    assert changes_of({"sovereign": {"old": False, "new": True}, "name": "x"}) == [
        {"field": "sovereign", "old": False, "new": True}
    ]
    assert changes_of(["not", "an", "object"]) == []


def test_it_pages_with_a_cursor(officer):
    response = officer.get(URL, {"page_size": 2})
    pages = []
    while True:
        assert response.status_code == 200
        body = response.json()
        assert len(body["results"]) <= 2
        pages.append([e["seq"] for e in body["results"]])
        if body["next"] is None:
            break
        response = officer.get(body["next"])

    assert len(pages) >= 3
    assert body["previous"] is not None
    assert [seq for page in pages for seq in page] == all_seqs()


def test_it_rejects_a_bad_time_with_field_errors(officer):
    body = assert_problem(officer.get(URL, {"from": "yesterday"}), 422, "validation_error")
    assert "from" in body["errors"]


# --- verification ------------------------------------------------------------------------------------------------


def test_it_verifies_the_chain(officer):
    count = AuditEvent.objects.count()
    response = officer.get(VERIFY_URL)
    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "count": count,
        "bad_seq": None,
        "reason": None,
        "message": f"audit chain ok: {count} events",
    }


def test_it_names_the_first_tampered_event(officer):
    seq = AuditEvent.objects.get(action="member.added", tenant__slug="acme").seq
    tamper_update(seq, data={"username": "mallory", "role": "owner"})

    body = officer.get(VERIFY_URL).json()

    assert body["ok"] is False
    assert body["bad_seq"] == seq
    assert body["count"] == seq - 1
    assert body["reason"].startswith("hash mismatch")
    assert body["message"].startswith(f"audit chain broken at seq {seq}")


# --- who may look ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", [URL, VERIFY_URL, f"{URL}/1"])
@pytest.mark.parametrize("who", ["alice", "charlie", "finance", "operator"])
def test_it_refuses_everyone_but_compliance(api, request, who, url):
    client = api(request.getfixturevalue(who))
    body = assert_problem(client.get(url), 403, "permission_denied")
    assert "results" not in body


@pytest.mark.parametrize("url", [URL, VERIFY_URL, f"{URL}/1"])
def test_it_refuses_anonymous_callers(api, acme, url):
    assert_problem(api().get(url), 401, "not_authenticated")
