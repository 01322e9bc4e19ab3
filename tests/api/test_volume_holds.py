"""Legal holds and erasure reach volumes: a hold over ``volume`` is shown with the volumes it preserves, an
erasure request that covers volumes deletes the unheld ones and withholds the held one naming its hold, and
releasing the hold lets the erasure finish (the volume's key, then the volume, destroyed). A hold placed during a
volume's waiting period stops its shredding; releasing it lets the deletion go on. A volume's asset is governed
as the volume: it is not downloaded, moved or deleted on its own."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from compliance.models import AssetState, DataAsset, ErasureRequest
from compliance.services.assets import shred_wait
from compliance.services.sweep import retention_sweep
from core.models import AuditEvent
from tests.support import assert_problem
from tests.support.data import regions
from tests.support.volumes import VOLUMES, mount, stop, volume_dir, volume_made_at, volume_make, volume_state

HOLDS = "/api/v1/compliance/legal-holds"
ERASURES = "/api/v1/erasure-requests"


@pytest.fixture
def fleet(db: None) -> Any:
    return regions()


@pytest.fixture
def officer(api: Any, compliance: Any) -> Any:
    return api(compliance)


def place(officer: Any, **scope: Any) -> dict[str, Any]:
    body = {"tenant": "acme", "matter": "Acme v. Initech", "reason": "litigation", "categories": ["volume"], **scope}
    response = officer.post(HOLDS, body, format="json")
    assert response.status_code == 201, response.content
    placed: dict[str, Any] = response.json()
    return placed


def release(officer: Any, hold_id: int) -> dict[str, Any]:
    response = officer.post(f"{HOLDS}/{hold_id}/release", {"reason": "case closed"}, format="json")
    assert response.status_code == 200, response.content
    released: dict[str, Any] = response.json()
    return released


def test_an_erasure_withholds_the_held_volume_naming_its_hold_and_finishes_once_it_is_released(
    api: Any, alice: Any, officer: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    now = timezone.now()
    evidence = volume_make(client, capture, name="evidence")
    scratch = volume_make(client, capture, name="scratch", kind="block", size_gb=100)
    volume_made_at(evidence["id"], now - timedelta(days=60))
    (volume_dir(evidence["id"]) / "emails.mbox").write_text("the matter")
    hold = place(officer, created_to=(now - timedelta(days=30)).isoformat())
    assert [v["name"] for v in hold["volumes"]] == ["evidence"]
    assert hold["volumes"][0] == {
        "id": evidence["id"],
        "name": "evidence",
        "region": "eu-west",
        "kind": "filesystem",
        "size_gb": 500,
        "state": "available",
    }

    with capture(execute=True):
        asked = client.post(ERASURES, {"categories": ["volume"]}, format="json")
    assert asked.status_code == 201, asked.content
    body = asked.json()
    assert body["state"] == "suspended"
    assert body["deleted"] == [scratch["data_asset"]]
    assert body["withheld"] == [{"asset": evidence["data_asset"], "hold": hold["id"]}]
    assert volume_state(client, scratch["id"]) == "deleting"
    assert volume_state(client, evidence["id"]) == "available"
    refused = assert_problem(client.delete(f"{VOLUMES}/{evidence['id']}"), 409, "legal_hold")
    assert refused["holds"] == [hold["id"]]
    assert officer.get(f"{HOLDS}/{hold['id']}").json()["suspends"] == [body["id"]]

    with capture(execute=True):
        retention_sweep(now=now + shred_wait() + timedelta(seconds=1))
    assert volume_state(client, scratch["id"]) == "deleted"
    assert not volume_dir(scratch["id"]).exists()
    assert volume_state(client, evidence["id"]) == "available"  # the hold keeps it, key and data
    assert (volume_dir(evidence["id"]) / "emails.mbox").read_text() == "the matter"

    released_at = timezone.now()
    with capture(execute=True):
        released = release(officer, hold["id"])
    assert released["volumes"] == []  # a released hold preserves nothing
    request = ErasureRequest.objects.get(pk=body["id"])
    assert (request.state, request.completed_at is not None) == ("completed", True)
    shown = client.get(f"{ERASURES}/{body['id']}").json()
    assert sorted(shown["deleted"]) == sorted([scratch["data_asset"], evidence["data_asset"]])
    assert shown["withheld"] == []
    asset = DataAsset.objects.get(volume_id=evidence["id"])
    assert (asset.state, asset.shred_reason) == (AssetState.SHREDDING, "erasure")
    assert volume_state(client, evidence["id"]) == "deleting"

    with capture(execute=True):
        report = retention_sweep(now=released_at + shred_wait() + timedelta(minutes=1))
    assert report.shredded == {"volume": 1}
    asset.refresh_from_db()
    assert (asset.state, asset.wrapped_key) == (AssetState.SHREDDED, None)
    assert volume_state(client, evidence["id"]) == "deleted"
    assert not volume_dir(evidence["id"]).exists()
    assert AuditEvent.objects.get(action="data_asset.shredded", target_id=str(asset.pk)).data["reason"] == "erasure"


def test_a_hold_placed_while_a_volume_waits_stops_its_shredding_and_its_release_lets_the_deletion_go_on(
    api: Any, alice: Any, officer: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    volume = volume_make(client, capture)
    with capture(execute=True):
        assert client.delete(f"{VOLUMES}/{volume['id']}").status_code == 202
    deleted_at = timezone.now()
    hold = place(officer)
    asset = DataAsset.objects.get(volume_id=volume["id"])
    assert asset.state == AssetState.LIVE  # the shredding stopped: nothing is lost
    assert [v["id"] for v in hold["volumes"]] == [volume["id"]]
    assert hold["volumes"][0]["state"] == "deleting"  # a volume's deletion is never taken back

    with capture(execute=True):
        retention_sweep(now=deleted_at + shred_wait() + timedelta(seconds=1))
    assert volume_state(client, volume["id"]) == "deleting"
    assert volume_dir(volume["id"]).is_dir()

    released_at = timezone.now()
    with capture(execute=True):
        release(officer, hold["id"])
    asset.refresh_from_db()
    assert (asset.state, asset.shred_reason) == (AssetState.SHREDDING, "delete")
    with capture(execute=True):
        retention_sweep(now=released_at + shred_wait() + timedelta(minutes=1))
    assert volume_state(client, volume["id"]) == "deleted"
    assert not volume_dir(volume["id"]).exists()


def test_an_erasure_is_not_deferred_by_running_work_but_no_new_work_mounts_the_volume(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    volume = volume_make(client, capture)
    work = mount(client, capture, volume["id"])
    with capture(execute=True):
        asked = client.post(ERASURES, {"assets": [volume["data_asset"]]}, format="json")
    assert asked.json()["deleted"] == [volume["data_asset"]]
    shown = client.get(f"{VOLUMES}/{volume['id']}").json()
    assert (shown["state"], shown["attached_to"]) == ("deleting", [work["id"]])
    stop(client, capture, work["id"])
    assert volume_state(client, volume["id"]) == "deleting"


def test_a_volumes_asset_is_not_downloaded_moved_or_deleted_on_its_own(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    volume = volume_make(client, capture)
    asset = f"/api/v1/data-assets/{volume['data_asset']}"
    work = mount(client, capture, volume["id"])
    for response in (
        client.get(f"{asset}/content"),
        client.post(f"{asset}/move", {"region": "us-east"}, format="json"),
        client.delete(asset),
    ):
        problem = assert_problem(response, 409, "volume_asset")
        assert f"/api/v1/volumes/{volume['id']}" in problem["detail"]
    assert volume_state(client, volume["id"]) == "attached"  # running work keeps its disk
    assert client.get(asset).json()["state"] == "live"
    stop(client, capture, work["id"])
