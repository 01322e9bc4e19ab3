"""/api/v1/compliance/legal-holds: previewing, placing, listing and releasing legal holds, for compliance staff only;
and what a hold does to a tenant's deletes and to the erasure requests it suspends."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from compliance.models import AssetState, LegalHold
from compliance.services.assets import data_asset_delete
from compliance.services.holds import legal_hold_release
from core.errors import ServiceError
from core.models import AuditEvent
from tests.support import SYSTEM, assert_problem
from tests.support.data import T0, asset, regions

URL = "/api/v1/compliance/legal-holds"
PREVIEW_URL = f"{URL}/preview"
ERASURE_URL = "/api/v1/erasure-requests"


@pytest.fixture
def fleet(db):
    return regions()


@pytest.fixture
def officer(api, compliance):
    return api(compliance)


def post(client, url: str, body: dict, **extra):
    return client.post(url, body, format="json", **extra)


def iso(moment) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def place(officer, **body) -> dict:
    response = post(officer, URL, {"tenant": "acme", "matter": "Acme v. Initech", "reason": "litigation", **body})
    assert response.status_code == 201, response.content
    return response.json()


def release(officer, hold_id: int, reason: str = "settled"):
    return post(officer, f"{URL}/{hold_id}/release", {"reason": reason})


# --- preview ------------------------------------------------------------------------------------------------------


def test_it_previews_what_a_scope_would_preserve_by_category(officer, acme, globex, fleet):
    asset(acme, category="dataset", size_bytes=1000)
    asset(acme, category="dataset", size_bytes=2500, at=T0 + timedelta(days=5))
    asset(acme, category="checkpoint", size_bytes=400, at=T0 + timedelta(days=10))
    asset(acme, category="job_log", size_bytes=70, at=T0 + timedelta(days=40))
    asset(globex, category="dataset", size_bytes=9999)  # another tenant's: never counted
    events = AuditEvent.objects.count()

    everything = post(officer, PREVIEW_URL, {"tenant": "acme"})
    assert everything.status_code == 200, everything.content
    assert everything.json() == {
        "tenant": "acme",
        "assets": 4,
        "bytes": 3970,
        "by_category": {
            "checkpoint": {"assets": 1, "bytes": 400},
            "dataset": {"assets": 2, "bytes": 3500},
            "job_log": {"assets": 1, "bytes": 70},
        },
    }

    scoped = post(
        officer,
        PREVIEW_URL,
        {
            "tenant": "acme",
            "categories": ["dataset", "checkpoint", "job_log"],
            "created_from": iso(T0 + timedelta(days=1)),
            "created_to": iso(T0 + timedelta(days=10)),
        },
    )
    assert scoped.status_code == 200, scoped.content
    assert scoped.json() == {
        "tenant": "acme",
        "assets": 2,
        "bytes": 2900,
        "by_category": {"checkpoint": {"assets": 1, "bytes": 400}, "dataset": {"assets": 1, "bytes": 2500}},
    }
    only_logs = post(officer, PREVIEW_URL, {"tenant": "acme", "categories": ["job_log"]}).json()
    assert (only_logs["assets"], only_logs["bytes"]) == (1, 70)
    # Nothing written: no hold, no audit event.
    assert not LegalHold.objects.exists()
    assert AuditEvent.objects.count() == events


def test_a_preview_names_the_faulty_field(officer, acme):
    body = assert_problem(post(officer, PREVIEW_URL, {"tenant": "nobody"}), 422, "validation_error")
    assert list(body["errors"]) == ["tenant"]
    body = assert_problem(post(officer, PREVIEW_URL, {}), 422, "validation_error")
    assert list(body["errors"]) == ["tenant"]
    body = assert_problem(
        post(officer, PREVIEW_URL, {"tenant": "acme", "categories": ["gossip"]}), 422, "validation_error"
    )
    assert list(body["errors"]) == ["categories"]
    later, earlier = iso(T0 + timedelta(days=2)), iso(T0)
    body = assert_problem(
        post(officer, PREVIEW_URL, {"tenant": "acme", "created_from": later, "created_to": earlier}),
        422,
        "validation_error",
    )
    assert list(body["errors"]) == ["created_from"]


# --- placing ------------------------------------------------------------------------------------------------------


def test_a_hold_refuses_the_tenants_delete_of_what_it_covers(officer, acme, fleet):
    held = asset(acme, category="job_log", size_bytes=300)
    outside = asset(acme, category="job_log", at=T0 + timedelta(days=30))
    other_category = asset(acme, category="dataset")

    entry = place(officer, categories=["job_log"], created_to=iso(T0 + timedelta(days=1)))
    assert entry["tenant"] == "acme"
    assert (entry["matter"], entry["reason"], entry["categories"]) == ("Acme v. Initech", "litigation", ["job_log"])
    assert (entry["state"], entry["created_by"], entry["lock_until"], entry["created_from"]) == (
        "active",
        "compliance",
        None,
        None,
    )
    assert entry["created_to"] == iso(T0 + timedelta(days=1))
    assert (entry["released_at"], entry["released_by"], entry["release_reason"]) == (None, "", "")
    assert entry["preserves"] == {"assets": 1, "bytes": 300, "by_category": {"job_log": {"assets": 1, "bytes": 300}}}
    assert entry["suspends"] == []

    with pytest.raises(ServiceError) as refused:
        data_asset_delete(asset=held, actor=SYSTEM)
    assert refused.value.code == "legal_hold"
    assert refused.value.extra["holds"] == [entry["id"]]
    held.refresh_from_db()
    assert held.state == AssetState.LIVE
    for free in (outside, other_category):  # outside its date range or categories: deletable
        assert data_asset_delete(asset=free, actor=SYSTEM).state == AssetState.SHREDDING
    event = AuditEvent.objects.get(action="legal_hold.created", tenant__slug="acme")
    assert (event.actor_label, event.target_id) == ("compliance", str(entry["id"]))


def test_a_hold_stops_a_shredding_already_waiting(officer, acme, fleet):
    waiting = asset(acme, category="checkpoint")
    data_asset_delete(asset=waiting, actor=SYSTEM)
    entry = place(officer)  # no categories, no dates: everything of the tenant's
    waiting.refresh_from_db()
    assert waiting.state == AssetState.LIVE
    assert entry["categories"] == []
    assert entry["preserves"]["assets"] == 1


def test_placing_a_hold_checks_its_input(officer, acme):
    base = {"tenant": "acme", "matter": "m", "reason": "r"}
    body = assert_problem(post(officer, URL, {**base, "tenant": "nobody"}), 422, "validation_error")
    assert list(body["errors"]) == ["tenant"]
    body = assert_problem(post(officer, URL, {"tenant": "acme"}), 422, "validation_error")
    assert set(body["errors"]) == {"matter", "reason"}
    past = iso(timezone.now() - timedelta(minutes=1))
    body = assert_problem(post(officer, URL, {**base, "lock_until": past}), 422, "validation_error")
    assert list(body["errors"]) == ["lock_until"]
    body = assert_problem(post(officer, URL, {**base, "categories": ["dataset", "x"]}), 422, "validation_error")
    assert list(body["errors"]) == ["categories"]
    assert not LegalHold.objects.exists()


def test_placing_a_hold_is_idempotent(officer, acme):
    body = {"tenant": "acme", "matter": "m", "reason": "r"}
    first = post(officer, URL, body, HTTP_IDEMPOTENCY_KEY="hold-1")
    again = post(officer, URL, body, HTTP_IDEMPOTENCY_KEY="hold-1")
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert LegalHold.objects.count() == 1


# --- the register -------------------------------------------------------------------------------------------------


def test_it_lists_the_register_newest_first_with_filters(officer, acme, globex, fleet):
    asset(acme, category="dataset", size_bytes=10)
    first = place(officer, matter="first")
    second = place(officer, matter="second", categories=["checkpoint"])
    theirs = place(officer, tenant="globex", matter="theirs")
    assert release(officer, first["id"]).status_code == 200

    response = officer.get(URL)
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [h["id"] for h in results] == [theirs["id"], second["id"], first["id"]]
    shown = {h["id"]: h for h in results}
    assert shown[first["id"]]["state"] == "released"
    assert shown[first["id"]]["preserves"] == {"assets": 0, "bytes": 0, "by_category": {}}  # nothing, once released
    assert shown[second["id"]]["preserves"]["assets"] == 0  # no checkpoint yet

    def ids(**params):
        listed = officer.get(URL, params)
        assert listed.status_code == 200, listed.content
        return [h["id"] for h in listed.json()["results"]]

    assert ids(tenant="acme") == [second["id"], first["id"]]
    assert ids(tenant="globex") == [theirs["id"]]
    assert ids(state="released") == [first["id"]]
    assert ids(tenant="acme", state="active") == [second["id"]]
    body = assert_problem(officer.get(URL, {"tenant": "nobody"}), 422, "validation_error")
    assert list(body["errors"]) == ["tenant"]
    assert_problem(officer.get(URL, {"state": "asleep"}), 422, "validation_error")


def test_it_shows_one_hold(officer, acme, fleet):
    asset(acme, category="export", size_bytes=42)
    entry = place(officer, categories=["export"])
    response = officer.get(f"{URL}/{entry['id']}")
    assert response.status_code == 200
    assert response.json() == entry
    assert_problem(officer.get(f"{URL}/99999"), 404, "not_found")
    assert_problem(release(officer, 99999), 404, "not_found")


# --- releasing ------------------------------------------------------------------------------------------------------


def test_a_released_hold_cannot_be_released_again(officer, acme, fleet):
    held = asset(acme, category="dataset")
    entry = place(officer)
    released = release(officer, entry["id"], "case closed")
    assert released.status_code == 200, released.content
    body = released.json()
    assert (body["state"], body["released_by"], body["release_reason"]) == ("released", "compliance", "case closed")
    assert body["released_at"] is not None
    assert body["preserves"]["assets"] == 0
    held.refresh_from_db()
    assert held.state == AssetState.LIVE  # releasing deletes nothing by itself
    assert data_asset_delete(asset=held, actor=SYSTEM).state == AssetState.SHREDDING  # but deletes go on again
    assert_problem(release(officer, entry["id"]), 409, "hold_released")
    body = assert_problem(post(officer, f"{URL}/{entry['id']}/release", {}), 422, "validation_error")
    assert list(body["errors"]) == ["reason"]


def test_a_preservation_lock_refuses_release_before_it_ends(officer, acme, fleet):
    lock = timezone.now() + timedelta(days=30)
    entry = place(officer, lock_until=iso(lock))
    assert entry["lock_until"] == iso(lock)
    assert_problem(release(officer, entry["id"]), 409, "hold_locked")
    assert LegalHold.objects.get(pk=entry["id"]).state == "active"
    # Once the lock has passed, it can be released.
    hold = LegalHold.objects.get(pk=entry["id"])
    legal_hold_release(hold=hold, reason="lock over", actor=SYSTEM, now=lock + timedelta(seconds=1))
    assert officer.get(f"{URL}/{entry['id']}").json()["state"] == "released"


def test_releasing_a_hold_resumes_the_erasure_it_suspended(api, officer, alice, acme, fleet):
    held = asset(acme, category="dataset")
    free = asset(acme, category="job_log")
    entry = place(officer, categories=["dataset"])
    erasure = post(api(alice), ERASURE_URL, {"assets": [held.pk, free.pk]})
    assert erasure.status_code == 201, erasure.content
    request = erasure.json()
    assert request["state"] == "suspended"
    assert request["withheld"] == [{"asset": held.pk, "hold": entry["id"]}]
    assert request["deleted"] == [free.pk]
    assert officer.get(f"{URL}/{entry['id']}").json()["suspends"] == [request["id"]]

    assert release(officer, entry["id"]).status_code == 200
    after = officer.get(f"{ERASURE_URL}/{request['id']}").json()
    assert (after["state"], after["withheld"]) == ("completed", [])
    assert sorted(after["deleted"]) == sorted([held.pk, free.pk])
    assert after["completed_at"] is not None
    held.refresh_from_db()
    assert (held.state, held.shred_reason) == (AssetState.SHREDDING, "erasure")
    assert officer.get(f"{URL}/{entry['id']}").json()["suspends"] == []


def test_an_asset_under_two_holds_stays_withheld_until_both_are_released(api, officer, alice, acme, fleet):
    held = asset(acme, category="dataset")
    by_category = place(officer, matter="first", categories=["dataset"])
    by_date = place(officer, matter="second", created_from=iso(T0 - timedelta(days=1)))
    request = post(api(alice), ERASURE_URL, {"assets": [held.pk]}).json()
    assert request["withheld"] == [{"asset": held.pk, "hold": by_category["id"]}]  # the oldest hold is named

    assert release(officer, by_category["id"]).status_code == 200
    after = officer.get(f"{ERASURE_URL}/{request['id']}").json()
    assert after["state"] == "suspended"
    assert after["withheld"] == [{"asset": held.pk, "hold": by_date["id"]}]
    assert after["deleted"] == []
    held.refresh_from_db()
    assert held.state == AssetState.LIVE
    assert officer.get(f"{URL}/{by_date['id']}").json()["suspends"] == [request["id"]]
    assert officer.get(f"{URL}/{by_category['id']}").json()["suspends"] == []

    assert release(officer, by_date["id"]).status_code == 200
    done = officer.get(f"{ERASURE_URL}/{request['id']}").json()
    assert (done["state"], done["deleted"], done["withheld"]) == ("completed", [held.pk], [])
    held.refresh_from_db()
    assert held.state == AssetState.SHREDDING


# --- who may --------------------------------------------------------------------------------------------------------


def test_tenants_cannot_reach_legal_holds(api, officer, alice, bob, charlie, acme, fleet):
    asset(acme)
    entry = place(officer)
    for user in (alice, bob, charlie):
        client = api(user)
        assert_problem(client.get(URL), 403, "permission_denied")
        assert_problem(client.get(f"{URL}/{entry['id']}"), 403, "permission_denied")
        assert_problem(post(client, URL, {"tenant": "acme", "matter": "m", "reason": "r"}), 403, "permission_denied")
        assert_problem(post(client, PREVIEW_URL, {"tenant": "acme"}), 403, "permission_denied")
        assert_problem(release(client, entry["id"]), 403, "permission_denied")
    assert LegalHold.objects.get().state == "active"
    assert LegalHold.objects.count() == 1


def test_other_staff_cannot_reach_legal_holds(api, officer, finance, operator, acme):
    entry = place(officer)
    for user in (finance, operator):
        client = api(user)
        assert_problem(client.get(URL), 403, "permission_denied")
        assert_problem(client.get(f"{URL}/{entry['id']}"), 403, "permission_denied")
        assert_problem(post(client, URL, {"tenant": "acme", "matter": "m", "reason": "r"}), 403, "permission_denied")
        assert_problem(post(client, PREVIEW_URL, {"tenant": "acme"}), 403, "permission_denied")
        assert_problem(release(client, entry["id"]), 403, "permission_denied")
    assert_problem(api().get(URL), 401, "not_authenticated")
    assert LegalHold.objects.get().state == "active"
