"""core.domain.months: the one reading of ``YYYY-MM`` and of a range of months (the finance API and console, the
reconciliation's API, console and command). Pure: no database, no clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.domain.months import (
    FIRST_YEAR,
    LAST_YEAR,
    MAX_MONTHS,
    MonthError,
    month_end,
    month_of,
    month_range,
    month_start,
    month_text,
)
from core.errors import Invalid

NOW = datetime(2026, 11, 17, 15, 4, 5, tzinfo=UTC)


def test_a_month_is_its_first_instant_utc_and_ends_where_the_next_begins() -> None:
    start = month_start("2026-12")
    assert start == datetime(2026, 12, 1, tzinfo=UTC)
    assert month_end(start) == datetime(2027, 1, 1, tzinfo=UTC)
    assert month_end(month_start("2027-02")) == datetime(2027, 3, 1, tzinfo=UTC)
    assert month_text(start) == "2026-12"


def test_the_month_of_a_moment_is_read_in_utc() -> None:
    evening_in_new_york = datetime(2026, 11, 30, 21, 0, tzinfo=timezone(timedelta(hours=-5)))  # 1 Dec, 02:00 UTC
    assert month_of(NOW) == datetime(2026, 11, 1, tzinfo=UTC)
    assert month_of(evening_in_new_york) == datetime(2026, 12, 1, tzinfo=UTC)
    assert month_text(evening_in_new_york) == "2026-12"


@pytest.mark.parametrize(
    "value",
    [
        "2026-13",
        "2026-00",
        "2026-1",
        "26-11",
        "Nov",
        "2026/11",
        "2026-11-01",
        "2026-11\n",
        "\u0662\u0660\u0662\u0666-\u0661\u0661",  # Arabic-Indic digits
        " 2026-11",
        "",
        None,
        "1999-12",
        "9999-12",
    ],
)
def test_a_bad_month_is_refused_naming_the_field(value: str | None) -> None:
    with pytest.raises(MonthError) as refused:
        month_start(value, field="from")
    error = refused.value
    assert isinstance(error, Invalid)  # the API answers 422 problem+json
    assert (error.status, error.code, error.field) == (422, "validation_error", "from")
    assert "is not a month: write it as YYYY-MM, e.g. 2027-03" in error.detail


def test_a_reader_may_give_the_refusal_its_own_code() -> None:
    with pytest.raises(MonthError) as refused:
        month_start("2026-13", code="month_invalid")
    assert (refused.value.code, refused.value.field) == ("month_invalid", "month")


def test_the_range_defaults_to_the_month_of_now_and_a_missing_last_to_the_first() -> None:
    assert month_range(None, None, default=NOW).labels == ("2026-11", "2026-11")
    assert month_range("", "", default=NOW).labels == ("2026-11", "2026-11")
    only = month_range("2025-03", None, default=NOW)
    assert (only.start, only.end, only.months) == (
        datetime(2025, 3, 1, tzinfo=UTC),
        datetime(2025, 4, 1, tzinfo=UTC),
        1,
    )


def test_a_range_across_a_new_year_ends_at_the_month_after_its_last() -> None:
    months = month_range("2025-11", "2026-02", default=NOW)
    assert (months.start, months.end, months.months) == (
        datetime(2025, 11, 1, tzinfo=UTC),
        datetime(2026, 3, 1, tzinfo=UTC),
        4,
    )


def test_a_reversed_range_is_refused_on_the_last_field() -> None:
    with pytest.raises(MonthError) as refused:
        month_range("2026-11", "2026-10", default=NOW, fields=("since", "until"))
    assert (refused.value.code, refused.value.field) == ("validation_error", "until")
    assert refused.value.detail == "The last month must not come before the first."


def test_a_range_over_the_limit_is_refused_and_one_at_it_is_read() -> None:
    assert month_range("2025-01", "2026-12", default=NOW).months == MAX_MONTHS == 24
    with pytest.raises(MonthError) as refused:
        month_range("2025-01", "2027-01", default=NOW)
    assert (refused.value.field, refused.value.detail) == ("to", "At most 24 months at a time.")
    with pytest.raises(MonthError):
        month_range("2026-01", "2026-03", default=NOW, max_months=2)


def test_a_bad_first_month_is_named_before_the_range_is_judged() -> None:
    with pytest.raises(MonthError) as refused:
        month_range("2026-13", "2020-01", default=NOW)
    assert refused.value.field == "from"
    with pytest.raises(MonthError) as refused:
        month_range("2026-01", "later", default=NOW)
    assert refused.value.field == "to"


@given(st.integers(FIRST_YEAR, LAST_YEAR), st.integers(1, 12))
def test_every_month_reads_back_as_written_and_ends_where_the_next_begins(year: int, month: int) -> None:
    text = f"{year:04d}-{month:02d}"
    start = month_start(text)
    end = month_end(start)
    assert month_text(start) == text
    assert month_of(end - timedelta(microseconds=1)) == start
    if end.year <= LAST_YEAR:
        assert month_range(text, month_text(end), default=NOW).months == 2
