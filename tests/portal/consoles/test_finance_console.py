"""The finance console through Django's test client: revenue and margin per rung with the fleet's idle and stranded
cost, tenants against their budgets, a month's reconciliation started and read with its differences, and the failed
pushes with Stripe's message and a retry (audited as the finance user, a form sent twice acting once)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from billing.models import BillingAccount, ExportJob, PushState, ReconciliationRun, UsageRollup
from billing.services.accounts import cost_basis_add
from billing.services.ledger import windows_close
from compliance.domain.verify_export import verify_export
from core.models import AuditEvent
from provisioning.models import CapacitySample, GpuModel, Hall
from tests.api.test_reconciliation import rollup
from tests.support import SYSTEM
from tests.support.billing import BASE, H100, at, load_fleet, place, price, run, sku, stop
from tests.support.consoles import signed_in, token


def test_margin_per_rung_and_the_cost_of_idle_capacity(finance: Any, acme: Any) -> None:
    load_fleet()
    hall, model = Hall.objects.get(code="eu-west-1a"), GpuModel.objects.get(name=H100)
    parts = {"capex": Decimal("1.00"), "power": Decimal("0.20"), "space": Decimal("0.10"), "network": Decimal("0.05")}
    cost_basis_add(gpu_model=model, hall=hall, effective_from=BASE, parts=parts, currency="usd", actor=SYSTEM)
    price("2.40")
    stop(run(place(acme, gpus=2), at(0)), at(30))
    windows_close(now=at(120))
    CapacitySample.objects.create(
        at=at(60), seconds=3600, hall=hall, gpu_model=model, gpus=16, idle_milli=14_000, stranded_milli=0
    )
    page = signed_in(finance).get("/console/finance/", {"since": "2026-11", "until": "2026-11"})
    assert page.status_code == 200
    text = page.content.decode()
    assert "<h2>2026-11 (USD)</h2>" in text
    assert "<dt>Revenue</dt><dd>2.40</dd>" in text
    assert "<dt>The fleet's cost</dt><dd>21.60</dd>" in text  # 16 GPU-hours at 1.35
    assert "<dt>Idle capacity</dt><dd>18.90</dd>" in text
    assert "<td>container</td><td>H100-SXM-80GB</td><td>eu-west</td>" in text
    assert "43.8%" in text  # (2.40 - 1.35) / 2.40
    assert 'id="margin-data"' in text  # the charts' data, drawn by portal.js (no inline script)


def test_a_bad_month_range_is_refused_on_the_form(finance: Any) -> None:
    page = signed_in(finance).get("/console/finance/", {"since": "2026-11", "until": "2026-01"})
    assert page.status_code == 422
    assert "The last month must not come before the first." in page.content.decode()
    page = signed_in(finance).get("/console/finance/", {"since": "2020-01", "until": "2026-01"})
    assert page.status_code == 422
    assert "At most 24 months at a time." in page.content.decode()


def test_budgets_show_who_is_over(finance: Any, acme: Any, globex: Any, time_machine: Any) -> None:
    load_fleet()
    time_machine.move_to(at(90), tick=False)
    price("2.40")
    BillingAccount.objects.filter(tenant=acme).update(budget_monthly=Decimal("2.00"), budget_hard_stop=True)
    stop(run(place(acme, gpus=1), at(0)), at(60))
    text = signed_in(finance).get("/console/finance/budgets").content.decode()
    assert "1 at or over budget" in text
    assert "120.0% <strong>over budget</strong>" in text


def test_finance_starts_a_reconciliation_and_reads_it(
    finance: Any, acme: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.STRIPE_API_KEY = ""  # ledger only: the outbox against the ledger
    load_fleet()
    client = signed_in(finance)
    page = client.get("/console/finance/reconciliation")
    month = re.search(r'name="month"[^>]*value="(\d{4}-\d{2})"', page.content.decode())
    assert month
    form = {"once": token(page), "month": month[1], "tenant": ""}
    with django_capture_on_commit_callbacks(execute=True):  # the run's task, after commit (inline in tests)
        answer = client.post("/console/finance/reconciliation", form)
    assert answer.status_code == 302
    [run_] = ReconciliationRun.objects.all()
    assert answer["Location"].endswith(f"?run={run_.pk}")
    assert client.post("/console/finance/reconciliation", form)["Location"] == answer["Location"]  # acts once
    assert ReconciliationRun.objects.count() == 1
    assert AuditEvent.objects.filter(action="billing.reconciliation_started", actor_id=str(finance.pk)).count() == 1
    text = client.get(answer["Location"]).content.decode()
    assert f"Run {run_.pk}, started" in text
    assert "the outbox only (no Stripe key)" in text  # the run is done
    assert ": clean</h2>" in text


def test_a_bad_month_is_refused_on_the_reconciliation_form(finance: Any) -> None:
    client = signed_in(finance)
    page = client.get("/console/finance/reconciliation")
    answer = client.post("/console/finance/reconciliation", {"once": token(page), "month": "2999-01", "tenant": ""})
    assert answer.status_code == 422
    assert "has not begun" in answer.content.decode()
    assert not ReconciliationRun.objects.exists()


def test_failed_pushes_show_stripes_message_and_retry_once(finance: Any, acme: Any) -> None:
    load_fleet()
    price("2.40")
    failed = rollup(acme, sku(), hours_ago=3, state=PushState.FAILED, error="No such customer: 'cus_gone'")
    stale = rollup(acme, sku(), hours_ago=36 * 24, state=PushState.STALE, error="Older than Stripe accepts")
    client = signed_in(finance)
    page = client.get("/console/finance/pushes")
    text = page.content.decode()
    assert "No such customer: &#x27;cus_gone&#x27;" in text
    assert f"Retry push {failed.pk}" in text
    assert f"Retry push {stale.pk}" not in text  # stale: billed by hand, said why
    assert "bill this usage by hand" in text
    form = {"rollup": failed.pk, f"r{failed.pk}-once": token(page, f"r{failed.pk}")}
    assert client.post("/console/finance/pushes", form).status_code == 302
    assert client.post("/console/finance/pushes", form).status_code == 302  # sent twice: acts once
    assert UsageRollup.objects.get(pk=failed.pk).push_state == PushState.PENDING
    assert AuditEvent.objects.filter(action="billing.push_retried", actor_id=str(finance.pk)).count() == 1


def test_compliance_and_operators_cannot_retry_or_reconcile(compliance: Any, operator: Any, acme: Any) -> None:
    load_fleet()
    failed = rollup(acme, sku(), hours_ago=3, state=PushState.FAILED, error="x")
    for user in (compliance, operator):
        assert signed_in(user).post("/console/finance/pushes", {"rollup": failed.pk}).status_code == 403
        assert signed_in(user).post("/console/finance/reconciliation", {"month": "2026-11"}).status_code == 403
    assert UsageRollup.objects.get(pk=failed.pk).push_state == PushState.FAILED


def test_finance_exports_a_range_and_downloads_the_signed_file(
    finance: Any, acme: Any, settings: Any, tmp_path: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.LADDER_EXPORT_DIR = str(tmp_path)
    load_fleet()
    price("2.40")
    stop(run(place(acme, gpus=2), at(0)), at(30))
    windows_close(now=at(120))
    client = signed_in(finance)
    page = client.get("/console/finance/exports")
    form = {
        "once": token(page),
        "date_from": "2026-11-01",
        "date_to": "2026-11-30",
        "tenant": "acme",
        "file_format": "csv",
    }
    with django_capture_on_commit_callbacks(execute=True):  # the export job's task, after commit
        answer = client.post("/console/finance/exports", form)
    assert answer.status_code == 302
    [job] = ExportJob.objects.all()
    assert client.post("/console/finance/exports", form)["Location"] == answer["Location"]  # acts once
    assert ExportJob.objects.count() == 1
    assert AuditEvent.objects.filter(action="finance.export_requested", actor_id=str(finance.pk)).count() == 1
    job.refresh_from_db()
    assert (job.state, job.rows) == ("done", 1)
    text = client.get("/console/finance/exports").content.decode()
    assert f"file of export {job.pk}" in text
    downloaded = client.get(f"/console/finance/exports/{job.pk}/file").getvalue()
    signature = client.get(f"/console/finance/exports/{job.pk}/signature").json()
    target = tmp_path / "copy.csv"
    target.write_bytes(downloaded)
    assert signature["rows"] == 1
    key = load_pem_public_key(signature["public_key"].encode())
    assert isinstance(key, Ed25519PublicKey)
    verdict = verify_export(target, signature, key)
    assert verdict.startswith("OK: copy.csv: 1 rows, summary export of acme")


def test_a_bad_export_is_refused_on_its_field(finance: Any) -> None:
    client = signed_in(finance)
    page = client.get("/console/finance/exports")
    form = {"once": token(page), "date_from": "2026-11-30", "date_to": "2026-11-01", "file_format": "csv"}
    answer = client.post("/console/finance/exports", form)
    assert answer.status_code == 422
    assert "to is inclusive" in answer.content.decode()
    assert not ExportJob.objects.exists()
    assert client.get("/console/finance/exports/999/file").status_code == 404
