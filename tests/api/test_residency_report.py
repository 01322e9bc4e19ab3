"""/api/v1/residency-report: where the tenant's compute ran and its data lives, judged against its residency now."""

import pytest

from tests.support import assert_problem, teammate
from tests.support.data import regions

URL = "/api/v1/residency-report"
H100, H200 = "H100-SXM-80GB", "H200-141GB"


@pytest.fixture
def fleet(db):
    return regions()


def place(client, model, region):
    response = client.post(
        "/api/v1/allocations",
        {"name": "work", "rung": "container", "gpu_model": model, "gpus": 1, "regions": [region]},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def register(client, region, size_bytes=1000):
    response = client.post(
        "/api/v1/data-assets",
        {"name": "d", "category": "dataset", "region": region, "size_bytes": size_bytes},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def report(client):
    response = client.get(URL)
    assert response.status_code == 200, response.content
    return response.json()


def test_an_unconstrained_tenant_has_no_violations(api, alice, fleet):
    client = api(alice)
    place(client, H100, "eu-west")
    register(client, "eu-west", 100)
    register(client, "eu-west", 50)
    body = report(client)
    assert body["tenant"] == "acme"
    assert body["policy"] == {"regions": None, "jurisdictions": None, "sovereign": False}
    assert body["violations"] == 0
    [compute] = body["compute"]
    assert (compute["hall"], compute["region"], compute["jurisdiction"]) == ("eu-west-1a", "eu-west", "EU")
    assert compute["allocations"] == 1
    assert compute["violation"] is None
    assert "allocation_ids" not in compute
    assert compute["first"]
    assert compute["last"]
    assert body["data"] == [{"region": "eu-west", "jurisdiction": "EU", "assets": 2, "bytes": 150, "violation": None}]


def test_narrowing_the_residency_after_the_fact_flags_what_lies_outside(api, alice, acme, fleet):
    client = api(alice)
    here = place(client, H100, "eu-west")
    there = place(client, H200, "us-east")
    register(client, "eu-west")
    us_data = register(client, "us-east", 2000)
    # Set directly: the tenant endpoint would apply the same residency, but the point is data placed before it.
    acme.residency_jurisdictions = ["EU"]
    acme.save()
    body = report(client)
    assert body["policy"]["jurisdictions"] == ["EU"]
    assert body["violations"] == 2
    compute = {entry["region"]: entry for entry in body["compute"]}
    assert compute["eu-west"]["violation"] is None
    assert compute["us-east"]["violation"]
    assert compute["us-east"]["allocation_ids"] == [there["id"]]
    assert here["id"] not in compute["us-east"]["allocation_ids"]
    data = {entry["region"]: entry for entry in body["data"]}
    assert data["eu-west"]["violation"] is None
    assert "asset_ids" not in data["eu-west"]
    assert data["us-east"]["violation"]
    assert data["us-east"]["asset_ids"] == [us_data["id"]]
    assert data["us-east"]["bytes"] == 2000
    assert data["us-east"]["jurisdiction"] == "US"


def test_a_sovereign_tenant_sees_its_unfenced_placements_flagged(api, alice, acme, fleet):
    client = api(alice)
    place(client, H100, "eu-west")  # hall eu-west-1a, not fenced
    register(client, "eu-west")
    acme.residency_jurisdictions, acme.sovereign = ["EU"], True
    acme.save()
    body = report(client)
    assert body["policy"]["sovereign"] is True
    [compute] = body["compute"]
    assert compute["hall"] == "eu-west-1a"
    assert compute["violation"]
    assert body["data"][0]["violation"] is None  # eu-west has a hall fenced for EU: the data may stay


@pytest.mark.parametrize("role", ["member", "viewer", "billing"])
def test_everyone_in_the_tenant_reads_it(api, alice, acme, fleet, role):
    register(api(alice), "us-east")
    client = teammate(acme, role)
    assert report(client)["data"][0]["region"] == "us-east"


def test_staff_without_a_tenant_are_refused(api, compliance, operator, fleet):
    for user in (compliance, operator):
        assert_problem(api(user).get(URL), 403, "tenant_required")


def test_each_tenant_sees_only_its_own_places(api, alice, charlie, acme, fleet):
    client = api(alice)
    place(client, H200, "us-east")
    register(client, "us-east")
    acme.residency_jurisdictions = ["EU"]
    acme.save()
    register(api(charlie), "eu-west", 7)
    theirs = report(api(charlie))
    assert theirs["tenant"] == "globex"
    assert theirs["compute"] == []
    assert theirs["violations"] == 0
    assert theirs["data"] == [{"region": "eu-west", "jurisdiction": "EU", "assets": 1, "bytes": 7, "violation": None}]
    assert report(client)["violations"] == 2
