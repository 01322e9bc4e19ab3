"""``billing.tasks.billing_push`` in a real Celery worker process on Redis, SIGKILLed in the middle of a push: a new
worker finishes the job after the dead one's lease, and Stripe holds every rollup's meter event exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from billing.models import BillingAccount, PushState, UsageRollup
from billing.services import stripe_sync
from billing.services.ledger import windows_close
from billing.tasks import billing_push
from config.celery import app
from provisioning.domain.states import AllocationState as S
from provisioning.services.transitions import allocation_transition
from tests.fakes.stripe import StripeServer
from tests.support import SYSTEM, redis_reachable, require
from tests.support.billing import load_fleet, place, price, stop
from tests.support.worker import forget_queue, wait_for, worker_start

ROLLUPS = 200
RATE = 40  # meter events a second: the whole batch takes the worker about 5 s
LEASE = 8  # seconds a worker's claim lasts: longer than its batch takes, short enough to wait out


def start_worker(server: StripeServer, queue: str, log: Path) -> subprocess.Popen[bytes]:
    return worker_start(
        queue,
        log,
        STRIPE_API_KEY=settings.STRIPE_API_KEY,
        STRIPE_API_BASE=server.url,
        STRIPE_WEBHOOK_SECRET=settings.STRIPE_WEBHOOK_SECRET,
        STRIPE_METER_EVENTS_PER_SECOND=str(RATE),
        LADDER_BILLING_PUSH_LEASE_SECONDS=str(LEASE),
    )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_push_loses_nothing_and_bills_nothing_twice(stripe_server, acme, tmp_path):
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
