"""The allocation page's "What the GPUs do", in a real browser, from a real Prometheus scraping the simulated
fleet's dcgm-exporter: a job's busy GPUs drawn in both charts, its only finding the memory it uses; an idle
notebook's findings in words (idle time, memory a slice would hold)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from provisioning.drivers.base import allocations_reconcile
from tests.support.billing import load_fleet, place
from tests.support.prometheus import Prometheus

pytestmark = pytest.mark.django_db(transaction=True)


def drawn(page: Page, canvas: str) -> list[int]:
    """How many points each dataset of the chart on ``canvas`` holds, as Chart.js drew it."""
    return list(
        page.evaluate(
            f"() => window.Chart.getChart(document.getElementById('{canvas}')).data.datasets.map(d => d.data.length)"
        )
    )


def test_the_allocation_page_draws_its_gpus_and_says_what_they_do(
    prometheus_clock: Prometheus, browser_page: Page, browser_login: Any, live_server: Any, acme: Any, alice: Any,
    settings: Any,
) -> None:  # fmt: skip
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    load_fleet()
    job = place(acme, rung="job", gpus=1)
    notebook = place(acme, gpus=1)  # no command: an idle box
    allocations_reconcile()
    hosts = sorted({d.hostname for a in (job, notebook) for d in a.devices.all()})
    for host in hosts:
        prometheus_clock.scraped(prometheus_clock.scrape(host, f"{live_server.url}/simulated/dcgm/{host}/metrics"))
    for host in hosts:
        prometheus_clock.scraped(host)  # once more: every chart has a line
    page = browser_page
    browser_login(alice)

    page.goto(f"/portal/allocations/{job.pk}")
    expect(page.get_by_role("heading", name="What the GPUs do (last hour)")).to_be_visible()
    expect(page.locator("[data-findings] li")).to_have_text(["uses 60 GB of 80 GB"])  # busy: no idle time
    page.wait_for_function("() => window.Chart && window.Chart.getChart(document.getElementById('gpu-chart'))")
    sm, tensor, dram = drawn(page, "gpu-chart")
    assert sm >= 1
    assert sm == tensor == dram
    assert drawn(page, "gpu-memory-chart") == [sm, sm]  # memory and power

    page.get_by_role("link", name="Last 24 hours").click()  # the day: a point every 12 minutes, up to now
    expect(page.get_by_role("heading", name="What the GPUs do (last 24 hours)")).to_be_visible()
    expect(page.locator("[data-gpu-windows] [aria-current=page]")).to_have_text("Last 24 hours")
    page.wait_for_function("() => window.Chart && window.Chart.getChart(document.getElementById('gpu-chart'))")
    assert drawn(page, "gpu-chart")[0] >= 1

    page.goto(f"/portal/allocations/{notebook.pk}")
    findings = page.locator("[data-findings] li")
    expect(findings.first).to_have_text(re.compile(r"^idle for \d+ of the last \d+ seconds$"))
    slice_words = r"^uses 0\.5 GB of 80 GB: a 1g\.10gb slice would (cost \d+% less|hold it)$"
    expect(findings.nth(1)).to_have_text(re.compile(slice_words))
    page.wait_for_function("() => window.Chart && window.Chart.getChart(document.getElementById('gpu-memory-chart'))")
