"""Volumes in a real browser (Debian's Chromium through Playwright, against the live server): a tenant creates a
filesystem volume from the menu and sees it available with its monthly cost, launches a container that mounts it,
sees where it is attached, takes a snapshot, is refused the delete while the container runs, stops it, and deletes
the volume after the confirmation. axe-core finds no serious or critical WCAG 2 A/AA violation on the volume's own
page and its delete confirmation (the list is in tests/browser/test_accessibility.py with the other main pages).

An operator signs in and reads each region's storage per class on the operators' console.

With ``LADDER_SCREENSHOTS=<folder>`` the tenant's walk saves the list and the volume's page there (docs/portal/ holds
the ones docs/portal.md shows), the operator's walk the storage page (docs/consoles/)."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.test import override_settings
from playwright.sync_api import Page, expect

from billing.models import SkuPrice
from billing.services.storage import storage_sku
from lifecycle.services.volumes import volume_create
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, Region, Volume, VolumeSnapshot
from tests.browser.test_accessibility import violations
from tests.browser.test_consoles import sign_in
from tests.support import SYSTEM
from tests.support.billing import load_fleet
from tests.support.browser import screenshot, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)
IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
SHOTS = os.environ.get("LADDER_SCREENSHOTS")


def shot(page: Page, name: str) -> None:
    if SHOTS:
        page.set_viewport_size({"width": 1200, "height": 900})
        screenshot(page, f"{SHOTS}/{name}.png")


@override_settings(LADDER_SIM_PROVISION_SECONDS=0)
def test_a_tenant_keeps_its_data_on_a_volume_across_work(
    browser_page: Page, browser_login: Any, alice: Any, acme: Any, live_server: Any
) -> None:
    load_fleet()
    sku = storage_sku(storage_kind="filesystem", region=Region.objects.get(code="eu-west"))
    SkuPrice.objects.filter(sku=sku).delete()  # its own price, in place of the suite's default one
    SkuPrice.objects.create(
        sku=sku, unit_price_per_hour=Decimal("0.0001"), effective_from=datetime(2000, 1, 1, tzinfo=UTC)
    )
    page = browser_page
    browser_login(alice)
    page.goto("/portal/")

    # Create it: available at once on the simulated fleet, at 500 GB x 0.0001 x 730 hours a month.
    page.get_by_role("link", name="Volumes", exact=True).click()
    expect(page.get_by_text("You have no volumes yet.")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("datasets")
    page.get_by_label("Region", exact=True).select_option("eu-west")
    page.get_by_label("Kind", exact=True).select_option("filesystem")
    page.get_by_label("Size (GB)", exact=True).fill("500")
    page.get_by_role("button", name="Create the volume").click()
    expect(page.get_by_text("The volume datasets is made: 500 GB in eu-west.")).to_be_visible()
    row = page.locator('tr[data-volume="datasets"]')
    expect(row.locator("[data-state]")).to_have_attribute("data-state", "available")
    expect(row.locator("[data-monthly]")).to_have_text("36.50 USD")
    expect(row.locator("[data-attached]")).to_have_text("nothing")

    # A container mounts it at /data.
    page.get_by_role("link", name="Launch", exact=True).click()
    page.get_by_label("Name", exact=True).fill("trainer")
    page.get_by_label("GPU model", exact=True).select_option("H100-SXM-80GB")
    page.get_by_label("Whole GPUs", exact=True).fill("1")
    page.get_by_label("Container image", exact=True).fill(IMAGE)
    page.get_by_label("datasets (filesystem, 500 GB, eu-west)").check()
    page.get_by_label("Mount path of datasets").fill("/data")
    page.get_by_role("button", name=re.compile("^Launch")).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("trainer")
    allocations_reconcile()
    trainer = Allocation.objects.get(name="trainer")
    assert list(trainer.attachments.values_list("mount_path", "read_only")) == [("/data", False)]

    page.get_by_role("link", name="Volumes", exact=True).click()
    expect(row.locator("[data-state]")).to_have_attribute("data-state", "attached")
    expect(row.locator("[data-attached]")).to_have_text("trainer")
    expect(row.get_by_role("link", name="trainer")).to_have_attribute("href", f"/portal/allocations/{trainer.pk}")
    shot(page, "volumes")

    # A snapshot, from the volume's own page.
    row.get_by_role("link", name="datasets").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("datasets")
    page.get_by_label("Snapshot name").fill("before-cleanup")
    page.get_by_role("button", name="Take a snapshot").click()
    expect(page.get_by_text("The snapshot before-cleanup of datasets is taken.")).to_be_visible()
    expect(page.locator('tr[data-snapshot="before-cleanup"]')).to_contain_text("ready")
    shot(page, "volume")
    volume_page = page.url

    # Deleting while the container mounts it is refused, in the service's words.
    page.get_by_role("link", name="Delete datasets").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Delete datasets?")
    page.get_by_role("button", name="Delete datasets for good").click()
    expect(page.get_by_role("alert")).to_have_text(
        f"Volume datasets is mounted by allocation {trainer.pk}: stop it first."
    )
    assert Volume.objects.get(name="datasets").state == "attached"

    # Stop the container; the volume is free again, and deleted after the confirmation.
    page.get_by_role("link", name="trainer").click()
    page.get_by_role("link", name="Stop").click()
    page.get_by_role("button", name="Stop it").click()
    allocations_reconcile()
    expect(page.locator("#live [data-state]")).to_have_attribute("data-state", "stopped", timeout=10_000)
    page.get_by_role("link", name="Volumes", exact=True).click()
    expect(row.locator("[data-state]")).to_have_attribute("data-state", "available")
    expect(row.locator("[data-attached]")).to_have_text("nothing")

    cookie = session_cookie(alice)
    for path in (volume_page.removeprefix(live_server.url), f"{volume_page.removeprefix(live_server.url)}/delete"):
        for width in (1280, 390):
            found = violations(page.context.browser, live_server.url, cookie, path, width)  # type: ignore[arg-type]
            assert found == [], "\n".join(found)

    row.get_by_role("link", name="datasets").click()
    page.get_by_role("link", name="Delete datasets").click()
    page.get_by_role("button", name="Delete datasets for good").click()
    expect(page.get_by_text("The volume datasets is being deleted; it is no longer billed.")).to_be_visible()
    expect(row.locator("[data-state]")).to_have_attribute("data-state", "deleting")
    expect(row.locator("[data-monthly]")).to_have_text("no longer billed")
    assert Volume.objects.get(name="datasets").state == "deleting"
    # Its snapshots stop being billed with it and stay until its key is shredded (a hold may yet preserve them).
    assert VolumeSnapshot.objects.get(name="before-cleanup").state == "deleting"


def test_an_operator_reads_each_regions_storage_per_class(
    browser_page: Page, operator: Any, acme: Any, globex: Any
) -> None:
    load_fleet()
    eu_west, us_east = Region.objects.get(code="eu-west"), Region.objects.get(code="us-east")
    for tenant, name, region, kind, size in (
        (acme, "datasets", eu_west, "filesystem", 500),
        (globex, "corpus", eu_west, "filesystem", 300),
        (acme, "vm-disk", eu_west, "block", 100),
        (globex, "us-data", us_east, "filesystem", 50),
    ):
        volume_create(tenant=tenant, name=name, region=region, kind=kind, size_gb=size, actor=SYSTEM)
    Volume.objects.filter(name="datasets").update(used_gb=120)
    page = browser_page
    sign_in(page, operator.username)
    page.get_by_role("link", name="Storage", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Storage")
    eu = page.locator('tr[data-storage="eu-west/filesystem"]')
    expect(eu.locator("[data-count]")).to_have_text("2")
    expect(eu.locator("[data-provisioned]")).to_have_text("800 GB")
    expect(eu.locator("[data-used]")).to_have_text("120 GB")
    expect(page.locator('tr[data-storage="eu-west/block"] [data-provisioned]')).to_have_text("100 GB")
    expect(page.locator('tr[data-storage="us-east/filesystem"] [data-provisioned]')).to_have_text("50 GB")
    expect(page.locator('tr[data-storage="us-east/snapshot"] [data-count]')).to_have_text("0")
    shot(page, "storage")
