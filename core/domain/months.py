"""Calendar months (UTC) as people write them, ``YYYY-MM``, and ranges of them: the one reading of a month that the
finance API, the finance console, the reconciliation (its API, console and ``manage.py billing_reconcile``) share.

Pure Python (no Django). A month is its first instant, an aware ``datetime`` at midnight UTC on the 1st; its end is
the next month's first instant, so ``[start, end)`` is the month. What cannot be read raises ``MonthError`` (an
``Invalid``: 422 problem+json at the API, naming the input in ``field``; a sentence on a console's form or a
command's error line)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from core.errors import Invalid

MONTH = re.compile(r"^([0-9]{4})-([0-9]{2})$")  # the shape; read whole (fullmatch): no trailing newline
FIRST_YEAR = 2000  # nothing the product holds is older
LAST_YEAR = 9998  # the end of December 9999 is past the last instant a datetime can hold
MAX_MONTHS = 24  # the longest range one report reads at a time


class MonthError(Invalid):
    """A month or a range of months the product cannot read: ``field`` names the input at fault."""


def month_start(value: str | None, *, field: str = "month", code: str = "validation_error") -> datetime:
    """``YYYY-MM`` -> the month's first instant (UTC). ``code`` is the problem code the refusal carries (the
    reconciliation's API answers ``month_invalid``, every other reader ``validation_error``)."""
    found = MONTH.fullmatch(value or "")
    if not found or not 1 <= int(found[2]) <= 12 or not FIRST_YEAR <= int(found[1]) <= LAST_YEAR:
        raise MonthError(
            code,
            f"{value or ''!r} is not a month: write it as YYYY-MM, e.g. 2027-03 (from {FIRST_YEAR} on).",
            field=field,
        )
    return datetime(int(found[1]), int(found[2]), 1, tzinfo=UTC)


def month_of(moment: datetime) -> datetime:
    """The first instant of the month (UTC) that contains ``moment`` (an aware datetime)."""
    return moment.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def month_end(start: datetime) -> datetime:
    """The first instant of the month after the one ``start`` falls in."""
    first = month_of(start)
    return first.replace(year=first.year + 1, month=1) if first.month == 12 else first.replace(month=first.month + 1)


def month_text(moment: datetime) -> str:
    """The month ``moment`` falls in (UTC), as ``YYYY-MM``."""
    return month_of(moment).strftime("%Y-%m")


def months_spanned(first: datetime, last: datetime) -> int:
    """Months from ``first``'s to ``last``'s, both counted: 1 for the same month."""
    return (last.year - first.year) * 12 + last.month - first.month + 1


@dataclass(frozen=True)
class MonthRange:
    """The months from ``first`` to ``last`` inclusive, each as its first instant."""

    first: datetime
    last: datetime

    @property
    def start(self) -> datetime:
        return self.first

    @property
    def end(self) -> datetime:
        """The first instant after the range: ``[start, end)`` holds every month of it."""
        return month_end(self.last)

    @property
    def months(self) -> int:
        return months_spanned(self.first, self.last)

    @property
    def labels(self) -> tuple[str, str]:
        return month_text(self.first), month_text(self.last)


def month_range(
    first: str | None,
    last: str | None,
    *,
    default: datetime,
    fields: tuple[str, str] = ("from", "to"),
    max_months: int = MAX_MONTHS,
) -> MonthRange:
    """A range of months from two ``YYYY-MM`` inputs (named ``fields``): an empty first is the month of ``default``,
    an empty last is the first. Refused, on the second field, when the last comes before the first or the range
    spans more than ``max_months`` months."""
    start = month_start(first, field=fields[0]) if first else month_of(default)
    stop = month_start(last, field=fields[1]) if last else start
    if stop < start:
        raise MonthError("validation_error", "The last month must not come before the first.", field=fields[1])
    if months_spanned(start, stop) > max_months:
        raise MonthError("validation_error", f"At most {max_months} months at a time.", field=fields[1])
    return MonthRange(start, stop)
