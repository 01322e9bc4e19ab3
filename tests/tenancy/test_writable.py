"""A closing tenant only reads: every service that changes a tenant's things for it refuses its members and keys
with 403 ``tenant_not_active`` (``tenancy.services.tenant_require_writable``), before any other rule, and writes
nothing. A suspended tenant still manages what it has. Staff and the product's own work (the closure's steps, a
compliance officer's erasure for a data subject, an operator's quota) go on during the closure."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from billing.models import BillingAccount
from billing.services.accounts import PaymentRequired, admission_check
from compliance.models import (
    AccountClosure,
    AssetState,
    ClosureStep,
    DataAsset,
)
from compliance.services.assets import (
    AssetScope,
    data_asset_create,
    data_asset_delete,
    data_asset_move,
    data_asset_shred_cancel,
)
from compliance.services.capture import capture_policy_set
from compliance.services.erasure import erasure_request_create
from compliance.services.holds import legal_hold_create
from compliance.services.secrets import secret_create, secret_delete, secret_update
from compliance.services.sweep import retention_policy_set
from core.actor import Actor
from core.models import AuditEvent
from lifecycle.services.closure import tenant_close
from lifecycle.services.customers import allocation_request, budget_update
from provisioning.models import Allocation
from provisioning.services.placing import AllocationSpec
from provisioning.services.stopping import allocation_stop
from tenancy.domain.roles import TenantRole
from tenancy.models import Membership, Tenant, TenantState
from tenancy.services import (
    TenantNotActive,
    api_key_create,
    api_key_revoke,
    member_change_role,
    member_invite,
    member_remove,
    ssh_key_add,
    ssh_key_remove,
    tenant_require_writable,
    tenant_set_quota,
    tenant_update,
)
from tests.portal.test_access import public_key
from tests.support import SYSTEM
from tests.support.data import asset, regions
from tests.support.tenants import tenant_things

H100 = "H100-SXM-80GB"
SPEC = AllocationSpec(rung="container", gpu_models=(H100,), gpus=1)


def as_member(user: Any) -> Actor:
    return Actor.for_user(user)


def set_state(tenant: Tenant, state: str) -> Tenant:
    Tenant.objects.filter(pk=tenant.pk).update(state=state)
    tenant.refresh_from_db()
    return tenant


# --- the rule ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "writable"),
    [
        (TenantState.ACTIVE, True),
        (TenantState.SUSPENDED, True),  # it manages what it has; buying more is billing's 402
        (TenantState.CLOSING, False),
        (TenantState.CLOSED, False),
    ],
)
def test_a_member_writes_only_for_an_active_or_suspended_tenant(acme: Any, alice: Any, state: str, writable: bool):
    set_state(acme, state)
    if writable:
        tenant_require_writable(acme, actor=as_member(alice))
        return
    with pytest.raises(TenantNotActive) as refused:
        tenant_require_writable(acme, actor=as_member(alice))
    assert (refused.value.code, refused.value.status) == ("tenant_not_active", 403)
    assert refused.value.detail == f"The tenant is {state}: it can read but not change anything."


@pytest.mark.parametrize("state", [TenantState.CLOSING, TenantState.CLOSED])
def test_staff_and_the_product_act_on_a_closing_tenant(acme: Any, operator: Any, state: str):
    set_state(acme, state)
    for actor in (SYSTEM, Actor.for_user(operator), Actor(type="api_key", id="1", label="alice")):
        assert not actor.for_tenant
        tenant_require_writable(acme, actor=actor)


def test_a_member_and_their_key_act_for_the_tenant_and_staff_do_not(alice: Any, operator: Any):
    key = api_key_create(user=alice, name="k", scopes=["read"], expires_at=None, actor=SYSTEM).key
    assert Actor.for_user(alice).for_tenant
    assert Actor.for_user(alice, key).for_tenant
    assert not Actor.for_user(operator).for_tenant
    assert not Actor.system("closure").for_tenant


# --- every service a member changes the tenant's things through ---------------------------------------------------


@pytest.fixture
def estate(acme: Any, alice: Any, bob: Any, settings: Any, django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    """Acme with one of everything a member may change: a running allocation, an API key, an SSH key, a secret,
    a data asset (and one waiting to be shredded), a budget."""
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    regions()
    with django_capture_on_commit_callbacks(execute=True):
        allocation = allocation_request(tenant=acme, name="training", spec=SPEC, actor=SYSTEM)
    live = asset(acme, name="corpus")
    deleted = data_asset_delete(asset=asset(acme, name="old"), actor=SYSTEM)
    assert deleted.state == AssetState.SHREDDING
    return {
        "allocation": Allocation.objects.get(pk=allocation.pk),
        "api_key": api_key_create(user=alice, name="ci", scopes=["read"], expires_at=None, actor=SYSTEM).key,
        "ssh_key": ssh_key_add(tenant=acme, name="laptop", public_key=public_key(), actor=SYSTEM),
        "secret": secret_create(tenant=acme, name="HF_TOKEN", value="v1", actor=SYSTEM),
        "asset": live,
        "shredding": deleted,
        "bobs": Membership.objects.get(user=bob),
    }


def member_writes(acme: Any, alice: Any, estate: dict[str, Any]) -> dict[str, Callable[[Actor], Any]]:
    """Each service a member changes the tenant's things through, called as ``actor``."""
    owner = TenantRole.OWNER
    return {
        "tenant_update": lambda a: tenant_update(tenant=acme, name="Acme Labs", actor=a),
        "member_invite": lambda a: member_invite(
            tenant=acme, actor_role=owner, username="dave", email="dave@acme.test", role="member", actor=a
        ),
        "member_change_role": lambda a: member_change_role(
            membership=estate["bobs"], actor_role=owner, role="viewer", actor=a
        ),
        "member_remove": lambda a: member_remove(membership=estate["bobs"], actor_role=owner, actor=a),
        "api_key_create": lambda a: api_key_create(user=alice, name="new", scopes=["read"], expires_at=None, actor=a),
        "api_key_revoke": lambda a: api_key_revoke(key=estate["api_key"], actor=a),
        "ssh_key_add": lambda a: ssh_key_add(tenant=acme, name="desk", public_key=public_key(), actor=a),
        "ssh_key_remove": lambda a: ssh_key_remove(key=estate["ssh_key"], actor=a),
        "secret_create": lambda a: secret_create(tenant=acme, name="OTHER", value="x", actor=a),
        "secret_update": lambda a: secret_update(secret=estate["secret"], value="v2", actor=a),
        "secret_delete": lambda a: secret_delete(secret=estate["secret"], actor=a),
        "data_asset_create": lambda a: data_asset_create(
            tenant=acme, name="late", category="dataset", region="eu-west", size_bytes=1, actor=a
        ),
        "data_asset_move": lambda a: data_asset_move(asset=estate["asset"], region="us-east", actor=a),
        "data_asset_delete": lambda a: data_asset_delete(asset=estate["asset"], actor=a),
        "data_asset_shred_cancel": lambda a: data_asset_shred_cancel(asset=estate["shredding"], actor=a),
        "retention_policy_set": lambda a: retention_policy_set(
            tenant=acme, category="dataset", days=9, zero_retention=False, actor=a
        ),
        "capture_policy_set": lambda a: capture_policy_set(tenant=acme, inference_payloads=True, actor=a),
        "erasure_request_create": lambda a: erasure_request_create(tenant=acme, actor=a, categories=["dataset"]),
        "budget_update": lambda a: budget_update(
            tenant=acme, monthly=Decimal("100"), hard_stop=False, actor=a, now=timezone.now()
        ),
        "allocation_request": lambda a: allocation_request(tenant=acme, name="more", spec=SPEC, actor=a),
        "allocation_stop": lambda a: allocation_stop(allocation=estate["allocation"], actor=a),
        "tenant_close": lambda a: tenant_close(tenant=acme, actor=a),
    }


