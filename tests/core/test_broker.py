"""The Redis transport tasks are published through (``core.broker``): kombu's, keeping one client per pool."""

from typing import Any

import pytest
from celery import Celery
from django.conf import settings
from kombu import Connection

from config.celery import app, broker_configure
from core.broker import Transport
from tests.support import redis_reachable, require

QUEUE = "ladder-broker-test"


@pytest.fixture
def connection() -> Any:
    require(redis_reachable(settings.CELERY_BROKER_URL), f"Redis at {settings.CELERY_BROKER_URL}")
    with Connection(settings.CELERY_BROKER_URL, transport=Transport) as conn:
        yield conn


@pytest.mark.parametrize(
    ("url", "transport"),
    [
        ("redis://redis.example:6379/0", "core.broker:Transport"),
        ("rediss://redis.example:6380/0", None),  # kombu's own, whose TLS defaults come with the scheme's name
        ("amqp://guest@rabbit.example//", None),
    ],
)
def test_a_redis_broker_is_published_to_through_it(url: str, transport: str | None, settings: Any) -> None:
    settings.CELERY_BROKER_URL = url
    other = Celery("broker-test")
    broker_configure(other)
    assert other.conf.broker_transport == transport


def test_the_apps_celery_is_configured_so() -> None:
    redis = settings.CELERY_BROKER_URL.startswith("redis://")
    assert app.conf.broker_transport == ("core.broker:Transport" if redis else None)


def test_a_channel_sends_every_command_through_one_client_per_pool(connection: Any) -> None:
    channel = connection.default_channel
    with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
        assert first is second
        assert first.connection_pool is channel.pool
    channel._after_fork()  # what kombu does in a forked child: the pools go, so does the client
    with channel.conn_or_acquire() as third:
        assert third is not first
        assert third.connection_pool is channel.pool
    with channel.conn_or_acquire(client=first) as given:  # a caller's own client is used as given
        assert given is first


def test_messages_go_and_come_back(connection: Any) -> None:
    queue = connection.SimpleQueue(QUEUE)
    try:
        for n in range(3):
            queue.put({"n": n})
        received = [queue.get(timeout=2) for _ in range(3)]
        for message in received:
            message.ack()
        assert [message.payload["n"] for message in received] == [0, 1, 2]
    finally:
        queue.queue.delete()  # the messages and the binding both
        queue.close()
