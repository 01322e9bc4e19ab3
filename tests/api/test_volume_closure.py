"""Account closure reaches volumes: the close page warns first, the export bundle lists every volume (name, region,
kind, size, snapshots) with a notice that their data is not in it and when it is destroyed, the owners are told
the date and each volume's fate, and at ``closes_at`` each volume's key is destroyed, then the volume and its
snapshots; a volume under a legal hold stays until the hold is released. A closing tenant makes and grows no
volume."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from billing.models import Notification
from compliance.models import AccountClosure, AssetState, DataAsset
from compliance.services.assets import AssetScope, shred_wait
from compliance.services.holds import legal_hold_create, legal_hold_release
from compliance.services.sweep import retention_sweep
from core.models import AuditEvent
from lifecycle.services.closure import tenant_close
from provisioning.models import Volume, VolumeSnapshot
from tenancy.models import Tenant, TenantState
from tests.support import SYSTEM, assert_problem
from tests.support.data import regions
from tests.support.volumes import VOLUMES, volume_dir, volume_made_at, volume_make, volume_state

SNAPSHOTS = "/api/v1/volume-snapshots"


@pytest.fixture
def fleet(db: None) -> Any:
    return regions()


@pytest.fixture
def estate(api: Any, alice: Any, acme: Any, fleet: Any, django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    """Acme with a filesystem volume holding a file and a snapshot, and an older block volume under a legal hold."""
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    datasets = volume_make(client, capture)
    (volume_dir(datasets["id"]) / "train.txt").write_text("the corpus")
    with capture(execute=True):
        snapshot = client.post(f"{VOLUMES}/{datasets['id']}/snapshots", {"name": "before-close"}, format="json")
    assert snapshot.status_code == 201, snapshot.content
    evidence = volume_make(client, capture, name="evidence", kind="block", size_gb=100)
    volume_made_at(evidence["id"], timezone.now() - timedelta(days=60))
    hold = legal_hold_create(
        tenant=acme,
        matter="Acme v. Initech",
        reason="litigation",
        scope=AssetScope(categories=["volume"], created_to=timezone.now() - timedelta(days=30)),
        lock_until=None,
        actor=SYSTEM,
    )
    return {
        "client": client,
        "datasets": datasets,
        "snapshot": snapshot.json(),
        "evidence": evidence,
        "hold": hold,
    }


def snapshot_dir(snapshot_id: int) -> Any:
    snapshot = VolumeSnapshot.objects.select_related("tenant").get(pk=snapshot_id)
    return volume_dir(snapshot.volume_id).parent / snapshot.backend_name


def test_the_close_page_warns_to_copy_volumes_out_first(alice: Any, estate: dict[str, Any]) -> None:
    client = Client()
    client.force_login(alice)
    page = client.get("/portal/leave").content.decode()
    assert "Copy your volumes' data out before you close." in page
    assert "datasets: eu-west, filesystem, 500 GB" in page
    assert "1 snapshot" in page
    assert "evidence: eu-west, block, 100 GB" in page


def test_closure_lists_volumes_tells_the_owner_and_shreds_them_at_the_end(
    api: Any,
    alice: Any,
    acme: Any,
    estate: dict[str, Any],
    mailoutbox: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    client = estate["client"]
    capture = django_capture_on_commit_callbacks
    datasets, evidence, snapshot, hold = estate["datasets"], estate["evidence"], estate["snapshot"], estate["hold"]
    with capture(execute=True):
        assert client.post("/api/v1/tenant/close").status_code == 202
    closure = AccountClosure.objects.get(tenant=acme)
    assert closure.step == "waiting"
    assert closure.closes_at is not None
    assert closure.report["held"] == {str(hold.pk): 1}

    # The export bundle lists both volumes, not their data, and says until when the data stays.
    download = client.get(f"/api/v1/data-assets/{closure.export_id}/content")
    assert download.status_code == 200
    header, *lines = [json.loads(line) for line in download.content.splitlines()]
    assert header["volumes"] == 2
    earliest = closure.requested_at + shred_wait()
    assert "data is not in this export" in header["notice"]
    assert f"not before {earliest:%Y-%m-%d %H:%M} UTC" in header["notice"]
    assert "nothing can mount a volume to copy its data out" in header["notice"]
    listed = {line["id"]: line for line in lines}
    line = listed[datasets["data_asset"]]
    assert "content" not in line
    assert line["category"] == "volume"
    described = line["volume"]
    assert {k: described[k] for k in ("id", "name", "region", "kind", "size_gb", "state")} == {
        "id": datasets["id"],
        "name": "datasets",
        "region": "eu-west",
        "kind": "filesystem",
        "size_gb": 500,
        "state": "available",
    }
    assert [(s["id"], s["name"], s["size_gb"], s["state"]) for s in described["snapshots"]] == [
        (snapshot["id"], "before-close", 500, "ready")
    ]
    assert listed[evidence["data_asset"]]["volume"]["kind"] == "block"

    # Scheduled with the rest: not mounted nor billed now, its data (snapshot included) kept until closes_at.
    assert volume_state(client, datasets["id"]) == "deleting"
    assert client.get(f"{SNAPSHOTS}/{snapshot['id']}").json()["state"] == "deleting"
    assert (volume_dir(datasets["id"]) / "train.txt").read_text() == "the corpus"
    assert snapshot_dir(snapshot["id"]).is_dir()
    assert volume_state(client, evidence["id"]) == "available"  # under the hold

    # The owner is told when, and what becomes of each volume.
    note = Notification.objects.get(tenant=acme, kind="closure")
    assert note.subject == f"Ladder: Acme Robotics closes on {closure.closes_at:%Y-%m-%d}"
    assert f"On {closure.closes_at:%Y-%m-%d %H:%M} UTC the account is closed" in note.body
    assert f"Your export bundle is data asset {closure.export_id}: download it before then." in note.body
    assert (
        f"- volume datasets (eu-west, filesystem, 500 GB, 1 snapshot): destroyed on {closure.closes_at:%Y-%m-%d}"
        in note.body
    )
    assert f"- volume evidence (eu-west, block, 100 GB, 0 snapshots): kept: legal hold {hold.pk} preserves it" in (
        note.body
    )
    assert "1 volume of yours is listed here" in note.body
    [mail] = [m for m in mailoutbox if m.subject == note.subject]
    assert mail.to == ["alice@acme.test"]
    assert mail.body == note.body

    # At the end of the period: the key, then the volume and its snapshot.
    with capture(execute=True):
        report = retention_sweep(now=closure.closes_at + timedelta(seconds=1))
    assert report.closed == ["acme"]
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.CLOSED
    asset = DataAsset.objects.get(volume_id=datasets["id"])
    assert (asset.state, asset.wrapped_key, asset.shred_reason) == (AssetState.SHREDDED, None, "closure")
    assert Volume.objects.get(pk=datasets["id"]).state == "deleted"
    assert VolumeSnapshot.objects.get(pk=snapshot["id"]).state == "deleted"
    assert not volume_dir(datasets["id"]).exists()
    assert not snapshot_dir(snapshot["id"]).exists()
    shredded = AuditEvent.objects.get(action="data_asset.shredded", target_id=str(asset.pk))
    removed = AuditEvent.objects.get(action="volume.deleted", target_id=str(datasets["id"]))
    assert shredded.seq < removed.seq  # the key first, then the volume
    assert Volume.objects.get(pk=evidence["id"]).state == "available"
    assert volume_dir(evidence["id"]).is_dir()

    # Released, the held volume goes too.
    released = closure.closes_at + timedelta(days=1)
    legal_hold_release(hold=hold, reason="settled", actor=SYSTEM, now=released)
    with capture(execute=True):
        retention_sweep(now=released)
    assert Volume.objects.get(pk=evidence["id"]).state == "deleting"
    with capture(execute=True):
        report = retention_sweep(now=released + shred_wait() + timedelta(seconds=1))
    assert Volume.objects.get(pk=evidence["id"]).state == "deleted"
    assert not volume_dir(evidence["id"]).exists()
    assert report.shredded["volume"] == 1
    assert not Volume.objects.filter(tenant=acme).exclude(state="deleted").exists()


def test_a_closing_tenant_makes_and_grows_no_volume(
    api: Any, alice: Any, acme: Any, estate: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    client = estate["client"]
    datasets = estate["datasets"]
    tenant_close(tenant=acme, actor=SYSTEM)
    body = {"name": "late", "region": "eu-west", "kind": "filesystem", "size_gb": 10}
    with django_capture_on_commit_callbacks(execute=True):
        assert_problem(client.post(VOLUMES, body, format="json"), 403, "tenant_not_active")
        grown = client.patch(f"{VOLUMES}/{datasets['id']}", {"size_gb": 900}, format="json")
    assert_problem(grown, 403, "tenant_not_active")
    assert not Volume.objects.filter(name="late").exists()
    assert Volume.objects.get(pk=datasets["id"]).size_gb == 500
    assert AuditEvent.objects.filter(action="volume.created").count() == 2  # datasets and evidence only
    assert not AuditEvent.objects.filter(action="volume.grown").exists()
