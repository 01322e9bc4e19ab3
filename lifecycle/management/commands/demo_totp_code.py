"""``manage.py demo_totp_code USERNAME``: the current code of a demo staff user's second factor, for signing in to
the admin or a console of `make run` without an authenticator app.

It answers only for a device with the demo's known secret (``seed_demo.DEMO_TOTP_SECRET``), and refuses to run with
DEBUG off unless ``--force``, like ``seed_demo``: a real device's code is never printed.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django_otp.oath import totp

from lifecycle.management.commands.seed_demo import DEMO_TOTP_SECRET
from tenancy.totp import totp_device, totp_secret


class Command(BaseCommand):
    help = "Print the current TOTP code of a demo staff user (seeded by seed_demo)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--force", action="store_true", help="Run even with DEBUG off.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["force"]:
            raise CommandError("demo_totp_code is for the demo; run it with DEBUG=1 or --force.")
        user = get_user_model().objects.filter(username=options["username"]).first()
        device = totp_device(user) if user is not None else None
        if device is None or totp_secret(device) != DEMO_TOTP_SECRET:
            raise CommandError(f"{options['username']!r} has no demo second factor (run seed_demo).")
        code = totp(device.bin_key, device.step, device.t0, device.digits, device.drift)
        self.stdout.write(f"{code:0{device.digits}d}")
