"""/api/v1/volumes on the simulated fleet: a volume's life (create, grow, rename, snapshot, restore, delete), every
refusal code, a filesystem shared by a job's members and a container, a block volume as a VM's disk, read-only
mounts on serverless, placement that follows the data, legal holds, and the cross-tenant rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from billing.models import Sku, UsageInterval
from compliance.models import AssetState, DataAsset
from compliance.services.assets import AssetScope, assets_shred
from compliance.services.holds import legal_hold_create
from core.models import AuditEvent
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Volume
from tenancy.models import Tenant
from tests.support import SYSTEM, assert_problem
from tests.support.data import regions

URL = "/api/v1/volumes"
H100 = "H100-SXM-80GB"
IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"


@pytest.fixture
def fleet(db: None) -> Any:
    return regions()


def create(client: Any, capture: Any, **body: Any) -> Any:
    body.setdefault("name", "datasets")
    body.setdefault("region", "eu-west")
    body.setdefault("kind", "filesystem")
    body.setdefault("size_gb", 500)
    with capture(execute=True):
        return client.post(URL, body, format="json")


def made(client: Any, capture: Any, **body: Any) -> dict[str, Any]:
    """The volume as read once the backend's step (a task queued on commit) has run."""
    response = create(client, capture, **body)
    assert response.status_code == 201, response.content
    assert response.json()["state"] == "creating"
    fresh: dict[str, Any] = client.get(f"{URL}/{response.json()['id']}").json()
    return fresh


def launch(client: Any, capture: Any, rung: str, volumes: list[dict[str, Any]], **shape: Any) -> Any:
    workload: dict[str, Any] = {"volumes": volumes}
    if rung in ("vm", "bare_metal"):
        workload["os_image"] = "ubuntu-24.04"
    else:
        workload["image"] = IMAGE
    body = {"name": f"my-{rung}", "rung": rung, "gpu_model": H100, "workload": workload}
    body.update(shape)
    with capture(execute=True):
        return client.post("/api/v1/allocations", body, format="json")


def refused(response: Any, status: int, code: str, field: str | None = None) -> dict[str, Any]:
    """A problem with this status and code that names ``field``."""
    body = assert_problem(response, status, code)
    if field is not None:
        assert field in (body.get("errors") or {}) or body.get("field") == field, body
    return body


def volume_dir(volume_id: int) -> Path:
    volume = Volume.objects.select_related("tenant").get(pk=volume_id)
    return Path(settings.LADDER_SIM_VOLUME_DIR) / volume.tenant.slug / volume.backend_name


# --- a volume's life ------------------------------------------------------------------------------------------


