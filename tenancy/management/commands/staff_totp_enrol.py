"""``manage.py staff_totp_enrol USERNAME [--replace]``: a second factor for a staff user, who cannot open the admin
or a console without one (and so cannot enrol there).

Prints the device's ``otpauth://`` URI (and its secret) for the staff user's authenticator app: hand it over as you
would a password. The enrolment is audited (``staff.totp_enrolled``); ``--replace`` swaps a lost device for a new one.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.actor import Actor
from core.errors import ServiceError
from tenancy.totp import staff_totp_enrol, totp_secret


class Command(BaseCommand):
    help = "Enrol a TOTP device for a staff user and print its otpauth:// URI."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--replace", action="store_true", help="Replace the user's device (a lost one).")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"No user {options['username']!r}.")
        try:
            device = staff_totp_enrol(user=user, actor=Actor.system("staff_totp_enrol"), replace=options["replace"])
        except ServiceError as error:
            raise CommandError(error.detail) from None
        self.stdout.write(device.config_url)
        self.stdout.write(f"secret: {totp_secret(device)}", self.style.NOTICE)
