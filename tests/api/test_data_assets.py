"""/api/v1/data-assets: registering with content, reading it back, moving, deleting and cancelling, every refusal
code, the roles and the cross-tenant rule."""

import base64
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from compliance import storage
from compliance.models import AssetState, DataAsset
from compliance.services.assets import AssetScope
from compliance.services.holds import legal_hold_create
from compliance.services.sweep import retention_policy_set, retention_sweep
from core.models import AuditEvent
from tests.support import SYSTEM, assert_problem, teammate
from tests.support.data import regions

URL = "/api/v1/data-assets"


@pytest.fixture
def fleet(db):
    return regions()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def register(client, **body):
    body.setdefault("name", "train.parquet")
    body.setdefault("category", "dataset")
    body.setdefault("region", "eu-west")
    if "content" not in body:
        body.setdefault("size_bytes", 1000)
    return client.post(URL, body, format="json")


def made(client, **body):
    response = register(client, **body)
    assert response.status_code == 201, response.content
    return response.json()


# --- the happy paths ---------------------------------------------------------------------------------------------


def test_it_registers_content_encrypted_and_gives_it_back(api, alice, acme, fleet):
    client = api(alice)
    body = made(client, content=b64(b"the training set\x00\xff"))
    assert body["name"] == "train.parquet"
    assert body["category"] == "dataset"
    assert body["region"] == "eu-west"
    assert body["size_bytes"] == 18
    assert body["state"] == "live"
    assert body["key_id"]
    assert body["location"].startswith("file://")
    assert body["derived_from"] == []
    assert body["derivatives"] == []
    assert body["shred_reason"] == ""
    assert body["shred_after"] is None
    assert body["shredded_at"] is None
    assert b"the training set" not in storage.blob_get(body["location"])

    assert client.get(f"{URL}/{body['id']}").json() == body
    content = client.get(f"{URL}/{body['id']}/content")
    assert content.status_code == 200
    assert content["Content-Type"] == "application/octet-stream"
    assert content.content == b"the training set\x00\xff"
    asked = client.get(f"{URL}/{body['id']}/content", HTTP_ACCEPT="application/octet-stream")
    assert asked.status_code == 200
    assert asked.content == b"the training set\x00\xff"

    event = AuditEvent.objects.get(action="data_asset.created", target_id=str(body["id"]))
    assert event.actor_label == "alice"
    assert event.tenant_id == acme.pk


def test_a_member_registers_and_deletes_too(api, bob, fleet):
    client = api(bob)
    body = made(client, content=b64(b"bob's"))
    assert client.delete(f"{URL}/{body['id']}").status_code == 202


def test_an_asset_registered_by_size_has_no_content(api, alice, fleet):
    client = api(alice)
    body = made(client, size_bytes=10**12)
    assert body["size_bytes"] == 10**12
    assert body["location"] == ""
    assert body["key_id"] == ""
    assert_problem(client.get(f"{URL}/{body['id']}/content"), 404, "no_content")


def test_empty_content_is_content(api, alice, fleet):
    client = api(alice)
    body = made(client, content="")
    assert body["size_bytes"] == 0
    assert client.get(f"{URL}/{body['id']}/content").content == b""


def test_it_links_derived_assets_both_ways(api, alice, fleet):
    client = api(alice)
    source = made(client, name="raw")
    other = made(client, name="labels")
    model = made(client, name="model", category="checkpoint", derived_from=[source["id"], other["id"]])
    assert model["derived_from"] == sorted([source["id"], other["id"]])
    assert client.get(f"{URL}/{source['id']}").json()["derivatives"] == [model["id"]]


