"""The data page's rights: the tenant's residency report (every member), and erasure requests by category (the
owner's), showing what was erased and what a legal hold withheld: the hold's id and that a hold applies, never
the hold's matter."""

from __future__ import annotations

from typing import Any

from django.test import Client

from compliance.models import ErasureRequest
from compliance.services.assets import AssetScope
from compliance.services.holds import legal_hold_create
from tenancy.services import Residency, tenant_update
from tests.support import SYSTEM
from tests.support.data import T0, asset, regions

MATTER = "Acme v. Initech, privileged"


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_every_member_reads_the_residency_report(alice: Any, bob: Any, acme: Any) -> None:
    regions()
    asset(acme, category="dataset", region="eu-west")
    page = signed_in(bob).get("/portal/data")
    assert b"Every place is within your residency" in page.content
    assert b"<td>eu-west</td>" in page.content
    tenant_update(
        tenant=acme, actor=SYSTEM, residency=Residency(regions=["us-east"], jurisdictions=None, sovereign=False)
    )
    page = signed_in(bob).get("/portal/data")
    assert b'data-violations="1"' in page.content
    assert b"1 place your residency now forbids" in page.content


def test_an_owner_asks_for_an_erasure_and_sees_what_a_hold_withheld(alice: Any, acme: Any) -> None:
    regions()
    kept = asset(acme, category="job_log", name="held-log")
    asset(acme, category="job_log", name="free-log", at=T0.replace(year=2026, month=6))
    hold = legal_hold_create(
        tenant=acme,
        matter=MATTER,
        reason="litigation, confidential",
        scope=AssetScope(categories=["job_log"], created_to=T0.replace(month=2)),
        lock_until=None,
        actor=SYSTEM,
    )
    client = signed_in(alice)
    unconfirmed = client.post("/portal/data/erasure", {"category": "job_log"})
    assert unconfirmed.status_code == 422
    assert not ErasureRequest.objects.exists()
    done = client.post("/portal/data/erasure", {"category": "job_log", "confirm": "on"}, follow=True)
    made = ErasureRequest.objects.get(tenant=acme)
    assert f"Erasure request {made.pk} is recorded".encode() in done.content
    assert f'data-withheld="{kept.pk}"'.encode() in done.content
    assert f"held-log: a legal hold applies (hold {hold.pk})".encode() in done.content
    assert b"1 asset<" in done.content  # free-log: erased
    assert MATTER.encode() not in done.content
    assert b"confidential" not in done.content


def test_only_the_owner_asks_for_or_reads_erasures_and_never_another_tenants(
    alice: Any, bob: Any, charlie: Any, acme: Any
) -> None:
    regions()
    asset(acme, category="job_log")
    signed_in(alice).post("/portal/data/erasure", {"category": "job_log", "confirm": "on"})
    made = ErasureRequest.objects.get()
    member = signed_in(bob)
    assert member.post("/portal/data/erasure", {"category": "job_log", "confirm": "on"}).status_code == 403
    assert b"Erasure requests" not in member.get("/portal/data").content
    other = signed_in(charlie)
    page = other.get("/portal/data")
    assert b"Erasure requests" in page.content  # charlie owns globex
    assert f'data-erasure="{made.pk}"'.encode() not in page.content
    assert ErasureRequest.objects.count() == 1
