"""Staff's second factor in tests: a confirmed TOTP device, its current code, and a session past it (as after
giving that code), for the admin and the consoles that ask every staff user for one."""

from __future__ import annotations

from typing import Any

from django.test import Client
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice


def staff_device(user: Any) -> TOTPDevice:
    """The user's confirmed device, made when they have none."""
    device: TOTPDevice | None = TOTPDevice.objects.filter(user=user, confirmed=True).order_by("pk").first()
    if device is None:
        device = TOTPDevice.objects.create(user=user, name="test device", confirmed=True)
    return device


def current_code(device: TOTPDevice) -> str:
    """The code the user's authenticator app shows now."""
    return f"{totp(device.bin_key, device.step, device.t0, device.digits, device.drift):0{device.digits}d}"


def pass_second_factor(client: Client, user: Any) -> Client:
    """``client`` (signed in as ``user``) verified by the user's device, as ``django_otp.login`` marks a session."""
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = staff_device(user).persistent_id
    session.save()
    return client
