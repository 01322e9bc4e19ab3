"""A closing tenant reads but changes nothing, through the portal: each form that would change the tenant's things
(invite a member, create an API key, add an SSH key, store a secret, set the budget, and the rest) is refused with
the services' own words on the page, and nothing is created, changed or audited. The pages still read, and each
says the tenant is closing."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from billing.models import BillingAccount
from compliance.models import DataAsset, ErasureRequest, RetentionPolicy, TenantSecret
from compliance.services.secrets import secret_create
from core.models import AuditEvent
from lifecycle.services.customers import allocation_request
from provisioning.models import Allocation
from provisioning.services.placing import AllocationSpec
from tenancy.models import ApiKey, Membership, SshKey, Tenant, TenantState
from tenancy.services import api_key_create, ssh_key_add
from tests.portal.test_access import public_key
from tests.support import SYSTEM
from tests.support.data import asset, regions

REFUSAL = "The tenant is closing: it can read but not change anything."
H100 = "H100-SXM-80GB"


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def estate(acme: Any, alice: Any, bob: Any, settings: Any, django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    """Acme with one of everything its members may change, then closing."""
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    regions()
    spec = AllocationSpec(rung="container", gpu_models=(H100,), gpus=1)
    with django_capture_on_commit_callbacks(execute=True):
        allocation = allocation_request(tenant=acme, name="training", spec=spec, actor=SYSTEM)
    made = {
        "allocation": allocation,
        "api_key": api_key_create(user=alice, name="ci", scopes=["read"], expires_at=None, actor=SYSTEM).key,
        "ssh_key": ssh_key_add(tenant=acme, name="laptop", public_key=public_key(), actor=SYSTEM),
        "secret": secret_create(tenant=acme, name="HF_TOKEN", value="v1", actor=SYSTEM),
        "asset": asset(acme, name="corpus"),
        "bobs": Membership.objects.get(user=bob),
    }
    Tenant.objects.filter(pk=acme.pk).update(state=TenantState.CLOSING)
    return made


def shown(response: Any) -> str:
    """The page's text, followed to where the portal sent it."""
    return response.content.decode()


def test_inviting_a_member_is_refused_on_the_form(alice: Any, acme: Any, estate: dict[str, Any]) -> None:
    events = AuditEvent.objects.count()
    page = signed_in(alice).post("/portal/team", {"form": "invite", "email": "dave@acme.example", "role": "member"})
    assert REFUSAL in shown(page)
    assert not Membership.objects.filter(user__username="dave@acme.example").exists()
    assert AuditEvent.objects.count() == events


def test_creating_an_api_key_is_refused_on_the_form(alice: Any, acme: Any, estate: dict[str, Any]) -> None:
    keys = ApiKey.objects.count()
    page = signed_in(alice).post("/portal/team", {"form": "key", "name": "laptop", "write": "on"})
    assert REFUSAL in shown(page)
    assert "shown this once" not in shown(page)
    assert ApiKey.objects.count() == keys


def test_adding_an_ssh_key_is_refused_on_the_form(alice: Any, acme: Any, estate: dict[str, Any]) -> None:
    page = signed_in(alice).post("/portal/access", {"form": "ssh_key", "name": "desk", "public_key": public_key()})
    assert page.status_code == 422
    assert REFUSAL in shown(page)
    assert list(SshKey.objects.filter(tenant=acme).values_list("name", flat=True)) == ["laptop"]


def test_storing_a_secret_is_refused_on_the_form(alice: Any, acme: Any, estate: dict[str, Any]) -> None:
    page = signed_in(alice).post("/portal/access", {"form": "secret", "name": "OTHER", "value": "x"})
    assert page.status_code == 422
    assert REFUSAL in shown(page)
    assert "x" not in re.findall(r'value="([^"]*)"', shown(page))  # the value is not sent back
    assert list(TenantSecret.objects.filter(tenant=acme).values_list("name", "version")) == [("HF_TOKEN", 1)]


