"""``manage.py audit_verify``: walk the whole audit chain; exit 0 when intact, 1 naming the first bad seq (on a
terminal, the events checked so far on stderr meanwhile: ``core/progress.py``)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from compliance.selectors import audit_chain_verify
from core.progress import Progress


class Command(BaseCommand):
    help = "Verify the hash-chained audit log and name the first bad event."

    def handle(self, *args: Any, **options: Any) -> None:
        result = audit_chain_verify(progress=Progress(self.stderr, "verifying events", unit="events"))
        if not result.ok:
            raise CommandError(result.describe(), returncode=1)
        self.stdout.write(result.describe())