def test_it_lists_newest_first_with_filters(api, alice, fleet):
    client = api(alice)
    first = made(client, name="a", category="dataset")
    second = made(client, name="b", category="job_log")
    third = made(client, name="c", category="dataset", region="us-east")
    client.delete(f"{URL}/{first['id']}")
    listing = client.get(URL).json()
    assert [a["id"] for a in listing["results"]] == [third["id"], second["id"], first["id"]]
    assert "next" in listing

    def ids(**query):
        response = client.get(URL, query)
        assert response.status_code == 200, response.content
        return [a["id"] for a in response.json()["results"]]

    assert ids(category="dataset") == [third["id"], first["id"]]
    assert ids(state="shredding") == [first["id"]]
    assert ids(state="live", category="dataset") == [third["id"]]
    assert ids(region="us-east") == [third["id"]]
    assert ids(region="eu-west", category="job_log") == [second["id"]]
    assert ids(page_size=1) == [third["id"]]
    body = assert_problem(client.get(URL, {"category": "gossip"}), 422, "validation_error")
    assert "category" in body["errors"]
    assert_problem(client.get(URL, {"state": "gone"}), 422, "validation_error")


def test_a_repeated_post_with_an_idempotency_key_registers_once(api, alice, fleet):
    client = api(alice)
    body = {"name": "once", "category": "dataset", "region": "eu-west", "content": b64(b"once")}
    first = client.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    again = client.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert DataAsset.objects.filter(name="once").count() == 1


# --- deleting, cancelling, shredding -----------------------------------------------------------------------------


def test_a_delete_is_accepted_and_the_content_is_withheld_until_cancelled(api, alice, fleet):
    client = api(alice)
    body = made(client, content=b64(b"keep me"), category="checkpoint")
    before = timezone.now()
    deleted = client.delete(f"{URL}/{body['id']}")
    assert deleted.status_code == 202, deleted.content
    asset = deleted.json()
    assert asset["state"] == "shredding"
    assert asset["shred_reason"] == "delete"
    shred_after = DataAsset.objects.get(pk=body["id"]).shred_after
    assert shred_after is not None
    assert shred_after >= before + timedelta(days=7)
    assert asset["shred_after"] is not None
    assert_problem(client.get(f"{URL}/{body['id']}/content"), 409, "asset_shredding")
    assert client.delete(f"{URL}/{body['id']}").json()["state"] == "shredding"  # deleting twice changes nothing

    cancelled = client.post(f"{URL}/{body['id']}/cancel-shredding")
    assert cancelled.status_code == 200, cancelled.content
    assert cancelled.json()["state"] == "live"
    assert cancelled.json()["shred_after"] is None
    assert client.get(f"{URL}/{body['id']}/content").content == b"keep me"
    assert_problem(client.post(f"{URL}/{body['id']}/cancel-shredding"), 409, "not_shredding")


def test_after_the_waiting_period_the_content_is_gone(api, alice, fleet, django_capture_on_commit_callbacks):
    client = api(alice)
    body = made(client, content=b64(b"secret weights"), category="checkpoint")
    client.delete(f"{URL}/{body['id']}")
    with django_capture_on_commit_callbacks(execute=True):
        retention_sweep(now=timezone.now() + timedelta(days=7, minutes=1))
    detail = client.get(f"{URL}/{body['id']}").json()
    assert detail["state"] == "shredded"
    assert detail["shredded_at"] is not None
    assert_problem(client.get(f"{URL}/{body['id']}/content"), 409, "asset_shredded")
    assert not storage.blob_exists(body["location"])
    assert_problem(client.post(f"{URL}/{body['id']}/cancel-shredding"), 409, "not_shredding")
    assert_problem(client.post(f"{URL}/{body['id']}/move", {"region": "us-east"}, format="json"), 409, "asset_not_live")


def test_a_legal_hold_refuses_the_delete(api, alice, acme, fleet):
    client = api(alice)
    body = made(client, category="job_log")
    hold = legal_hold_create(
        tenant=acme,
        matter="Acme v. Initech",
        reason="litigation",
        scope=AssetScope(categories=["job_log"]),
        lock_until=None,
        actor=SYSTEM,
    )
    refused = assert_problem(client.delete(f"{URL}/{body['id']}"), 409, "legal_hold")
    assert refused["holds"] == [hold.pk]
    assert DataAsset.objects.get(pk=body["id"]).state == AssetState.LIVE