def test_setting_the_budget_is_refused_on_the_form(alice: Any, acme: Any, estate: dict[str, Any]) -> None:
    page = signed_in(alice).post("/portal/billing", {"monthly": "250.00", "hard_stop": "on"})
    assert page.status_code == 422
    assert REFUSAL in shown(page)
    assert BillingAccount.objects.get(tenant=acme).budget_monthly is None


def test_every_other_change_is_refused_in_the_same_words(alice: Any, acme: Any, estate: dict[str, Any]) -> None:
    client = signed_in(alice)
    events = AuditEvent.objects.count()
    secret, bobs = estate["secret"], estate["bobs"]
    launch = client.get("/portal/launch", {"rung": "container"})
    token = re.search(r'name="idempotency" value="([0-9a-f]+)"', shown(launch))
    assert token
    answers = {
        "launch": client.post(
            "/portal/launch",
            {"idempotency": token[1], "rung": "container", "name": "more", "gpu_model": H100, "gpus": 1},
        ),
        "stop": client.post(f"/portal/allocations/{estate['allocation'].pk}/stop", follow=True),
        "revoke a key": client.post(f"/portal/team/keys/{estate['api_key'].pk}/revoke", follow=True),
        "remove an SSH key": client.post(f"/portal/access/ssh-keys/{estate['ssh_key'].pk}/remove", follow=True),
        "new secret value": client.post(f"/portal/access/secrets/{secret.name}/value", {"value": "v2"}),
        "delete a secret": client.post(f"/portal/access/secrets/{secret.name}/delete"),
        "change a role": client.post(f"/portal/team/members/{bobs.pk}/role", {"role": "viewer"}, follow=True),
        "remove a member": client.post(f"/portal/team/members/{bobs.pk}/remove"),
        "set retention": client.post("/portal/data", {"category": "dataset", "days": "9"}, follow=True),
        "erase": client.post("/portal/data/erasure", {"category": "dataset", "confirm": "on"}),
        "leave again": client.post("/portal/leave", {"confirm": "acme"}),
    }
    assert {what: REFUSAL in shown(page) for what, page in answers.items()} == dict.fromkeys(answers, True)
    assert {what: page.status_code for what, page in answers.items() if page.status_code >= 500} == {}
    # Nothing changed.
    assert AuditEvent.objects.count() == events
    assert Allocation.objects.get(pk=estate["allocation"].pk).state == "running"
    assert Allocation.objects.filter(tenant=acme).count() == 1
    assert ApiKey.objects.get(pk=estate["api_key"].pk).revoked_at is None
    assert SshKey.objects.filter(pk=estate["ssh_key"].pk).exists()
    assert TenantSecret.objects.get(pk=secret.pk).version == 1
    assert Membership.objects.get(pk=bobs.pk).role == "member"
    assert not RetentionPolicy.objects.filter(tenant=acme).exists()
    assert not ErasureRequest.objects.filter(tenant=acme).exists()
    assert DataAsset.objects.get(pk=estate["asset"].pk).state == "live"


@pytest.mark.parametrize(
    "path", ["/portal/", "/portal/usage", "/portal/team", "/portal/access", "/portal/data", "/portal/billing"]
)
def test_a_closing_tenant_still_reads_its_pages_and_each_says_it_is_closing(
    alice: Any, estate: dict[str, Any], path: str
) -> None:
    page = signed_in(alice).get(path)
    assert page.status_code == 200
    notice = re.search(r'<p class="notice" role="status" data-tenant-state="closing">([^<]+)</p>', shown(page))
    assert notice is not None
    assert notice.group(1) == (
        "Acme Robotics is closing: you can read and download everything here, but nothing can be changed."
    )


def test_an_active_or_suspended_tenants_pages_say_nothing_of_it(alice: Any, acme: Any) -> None:
    for state in (TenantState.ACTIVE, TenantState.SUSPENDED):
        Tenant.objects.filter(pk=acme.pk).update(state=state)
        assert 'class="notice"' not in shown(signed_in(alice).get("/portal/"))
