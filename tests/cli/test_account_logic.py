"""The account commands' own rules, without a server: months, budget amounts, expiry times, snapshot names,
picking a record by name, and asking before destroying."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace

import pytest
from ladder_cli.choose import confirm, one
from ladder_cli.commands.billing import budget_amount, month_window, totals
from ladder_cli.commands.keys import expiry, key_state
from ladder_cli.commands.volumes import NAME_MAX, snapshot_name
from ladder_cli.errors import NOT_FOUND, USAGE, CliError

NOW = datetime(2026, 3, 14, 15, 9, 26, tzinfo=UTC)


def test_a_month_is_its_utc_bounds_and_this_month_runs_to_now() -> None:
    assert month_window(None, NOW) == ("2026-03", datetime(2026, 3, 1, tzinfo=UTC), None)
    assert month_window("2026-03", NOW) == ("2026-03", datetime(2026, 3, 1, tzinfo=UTC), None)
    label, start, end = month_window("2025-12", NOW)
    assert (label, start, end) == ("2025-12", datetime(2025, 12, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC))
    assert month_window("2024-02", NOW)[2] == datetime(2024, 3, 1, tzinfo=UTC)


@pytest.mark.parametrize("month", ["2026-13", "2026-00", "2026-3", "March", "2026/03", ""])
def test_a_month_not_written_yyyy_mm_is_a_usage_error(month: str) -> None:
    with pytest.raises(CliError) as refused:
        month_window(month, NOW)
    assert refused.value.exit_code == USAGE


def test_totals_sum_the_rows_per_currency() -> None:
    rows = [SimpleNamespace(amount=a, currency=c) for a, c in (("1.10", "usd"), ("2.25", "usd"), ("3.00", "eur"))]
    assert totals(rows) == {"usd": Decimal("3.35"), "eur": Decimal("3.00")}


@pytest.mark.parametrize(("text", "amount"), [("2500", "2500.00"), ("99.5", "99.50"), (" none ", None)])
def test_a_budget_amount_is_positive_with_two_decimals_or_none(text: str, amount: str | None) -> None:
    assert budget_amount(text) == (None if amount is None else Decimal(amount))


@pytest.mark.parametrize("text", ["-5", "0", "0.00", "ten", "12.345", "1e3", "NaN", "1,000", "1000000000000", ""])
def test_a_bad_budget_amount_is_a_usage_error(text: str) -> None:
    with pytest.raises(CliError) as refused:
        budget_amount(text)
    assert refused.value.exit_code == USAGE
    assert refused.value.message.startswith("AMOUNT is a monthly budget above zero")


def test_expiry_takes_iso_dates_and_times_in_utc_unless_offset() -> None:
    assert expiry(None) is None
    assert expiry("2027-01-31") == datetime(2027, 1, 31, tzinfo=UTC)
    assert expiry("2027-01-31T18:00+02:00") == datetime(2027, 1, 31, 16, 0, tzinfo=UTC)
    with pytest.raises(CliError) as refused:
        expiry("next week")
    assert refused.value.exit_code == USAGE


def test_a_keys_state_reads_revoked_then_expired_then_active() -> None:
    def key(revoked: datetime | None = None, expires: datetime | None = None) -> SimpleNamespace:
        return SimpleNamespace(revoked_at=revoked, expires_at=expires)

    assert key_state(key(), NOW) == "active"
    assert key_state(key(expires=NOW + timedelta(days=1)), NOW) == "active"
    assert key_state(key(expires=NOW), NOW) == "expired"
    assert key_state(key(revoked=NOW, expires=NOW), NOW) == "revoked"


def test_a_default_snapshot_name_is_a_dns_label_of_the_volume_and_the_time() -> None:
    assert snapshot_name("datasets", NOW) == "datasets-20260314-150926"
    long = snapshot_name("a" * 62 + "b", NOW)
    assert len(long) == NAME_MAX
    assert long.endswith("-20260314-150926")
    assert snapshot_name("ab-" + "c" * 44 + "-xyz", NOW).count("--") == 0


def test_one_picks_by_any_key_prefers_live_records_and_refuses_ambiguity() -> None:
    items = [
        SimpleNamespace(id=1, name="demo", gone=True),
        SimpleNamespace(id=2, name="demo", gone=False),
        SimpleNamespace(id=3, name="ci", gone=False),
        SimpleNamespace(id=4, name="ci", gone=False),
    ]

    def pick(typed: str) -> SimpleNamespace:
        return one(items, typed, "thing", "list them", keys=lambda i: (i.id, i.name), gone=lambda i: i.gone)

    assert pick("demo").id == 2  # the live one of the name
    assert pick("1").id == 1  # by id, even when gone
    with pytest.raises(CliError) as ambiguous:
        pick("ci")
    assert ambiguous.value.exit_code == USAGE
    assert "ids 3, 4" in ambiguous.value.message
    with pytest.raises(CliError) as missing:
        pick("nothing")
    assert missing.value.exit_code == NOT_FOUND


def test_confirm_needs_yes_when_there_is_no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    confirm("delete volume x", yes=True)  # --yes: nothing asked
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # not a terminal: never read as an answer
    with pytest.raises(CliError) as refused:
        confirm("delete volume x", yes=False)
    assert refused.value.exit_code == USAGE
    assert refused.value.message == "pass --yes to delete volume x (there is no terminal to ask on)"
