"""How the product queues background work: after the surrounding transaction commits, never inside it."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task
from django.db import transaction

log = logging.getLogger(__name__)


def enqueue(task: Task[Any, Any], *args: Any, best_effort: bool = False) -> None:
    """Queue ``task`` with ``args`` once the current transaction commits (at once outside one).

    ``best_effort`` is for bookkeeping that must never fail the request that caused it: if the broker is
    unreachable, the task is dropped with a warning instead of raising.
    """

    def send() -> None:
        if not best_effort:
            task.delay(*args)
            return
        try:
            task.delay(*args)
        except Exception:  # the broker's failure must not become the caller's
            log.warning("could not queue %s%r; skipped", task.name, args, exc_info=True)

    transaction.on_commit(send)
