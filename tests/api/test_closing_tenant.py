"""A closing tenant reads but changes nothing, through the API: every write a tenant's member can make answers 403
``tenant_not_active`` (the services' refusal, ``tenancy.services.tenant_require_writable``) and writes nothing,
with a key or a session. A suspended tenant still stops its work and sets its budget; buying more is 402. Staff
still act on a closing tenant: a legal hold, an erasure for a data subject, a quota."""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from compliance.models import DataAsset, LegalHold
from compliance.services.secrets import secret_create
from provisioning.models import Allocation, Volume, VolumeSnapshot
from tenancy.models import Membership, SshKey, Tenant, TenantState
from tenancy.services import api_key_create, ssh_key_add
from tests.portal.test_access import public_key
from tests.support import SYSTEM, assert_problem
from tests.support.data import asset, regions
from tests.support.tenants import tenant_things

H100 = "H100-SXM-80GB"
# Paths only staff (or a confidential VM's guest) call: a tenant's member is refused them whatever its standing.
# Reservations are made and ended by operators only (a tenant reads its own), and never for a tenant that is not
# active (tests/api/test_reservations.py).
NOT_TENANT_WRITES = (
    *("/api/v1/ops/", "/api/v1/finance/", "/api/v1/compliance/", "/api/v1/attestation/"),
    "/api/v1/reservations",
)


def tenant_writes(estate: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any] | None]:
    """Every write the API offers a tenant's member, keyed by (method, path as the schema names it), each with a
    body that is valid as sent: only the tenant's standing stands in its way."""
    return {
        ("post", "/api/v1/allocations"): {"name": "more", "rung": "container", "gpu_model": H100, "gpus": 1},
        ("delete", "/api/v1/allocations/{id}"): None,
        ("post", "/api/v1/api-keys"): {"name": "ci", "scopes": ["read"]},
        ("delete", "/api/v1/api-keys/{id}"): None,
        ("put", "/api/v1/budget"): {"monthly": "100.00", "hard_stop": False},
        ("post", "/api/v1/endpoint-tokens"): {},
        ("post", "/api/v1/endpoint-tokens/rotate"): None,
        ("post", "/api/v1/data-assets"): {"name": "late", "category": "dataset", "region": "eu-west", "size_bytes": 1},
        ("delete", "/api/v1/data-assets/{id}"): None,
        ("post", "/api/v1/data-assets/{id}/cancel-shredding"): None,
        ("post", "/api/v1/data-assets/{id}/move"): {"region": "us-east"},
        ("put", "/api/v1/data/capture-policy"): {"inference_payloads": True},
        ("post", "/api/v1/erasure-requests"): {"categories": ["dataset"]},
        ("post", "/api/v1/members"): {"username": "dave", "email": "dave@acme.test", "role": "member"},
        ("patch", "/api/v1/members/{id}"): {"role": "viewer"},
        ("delete", "/api/v1/members/{id}"): None,
        ("put", "/api/v1/retention-policies/{category}"): {"days": 9},
        ("post", "/api/v1/secrets"): {"name": "OTHER", "value": "x"},
        ("put", "/api/v1/secrets/{name}"): {"value": "v2"},
        ("delete", "/api/v1/secrets/{name}"): None,
        ("post", "/api/v1/ssh-keys"): {"name": "desk", "public_key": public_key()},
        ("delete", "/api/v1/ssh-keys/{id}"): None,
        ("patch", "/api/v1/tenant"): {"name": "Acme Labs"},
        ("post", "/api/v1/tenant/close"): None,
        ("post", "/api/v1/volumes"): {"name": "more", "region": "eu-west", "kind": "block", "size_gb": 10},
        ("patch", "/api/v1/volumes/{id}"): {"size_gb": 20},
        ("delete", "/api/v1/volumes/{id}"): None,
        ("post", "/api/v1/volumes/{id}/snapshots"): {"name": "late"},
        ("delete", "/api/v1/volume-snapshots/{id}"): None,
    }


def url(path: str, estate: dict[str, Any]) -> str:
    """The schema's path with the estate's objects in it."""
    ids = {
        "/api/v1/allocations/": estate["allocation"].pk,
        "/api/v1/api-keys/": estate["api_key"].pk,
        "/api/v1/data-assets/": estate["asset"].pk,
        "/api/v1/members/": estate["bobs"].pk,
        "/api/v1/ssh-keys/": estate["ssh_key"].pk,
        "/api/v1/volumes/": estate["volume"].pk,
        "/api/v1/volume-snapshots/": estate["snapshot"].pk,
    }
    for prefix, pk in ids.items():
        if path.startswith(prefix):
            path = path.replace("{id}", str(pk))
    return path.replace("{name}", estate["secret"].name).replace("{category}", "dataset")


