"""The ``--now ISO-8601`` option the billing commands share (the clock is injectable for tests and replays)."""

from __future__ import annotations

from datetime import UTC, datetime

from django.core.management.base import CommandError
from django.utils import timezone


def parse_now(value: str | None) -> datetime:
    if value is None:
        return timezone.now()
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--now {value!r} is not an ISO-8601 time (e.g. 2026-11-30T14:00:00Z)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
