"""manage.py seed_demo: idempotent demo data, and --json for scripts."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from compliance.selectors import audit_chain_verify
from tenancy.models import ApiKey, Membership, Tenant


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
