"""Idle stop end to end, against a real Prometheus: the simulated fleet's exporter is replayed over the last
fifteen minutes (what the node reported, minute by minute, stamped with its time), then the beat's check gives
notice to the idle notebook five minutes before its ``idle_stop_after`` and stops it at it, auditing the evidence;
the busy job beside it, which asked for the same, runs on."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from billing.models import Notification
from core.models import AuditEvent
from provisioning.domain.workloads import Checkpoint, Workload
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, AllocationDevice
from provisioning.services.placing import AllocationSpec, allocation_request
from tests.support import SYSTEM
from tests.support.billing import H100, load_fleet
from tests.support.consoles import signed_in
from tests.support.dcgm import Replay, replay_hosts
from tests.support.prometheus import Prometheus

pytestmark = pytest.mark.django_db(transaction=True)


def launch(tenant: Any, rung: str, workload: Workload) -> Allocation:
    spec = AllocationSpec(rung=rung, gpu_models=(H100,), gpus=1)
    return allocation_request(tenant=tenant, name=rung, spec=spec, actor=SYSTEM, workload=workload)


def test_an_idle_notebook_is_noticed_then_stopped_with_its_evidence_and_a_busy_job_runs_on(
    prometheus_clock: Prometheus, replays: list[Replay], acme: Any, alice: Any, settings: Any
) -> None:
    from lifecycle.services.idle_stop import allocations_idle_check

    settings.LADDER_SIM_PROVISION_SECONDS = 0
    load_fleet()
    notebook = launch(acme, "container", Workload(image="nvcr.io/nvidia/pytorch:25.01-py3", idle_stop_after=10))
    job = launch(
        acme,
        "job",
        Workload(
            image="nvcr.io/nvidia/pytorch:25.01-py3",
            command=("torchrun", "train.py"),
            checkpoint=Checkpoint(path="/checkpoints", interval_s=60),
            idle_stop_after=10,
        ),
    )
    allocations_reconcile()
    now = datetime.fromtimestamp(prometheus_clock.now(), tz=UTC).replace(microsecond=0)
    began = now - timedelta(minutes=15)
    # Both have run for fifteen minutes: the exporter's replay covers them from then, a sample a minute.
    Allocation.objects.filter(pk__in=[notebook.pk, job.pk]).update(running_since=began)
    AllocationDevice.objects.filter(allocation__in=[notebook.pk, job.pk]).update(held_since=began)
    instants = [began + timedelta(minutes=i) for i in range(16)]
    hosts = sorted(
        set(AllocationDevice.objects.filter(allocation__in=[notebook.pk, job.pk]).values_list("hostname", flat=True))
    )
    replay_hosts(prometheus_clock, replays, hosts, instants)

    # Six minutes idle, four left: notice, once; the job works.
    early = allocations_idle_check(now=began + timedelta(minutes=6))
    assert (early.noticed, early.stopped) == ([notebook.pk], [])
    assert allocations_idle_check(now=began + timedelta(minutes=6)).noticed == []  # given once
    notice = Notification.objects.get(tenant=acme, kind="idle_stop_notice")
    assert "stops in about" in notice.body
    assert notice.emailed_to == [alice.email]
    page = signed_in(alice).get(f"/portal/allocations/{notebook.pk}").content.decode()
    assert "it stops within minutes unless they work" in page

    # Ten minutes idle (fifteen by now): stopped, with the evidence.
    report = allocations_idle_check(now=now)
    assert (report.stopped, report.noticed) == ([notebook.pk], [])
    notebook.refresh_from_db()
    assert notebook.state in ("stopping", "stopped")
    event = AuditEvent.objects.get(action="allocation.idle_stopped", target_id=str(notebook.pk))
    evidence = event.data
    assert evidence["idle_stop_after_minutes"] == 10
    assert evidence["idle_seconds"] >= 600
    assert float(evidence["sm_active_max"]) < 0.01
    assert evidence["samples"] >= 10
    assert evidence["noticed_at"] is not None
    assert evidence["devices"] == [notebook.devices.get().gpu_uuid]
    assert Notification.objects.filter(tenant=acme, kind="idle_stop").count() == 1
    page = signed_in(alice).get(f"/portal/allocations/{notebook.pk}").content.decode()
    assert re.search(r"<dd data-idle-stop>Stopped .* UTC after 1[0-9] minutes with its GPUs idle", page)
    job.refresh_from_db()
    assert job.state == "running"
    assert not AuditEvent.objects.filter(action="allocation.idle_stopped", target_id=str(job.pk)).exists()
