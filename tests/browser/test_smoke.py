"""The browser chain works: Debian's Chromium, driven by Playwright, loads the live server's pages and runs their
scripts; a JavaScript error fails the test; a user is logged in by cookie or through a form; screenshots are saved."""

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import chromium, open_page, require_chromium, screenshot
from tests.support.otp import current_code, staff_device

pytestmark = pytest.mark.django_db(transaction=True)  # the live server answers from another thread


def test_it_shows_the_api_docs(browser_page: Page, tmp_path) -> None:
    browser_page.goto("/api/docs/")

    expect(browser_page).to_have_title("Ladder API")
    # Swagger UI is a script served from /static/: the API's title appears once it has fetched and drawn the schema.
    expect(browser_page.locator(".swagger-ui .info .title")).to_contain_text("Ladder API")
    shot = screenshot(browser_page, tmp_path / "shots" / "docs.png")
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def _throw_on_a_page(browser: Browser, base_url: str) -> None:
    with open_page(browser, base_url) as page:
        page.goto("/api/docs/")
        with page.expect_event("pageerror"):
            page.add_script_tag(content="throw new Error('boom')")


def test_a_javascript_error_fails_the_test(live_server) -> None:
    # What browser_page does, with the failure it raises on leaving the page caught.
    with (
        chromium(require_chromium()) as browser,
        pytest.raises(pytest.fail.Exception, match=r"(?s)JavaScript errors.*/api/docs/.*Error: boom"),
    ):
        _throw_on_a_page(browser, live_server.url)


def test_it_logs_a_user_in_by_session_cookie(browser_page: Page, browser_login, operator) -> None:
    browser_login(operator)
    browser_page.goto("/admin/")

    expect(browser_page).to_have_title(re.compile("^Site administration"))  # the index, not the login page
    expect(browser_page.locator("#user-tools")).to_contain_text("operator")


def test_it_logs_in_through_a_form(browser_page: Page, operator) -> None:
    # Django sends its CSRF and session cookies marked Secure (DEBUG is off); Chromium keeps them for http://localhost.
    code = current_code(staff_device(operator))
    browser_page.goto("/admin/login/")
    browser_page.fill("#id_username", "operator")
    browser_page.fill("#id_password", "pw")
    browser_page.fill("#id_otp_token", code)
    browser_page.click("input[type=submit]")

    expect(browser_page).to_have_title(re.compile("^Site administration"))
    expect(browser_page.locator("#user-tools")).to_contain_text("operator")
