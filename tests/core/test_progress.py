"""Progress of long commands (core/progress.py): on a terminal a redrawn line with the count, the rate and the ETA,
at most a few times a second; anywhere else nothing beyond the command's usual summary. The six long commands
show it on stderr."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from billing.models import PushState, Sku, UsageRollup
from billing.services import stripe_sync
from billing.services.ledger import windows_close
from core.progress import QUIET, Progress, duration, line
from provisioning.domain.states import AllocationState as S
from provisioning.services.transitions import allocation_transition
from tenancy.models import Tenant
from tests.fakes.stripe import StripeServer
from tests.support import SYSTEM
from tests.support.billing import load_fleet, place, price, run
from tests.support.fleet_documents import pretty, small_fleet


class Terminal(StringIO):
    """A stream that says it is a terminal, as stderr does when a person runs the command."""

    def isatty(self) -> bool:
        return True


class Clock:
    """Monotonic seconds, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def frames(stream: StringIO) -> list[str]:
    """The lines drawn, in order (each redraw starts with a carriage return)."""
    return [frame.rstrip() for frame in re.split(r"[\r\n]", stream.getvalue()) if frame.strip()]


# --- the module ----------------------------------------------------------------------------------------------


def test_a_known_total_shows_count_percent_rate_and_eta():
    clock, out = Clock(), Terminal()
    progress = Progress(out, "pushing", total=1000, unit="rollups", clock=clock)
    clock.now += 2.0
    progress.advance(200)
    assert frames(out) == ["pushing: 200/1,000 (20%) rollups, 100.0/s, ETA 0:00:08"]
    clock.now += 2.0
    progress.advance(200)
    assert frames(out)[-1] == "pushing: 400/1,000 (40%) rollups, 100.0/s, ETA 0:00:06"
    clock.now += 6.0
    progress.advance(600)
    progress.finish()
    assert frames(out)[-1] == "pushing: 1,000/1,000 (100%) rollups, 100.0/s, ETA 0:00:00"
    assert out.getvalue().endswith("\n")  # the line is ended: the summary starts on its own


def test_an_unknown_total_shows_count_and_rate_without_an_eta():
    clock, out = Clock(), Terminal()
    progress = Progress(out, "verifying", unit="events", clock=clock)
    clock.now += 4.0
    progress.advance(10_000)
    progress.finish()
    assert frames(out) == ["verifying: 10,000 events, 2,500.0/s"] * 2  # drawn once on advance, once at the end


def test_it_redraws_at_most_four_times_a_second_however_often_it_advances():
    clock, out = Clock(), Terminal()
    progress = Progress(out, "loading", total=10_000, clock=clock)
    for _ in range(10_000):
        clock.now += 0.001  # ten seconds of work, a step a millisecond
        progress.advance()
    drawn = len(frames(out))
    assert 38 <= drawn <= 41  # ten seconds at one redraw per 0.25 s (and the first step's)
    progress.finish()
    assert frames(out)[-1].startswith("loading: 10,000/10,000 (100%) items, 1,000.0/s")


def test_a_shorter_line_blanks_what_the_longer_one_left():
    clock, out = Clock(), Terminal()
    progress = Progress(out, "x", total=10**9, clock=clock)
    clock.now += 1
    progress.advance(10**8)
    long = out.getvalue()
    clock.now += 10**6  # the rate drops, the line shortens
    progress.advance(1)
    last = out.getvalue()[len(long) :]
    assert last.startswith("\r")
    assert len(last) - 1 >= len(long) - 1


def test_track_counts_what_it_hands_on_and_a_new_stage_starts_a_new_line():
    clock, out = Clock(), Terminal()
    progress = Progress(out, "first", total=3, clock=clock, every=0)
    assert list(progress.track("abc")) == ["a", "b", "c"]
    progress.start("second", total=2)
    clock.now += 1
    progress.advance(2)
    progress.finish()
    assert out.getvalue().count("\n") == 2
    assert frames(out)[-1] == "second: 2/2 (100%) items, 2.0/s, ETA 0:00:00"
    assert "first: 3/3 (100%)" in out.getvalue()


def test_off_a_terminal_nothing_is_written():
    clock, out = Clock(), StringIO()  # a pipe, a file, cron's mail
    progress = Progress(out, "pushing", total=10, clock=clock)
    for _ in range(10):
        clock.now += 1
        progress.advance()
    assert list(progress.track(range(3))) == [0, 1, 2]
    progress.finish()
    assert out.getvalue() == ""
    assert not progress.active


def test_quiet_counts_nothing_and_a_closed_or_plain_stream_is_not_a_terminal():
    QUIET.advance(5)
    QUIET.set_total(7)
    QUIET.finish()
    assert (QUIET.done, QUIET.total) == (0, None)

    closed = StringIO()
    closed.close()
    assert not Progress(closed).active  # isatty() on a closed file raises ValueError

    class NoIsatty:
        def write(self, text: str) -> None:
            raise AssertionError("nothing should be written")

    assert not Progress(NoIsatty()).active  # type: ignore[arg-type]


def test_durations_round_up():
    assert duration(0) == "0:00:00"
    assert duration(0.2) == "0:00:01"
    assert duration(3725) == "1:02:05"
    assert line("a", 0, 10, 0.0, "items") == "a: 0/10 (0%) items, 0.0/s"
    assert line("a", 0, 0, 1.0, "items") == "a: 0/0 (100%) items, 0.0/s"


# --- the commands --------------------------------------------------------------------------------------------

DRAWN = re.compile(r"^(?P<label>[a-z ]+): (?P<done>[\d,]+)/(?P<total>[\d,]+) \(100%\) (?P<unit>\w+), [\d,.]+/s, ETA ")


