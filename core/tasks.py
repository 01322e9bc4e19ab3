"""How the product queues background work: after the surrounding transaction commits, never inside it."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, current_app
from django.db import transaction

log = logging.getLogger(__name__)


def enqueue(task: Task[Any, Any] | str, *args: Any, best_effort: bool = False) -> None:
    """Queue ``task`` with ``args`` once the current transaction commits (at once outside one).

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

    transaction.on_commit(send)
