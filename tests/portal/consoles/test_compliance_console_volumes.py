"""Volumes in the compliance console: the volumes a hold would preserve (preview), does preserve (register and
release page, none once released), the volumes an erasure deleted and withheld (with the hold), and each tenant's
volumes in the residency report with their verdict."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from compliance.models import LegalHold
from compliance.services.assets import AssetScope
from compliance.services.erasure import erasure_request_create
from compliance.services.holds import legal_hold_create
from tests.support import SYSTEM
from tests.support.consoles import signed_in, token
from tests.support.data import regions
from tests.support.volumes import volume_made_at, volume_make


@pytest.fixture
def volumes(
    api: Any, alice: Any, acme: Any, db: None, django_capture_on_commit_callbacks: Any
) -> dict[str, dict[str, Any]]:
    """Acme's old ``evidence`` volume (eu-west) and a new ``scratch`` block volume (us-east)."""
    regions()
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    evidence = volume_make(client, capture, name="evidence")
    volume_made_at(evidence["id"], timezone.now() - timedelta(days=60))
    scratch = volume_make(client, capture, name="scratch", region="us-east", kind="block", size_gb=100)
    return {"evidence": evidence, "scratch": scratch}


def test_the_hold_register_shows_the_volumes_each_hold_preserves(
    compliance: Any, acme: Any, volumes: dict[str, Any]
) -> None:
    client = signed_in(compliance)
    preview = client.post("/console/compliance/holds", {"step": "preview", "tenant": "acme", "categories": ["volume"]})
    text = preview.content.decode()
    assert "Volumes among them:" in text
    assert "volume evidence <small>(eu-west, filesystem, 500 GB, available)</small>" in text
    assert "volume scratch <small>(us-east, block, 100 GB, available)</small>" in text
    placed = client.post(
        "/console/compliance/holds",
        {
            "step": "place",
            "once": token(preview),
            "tenant": "acme",
            "categories": ["volume"],
            "created_to": (timezone.now() - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M"),
            "matter": "Acme v. Initech",
            "reason": "litigation",
        },
    )
    assert placed.status_code == 302
    hold = LegalHold.objects.get()
    register = client.get("/console/compliance/holds").content.decode()
    row = register.split(f'id="hold-{hold.pk}"')[1].split("</tr>")[0]
    assert f'data-volume="{volumes["evidence"]["id"]}"' in row
    assert "volume evidence <small>(eu-west, filesystem, 500 GB, available)</small>" in row
    assert "scratch" not in row  # made after the hold's range
    confirm = client.get(f"/console/compliance/holds/{hold.pk}/release")
    assert "volume evidence <small>(eu-west, filesystem, 500 GB, available)</small>" in confirm.content.decode()
    assert "a volume whose deletion the hold stopped goes on being deleted" in confirm.content.decode()
    released = client.post(f"/console/compliance/holds/{hold.pk}/release", {"once": token(confirm), "reason": "done"})
    assert released.status_code == 302
    after = client.get("/console/compliance/holds").content.decode()
    assert "volume evidence" not in after.split(f'id="hold-{hold.pk}"')[1].split("</tr>")[0]


def test_erasures_show_the_volumes_deleted_and_withheld_with_their_hold(
    compliance: Any, acme: Any, volumes: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    hold = legal_hold_create(
        tenant=acme,
        matter="Acme v. Initech",
        reason="litigation",
        scope=AssetScope(categories=["volume"], created_to=timezone.now() - timedelta(days=30)),
        lock_until=None,
        actor=SYSTEM,
    )
    with django_capture_on_commit_callbacks(execute=True):
        erasure_request_create(tenant=acme, actor=SYSTEM, categories=["volume"], on_behalf_of="a subject")
    page = signed_in(compliance).get("/console/compliance/erasures").content.decode()
    assert "volume scratch <small>(us-east, block, 100 GB, deleting)</small>" in page
    assert (
        "volume evidence <small>(eu-west, filesystem, 500 GB, available)</small></span> — hold "
        f"{hold.pk}: Acme v. Initech (active)"
    ) in page


def test_the_residency_page_lists_each_volume_with_its_verdict(
    compliance: Any, acme: Any, volumes: dict[str, Any]
) -> None:
    acme.residency_jurisdictions = ["EU"]
    acme.save()
    page = signed_in(compliance).get("/console/compliance/residency").content.decode()
    evidence = page.split(f'data-volume="{volumes["evidence"]["id"]}"')[1].split("</tr>")[0]
    assert "<td>volume evidence</td><td>eu-west (EU)</td><td>filesystem, 500 GB, available</td>" in evidence
    assert evidence.startswith(">")  # not flagged
    assert "allowed" in evidence
    scratch = page.split(f'data-volume="{volumes["scratch"]["id"]}"')[1].split("</tr>")[0]
    assert scratch.startswith(' class="violation">')
    assert "<td>volume scratch</td><td>us-east (US)</td><td>block, 100 GB, available</td>" in scratch
    assert "<strong>Violation:</strong>" in scratch
