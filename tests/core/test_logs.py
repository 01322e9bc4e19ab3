"""Structured logs: secrets redacted, stdlib and structlog lines rendered alike with the request's or task's context,
through the test client, an eager task and a real worker reading the Redis broker; LOG_FORMAT's default."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog
from celery.contrib.testing.worker import start_worker
from django.conf import settings
from structlog.contextvars import bound_contextvars, get_contextvars

from config.celery import app
from core.logs import REDACTED, formatter, logging_config, request_id_accept, scrub
from tests.support import ROOT, redis_reachable, require
from tests.support.billing import load_fleet, place

LOG = logging.getLogger("tests.logs")


@app.task(name="tests.logs.echo")
def echo(allocation_id: int, note: str = "") -> None:
    """A task that only logs (stdlib), so its line shows what context a task gets."""
    LOG.warning("echo %s", note)


@pytest.fixture
def lines() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """``lines()``: every line the product's JSON formatter has written since the test began, parsed."""
    stream = io.StringIO()
    config = formatter("json")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(config.pop("()")(**config))
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def test_secrets_are_redacted_by_key_and_by_shape() -> None:
    event = {
        "password": "hunter2",
        "Authorization": "Bearer abcdefghijkl",
        "api_key": "k",
        "nested": {"client_secret": "s", "STRIPE_WEBHOOK_SECRET": "whsec_x", "fine": "kept"},
        "items": [{"token": "t"}, "ok"],
        "key_material": b"raw",
        "event": "calling with ldr_0123abcd_" + "Z" * 40 + " and sk_live_abcdef123456 then Bearer xyz.abc-123",
        "tenant_id": 7,
        "empty_password": "",
    }
    clean = scrub(event)
    assert clean["password"] == REDACTED
    assert clean["Authorization"] == REDACTED
    assert clean["api_key"] == REDACTED
    assert clean["nested"] == {"client_secret": REDACTED, "STRIPE_WEBHOOK_SECRET": REDACTED, "fine": "kept"}
    assert clean["items"] == [{"token": REDACTED}, "ok"]
    assert clean["key_material"] == REDACTED
    assert clean["tenant_id"] == 7
    assert clean["empty_password"] == ""  # nothing to hide: the line still says it was empty
    assert "Z" * 10 not in clean["event"]
    assert "ldr_0123abcd_" + REDACTED in clean["event"]  # the prefix names the key, as audit events do
    assert "sk_live_" + REDACTED in clean["event"]
    assert "abcdef123456" not in clean["event"]
    assert "Bearer " + REDACTED in clean["event"]


def test_request_ids_are_accepted_only_when_sane() -> None:
    assert request_id_accept("abc-123_x.y:z") == "abc-123_x.y:z"
    assert request_id_accept("a" * 128) == "a" * 128
    assert request_id_accept("a" * 129) is None
    assert request_id_accept("") is None
    assert request_id_accept("has space") is None
    assert request_id_accept("new\nline") is None
    assert request_id_accept(None) is None


def test_stdlib_and_structlog_lines_come_out_as_one_json_shape(lines: Callable[[], list[dict[str, Any]]]) -> None:
    with bound_contextvars(request_id="r-1", tenant_id=3):
        LOG.warning("stdlib says %s", "hello", extra={"password": "p4ss"})
        structlog.get_logger("tests.logs").warning("structlog says", token="t0k", count=2)
        try:
            raise ValueError("boom")
        except ValueError:
            LOG.exception("failed")
    written = lines()
    stdlib, native, failure = written[-3:]
    assert stdlib["event"] == "stdlib says hello"
    assert stdlib["level"] == "warning"
    assert stdlib["logger"] == "tests.logs"
    assert stdlib["password"] == REDACTED
    assert native["event"] == "structlog says"
    assert native["token"] == REDACTED
    assert native["count"] == 2
    for line in (stdlib, native, failure):
        assert line["request_id"] == "r-1"
        assert line["tenant_id"] == 3
        assert re.match(r"\d{4}-\d\d-\d\dT", line["ts"])
    assert "ValueError: boom" in failure["exception"]


