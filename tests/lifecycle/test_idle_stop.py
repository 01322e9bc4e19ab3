"""Idle stop's guards, without Prometheus in the way: a Prometheus that does not answer stops nothing (the
allocation is counted as unread); a job inside its checkpoint interval is never stopped, a container has none;
only the rungs that offer it take ``idle_stop_after``. (End to end: test_idle_stop_prometheus.py.)"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from lifecycle.services.idle_stop import _in_checkpoint_interval, allocations_idle_check
from provisioning.domain.rungs import RUNGS
from provisioning.domain.workloads import Checkpoint, Workload
from provisioning.services.placing import AllocationSpec, allocation_request
from tests.support import SYSTEM
from tests.support.billing import H100, at, load_fleet, run

IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"


def launch(tenant: Any, rung: str, workload: Workload) -> Any:
    spec = AllocationSpec(rung=rung, gpu_models=(H100,), gpus=1)
    return run(allocation_request(tenant=tenant, name=rung, spec=spec, actor=SYSTEM, workload=workload), at(0))


def test_without_prometheus_nothing_is_stopped(acme: Any) -> None:
    load_fleet()
    notebook = launch(acme, "container", Workload(image=IMAGE, idle_stop_after=10))
    report = allocations_idle_check(now=timezone.now())
    assert (report.unread, report.stopped, report.noticed) == ([notebook.pk], [], [])
    notebook.refresh_from_db()
    assert notebook.state == "running"


def test_a_job_inside_its_checkpoint_interval_is_never_idle_stopped(acme: Any) -> None:
    load_fleet()
    job = launch(
        acme,
        "job",
        Workload(image=IMAGE, command=("torchrun", "x.py"), checkpoint=Checkpoint("/ckpt", 600), idle_stop_after=10),
    )
    notebook = launch(acme, "container", Workload(image=IMAGE, idle_stop_after=10))
    now = timezone.now()
    assert _in_checkpoint_interval(job, now)  # the simulated job checkpoints every ten minutes: the last is recent
    assert not _in_checkpoint_interval(notebook, now)


def test_idle_stop_is_offered_where_a_workload_can_sit_idle() -> None:
    assert sorted(r.value for r, facts in RUNGS.items() if facts.idle_stop) == [
        "confidential_vm",
        "container",
        "job",
        "vm",
    ]
