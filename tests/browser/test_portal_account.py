"""The portal's account pages in a real browser: an owner stores a secret (typed in a password field, never shown
back), gives it a new value, sets a budget with a hard stop and makes a teammate an admin, each from the menu."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from billing.models import BillingAccount
from compliance.models import TenantSecret
from tenancy.models import Membership

pytestmark = pytest.mark.django_db(transaction=True)
VALUE = "hf_browser-s3cret-never-shown"


def test_an_owner_manages_secrets_budget_and_roles(
    browser_page: Page, browser_login: Any, alice: Any, bob: Any, acme: Any
) -> None:
    page = browser_page
    browser_login(alice)
    page.goto("/portal/")

    page.get_by_role("link", name="SSH keys and secrets").click()
    page.get_by_label("Secret name").fill("HF_TOKEN")
    value = page.get_by_label("Value")
    expect(value).to_have_attribute("type", "password")
    value.fill(VALUE)
    page.get_by_role("button", name="Store the secret").click()
    expect(page.get_by_text("HF_TOKEN is stored (version 1)")).to_be_visible()
    page.get_by_role("link", name="New value for HF_TOKEN").click()
    page.get_by_label("Value").fill(VALUE + "2")
    page.get_by_role("button", name="Store the new value").click()
    expect(page.locator('[data-secret="HF_TOKEN"] td').nth(1)).to_have_text("2")
    assert VALUE not in page.content()
    assert TenantSecret.objects.get(tenant=acme, name="HF_TOKEN").version == 2

    page.get_by_role("link", name="Billing").click()
    page.get_by_label("Monthly budget").fill("500")
    page.get_by_label(re.compile("^Hard stop")).check()
    page.get_by_role("button", name="Save the budget").click()
    expect(page.get_by_text("The budget is set")).to_be_visible()
    expect(page.get_by_text(re.compile(r"of 500\.00 \(hard stop\)"))).to_be_visible()
    assert BillingAccount.objects.get(tenant=acme).budget_monthly == Decimal("500.00")

    page.get_by_role("link", name="Team and keys").click()
    page.get_by_label("Role of bob").select_option("admin")
    page.get_by_role("button", name="Change role of bob").click()
    expect(page.get_by_text("bob is now admin")).to_be_visible()
    assert Membership.objects.get(user=bob).role == "admin"
