"""Real-browser tests: Debian's Chromium, driven by Playwright, against the live server (pytest-django's
``live_server``). The fixtures ``browser_page`` and ``browser_login`` in tests/conftest.py are built from these.

Chromium is the Debian package (``make browser`` installs it), never Playwright's own download; ``LADDER_CHROMIUM``
names another binary. Without one a browser test skips, except under ``CI=true``, where it fails (:func:`require`).

Playwright's sync API marks an asyncio loop as running in the calling thread for as long as its driver runs. Django
then takes that thread for an async context: it refuses ORM calls (``SynchronousOnlyOperation``), and asgiref keeps
the thread's database connections per context, so the test's queries go through connections of their own. Hence
``DJANGO_ALLOW_ASYNC_UNSAFE`` is set only while the driver runs, the connections opened meanwhile are closed before
it stops, and Playwright and Chromium start and stop with each test (about a second): a driver kept for the whole
session would leave every later test in that state.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.conf import settings
from django.db import connections
from django.test import Client
from playwright.sync_api import Browser, Page, WebError, sync_playwright

from tests.support import require
from tests.support.otp import pass_second_factor

CHROMIUM_ENV = "LADDER_CHROMIUM"
DEBIAN_CHROMIUM = "/usr/bin/chromium"


def chromium_path() -> str | None:
    """The Chromium binary to drive: ``$LADDER_CHROMIUM`` if set, else ``chromium`` on the PATH or Debian's."""
    configured = os.environ.get(CHROMIUM_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    found = shutil.which("chromium")
    if found:
        return found
    return DEBIAN_CHROMIUM if os.access(DEBIAN_CHROMIUM, os.X_OK) else None


def require_chromium() -> str:
    """The Chromium binary; the test skips without one (fails under CI=true)."""
    path = chromium_path()
    configured = os.environ.get(CHROMIUM_ENV)
    what = (
        f"Chromium at {CHROMIUM_ENV}={configured}"
        if configured
        else "Chromium (`make browser` installs Debian's chromium, or set LADDER_CHROMIUM)"
    )
    require(path is not None, what)
    assert path is not None
    return path


@contextmanager
def chromium(executable: str) -> Iterator[Browser]:
    """Headless Chromium from ``executable``, closed with its Playwright driver on the way out."""
    with mock.patch.dict(os.environ, {"DJANGO_ALLOW_ASYNC_UNSAFE": "true"}), sync_playwright() as playwright:
        # --no-sandbox: as root (CI, the development machines) Chromium refuses to start with its sandbox, and the
        # pages it opens here are the app's own.
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"], headless=True)
        try:
            yield browser
        finally:
            try:
                browser.close()
            finally:
                # The connections the test opened meanwhile are kept apart from the thread's own (see above), and
                # would outlive it: closed while the driver still runs, which is when they are the ones in reach.
                connections.close_all()


@contextmanager
def open_page(browser: Browser, base_url: str) -> Iterator[Page]:
    """A page in a fresh browser context (its own cookies and storage) where ``page.goto("/path")`` resolves against
    ``base_url``. An uncaught JavaScript error on any page of the context is collected, and leaving the block with
    any fails the test: a page whose script breaks is a broken page, even where the assertions still pass."""
    context = browser.new_context(base_url=base_url)
    errors: list[str] = []

    def collect(error: WebError) -> None:
        where = error.page.url if error.page else "?"
        errors.append(f"{where}: {error.error.stack or error.error.message}")

    context.on("weberror", collect)
    try:
        yield context.new_page()
    finally:
        context.close()
    if errors:
        pytest.fail("JavaScript errors on the page:\n" + "\n".join(errors), pytrace=False)


def session_cookie(user: Any) -> str:
    """A new session in which ``user`` is logged in (as Django's ``login()`` makes it; a staff user past the second
    factor, as after giving a code); returns its cookie value."""
    client = Client()
    client.force_login(user)
    if user.is_staff:
        pass_second_factor(client, user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def log_in(page: Page, user: Any, *, url: str) -> None:
    """Log ``user`` in on ``page``'s browser context without the login form: the session cookie for ``url``."""
    page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session_cookie(user), "url": url}])


def screenshot(page: Page, path: Path | str) -> Path:
    """A PNG of the whole page at ``path`` (its folder made if missing); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=target, full_page=True)
    return target
