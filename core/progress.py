"""Progress of a long command on a terminal: how many done, how fast, and when it will end.

A command that may run for minutes (loading a fleet, sweeping retention, pushing to Stripe, closing usage windows,
exporting or verifying the audit log) hands a ``Progress`` to its service, which calls ``advance`` as it works
(or wraps an iterator in ``track``). The rule:

- On a terminal (the stream's ``isatty()`` is true) one line is redrawn in place (``\\r``), at most once every
  ``every`` seconds (four times a second by default), however often ``advance`` is called:
  ``<label>: <done>[/<total> (<percent>)] <unit>, <rate>/s[, ETA <h:mm:ss>]``. The ETA is shown only when the
  total is known and something has been done. ``finish`` draws the last state and ends the line.
- Anywhere else (cron, CI, a pipe, a file) nothing at all is written: the command's usual final summary is its only
  output, as before.

Services take ``progress: Progress = QUIET`` so that callers other than the commands (tasks, the API, tests) pass
nothing and pay one attribute test per call. The clock is injected (``clock``, monotonic seconds), so a test drives
it by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

from django.core.management.base import OutputWrapper

T = TypeVar("T")
DEFAULT_EVERY = 0.25  # seconds between redraws: at most four a second


class Stream(Protocol):
    def write(self, text: str, /) -> Any: ...

    def isatty(self) -> bool: ...


def duration(seconds: float) -> str:
    """``h:mm:ss`` of a number of seconds, rounded up (an ETA of 0.2 s reads 0:00:01, not 0:00:00)."""
    whole = max(0, int(-(-seconds // 1)))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def line(label: str, done: int, total: int | None, elapsed: float, unit: str) -> str:
    """The progress line for ``done`` of ``total`` (None: unknown) after ``elapsed`` seconds."""
    rate = done / elapsed if elapsed > 0 else 0.0
    text = f"{label}: {done:,}"
    if total is not None:
        percent = 100.0 * done / total if total else 100.0
        text += f"/{total:,} ({percent:.0f}%)"
    text += f" {unit}, {rate:,.1f}/s"
    if total is not None and done > 0 and rate > 0:
        text += f", ETA {duration(max(0, total - done) / rate)}"
    return text


class Progress:
    """Counts work and, on a terminal, redraws one line with the count, the rate and the ETA."""

    def __init__(
        self,
        stream: Stream | None,
        label: str = "",
        *,
        total: int | None = None,
        unit: str = "items",
        clock: Callable[[], float] = time.monotonic,
        every: float = DEFAULT_EVERY,
    ) -> None:
        self.active = stream is not None and _isatty(stream)
        self._stream = stream
        self.label, self.total, self.unit, self.done = label, total, unit, 0
        self._clock, self._every = clock, every
        self._started = clock() if self.active else 0.0
        self._drawn_at: float | None = None
        self._width = 0  # length of the line on screen, blanked when a shorter one replaces it

    def start(self, label: str, *, total: int | None = None, unit: str | None = None) -> None:
        """A new stage (e.g. a second pass): the count and the clock start again; the previous line is ended."""
        if not self.active:
            return
        if self._drawn_at is not None:
            self._write("\n")
        self.label, self.total, self.done = label, total, 0
        self.unit = unit or self.unit
        self._started, self._drawn_at, self._width = self._clock(), None, 0

    def set_total(self, total: int | None) -> None:
        if self.active:
            self.total = total

    def advance(self, count: int = 1) -> None:
        if not self.active:
            return
        self.done += count
        now = self._clock()
        if self._drawn_at is None or now - self._drawn_at >= self._every:
            self._draw(now)

    def track(self, items: Iterable[T]) -> Iterator[T]:
        """``items``, advancing by one as each is handed on."""
        if not self.active:
            yield from items
            return
        for item in items:
            yield item
            self.advance()

    def finish(self) -> None:
        """Draw the final state and end the line (only if a line was begun)."""
        if not self.active:
            return
        if self._drawn_at is not None or self.done:
            self._draw(self._clock())
            self._write("\n")
        self._drawn_at = None

    def _draw(self, now: float) -> None:
        text = line(self.label, self.done, self.total, now - self._started, self.unit)
        self._write("\r" + text.ljust(self._width))
        self._width = len(text)
        self._drawn_at = now

    def _write(self, text: str) -> None:
        stream = self._stream
        if isinstance(stream, OutputWrapper):  # a command's self.stderr: no line ending of its own added
            stream.write(text, ending="")
        elif stream is not None:
            stream.write(text)
        flush = getattr(stream, "flush", None)
        if flush is not None:
            flush()


def _isatty(stream: Stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


QUIET = Progress(None)  # what services use when no one watches: every call returns at once
