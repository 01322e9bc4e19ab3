"""``manage.py billing_close_windows [--now ISO-8601]``: cut open usage at passed hour boundaries and price
changes, roll up every window whose end + grace has passed, enforce budgets; prints what it did (on a terminal, the
cuts made so far on stderr meanwhile: ``core/progress.py``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from billing.management.commands._clock import parse_now
from billing.services.ledger import windows_close
from core.progress import Progress
from lifecycle.services.customers import budgets_enforce


class Command(BaseCommand):
    help = "Close the usage windows that are due (hourly rollups, late adjustments) and check budgets."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--now", help="Act as if it were this time (ISO-8601; default: now).")

    def handle(self, *args: Any, **options: Any) -> None:
        now = parse_now(options["now"])
        report = windows_close(now=now, progress=Progress(self.stderr, "closing windows", unit="cuts"))
        self.stdout.write(str(report))
        for slug, crossed in budgets_enforce(now=now).items():
            if crossed:
                self.stdout.write(f"budget alerts for {slug}: {', '.join(f'{t}%' for t in crossed)}")
