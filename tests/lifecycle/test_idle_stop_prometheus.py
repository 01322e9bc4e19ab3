"""Idle stop end to end, against a real Prometheus: the simulated fleet's exporter is replayed over the last
fifteen minutes (what the node reported, minute by minute, stamped with its time), then the beat's check gives
notice to the idle notebook five minutes before its ``idle_stop_after`` and stops it at it, auditing the evidence;
the busy job beside it, which asked for the same, runs on."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.db import connection

from billing.models import Notification
from core.models import AuditEvent
from provisioning.domain.gpu_metrics import exposition
from provisioning.domain.workloads import Checkpoint, Workload
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, AllocationDevice, Node
from provisioning.services.placing import AllocationSpec, allocation_request
from provisioning.simulated_exporter import node_readings
from tests.support import SYSTEM
from tests.support.billing import H100, load_fleet
from tests.support.consoles import signed_in
from tests.support.prometheus import Prometheus

pytestmark = pytest.mark.django_db(transaction=True)


class Replay:
    """Serves a node's exposition as it was at each instant, one instant a scrape, stamped with it."""

    def __init__(self, hostname: str, instants: list[datetime]) -> None:
        self.hostname, self.instants, self.served = hostname, instants, 0
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                at = replay.instants[min(replay.served, len(replay.instants) - 1)]
                try:
                    node = Node.objects.select_related("gpu_model").get(hostname=replay.hostname)
                    body = exposition(node_readings(node, now=at), at_ms=int(at.timestamp() * 1000)).encode()
                finally:
                    connection.close()  # this server's threads are not Django's: nothing closes their connection
                replay.served += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def replays() -> Iterator[list[Replay]]:
    made: list[Replay] = []
    yield made
    for replay in made:
        replay.close()


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
    for host in hosts:
        replay = Replay(host, instants)
        replays.append(replay)
        prometheus_clock.scrape(f"replay-{host}", replay.url)
    for replay in replays:
        while replay.served < len(instants) + 1:
            threading.Event().wait(0.2)
        prometheus_clock.scraped(f"replay-{replay.hostname}")

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
