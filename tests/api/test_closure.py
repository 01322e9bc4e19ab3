"""/api/v1/tenant/close: the owner closes the tenant; work stops, the final invoice and the export are stored and
readable through the closure period, everything else not held goes to shredding, and nothing can change after."""

import base64
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from compliance.models import AccountClosure, AssetState, DataAsset
from compliance.services.assets import AssetScope
from compliance.services.holds import legal_hold_create
from compliance.services.sweep import retention_sweep
from core.models import AuditEvent
from provisioning.models import Allocation
from tenancy.models import Tenant, TenantState
from tests.support import SYSTEM, assert_problem, teammate
from tests.support.data import regions

URL = "/api/v1/tenant/close"
ASSETS = "/api/v1/data-assets"
H100 = "H100-SXM-80GB"


@pytest.fixture
def fleet(db):
    return regions()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def register(client, name, category, content=None):
    body = {"name": name, "category": category, "region": "eu-west"}
    body.update({"content": b64(content)} if content is not None else {"size_bytes": 4096})
    response = client.post(ASSETS, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def place(client):
    body = {"name": "training", "rung": "container", "gpu_model": H100, "gpus": 1}
    response = client.post("/api/v1/allocations", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def estate(api, alice, acme, fleet, settings, django_capture_on_commit_callbacks):
    """Acme with a running allocation, data of several kinds and a legal hold over its checkpoints."""
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    client = api(alice)
    with django_capture_on_commit_callbacks(execute=True):
        allocation = place(client)
    assert client.get(f"/api/v1/allocations/{allocation['id']}").json()["state"] == "running"
    assets = {
        "dataset": register(client, "corpus", "dataset", b"the corpus"),
        "job_log": register(client, "run-1.log", "job_log"),
        "checkpoint": register(client, "step-1000", "checkpoint", b"held weights"),
        "invoice": register(client, "invoice-2025-12", "invoice", b'{"total": "12.00"}'),
    }
    hold = legal_hold_create(
        tenant=acme,
        matter="Acme v. Initech",
        reason="litigation",
        scope=AssetScope(categories=["checkpoint"]),
        lock_until=None,
        actor=SYSTEM,
    )
    return {"allocation": allocation, "assets": assets, "hold": hold}


def close(client, django_capture_on_commit_callbacks):
    """Ask to close, let the steps run (inline, as the embedded default runs them), then read the closure."""
    with django_capture_on_commit_callbacks(execute=True):
        asked = client.post(URL)
    assert asked.status_code == 202, asked.content
    assert asked.json()["step"] == "stopping"  # recorded first; the steps follow after commit
    return client.get(URL)


def test_the_owner_closes_the_tenant(api, alice, acme, estate, django_capture_on_commit_callbacks):
    client = api(alice)
    before = timezone.now()
    response = close(client, django_capture_on_commit_callbacks)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["step"] == "waiting"
    closure = AccountClosure.objects.get(tenant=acme)
    assert body["id"] == closure.pk
    assert body["state"] == "closing"
    assert body["requested_by"] == "alice"
    assert body["allocations_stopped"] == 1
    assert closure.closes_at is not None
    assert closure.closes_at >= before + timedelta(days=7)
    assert body["closes_at"]
    assert body["report"] == {
        "allocations_stopped": 1,
        "shredding_scheduled": 2,
        "kept_for_legal_minimum": 1,
        "held": {str(estate["hold"].pk): 1},
        "final_invoice": body["final_invoice"],
        "export": body["export"],
    }

    # Work stopped.
    allocation = client.get(f"/api/v1/allocations/{estate['allocation']['id']}").json()
    assert allocation["state"] == "stopped"
    assert not Allocation.objects.filter(tenant=acme).exclude(state="stopped").exists()

    # The tenant can still read: it is closing.
    assert client.get("/api/v1/tenant").json()["state"] == "closing"
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.CLOSING

    # The final invoice, a finance record.
    invoice = client.get(f"{ASSETS}/{body['final_invoice']}").json()
    assert invoice["category"] == "invoice"
    assert invoice["state"] == "live"
    document = json.loads(client.get(f"{ASSETS}/{body['final_invoice']}/content").content)
    assert document["final"] is True
    assert "total" in document
    assert "lines" in document

    # The export: JSON lines, a header then every asset with its content, downloadable while closing.
    export = client.get(f"{ASSETS}/{body['export']}").json()
    assert export["category"] == "export"
    assert export["state"] == "live"
    download = client.get(f"{ASSETS}/{body['export']}/content")
    assert download.status_code == 200
    assert download["Content-Type"] == "application/octet-stream"
    header, *lines = [json.loads(line) for line in download.content.splitlines()]
    assert header["format"] == "ladder-export"
    assert header["tenant"] == "acme"
    listed = {line["id"]: line for line in lines}
    assets = estate["assets"]
    assert set(listed) == {a["id"] for a in assets.values()} | {body["final_invoice"]}
    assert base64.b64decode(listed[assets["dataset"]["id"]]["content"]) == b"the corpus"
    assert base64.b64decode(listed[assets["checkpoint"]["id"]]["content"]) == b"held weights"
    assert "content" not in listed[assets["job_log"]["id"]]
    assert listed[assets["job_log"]["id"]]["size_bytes"] == 4096
    assert listed[assets["dataset"]["id"]]["category"] == "dataset"

    # Everything else goes to shredding, unless a hold or the legal minimum keeps it.
    states = {a["name"]: (a["state"], a["shred_reason"]) for a in client.get(ASSETS).json()["results"]}
    assert states["corpus"] == states["run-1.log"] == ("shredding", "closure")
    assert states["step-1000"] == ("live", "")  # under the legal hold
    assert states["invoice-2025-12"] == ("live", "")  # kept for its legal minimum
    assert_problem(client.get(f"{ASSETS}/{assets['dataset']['id']}/content"), 409, "asset_shredding")

    for action in ("tenant.closing", "tenant.closure_requested"):
        event = AuditEvent.objects.get(action=action, tenant=acme)
        assert event.actor_label == "alice"
    assert AuditEvent.objects.get(action="tenant.closure_requested").data["export"] == body["export"]


def test_a_closing_tenant_reads_but_changes_nothing(api, alice, acme, estate, django_capture_on_commit_callbacks):
    client = api(alice)
    assert close(client, django_capture_on_commit_callbacks).json()["step"] == "waiting"
    assert_problem(client.post(URL), 403, "tenant_not_active")  # a second close
    assert AccountClosure.objects.filter(tenant=acme).count() == 1
    assert AuditEvent.objects.filter(action="tenant.closing").count() == 1
    assert_problem(register_response(client), 403, "tenant_not_active")
    dataset = estate["assets"]["dataset"]["id"]
    assert_problem(client.post(f"{ASSETS}/{dataset}/cancel-shredding"), 403, "tenant_not_active")
    assert_problem(client.delete(f"{ASSETS}/{estate['assets']['checkpoint']['id']}"), 403, "tenant_not_active")
    assert_problem(
        client.put("/api/v1/retention-policies/dataset", {"days": 9}, format="json"), 403, "tenant_not_active"
    )
    assert client.get(ASSETS).status_code == 200
    assert client.get("/api/v1/retention-policies").status_code == 200
    assert client.get("/api/v1/residency-report").status_code == 200


def register_response(client):
    return client.post(
        ASSETS, {"name": "late", "category": "dataset", "region": "eu-west", "size_bytes": 1}, format="json"
    )


def test_at_the_end_of_the_period_the_tenant_is_closed_and_locked_out(
    api, alice, acme, estate, django_capture_on_commit_callbacks
):
    client = api(alice)
    closes_at = AccountClosure.objects.get(pk=close(client, django_capture_on_commit_callbacks).json()["id"]).closes_at
    assert closes_at is not None
    with django_capture_on_commit_callbacks(execute=True):
        retention_sweep(now=closes_at + timedelta(seconds=1))
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.CLOSED
    assert DataAsset.objects.get(pk=estate["assets"]["dataset"]["id"]).state == AssetState.SHREDDED
    assert DataAsset.objects.get(pk=estate["assets"]["checkpoint"]["id"]).state == AssetState.LIVE  # still held
    assert_problem(client.get(ASSETS), 401, "authentication_failed")


@pytest.mark.parametrize("role", ["member", "admin", "viewer", "billing"])
def test_only_the_owner_closes(acme, estate, role):
    client = teammate(acme, role)
    assert_problem(client.post(URL), 403, "permission_denied")
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.ACTIVE
    assert not AccountClosure.objects.exists()


def test_bob_cannot_close(api, bob, acme, fleet):
    assert_problem(api(bob).post(URL), 403, "permission_denied")
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.ACTIVE


def test_staff_without_a_tenant_are_refused(api, acme, compliance, operator, fleet):
    for user in (compliance, operator):
        assert_problem(api(user).post(URL), 403, "tenant_required")
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.ACTIVE


def test_closing_one_tenant_leaves_another_alone(
    api, alice, charlie, acme, globex, estate, django_capture_on_commit_callbacks
):
    theirs = api(charlie)
    register(theirs, "globex corpus", "dataset", b"globex only")
    body = close(theirs, django_capture_on_commit_callbacks).json()
    assert body["allocations_stopped"] == 0
    assert Tenant.objects.get(pk=globex.pk).state == TenantState.CLOSING
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.ACTIVE
    assert api(alice).get(f"/api/v1/allocations/{estate['allocation']['id']}").json()["state"] == "running"
    assert not DataAsset.objects.filter(tenant=acme).exclude(state=AssetState.LIVE).exists()
    # Charlie's export lists only his own data, and he cannot read acme's.
    download = theirs.get(f"{ASSETS}/{body['export']}/content")
    names = [json.loads(line).get("name") for line in download.content.splitlines()[1:]]
    assert "globex corpus" in names
    assert "corpus" not in names
    assert_problem(theirs.get(f"{ASSETS}/{estate['assets']['dataset']['id']}/content"), 404, "not_found")
    # Acme's own close is untouched by globex's.
    assert close(api(alice), django_capture_on_commit_callbacks).json()["step"] == "waiting"
    assert_problem(api(alice).get(f"{ASSETS}/{body['export']}/content"), 404, "not_found")
