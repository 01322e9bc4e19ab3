"""``manage.py billing_push [--now ISO-8601]``: send every due rollup to Stripe once; prints how many were sent,
skipped as already sent, failed, too old (stale) and deferred (on a terminal, the rollups handled so far on stderr
meanwhile: ``core/progress.py``). Exits 1 when any failed or went stale."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.management.commands._clock import parse_now
from billing.services.stripe_push import billing_push
from billing.services.stripe_sync import stripe_enabled
from core.progress import Progress


class Command(BaseCommand):
    help = "Push closed usage rollups to Stripe Billing Meters (exactly once per rollup)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--now", help="Act as if it were this time (ISO-8601; default: now).")

    def handle(self, *args: Any, **options: Any) -> None:
        if not stripe_enabled():
            self.stdout.write("Stripe is not configured (STRIPE_API_KEY is empty): ledger-only, nothing to push.")
            return
        progress = Progress(self.stderr, "pushing rollups", unit="rollups")
        report = billing_push(now=parse_now(options["now"]) if options["now"] else None, progress=progress)
        self.stdout.write(str(report))
        for line in report.errors:
            self.stderr.write(line)
        if report.failed or report.stale:
            raise CommandError(
                f"{report.failed} failed and {report.stale} stale rollups need a person (see push_error in the admin)",
                returncode=1,
            )
