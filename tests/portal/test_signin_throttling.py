"""Sign-in throttling (django-axes): five failed sign-ins for one username from one address lock that pair out for
fifteen minutes, said plainly on the sign-in page; other addresses, the admin's sign-in and API keys go on working.

The test settings turn axes off (Django's ``client.login`` gives it no request); these tests turn it on."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import time_machine
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from tenancy.services import api_key_create
from tests.support import SYSTEM
from tests.support.otp import current_code, staff_device

HERE, ELSEWHERE = "198.51.100.7", "203.0.113.9"


@pytest.fixture(autouse=True)
def _throttling_on(settings: Any) -> None:
    settings.AXES_ENABLED = True


def sign_in(password: str, *, address: str = HERE, username: str = "alice") -> Any:
    return Client(REMOTE_ADDR=address).post("/login", {"username": username, "password": password})


def test_five_failures_lock_the_username_from_that_address_for_fifteen_minutes(alice: Any) -> None:
    for _ in range(4):
        wrong = sign_in("not-the-password")
        assert wrong.status_code == 200
        assert b"Please enter a correct username and password" in wrong.content
    locked = sign_in("not-the-password")
    assert locked.status_code == 429
    assert b"This account is locked for now" in locked.content
    assert b"Try again in 15 minutes" in locked.content
    assert b"<h1>Sign in</h1>" in locked.content  # the portal's own page, not axes' default text

    right = sign_in("pw")  # the right password changes nothing while locked
    assert right.status_code == 429
    assert b"This account is locked for now" in right.content
    assert sign_in("pw", address=ELSEWHERE)["Location"] == "/portal/"  # the pair is locked, not the account

    with time_machine.travel(timezone.now() + timedelta(minutes=16)):
        assert sign_in("pw")["Location"] == "/portal/"
    assert not AccessAttempt.objects.filter(username="alice", ip_address=HERE).exists()  # a success clears it


def test_behind_a_trusted_proxy_the_pair_is_the_username_and_the_address_the_proxy_saw(
    alice: Any, settings: Any
) -> None:
    settings.LADDER_TRUSTED_PROXIES = 1

    def through_proxy(password: str, client: str, forged: str = "") -> Any:
        chain = f"{forged}, {client}" if forged else client  # the proxy appends what it saw
        return Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=chain).post(
            "/login", {"username": "alice", "password": password}
        )

    for i in range(5):
        through_proxy("nope", HERE, forged=f"192.0.2.{i}")  # what the client wrote itself is not believed
    assert through_proxy("pw", HERE, forged="192.0.2.99").status_code == 429
    assert through_proxy("pw", ELSEWHERE)["Location"] == "/portal/"  # another client behind the same proxy
    assert AccessAttempt.objects.filter(username="alice", ip_address=HERE).exists()


def test_without_trusted_proxies_a_forwarded_for_is_not_believed(alice: Any) -> None:
    for i in range(5):
        Client(REMOTE_ADDR=HERE, HTTP_X_FORWARDED_FOR=f"192.0.2.{i}").post(
            "/login", {"username": "alice", "password": "nope"}
        )
    forged = Client(REMOTE_ADDR=HERE, HTTP_X_FORWARDED_FOR=ELSEWHERE)
    assert forged.post("/login", {"username": "alice", "password": "pw"}).status_code == 429


def test_the_count_is_per_username(alice: Any, charlie: Any) -> None:
    for _ in range(5):
        sign_in("nope")
    assert sign_in("pw").status_code == 429
    assert sign_in("pw", username="charlie")["Location"] == "/portal/"


def test_the_admin_signs_in_through_the_same_throttle(db: None) -> None:
    root = get_user_model().objects.create_superuser(username="root", email="root@ladder.test", password="admin-pw")
    code = current_code(staff_device(root))
    client = Client(REMOTE_ADDR=HERE)
    form = {"username": "root", "password": "admin-pw", "otp_token": code, "next": "/admin/"}
    signed = client.post("/admin/login/", form)
    assert signed["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
    other = Client(REMOTE_ADDR=HERE)
    for _ in range(5):
        other.post("/admin/login/", {"username": "root", "password": "wrong"})
    assert other.post("/admin/login/", {"username": "root", "password": "admin-pw"}).status_code == 429


def test_api_keys_are_not_counted_nor_locked(alice: Any) -> None:
    issued = api_key_create(user=alice, name="ci", scopes=["read"], expires_at=None, actor=SYSTEM)
    api = Client(REMOTE_ADDR=HERE)
    for _ in range(8):
        assert api.get("/api/v1/tenant", HTTP_AUTHORIZATION="Bearer ldr_000000000000_wrong").status_code == 401
    assert not AccessAttempt.objects.exists()
    for _ in range(5):
        sign_in("nope")
    assert sign_in("pw").status_code == 429
    assert api.get("/api/v1/tenant", HTTP_AUTHORIZATION=f"Bearer {issued.token}").status_code == 200
