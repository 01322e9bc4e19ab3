"""An MPI job and a Ray job end to end on Kubernetes: submitted through the real API as a 2 x 8-GPU gang, rendered
and applied to the fake API server through the official client, brought to running by the operator's status,
read back (logs by source: launcher, worker-N, head, submitter), stopped, and metered: usage opens when the gang
runs and closes at the stop, 16 GPUs for exactly that long. A failed MPIJob or RayJob fails the allocation. The
clock is moved by the test (time-machine), not read from the day the suite runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from time_machine import TimeMachineFixture

from billing.domain.metering import to_ms
from billing.models import UsageInterval
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation
from tests.api.test_workloads import IMAGE
from tests.fakes.kubernetes import K8sServer
from tests.support import assert_problem

URL = "/api/v1/allocations"
NS = "ladder-acme"
GANG = {"gpu_model": "H100-SXM-80GB", "gpus": 8, "gang": {"size": 2, "topology": "nvlink"}}
# The operator's own object, its resource and the status it reports once the gang runs, or once it failed.
OPERATOR = {
    "mpi": ("kubeflow.org/v2beta1", "MPIJob", "mpijobs"),
    "ray": ("ray.io/v1", "RayJob", "rayjobs"),
}
RUNNING: dict[str, dict[str, Any]] = {
    "mpi": {"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]},
    "ray": {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"},
}
FAILED: dict[str, dict[str, Any]] = {
    "mpi": {
        "conditions": [
            {"type": "Running", "status": "False"},
            {"type": "Failed", "status": "True", "reason": "MPIJobFailed", "message": "launcher exited with 1"},
        ]
    },
    "ray": {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "message": "the entrypoint exited with 1"},
}
T0 = datetime(2026, 3, 2, 9, 15, tzinfo=UTC)


def submit(api: Any, user: Any, framework: str, capture: Any) -> int:
    workload = {
        "image": IMAGE,
        "command": ["python", "train.py"],
        "args": ["--epochs", "3"],
        "env": [{"name": "MODEL", "value": "llama-3-8b"}],
        "checkpoint": {"path": "/ckpt", "interval_s": 60},
        "framework": framework,
    }
    with capture(execute=True):
        made = api(user).post(
            URL, {"name": f"my-{framework}", "rung": "job", **GANG, "workload": workload}, format="json"
        )
    assert made.status_code == 201, made.content
    return int(made.json()["id"])


def operator_pods(server: K8sServer, allocation_id: int, framework: str) -> dict[str, str]:
    """The pods the operator makes from the rendered templates (their labels as the templates and the operator
    set them), each having written one line: pod name -> the source its log is read under."""
    label = {"ladder.io/allocation": str(allocation_id), "ladder.io/tenant": "acme"}
    name = f"ldr-{allocation_id}"
    made: list[tuple[str, dict[str, str], str]]
    if framework == "mpi":
        made = [
            (f"{name}-launcher-x7k2p", {"ladder.io/role": "launcher"}, "launcher"),
            *(
                (
                    f"{name}-worker-{i}",
                    {"ladder.io/role": "worker", "training.kubeflow.org/replica-index": str(i)},
                    f"worker-{i}",
                )
                for i in (0, 1)
            ),
        ]
    else:
        made = [
            (f"{name}-raycluster-abcde-head-q9w", {"ladder.io/role": "head", "ray.io/node-type": "head"}, "head"),
            (
                f"{name}-raycluster-abcde-gpus-worker-r5t",
                {"ladder.io/role": "worker"},
                f"{name}-raycluster-abcde-gpus-worker-r5t",
            ),
            (f"{name}-submit-m2x", {"ladder.io/role": "submitter"}, "submitter"),
        ]
    sources = {}
    for i, (pod, labels, source) in enumerate(made):
        server.put_object(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod, "namespace": NS, "labels": {**label, **labels}},
                "spec": {"containers": [{"name": "worker", "image": IMAGE}]},
            }
        )
        server.set_logs(NS, pod, "worker", [(T0 + timedelta(seconds=i), f"hello from {pod}")])
        sources[pod] = source
    return sources


@pytest.mark.parametrize("framework", ["mpi", "ray"])
def test_a_two_by_eight_gpu_job_runs_is_read_back_stops_and_is_metered_for_sixteen_gpus(
    api: Any,
    alice: Any,
    k8s_fleet: K8sServer,
    framework: str,
    time_machine: TimeMachineFixture,
    django_capture_on_commit_callbacks: Any,
) -> None:
    time_machine.move_to(T0, tick=False)
    allocation_id = submit(api, alice, framework, django_capture_on_commit_callbacks)
    api_version, kind, plural = OPERATOR[framework]
    applied = k8s_fleet.get_object(api_version, kind, f"ldr-{allocation_id}", NS)
    assert applied is not None
    assert applied["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "ladder"
    assert "ladder.io/placement" in applied["metadata"]["annotations"]  # a gang on new nodes replaces it
    claims = k8s_fleet.get_object("resource.k8s.io/v1", "ResourceClaimTemplate", f"ldr-{allocation_id}-gpus", NS)
    assert claims is not None

    # Queued in Kueue: nothing runs, nothing is metered.
    allocations_reconcile()
    assert Allocation.objects.get(pk=allocation_id).state == "provisioning"
    assert not UsageInterval.objects.filter(allocation_id=allocation_id).exists()

    started = T0 + timedelta(minutes=4, seconds=30)
    time_machine.move_to(started, tick=False)
    k8s_fleet.set_status(api_version, plural, f"ldr-{allocation_id}", NS, RUNNING[framework])
    allocations_reconcile()
    client = api(alice)
    assert client.get(f"{URL}/{allocation_id}").json()["state"] == "running"

    sources = operator_pods(k8s_fleet, allocation_id, framework)
    lines = client.get(f"{URL}/{allocation_id}/logs").json()["lines"]
    assert [(line["source"], line["text"]) for line in lines] == [
        (source, f"hello from {pod}") for pod, source in sources.items()
    ]

    before = k8s_fleet.get_object(api_version, kind, f"ldr-{allocation_id}", NS)
    allocations_reconcile()  # still running: the operator's object is applied once, never suspended again
    live = k8s_fleet.get_object(api_version, kind, f"ldr-{allocation_id}", NS)
    assert before is not None
    assert live is not None
    assert live["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    stopped = started + timedelta(hours=1, minutes=37, seconds=12, milliseconds=250)  # across two hour marks
    time_machine.move_to(stopped, tick=False)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"{URL}/{allocation_id}").status_code == 200
    k8s_fleet.tick()
    allocations_reconcile()
    assert Allocation.objects.get(pk=allocation_id).state == "stopped"
    assert k8s_fleet.get_object(api_version, kind, f"ldr-{allocation_id}", NS) is None

    rows = list(UsageInterval.objects.filter(allocation_id=allocation_id).order_by("start_ms"))
    assert rows[0].start_ms == to_ms(started)
    assert rows[-1].end_ms == to_ms(stopped)
    assert all(r.units_milli == 16_000 for r in rows)
    running_ms = to_ms(stopped) - to_ms(started)
    assert running_ms == 5_832_250
    # Milli-GPU-seconds: 16 GPUs x 5,832.25 s = 93,316 GPU-seconds.
    assert sum(r.quantity_milli or 0 for r in rows) == 16 * running_ms == 93_316_000


@pytest.mark.parametrize("framework", ["mpi", "ray"])
def test_a_failed_operator_job_fails_the_allocation(
    api: Any, alice: Any, k8s_fleet: K8sServer, framework: str, django_capture_on_commit_callbacks: Any
) -> None:
    allocation_id = submit(api, alice, framework, django_capture_on_commit_callbacks)
    api_version, _, plural = OPERATOR[framework]
    k8s_fleet.set_status(api_version, plural, f"ldr-{allocation_id}", NS, RUNNING[framework])
    allocations_reconcile()
    k8s_fleet.set_status(api_version, plural, f"ldr-{allocation_id}", NS, FAILED[framework])
    allocations_reconcile()
    allocation = Allocation.objects.get(pk=allocation_id)
    assert allocation.state == "failed"
    assert not UsageInterval.objects.filter(allocation_id=allocation_id, end_ms=None).exists()
    expected = "launcher exited with 1" if framework == "mpi" else "the entrypoint exited with 1"
    assert expected in allocation.failure_reason


def test_another_tenant_cannot_read_or_stop_the_job(
    api: Any, alice: Any, charlie: Any, k8s_fleet: K8sServer, django_capture_on_commit_callbacks: Any
) -> None:
    allocation_id = submit(api, alice, "ray", django_capture_on_commit_callbacks)
    other = api(charlie)
    assert_problem(other.get(f"{URL}/{allocation_id}/logs"), 404, "not_found")
    assert_problem(other.delete(f"{URL}/{allocation_id}"), 404, "not_found")
    assert Allocation.objects.get(pk=allocation_id).state == "provisioning"
