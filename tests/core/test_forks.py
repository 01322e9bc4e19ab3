"""core.forks.in_order: calls run in forked children, at most N at once, results in the calls' order; a failure in
a child reaches the parent with its message and stops the others; it works in a daemonic process (a Celery
prefork worker's), where multiprocessing refuses children."""

from __future__ import annotations

import os
import time
from pathlib import Path

import billiard
import pytest

from core import forks


def test_results_come_in_the_order_of_the_calls_from_other_processes() -> None:
    def call(n: int, pause: float):
        def run():
            time.sleep(pause)
            return [n, os.getpid()]

        return run

    # The first call is the slowest: the others finish first, the results still come in order.
    results = list(forks.in_order([call(0, 0.3), call(1, 0.0), call(2, 0.1), call(3, 0.0)], workers=2))
    assert [n for n, _ in results] == [0, 1, 2, 3]
    pids = {pid for _, pid in results}
    assert len(pids) == 4  # a child per call
    assert os.getpid() not in pids


def test_no_more_than_workers_run_at_once(tmp_path: Path) -> None:
    def call(n: int):
        def run():
            (tmp_path / f"{n}.start").write_text(str(time.monotonic()))
            time.sleep(0.2)
            (tmp_path / f"{n}.end").write_text(str(time.monotonic()))
            return n

        return run

    assert list(forks.in_order([call(n) for n in range(5)], workers=2)) == [0, 1, 2, 3, 4]
    spans = [
        (float((tmp_path / f"{n}.start").read_text()), float((tmp_path / f"{n}.end").read_text())) for n in range(5)
    ]
    for start, _ in spans:
        assert sum(1 for s, e in spans if s <= start < e) <= 2


def test_a_failing_call_raises_in_the_parent_with_its_message_and_stops_the_rest(tmp_path: Path) -> None:
    def fails():
        raise OSError(28, "No space left on device")

    def slow():
        time.sleep(30)
        (tmp_path / "finished").write_text("yes")
        return 1

    began = time.monotonic()
    with pytest.raises(forks.ForkedCallFailed, match=r"OSError: .*No space left on device"):
        list(forks.in_order([fails, slow, slow], workers=3))
    assert time.monotonic() - began < 10  # the slow ones were stopped, not waited for
    assert not (tmp_path / "finished").exists()


def test_a_child_that_dies_without_answering_is_a_failure() -> None:
    with pytest.raises(forks.ForkedCallFailed, match=r"without an answer .*exit code 3"):
        list(forks.in_order([lambda: os._exit(3)], workers=1))


def test_a_result_that_is_not_json_is_a_failure_naming_it() -> None:
    with pytest.raises(forks.ForkedCallFailed, match=r"TypeError: .*not JSON serializable"):
        list(forks.in_order([lambda: object()], workers=1))


def _in_daemonic_process(n: int) -> list[int]:
    return list(forks.in_order([lambda: n, lambda: n + 1], workers=2))


def test_it_forks_from_a_daemonic_process_as_celery_prefork_workers_are() -> None:
    pool = billiard.Pool(1)
    try:
        assert pool.apply(_in_daemonic_process, (40,)) == [40, 41]
    finally:
        pool.close()
        pool.join()


def test_workers_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        list(forks.in_order([lambda: 1], workers=0))