def test_a_volume_is_made_with_its_own_key_and_is_available_once_the_backend_has_it(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    body = made(client, django_capture_on_commit_callbacks)
    assert body["name"] == "datasets"
    assert (body["region"], body["kind"], body["size_gb"]) == ("eu-west", "filesystem", 500)
    assert body["state"] == "available"  # the simulated backend has it at once
    assert body["access_mode"] == "ReadWriteMany"
    assert body["attached_to"] == []
    assert body["key_id"]
    assert volume_dir(body["id"]).is_dir()

    asset = DataAsset.objects.get(pk=body["data_asset"])
    assert (asset.category, asset.region.code, asset.size_bytes) == ("volume", "eu-west", 500 * 1024**3)
    assert asset.wrapped_key
    assert asset.key_id == body["key_id"]
    assert client.get(f"{URL}/{body['id']}").json() == body
    assert [v["id"] for v in client.get(URL).json()["results"]] == [body["id"]]
    actions = set(AuditEvent.objects.filter(target_type="volume").values_list("action", flat=True))
    assert {"volume.created", "volume.available"} <= actions

    block = made(client, django_capture_on_commit_callbacks, name="vm-disk", kind="block", size_gb=100)
    assert block["access_mode"] == "ReadWriteOnce"


def test_it_grows_never_shrinks_and_renames(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    body = made(client, django_capture_on_commit_callbacks)
    url = f"{URL}/{body['id']}"
    grown = client.patch(url, {"size_gb": 800}, format="json")
    assert grown.status_code == 200, grown.content
    assert grown.json()["size_gb"] == 800
    assert DataAsset.objects.get(volume_id=body["id"]).size_bytes == 800 * 1024**3
    refused(client.patch(url, {"size_gb": 700}, format="json"), 422, "validation_error", field="size_gb")
    renamed = client.patch(url, {"name": "corpus"}, format="json")
    assert renamed.json()["name"] == "corpus"
    refused(client.patch(url, {"name": "Not A Label"}, format="json"), 422, "validation_error", field="name")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "UPPER"}, "name"),
        ({"kind": "tape"}, "kind"),
        ({"size_gb": 0}, "size_gb"),
        ({"size_gb": 100_001}, "size_gb"),
        ({"region": "mars-1"}, "region"),
        ({"size_gb": "lots"}, "size_gb"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any, body: dict[str, Any], field: str
) -> None:
    response = create(api(alice), django_capture_on_commit_callbacks, **body)
    assert response.status_code == 422, response.content
    problem = response.json()
    assert problem["code"] == "validation_error"
    assert field in (problem.get("errors") or {}) or problem.get("field") == field
    assert not Volume.objects.exists()


