"""``manage.py audit_export --out FILE [--tenant SLUG] [--from ISO] [--to ISO]``: a bundle of the audit log that
``python -m compliance.domain.verify FILE --public-key KEYFILE`` verifies offline (format:
``compliance/domain/verify.py``). On a
terminal, the events written so far show on stderr meanwhile (``core/progress.py``)."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.dateparse import parse_datetime

from compliance.services.audit import AuditExportError, audit_export
from core.progress import Progress
from tenancy.models import Tenant


def _time(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = parse_datetime(value)
    except ValueError:
        parsed = None
    if parsed is None:
        raise CommandError(f"{option} must be an ISO-8601 time, e.g. 2026-01-31T00:00:00Z; got {value!r}")
    if parsed.tzinfo is None:
        raise CommandError(f"{option} needs a time zone (e.g. Z or +01:00): {value!r}")
    return parsed


class Command(BaseCommand):
    help = "Export audit events, with the signed checkpoints covering them, as a bundle that verifies offline."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", required=True, help="the bundle file to write (JSON lines)")
        parser.add_argument("--tenant", help="only this tenant's events (slug)")
        parser.add_argument("--from", dest="since", help="only events at or after this time (ISO-8601)")
        parser.add_argument("--to", dest="until", help="only events before this time (ISO-8601)")

    def handle(self, *args: Any, **options: Any) -> None:
        since, until = _time(options["since"], "--from"), _time(options["until"], "--to")
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"no tenant {options['tenant']!r}")
        out = Path(options["out"])
        partial = out.with_name(out.name + ".partial")
        try:
            with partial.open("wb") as stream:
                progress = Progress(self.stderr, "exporting events", unit="events")
                report = audit_export(stream, tenant=tenant, since=since, until=until, progress=progress)
            os.replace(partial, out)  # a bundle appears whole or not at all
        except AuditExportError as error:
            raise CommandError(f"nothing exported: {error}", returncode=1) from None
        finally:
            partial.unlink(missing_ok=True)
        self.stdout.write(f"{report.describe()} to {out}")
