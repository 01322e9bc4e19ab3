"""A real Celery worker process on Redis against the test database, for tests of what a killed worker leaves."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import redis
from django.conf import settings
from django.db import connection

from config.celery import app
from tests.support import clock


def database_url() -> str:
    """The test database (``test_<name>`` under pytest-django) as a URL for the worker process."""
    db = connection.settings_dict
    user = quote(db["USER"] or "")
    if db["PASSWORD"]:
        user += ":" + quote(db["PASSWORD"])
    return f"postgres://{user}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def worker_start(queue: str, log: Path, **env: str) -> subprocess.Popen[bytes]:
    """A solo worker reading only ``queue`` (its default queue too, so the tasks it queues stay on it)."""
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "LADDER_TASKS_INLINE": "0",
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        **env,
    }
    # The worker leases rows, stamps events and judges them stale by its clock: the test's, moved or not.
    command = clock.python_module(
        "celery",
        "-A",
        "config",
        "worker",
        "--pool",
        "solo",
        "-Q",
        queue,
        "--loglevel",
        "info",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    )
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=settings.BASE_DIR, env=environment, stdout=out, stderr=subprocess.STDOUT)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
    pytest.fail(f"timed out after {timeout} s waiting for {what}; worker log:\n{tail}")


def forget_queue(queue: str) -> None:
    """Leave nothing of our queue in Redis: the killed worker's message, unacknowledged (acks_late), would otherwise
    be restored an hour from now into a queue nobody reads, and kombu keeps the queue's bindings."""
    client: Any = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for tag, payload in client.hgetall("unacked").items():
        if queue.encode() in payload:
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)
    client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")


def _forget_routing() -> None:
    # Celery keeps the default queue and the router it built from the configuration on first use.
    for cached in ("default_queue", "queues", "router"):
        app.amqp.__dict__.pop(cached, None)


@contextmanager
def tasks_through(queue: str) -> Iterator[None]:
    """Inside, tasks this process queues go through the broker to ``queue`` (the suite runs them inline); the
    configuration and Celery's routing are as before afterwards."""
    eager, default_queue = app.conf.task_always_eager, app.conf.task_default_queue
    app.conf.task_always_eager, app.conf.task_default_queue = False, queue
    _forget_routing()
    try:
        yield
    finally:
        app.conf.task_always_eager, app.conf.task_default_queue = eager, default_queue
        _forget_routing()
