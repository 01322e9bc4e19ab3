"""/api/v1/erasure-requests: a tenant's owner erases its own data, compliance staff erase a data subject's data
in any tenant; the response says what was deleted, what a legal hold withholds, and what derived data is affected."""

from __future__ import annotations

from datetime import timedelta

import pytest

from compliance.models import AssetState, ErasureRequest
from compliance.services.assets import AssetScope
from compliance.services.holds import legal_hold_create
from core.models import AuditEvent
from tests.support import SYSTEM, assert_problem
from tests.support.data import T0, asset, regions

URL = "/api/v1/erasure-requests"


@pytest.fixture
def fleet(db):
    return regions()


@pytest.fixture
def officer(api, compliance):
    return api(compliance)


def post(client, body: dict, **extra):
    return client.post(URL, body, format="json", **extra)


def erase(client, body: dict) -> dict:
    response = post(client, body)
    assert response.status_code == 201, response.content
    return response.json()


def iso(moment) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def hold(tenant, **scope):
    return legal_hold_create(
        tenant=tenant,
        matter="Acme v. Initech",
        reason="litigation",
        scope=AssetScope(**scope),
        lock_until=None,
        actor=SYSTEM,
    )


# --- a tenant's owner -------------------------------------------------------------------------------------------------


def test_an_owner_erases_named_assets(api, alice, acme, fleet):
    gone = asset(acme, category="dataset")
    kept = asset(acme, category="dataset", name="kept")
    body = erase(api(alice), {"assets": [gone.pk]})
    assert body["tenant"] == "acme"
    assert (body["state"], body["on_behalf_of"], body["requested_by"]) == ("completed", "", "alice")
    assert body["scope"] == {"assets": [gone.pk], "categories": [], "created_from": None, "created_to": None}
    assert (body["deleted"], body["withheld"], body["affected"]) == ([gone.pk], [], [])
    assert body["created_at"]
    assert body["completed_at"]
    gone.refresh_from_db()
    kept.refresh_from_db()
    assert (gone.state, gone.shred_reason) == (AssetState.SHREDDING, "erasure")
    assert kept.state == AssetState.LIVE
    event = AuditEvent.objects.get(action="erasure_request.created", tenant__slug="acme")
    assert (event.actor_label, event.target_id) == ("alice", str(body["id"]))


def test_an_owner_erases_by_category_and_date_range(api, alice, acme, fleet):
    early = asset(acme, category="job_log")
    late = asset(acme, category="job_log", at=T0 + timedelta(days=20))
    other = asset(acme, category="checkpoint")
    body = erase(api(alice), {"categories": ["job_log"], "created_to": iso(T0 + timedelta(days=1))})
    assert body["deleted"] == [early.pk]
    assert body["scope"]["categories"] == ["job_log"]
    assert body["scope"]["created_to"] == (T0 + timedelta(days=1)).isoformat()
    for made in (early, late, other):
        made.refresh_from_db()
    assert (early.state, late.state, other.state) == ("shredding", "live", "live")


def test_it_lists_withheld_assets_with_their_hold_and_affected_derived_ones(api, alice, acme, fleet):
    dataset = asset(acme, category="dataset", name="faces-2026")
    loose = asset(acme, category="job_log")
    checkpoint = asset(acme, category="checkpoint", name="model-v1", derived_from=[dataset.pk])
    distilled = asset(acme, category="checkpoint", name="model-v1-small", derived_from=[checkpoint.pk])
    placed = hold(acme, categories=["dataset"])

    body = erase(api(alice), {"assets": [dataset.pk, loose.pk]})
    assert (body["state"], body["completed_at"]) == ("suspended", None)
    assert body["deleted"] == [loose.pk]
    assert body["withheld"] == [{"asset": dataset.pk, "hold": placed.pk}]
    assert body["affected"] == [
        {"asset": checkpoint.pk, "name": "model-v1", "category": "checkpoint", "note": "retrain needed"},
        {"asset": distilled.pk, "name": "model-v1-small", "category": "checkpoint", "note": "retrain needed"},
    ]
    dataset.refresh_from_db()
    checkpoint.refresh_from_db()
    assert dataset.state == checkpoint.state == AssetState.LIVE  # held; affected ones are only named
    assert api(alice).get(f"{URL}/{body['id']}").json() == body