def test_console_format_is_one_readable_line() -> None:
    stream = io.StringIO()
    config = formatter("console")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(config.pop("()")(**config))
    logger = logging.getLogger("tests.logs.console")
    logger.addHandler(handler)
    logger.propagate = False
    # Whatever logging state earlier tests left (a level, a disabled logger, logging.disable), this logger speaks.
    level, disabled, switched_off = logger.level, logger.disabled, logging.root.manager.disable
    logger.setLevel(logging.DEBUG)
    logger.disabled = False
    logging.disable(logging.NOTSET)
    try:
        with bound_contextvars(request_id="r-2"):
            logger.warning("hello %s", "console", extra={"secret": "s3cr3t"})
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(level)
        logger.disabled = disabled
        logging.disable(switched_off)
    text = stream.getvalue()
    assert "hello console" in text
    assert "request_id=r-2" in text
    assert "s3cr3t" not in text
    with pytest.raises(ValueError, match="LOG_FORMAT"):
        logging_config(log_format="xml", level="INFO")


def test_a_request_line_carries_the_request_tenant_actor_and_allocation(
    lines: Callable[[], list[dict[str, Any]]], api: Any, alice: Any, acme: Any
) -> None:
    load_fleet()
    allocation = place(acme, gpus=1)
    client = api(alice)
    response = client.get(f"/api/v1/allocations/{allocation.pk}", HTTP_X_REQUEST_ID="trace-77")
    assert response.status_code == 200
    assert response["X-Request-ID"] == "trace-77"
    finished = [line for line in lines() if line["event"] == "request finished"][-1]
    assert finished["request_id"] == "trace-77"
    assert finished["route"] == "allocation-detail"
    assert finished["status"] == 200
    assert finished["tenant_id"] == acme.pk
    assert finished["allocation_id"] == allocation.pk
    assert re.fullmatch(rf"api_key:{alice.pk}/[0-9a-f]+", finished["actor"])
    assert get_contextvars() == {}  # nothing of the request stays on the thread


def test_an_eager_task_logs_with_its_id_and_the_request_id_then_hands_the_context_back(
    lines: Callable[[], list[dict[str, Any]]],
) -> None:
    with bound_contextvars(request_id="req-eager"):
        echo.delay(41, note="eager")
        assert get_contextvars() == {"request_id": "req-eager"}
    line = next(line for line in lines() if line["event"] == "echo eager")
    assert line["request_id"] == "req-eager"
    assert line["task"] == "tests.logs.echo"
    assert line["allocation_id"] == 41
    assert re.fullmatch(r"[0-9a-f-]{36}", line["task_id"])


@pytest.fixture
def worker(transactional_db: None) -> Iterator[Any]:
    """A real Celery worker (solo pool, in this process) consuming from the Redis broker."""
    require(redis_reachable(settings.CELERY_BROKER_URL), f"Redis at {settings.CELERY_BROKER_URL}")
    inline = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            yield app
    finally:
        app.conf.task_always_eager = inline


def test_a_task_through_the_broker_carries_the_request_id_that_queued_it(
    worker: Any, lines: Callable[[], list[dict[str, Any]]]
) -> None:
    with bound_contextvars(request_id="req-through-redis"):
        echo.delay(42, note="brokered")
    deadline = time.monotonic() + 15
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not found:
        found = [line for line in lines() if line["event"] == "echo brokered"]
        time.sleep(0.05)
    assert found, "the worker did not run the task"
    assert found[0]["request_id"] == "req-through-redis"
    assert found[0]["allocation_id"] == 42
    assert found[0]["task"] == "tests.logs.echo"


def _log_format(env: dict[str, str]) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "LOG_FORMAT"}}
    clean.update(env, DJANGO_SETTINGS_MODULE="config.settings", SECRET_KEY="x")
    code = "import django; django.setup(); from django.conf import settings as s; print(s.LOG_FORMAT)"
    result = subprocess.run([sys.executable, "-c", code], env=clean, cwd=ROOT, capture_output=True, text=True)
    return result.stdout.strip() or result.stderr


def test_log_format_is_json_in_production_and_console_in_debug() -> None:
    assert _log_format({}) == "json"
    assert _log_format({"DEBUG": "1"}) == "console"
    assert _log_format({"LOG_FORMAT": "console"}) == "console"
    assert "LOG_FORMAT must be json or console" in _log_format({"LOG_FORMAT": "xml"})
