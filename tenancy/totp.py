"""A member's second factor: one TOTP device (django-otp's) that the member starts, confirms with a current code
and turns off again with one. Turning it on or off is audited; a device that was started but never confirmed counts
for nothing.

Codes are checked on the device row locked for update, so one code is accepted once (django-otp remembers the last
time step used) and its throttling (a growing wait after each wrong code) holds across concurrent requests. The
wrong code's count is committed: a refusal is returned, not raised inside the transaction.

Staff have no choice: the admin and the staff consoles open only for a session that gave a code
(``staff_second_factor_passed``). A staff user cannot enrol through pages they cannot open yet, so a device is
enrolled from the command line (``manage.py staff_totp_enrol USERNAME``, ``staff_totp_enrol``): confirmed at once,
its ``otpauth://`` URI handed to the staff user, audited.
"""

from __future__ import annotations

from base64 import b32decode, b32encode
from typing import Any

from django.db import transaction
from django_otp import user_has_device
from django_otp.plugins.otp_totp.models import TOTPDevice

from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, Invalid
from tenancy.models import Membership

DEVICE_NAME = "Authenticator app"
WRONG_CODE = "That code is not right (or came too soon after a wrong one): wait for the next code and try again."


def totp_device(user: Any, *, confirmed: bool = True) -> TOTPDevice | None:
    """The user's confirmed device, or with ``confirmed=False`` the one started and not confirmed yet."""
    return TOTPDevice.objects.filter(user=user, confirmed=confirmed).order_by("pk").first()


def second_factor_passed(user: Any) -> bool:
    """Whether a signed-in session may go on: the user has no confirmed device, or the session gave its code
    (``OTPMiddleware`` puts ``is_verified`` on the request's user)."""
    verified = getattr(user, "is_verified", None)
    return bool(verified is not None and verified()) or not user_has_device(user)


def staff_second_factor_passed(user: Any) -> bool:
    """Whether a staff user's session may open the admin or a console: it gave a code of a confirmed device (a
    staff user with no device may not go on at all)."""
    verified = getattr(user, "is_verified", None)
    return bool(verified is not None and verified())


def totp_secret(device: TOTPDevice) -> str:
    """The device's secret as authenticator apps take it (base32, no padding)."""
    return b32encode(device.bin_key).decode().rstrip("=")


def staff_totp_enrol(*, user: Any, actor: Actor, secret: str | None = None, replace: bool = False) -> TOTPDevice:
    """A confirmed TOTP device for a staff user, with a fresh secret (or ``secret``, base32: the demo's known one).
    A user who has one already keeps it unless ``replace``; then every device of theirs goes first."""
    if not user.is_staff:
        raise Invalid("not_staff", f"{user.get_username()} is not staff: members turn it on in the portal.")
    extra: dict[str, Any] = {}
    if secret is not None:
        try:
            extra["key"] = b32decode(secret.upper() + "=" * (-len(secret) % 8)).hex()
        except ValueError:
            raise Invalid("totp_secret", "The secret is not base32.", field="secret") from None
    with transaction.atomic():
        if TOTPDevice.objects.select_for_update(no_key=True).filter(user=user, confirmed=True).exists() and not replace:
            raise Conflict("totp_on", f"{user.get_username()} has a device already (replace it to enrol another).")
        replaced = TOTPDevice.objects.filter(user=user).delete()[0]
        device: TOTPDevice = TOTPDevice.objects.create(user=user, name=DEVICE_NAME, confirmed=True, **extra)
        audit_record(
            actor=actor,
            action="staff.totp_enrolled",
            target_type="user",
            target_id=user.pk,
            data={"device": device.pk, "replaced": replaced},
        )
    return device


def totp_code_check(*, user: Any, code: str) -> TOTPDevice | None:
    """The user's confirmed device if ``code`` is its current code (and was not used before), else None."""
    with transaction.atomic():
        device = _locked_device(user, confirmed=True)
        if device is None or not device.verify_token(code.strip()):
            return None
        return device


def _locked_device(user: Any, *, confirmed: bool) -> TOTPDevice | None:
    """The user's (un)confirmed device, row-locked: a code is checked and its use recorded by one writer."""
    device: TOTPDevice | None = (
        TOTPDevice.objects.select_for_update(no_key=True).filter(user=user, confirmed=confirmed).order_by("pk").first()
    )
    return device


@transaction.atomic
def totp_start(*, membership: Membership) -> TOTPDevice:
    """A new device with a fresh secret, not confirmed yet (one started earlier and not confirmed is replaced)."""
    user = membership.user
    if totp_device(user) is not None:
        raise Conflict("totp_on", "The second factor is on already.")
    TOTPDevice.objects.filter(user=user, confirmed=False).delete()
    device: TOTPDevice = TOTPDevice.objects.create(user=user, name=DEVICE_NAME, confirmed=False)
    return device


def totp_enable(*, membership: Membership, code: str, actor: Actor) -> TOTPDevice:
    """Confirm the started device with its current code: from now on, signing in asks for a code."""
    user = membership.user
    with transaction.atomic():
        device = _locked_device(user, confirmed=False)
        if device is None:
            raise Conflict("totp_not_started", "Start again: there is no authenticator app waiting for its code.")
        accepted = device.verify_token(code.strip())
        if accepted:
            device.confirmed = True
            device.save(update_fields=["confirmed"])
            audit_record(
                actor=actor,
                action="member.totp_enabled",
                target_type="user",
                target_id=user.pk,
                tenant=membership.tenant,
                data={"device": device.pk},
            )
    if not accepted:
        raise Invalid("totp_code_wrong", WRONG_CODE, field="code")
    return device


def totp_disable(*, membership: Membership, code: str, actor: Actor) -> None:
    """Turn the second factor off, proven with a current code: every device of the member goes."""
    user = membership.user
    with transaction.atomic():
        device = _locked_device(user, confirmed=True)
        if device is None:
            raise Conflict("totp_off", "The second factor is off already.")
        accepted = device.verify_token(code.strip())
        if accepted:
            TOTPDevice.objects.filter(user=user).delete()
            audit_record(
                actor=actor,
                action="member.totp_disabled",
                target_type="user",
                target_id=user.pk,
                tenant=membership.tenant,
                data={"device": device.pk},
            )
    if not accepted:
        raise Invalid("totp_code_wrong", WRONG_CODE, field="code")
