"""The suite's wall clock, movable: ``pytest --clock=2027-02-28T23:59:00Z`` (or ``LADDER_TEST_CLOCK=...``) runs every
test with the wall clock starting at that instant and ticking (time-machine), so ``timezone.now()``,
``datetime.now()`` and ``time.time()`` all read the moved clock; ``time.monotonic()`` and ``time.sleep()`` stay real.

No test may depend on today's date: a test that needs a particular time passes it to the code under test (``now=``,
``at=``), or moves the clock itself. Running the suite with the clock moved to another month is how ``make test``
checks that.

The patch is process-wide, so threads started by a test (the fake Stripe and Kubernetes servers, an in-process
Celery worker) read the moved clock too. A subprocess does not: a test whose subprocess must agree with it about
the time runs it through :func:`python_module`, which hands the child the test's clock.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Generator
from datetime import UTC, datetime

import pytest
import time_machine
from time_machine import TimeMachineFixture

ENV = "LADDER_TEST_CLOCK"
_INSTANT = pytest.StashKey[datetime | None]()

# The child's side of python_module: move the clock by the parent's offset before anything else runs.
_CHILD = """\
import runpy, sys, time, time_machine
offset_ns, module = int(sys.argv[1]), sys.argv[2]
if offset_ns:
    time_machine.travel((time.time_ns() + offset_ns) / 1e9, tick=True).start()
    time.time_ns()  # the child's clock starts ticking now, not at its first read
sys.argv = [module, *sys.argv[3:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def parse(value: str) -> datetime:
    """An ISO-8601 instant with a time zone (``Z`` or an offset), e.g. ``2027-02-28T23:59:00Z``."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise pytest.UsageError(f"--clock {value!r} is not an ISO-8601 instant (e.g. 2027-02-28T23:59:00Z)") from None
    if moment.tzinfo is None:
        raise pytest.UsageError(f"--clock {value!r} needs a time zone (e.g. 2027-02-28T23:59:00Z)")
    return moment.astimezone(UTC)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--clock",
        default=os.environ.get(ENV) or None,
        metavar="INSTANT",
        help=f"run every test with the wall clock moved to this ISO-8601 instant, ticking (default: ${ENV})",
    )


def pytest_configure(config: pytest.Config) -> None:
    value = config.getoption("clock")
    config.stash[_INSTANT] = parse(value) if value else None


def pytest_report_header(config: pytest.Config) -> str | None:
    instant = config.stash.get(_INSTANT, None)
    return f"clock: every test starts at {instant.isoformat()} (ticking)" if instant else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """Setup, call and teardown of each test run from the same instant, so a test fails alone as in the suite."""
    instant = item.config.stash.get(_INSTANT, None)
    if instant is None:
        return (yield)
    with time_machine.travel(instant, tick=True):
        return (yield)


@pytest.fixture
def mid_month(time_machine: TimeMachineFixture) -> datetime:
    """Moves the clock (ticking) to 12:20 on the 15th of the month it is in, and returns that time: for a test that
    makes usage in the hours before now and asks about this month, which in a month's first hours has none. Ask for
    it before the fixtures that read the clock."""
    moment = datetime.now(UTC).replace(day=15, hour=12, minute=20, second=0, microsecond=0)
    time_machine.move_to(moment)
    return moment


def offset_ns() -> int:
    """How far the clock this process reads is from the real one, in nanoseconds (0 when nothing moved it)."""
    if not time_machine.escape_hatch.is_travelling():
        return 0
    return time.time_ns() - time_machine.escape_hatch.time.time_ns()


def python_module(module: str, *args: str) -> list[str]:
    """The command line of ``python -m module args...`` whose clock agrees with this process's, moved or not."""
    return [sys.executable, "-c", _CHILD, str(offset_ns()), module, *args]
