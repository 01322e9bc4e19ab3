"""The finance console in a real browser (Debian's Chromium through Playwright, against the live server), walked by
a finance user from the portal's sign-in page: revenue and margin with both charts drawn, the tenant over its budget,
a month's reconciliation started and read, and a push Stripe refused retried. Compliance and operators cannot open
it, and a tenant's member opens none.

With ``LADDER_SCREENSHOTS=<folder>`` the walk saves a screenshot of each page there (docs/consoles/)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from billing.models import ExportJob, PushState, ReconciliationRun, UsageRollup
from core.models import AuditEvent
from tests.browser.test_consoles import shot, sign_in
from tests.support.billing import load_fleet
from tests.support.consoles import finance_data

pytestmark = pytest.mark.django_db(transaction=True)


def test_finance_reads_margin_budgets_reconciles_and_retries_a_push(
    browser_page: Page, finance: Any, acme: Any, settings: Any, tmp_path: Any
) -> None:
    settings.LADDER_EXPORT_DIR = str(tmp_path)
    settings.STRIPE_API_KEY = ""  # ledger only: the reconciliation compares the ledger with the outbox
    load_fleet()
    finance_data(acme)
    page = browser_page
    sign_in(page, "finance")
    expect(page.get_by_role("heading", level=1)).to_have_text("Revenue and margin")
    expect(page.locator("table.margin-table")).to_contain_text("container")
    expect(page.locator("table.capacity-table")).to_contain_text("H100-SXM-80GB")
    for chart in ("#margin-chart", "#fleet-chart"):  # drawn by Chart.js from the page's JSON, no inline script
        page.wait_for_function(f"() => window.Chart && window.Chart.getChart(document.querySelector('{chart}'))")
    shot(page, "margin")

    page.get_by_role("link", name="Budgets").click()
    expect(page.locator("table.budgets-table tr.over")).to_contain_text("acme")
    shot(page, "budgets")

    page.get_by_role("link", name="Reconciliation").click()
    page.get_by_role("button", name="Reconcile").click()
    expect(page.get_by_role("status").first).to_contain_text("The reconciliation of")
    run = ReconciliationRun.objects.get()
    page.goto(f"/console/finance/reconciliation?run={run.pk}")
    expect(page.locator(f"section[aria-label='Run {run.pk}']")).to_contain_text("the outbox only (no Stripe key)")
    shot(page, "reconciliation")

    page.get_by_role("link", name="Failed pushes").click()
    row = UsageRollup.objects.get(push_state=PushState.FAILED)
    expect(page.locator(f"#push-{row.pk}")).to_contain_text("No such customer")
    shot(page, "pushes")
    page.get_by_role("button", name=f"Retry push {row.pk}").click()
    expect(page.get_by_role("status").first).to_contain_text(f"Push {row.pk}")
    row.refresh_from_db()
    assert row.push_state in (PushState.PENDING, PushState.SENDING, PushState.SENT)
    assert AuditEvent.objects.get(action="billing.push_retried").actor_label == "finance"

    page.get_by_role("link", name="Exports").click()
    page.get_by_label("Tenant").select_option("acme")
    page.get_by_role("button", name="Export").click()
    expect(page.get_by_role("status").first).to_contain_text("is requested")
    job = ExportJob.objects.get()
    page.reload()  # the job ran in its task
    link = page.get_by_role("link", name=f"file of export {job.pk}")
    with page.expect_download() as download:
        link.click()
    assert download.value.suggested_filename.startswith("ladder-focus-acme-summary-")
    shot(page, "exports")

    for path in ("/console/operators/", "/console/compliance/", "/portal/"):
        response = page.goto(path)
        assert response is not None
        assert response.status == 403


@pytest.mark.parametrize("who", ["compliance", "operator", "alice"])
def test_no_one_else_opens_the_finance_console(browser_page: Page, who: str, request: Any) -> None:
    request.getfixturevalue(who)
    page = browser_page
    sign_in(page, who)
    response = page.goto("/console/finance/")
    assert response is not None
    assert response.status == 403