def test_an_owner_lists_and_reads_its_tenants_requests(api, alice, officer, acme, globex, fleet):
    first = erase(api(alice), {"assets": [asset(acme).pk]})
    on_behalf = erase(officer, {"tenant": "acme", "on_behalf_of": "jane@example.test", "assets": [asset(acme).pk]})
    erase(officer, {"tenant": "globex", "on_behalf_of": "joe@example.test", "assets": [asset(globex).pk]})
    listed = api(alice).get(URL)
    assert listed.status_code == 200, listed.content
    assert [r["id"] for r in listed.json()["results"]] == [on_behalf["id"], first["id"]]  # newest first
    assert listed.json()["results"][0]["on_behalf_of"] == "jane@example.test"
    assert api(alice).get(f"{URL}/{first['id']}").json()["deleted"] == first["deleted"]
    assert [r["id"] for r in api(alice).get(URL, {"state": "completed"}).json()["results"]] == [
        on_behalf["id"],
        first["id"],
    ]


def test_a_request_needs_a_scope(api, alice, acme, fleet):
    assert_problem(post(api(alice), {}), 422, "validation_error")
    body = assert_problem(post(api(alice), {"categories": ["gossip"]}), 422, "validation_error")
    assert list(body["errors"]) == ["categories"]
    body = assert_problem(post(api(alice), {"assets": [987654]}), 422, "validation_error")
    assert list(body["errors"]) == ["assets"]
    assert not ErasureRequest.objects.exists()


def test_erasing_is_idempotent(api, alice, acme, fleet):
    made = asset(acme)
    client = api(alice)
    first = post(client, {"assets": [made.pk]}, HTTP_IDEMPOTENCY_KEY="erase-1")
    again = post(client, {"assets": [made.pk]}, HTTP_IDEMPOTENCY_KEY="erase-1")
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert ErasureRequest.objects.count() == 1


# --- compliance, on behalf of a data subject --------------------------------------------------------------------------


def test_compliance_erases_on_behalf_of_a_data_subject(officer, acme, fleet):
    subject = asset(acme, category="inference_payload", name="jane-prompts")
    held = asset(acme, category="dataset")
    placed = hold(acme, categories=["dataset"])
    body = erase(officer, {"tenant": "acme", "on_behalf_of": "jane@example.test", "assets": [subject.pk, held.pk]})
    assert (body["tenant"], body["on_behalf_of"], body["requested_by"]) == ("acme", "jane@example.test", "compliance")
    assert body["deleted"] == [subject.pk]
    assert body["withheld"] == [{"asset": held.pk, "hold": placed.pk}]
    subject.refresh_from_db()
    assert subject.state == AssetState.SHREDDING
    assert AuditEvent.objects.get(action="erasure_request.created").data["on_behalf_of"] == "jane@example.test"


def test_compliance_must_name_the_tenant_and_the_data_subject(officer, acme, fleet):
    made = asset(acme)
    body = assert_problem(post(officer, {"tenant": "acme", "assets": [made.pk]}), 422, "validation_error")
    assert list(body["errors"]) == ["on_behalf_of"]
    body = assert_problem(post(officer, {"on_behalf_of": "jane", "assets": [made.pk]}), 422, "validation_error")
    assert list(body["errors"]) == ["tenant"]
    body = assert_problem(
        post(officer, {"tenant": "nobody", "on_behalf_of": "jane", "assets": [made.pk]}), 422, "validation_error"
    )
    assert list(body["errors"]) == ["tenant"]
    assert not ErasureRequest.objects.exists()


