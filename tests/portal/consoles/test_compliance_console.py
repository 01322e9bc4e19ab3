"""The compliance console through Django's test client: audit search with each event's changes and paging, chain
verification ending at the signed checkpoint, a signed bundle streamed (and verified offline), the hold register
(preview → place → release, a locked hold refused in the service's words, a form sent twice acting once), erasure
requests with withheld items and their holds, the residency report across tenants."""

from __future__ import annotations

import io
import re
from datetime import timedelta
from typing import Any

from django.http import StreamingHttpResponse
from django.utils import timezone

from compliance.domain.verify import verify_bundle
from compliance.models import AuditCheckpoint, HoldState, LegalHold
from compliance.services.assets import AssetScope
from compliance.services.erasure import erasure_request_create
from compliance.services.holds import legal_hold_create
from compliance.signing import audit_signer
from core.models import AuditEvent
from tenancy.services import Residency, tenant_update
from tests.support import SYSTEM
from tests.support.audit_tamper import tamper_update
from tests.support.consoles import signed_in, token
from tests.support.data import asset, regions

# --- the audit log ------------------------------------------------------------------------------------------------


def test_it_searches_the_audit_log_by_tenant_action_actor_and_target_with_changes(
    compliance: Any, acme: Any, globex: Any
) -> None:
    tenant_update(tenant=acme, actor=SYSTEM, name="Acme Robotics GmbH")
    client = signed_in(compliance)
    page = client.get("/console/compliance/", {"tenant": "acme", "action": "tenant."})
    text = page.content.decode()
    assert page.status_code == 200
    assert "tenant.updated" in text
    assert "tenant.created" in text
    assert "Acme Robotics GmbH" in text  # the change: old → new
    assert "globex" not in text.split("<h2>Events")[1]
    by_target = client.get("/console/compliance/", {"target": f"tenant:{globex.pk}"}).content.decode()
    assert "<td>globex</td>" in by_target
    assert "<td>acme</td>" not in by_target
    by_actor = client.get("/console/compliance/", {"actor": "nobody-at-all"}).content.decode()
    assert "No event matches." in by_actor


