"""GET /api/v1/compliance/residency-report?tenant=SLUG: where a tenant's compute ran and its data lives, judged
against its residency now — for compliance staff only."""

from __future__ import annotations

import pytest

from compliance.services.assets import data_asset_delete
from provisioning.services.placing import AllocationSpec, allocation_request
from tests.support import SYSTEM, assert_problem
from tests.support.data import asset, regions

URL = "/api/v1/compliance/residency-report"


@pytest.fixture
def fleet(db):
    return regions()


@pytest.fixture
def officer(api, compliance):
    return api(compliance)


def test_it_reports_where_compute_ran_and_data_lives_and_flags_violations(officer, acme, globex, fleet):
    in_eu = asset(acme, region="eu-west", size_bytes=100)
    in_us = [asset(acme, region="us-east", size_bytes=10, name=f"us-{n}") for n in range(2)]
    shredding = asset(acme, region="us-east", size_bytes=5, name="going")
    data_asset_delete(asset=shredding, actor=SYSTEM)  # still stored until shredded: still reported
    asset(globex, region="us-east", size_bytes=999)  # another tenant's: never in acme's report
    spec = AllocationSpec(rung="container", gpu_models=("H200-141GB",), gpus=1, regions=("us-east",))
    placed = allocation_request(tenant=acme, name="work", spec=spec, actor=SYSTEM)
    acme.residency_jurisdictions = ["EU"]  # decided after the fact: what is already in the US now violates it
    acme.save()

    response = officer.get(URL, {"tenant": "acme"})
    assert response.status_code == 200, response.content
    report = response.json()
    assert report["tenant"] == "acme"
    assert report["policy"] == {"regions": None, "jurisdictions": ["EU"], "sovereign": False}
    assert [(d["region"], d["assets"], d["bytes"]) for d in report["data"]] == [("eu-west", 1, 100), ("us-east", 3, 25)]
    eu, us = report["data"]
    assert eu["violation"] is None
    assert "asset_ids" not in eu
    assert us["violation"]
    assert us["jurisdiction"] == "US"
    assert us["asset_ids"] == [*(a.pk for a in in_us), shredding.pk]
    [compute] = report["compute"]
    assert (compute["hall"], compute["region"], compute["allocations"]) == ("us-east-1a", "us-east", 1)
    assert compute["violation"]
    assert compute["allocation_ids"] == [placed.pk]
    assert report["violations"] == 2
    assert in_eu.pk not in us["asset_ids"]


def test_a_tenant_within_its_residency_has_no_violations(officer, acme, fleet):
    asset(acme, region="eu-west")
    report = officer.get(URL, {"tenant": "acme"}).json()
    assert report["violations"] == 0
    assert report["compute"] == []
    assert report["policy"] == {"regions": None, "jurisdictions": None, "sovereign": False}


def test_it_needs_a_known_tenant(officer, acme):
    body = assert_problem(officer.get(URL), 422, "validation_error")
    assert list(body["errors"]) == ["tenant"]
    assert_problem(officer.get(URL, {"tenant": "nobody"}), 404, "not_found")


def test_tenants_cannot_read_the_compliance_report(api, alice, bob, charlie, acme):
    for user in (alice, bob, charlie):
        for slug in ("acme", "globex"):
            assert_problem(api(user).get(URL, {"tenant": slug}), 403, "permission_denied")


def test_other_staff_cannot_read_the_compliance_report(api, finance, operator, acme):
    for user in (finance, operator):
        assert_problem(api(user).get(URL, {"tenant": "acme"}), 403, "permission_denied")
    assert_problem(api().get(URL, {"tenant": "acme"}), 401, "not_authenticated")