def test_compliance_sees_every_tenants_requests(officer, api, alice, charlie, acme, globex, fleet):
    ours = erase(api(alice), {"assets": [asset(acme).pk]})
    theirs = erase(api(charlie), {"assets": [asset(globex).pk]})
    listed = officer.get(URL)
    assert listed.status_code == 200, listed.content
    assert [r["id"] for r in listed.json()["results"]] == [theirs["id"], ours["id"]]
    assert [r["id"] for r in officer.get(URL, {"tenant": "acme"}).json()["results"]] == [ours["id"]]
    assert officer.get(f"{URL}/{theirs['id']}").json()["tenant"] == "globex"
    body = assert_problem(officer.get(URL, {"tenant": "nobody"}), 422, "validation_error")
    assert list(body["errors"]) == ["tenant"]


# --- another tenant ---------------------------------------------------------------------------------------------------


def test_another_tenant_neither_sees_nor_acts_on_acmes_requests(api, alice, charlie, acme, globex, fleet):
    made = asset(acme)
    ours = erase(api(alice), {"assets": [made.pk]})
    client = api(charlie)
    assert_problem(client.get(f"{URL}/{ours['id']}"), 404, "not_found")
    listed = client.get(URL)
    assert listed.status_code == 200
    assert listed.json()["results"] == []
    # Acme's slug answers as an unknown one, to the filter and to the body.
    body = assert_problem(client.get(URL, {"tenant": "acme"}), 422, "validation_error")
    assert list(body["errors"]) == ["tenant"]
    unknown = assert_problem(client.get(URL, {"tenant": "nobody"}), 422, "validation_error")
    assert unknown["errors"]["tenant"] == body["errors"]["tenant"]
    target = asset(acme, name="target")
    body = assert_problem(post(client, {"tenant": "acme", "assets": [target.pk]}), 422, "validation_error")
    assert list(body["errors"]) == ["tenant"]
    # Acme's asset ids are unknown in Globex.
    body = assert_problem(post(client, {"assets": [target.pk]}), 422, "validation_error")
    assert list(body["errors"]) == ["assets"]
    target.refresh_from_db()
    assert target.state == AssetState.LIVE
    assert ErasureRequest.objects.filter(tenant=globex).count() == 0


def test_an_owner_may_name_its_own_tenant(api, alice, acme, fleet):
    body = erase(api(alice), {"tenant": "acme", "on_behalf_of": "a customer", "assets": [asset(acme).pk]})
    assert (body["tenant"], body["on_behalf_of"]) == ("acme", "a customer")


# --- roles --------------------------------------------------------------------------------------------------------


def test_a_member_may_neither_request_nor_read_erasures(api, alice, bob, acme, fleet):
    made = asset(acme)
    ours = erase(api(alice), {"assets": [asset(acme).pk]})
    client = api(bob)
    assert_problem(post(client, {"assets": [made.pk]}), 403, "permission_denied")
    assert_problem(client.get(URL), 403, "permission_denied")
    assert_problem(client.get(f"{URL}/{ours['id']}"), 403, "permission_denied")
    made.refresh_from_db()
    assert made.state == AssetState.LIVE


def test_other_staff_cannot_reach_erasure_requests(api, alice, finance, operator, acme, fleet):
    made = asset(acme)
    ours = erase(api(alice), {"assets": [asset(acme).pk]})
    for user in (finance, operator):
        client = api(user)
        body = {"tenant": "acme", "on_behalf_of": "jane", "assets": [made.pk]}
        assert_problem(post(client, body), 403, "permission_denied")
        assert_problem(client.get(URL), 403, "permission_denied")
        assert_problem(client.get(f"{URL}/{ours['id']}"), 403, "permission_denied")
    assert_problem(api().get(URL), 401, "not_authenticated")
    assert ErasureRequest.objects.count() == 1
