"""Calls run in forked worker processes, their results taken in order: ``in_order(calls, workers)``.

For CPU-bound work split into independent parts (a large finance export's tenant x SKUs). ``os.fork`` itself, not
``multiprocessing``: a Celery prefork worker's process is daemonic, and ``multiprocessing`` refuses children to a
daemonic process; a plain fork has no such rule. Linux only (as the product is).

Each call runs in a child of its own, at most ``workers`` at once, started as slots free up in order; the child
sends its result (JSON) or its error (type and message) through a pipe and leaves with ``os._exit`` (nothing of
the parent's clean-up runs twice). Results come back in the order of the calls, each as soon as it and those
before it are done. A call that fails, or a child that dies without a word, raises ``ForkedCallFailed`` in the
parent after the other children are stopped (SIGKILL) and reaped.

The caller prepares the fork: database connections closed (each child opens its own), and ideally ``gc.freeze()``
so that a child's collections do not walk, and copy, the pages it shares with the parent.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections import deque
from collections.abc import Callable, Generator, Sequence
from typing import Any


class ForkedCallFailed(RuntimeError):
    """A call raised in its child (its type and message), or the child died before answering."""


def _start(call: Callable[[], Any]) -> tuple[int, int]:
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return pid, read
    # The child: run the call, answer, leave without running anything of the parent's.
    code = 1
    try:
        os.close(read)
        try:
            data = json.dumps({"result": call()}).encode()
            code = 0
        except BaseException as error:  # everything goes back to the parent, which decides
            data = json.dumps({"error": f"{type(error).__name__}: {error}"}).encode()
        while data:
            data = data[os.write(write, data) :]
    finally:
        os._exit(code)


def _finish(pid: int, read: int) -> Any:
    chunks = []
    with os.fdopen(read, "rb") as pipe:
        while chunk := pipe.read(65536):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        raise ForkedCallFailed(f"worker {pid} ended without an answer ({_ended(status)})")
    answer = json.loads(b"".join(chunks))
    if "error" in answer:
        raise ForkedCallFailed(answer["error"])
    return answer["result"]


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def in_order(calls: Sequence[Callable[[], Any]], workers: int) -> Generator[Any, None, None]:
    """Run each call in a forked child, at most ``workers`` at once; yield their results (JSON values) in order."""
    if workers < 1:
        raise ValueError("workers must be at least 1")
    running: deque[tuple[int, int]] = deque()
    started = 0
    try:
        for _ in calls:
            while started < len(calls) and len(running) < workers:
                running.append(_start(calls[started]))
                started += 1
            pid, read = running.popleft()
            yield _finish(pid, read)
    finally:
        for pid, read in running:  # stopped early (an error, or the caller stopped reading): stop the rest
            os.close(read)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
