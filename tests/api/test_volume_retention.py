"""Retention reaches volumes: kept until deleted by default, a tenant's own rule for the category ``volume``
deletes an old volume through the sweep (deleting at once, its key then the volume destroyed after the waiting
period), a legal hold beats the rule, and a volume running work still mounts is deferred, named in the sweep's
report, and deleted by the first sweep after the work ends."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from billing.models import UsageInterval
from compliance.domain.retention import MAX_DAYS
from compliance.models import AssetState, DataAsset
from compliance.services.assets import AssetScope, shred_wait
from compliance.services.holds import legal_hold_create, legal_hold_release
from compliance.services.sweep import retention_sweep
from core.models import AuditEvent
from tests.support import SYSTEM, assert_problem
from tests.support.data import regions
from tests.support.volumes import mount, stop, volume_dir, volume_made_at, volume_make, volume_state

POLICY = "/api/v1/retention-policies/volume"


@pytest.fixture
def fleet(db: None) -> Any:
    return regions()


def thirty_days(client: Any) -> None:
    response = client.put(POLICY, {"days": 30}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["days"], response.json()["source"]) == (30, "tenant")


def test_volumes_are_kept_until_deleted_unless_the_tenant_sets_a_rule(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    default = client.get(POLICY).json()
    assert (default["days"], default["source"], default["zero_retention"]) == (MAX_DAYS, "default", False)
    volume = volume_make(client, django_capture_on_commit_callbacks)
    volume_made_at(volume["id"], timezone.now() - timedelta(days=3 * 365))
    report = retention_sweep(now=timezone.now())
    assert report.scheduled == {}
    assert volume_state(client, volume["id"]) == "available"


def test_a_tenants_30_day_rule_deletes_an_old_volume_after_the_waiting_period(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    now = timezone.now()
    old = volume_make(client, capture, name="old")
    young = volume_make(client, capture, name="young")
    volume_made_at(old["id"], now - timedelta(days=40))
    (volume_dir(old["id"]) / "train.txt").write_text("the corpus")
    thirty_days(client)

    with capture(execute=True):
        report = retention_sweep(now=now)
    assert report.scheduled == {"volume": 1}
    assert report.deferred == {}
    assert volume_state(client, old["id"]) == "deleting"  # no longer mounted by new work nor billed
    assert volume_state(client, young["id"]) == "available"
    meter = UsageInterval.objects.get(volume_id=old["id"])
    assert meter.end_ms is not None
    asset = DataAsset.objects.get(volume_id=old["id"])
    assert (asset.state, asset.shred_reason, asset.shred_after) == (
        AssetState.SHREDDING,
        "retention",
        now + shred_wait(),
    )
    assert (volume_dir(old["id"]) / "train.txt").read_text() == "the corpus"  # kept through the waiting period
    deleting = AuditEvent.objects.get(action="volume.deleting", target_id=str(old["id"]))
    assert deleting.data["reason"] == "retention"

    with capture(execute=True):
        report = retention_sweep(now=now + shred_wait() - timedelta(seconds=1))
    assert report.shredded == {}
    with capture(execute=True):
        report = retention_sweep(now=now + shred_wait() + timedelta(seconds=1))
    assert report.shredded == {"volume": 1}
    asset.refresh_from_db()
    assert (asset.state, asset.wrapped_key) == (AssetState.SHREDDED, None)
    assert volume_state(client, old["id"]) == "deleted"
    assert not volume_dir(old["id"]).exists()
    assert client.get(f"/api/v1/volumes/{old['id']}").json()["key_id"] == ""
    evidence = AuditEvent.objects.get(action="data_asset.shredded", target_id=str(asset.pk)).data
    assert (evidence["category"], evidence["reason"], evidence["key_id"]) == ("volume", "retention", old["key_id"])
    assert volume_state(client, young["id"]) == "available"  # eight days old: within its thirty


def test_a_legal_hold_beats_the_rule(
    api: Any, alice: Any, acme: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    now = timezone.now()
    volume = volume_make(client, capture)
    volume_made_at(volume["id"], now - timedelta(days=40))
    thirty_days(client)
    hold = legal_hold_create(
        tenant=acme,
        matter="Acme v. Initech",
        reason="preserve the training data",
        scope=AssetScope(categories=["volume"]),
        lock_until=None,
        actor=SYSTEM,
    )
    with capture(execute=True):
        report = retention_sweep(now=now)
    assert report.scheduled == {}
    assert report.held == {hold.pk: 1}
    assert volume_state(client, volume["id"]) == "available"
    assert DataAsset.objects.get(volume_id=volume["id"]).state == AssetState.LIVE

    legal_hold_release(hold=hold, reason="settled", actor=SYSTEM, now=now + timedelta(days=1))
    assert volume_state(client, volume["id"]) == "available"  # releasing deletes nothing by itself
    with capture(execute=True):
        report = retention_sweep(now=now + timedelta(days=1))
    assert report.scheduled == {"volume": 1}
    assert volume_state(client, volume["id"]) == "deleting"


def test_a_volume_running_work_mounts_is_deferred_and_said_so_until_the_work_ends(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    now = timezone.now()
    volume = volume_make(client, capture)
    volume_made_at(volume["id"], now - timedelta(days=40))
    thirty_days(client)
    work = mount(client, capture, volume["id"])
    assert volume_state(client, volume["id"]) == "attached"

    report = retention_sweep(now=now)
    assert report.deferred == {volume["id"]: [work["id"]]}
    assert report.scheduled == {}
    assert report.counts()["deferred"] == 1
    assert report.as_dict()["deferred"] == {str(volume["id"]): [work["id"]]}
    assert volume_state(client, volume["id"]) == "attached"  # the running work keeps its disk
    assert DataAsset.objects.get(volume_id=volume["id"]).state == AssetState.LIVE
    said = io.StringIO()
    call_command("retention_sweep", "--now", now.isoformat(), "--dry-run", stdout=said)
    assert (
        f"deferred: volume {volume['id']} (acme/datasets) is expired but mounted by allocation {work['id']}"
        in said.getvalue()
    )

    stop(client, capture, work["id"])
    assert volume_state(client, volume["id"]) == "available"
    with capture(execute=True):
        report = retention_sweep(now=now + timedelta(hours=1))
    assert report.deferred == {}
    assert report.scheduled == {"volume": 1}
    assert volume_state(client, volume["id"]) == "deleting"
    # Going away, it is mounted by no new work.
    body = {
        "name": "late",
        "rung": "container",
        "gpu_model": "H100-SXM-80GB",
        "gpus": 1,
        "workload": {
            "image": "nvcr.io/nvidia/pytorch:25.01-py3",
            "volumes": [{"volume": volume["id"], "mount_path": "/d"}],
        },
    }
    assert_problem(client.post("/api/v1/allocations", body, format="json"), 409, "volume_state")
