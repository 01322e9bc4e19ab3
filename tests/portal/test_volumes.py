"""The Volumes page through Django's test client: creating a volume (and its refusals on the form), the list with
where each is attached, its snapshots and its monthly cost at the storage price in force, growing (bigger only),
taking a snapshot, deleting a volume or a snapshot after a confirmation (refused while mounted or under a legal
hold, in the services' words); the rules every page keeps (another tenant's volume 404s, a viewer reads but does
not manage, CSRF) and a closing tenant refused on every form."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from billing.models import SkuPrice
from billing.services.storage import storage_sku
from compliance.services.assets import AssetScope
from compliance.services.holds import legal_hold_create
from core.models import AuditEvent
from lifecycle.services.customers import allocation_request
from lifecycle.services.volumes import volume_create
from provisioning.domain.workloads import Volume as Mount
from provisioning.domain.workloads import Workload
from provisioning.models import Allocation, Region, Volume, VolumeSnapshot
from provisioning.services.placing import AllocationSpec
from tenancy.models import Membership, Tenant, TenantState
from tests.support import SYSTEM, teammate
from tests.support.data import regions

H100 = "H100-SXM-80GB"
IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
SINCE = datetime(2000, 1, 1, tzinfo=UTC)


@pytest.fixture
def fleet(db: None, settings: Any) -> Any:
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    return regions()


@pytest.fixture
def run(django_capture_on_commit_callbacks: Any) -> Any:
    """Run what a request queues on commit (the simulated backend's steps), as a worker would."""

    def run_(call: Any, *args: Any, **kwargs: Any) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return call(*args, **kwargs)

    return run_


def signed_in(user: Any, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def storage_price(per_gb_hour: str, kind: str = "filesystem", region: str = "eu-west") -> SkuPrice:
    """Price ``kind`` in ``region`` per GB-hour from ``SINCE``, in place of the price every test's regions get."""
    sku = storage_sku(storage_kind=kind, region=Region.objects.get(code=region))
    price, _ = SkuPrice.objects.update_or_create(
        sku=sku, effective_from=SINCE, defaults={"unit_price_per_hour": Decimal(per_gb_hour)}
    )
    return price


def sent(run: Any, client: Client, url: str, body: Any = None) -> Any:
    """POST (running what it queues on commit, as a worker would), then the page it redirects to."""
    response = run(client.post, url, body or {})
    assert response.status_code == 302, text(response)
    return client.get(response["Location"])


def text(response: Any) -> str:
    return str(response.content.decode())


def row(page: Any, name: str) -> str:
    """The list's row of volume ``name``."""
    found = re.search(rf'<tr data-volume="{name}">(.*?)</tr>', text(page), re.DOTALL)
    assert found, f"no row for {name}"
    return found[1]


def cell(page: Any, name: str, what: str) -> str:
    """The text of one cell (``data-<what>``) of volume ``name``'s row, tags dropped."""
    found = re.search(rf"<td data-{what}>(.*?)</td>", row(page, name), re.DOTALL)
    assert found, f"no {what} cell for {name}"
    return " ".join(re.sub(r"<[^>]+>", " ", found[1]).split())


def made(tenant: Tenant, name: str = "datasets", *, kind: str = "filesystem", size_gb: int = 500, **kw: Any) -> Volume:
    return volume_create(
        tenant=tenant, name=name, region=Region.objects.get(code=kw.get("region", "eu-west")), kind=kind,
        size_gb=size_gb, actor=SYSTEM,
    )  # fmt: skip


def mounted_by(tenant: Tenant, volume: Volume, rung: str = "container", **shape: Any) -> Allocation:
    workload = Workload(image=IMAGE, volumes=(Mount("/data", volume=volume.pk),))
    if rung == "vm":
        workload = Workload(os_image="ubuntu-24.04", volumes=(Mount("/mnt/disk", volume=volume.pk),))
    spec = AllocationSpec(rung=rung, gpu_models=(H100,), gpus=1, **shape)
    return allocation_request(tenant=tenant, name=f"uses-{volume.name}", spec=spec, actor=SYSTEM, workload=workload)


# --- creating and reading ---------------------------------------------------------------------------------------


def test_a_member_creates_a_volume_and_sees_it_available_with_its_monthly_cost(
    alice: Any, acme: Tenant, fleet: Any, run: Any
) -> None:
    storage_price("0.0001")  # per GB-hour: 500 GB x 730 hours = 36.50 a month
    client = signed_in(alice)
    page = client.get("/portal/volumes")
    assert page.status_code == 200
    assert '<a href="/portal/volumes">Volumes</a>' in text(page)  # in the menu
    assert "You have no volumes yet." in text(page)
    body = {"name": "datasets", "region": "eu-west", "kind": "filesystem", "size_gb": "500"}
    created = sent(run, client, "/portal/volumes", body)
    assert "The volume datasets is made: 500 GB in eu-west." in text(created)
    volume = Volume.objects.get(tenant=acme, name="datasets")
    assert (volume.state, volume.size_gb, volume.kind, volume.region.code) == (
        "available",
        500,
        "filesystem",
        "eu-west",
    )
    assert 'data-state="available"' in row(created, "datasets")
    assert cell(created, "datasets", "monthly") == "36.50 USD"
    assert cell(created, "datasets", "attached") == "nothing"
    assert cell(created, "datasets", "snapshots") == "none"
    assert "Your volumes hold 500 GB; you have no storage quota." in text(created)
    [event] = AuditEvent.objects.filter(action="volume.created")
    assert event.actor_label == alice.username

    run(client.post, "/portal/volumes", {"name": "vm-disk", "region": "eu-west", "kind": "block", "size_gb": "100"})
    # As for a volume made before its storage was priced: no price in force now.
    SkuPrice.objects.filter(sku__code="storage/block/eu-west").update(effective_from=datetime(2999, 1, 1, tzinfo=UTC))
    assert cell(client.get("/portal/volumes"), "vm-disk", "monthly") == "not priced"


def test_the_form_offers_the_tenants_regions_only_and_shows_the_services_refusals(
    alice: Any, acme: Tenant, fleet: Any, run: Any
) -> None:
    Tenant.objects.filter(pk=acme.pk).update(residency_regions=["eu-west"], volume_quota_gb=600)
    client = signed_in(alice)
    page = text(client.get("/portal/volumes"))
    assert '<option value="eu-west"' in page
    assert '<option value="us-east"' not in page
    assert "storage quota of 600 GB" in page

    def create(**body: Any) -> Any:
        return run(client.post, "/portal/volumes", {"region": "eu-west", "kind": "filesystem", **body})

    bad_name = create(name="Not A Label", size_gb="10")
    assert bad_name.status_code == 422
    assert "is not a valid name: lower-case letters" in text(bad_name)
    assert create(name="elsewhere", region="us-east", size_gb="10").status_code == 422  # not a choice
    assert create(name="datasets", size_gb="500").status_code == 302
    over = create(name="more", size_gb="200")
    assert over.status_code == 422
    assert "over your storage quota of 600 GB (500 GB in use)" in text(over)
    taken = create(name="datasets", size_gb="10")
    assert "You already have a volume named datasets." in text(taken)
    assert list(Volume.objects.values_list("name", flat=True)) == ["datasets"]


# --- growing, snapshots, deleting -------------------------------------------------------------------------------


def test_a_volume_grows_bigger_only_with_the_refusal_in_plain_words(
    alice: Any, acme: Tenant, fleet: Any, run: Any
) -> None:
    volume = run(made, acme)
    client = signed_in(alice)
    url = f"/portal/volumes/{volume.pk}"
    grown = sent(run, client, url, {"form": "grow", "size_gb": "800"})
    assert "datasets is now 800 GB." in text(grown)
    smaller = run(client.post, url, {"form": "grow", "size_gb": "700"})
    assert smaller.status_code == 422
    assert "A volume never shrinks: it is 800 GB; ask for more, not less." in text(smaller)
    same = run(client.post, url, {"form": "grow", "size_gb": "800"})
    assert "The volume is already 800 GB." in text(same)
    volume.refresh_from_db()
    assert volume.size_gb == 800
    assert AuditEvent.objects.filter(action="volume.grown").count() == 1


def test_a_snapshot_is_taken_listed_priced_and_deleted_after_a_confirmation(
    alice: Any, acme: Tenant, fleet: Any, run: Any
) -> None:
    storage_price("0.0001")
    storage_price("0.00005", kind="snapshot")
    volume = run(made, acme)
    client = signed_in(alice)
    url = f"/portal/volumes/{volume.pk}"
    taken = sent(run, client, url, {"form": "snapshot", "name": "before-cleanup"})
    assert "The snapshot before-cleanup of datasets is taken." in text(taken)
    assert '<tr data-snapshot="before-cleanup"><td>before-cleanup</td><td>500 GB</td><td>ready</td>' in text(taken)
    assert "snapshots: 18.25 USD" in text(taken)  # 500 GB x 0.00005 x 730
    listed = client.get("/portal/volumes")
    assert cell(listed, "datasets", "snapshots") == "before-cleanup (ready)"
    assert cell(listed, "datasets", "monthly") == "36.50 USD snapshots: 18.25 USD"
    twice = run(client.post, url, {"form": "snapshot", "name": "before-cleanup"})
    assert twice.status_code == 422
    assert "Volume datasets already has a snapshot named before-cleanup." in text(twice)

    snapshot = VolumeSnapshot.objects.get(name="before-cleanup")
    confirm = client.get(f"{url}/snapshots/{snapshot.pk}/delete")
    assert "Delete the snapshot before-cleanup of datasets?" in text(confirm)
    gone = sent(run, client, f"{url}/snapshots/{snapshot.pk}/delete")
    assert "The snapshot before-cleanup is being deleted." in text(gone)
    snapshot.refresh_from_db()
    assert snapshot.state == "deleted"  # the simulated backend lets it go at once
    assert cell(client.get("/portal/volumes"), "datasets", "snapshots") == "none"


def test_deleting_asks_first_and_then_stops_billing(alice: Any, acme: Tenant, fleet: Any, run: Any) -> None:
    storage_price("0.0001")
    volume = run(made, acme)
    client = signed_in(alice)
    url = f"/portal/volumes/{volume.pk}/delete"
    confirm = client.get(url)
    assert confirm.status_code == 200
    assert "Delete datasets?" in text(confirm)
    assert "Its data key is destroyed after 7 days" in text(confirm)
    volume.refresh_from_db()
    assert volume.state == "available"  # asking deletes nothing
    deleted = sent(run, client, url)
    assert "The volume datasets is being deleted; it is no longer billed." in text(deleted)
    volume.refresh_from_db()
    assert volume.state == "deleting"
    assert cell(deleted, "datasets", "monthly") == "no longer billed"
    assert 'hx-trigger="every 3s"' in text(deleted)  # the list follows it until it is gone
    page = text(client.get(f"/portal/volumes/{volume.pk}"))
    assert "Delete datasets" not in page
    assert "Grow datasets" not in page


def test_deleting_is_refused_while_mounted_and_under_a_legal_hold(
    alice: Any, acme: Tenant, fleet: Any, run: Any
) -> None:
    volume = run(made, acme)
    work = run(mounted_by, acme, volume)
    client = signed_in(alice)
    listed = client.get("/portal/volumes")
    assert cell(listed, "datasets", "attached") == work.name
    assert f'<a href="/portal/allocations/{work.pk}">{work.name}</a>' in row(listed, "datasets")
    assert 'data-state="attached"' in row(listed, "datasets")
    url = f"/portal/volumes/{volume.pk}/delete"
    assert "Mounted now by" in text(client.get(url))
    refused = run(client.post, url)
    assert refused.status_code == 409
    assert f"Volume datasets is mounted by allocation {work.pk}: stop it first." in text(refused)

    other = run(made, acme, "weights")
    snapshot = run(VolumeSnapshot.objects.create, tenant=acme, volume=other, name="s1", size_gb=500, state="ready")
    hold = legal_hold_create(
        tenant=acme, matter="M", reason="r", scope=AssetScope(categories=["volume"]), lock_until=None, actor=SYSTEM
    )
    held = run(client.post, f"/portal/volumes/{other.pk}/delete")
    assert held.status_code == 409
    assert f"A legal hold preserves this data (hold {hold.pk})" in text(held)
    held_snapshot = run(client.post, f"/portal/volumes/{other.pk}/snapshots/{snapshot.pk}/delete")
    assert held_snapshot.status_code == 409
    assert f"hold {hold.pk}" in text(held_snapshot)
    assert set(Volume.objects.values_list("state", flat=True)) == {"attached", "available"}


# --- the launch form ------------------------------------------------------------------------------------------------


def launch(client: Client, run: Any, rung: str, **fields: Any) -> Any:
    page = client.get("/portal/launch", {"rung": rung})
    token = re.search(r'name="idempotency" value="([0-9a-f]+)"', text(page))
    assert token
    body = {"idempotency": token[1], "rung": rung, "name": "work", "gpu_model": H100, **fields}
    return run(client.post, "/portal/launch", body)


def test_the_launch_form_mounts_a_volume_at_its_path(alice: Any, acme: Tenant, fleet: Any, run: Any) -> None:
    volume = run(made, acme)
    client = signed_in(alice)
    page = text(client.get("/portal/launch", {"rung": "container"}))
    assert "Filesystem volumes: mounted into its containers at the path you give." in page
    assert "An allocation that mounts a volume runs in the volume&#x27;s region." in page
    assert 'value="/mnt/datasets"' in page
    assert "Mount datasets read-only" in page
    done = launch(
        client, run, "container", gpus="1", image=IMAGE, volumes=[str(volume.pk)], **{
            f"volume_path_{volume.pk}": "/data", f"volume_read_only_{volume.pk}": "on",
        },
    )  # fmt: skip
    assert done.status_code == 302, text(done)
    allocation = Allocation.objects.get(tenant=acme)
    [attachment] = allocation.attachments.all()
    assert (attachment.volume_id, attachment.mount_path, attachment.read_only) == (volume.pk, "/data", True)
    assert allocation.hall.region.code == "eu-west"  # placement follows the data
    shown = re.search(r"<dd data-mounts>(.*?)</dd>", text(client.get(f"/portal/allocations/{allocation.pk}")))
    assert shown
    assert shown[1] == f'<a href="/portal/volumes/{volume.pk}">datasets</a> at <code>/data</code> (read-only)'
    assert cell(client.get("/portal/volumes"), "datasets", "attached") == "work"


def test_serverless_mounts_read_only_and_block_volumes_are_offered_to_vms_only(
    alice: Any, acme: Tenant, fleet: Any, run: Any
) -> None:
    shared = run(made, acme)
    disk = run(made, acme, "vm-disk", kind="block", size_gb=100)
    client = signed_in(alice)

    def offered(rung: str) -> set[str]:
        page = text(client.get("/portal/launch", {"rung": rung}))
        return set(re.findall(r'<div class="volume-row" data-volume="([^"]+)">', page))

    assert offered("container") == offered("job") == offered("serverless") == {"datasets"}
    assert offered("vm") == {"datasets", "vm-disk"}
    assert offered("confidential_vm") == offered("bare_metal") == set()
    assert "A confidential VM mounts no volume" in text(client.get("/portal/launch", {"rung": "confidential_vm"}))
    assert "A bare-metal host mounts no volume" in text(client.get("/portal/launch", {"rung": "bare_metal"}))
    serverless = text(client.get("/portal/launch", {"rung": "serverless"}))
    assert "Mounted read-only: many replicas read one volume at once" in serverless
    assert "Mount datasets read-only" not in serverless  # no box to untick: it is forced

    done = launch(
        client, run, "serverless", mig_profile="1g.10gb", image=IMAGE, volumes=[str(shared.pk)],
        **{f"volume_path_{shared.pk}": "/models"},
    )  # fmt: skip
    assert done.status_code == 302, text(done)
    [attachment] = Allocation.objects.get(rung="serverless").attachments.all()
    assert (attachment.mount_path, attachment.read_only) == ("/models", True)

    # A block volume named on a container's form (not offered there) is not a choice.
    assert launch(client, run, "container", gpus="1", image=IMAGE, volumes=[str(disk.pk)]).status_code == 422
    vm = launch(client, run, "vm", gpus="1", os_image="ubuntu-24.04", volumes=[str(disk.pk)])
    assert vm.status_code == 302, text(vm)
    page = text(client.get("/portal/launch", {"rung": "vm"}))
    held = Allocation.objects.get(rung="vm")
    assert f"vm-disk (block, 100 GB, eu-west), attached to allocation {held.pk}" in page


def test_the_services_refusals_of_a_mount_land_on_the_volumes(alice: Any, acme: Tenant, fleet: Any, run: Any) -> None:
    disk = run(made, acme, "vm-disk", kind="block", size_gb=100)
    us = run(made, acme, "us-data", region="us-east")
    client = signed_in(alice)
    assert launch(client, run, "vm", gpus="1", os_image="ubuntu-24.04", volumes=[str(disk.pk)]).status_code == 302
    again = launch(client, run, "vm", gpus="1", os_image="ubuntu-24.04", volumes=[str(disk.pk)])
    assert again.status_code == 422
    volumes = re.search(r'<fieldset class="volumes invalid".*?</fieldset>', text(again), re.DOTALL)
    assert volumes, "the refusal is not on the volumes"
    assert "Block volume vm-disk is attached to allocation" in volumes[0]

    elsewhere = launch(client, run, "container", gpus="1", image=IMAGE, region="eu-west", volumes=[str(us.pk)])
    assert elsewhere.status_code == 422
    assert "Volume us-data lives in us-east" in text(elsewhere)
    overlap = launch(
        client, run, "container", gpus="1", image=IMAGE, scratch_gb="10", scratch_path="/data", volumes=[str(us.pk)],
        **{f"volume_path_{us.pk}": "/data"},
    )  # fmt: skip
    assert overlap.status_code == 422
    field = rf'<div class="field invalid">\s*<label for="id_volume_path_{us.pk}">.*?</div>'
    path = re.search(field, text(overlap), re.DOTALL)
    assert path
    assert "/data overlaps another mount." in path[0]
    assert Allocation.objects.filter(tenant=acme).count() == 1


# --- the rules every page keeps --------------------------------------------------------------------------------------


def test_another_tenants_volume_is_not_found(alice: Any, charlie: Any, acme: Tenant, fleet: Any, run: Any) -> None:
    volume = run(made, acme)
    snapshot = run(VolumeSnapshot.objects.create, tenant=acme, volume=volume, name="s1", size_gb=500, state="ready")
    client = signed_in(charlie)
    assert 'data-volume="datasets"' not in text(client.get("/portal/volumes"))
    assert 'data-volume="datasets"' not in text(client.get("/portal/volumes/table"))
    for url in (f"/portal/volumes/{volume.pk}", f"/portal/volumes/{volume.pk}/delete"):
        assert client.get(url).status_code == 404
        assert run(client.post, url, {"form": "grow", "size_gb": "900"}).status_code == 404
    assert client.post(f"/portal/volumes/{volume.pk}/snapshots/{snapshot.pk}/delete").status_code == 404
    token = re.search(r'name="idempotency" value="([0-9a-f]+)"', text(client.get("/portal/launch")))
    assert token
    body = {"idempotency": token[1], "rung": "container", "name": "x", "gpu_model": H100, "gpus": "1",
            "image": IMAGE, "volumes": [str(volume.pk)]}  # fmt: skip
    assert run(client.post, "/portal/launch", body).status_code == 422  # not among its choices
    volume.refresh_from_db()
    assert (volume.state, volume.size_gb) == ("available", 500)


def test_a_viewer_reads_volumes_but_does_not_manage_them(acme: Tenant, fleet: Any, run: Any) -> None:
    volume = run(made, acme)
    teammate(acme, "viewer")
    viewer = signed_in(Membership.objects.get(role="viewer").user)
    listed = text(viewer.get("/portal/volumes"))
    assert "datasets" in listed
    assert "Create a volume" not in listed
    page = text(viewer.get(f"/portal/volumes/{volume.pk}"))
    for action in ("Take a snapshot", "Grow datasets", "Delete datasets"):
        assert action not in page
    body = {"name": "more", "region": "eu-west", "kind": "filesystem", "size_gb": "10"}
    assert run(viewer.post, "/portal/volumes", body).status_code == 403
    assert run(viewer.post, f"/portal/volumes/{volume.pk}", {"form": "grow", "size_gb": "900"}).status_code == 403
    assert viewer.get(f"/portal/volumes/{volume.pk}/delete").status_code == 403
    assert run(viewer.post, f"/portal/volumes/{volume.pk}/delete").status_code == 403
    assert Volume.objects.count() == 1
    assert Volume.objects.get().state == "available"


def test_a_post_without_the_csrf_token_is_refused(alice: Any, acme: Tenant, fleet: Any, run: Any) -> None:
    volume = run(made, acme)
    client = signed_in(alice, enforce_csrf_checks=True)
    body = {"name": "more", "region": "eu-west", "kind": "filesystem", "size_gb": "10"}
    assert client.post("/portal/volumes", body).status_code == 403
    assert client.post(f"/portal/volumes/{volume.pk}/delete").status_code == 403
    assert list(Volume.objects.values_list("name", "state")) == [("datasets", "available")]


def test_a_closing_tenant_reads_its_volumes_and_every_change_is_refused(
    alice: Any, acme: Tenant, fleet: Any, run: Any
) -> None:
    volume = run(made, acme)
    snapshot = run(VolumeSnapshot.objects.create, tenant=acme, volume=volume, name="s1", size_gb=500, state="ready")
    Tenant.objects.filter(pk=acme.pk).update(state=TenantState.CLOSING)
    client = signed_in(alice)
    events = AuditEvent.objects.count()
    refusal = "The tenant is closing: it can read but not change anything."
    page = text(client.get("/portal/volumes"))
    assert 'class="notice" role="status" data-tenant-state="closing"' in page
    url = f"/portal/volumes/{volume.pk}"
    answers = {
        "create": client.post("/portal/volumes", {"name": "more", "region": "eu-west", "kind": "block", "size_gb": 1}),
        "grow": client.post(url, {"form": "grow", "size_gb": "900"}),
        "snapshot": client.post(url, {"form": "snapshot", "name": "s2"}),
        "delete": client.post(f"{url}/delete"),
        "delete a snapshot": client.post(f"{url}/snapshots/{snapshot.pk}/delete"),
    }
    assert {what: refusal in text(page) for what, page in answers.items()} == dict.fromkeys(answers, True)
    assert AuditEvent.objects.count() == events
    volume.refresh_from_db()
    assert (volume.state, volume.size_gb) == ("available", 500)
    assert list(Volume.objects.values_list("name", flat=True)) == ["datasets"]
    assert VolumeSnapshot.objects.get(pk=snapshot.pk).state == "ready"
