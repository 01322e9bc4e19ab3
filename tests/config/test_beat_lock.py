"""One beat at a time: with ``LADDER_BEAT_SCHEDULER=redbeat`` the schedule lives in Redis behind celery-redbeat's
lock, so a second beat replica waits until the first lets go (on stopping) or its lock lapses (killed). Off by
default: the embedded default and the other tests keep Celery's own scheduler.

Against a real Redis (db 11 of the broker's server), with redbeat's own lock functions and with real ``celery
beat`` processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlparse

import pytest
import redis
from celery import Celery
from django.conf import settings
from redbeat.schedulers import (  # type: ignore[import-untyped]
    RedBeatScheduler,
    acquire_distributed_beat_lock,
    get_redis,
)

from tests.config.test_settings import _settings
from tests.support import ROOT, redis_reachable, require

pytestmark = pytest.mark.redis


def _redis_url() -> str:
    """The broker's Redis server, database 11 (this part's own)."""
    broker = urlparse(settings.CELERY_BROKER_URL)
    return f"redis://{broker.hostname or '127.0.0.1'}:{broker.port or 6379}/11"


@pytest.fixture
def redis_db() -> Iterator[tuple[str, str]]:
    """The Redis URL and a key prefix of this test's own; its keys are removed afterwards."""
    url = _redis_url()
    require(redis_reachable(url), f"Redis at {url}")
    prefix = f"ladder-test-{uuid.uuid4().hex[:12]}:"
    yield url, prefix
    client: Any = redis.Redis.from_url(url)
    # Redbeat's keys start with the prefix; kombu's bindings of the test's queue carry it after their own.
    keys = list(client.scan_iter(match=f"*{prefix}*"))
    if keys:
        client.delete(*keys)


# --- the settings ---------------------------------------------------------------------------------------------


def test_beat_keeps_celerys_own_scheduler_unless_asked():
    result = _settings({"SECRET_KEY": "x"}, "__import__('config.celery').celery.app.conf.beat_scheduler")
    assert result.stdout.strip() == "celery.beat:PersistentScheduler", result.stderr


def test_redbeat_is_configured_from_the_settings():
    expr = "(lambda c: (c.beat_scheduler, c.redbeat_redis_url, c.redbeat_key_prefix, c.redbeat_lock_timeout, "
    expr += "c.beat_max_loop_interval))(__import__('config.celery').celery.app.conf)"
    result = _settings(
        {
            "SECRET_KEY": "x",
            "CELERY_BROKER_URL": "redis://broker.example:6379/0",
            "LADDER_BEAT_SCHEDULER": "redbeat",
            "LADDER_BEAT_KEY_PREFIX": "ladder-prod:",
            "LADDER_BEAT_LOCK_SECONDS": "30",
        },
        expr,
    )
    # The lock is renewed at every tick, and ticks come at least five times per lock period.
    expected = "('redbeat.RedBeatScheduler', 'redis://broker.example:6379/0', 'ladder-prod:', 30, 6)"
    assert result.stdout.strip() == expected, result.stderr


def test_an_unknown_scheduler_or_a_short_lock_is_refused():
    unknown = _settings({"SECRET_KEY": "x", "LADDER_BEAT_SCHEDULER": "django-celery-beat"}, "1")
    assert unknown.returncode != 0
    assert "LADDER_BEAT_SCHEDULER" in unknown.stderr
    short = _settings({"SECRET_KEY": "x", "LADDER_BEAT_SCHEDULER": "redbeat", "LADDER_BEAT_LOCK_SECONDS": "2"}, "1")
    assert short.returncode != 0
    assert "LADDER_BEAT_LOCK_SECONDS" in short.stderr


# --- redbeat's lock -------------------------------------------------------------------------------------------


def _beat(url: str, prefix: str, lock_seconds: int) -> Any:
    """What ``acquire_distributed_beat_lock`` is sent at a beat's start: a service with a RedBeat scheduler, in an
    app of its own (each beat is a process of its own)."""
    app = Celery(f"beat-{uuid.uuid4().hex[:6]}")
    app.conf.update(
        redbeat_redis_url=url, redbeat_key_prefix=prefix, redbeat_lock_timeout=lock_seconds, beat_max_loop_interval=1
    )
    return SimpleNamespace(scheduler=RedBeatScheduler(app=app, lazy=True))