def test_a_closure_or_erasure_shredding_is_not_cancelled_here(api, alice, fleet):
    client = api(alice)
    body = made(client)
    DataAsset.objects.filter(pk=body["id"]).update(
        state=AssetState.SHREDDING, shred_reason="erasure", shred_after=timezone.now() + timedelta(days=7)
    )
    assert_problem(client.post(f"{URL}/{body['id']}/cancel-shredding"), 409, "not_cancellable")


# --- moving ------------------------------------------------------------------------------------------------------


def test_it_moves_the_content_to_another_region(api, alice, fleet, django_capture_on_commit_callbacks):
    client = api(alice)
    body = made(client, content=b64(b"portable"))
    with django_capture_on_commit_callbacks(execute=True):
        moved = client.post(f"{URL}/{body['id']}/move", {"region": "us-east"}, format="json")
    assert moved.status_code == 200, moved.content
    assert moved.json()["region"] == "us-east"
    assert moved.json()["location"] != body["location"]
    assert not storage.blob_exists(body["location"])
    assert client.get(f"{URL}/{body['id']}/content").content == b"portable"
    assert client.get(URL, {"region": "us-east"}).json()["results"][0]["id"] == body["id"]


def test_a_move_needs_a_known_region(api, alice, fleet):
    client = api(alice)
    body = made(client)
    refused = assert_problem(
        client.post(f"{URL}/{body['id']}/move", {"region": "mars-1"}, format="json"), 422, "validation_error"
    )
    assert "region" in refused["errors"]
    refused = assert_problem(client.post(f"{URL}/{body['id']}/move", {}, format="json"), 422, "validation_error")
    assert "region" in refused["errors"]


# --- refusals ----------------------------------------------------------------------------------------------------


def test_residency_refuses_registering_and_moving_outside_it(api, alice, acme, fleet):
    client = api(alice)
    here = made(client)
    acme.residency_jurisdictions = ["EU"]
    acme.save()
    refused = assert_problem(register(client, region="us-east"), 409, "residency")
    assert "region" in refused["errors"]
    assert_problem(client.post(f"{URL}/{here['id']}/move", {"region": "us-east"}, format="json"), 409, "residency")
    assert list(DataAsset.objects.values_list("region__code", flat=True)) == ["eu-west"]


def test_zero_retention_refuses_to_persist(api, alice, acme, fleet):
    retention_policy_set(tenant=acme, category="inference_payload", days=None, zero_retention=True, actor=SYSTEM)
    assert_problem(register(api(alice), category="inference_payload", content=b64(b"prompt")), 409, "zero_retention")
    assert not DataAsset.objects.exists()


def test_bad_input_gets_field_errors(api, alice, fleet, settings):
    client = api(alice)
    body = assert_problem(client.post(URL, {}, format="json"), 422, "validation_error")
    assert {"name", "category", "region"} <= set(body["errors"])
    body = assert_problem(register(client, category="gossip"), 422, "validation_error")
    assert "category" in body["errors"]
    body = assert_problem(register(client, region="mars-1"), 422, "validation_error")
    assert "region" in body["errors"]
    body = assert_problem(register(client, content="not base64!"), 422, "validation_error")
    assert "content" in body["errors"]
    body = assert_problem(register(client, content=b64(b"four"), size_bytes=5), 422, "validation_error")
    assert "size_bytes" in body["errors"]
    body = assert_problem(register(client, size_bytes=None), 422, "validation_error")
    assert "size_bytes" in body["errors"]
    body = assert_problem(register(client, size_bytes=-1), 422, "validation_error")
    assert "size_bytes" in body["errors"]
    body = assert_problem(register(client, derived_from=[999999]), 422, "validation_error")
    assert "derived_from" in body["errors"]
    settings.LADDER_ASSET_CONTENT_MAX_BYTES = 8
    body = assert_problem(register(client, content=b64(b"nine byte")), 422, "content_too_large")
    assert "content" in body["errors"]
    assert not DataAsset.objects.exists()


