"""How the product queues background work: after the surrounding transaction commits, never inside it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from celery import Task, current_app
from django.db import transaction

log = logging.getLogger(__name__)

_held = threading.local()  # .tasks: the sends held back by the innermost running tasks_held(), or None


def enqueue(task: Task[Any, Any] | str, *args: Any, best_effort: bool = False) -> None:
    """Queue ``task`` with ``args`` once the current transaction commits (at once outside one); inside
    ``tasks_held()``, once that block is left.

    ``task`` is the task, or its registered name (``"app.tasks.name"``) when the caller sits below the module that
    defines it (a service whose task calls that service back): Celery addresses tasks by name anyway.

    ``best_effort`` is for bookkeeping that must never fail the request that caused it: if the broker is
    unreachable, the task is dropped with a warning instead of raising.
    """

    def send() -> None:
        target = current_app.tasks[task] if isinstance(task, str) else task
        if not best_effort:
            target.delay(*args)
            return
        try:
            target.delay(*args)
        except Exception:  # the broker's failure must not become the caller's
            log.warning("could not queue %s%r; skipped", target.name, args, exc_info=True)

    def committed() -> None:
        held: list[Callable[[], None]] | None = getattr(_held, "tasks", None)
        if held is None:
            send()
        else:
            held.append(send)

    transaction.on_commit(committed)


@contextmanager
def tasks_held() -> Iterator[None]:
    """Send the tasks whose transaction commits inside this block only when the block is left (the outermost
    one, if nested), in the order they were queued; tasks of a transaction that rolls back are never sent.

    For code that holds a lock across its own commit. With ``LADDER_TASKS_INLINE`` (``make run``) sending a task
    runs it, right there in this thread: a task queued on commit would otherwise run at the commit, still under
    the lock and before the code holding it has finished its bookkeeping (see ``placement_section``).
    """
    if getattr(_held, "tasks", None) is not None:
        yield  # an enclosing block sends them
        return
    held: list[Callable[[], None]] = []
    _held.tasks = held
    try:
        yield
    finally:
        _held.tasks = None
        for send in held:  # their transaction committed: they go even if the block failed afterwards
            send()
