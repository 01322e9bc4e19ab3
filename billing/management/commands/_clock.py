"""The options the billing commands share: ``--now ISO-8601`` (the clock is injectable for tests and replays), a
price's ``--from``, ``--region`` and a price, and a refusal named by the option at fault."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

from django.core.management.base import CommandError
from django.utils import timezone

from core.errors import ServiceError
from provisioning.models import Region


def parse_now(value: str | None) -> datetime:
    if value is None:
        return timezone.now()
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--now {value!r} is not an ISO-8601 time (e.g. 2026-11-30T14:00:00Z)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_start(value: str | None) -> datetime:
    """A price's ``--from``: now when not given."""
    if value is None:
        return timezone.now()
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--from: {value!r} is not an ISO-8601 time (e.g. 2027-01-01T00:00:00Z)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_region(code: str) -> Region:
    region = Region.objects.filter(code=code).first()
    if region is None:
        raise CommandError(f"--region: there is no region {code!r}")
    return region


def parse_price(option: str, value: str) -> Decimal:
    try:
        return Decimal(value)
    except InvalidOperation:
        raise CommandError(f"{option}: {value!r} is not a number") from None


@contextmanager
def refusals_named(options: Mapping[str, str]) -> Iterator[None]:
    """A service's refusal as a command error, named by the option of its field (``options``: field -> option)."""
    try:
        yield
    except ServiceError as error:
        where = options.get(error.field or "", "--from" if error.field == "effective_from" else "")
        raise CommandError(f"{where}: {error.detail}" if where else error.detail) from None
