"""The portal through Django's test client: signing up and confirming the address, launching through the same
services as the API (the same refusals on the form), running, stopping, cost, the team and its keys, retention,
leaving; and the rules every page keeps (another tenant's objects 404, roles, CSRF, the security headers)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core import mail
from django.test import Client, override_settings

from compliance.models import AccountClosure, RetentionPolicy
from core.models import AuditEvent
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation
from provisioning.services.fleet import fleet_load
from tenancy.models import ApiKey, Membership, Tenant
from tests.support import SYSTEM, teammate
from tests.support.fleet_documents import small_fleet

PASSWORD = "correct horse battery staple 42"


@pytest.fixture
def fleet(db: None) -> Any:
    return fleet_load(document=small_fleet(), actor=SYSTEM)


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def launch(client: Client, **fields: Any) -> Any:
    page = client.get("/portal/launch", {"rung": fields.get("rung", "container")})
    token = re.search(r'name="idempotency" value="([0-9a-f]+)"', page.content.decode())
    assert token, page.content
    body = {"idempotency": token[1], "rung": "container", "name": "work", "gpu_model": "H100-SXM-80GB", **fields}
    return client.post("/portal/launch", body)


def test_a_new_customer_signs_up_confirms_and_lands_on_an_empty_portal(db: None) -> None:
    client = Client()
    assert client.get("/")["Location"] == "/portal/"
    assert client.get("/portal/")["Location"].startswith("/login")
    made = client.post(
        "/signup", {"organisation": "Initech Labs", "email": "Ada@Initech.example", "password": PASSWORD}
    )
    assert made.status_code == 200
    assert b"Check your e-mail" in made.content
    tenant = Tenant.objects.get(slug="initech-labs")
    owner = Membership.objects.get(tenant=tenant).user
    assert (owner.username, owner.is_active) == ("ada@initech.example", False)
    assert not client.login(username="ada@initech.example", password=PASSWORD)  # not confirmed yet

    [message] = mail.outbox
    link = re.search(r"http://testserver(/confirm/\S+)", str(message.body))
    assert link
    landed = client.get(link[1], follow=True)
    assert landed.redirect_chain[-1][0] == "/portal/"
    assert b"Nothing runs yet" in landed.content
    assert AuditEvent.objects.filter(action="member.email_confirmed", tenant=tenant).exists()
    assert client.get(link[1])["Location"] == "/login"  # a second click: already confirmed
    assert Client().get("/confirm/not-a-token").status_code == 400

    again = Client().post(
        "/signup", {"organisation": "Initech Labs", "email": "ada@initech.example", "password": PASSWORD}
    )
    assert again.status_code == 422
    assert b"That username is not available" in again.content
    weak = Client().post("/signup", {"organisation": "X", "email": "x@x.example", "password": "123"})
    assert weak.status_code == 422


@override_settings(LADDER_SIM_PROVISION_SECONDS=0)
def test_a_member_launches_watches_and_stops_with_the_apis_rules(
    alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = signed_in(alice)
    page = client.get("/portal/launch?rung=container")
    assert b"A MIG slice: your own SMs" in page.content
    assert b"A container in your own namespace" in page.content
    refused = launch(client, gpus=1, image="evil.example.com/x:1")
    assert refused.status_code == 422
    assert b"not on the operator" in refused.content

    with django_capture_on_commit_callbacks(execute=True):
        made = launch(client, gpus=1, image="nvcr.io/nvidia/pytorch:25.01-py3", command="python -m http.server 8000")
    allocation = Allocation.objects.get(tenant__slug="acme")
    assert made["Location"] == f"/portal/allocations/{allocation.pk}"
    allocations_reconcile()
    detail = client.get(made["Location"])
    assert b'data-state="running"' in detail.content
    assert b"$ python -m http.server 8000" in detail.content
    assert b"<dd data-host>8 vCPUs and 64 GiB of memory beside its GPUs.</dd>" in detail.content  # the bundle
    assert b'data-state="running"' in client.get("/portal/allocations").content

    assert client.get(f"{made['Location']}/stop").status_code == 200  # the confirmation
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"{made['Location']}/stop")
    allocations_reconcile()
    assert Allocation.objects.get(pk=allocation.pk).state == "stopped"
    assert client.get("/portal/usage").status_code == 200
    csv = client.get("/portal/usage?format=csv")
    assert csv["Content-Type"] == "text/csv"
    assert csv.content.startswith(b"day,sku,gpu_seconds,amount,currency")


def test_the_same_launch_form_sent_twice_places_once(alice: Any, fleet: Any) -> None:
    client = signed_in(alice)
    page = client.get("/portal/launch")
    token = re.search(r'name="idempotency" value="([0-9a-f]+)"', page.content.decode())
    assert token
    body = {"idempotency": token[1], "rung": "container", "name": "once", "gpu_model": "H100-SXM-80GB", "gpus": 1}
    first, second = client.post("/portal/launch", body), client.post("/portal/launch", body)
    assert first["Location"] == second["Location"]
    assert Allocation.objects.count() == 1


def test_another_tenant_sees_none_of_it_and_a_viewer_cannot_launch(
    alice: Any, charlie: Any, acme: Any, fleet: Any
) -> None:
    launch(signed_in(alice), gpus=1)
    allocation = Allocation.objects.get()
    other = signed_in(charlie)
    for path in (f"/portal/allocations/{allocation.pk}", f"/portal/allocations/{allocation.pk}/live"):
        assert other.get(path).status_code == 404
    assert other.post(f"/portal/allocations/{allocation.pk}/stop").status_code == 404
    assert b"work" not in other.get("/portal/").content
    teammate(acme, "viewer")
    viewer = signed_in(Membership.objects.get(role="viewer").user)
    assert viewer.get("/portal/launch").status_code == 403
    assert viewer.get("/portal/").status_code == 200


def test_a_post_without_the_csrf_token_is_refused(alice: Any, fleet: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post("/portal/launch", {"rung": "container", "name": "x"}).status_code == 403
    assert not Allocation.objects.exists()


def test_pages_carry_a_strict_content_security_policy(alice: Any) -> None:
    response = signed_in(alice).get("/portal/")
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert b"<script>" not in response.content  # no inline script for the policy to refuse


def test_owners_invite_members_who_set_their_password(alice: Any, acme: Any) -> None:
    client = signed_in(alice)
    client.post("/portal/team", {"form": "invite", "email": "Grace@acme.example", "role": "member"})
    grace = Membership.objects.get(user__username="grace@acme.example")
    assert grace.role == "member"
    [message] = mail.outbox
    link = re.search(r"http://testserver(/password-reset/\S+)", str(message.body))
    assert link
    invited = Client()
    form = invited.get(link[1], follow=True)
    assert b"Set your password" in form.content
    invited.post(form.redirect_chain[-1][0], {"new_password1": PASSWORD, "new_password2": PASSWORD})
    assert invited.login(username="grace@acme.example", password=PASSWORD)


def test_keys_are_shown_once_and_revoked(alice: Any) -> None:
    client = signed_in(alice)
    made = client.post("/portal/team", {"form": "key", "name": "ci", "write": ""})
    token = re.search(rb"<code data-key>(ldr_\S+)</code>", made.content)
    assert token
    assert token[1] not in client.get("/portal/team").content
    key = ApiKey.objects.get(name="ci")
    assert key.scopes == ["read"]
    client.post(f"/portal/team/keys/{key.pk}/revoke")
    key.refresh_from_db()
    assert key.revoked_at is not None


def test_owners_set_retention_and_close_the_account(alice: Any, bob: Any, acme: Any) -> None:
    client = signed_in(alice)
    client.post("/portal/data", {"category": "job_log", "days": "30"})
    assert RetentionPolicy.objects.get(tenant=acme, category="job_log").days == 30
    assert signed_in(bob).post("/portal/data", {"category": "job_log", "days": "5"}).status_code == 403
    assert signed_in(bob).get("/portal/leave").status_code == 403
    wrong = client.post("/portal/leave", {"confirm": "ACME"})
    assert wrong.status_code == 422
    assert not AccountClosure.objects.exists()
    closed = client.post("/portal/leave", {"confirm": "acme"})
    assert b"is closing" in closed.content
    assert AccountClosure.objects.filter(tenant=acme).exists()


def test_the_launch_form_carries_every_workload_field(alice: Any, acme: Any, fleet: Any) -> None:
    from compliance.services.assets import data_asset_create
    from compliance.services.secrets import secret_create

    secret_create(tenant=acme, name="HF_TOKEN", value="hf_x", actor=SYSTEM)
    secret_create(tenant=acme, name="REGISTRY", value="robot:token", actor=SYSTEM)
    corpus = data_asset_create(
        tenant=acme, name="corpus", category="dataset", region="eu-west", content=b"text", actor=SYSTEM
    )
    client = signed_in(alice)
    made = launch(
        client,
        rung="job",
        name="train",
        gpus=8,
        gang_size=2,
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        command="torchrun train.py",
        secret_files=["HF_TOKEN"],
        pull_secret="REGISTRY",
        dataset=str(corpus.pk),
        dataset_path="/data",
        scratch_gb=50,
        scratch_path="/scratch",
        checkpoint_path="/ckpt",
        checkpoint_interval=120,
    )
    assert made.status_code == 302, made.content
    workload = Allocation.objects.get(name="train").workload
    assert workload is not None
    assert workload["secrets"] == [{"name": "HF_TOKEN", "as": "file"}]
    assert workload["pull_secret"] == "REGISTRY"
    assert workload["volumes"] == [
        {"mount_path": "/data", "dataset": corpus.pk},
        {"mount_path": "/scratch", "scratch_gb": 50},
    ]
    assert workload["checkpoint"] == {"path": "/ckpt", "interval_s": 120}
    assert workload["framework"] == "torchrun"


def test_a_job_launched_from_the_portal_names_its_framework(alice: Any, fleet: Any) -> None:
    client = signed_in(alice)
    made = launch(
        client, rung="job", name="mpi", gpus=8, gang_size=2, image="nvcr.io/nvidia/pytorch:25.01-py3",
        command="python allreduce.py", framework="mpi",
    )  # fmt: skip
    assert made.status_code == 302, made.content
    assert (Allocation.objects.get(name="mpi").workload or {})["framework"] == "mpi"
    refused = launch(client, rung="job", name="ray", gpus=8, image="docker.io/rayproject/ray:2.49.0", framework="ray")
    assert refused.status_code == 422
    assert "the Ray job&#x27;s entrypoint runs" in refused.content.decode()
    assert not Allocation.objects.filter(name="ray").exists()


def test_a_restarted_job_shows_its_checkpoint_and_the_work_not_billed(
    alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = signed_in(alice)
    with django_capture_on_commit_callbacks(execute=True):
        made = launch(client, rung="job", gpus=2)
    allocation = Allocation.objects.get(tenant__slug="acme")
    Allocation.objects.filter(pk=allocation.pk).update(
        state="restarting", restarts=1, goodput_lost_ms=754_000, checkpoint_at=allocation.created_at
    )
    detail = client.get(made["Location"]).content.decode()
    assert 'data-state="restarting"' in detail
    assert "resumes from its last checkpoint" in detail
    assert "Restarted 1 time after provider faults; 13 min of work redone and not billed." in detail
    assert f"Last checkpoint {allocation.created_at:%Y-%m-%d %H:%M:%S}" in detail