def final(err: StringIO) -> dict[str, str]:
    """The last progress line drawn on stderr, parsed (it must show a known total, all done, and an ETA)."""
    shown = frames(err)
    assert shown, "no progress was drawn"
    match = DRAWN.match(shown[-1])
    assert match, shown[-1]
    return match.groupdict()


def fleet_file(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.json"
    path.write_text(pretty(small_fleet()))
    return path


def test_fleet_load_shows_the_nodes_loaded_on_a_terminal_only(db, tmp_path):
    path = fleet_file(tmp_path)
    out, err = StringIO(), Terminal()
    call_command("fleet_load", str(path), stdout=out, stderr=err)
    nodes = sum(len(h["nodes"]) for r in small_fleet()["regions"] for h in r["halls"])
    assert final(err) == {"label": "loading nodes", "done": str(nodes), "total": str(nodes), "unit": "nodes"}
    assert f"nodes: {nodes} created" in out.getvalue()  # the summary as before, on stdout

    quiet_out, quiet_err = StringIO(), StringIO()
    call_command("fleet_load", str(path), stdout=quiet_out, stderr=quiet_err)
    assert quiet_err.getvalue() == ""
    assert f"0 updated, {nodes} unchanged" in quiet_out.getvalue()


def test_audit_verify_and_audit_export_show_the_events_walked(db, tmp_path):
    call_command("fleet_load", str(fleet_file(tmp_path)), stdout=StringIO())
    err = Terminal()
    call_command("audit_verify", stdout=StringIO(), stderr=err)
    shown = final(err)
    assert (shown["label"], shown["unit"]) == ("verifying events", "events")
    assert shown["done"] == shown["total"]
    assert int(shown["total"]) >= 1

    quiet = StringIO()
    call_command("audit_verify", stdout=StringIO(), stderr=quiet)
    assert quiet.getvalue() == ""

    err = Terminal()
    out = StringIO()
    call_command("audit_export", "--out", str(tmp_path / "bundle.jsonl"), stdout=out, stderr=err)
    shown = final(err)
    assert (shown["label"], shown["unit"]) == ("exporting events", "events")
    assert shown["done"] == shown["total"]
    assert f"to {tmp_path / 'bundle.jsonl'}" in out.getvalue()
    quiet = StringIO()
    call_command("audit_export", "--out", str(tmp_path / "again.jsonl"), stdout=StringIO(), stderr=quiet)
    assert quiet.getvalue() == ""


def test_retention_sweep_shows_the_tenants_swept(db, acme, globex):
    err = Terminal()
    call_command("retention_sweep", stdout=StringIO(), stderr=err)
    shown = final(err)
    tenants = Tenant.objects.count()
    assert shown == {"label": "sweeping tenants", "done": str(tenants), "total": str(tenants), "unit": "tenants"}
    quiet = StringIO()
    call_command("retention_sweep", stdout=StringIO(), stderr=quiet)
    assert quiet.getvalue() == ""


def _hours_of_usage(tenant: Tenant, hours: int) -> None:
    """An allocation of ``tenant`` that has run for ``hours`` whole hours (and a little more)."""
    started = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=hours, minutes=5)
    allocation = place(tenant, gpus=1)
    allocation.refresh_from_db()
    if allocation.state == S.PLACED:
        run(allocation, started)
    else:
        allocation_transition(allocation=allocation, to=S.RUNNING, actor=SYSTEM, at=started)


@pytest.fixture
def priced(db: None) -> Sku:
    load_fleet()
    return price("2.50", since=timezone.now() - timedelta(days=90)).sku


def test_billing_close_windows_shows_the_cuts_made(acme, priced, settings):
    settings.LADDER_BILLING_GRACE_MINUTES = 0
    _hours_of_usage(acme, 3)
    err, out = Terminal(), StringIO()
    call_command("billing_close_windows", stdout=out, stderr=err)
    shown = final(err)
    assert (shown["label"], shown["unit"]) == ("closing windows", "cuts")
    assert shown["done"] == shown["total"]
    assert int(shown["total"]) >= 1
    assert out.getvalue().startswith("cut ")

    _hours_of_usage(acme, 2)  # reported late: cut again
    quiet, out = StringIO(), StringIO()
    call_command("billing_close_windows", stdout=out, stderr=quiet)
    assert quiet.getvalue() == ""
    assert not out.getvalue().startswith("cut 0 ")  # there was work, and it was done quietly


def test_billing_push_shows_the_rollups_pushed(stripe_server: StripeServer, acme, globex, priced, settings):
    settings.LADDER_BILLING_GRACE_MINUTES = 0
    stripe_sync.stripe_sync_catalog()
    for tenant in (acme, globex):
        stripe_sync.stripe_account_sync(tenant=tenant)
    _hours_of_usage(acme, 3)
    windows_close(now=timezone.now())
    due = UsageRollup.objects.filter(push_state=PushState.PENDING).count()
    assert due >= 3
    quiet, out = StringIO(), StringIO()
    call_command("billing_push", stdout=out, stderr=quiet)  # cron: the summary only
    assert quiet.getvalue() == ""
    assert out.getvalue().startswith(f"sent {due},")

    _hours_of_usage(globex, 2)  # reported late: its closed windows get late adjustments
    windows_close(now=timezone.now())
    due = UsageRollup.objects.filter(push_state=PushState.PENDING).count()
    assert due >= 2
    err, out = Terminal(), StringIO()
    call_command("billing_push", stdout=out, stderr=err)
    assert final(err) == {"label": "pushing rollups", "done": str(due), "total": str(due), "unit": "rollups"}
    assert out.getvalue().startswith(f"sent {due},")
