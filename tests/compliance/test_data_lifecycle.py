"""The data lifecycle through the services: registration, residency, encryption, deletion, holds, the sweep."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from compliance import storage
from compliance.domain import envelope
from compliance.models import AssetState, DataAsset, TenantKey
from compliance.services.assets import AssetScope, data_asset_content, data_asset_delete, data_asset_shred_cancel
from compliance.services.holds import legal_hold_create, legal_hold_release
from compliance.services.sweep import retention_policy_set, retention_sweep
from core.errors import ServiceError
from core.models import AuditEvent
from tests.support import SYSTEM
from tests.support.data import T0, asset, regions

WAIT = timedelta(days=7)


@pytest.fixture
def fleet(db):
    return regions()


def test_it_stores_content_encrypted_and_reads_it_back(acme, fleet):
    made = asset(acme, content=b"the training set")
    assert made.size_bytes == 16
    assert made.key_id
    assert made.location.startswith("file://")
    assert b"the training set" not in storage.blob_get(made.location)
    assert data_asset_content(asset=made) == b"the training set"


def test_it_refuses_data_outside_the_tenants_residency(acme, fleet):
    acme.residency_jurisdictions = ["EU"]
    acme.save()
    with pytest.raises(ServiceError) as refused:
        asset(acme, region="us-east")
    assert refused.value.code == "residency"
    assert not DataAsset.objects.exists()


def test_a_sovereign_tenants_data_stays_in_a_region_fenced_for_it(acme, fleet):
    acme.residency_jurisdictions, acme.sovereign = ["EU"], True
    acme.save()
    assert asset(acme, region="eu-west").region.code == "eu-west"
    with pytest.raises(ServiceError, match="outside"):
        asset(acme, region="us-east")


def test_zero_retention_refuses_to_persist(acme, fleet):
    retention_policy_set(tenant=acme, category="inference_payload", days=None, zero_retention=True, actor=SYSTEM)
    with pytest.raises(ServiceError) as refused:
        asset(acme, category="inference_payload", content=b"prompt")
    assert refused.value.code == "zero_retention"
    assert not DataAsset.objects.exists()


def test_finance_records_cannot_be_shortened_below_the_legal_minimum(acme, fleet):
    for days, zero in ((365, False), (None, True)):
        with pytest.raises(ServiceError) as refused:
            retention_policy_set(tenant=acme, category="invoice", days=days, zero_retention=zero, actor=SYSTEM)
        assert refused.value.code == "below_legal_minimum"
    retention_policy_set(tenant=acme, category="invoice", days=4000, zero_retention=False, actor=SYSTEM)


def test_a_delete_waits_then_shreds_and_the_content_is_gone_for_good(acme, fleet, django_capture_on_commit_callbacks):
    made = asset(acme, content=b"secret weights", category="checkpoint")
    data_asset_delete(asset=made, actor=SYSTEM, now=T0)
    made.refresh_from_db()
    assert made.state == AssetState.SHREDDING
    assert made.shred_after == T0 + WAIT
    with pytest.raises(ServiceError) as refused:
        data_asset_content(asset=made)
    assert refused.value.code == "asset_shredding"
    retention_sweep(now=T0 + WAIT - timedelta(seconds=1))
    made.refresh_from_db()
    assert made.state == AssetState.SHREDDING
    ciphertext = storage.blob_get(made.location)
    with django_capture_on_commit_callbacks(execute=True):
        retention_sweep(now=T0 + WAIT)
    made.refresh_from_db()
    assert made.state == AssetState.SHREDDED
    assert made.wrapped_key is None
    assert not storage.blob_exists(made.location)
    evidence = AuditEvent.objects.get(action="data_asset.shredded", target_id=str(made.pk))
    assert evidence.data["key_id"] == made.key_id
    assert evidence.data["reason"] == "delete"
    # No key left anywhere opens what a backup may still hold.
    tenant_key = TenantKey.objects.get(tenant=acme)
    assert tenant_key.wrapped is not None
    with pytest.raises(envelope.EnvelopeError):
        envelope.decrypt(ciphertext, envelope.new_data_key(), asset_id=made.pk)


def test_a_delete_can_be_cancelled_during_the_waiting_period(acme, fleet):
    made = asset(acme, content=b"keep me")
    data_asset_delete(asset=made, actor=SYSTEM, now=T0)
    data_asset_shred_cancel(asset=made, actor=SYSTEM)
    retention_sweep(now=T0 + WAIT * 2)
    made.refresh_from_db()
    assert made.state == AssetState.LIVE
    assert data_asset_content(asset=made) == b"keep me"


def test_a_hold_refuses_a_delete_and_stops_a_pending_shredding(acme, fleet):
    held = asset(acme, category="job_log")
    waiting = asset(acme, category="job_log", name="other")
    data_asset_delete(asset=waiting, actor=SYSTEM, now=T0)
    hold = legal_hold_create(
        tenant=acme,
        matter="Acme v. Initech",
        reason="litigation",
        scope=AssetScope(categories=["job_log"]),
        lock_until=None,
        actor=SYSTEM,
        now=T0,
    )
    with pytest.raises(ServiceError) as refused:
        data_asset_delete(asset=held, actor=SYSTEM)
    assert refused.value.code == "legal_hold"
    assert refused.value.extra["holds"] == [hold.pk]
    waiting.refresh_from_db()
    assert waiting.state == AssetState.LIVE
    legal_hold_release(hold=hold, reason="settled", actor=SYSTEM, now=T0 + timedelta(days=1))
    waiting.refresh_from_db()
    assert waiting.state == AssetState.LIVE  # releasing deletes nothing by itself


def test_the_sweep_shreds_expired_data_and_reports_what_holds_kept(acme, fleet, capsys):
    old_logs = [asset(acme, category="job_log") for _ in range(3)]
    young = asset(acme, category="job_log", at=T0 + timedelta(days=80))
    invoice = asset(acme, category="invoice")
    hold = legal_hold_create(
        tenant=acme,
        matter="audit 2026",
        reason="tax audit",
        lock_until=None,
        actor=SYSTEM,
        now=T0,
        scope=AssetScope(categories=["job_log"], created_to=T0 + timedelta(hours=1)),
    )
    day91 = T0 + timedelta(days=91)
    call_command("retention_sweep", "--now", day91.isoformat(), "--dry-run")
    assert "kept by legal hold" in capsys.readouterr().out
    assert not DataAsset.objects.exclude(state=AssetState.LIVE).exists()
    legal_hold_release(hold=hold, reason="done", actor=SYSTEM, now=day91)
    call_command("retention_sweep", "--now", day91.isoformat())
    out = capsys.readouterr().out
    assert "scheduled for shredding (did): 3 (3 job_log)" in out
    call_command("retention_sweep", "--now", (day91 + WAIT).isoformat())
    assert "shredded (did): 3" in capsys.readouterr().out
    states = dict(DataAsset.objects.values_list("pk", "state"))
    assert {states[a.pk] for a in old_logs} == {"shredded"}
    assert states[young.pk] == states[invoice.pk] == "live"


def test_master_key_rotation_keeps_everything_readable(acme, fleet, settings, capsys):
    settings.LADDER_MASTER_KEYS = envelope.generate_master_key("mk-old")
    made = asset(acme, content=b"rotate me")
    before = DataAsset.objects.get(pk=made.pk).wrapped_key
    settings.LADDER_MASTER_KEYS = envelope.generate_master_key("mk-new") + "," + settings.LADDER_MASTER_KEYS
    call_command("master_key_rotate")
    assert "1 re-wrapped" in capsys.readouterr().out
    assert TenantKey.objects.get(tenant=acme).master_id == "mk-new"
    settings.LADDER_MASTER_KEYS = settings.LADDER_MASTER_KEYS.split(",")[0]  # the old master is gone
    made.refresh_from_db()
    assert made.wrapped_key == before  # data keys untouched
    assert data_asset_content(asset=made) == b"rotate me"


def test_the_daily_beat_runs_the_sweep(acme, fleet, settings):
    from compliance.tasks import retention_sweep_scheduled

    assert settings.CELERY_BEAT_SCHEDULE["retention-sweep"]["task"] == "compliance.tasks.retention_sweep_scheduled"
    asset(acme, category="job_log", at=timezone.now() - timedelta(days=91))  # by the clock the task reads: expired
    report = retention_sweep_scheduled.delay().get()
    assert report["scheduled"] == {"job_log": 1}


def test_the_sweep_command_refuses_a_bad_moment(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="not an ISO-8601"):
        call_command("retention_sweep", "--now", "yesterday")


def test_the_admin_shows_data_but_offers_no_way_around_a_hold(admin_client, acme, fleet):
    made = asset(acme)
    assert admin_client.get("/admin/compliance/dataasset/").status_code == 200
    assert admin_client.get(f"/admin/compliance/dataasset/{made.pk}/change/").status_code == 200
    assert admin_client.get(f"/admin/compliance/dataasset/{made.pk}/delete/").status_code == 403
    assert admin_client.get("/admin/compliance/legalhold/add/").status_code == 403


def test_a_move_that_loses_a_race_leaves_no_copy_behind(acme, fleet, monkeypatch):
    from compliance.services.assets import data_asset_move

    made = asset(acme, content=b"moving")
    copies = []
    real_put = storage.blob_put

    def put_while_deleted(**kwargs):
        copies.append(real_put(**kwargs))
        DataAsset.objects.filter(pk=made.pk).update(state=AssetState.SHREDDING)  # deleted while the copy was made
        return copies[-1]

    monkeypatch.setattr(storage, "blob_put", put_while_deleted)
    with pytest.raises(ServiceError) as refused:
        data_asset_move(asset=made, region="us-east", actor=SYSTEM)
    assert refused.value.code == "asset_not_live"
    made.refresh_from_db()
    assert made.region.code == "eu-west"
    assert storage.blob_exists(made.location)
    assert copies
    assert not storage.blob_exists(copies[0])
