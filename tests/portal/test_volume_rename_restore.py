"""A volume's portal page renames it and restores a ready snapshot into a new volume, through Django's test client:
the new name shows and is audited, a name in use or not a label is refused in the service's words; a restore asks a
name and a size (the snapshot's by default), lands on the new volume's page, and refuses a size below the
snapshot's, the quota, and a closing tenant in plain words; a snapshot not ready offers no restore; another tenant's
snapshot 404s and a viewer neither renames nor restores."""

from __future__ import annotations

from typing import Any

from core.models import AuditEvent
from provisioning.models import Volume, VolumeSnapshot
from tenancy.models import Membership, Tenant, TenantState
from tests.portal.test_volumes import fleet, made, run, sent, signed_in, storage_price, text
from tests.support import teammate

__all__ = ["fleet", "run"]  # the fixtures this file shares with test_volumes.py


def snapshot_of(volume: Volume, name: str = "nightly", state: str = "ready") -> VolumeSnapshot:
    return VolumeSnapshot.objects.create(
        tenant=volume.tenant, volume=volume, name=name, size_gb=volume.size_gb, state=state
    )


# --- renaming ----------------------------------------------------------------------------------------------------


def test_a_member_renames_a_volume_and_the_refusals_read_as_the_services(
    alice: Any, acme: Tenant, fleet: Any, run: Any
) -> None:
    volume = run(made, acme)
    run(made, acme, "weights", size_gb=10)
    client = signed_in(alice)
    url = f"/portal/volumes/{volume.pk}"
    page = text(client.get(url))
    assert 'name="name" value="datasets"' in page  # the form starts from the name it has
    renamed = sent(run, client, url, {"form": "rename", "name": "training-data"})
    assert "datasets is now named training-data." in text(renamed)
    assert "<h1>training-data</h1>" in text(renamed)
    volume.refresh_from_db()
    assert volume.name == "training-data"
    [event] = AuditEvent.objects.filter(action="volume.renamed")
    assert (event.actor_label, event.data) == (alice.username, {"name": {"old": "datasets", "new": "training-data"}})

    taken = run(client.post, url, {"form": "rename", "name": "weights"})
    assert taken.status_code == 422
    assert "You already have a volume named weights." in text(taken)
    bad = run(client.post, url, {"form": "rename", "name": "Not A Label"})
    assert bad.status_code == 422
    assert "is not a valid name: lower-case letters" in text(bad)
    volume.refresh_from_db()
    assert volume.name == "training-data"
    assert AuditEvent.objects.filter(action="volume.renamed").count() == 1


# --- restoring a snapshot ----------------------------------------------------------------------------------------


def test_a_ready_snapshot_restores_into_a_new_volume_of_its_region_and_kind(
    alice: Any, acme: Tenant, fleet: Any, run: Any
) -> None:
    storage_price("0.0001")
    volume = run(made, acme)
    ready = snapshot_of(volume)
    creating = snapshot_of(volume, "in-progress", state="creating")
    client = signed_in(alice)
    page = text(client.get(f"/portal/volumes/{volume.pk}"))
    restore = f"/portal/volumes/{volume.pk}/snapshots/{ready.pk}/restore"
    assert f'<a href="{restore}">Restore nightly</a>' in page
    assert "Restore in-progress" not in page  # only a ready snapshot restores

    form = client.get(restore)
    assert form.status_code == 200
    assert "Restore the snapshot nightly of datasets" in text(form)
    assert 'name="size_gb" value="500"' in text(form)  # the snapshot's size, to start from
    assert "At 500 GB it costs 36.50 USD a month" in text(form)

    smaller = run(client.post, restore, {"name": "copy", "size_gb": "100"})
    assert smaller.status_code == 422
    assert f"Snapshot {ready.pk} holds 500 GB: the new volume needs at least that." in text(smaller)
    taken = run(client.post, restore, {"name": "datasets", "size_gb": "500"})
    assert "You already have a volume named datasets." in text(taken)
    assert Volume.objects.count() == 1

    restored = run(client.post, restore, {"name": "copy", "size_gb": "800"})
    assert restored.status_code == 302
    copy = Volume.objects.get(tenant=acme, name="copy")
    assert restored["Location"] == f"/portal/volumes/{copy.pk}"
    assert "The volume copy is made from the snapshot nightly: 800 GB." in text(client.get(restored["Location"]))
    assert (copy.region_id, copy.kind, copy.size_gb, copy.restored_from_id) == (
        volume.region_id,
        "filesystem",
        800,
        ready.pk,
    )
    [event] = AuditEvent.objects.filter(action="volume.created", target_id=str(copy.pk))
    assert (event.actor_label, event.data["restored_from"]) == (alice.username, ready.pk)
    assert client.get(f"/portal/volumes/{volume.pk}/snapshots/{creating.pk}/restore").status_code == 200
    not_ready = run(
        client.post, f"/portal/volumes/{volume.pk}/snapshots/{creating.pk}/restore", {"name": "x", "size_gb": "500"}
    )
    assert f"Snapshot {creating.pk} is creating: only a ready one restores." in text(not_ready)