@pytest.fixture
def estate(
    api: Any, acme: Any, alice: Any, bob: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> dict[str, Any]:
    """Acme with one of everything its members may change, a running allocation among them."""
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    regions()
    client = api(alice)
    body = {"name": "training", "rung": "container", "gpu_model": H100, "gpus": 1}
    with django_capture_on_commit_callbacks(execute=True):
        placed = client.post("/api/v1/allocations", body, format="json")
    assert placed.status_code == 201, placed.content
    with django_capture_on_commit_callbacks(execute=True):
        made = client.post(
            "/api/v1/volumes", {"name": "data", "region": "eu-west", "kind": "filesystem", "size_gb": 10}, format="json"
        )
    volume = Volume.objects.get(pk=made.json()["id"])
    with django_capture_on_commit_callbacks(execute=True):
        snapshot = client.post(f"/api/v1/volumes/{volume.pk}/snapshots", {"name": "first"}, format="json")
    assert snapshot.status_code == 201, snapshot.content
    return {
        "volume": volume,
        "snapshot": VolumeSnapshot.objects.get(pk=snapshot.json()["id"]),
        "client": client,
        "allocation": Allocation.objects.get(pk=placed.json()["id"]),
        "api_key": api_key_create(user=alice, name="other", scopes=["read"], expires_at=None, actor=SYSTEM).key,
        "ssh_key": ssh_key_add(tenant=acme, name="laptop", public_key=public_key(), actor=SYSTEM),
        "secret": secret_create(tenant=acme, name="HF_TOKEN", value="v1", actor=SYSTEM),
        "asset": asset(acme, name="corpus"),
        "bobs": Membership.objects.get(user=bob),
    }


def closing(tenant: Tenant) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(state=TenantState.CLOSING)


def test_the_table_names_every_write_a_tenant_can_make() -> None:
    """A new write endpoint for tenants must join the table above, so its refusal while closing is tested."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    offered = {
        (method, path)
        for path, operations in schema["paths"].items()
        for method in operations
        if method in ("post", "put", "patch", "delete") and not path.startswith(NOT_TENANT_WRITES)
    }
    assert offered == set(tenant_writes({"secret": None}))


def test_every_tenant_write_is_refused_while_closing_and_writes_nothing(acme: Any, estate: dict[str, Any]) -> None:
    client: APIClient = estate["client"]
    closing(acme)
    before = tenant_things(acme)
    answers = {}
    for (method, path), body in tenant_writes(estate).items():
        response = getattr(client, method)(url(path, estate), body, format="json")
        answers[(method, path)] = (response.status_code, response.json().get("code"))
        if response.status_code == 403:
            assert_problem(response, 403, "tenant_not_active")
    assert answers == dict.fromkeys(tenant_writes(estate), (403, "tenant_not_active"))
    assert tenant_things(acme) == before
    # It still reads.
    for path in ("/api/v1/tenant", "/api/v1/allocations", "/api/v1/data-assets", "/api/v1/secrets", "/api/v1/budget"):
        assert client.get(path).status_code == 200, path


def test_a_session_is_refused_the_same_way(acme: Any, alice: Any, estate: dict[str, Any]) -> None:
    closing(acme)
    client = APIClient()
    client.force_authenticate(alice)
    body = assert_problem(
        client.post("/api/v1/ssh-keys", {"name": "desk", "public_key": public_key()}, format="json"),
        403,
        "tenant_not_active",
    )
    assert body["detail"] == "The tenant is closing: it can read but not change anything."
    assert not SshKey.objects.filter(name="desk").exists()


def test_a_closing_tenant_is_refused_before_its_input_is_judged_by_the_rules(acme: Any, estate: dict[str, Any]) -> None:
    closing(acme)
    client: APIClient = estate["client"]
    refused = client.post("/api/v1/ssh-keys", {"name": "bad", "public_key": "not a key"}, format="json")
    assert_problem(refused, 403, "tenant_not_active")  # not 422 invalid_ssh_key


def test_a_suspended_tenant_stops_its_work_and_sets_a_budget_but_buys_nothing(
    acme: Any, estate: dict[str, Any]
) -> None:
    Tenant.objects.filter(pk=acme.pk).update(state=TenantState.SUSPENDED)
    client: APIClient = estate["client"]
    more = {"name": "more", "rung": "container", "gpu_model": H100, "gpus": 1}
    assert_problem(client.post("/api/v1/allocations", more, format="json"), 402, "payment_required")
    assert client.put("/api/v1/budget", {"monthly": "100.00"}, format="json").status_code == 200
    stopped = client.delete(f"/api/v1/allocations/{estate['allocation'].pk}")
    assert stopped.status_code in (200, 202, 204), stopped.content
    assert Allocation.objects.get(pk=estate["allocation"].pk).state in ("stopping", "stopped")
    assert_problem(client.patch("/api/v1/tenant", {"name": "x"}, format="json"), 403, "tenant_not_active")


def test_staff_still_act_on_a_closing_tenant(
    api: Any, acme: Any, compliance: Any, operator: Any, estate: dict[str, Any]
) -> None:
    closing(acme)
    officer = api(compliance)
    hold = officer.post(
        "/api/v1/compliance/legal-holds",
        {"tenant": "acme", "matter": "Acme v. Initech", "reason": "litigation", "categories": ["checkpoint"]},
        format="json",
    )
    assert hold.status_code == 201, hold.content
    assert LegalHold.objects.filter(tenant=acme).count() == 1
    erased = officer.post(
        "/api/v1/erasure-requests",
        {"tenant": "acme", "on_behalf_of": "subject-7", "assets": [estate["asset"].pk]},
        format="json",
    )
    assert erased.status_code == 201, erased.content
    assert DataAsset.objects.get(pk=estate["asset"].pk).state == "shredding"
    quota = api(operator).put("/api/v1/ops/tenants/acme/quota", {"gpus": "2"}, format="json")
    assert quota.status_code == 200, quota.content
    assert Tenant.objects.get(pk=acme.pk).gpu_quota_milli == 2000
