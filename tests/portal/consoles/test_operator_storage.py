"""The operator console's storage page and the selector it reads (``provisioning.selectors.storage_figures``): each
region's provisioned and used storage per class (filesystem, block, snapshots), counting only what the backend holds
(available or attached volumes, ready snapshots), every region and class shown, zeros included; staff of another
role and tenants' members are refused."""

from __future__ import annotations

import re
from typing import Any

from provisioning.models import Region, Volume, VolumeSnapshot
from provisioning.selectors import StorageFigures, storage_figures
from tests.support.consoles import signed_in
from tests.support.data import regions


def volume(tenant: Any, name: str, *, region: str = "eu-west", kind: str = "filesystem", **fields: Any) -> Volume:
    fields.setdefault("state", "available")
    return Volume.objects.create(
        tenant=tenant, name=name, region=Region.objects.get(code=region), kind=kind, provisioner="simulated", **fields
    )


def estate(acme: Any, globex: Any) -> None:
    """Two tenants' volumes in both regions, in every state, and snapshots."""
    regions()
    data = volume(acme, "datasets", size_gb=500, used_gb=120)
    volume(globex, "corpus", size_gb=300, used_gb=30, state="attached")
    volume(acme, "scratch", size_gb=200)  # no use reported yet
    volume(acme, "vm-disk", kind="block", size_gb=100, used_gb=10, state="attached")
    volume(acme, "new", size_gb=1000, state="creating")  # not provisioned yet
    volume(acme, "going", size_gb=700, used_gb=700, state="deleting")  # no longer provisioned
    volume(globex, "us-data", region="us-east", size_gb=50, used_gb=5)
    for name, state in (("s1", "ready"), ("s2", "ready"), ("s3", "creating"), ("s4", "deleted")):
        VolumeSnapshot.objects.create(tenant=acme, volume=data, name=name, size_gb=500, state=state)


def test_the_selector_sums_each_regions_provisioned_storage_per_class(acme: Any, globex: Any) -> None:
    estate(acme, globex)
    assert storage_figures() == [
        StorageFigures("eu-west", "filesystem", 3, 1000, 150),
        StorageFigures("eu-west", "block", 1, 100, 10),
        StorageFigures("eu-west", "snapshot", 2, 1000, None),
        StorageFigures("us-east", "filesystem", 1, 50, 5),
        StorageFigures("us-east", "block", 0, 0, None),
        StorageFigures("us-east", "snapshot", 0, 0, None),
    ]
    assert storage_figures()[0].used_share == 0.15


def test_the_storage_page_shows_each_region_and_class_with_totals(operator: Any, acme: Any, globex: Any) -> None:
    estate(acme, globex)
    page = signed_in(operator).get("/console/operators/storage")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'href="/console/operators/storage"' in text  # in the console's navigation

    def shown(key: str) -> list[str]:
        found = re.search(rf'<tr data-storage="{key}">(.*?)</tr>', text, re.DOTALL)
        assert found, key
        return [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in re.findall(r"<td[^>]*>(.*?)</td>", found[1])]

    assert shown("eu-west/filesystem") == ["filesystem", "3", "1000 GB", "150 GB", "15%"]
    assert shown("eu-west/block") == ["block", "1", "100 GB", "10 GB", "10%"]
    assert shown("eu-west/snapshot") == ["snapshot", "2", "1000 GB", "—", "—"]
    assert shown("us-east/block") == ["block", "0", "0 GB", "—", "—"]
    total = re.search(r'<tr data-storage-total="filesystem">(.*?)</tr>', text, re.DOTALL)
    assert total
    assert "<td>4</td><td>1050 GB</td><td>155 GB</td>" in total[1]


def test_only_operators_open_the_storage_page(finance: Any, alice: Any, db: None) -> None:
    assert signed_in(finance).get("/console/operators/storage").status_code == 403
    assert signed_in(alice).get("/console/operators/storage").status_code == 403