def test_a_restore_over_the_storage_quota_is_refused_in_plain_words(
    alice: Any, acme: Tenant, fleet: Any, run: Any
) -> None:
    volume = run(made, acme)
    ready = snapshot_of(volume)
    Tenant.objects.filter(pk=acme.pk).update(volume_quota_gb=800)
    over = run(
        signed_in(alice).post,
        f"/portal/volumes/{volume.pk}/snapshots/{ready.pk}/restore",
        {"name": "copy", "size_gb": "500"},
    )
    assert over.status_code == 422
    assert "over your storage quota of 800 GB (500 GB in use)" in text(over)
    assert list(Volume.objects.values_list("name", flat=True)) == ["datasets"]


# --- the rules every page keeps ----------------------------------------------------------------------------------


def test_another_tenant_cannot_restore_or_rename_and_a_viewer_only_reads(
    alice: Any, charlie: Any, acme: Tenant, fleet: Any, run: Any
) -> None:
    volume = run(made, acme)
    ready = snapshot_of(volume)
    restore = f"/portal/volumes/{volume.pk}/snapshots/{ready.pk}/restore"
    other = signed_in(charlie)
    assert other.get(restore).status_code == 404
    assert run(other.post, restore, {"name": "mine", "size_gb": "500"}).status_code == 404
    assert run(other.post, f"/portal/volumes/{volume.pk}", {"form": "rename", "name": "mine"}).status_code == 404

    teammate(acme, "viewer")
    viewer = signed_in(Membership.objects.get(role="viewer").user)
    page = text(viewer.get(f"/portal/volumes/{volume.pk}"))
    assert "Rename datasets" not in page
    assert "Restore nightly" not in page
    assert viewer.get(restore).status_code == 403
    assert run(viewer.post, restore, {"name": "mine", "size_gb": "500"}).status_code == 403
    assert run(viewer.post, f"/portal/volumes/{volume.pk}", {"form": "rename", "name": "mine"}).status_code == 403
    assert list(Volume.objects.values_list("name", flat=True)) == ["datasets"]


def test_a_closing_tenant_neither_renames_nor_restores(alice: Any, acme: Tenant, fleet: Any, run: Any) -> None:
    volume = run(made, acme)
    ready = snapshot_of(volume)
    Tenant.objects.filter(pk=acme.pk).update(state=TenantState.CLOSING)
    client = signed_in(alice)
    events = AuditEvent.objects.count()
    refusal = "The tenant is closing: it can read but not change anything."
    renamed = client.post(f"/portal/volumes/{volume.pk}", {"form": "rename", "name": "other"})
    restored = client.post(f"/portal/volumes/{volume.pk}/snapshots/{ready.pk}/restore", {"name": "c", "size_gb": 500})
    assert refusal in text(renamed)
    assert refusal in text(restored)
    assert AuditEvent.objects.count() == events
    assert list(Volume.objects.values_list("name", flat=True)) == ["datasets"]
