"""manage.py seed_demo: idempotent demo data, and --json for scripts."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from billing.selectors import priced_pools
from compliance.selectors import audit_chain_verify
from lifecycle.management.commands.seed_demo import DEMO_ALLOCATIONS
from provisioning.domain.placement.catalog import CATALOG
from provisioning.models import Allocation
from tenancy.models import ApiKey, Membership, Tenant

pytestmark = pytest.mark.own_price_book  # the demo's price book is seed_demo's own


def _seed_json():
    out = StringIO()
    call_command("seed_demo", "--json", "--force", stdout=out)
    return json.loads(out.getvalue())  # exactly one JSON object, nothing else


@pytest.mark.django_db
def test_it_creates_the_demo_world_and_prints_working_keys():
    data = _seed_json()
    assert set(data["tenants"]) == {"acme", "globex"}
    assert set(data["tenants"]["acme"]["users"]) == {"alice", "bob"}
    assert set(data["tenants"]["globex"]["users"]) == {"charlie"}
    assert set(data["staff"]) == {"finance", "compliance", "operator"}
    assert Membership.objects.get(user__username="alice").role == "owner"
    assert Membership.objects.get(user__username="bob").role == "member"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {data['tenants']['globex']['users']['charlie']['api_key']}")
    assert client.get("/api/v1/tenant").json()["slug"] == "globex"
    assert client.login(username="alice", password=data["tenants"]["acme"]["users"]["alice"]["password"])
    offering = next(o for o in client.get("/api/v1/offerings").json() if o["rung"] == "container")
    assert offering["prices"]["gpu"]  # the demo price book prices what the demo fleet offers
    alice = APIClient()
    alice.credentials(HTTP_AUTHORIZATION=f"Bearer {data['tenants']['acme']['users']['alice']['api_key']}")
    assets = alice.get("/api/v1/data-assets").json()["results"]
    corpus = next(a for a in assets if a["name"] == "demo-corpus")
    assert next(a for a in assets if a["category"] == "checkpoint")["derived_from"] == [corpus["id"]]
    assert alice.get(f"/api/v1/data-assets/{corpus['id']}/content").content.startswith(b'{"text"')


@pytest.mark.django_db
def test_it_is_idempotent_and_replaces_the_demo_keys():
    first = _seed_json()
    second = _seed_json()
    assert Tenant.objects.count() == 2
    assert first["staff"]["operator"]["api_key"] != second["staff"]["operator"]["api_key"]
    assert ApiKey.objects.filter(user__username="operator", revoked_at=None).count() == 1
    assert first["prices"] > 0
    assert second["prices"] == 0  # prices are set once
    assert (first["data_assets"], second["data_assets"]) == (2, 0)
    assert audit_chain_verify().ok


@pytest.mark.django_db
def test_it_refuses_to_run_without_debug():
    with pytest.raises(CommandError, match="DEBUG"):
        call_command("seed_demo")
    assert not Tenant.objects.exists()


@pytest.mark.django_db
def test_it_prices_every_shape_its_fleet_offers_and_everything_it_runs():
    """Nothing runs without a price: every offering of the demo fleet (each rung, model and region, every MIG profile
    on the rungs that sell slices) has a price for its unit, and so has each workload the demo starts."""
    data = _seed_json()
    assert data["allocations"] == len(DEMO_ALLOCATIONS)
    offerings = APIClient().get("/api/v1/offerings").json()
    assert offerings
    for row in offerings:
        units = {"node" if row["rung"] == "bare_metal" else "gpu"}
        if "mig" in row["performance_isolation"]:
            units |= {f"mig:{profile}" for profile in CATALOG[row["gpu_model"]].mig_profiles}  # fenced halls' too
        assert set(row["prices"]) == units, (row["rung"], row["gpu_model"], row["region"])
    for allocation in Allocation.objects.select_related("gpu_model", "hall__region"):
        spec = allocation.spec
        pools = priced_pools(
            rung=allocation.rung, mig_profile=spec["mig_profile"], models=[allocation.gpu_model.name], at=timezone.now()
        )
        assert (allocation.gpu_model.name, allocation.hall.region.code) in pools, allocation.name