def test_an_unknown_id_is_404(api, alice, fleet):
    client = api(alice)
    assert_problem(client.get(f"{URL}/999999"), 404, "not_found")
    assert_problem(client.get(f"{URL}/nope"), 404, "not_found")
    assert_problem(client.get(f"{URL}/999999/content"), 404, "not_found")


# --- who may -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["viewer", "billing"])
def test_viewers_and_billing_users_read_but_do_not_change(api, alice, acme, fleet, role):
    asset = made(api(alice), content=b64(b"look, don't touch"))
    client = teammate(acme, role)
    assert [a["id"] for a in client.get(URL).json()["results"]] == [asset["id"]]
    assert client.get(f"{URL}/{asset['id']}").status_code == 200
    assert client.get(f"{URL}/{asset['id']}/content").content == b"look, don't touch"
    assert_problem(register(client), 403, "permission_denied")
    assert_problem(client.delete(f"{URL}/{asset['id']}"), 403, "permission_denied")
    assert_problem(
        client.post(f"{URL}/{asset['id']}/move", {"region": "us-east"}, format="json"), 403, "permission_denied"
    )
    assert_problem(client.post(f"{URL}/{asset['id']}/cancel-shredding"), 403, "permission_denied")
    assert DataAsset.objects.get().state == AssetState.LIVE


def test_a_read_only_key_cannot_write(api, alice, fleet):
    assert_problem(register(api(alice, scopes=("read",))), 403, "insufficient_scope")


def test_staff_without_a_tenant_are_refused(api, alice, compliance, operator, fleet):
    asset = made(api(alice))
    for user in (compliance, operator):
        client = api(user)
        assert_problem(client.get(URL), 403, "tenant_required")
        assert_problem(client.get(f"{URL}/{asset['id']}"), 403, "tenant_required")
        assert_problem(client.get(f"{URL}/{asset['id']}/content"), 403, "tenant_required")
        assert_problem(register(client), 403, "tenant_required")
        assert_problem(client.delete(f"{URL}/{asset['id']}"), 403, "tenant_required")


def test_anonymous_callers_are_refused(fleet):
    assert_problem(APIClient().get(URL), 401, "not_authenticated")


def test_another_tenants_assets_are_404_everywhere(api, alice, charlie, fleet):
    mine = made(api(alice), content=b64(b"acme only"))
    client = api(charlie)
    theirs = made(client, name="globex data")
    assert [a["id"] for a in client.get(URL).json()["results"]] == [theirs["id"]]
    assert [a["id"] for a in api(alice).get(URL).json()["results"]] == [mine["id"]]
    assert_problem(client.get(f"{URL}/{mine['id']}"), 404, "not_found")
    assert_problem(client.get(f"{URL}/{mine['id']}/content"), 404, "not_found")
    assert_problem(client.delete(f"{URL}/{mine['id']}"), 404, "not_found")
    assert_problem(client.post(f"{URL}/{mine['id']}/move", {"region": "us-east"}, format="json"), 404, "not_found")
    assert_problem(client.post(f"{URL}/{mine['id']}/cancel-shredding"), 404, "not_found")
    # Nor can charlie derive from it: the id is as unknown to him as one that never existed.
    body = assert_problem(register(client, derived_from=[mine["id"]]), 422, "validation_error")
    assert "derived_from" in body["errors"]
    asset = DataAsset.objects.get(pk=mine["id"])
    assert asset.state == AssetState.LIVE
    assert asset.region.code == "eu-west"
    assert not asset.derivatives.exists()
