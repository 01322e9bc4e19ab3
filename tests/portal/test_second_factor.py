"""The TOTP second factor through Django's test client: a member turns it on at /portal/security (the secret, its
``otpauth://`` URI and a QR code in SVG), confirms it with a current code, is asked for a code after the password
from then on (no portal page, nor the API's session, opens before it), and turns it off with a code. Codes are
computed with django-otp's own TOTP; the clock moves on with time-machine where a code must be a fresh one."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import time_machine
from django.test import Client
from django.utils import timezone
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from core.models import AuditEvent


def code(device: TOTPDevice) -> str:
    """The device's current code, as an authenticator app would show it."""
    token = TOTP(device.bin_key, device.step, device.t0, device.digits).token()
    return f"{token:0{device.digits}d}"


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def turn_on(client: Client) -> TOTPDevice:
    client.post("/portal/security", {"form": "start"})
    device = TOTPDevice.objects.get(confirmed=False)
    made = client.post("/portal/security", {"form": "enable", "code": code(device)})
    assert made["Location"] == "/portal/security", made.content
    device.refresh_from_db()
    assert device.confirmed
    return device


def later(seconds: int = 30) -> Any:
    """The clock a step on: a code already used is never accepted twice."""
    return time_machine.travel(timezone.now() + timedelta(seconds=seconds))


def test_a_member_turns_totp_on_with_the_secret_its_uri_and_a_qr_code(alice: Any) -> None:
    client = signed_in(alice)
    page = client.get("/portal/security")
    assert b'data-totp="off"' in page.content
    assert b"Security" in page.content
    assert not TOTPDevice.objects.exists()  # reading the page makes nothing

    client.post("/portal/security", {"form": "start"})
    device = TOTPDevice.objects.get(user=alice, confirmed=False)
    page = client.get("/portal/security")
    html = page.content.decode()
    secret = re.search(r'data-secret="([A-Z2-7]+)"', html)
    assert secret
    assert f"secret={secret[1]}" in html
    assert "otpauth://totp/Ladder%3Aalice?secret=" in html
    assert "<svg" in html
    assert "<path" in html
    assert "<script>" not in html  # no inline script for the policy to refuse
    assert " style=" not in html
    assert "script-src 'self'" in page["Content-Security-Policy"]

    wrong = client.post("/portal/security", {"form": "enable", "code": "000000" if code(device) != "000000" else "1"})
    assert wrong.status_code == 422
    assert b"That code is not right" in wrong.content
    assert not TOTPDevice.objects.filter(confirmed=True).exists()
    with later():  # past the wait a wrong code earns
        client.post("/portal/security", {"form": "enable", "code": code(device)})
    device.refresh_from_db()
    assert device.confirmed
    event = AuditEvent.objects.get(action="member.totp_enabled")
    assert (event.tenant_id, event.target_id, event.actor_id) == (
        alice.membership.tenant_id,
        str(alice.pk),
        str(alice.pk),
    )
    assert b'data-totp="on"' in client.get("/portal/security").content  # this session gave its code


def test_signing_in_asks_for_the_code_after_the_password(alice: Any) -> None:
    device = turn_on(signed_in(alice))
    client = Client()
    after_password = client.post("/login", {"username": "alice", "password": "pw", "next": "/portal/usage"})
    assert after_password["Location"] == "/login/code?next=/portal/usage"
    for path in ("/portal/", "/portal/usage", "/portal/security", "/portal/allocations"):
        assert client.get(path)["Location"].startswith("/login/code?next=")
    assert client.get("/api/v1/tenant").status_code in (401, 403)  # nor the API through the session

    step = client.get(after_password["Location"])
    assert b"Your code" in step.content
    assert client.post("/login/code", {"code": "12345x", "next": "/portal/usage"}).status_code == 422
    with later():
        passed = client.post("/login/code", {"code": code(device), "next": "/portal/usage"})
        assert passed["Location"] == "/portal/usage"
        assert client.get("/portal/usage").status_code == 200
        assert client.get("/api/v1/tenant").status_code == 200


def test_a_code_is_accepted_once_and_the_next_step_only_goes_to_this_site(alice: Any) -> None:
    device = turn_on(signed_in(alice))
    with later():
        first, second = Client(), Client()
        for client in (first, second):
            client.post("/login", {"username": "alice", "password": "pw"})
        used = code(device)
        assert first.post("/login/code", {"code": used, "next": "https://evil.example/"})["Location"] == "/portal/"
        assert second.post("/login/code", {"code": used}).status_code == 422  # replayed


def test_members_without_a_device_are_not_asked(alice: Any, bob: Any) -> None:
    turn_on(signed_in(alice))
    bob.set_password("pw-bob")
    bob.save()
    client = Client()
    assert client.post("/login", {"username": "bob", "password": "pw-bob"})["Location"] == "/portal/"
    assert client.get("/portal/").status_code == 200
    started = signed_in(bob)
    started.post("/portal/security", {"form": "start"})  # started, never confirmed: counts for nothing
    again = Client()
    assert again.post("/login", {"username": "bob", "password": "pw-bob"})["Location"] == "/portal/"


def test_turning_it_off_needs_a_code(alice: Any) -> None:
    client = signed_in(alice)
    device = turn_on(client)
    with later():
        refused = client.post("/portal/security", {"form": "disable", "code": "not-a-code"})
        assert refused.status_code == 422
        assert TOTPDevice.objects.filter(user=alice, confirmed=True).exists()
    with later(90):
        client.post("/portal/security", {"form": "disable", "code": code(device)})
        assert not TOTPDevice.objects.filter(user=alice).exists()
        assert AuditEvent.objects.filter(action="member.totp_disabled", target_id=str(alice.pk)).exists()
        fresh = Client()
        assert fresh.post("/login", {"username": "alice", "password": "pw"})["Location"] == "/portal/"
        assert b'data-totp="off"' in fresh.get("/portal/security").content


def test_the_page_is_for_members_only(alice: Any, charlie: Any) -> None:
    turn_on(signed_in(alice))
    assert Client().get("/portal/security")["Location"].startswith("/login")
    other = signed_in(charlie)
    assert b'data-totp="off"' in other.get("/portal/security").content  # charlie's own factor, not alice's
    refused = other.post("/portal/security", {"form": "disable", "code": "123456"})
    assert refused.status_code == 422
    assert b"The second factor is off already" in refused.content
    assert TOTPDevice.objects.filter(user=alice, confirmed=True).exists()
