"""Account closure as a resumable workflow, in real Celery worker processes on Redis: a step fails (the blob store
is unwritable), the worker is killed between steps, and a new worker finishes the closure with nothing lost or done
twice."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid

import pytest
from django.utils import timezone

from compliance.domain.retention import Category
from compliance.models import ClosureStep, DataAsset
from core.models import AuditEvent
from lifecycle.services.closure import STALLED_AFTER, closures_resume, tenant_close
from provisioning.domain.states import AllocationState as S
from provisioning.models import Allocation
from tenancy.models import TenantState
from tests.support import SYSTEM, redis_reachable, require
from tests.support.billing import load_fleet, place
from tests.support.data import asset
from tests.support.worker import forget_queue, tasks_through, wait_for, worker_start


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_failed_step_and_a_killed_worker_still_close_the_account_once(acme, tmp_path, settings):
    require(redis_reachable(settings.CELERY_BROKER_URL), f"Redis at {settings.CELERY_BROKER_URL}")
    load_fleet()
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    running = place(acme, gpus=1)  # provisioned inline on commit: running
    running.refresh_from_db()
    assert running.state == S.RUNNING
    asset(acme, name="corpus", category="dataset", content=b"the corpus")

    queue = f"ladder-test-closure-{uuid.uuid4().hex[:12]}"  # ours alone: no other suite's worker takes the task
    log = tmp_path / "worker.log"
    workers: list[subprocess.Popen[bytes]] = []
    with tasks_through(queue):
        try:
            # A worker whose blob store refuses every write: the stop step passes, the invoice step fails.
            broken = (tmp_path / "unwritable").as_uri() + "/{region}"
            (tmp_path / "unwritable").write_text("a file, not a directory")
            workers.append(worker_start(queue, log, LADDER_STORAGE_URL=broken))
            closure = tenant_close(tenant=acme, actor=SYSTEM)
            assert closure.step == ClosureStep.STOPPING  # recorded before any step ran

            def failed_invoicing() -> bool:
                closure.refresh_from_db()
                return closure.step == ClosureStep.INVOICING and bool(closure.last_error)

            wait_for(failed_invoicing, 60, "the invoice step to fail", log)
            assert Allocation.objects.get(pk=running.pk).state in (S.STOPPING, S.STOPPED)
            assert closure.allocations_stopped == 1
            assert not DataAsset.objects.filter(tenant=acme, category=Category.INVOICE).exists()

            # The worker dies between steps, its retry still waiting in it (unacknowledged).
            os.kill(workers[0].pid, signal.SIGKILL)
            workers[0].wait(timeout=10)

            # A new worker with a working store; the beat task finds the closure that stopped moving.
            workers.append(worker_start(queue, log, LADDER_STORAGE_URL=settings.LADDER_STORAGE_URL))
            assert closures_resume(now=timezone.now()) == []  # not stalled yet: it moved moments ago
            assert closures_resume(now=timezone.now() + STALLED_AFTER) == [closure.pk]

            def waiting() -> bool:
                closure.refresh_from_db()
                return closure.step == ClosureStep.WAITING

            wait_for(waiting, 60, "the closure to reach its waiting period", log)
            # Asked again (a duplicate message, a second resume), nothing more happens.
            assert closures_resume(now=timezone.now() + STALLED_AFTER) == []
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
                worker.wait(timeout=10)
            forget_queue(queue)

    closure.refresh_from_db()
    acme.refresh_from_db()
    assert acme.state == TenantState.CLOSING
    assert closure.last_error == ""
    assert closure.attempts >= 5  # stop, a failed invoice, the invoice again, export, schedule
    invoices = DataAsset.objects.filter(tenant=acme, category=Category.INVOICE)
    exports = DataAsset.objects.filter(tenant=acme, category=Category.EXPORT)
    assert [a.pk for a in invoices] == [closure.final_invoice_id]  # written once
    assert [a.pk for a in exports] == [closure.export_id]
    assert closure.report["allocations_stopped"] == 1
    assert closure.report["shredding_scheduled"] == 1  # the corpus
    assert closure.closes_at is not None
    assert AuditEvent.objects.filter(action="tenant.closing").count() == 1
    assert AuditEvent.objects.filter(action="tenant.closure_requested").count() == 1
    assert AuditEvent.objects.filter(action="allocation.stopping", target_id=str(running.pk)).count() == 1
