"""A member's second factor: one TOTP device (django-otp's) that the member starts, confirms with a current code
and turns off again with one. Turning it on or off is audited; a device that was started but never confirmed counts
for nothing.

Codes are checked on the device row locked for update, so one code is accepted once (django-otp remembers the last
time step used) and its throttling (a growing wait after each wrong code) holds across concurrent requests. The
wrong code's count is committed: a refusal is returned, not raised inside the transaction.
"""

from __future__ import annotations

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
        TOTPDevice.objects.select_for_update().filter(user=user, confirmed=confirmed).order_by("pk").first()
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
