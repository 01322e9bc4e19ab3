"""A real Celery worker consuming from the Redis broker runs the tasks the API queues on commit."""

import time

import pytest
from celery.contrib.testing.worker import start_worker
from django.conf import settings

from config.celery import app
from tenancy.models import ApiKey
from tests.support import redis_reachable, require


@pytest.fixture
def worker(transactional_db):
    require(redis_reachable(settings.CELERY_BROKER_URL), f"Redis at {settings.CELERY_BROKER_URL}")
    inline = app.conf.task_always_eager
    app.conf.task_always_eager = False  # the suite runs tasks inline; here they go through the broker
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            yield app
    finally:
        app.conf.task_always_eager = inline


def _wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.django_db(transaction=True)
def test_it_records_api_key_use_through_the_broker(worker, api, alice):
    client = api(alice)
    key = ApiKey.objects.get(user=alice, name="test")
    assert key.last_used_at is None
    assert client.get("/api/v1/tenant").status_code == 200
    assert _wait_for(lambda: ApiKey.objects.get(pk=key.pk).last_used_at is not None)