def test_residency_quota_and_names_are_refused_with_their_codes(
    api: Any, alice: Any, acme: Tenant, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    Tenant.objects.filter(pk=acme.pk).update(residency_regions=["eu-west"], volume_quota_gb=1000)
    assert_problem(create(client, django_capture_on_commit_callbacks, region="us-east"), 409, "residency")
    made(client, django_capture_on_commit_callbacks, size_gb=600)
    assert_problem(create(client, django_capture_on_commit_callbacks, name="more", size_gb=500), 409, "quota")
    assert_problem(create(client, django_capture_on_commit_callbacks, size_gb=10), 409, "name_taken")
    volume = Volume.objects.get()
    assert_problem(client.patch(f"{URL}/{volume.pk}", {"size_gb": 1001}, format="json"), 409, "quota")
    assert Volume.objects.count() == 1


def test_another_tenants_volume_is_not_found(
    api: Any, alice: Any, charlie: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    body = made(api(alice), django_capture_on_commit_callbacks)
    other = api(charlie)
    url = f"{URL}/{body['id']}"
    assert other.get(url).status_code == 404
    assert other.patch(url, {"size_gb": 900}, format="json").status_code == 404
    assert other.delete(url).status_code == 404
    assert other.post(f"{url}/snapshots", {"name": "x"}, format="json").status_code == 404
    assert other.get(URL).json()["results"] == []
    response = launch(
        other, django_capture_on_commit_callbacks, "container", [{"volume": body["id"], "mount_path": "/d"}], gpus=1
    )
    assert_problem(response, 422, "validation_error")


# --- attached on every rung -------------------------------------------------------------------------------------


def test_a_jobs_members_and_a_container_share_a_filesystem_and_a_vm_takes_a_block_disk(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    shared = made(client, django_capture_on_commit_callbacks)
    disk = made(client, django_capture_on_commit_callbacks, name="vm-disk", kind="block", size_gb=100)
    capture = django_capture_on_commit_callbacks

    job = launch(client, capture, "job", [{"volume": shared["id"], "mount_path": "/data"}], gpus=2, gang={"size": 2})
    assert job.status_code == 201, job.content
    box = launch(
        client, capture, "container", [{"volume": shared["id"], "mount_path": "/data", "read_only": True}], gpus=1
    )
    assert box.status_code == 201, box.content
    vm = launch(client, capture, "vm", [{"volume": disk["id"], "mount_path": "/mnt/disk"}], gpus=1)
    assert vm.status_code == 201, vm.content

    shown = client.get(f"{URL}/{shared['id']}").json()
    assert shown["state"] == "attached"
    assert shown["attached_to"] == sorted([job.json()["id"], box.json()["id"]])
    assert client.get(f"{URL}/{disk['id']}").json()["attached_to"] == [vm.json()["id"]]

    # A block volume takes one attachment; a filesystem is not for a confidential VM, a block not for a container.
    again = launch(client, capture, "vm", [{"volume": disk["id"], "mount_path": "/mnt/disk"}], gpus=1)
    assert_problem(again, 409, "volume_in_use")
    wrong_kind = launch(client, capture, "container", [{"volume": disk["id"], "mount_path": "/d"}], gpus=1)
    refused(wrong_kind, 422, "validation_error", field="workload.volumes.0.volume")

    # Mounted volumes are not deleted; once the work ends they are free again.
    assert_problem(client.delete(f"{URL}/{shared['id']}"), 409, "volume_in_use")
    for allocation in (job, box, vm):
        with capture(execute=True):
            assert client.delete(f"/api/v1/allocations/{allocation.json()['id']}").status_code in (200, 202)
    allocations_reconcile()
    assert client.get(f"{URL}/{shared['id']}").json()["attached_to"] == []
    assert client.get(f"{URL}/{shared['id']}").json()["state"] == "available"


def test_serverless_mounts_read_only_and_placement_follows_the_data(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    cache = made(client, capture, name="weights")
    us = made(client, capture, name="us-data", region="us-east")
    serve = {"mig_profile": "1g.10gb"}
    writable = launch(client, capture, "serverless", [{"volume": cache["id"], "mount_path": "/models"}], **serve)
    refused(writable, 422, "validation_error", field="workload.volumes.0.read_only")
    read_only = [{"volume": cache["id"], "mount_path": "/models", "read_only": True}]
    endpoint = launch(client, capture, "serverless", read_only, **serve)
    assert endpoint.status_code == 201, endpoint.content
    assert endpoint.json()["region"] == "eu-west"

    elsewhere = launch(
        client, capture, "container", [{"volume": us["id"], "mount_path": "/d"}], gpus=1, regions=["eu-west"]
    )
    assert_problem(elsewhere, 409, "residency")
    assert "us-data" in elsewhere.json()["detail"]
    followed = launch(
        client, capture, "container", [{"volume": us["id"], "mount_path": "/d"}], gpus=1, gpu_model="H200-141GB"
    )
    assert followed.status_code == 201, followed.content
    assert followed.json()["region"] == "us-east"


# --- snapshots, deletion, holds -----------------------------------------------------------------------------------


def test_a_snapshot_restores_into_a_new_volume_with_the_data(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    body = made(client, capture)
    (volume_dir(body["id"]) / "train.txt").write_text("the corpus")
    with capture(execute=True):
        snap = client.post(f"{URL}/{body['id']}/snapshots", {"name": "before-cleanup"}, format="json")
    assert snap.status_code == 201, snap.content
    assert client.get(f"/api/v1/volume-snapshots/{snap.json()['id']}").json()["state"] == "ready"
    restored = made(client, capture, name="restored", snapshot=snap.json()["id"])
    assert restored["restored_from"] == snap.json()["id"]
    assert (volume_dir(restored["id"]) / "train.txt").read_text() == "the corpus"
    assert_problem(
        create(client, capture, name="small", snapshot=snap.json()["id"], size_gb=10), 422, "validation_error"
    )
    assert_problem(
        create(client, capture, name="other", snapshot=snap.json()["id"], kind="block"), 422, "validation_error"
    )


def test_delete_stops_billing_then_shredding_destroys_the_key_and_the_volume(
    api: Any, alice: Any, acme: Tenant, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    body = made(client, capture)
    meter = UsageInterval.objects.get(volume_id=body["id"])
    assert meter.end_ms is None
    assert meter.units_milli == 500_000
    assert Sku.objects.get(pk=meter.sku_id).code == "storage/filesystem/eu-west"

    with capture(execute=True):
        deleted = client.delete(f"{URL}/{body['id']}")
    assert deleted.status_code == 202, deleted.content
    assert deleted.json()["state"] == "deleting"
    assert UsageInterval.objects.get(volume_id=body["id"], start_ms=meter.start_ms).end_ms is not None
    asset = DataAsset.objects.get(volume_id=body["id"])
    assert asset.state == AssetState.SHREDDING
    assert asset.shred_reason == "delete"
    assert volume_dir(body["id"]).is_dir()  # the data stays through the waiting period

    with capture(execute=True):
        assets_shred(tenant=acme, assets=[asset], actor=SYSTEM, now=timezone.now())
    asset.refresh_from_db()
    assert asset.wrapped_key is None
    assert asset.state == AssetState.SHREDDED
    assert Volume.objects.get(pk=body["id"]).state == "deleted"
    assert not volume_dir(body["id"]).exists()
    # Its name is free again.
    made(client, capture)


def test_a_shredded_volume_whose_destroy_task_was_lost_goes_at_the_next_reconcile(
    api: Any, alice: Any, acme: Tenant, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    body = made(client, capture)
    with capture(execute=True):
        client.delete(f"{URL}/{body['id']}")
    asset = DataAsset.objects.get(volume_id=body["id"])
    with capture(execute=False):  # the destroy task queued on commit is lost
        assets_shred(tenant=acme, assets=[asset], actor=SYSTEM, now=timezone.now())
    assert Volume.objects.get(pk=body["id"]).state == "deleting"
    assert volume_dir(body["id"]).is_dir()
    allocations_reconcile()
    assert Volume.objects.get(pk=body["id"]).state == "deleted"
    assert not volume_dir(body["id"]).exists()


def test_a_legal_hold_blocks_deleting_a_volume_and_its_snapshots(
    api: Any, alice: Any, acme: Tenant, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    body = made(client, capture)
    with capture(execute=True):
        snap = client.post(f"{URL}/{body['id']}/snapshots", {"name": "s1"}, format="json").json()
    hold = legal_hold_create(
        tenant=acme,
        matter="Acme v. Initech",
        reason="preserve",
        scope=AssetScope(categories=["volume"]),
        lock_until=None,
        actor=SYSTEM,
    )
    response = client.delete(f"{URL}/{body['id']}")
    assert_problem(response, 409, "legal_hold")
    assert response.json()["holds"] == [hold.pk]
    assert_problem(client.delete(f"/api/v1/volume-snapshots/{snap['id']}"), 409, "legal_hold")
    assert Volume.objects.get(pk=body["id"]).state == "available"


def test_work_placed_while_a_volume_is_created_finds_it_attached_once_ready(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    with django_capture_on_commit_callbacks(execute=False):  # the backend has not answered yet
        body = client.post(
            URL, {"name": "early", "region": "eu-west", "kind": "filesystem", "size_gb": 5}, format="json"
        )
    assert body.status_code == 201, body.content
    body = body.json()
    assert body["state"] == "creating"
    box = launch(
        client, django_capture_on_commit_callbacks, "container", [{"volume": body["id"], "mount_path": "/d"}], gpus=1
    )
    assert box.status_code == 201, box.content
    allocations_reconcile()  # reconciliation finishes what the lost step left
    shown = client.get(f"{URL}/{body['id']}").json()
    assert (shown["state"], shown["attached_to"]) == ("attached", [box.json()["id"]])


def test_a_volumes_data_asset_changes_only_with_its_volume(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    body = made(client, django_capture_on_commit_callbacks)
    asset = f"/api/v1/data-assets/{body['data_asset']}"
    assert client.get(asset).json()["category"] == "volume"
    for response in (
        client.delete(asset),
        client.post(f"{asset}/move", {"region": "us-east"}, format="json"),
        client.get(f"{asset}/content"),
    ):
        assert_problem(response, 409, "volume_asset")
    assert client.get(f"{URL}/{body['id']}").json()["state"] == "available"
