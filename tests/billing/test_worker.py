"""``billing.tasks.billing_push`` in a real Celery worker process on Redis, SIGKILLed in the middle of a push: a new
worker finishes the job after the dead one's lease, and Stripe holds every rollup's meter event exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.db.models import Sum
from django.utils import timezone

from billing import stripe_sync
from billing.ledger import windows_close
from billing.models import BillingAccount, PushState, UsageRollup
from billing.tasks import billing_push
from config.celery import app
from provisioning.allocations import allocation_transition
from provisioning.lifecycle import AllocationState as S
from tests.fakes.stripe import StripeServer
from tests.support import SYSTEM, clock, redis_reachable, require, require_postgres
from tests.support.billing import load_fleet, place, price, stop

ROLLUPS = 200
RATE = 40  # meter events a second: the whole batch takes the worker about 5 s
LEASE = 8  # seconds a worker's claim lasts: longer than its batch takes, short enough to wait out


def database_url() -> str:
    """The test database (``test_<name>`` under pytest-django) as a URL for the worker process."""
    db = connection.settings_dict
    user = quote(db["USER"] or "")
    if db["PASSWORD"]:
        user += ":" + quote(db["PASSWORD"])
    return f"postgres://{user}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def start_worker(server: StripeServer, queue: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "LADDER_TASKS_INLINE": "0",
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "STRIPE_API_KEY": settings.STRIPE_API_KEY,
        "STRIPE_API_BASE": server.url,
        "STRIPE_WEBHOOK_SECRET": settings.STRIPE_WEBHOOK_SECRET,
        "STRIPE_METER_EVENTS_PER_SECOND": str(RATE),
        "LADDER_BILLING_PUSH_LEASE_SECONDS": str(LEASE),
    }
    # The worker leases rows, stamps meter events and judges them stale by its clock: the test's, moved or not.
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
        return subprocess.Popen(command, cwd=settings.BASE_DIR, env=env, stdout=out, stderr=subprocess.STDOUT)


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


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_push_loses_nothing_and_bills_nothing_twice(stripe_server, acme, tmp_path):
    require_postgres()
    require(redis_reachable(settings.CELERY_BROKER_URL), f"Redis at {settings.CELERY_BROKER_URL}")
    load_fleet()
    sku_price = price("2.50", since=timezone.now() - timedelta(days=90))
    stripe_sync.stripe_sync_catalog()
    stripe_sync.stripe_account_sync(tenant=acme)
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    start = hour - timedelta(hours=ROLLUPS + 1, minutes=-20)  # windows H-201 .. H-2, one rollup each
    allocation = place(acme, gpus=3)
    allocation.refresh_from_db()  # the simulated provisioner ran on commit: it is provisioning
    allocation_transition(allocation=allocation, to=S.RUNNING, actor=SYSTEM, at=start)
    stop(allocation, start + timedelta(hours=ROLLUPS - 1, minutes=30, milliseconds=333))
    windows_close(now=timezone.now())
    assert UsageRollup.objects.filter(push_state=PushState.PENDING).count() == ROLLUPS

    queue = f"ladder-test-billing-{uuid.uuid4().hex[:12]}"  # ours alone: no other suite's worker takes the task
    log = tmp_path / "worker.log"
    workers: list[subprocess.Popen[bytes]] = []
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False  # the suite runs tasks inline; here they go through the broker
    try:
        workers.append(start_worker(stripe_server, queue, log))
        billing_push.apply_async(queue=queue)
        # Batches are RATE * LEASE / 4 = 80 rows: kill the worker in the middle of its second one.
        wait_for(lambda: len(stripe_server.events()) >= 120, 60, "the first worker to send some events", log)
        os.kill(workers[0].pid, signal.SIGKILL)
        workers[0].wait(timeout=10)
        time.sleep(0.2)  # a request in flight when the worker died has been answered (or dropped) by now
        sent_before = len(stripe_server.events())
        assert 0 < sent_before < ROLLUPS
        # The first batch was recorded; the second died in flight: its rows are leased, some already in Stripe.
        assert UsageRollup.objects.filter(push_state=PushState.SENT).count() == 80
        assert UsageRollup.objects.filter(push_state=PushState.SENDING).count() == 80
        assert sent_before > 80

        # Another pusher may take the rows only when the dead worker's lease has run out.
        lease_end = max(t for t in UsageRollup.objects.values_list("lease_until", flat=True) if t is not None)
        time.sleep(max(0.0, (lease_end - timezone.now()).total_seconds()) + 0.1)
        workers.append(start_worker(stripe_server, queue, log))
        billing_push.apply_async(queue=queue)
        wait_for(
            lambda: not UsageRollup.objects.exclude(push_state=PushState.SENT).exists(),
            90,
            "every rollup to be sent",
            log,
        )
    finally:
        app.conf.task_always_eager = eager
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait(timeout=10)
        forget_queue(queue)

    events = stripe_server.events()
    identifiers = [e["identifier"] for e in events]
    assert len(identifiers) == len(set(identifiers)) == ROLLUPS  # every identifier exactly once
    assert set(identifiers) == {r.identifier for r in UsageRollup.objects.all()}
    ledger = UsageRollup.objects.aggregate(q=Sum("quantity_milli"), v=Sum("meter_value"))
    customer = BillingAccount.objects.get(tenant=acme).stripe_customer_id
    assert stripe_server.meter_total(event_name=sku_price.event_name, customer=customer) == ledger["v"]
    assert ledger["v"] == ledger["q"] // 1000 == 3 * ((ROLLUPS - 1) * 3600 + 30 * 60)
