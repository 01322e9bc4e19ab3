"""Staff's second factor through the real sign-in pages: the admin (django-otp's admin site) asks every staff user
for a code of their TOTP device with the password and opens only for a session that gave one, its failed sign-ins
lock out like the portal's (django-axes), the staff consoles ask for the same code, and a staff user with no device
is enrolled from the command line (``staff_totp_enrol``, audited) since no page opens for them yet."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

from core.models import AuditEvent
from tests.support.otp import current_code, pass_second_factor, staff_device

HERE = "198.51.100.7"


def admin_sign_in(username: str, password: str, code: str = "", *, client: Client | None = None) -> Any:
    client = client or Client(REMOTE_ADDR=HERE)
    form = {"username": username, "password": password, "otp_token": code, "next": "/admin/"}
    return client.post("/admin/login/", form)


def test_the_admin_opens_only_after_the_code(operator: Any) -> None:
    device = staff_device(operator)
    client = Client()
    no_code = admin_sign_in("operator", "pw", client=client)
    assert no_code.status_code == 200
    assert b"Please enter your OTP token" in no_code.content
    assert client.get("/admin/")["Location"].startswith("/admin/login/")
    wrong = admin_sign_in("operator", "pw", f"{(int(current_code(device)) + 1) % 10**6:06d}", client=client)
    assert wrong.status_code == 200
    assert client.get("/admin/")["Location"].startswith("/admin/login/")
    with time_machine.travel(timezone.now() + timedelta(seconds=31)):  # the wrong code's wait is over
        right = admin_sign_in("operator", "pw", current_code(device), client=client)
        assert right["Location"] == "/admin/"
        assert client.get("/admin/").status_code == 200


def test_a_staff_user_without_a_device_cannot_sign_in_to_the_admin(operator: Any) -> None:
    client = Client()
    refused = admin_sign_in("operator", "pw", "123456", client=client)
    assert refused.status_code == 200
    assert client.get("/admin/")["Location"].startswith("/admin/login/")


def test_a_session_without_the_code_does_not_open_the_admin(admin_user: Any) -> None:
    client = Client()
    client.force_login(admin_user)  # the password only: a superuser, signed in, not verified
    assert client.get("/admin/")["Location"].startswith("/admin/login/")
    assert client.get("/admin/tenancy/tenant/")["Location"].startswith("/admin/login/")


def test_failed_admin_sign_ins_lock_out(settings: Any, operator: Any) -> None:
    settings.AXES_ENABLED = True
    device = staff_device(operator)
    for _ in range(4):
        assert admin_sign_in("operator", "wrong").status_code == 200
    assert admin_sign_in("operator", "wrong").status_code == 429  # the fifth failure locks
    locked = admin_sign_in("operator", "pw", current_code(device))
    assert locked.status_code == 429
    assert b"This account is locked for now" in locked.content
    assert (
        admin_sign_in("operator", "pw", current_code(device), client=Client(REMOTE_ADDR="203.0.113.9")).status_code
        == 302
    )


def test_the_consoles_ask_staff_for_the_code(operator: Any) -> None:
    device = staff_device(operator)
    client = Client()
    signed = client.post("/login", {"username": "operator", "password": "pw"})
    assert signed["Location"].startswith("/login/code")
    assert client.get("/console/operators/")["Location"].startswith("/login/code")
    answered = client.post(signed["Location"], {"code": current_code(device)})
    assert answered["Location"] == "/console/operators/"
    assert client.get("/console/operators/").status_code == 200


def test_a_staff_user_without_a_device_is_told_to_enrol(operator: Any) -> None:
    client = Client()
    assert client.post("/login", {"username": "operator", "password": "pw"})["Location"] == "/console/operators/"
    refused = client.get("/console/operators/")
    assert refused.status_code == 403
    assert b"staff_totp_enrol operator" in refused.content


def test_a_member_without_a_device_still_gets_a_plain_403_on_a_console(alice: Any) -> None:
    client = Client()
    client.force_login(alice)
    refused = client.get("/console/operators/")
    assert refused.status_code == 403
    assert b"staff_totp_enrol" not in refused.content


def test_staff_totp_enrol_prints_a_working_uri_and_is_audited(operator: Any) -> None:
    out = StringIO()
    call_command("staff_totp_enrol", "operator", stdout=out)
    uri = out.getvalue().splitlines()[0]
    assert uri.startswith("otpauth://totp/Ladder%3Aoperator?")
    query = parse_qs(urlparse(uri).query)
    assert query["issuer"] == ["Ladder"]
    secret = query["secret"][0]
    assert f"secret: {secret}" in out.getvalue()
    event = AuditEvent.objects.get(action="staff.totp_enrolled")
    assert (event.target_type, event.target_id, event.actor_label) == ("user", str(operator.pk), "staff_totp_enrol")
    # an authenticator app given that secret signs the staff user in to the admin
    key = __import__("base64").b32decode(secret + "=" * (-len(secret) % 8))
    code = f"{totp(key):06d}"
    assert admin_sign_in("operator", "pw", code)["Location"] == "/admin/"


def test_staff_totp_enrol_keeps_a_device_unless_told_to_replace_it(operator: Any) -> None:
    call_command("staff_totp_enrol", "operator", stdout=StringIO())
    first = TOTPDevice.objects.get(user=operator)
    with pytest.raises(CommandError, match="has a device already"):
        call_command("staff_totp_enrol", "operator", stdout=StringIO())
    call_command("staff_totp_enrol", "operator", "--replace", stdout=StringIO())
    assert list(TOTPDevice.objects.filter(user=operator).values_list("pk", flat=True)) != [first.pk]
    assert TOTPDevice.objects.filter(user=operator).count() == 1
    assert AuditEvent.objects.filter(action="staff.totp_enrolled").count() == 2


def test_staff_totp_enrol_refuses_members_and_unknown_users(alice: Any) -> None:
    with pytest.raises(CommandError, match="not staff"):
        call_command("staff_totp_enrol", "alice", stdout=StringIO())
    with pytest.raises(CommandError, match="No user"):
        call_command("staff_totp_enrol", "nobody", stdout=StringIO())
    assert not TOTPDevice.objects.exists()
    assert not AuditEvent.objects.filter(action="staff.totp_enrolled").exists()


@pytest.mark.django_db
def test_the_demo_staff_sign_in_with_the_demo_code(settings: Any) -> None:
    settings.DEBUG = True  # seed_demo and demo_totp_code are for `make run`
    seeded = StringIO()
    call_command("seed_demo", stdout=seeded)
    secret = re.search(r"TOTP secret ([A-Z2-7]+)", seeded.getvalue())
    assert secret is not None
    code = StringIO()
    call_command("demo_totp_code", "finance", stdout=code)
    client = Client()
    signed = client.post("/login", {"username": "finance", "password": "finance-ladder-demo"})
    assert client.post(signed["Location"], {"code": code.getvalue().strip()})["Location"].startswith("/console/")
    with time_machine.travel(timezone.now() + timedelta(seconds=31)):
        code = StringIO()
        call_command("demo_totp_code", "operator", stdout=code)
        assert admin_sign_in("operator", "operator-ladder-demo", code.getvalue().strip())["Location"] == "/admin/"
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG"):
        call_command("demo_totp_code", "operator", stdout=StringIO())


def test_the_apis_session_of_a_staff_user_needs_the_code_too(operator: Any) -> None:
    client = Client()
    client.force_login(operator)  # the password only
    assert client.get("/api/v1/ops/nodes").status_code in (401, 403)
    pass_second_factor(client, operator)
    assert client.get("/api/v1/ops/nodes").status_code == 200