def test_it_searches_by_time_range_and_refuses_a_malformed_one(compliance: Any, acme: Any) -> None:
    client = signed_in(compliance)
    later = (timezone.now() + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    assert "No event matches." in client.get("/console/compliance/", {"since": later}).content.decode()
    assert "tenant.created" in client.get("/console/compliance/", {"until": later}).content.decode()
    assert client.get("/console/compliance/", {"since": "yesterday"}).status_code == 422


def test_it_pages_back_by_sequence_number(compliance: Any, acme: Any) -> None:
    for n in range(60):
        tenant_update(tenant=acme, actor=SYSTEM, name=f"Acme {n}")
    client = signed_in(compliance)
    first = client.get("/console/compliance/", {"tenant": "acme"}).content.decode()
    older = re.search(r'href="(\?[^"]*before=(\d+)[^"]*)" rel="next"', first)
    assert older
    newest_seq = AuditEvent.objects.filter(tenant=acme).order_by("-seq").values_list("seq", flat=True)[0]
    assert f"<td>{newest_seq}</td>" in first
    second = client.get("/console/compliance/" + older[1].replace("&amp;", "&")).content.decode()
    assert f"<td>{newest_seq}</td>" not in second
    assert f"<td>{int(older[2]) - 1}</td>" in second


# --- verification and bundles -------------------------------------------------------------------------------------


def test_it_verifies_the_chain_and_shows_the_signed_checkpoint_it_ends_at(compliance: Any, acme: Any) -> None:
    client = signed_in(compliance)
    assert "No checkpoint has been signed yet." in client.get("/console/compliance/verify").content.decode()
    form = client.get("/console/compliance/verify")
    once = token(form)
    client.post("/console/compliance/checkpoint", {"once": once})
    client.post("/console/compliance/checkpoint", {"once": once})  # sent twice: one checkpoint
    assert AuditCheckpoint.objects.count() == 1
    checkpoint = AuditCheckpoint.objects.get()
    event = AuditEvent.objects.get(action="audit.checkpoint")
    assert event.actor_label == "compliance"
    page = client.get("/console/compliance/verify", {"run": "1"}).content.decode()
    assert 'data-result="ok"' in page
    assert f"the verified chain reaches seq {checkpoint.seq}" in page
    assert checkpoint.signature in page
    assert checkpoint.key_id in page
    assert f"valid under key {checkpoint.key_id}" in page


def test_it_reports_a_broken_chain(compliance: Any, acme: Any) -> None:
    tamper_update(AuditEvent.objects.get(action="tenant.created").seq, action="tenant.forged")
    page = signed_in(compliance).get("/console/compliance/verify", {"run": "1"}).content.decode()
    assert 'data-result="broken"' in page
    assert "hash mismatch" in page


def test_it_streams_a_signed_bundle_for_a_tenant_and_range_that_verifies_offline(
    compliance: Any, acme: Any, globex: Any
) -> None:
    tenant_update(tenant=acme, actor=SYSTEM, name="Acme Two")
    client = signed_in(compliance)
    once = token(client.get("/console/compliance/bundle"))
    since = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    answer = client.post("/console/compliance/bundle", {"once": once, "tenant": "acme", "since": since, "until": ""})
    assert answer.status_code == 200
    assert isinstance(answer, StreamingHttpResponse)
    assert answer["Content-Disposition"].startswith('attachment; filename="ladder-audit-acme-')
    body = b"".join(answer.streaming_content)
    summary = verify_bundle(io.BytesIO(body), [audit_signer().public_key])  # raises on any flaw
    assert summary.events >= 1
    assert b'"action":"tenant.updated"' in body
    assert b'"slug":"globex"' not in body  # another tenant's events are links only


def test_a_bundle_range_that_ends_before_it_starts_is_refused(compliance: Any, acme: Any) -> None:
    client = signed_in(compliance)
    once = token(client.get("/console/compliance/bundle"))
    answer = client.post(
        "/console/compliance/bundle",
        {"once": once, "tenant": "acme", "since": "2026-05-02T00:00", "until": "2026-05-01T00:00"},
    )
    assert answer.status_code == 422
    assert b"must come after its start" in answer.content
    unknown = client.post("/console/compliance/bundle", {"once": once, "tenant": "nope"})
    assert unknown.status_code == 422


# --- legal holds ----------------------------------------------------------------------------------------------


def test_it_previews_places_and_releases_a_hold_audited_as_the_officer(compliance: Any, acme: Any) -> None:
    regions()
    asset(acme, category="job_log", name="log-a", size_bytes=2048)
    asset(acme, category="dataset", name="data-a", size_bytes=4096)
    client = signed_in(compliance)
    preview = client.post("/console/compliance/holds", {"step": "preview", "tenant": "acme", "categories": ["job_log"]})
    text = preview.content.decode()
    assert preview.status_code == 200
    assert "<td>job_log</td><td>1</td><td>2048" in text
    assert "dataset" not in text.split("What the hold would preserve")[1].split("</table>")[0]
    assert not LegalHold.objects.exists()  # a preview writes nothing
    form = {
        "step": "place",
        "once": token(preview),
        "tenant": "acme",
        "categories": ["job_log"],
        "matter": "Acme v. Initech",
        "reason": "litigation",
    }
    placed = client.post("/console/compliance/holds", form)
    assert placed.status_code == 302
    again = client.post("/console/compliance/holds", form)  # the same form sent twice
    assert again.status_code == 302
    assert again["Location"] == placed["Location"]
    hold = LegalHold.objects.get()
    assert (hold.matter, hold.categories, hold.created_by) == ("Acme v. Initech", ["job_log"], "compliance")
    register = client.get("/console/compliance/holds").content.decode()
    assert f'id="hold-{hold.pk}"' in register
    assert "1 assets, 2.0" in register
    confirm = client.get(f"/console/compliance/holds/{hold.pk}/release")
    assert b"Release the hold" in confirm.content
    release = {"once": token(confirm), "reason": "settled"}
    assert client.post(f"/console/compliance/holds/{hold.pk}/release", release).status_code == 302
    assert client.post(f"/console/compliance/holds/{hold.pk}/release", release).status_code == 302  # once
    hold.refresh_from_db()
    assert (hold.state, hold.release_reason, hold.released_by) == (HoldState.RELEASED, "settled", "compliance")
    events = AuditEvent.objects.filter(action__startswith="legal_hold.").order_by("seq")
    assert [(e.action, e.actor_label) for e in events] == [
        ("legal_hold.created", "compliance"),
        ("legal_hold.released", "compliance"),
    ]


def test_a_locked_hold_is_refused_in_the_services_words(compliance: Any, acme: Any) -> None:
    hold = legal_hold_create(
        tenant=acme,
        matter="M",
        reason="r",
        scope=AssetScope(),
        lock_until=timezone.now() + timedelta(days=30),
        actor=SYSTEM,
    )
    client = signed_in(compliance)
    confirm = client.get(f"/console/compliance/holds/{hold.pk}/release")
    refused = client.post(f"/console/compliance/holds/{hold.pk}/release", {"once": token(confirm), "reason": "x"})
    assert refused.status_code == 422
    assert b"has a preservation lock until" in refused.content
    hold.refresh_from_db()
    assert hold.state == HoldState.ACTIVE


def test_releasing_a_released_hold_again_from_another_form_is_refused(compliance: Any, acme: Any) -> None:
    hold = legal_hold_create(tenant=acme, matter="M", reason="r", scope=AssetScope(), lock_until=None, actor=SYSTEM)
    client = signed_in(compliance)
    first, second = (token(client.get(f"/console/compliance/holds/{hold.pk}/release")) for _ in range(2))
    assert (
        client.post(f"/console/compliance/holds/{hold.pk}/release", {"once": first, "reason": "a"}).status_code == 302
    )
    refused = client.post(f"/console/compliance/holds/{hold.pk}/release", {"once": second, "reason": "b"})
    assert refused.status_code == 422
    assert f"Hold {hold.pk} was already released on".encode() in refused.content
    assert AuditEvent.objects.filter(action="legal_hold.released").count() == 1


def test_placing_a_hold_with_a_bad_scope_or_lock_shows_the_refusal(compliance: Any, acme: Any) -> None:
    client = signed_in(compliance)
    preview = client.post("/console/compliance/holds", {"step": "preview", "tenant": "acme"})
    past = client.post(
        "/console/compliance/holds",
        {
            "step": "place",
            "once": token(preview),
            "tenant": "acme",
            "matter": "M",
            "reason": "r",
            "lock_until": "2020-01-01T00:00",
        },
    )
    assert past.status_code == 422
    assert b"lock_until must be in the future." in past.content
    backwards = client.post(
        "/console/compliance/holds",
        {"step": "preview", "tenant": "acme", "created_from": "2026-05-02T00:00", "created_to": "2026-05-01T00:00"},
    )
    assert backwards.status_code == 422
    assert b"created_from is after created_to." in backwards.content
    assert not LegalHold.objects.exists()


def test_a_missing_hold_is_404(compliance: Any) -> None:
    assert signed_in(compliance).get("/console/compliance/holds/999/release").status_code == 404


# --- erasures and residency -----------------------------------------------------------------------------------


def test_it_lists_erasure_requests_with_withheld_items_and_their_holds(compliance: Any, acme: Any) -> None:
    regions()
    kept = asset(acme, category="job_log", name="held-log")
    hold = legal_hold_create(
        tenant=acme, matter="Acme v. Initech", reason="r", scope=AssetScope(), lock_until=None, actor=SYSTEM
    )
    made = erasure_request_create(tenant=acme, actor=SYSTEM, categories=["job_log"], on_behalf_of="a subject")
    page = signed_in(compliance).get("/console/compliance/erasures").content.decode()
    assert f"<td>{made.pk}</td>" in page
    assert f"{kept.name} <small>(job_log)</small> — hold {hold.pk}: Acme v. Initech (active)" in page
    assert "for a subject" in page
    assert (
        "No erasure request for globex."
        in signed_in(compliance).get("/console/compliance/erasures", {"tenant": "globex"}).content.decode()
    )


def test_the_residency_report_flags_violating_tenants_first(compliance: Any, acme: Any, globex: Any) -> None:
    regions()
    asset(acme, category="dataset", region="eu-west")
    asset(globex, category="dataset", region="eu-west")
    tenant_update(
        tenant=globex, actor=SYSTEM, residency=Residency(regions=["us-east"], jurisdictions=None, sovereign=False)
    )
    page = signed_in(compliance).get("/console/compliance/residency").content.decode()
    assert "1 tenant with violations" in page
    assert page.index("Globex (globex)") < page.index("Acme Robotics (acme)")
    assert page.count('class="violation"') == 1
