"""Secure by default: with DEBUG off and only the variables a deployment must set, Django's deployment checks
(`manage.py check --deploy`) find nothing, not even a warning; behind a TLS-terminating proxy the redirect is the
proxy's. Run in a subprocess with exactly those variables, as a deployment starts."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from django.test import Client

from tests.support import ROOT

SECRET = "k3y-for-the-deploy-check-only-0123456789-abcdefghijklmnopqrstuvwxyz"
DEPLOY = {
    "DEBUG": "0",
    "SECRET_KEY": SECRET,
    "ALLOWED_HOSTS": "ladder.example.com",
    "DATABASE_URL": "sqlite:///:memory:",
}


def check(extra: dict[str, str] | None = None, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING", *args]
    env = {**DEPLOY, **(extra or {})}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_check_deploy_is_clean_with_only_the_required_variables() -> None:
    done = check()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


def test_the_checks_notice_what_was_turned_off() -> None:
    done = check({"SECURE_SSL_REDIRECT": "0", "SECURE_HSTS_SECONDS": "0", "SESSION_COOKIE_SECURE": "0"})
    assert done.returncode != 0
    for warning in ("security.W008", "security.W004", "security.W012"):
        assert warning in done.stderr + done.stdout, warning


def test_behind_a_tls_proxy_the_redirect_is_the_proxys() -> None:
    proxied = {"LADDER_TLS_TERMINATED_BY_PROXY": "1"}
    done = check(proxied)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", _SHOW],
        cwd=ROOT,
        env={**DEPLOY, **proxied},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert shown.stdout.splitlines()[-1].split() == ["False", "HTTP_X_FORWARDED_PROTO:https", "31536000"]


_SHOW = """
from django.conf import settings
print(settings.SECURE_SSL_REDIRECT, ":".join(settings.SECURE_PROXY_SSL_HEADER), settings.SECURE_HSTS_SECONDS)
"""


def test_http_is_redirected_but_the_probes_are_not(settings: Any, db: None) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    client = Client()
    moved = client.get("/portal/")
    assert moved.status_code == 301
    assert moved["Location"] == "https://testserver/portal/"
    assert client.get("/healthz").status_code == 200  # kubelet probes over plain HTTP
    assert "Strict-Transport-Security" not in client.get("/healthz")  # HSTS only over HTTPS


def test_behind_the_proxy_its_header_says_https(settings: Any, db: None) -> None:
    settings.SECURE_SSL_REDIRECT = False  # the proxy's job
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    client = Client()
    secure = client.get("/healthz", HTTP_X_FORWARDED_PROTO="https")
    assert secure["Strict-Transport-Security"].startswith("max-age=31536000; includeSubDomains")
    assert "Strict-Transport-Security" not in client.get("/healthz", HTTP_X_FORWARDED_PROTO="http")
