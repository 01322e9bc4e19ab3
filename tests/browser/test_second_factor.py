"""The second factor in a real browser (Debian's Chromium through Playwright, against the live server): a member turns
TOTP on from the Security page with the key it shows, signs out, and signs in again with the password and then a
code, with sign-in throttling on as in production."""

from __future__ import annotations

import re
import time
from base64 import b32decode
from typing import Any

import pytest
from django_otp.oath import TOTP
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.django_db(transaction=True)


def code(secret: str, *, ahead: int = 0) -> str:
    """The code an authenticator app shows for ``secret``, ``ahead`` steps from now."""
    totp = TOTP(b32decode(secret))
    totp.time = time.time() + 30 * ahead
    return f"{totp.token():06d}"


def test_a_member_turns_totp_on_and_signs_in_with_password_and_code(
    browser_page: Page, browser_login: Any, alice: Any, settings: Any
) -> None:
    settings.AXES_ENABLED = True
    page = browser_page
    browser_login(alice)
    page.goto("/portal/")
    page.get_by_role("link", name="Security").click()
    expect(page.locator("[data-totp]")).to_have_attribute("data-totp", "off")
    page.get_by_role("button", name="Set up an authenticator app").click()
    expect(page.get_by_role("img", name=re.compile("QR code"))).to_be_visible()
    secret = page.locator("[data-secret]").get_attribute("data-secret")
    assert secret
    expect(page.locator("[data-uri]")).to_contain_text(f"otpauth://totp/Ladder%3Aalice?secret={secret}")
    page.get_by_label("Code from your authenticator app").fill(code(secret))
    page.get_by_role("button", name="Turn on the second factor").click()
    expect(page.get_by_text("The second factor is on")).to_be_visible()
    expect(page.locator("[data-totp]")).to_have_attribute("data-totp", "on")

    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("pw")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Your code")
    page.goto("/portal/usage")  # no page opens before the code
    expect(page.get_by_role("heading", level=1)).to_have_text("Your code")
    page.get_by_label("Code from your authenticator app").fill(code(secret, ahead=1))  # the one after the one used
    page.get_by_role("button", name="Continue").click()
    expect(page.get_by_role("heading", name=re.compile("^Upcoming invoice"))).to_be_visible()
    expect(page.get_by_role("link", name="Security")).to_be_visible()
