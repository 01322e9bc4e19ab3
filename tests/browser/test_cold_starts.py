"""An endpoint's cold starts in a real browser (Debian's Chromium through Playwright, against the live server): its
tenant's allocation page shows the P50/P90/P99 of its wakes and of each phase, and axe-core finds no serious or
critical WCAG 2 A/AA violation there (the operators' page is in tests/browser/test_accessibility.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from playwright.sync_api import Page, expect

from provisioning.drivers.base import allocations_reconcile
from provisioning.models import EndpointColdStart
from tests.browser.test_accessibility import violations
from tests.support.billing import at, load_fleet, place
from tests.support.browser import session_cookie

pytestmark = pytest.mark.django_db(transaction=True)


@override_settings(LADDER_SIM_PROVISION_SECONDS=0)
def test_the_endpoint_page_shows_its_cold_start_percentiles(
    browser_page: Page, browser_login: Any, alice: Any, acme: Any, live_server: Any
) -> None:
    load_fleet()
    endpoint = place(acme, rung="serverless", gpus=1)
    allocations_reconcile()
    for i, total in enumerate((13_000, 9_000, 40_000, 11_000)):
        EndpointColdStart.objects.create(
            tenant=acme,
            allocation=endpoint,
            woke_at=at(minutes=i + 1),
            ready_at=at(minutes=i + 1) + timedelta(milliseconds=total),
            device_wait_ms=2000,
            image_pull_ms=0,
            model_load_ms=total - 2000,
            total_ms=total,
            image_cached=True,
            model_source="volume",
        )
    page = browser_page
    browser_login(alice)
    page.goto(f"/portal/allocations/{endpoint.pk}")
    expect(page.get_by_role("heading", name="Cold starts")).to_be_visible()
    table = page.get_by_role("table", name="Cold starts and requests: P50, P90 and P99")
    wakes = table.get_by_role("row", name="Cold start (wake to warm)")
    expect(wakes.locator("[data-p50]")).to_have_text("11.0 s")  # of 9, 11, 13 and 40 s
    expect(wakes.locator("[data-p90]")).to_have_text("40.0 s")
    expect(table.get_by_role("row", name="Image pull").locator("[data-p99]")).to_have_text("0 ms")
    cookie = session_cookie(alice)
    for width in (1280, 390):
        found = violations(page.context.browser, live_server.url, cookie, f"/portal/allocations/{endpoint.pk}", width)  # type: ignore[arg-type]
        assert found == [], "\n".join(found)
