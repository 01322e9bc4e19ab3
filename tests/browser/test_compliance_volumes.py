"""Volumes in the compliance console, in a real browser (Debian's Chromium through Playwright): an officer previews
a hold over a tenant's volumes, places it, sees the volume under it in the register, finds the erasure that it
withheld, and releases it; the volume's deletion then goes on."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect
from rest_framework.test import APIClient

from compliance.models import LegalHold
from compliance.services.erasure import erasure_request_create
from provisioning.models import Volume
from tenancy.services import api_key_create
from tests.support import SYSTEM
from tests.support.data import regions

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_officer_holds_a_volume_sees_the_erasure_it_withholds_and_releases_it(
    browser_page: Page, browser_login: Any, compliance: Any, acme: Any, alice: Any
) -> None:
    regions()
    client = APIClient()
    key = api_key_create(user=alice, name="t", scopes=["read", "write"], expires_at=None, actor=SYSTEM).token
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    made = client.post(
        "/api/v1/volumes",
        {"name": "datasets", "region": "eu-west", "kind": "filesystem", "size_gb": 500},
        format="json",
    )
    assert made.status_code == 201, made.content
    volume = Volume.objects.get(pk=made.json()["id"])  # the simulated backend had it on commit
    assert volume.state == "available"

    page = browser_page
    browser_login(compliance)
    page.goto("/console/compliance/holds")
    page.get_by_label("Tenant").select_option("acme")
    page.get_by_label("volume", exact=True).check()
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("ul.volumes")).to_contain_text("volume datasets (eu-west, filesystem, 500 GB, available)")
    page.get_by_label("Matter").fill("Acme v. Initech")
    page.get_by_label("Reason").fill("litigation")
    page.get_by_role("button", name="Place the hold").click()
    hold = LegalHold.objects.get()
    row = page.locator(f"#hold-{hold.pk}")
    expect(row.locator(f'[data-volume="{volume.pk}"]')).to_have_text(
        "volume datasets (eu-west, filesystem, 500 GB, available)"
    )

    erasure_request_create(tenant=acme, actor=SYSTEM, categories=["volume"], on_behalf_of="a data subject")
    page.get_by_role("link", name="Erasure requests").click()
    expect(page.locator("table")).to_contain_text(f"— hold {hold.pk}: Acme v. Initech (active)")
    expect(page.locator(f'table [data-volume="{volume.pk}"]')).to_contain_text("volume datasets")

    page.get_by_role("link", name="Legal holds").click()
    page.locator(f"#hold-{hold.pk}").get_by_role("link", name=f"Release hold {hold.pk}").click()
    expect(page.locator("dl.facts")).to_contain_text("volume datasets")
    page.get_by_label("Reason").fill("settled")
    page.get_by_role("button", name="Release the hold").click()
    expect(page.get_by_role("status")).to_contain_text(f"Hold {hold.pk} (Acme v. Initech) is released.")
    expect(page.locator(f"#hold-{hold.pk} .volumes")).to_have_count(0)
    volume.refresh_from_db()
    assert volume.state == "deleting"  # the erasure it withheld went on
