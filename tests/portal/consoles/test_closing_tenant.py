"""The consoles act on a tenant as staff, never for it: no console page changes a tenant's things on its behalf, so
a closing tenant's standing refuses none of them. What staff must still do while a tenant closes works from the
consoles: compliance places and releases a legal hold over its data, an operator drains the node its work ran on
and sets its quota, finance reconciles its month."""

from __future__ import annotations

from typing import Any

import pytest

from compliance.models import HoldState, LegalHold
from core.actor import Actor
from core.models import AuditEvent
from lifecycle.services.closure import tenant_close
from lifecycle.services.customers import allocation_request
from provisioning.models import Allocation, Node
from provisioning.services.placing import AllocationSpec
from tenancy.models import Tenant, TenantState
from tests.support import SYSTEM
from tests.support.consoles import signed_in, token
from tests.support.data import asset, regions


@pytest.fixture
def closing(acme: Any, alice: Any, settings: Any, django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    """Acme, which ran work and kept data, has asked to close: its closure is waiting out its period."""
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    regions()
    spec = AllocationSpec(rung="container", gpu_models=("H100-SXM-80GB",), gpus=1)
    with django_capture_on_commit_callbacks(execute=True):
        allocation = allocation_request(tenant=acme, name="training", spec=spec, actor=SYSTEM)
    node_id = allocation.devices.values_list("gpu__node", flat=True).first()
    assert node_id is not None
    node = Node.objects.get(pk=node_id)
    asset(acme, category="checkpoint", name="step-1000")
    with django_capture_on_commit_callbacks(execute=True):
        tenant_close(tenant=acme, actor=Actor.for_user(alice))
    assert Tenant.objects.get(pk=acme.pk).state == TenantState.CLOSING
    assert Allocation.objects.get(pk=allocation.pk).state == "stopped"
    return {"node": node}


def test_compliance_places_and_releases_a_hold_on_a_closing_tenant(compliance: Any, closing: dict[str, Any]) -> None:
    client = signed_in(compliance)
    preview = client.post("/console/compliance/holds", {"step": "preview", "tenant": "acme", "categories": []})
    assert preview.status_code == 200
    form = {"step": "place", "once": token(preview), "tenant": "acme", "matter": "m", "reason": "litigation"}
    assert client.post("/console/compliance/holds", form).status_code == 302
    hold = LegalHold.objects.get(tenant__slug="acme")
    confirm = client.get(f"/console/compliance/holds/{hold.pk}/release")
    release = client.post(f"/console/compliance/holds/{hold.pk}/release", {"once": token(confirm), "reason": "done"})
    assert release.status_code == 302
    hold.refresh_from_db()
    assert hold.state == HoldState.RELEASED
    assert [e.actor_label for e in AuditEvent.objects.filter(action__startswith="legal_hold.")] == ["compliance"] * 2


def test_an_operator_drains_its_node_and_sets_its_quota(operator: Any, acme: Any, closing: dict[str, Any]) -> None:
    client = signed_in(operator)
    node = closing["node"]
    confirm = client.get(f"/console/operators/nodes/{node.pk}/drain")
    drained = client.post(f"/console/operators/nodes/{node.pk}/drain", {"once": token(confirm), "reason": "repair"})
    assert drained.status_code == 302
    node.refresh_from_db()
    assert node.state == "draining"
    page = client.get("/console/operators/quotas")
    prefix = f"t{acme.pk}"
    form = {"tenant": "acme", f"{prefix}-once": token(page, prefix), f"{prefix}-gpus": "2"}
    assert client.post("/console/operators/quotas", form).status_code == 302
    assert Tenant.objects.get(pk=acme.pk).gpu_quota_milli == 2000


def test_finance_reconciles_a_closing_tenants_month(finance: Any, acme: Any, closing: dict[str, Any]) -> None:
    client = signed_in(finance)
    page = client.get("/console/finance/reconciliation")
    started = client.post(
        "/console/finance/reconciliation", {"once": token(page), "month": "2026-11", "tenant": "acme"}
    )
    assert started.status_code == 302
    assert AuditEvent.objects.filter(action="billing.reconciliation_started", actor_label="finance").exists()