class Waiting:
    """A beat starting in a thread of its own: it takes the lock when it can, holds it until told to stop, then
    closes (redis-py keeps a lock's token per thread, so it is used and released in that thread)."""

    def __init__(self, beat: Any) -> None:
        self.acquired = threading.Event()
        self.owned = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(beat,), daemon=True)
        self._thread.start()

    def _run(self, beat: Any) -> None:
        acquire_distributed_beat_lock(sender=beat)
        self.owned = beat.scheduler.lock.owned()
        self.acquired.set()
        self._stop.wait(30)
        beat.scheduler.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def test_a_second_beat_waits_while_the_first_holds_the_lock(redis_db):
    url, prefix = redis_db
    first, second = _beat(url, prefix, 60), _beat(url, prefix, 60)
    assert first.scheduler.lock_key == second.scheduler.lock_key == f"{prefix}:lock"

    acquire_distributed_beat_lock(sender=first)
    assert first.scheduler.lock.owned()
    waiting = Waiting(second)
    try:
        assert not waiting.acquired.wait(3), "the second beat took the lock while the first held it"
        first.scheduler.tick()  # a tick renews the lock; the second still waits
        assert not waiting.acquired.wait(1.5)
        first.scheduler.close()  # a beat that stops releases it
        assert waiting.acquired.wait(5), "the second beat did not take the lock once it was released"
        assert waiting.owned
    finally:
        waiting.stop()
    assert get_redis(first.scheduler.app).get(first.scheduler.lock_key) is None


def test_the_lock_of_a_beat_that_died_lapses(redis_db):
    url, prefix = redis_db
    dead, next_one = _beat(url, prefix, 3), _beat(url, prefix, 3)
    acquire_distributed_beat_lock(sender=dead)  # then never ticks nor closes, as if killed
    ttl = get_redis(dead.scheduler.app).pttl(dead.scheduler.lock_key)
    assert 0 < ttl <= 3000
    started = time.monotonic()
    waiting = Waiting(next_one)
    try:
        assert waiting.acquired.wait(8)
        assert waiting.owned
        assert time.monotonic() - started > 1.5, "the lock was taken before it lapsed"
    finally:
        waiting.stop()


# --- real beat processes --------------------------------------------------------------------------------------


def _start_beat(log: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel=INFO"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
        )


def _wait_for(log: Path, text: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return True
        time.sleep(0.2)
    return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_two_celery_beat_processes_take_turns(redis_db, tmp_path):
    url, prefix = redis_db
    queue = f"{prefix}queue"  # whatever the first beat sends goes to a queue of this test's own
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("LADDER_", "CELERY_", "DJANGO_"))},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
        "SECRET_KEY": "beat-lock-test",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "CELERY_BROKER_URL": url,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "LADDER_BEAT_SCHEDULER": "redbeat",
        "LADDER_BEAT_KEY_PREFIX": prefix,
        "LADDER_BEAT_LOCK_SECONDS": "10",
    }
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = _start_beat(first_log, env, tmp_path)
    second = None
    try:
        assert _wait_for(first_log, "beat: Acquired lock", 60), first_log.read_text()
        second = _start_beat(second_log, env, tmp_path)
        assert _wait_for(second_log, "beat: Starting", 60), second_log.read_text()
        time.sleep(4)  # twice the waiting beat's retry interval (LADDER_BEAT_LOCK_SECONDS / 5)
        assert "Acquired lock" not in second_log.read_text(), "two beats held the lock at once"
        assert second.poll() is None

        _stop(first)
        assert "beat: Releasing lock" in first_log.read_text()
        assert _wait_for(second_log, "beat: Acquired lock", 10), second_log.read_text()
        for log in (first_log, second_log):
            assert "falling back to broker_url" not in log.read_text()
        assert not list(tmp_path.glob("celerybeat-schedule*")), "beat wrote Celery's schedule file"
    finally:
        _stop(first)
        if second is not None:
            _stop(second)
