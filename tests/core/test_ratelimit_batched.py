"""The gateway's batched count: most calls cost no round trip, a process alone never passes the limit, and calls
of other processes are seen once their batch is added."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from core import ratelimit
from core.ratelimit import BATCH_CALLS, window_take_batched

NOW = 6_000_000.0  # the start of a minute


def shared(key: str) -> int | None:
    return cache.get(f"{key}:{int(NOW // 60)}")


def test_calls_far_from_the_limit_are_added_in_batches(db: None) -> None:
    for _ in range(BATCH_CALLS - 1):
        assert window_take_batched("k", limit=10_000, seconds=60, now=NOW).allowed
    assert shared("k") is None  # no round trip yet
    verdict = window_take_batched("k", limit=10_000, seconds=60, now=NOW)
    assert (verdict.count, shared("k")) == (BATCH_CALLS, BATCH_CALLS)
    window_take_batched("k", limit=10_000, seconds=60, now=NOW + 2 * ratelimit.BATCH_SECONDS)  # or after a while
    assert shared("k") == BATCH_CALLS + 1


def test_near_the_limit_every_call_counts_and_none_passes_it(db: None) -> None:
    limit = BATCH_CALLS + 8
    verdicts = [window_take_batched("k", limit=limit, seconds=60, now=NOW) for _ in range(limit + 5)]
    assert [v.allowed for v in verdicts] == [True] * limit + [False] * 5
    assert shared("k") == limit + 5
    assert verdicts[-1].retry_after == pytest.approx(60)


def test_another_process_s_calls_are_seen_once_added(db: None) -> None:
    cache.set(f"k:{int(NOW // 60)}", 50, timeout=61)  # what the other processes added this minute
    verdicts = [window_take_batched("k", limit=BATCH_CALLS + 50, seconds=60, now=NOW) for _ in range(BATCH_CALLS)]
    assert all(v.allowed for v in verdicts)  # their count reached this process with its first batch
    assert not window_take_batched("k", limit=BATCH_CALLS + 50, seconds=60, now=NOW).allowed


def test_a_new_window_starts_again(db: None) -> None:
    for _ in range(3):
        window_take_batched("k", limit=3, seconds=60, now=NOW)
    assert not window_take_batched("k", limit=3, seconds=60, now=NOW + 1).allowed
    assert window_take_batched("k", limit=3, seconds=60, now=NOW + 60).allowed
