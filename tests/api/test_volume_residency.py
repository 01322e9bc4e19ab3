"""The residency report shows volumes: each counted in its region's data and listed one by one (name, region, kind,
size, state, snapshots) with its region's verdict against the tenant's residency now, for the tenant and for
compliance staff; a deleted volume is no longer listed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.data import regions
from tests.support.volumes import VOLUMES, volume_make

GB = 1024**3


@pytest.fixture
def fleet(db: None) -> Any:
    return regions()


def test_volumes_appear_with_their_region_kind_and_size_judged_against_residency(
    api: Any, alice: Any, acme: Any, compliance: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    eu = volume_make(client, capture)
    with capture(execute=True):
        assert client.post(f"{VOLUMES}/{eu['id']}/snapshots", {"name": "s1"}, format="json").status_code == 201
    us = volume_make(client, capture, name="us-disk", region="us-east", kind="block", size_gb=100)
    gone = volume_make(client, capture, name="gone", size_gb=10)
    with capture(execute=True):
        assert client.delete(f"{VOLUMES}/{gone['id']}").status_code == 202

    body = client.get("/api/v1/residency-report").json()
    assert body["violations"] == 0
    data = {entry["region"]: entry for entry in body["data"]}
    assert (data["eu-west"]["assets"], data["eu-west"]["bytes"]) == (2, 510 * GB)  # the deleting one is not shredded
    assert (data["us-east"]["assets"], data["us-east"]["bytes"]) == (1, 100 * GB)
    listed = {v["name"]: v for v in body["volumes"]}
    assert listed["datasets"] == {
        "id": eu["id"],
        "name": "datasets",
        "region": "eu-west",
        "jurisdiction": "EU",
        "kind": "filesystem",
        "size_gb": 500,
        "used_gb": None,
        "state": "available",
        "snapshots": 1,
        "violation": None,
    }
    assert (listed["us-disk"]["kind"], listed["us-disk"]["size_gb"], listed["us-disk"]["region"]) == (
        "block",
        100,
        "us-east",
    )
    assert listed["gone"]["state"] == "deleting"

    # The residency narrows after the fact: the US volume is flagged, by its own row and its region's.
    acme.residency_jurisdictions = ["EU"]
    acme.save()
    staff = api(compliance).get("/api/v1/compliance/residency-report", {"tenant": "acme"})
    assert staff.status_code == 200, staff.content
    body = staff.json()
    assert body["violations"] == 1
    flagged = {v["name"]: v["violation"] for v in body["volumes"]}
    assert flagged["datasets"] is None
    assert flagged["us-disk"]
    assert {entry["region"]: entry["asset_ids"] for entry in body["data"] if entry["violation"]} == {
        "us-east": [us["data_asset"]]
    }
