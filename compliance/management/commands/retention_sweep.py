"""``manage.py retention_sweep [--now ISO-8601] [--dry-run]``: apply retention, end waiting periods, finish
closures; print what was done, which legal holds stopped what and which expired volumes running work still mounts
(on a terminal, the tenants swept so far on stderr meanwhile: ``core/progress.py``)."""

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from compliance.models import LegalHold
from compliance.services.sweep import SweepReport, retention_sweep
from core.progress import Progress
from provisioning.models import Volume


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--now {text!r} is not an ISO-8601 date or time (e.g. 2026-12-01T00:00:00Z).") from None
    return moment if timezone.is_aware(moment) else moment.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = "Schedule shredding of expired, unheld data; shred what finished its waiting period; finish closures."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--now", type=_moment, help="Sweep as if it were this moment (ISO-8601; default: now).")
        parser.add_argument("--dry-run", action="store_true", help="Say what would be done; change nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        progress = Progress(self.stderr, "sweeping tenants", unit="tenants")
        report = retention_sweep(now=options["now"], dry_run=options["dry_run"], progress=progress)
        self.stdout.write(describe(report))


def describe(report: SweepReport) -> str:
    verb = "would" if report.dry_run else "did"
    lines = [f"Retention sweep at {report.now.isoformat()}{' (dry run: nothing changed)' if report.dry_run else ''}"]

    def by_category(counts: Any) -> str:
        return ", ".join(f"{n} {c}" for c, n in sorted(counts.items())) or "none"

    lines.append(
        f"  scheduled for shredding ({verb}): {sum(report.scheduled.values())} ({by_category(report.scheduled)})"
    )
    lines.append(f"  shredded ({verb}): {sum(report.shredded.values())} ({by_category(report.shredded)})")
    matters = dict(LegalHold.objects.filter(pk__in=[*report.held, *report.suspended]).values_list("pk", "matter"))
    for hold_id, count in sorted(report.held.items()):
        lines.append(f"  kept by legal hold {hold_id} ({matters.get(hold_id, '?')}): {count} expired assets")
    for hold_id, count in sorted(report.suspended.items()):
        lines.append(f"  shredding stopped by legal hold {hold_id} ({matters.get(hold_id, '?')}): {count} assets")
    volumes = Volume.objects.filter(pk__in=list(report.deferred)).select_related("tenant").in_bulk()
    for volume_id, allocations in sorted(report.deferred.items()):
        volume = volumes.get(volume_id)
        name = f"{volume.tenant.slug}/{volume.name}" if volume is not None else "?"
        mounted = ", ".join(map(str, allocations))
        lines.append(
            f"  deferred: volume {volume_id} ({name}) is expired but mounted by allocation {mounted}; "
            "it is scheduled by the first sweep after that work ends"
        )
    if report.closed:
        lines.append(f"  accounts closed: {', '.join(report.closed)}")
    if report.tenant_keys_shredded:
        lines.append(f"  tenant keys shredded: {', '.join(report.tenant_keys_shredded)}")
    return "\n".join(lines)