def test_every_member_write_is_refused_for_a_closing_tenant_and_writes_nothing(
    acme: Any, alice: Any, estate: dict[str, Any]
):
    set_state(acme, TenantState.CLOSING)
    before = tenant_things(acme)
    refused = {}
    for name, write in member_writes(acme, alice, estate).items():
        try:
            write(as_member(alice))
        except TenantNotActive as error:
            refused[name] = error.code
    assert refused == dict.fromkeys(member_writes(acme, alice, estate), "tenant_not_active")
    assert tenant_things(acme) == before


def test_the_refusal_comes_before_any_rule_about_the_input(acme: Any, alice: Any, estate: dict[str, Any]):
    set_state(acme, TenantState.CLOSING)
    with pytest.raises(TenantNotActive):
        ssh_key_add(tenant=acme, name="bad", public_key="not a key", actor=as_member(alice))
    with pytest.raises(TenantNotActive):
        secret_create(tenant=acme, name="1 bad name", value="", actor=as_member(alice))
    with pytest.raises(TenantNotActive):
        retention_policy_set(tenant=acme, category="nonsense", days=None, zero_retention=False, actor=as_member(alice))


def test_a_suspended_tenant_manages_what_it_has_but_buys_nothing(acme: Any, alice: Any, estate: dict[str, Any]):
    set_state(acme, TenantState.SUSPENDED)
    member = as_member(alice)
    budget_update(tenant=acme, monthly=Decimal("100"), hard_stop=False, actor=member, now=timezone.now())
    assert BillingAccount.objects.get(tenant=acme).budget_monthly == Decimal("100")
    assert allocation_stop(allocation=estate["allocation"], actor=member).state == "stopping"
    secret_update(secret=estate["secret"], value="v2", actor=member)
    with pytest.raises(PaymentRequired) as unpaid:
        allocation_request(tenant=acme, name="more", spec=SPEC, actor=member)
    assert unpaid.value.code == "payment_required"
    with pytest.raises(TenantNotActive, match="its settings cannot change"):
        tenant_update(tenant=acme, name="Acme Labs", actor=member)


def test_capacity_for_a_closing_tenant_is_refused_whoever_asks(acme: Any):
    set_state(acme, TenantState.CLOSING)
    with pytest.raises(TenantNotActive, match="it cannot request capacity"):
        admission_check(tenant=acme)


def test_the_closure_staff_and_the_product_still_act_on_a_closing_tenant(
    acme: Any,
    alice: Any,
    compliance: Any,
    operator: Any,
    estate: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
):
    # The owner asks; the closure's steps then run (inline here) in the owner's name, as the product's work: they
    # stop what runs and write the final invoice and the export while the tenant is closing.
    with django_capture_on_commit_callbacks(execute=True):
        tenant_close(tenant=acme, actor=as_member(alice))
    closure = AccountClosure.objects.get(tenant=acme)
    assert (closure.step, Tenant.objects.get(pk=acme.pk).state) == (ClosureStep.WAITING, TenantState.CLOSING)
    assert Allocation.objects.get(pk=estate["allocation"].pk).state == "stopped"
    assert DataAsset.objects.filter(pk__in=[closure.final_invoice_id, closure.export_id]).count() == 2
    assert AuditEvent.objects.filter(action="allocation.stopping", actor_label="alice").exists()
    # A compliance officer's erasure for a data subject and a legal hold; an operator's quota.
    acme.refresh_from_db()
    officer = Actor.for_user(compliance)
    made = erasure_request_create(tenant=acme, actor=officer, categories=["dataset"], on_behalf_of="subject-7")
    assert made.requested_by == "compliance"
    hold = legal_hold_create(
        tenant=acme, matter="m", reason="r", scope=AssetScope(categories=["checkpoint"]), lock_until=None, actor=officer
    )
    assert hold.tenant_id == acme.pk
    assert (
        tenant_set_quota(
            tenant=acme, gpu_quota_milli=2000, endpoint_calls_per_minute=None, actor=Actor.for_user(operator)
        ).gpu_quota_milli
        == 2000
    )
