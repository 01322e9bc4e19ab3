"""Cold starts on Kubernetes, against the fake API server through the official client: a woken endpoint's phases
come from the cluster's own signals (its replica's ``PodScheduled`` and ``Ready`` conditions, the kubelet's
``Pulled`` event) into a row written as it becomes ``running``; an endpoint going idle has its image pulled in
advance by a DaemonSet on the hosts its next replica is likely to take, gone once it runs again or stops."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from provisioning.domain.states import AllocationState as S
from provisioning.domain.workloads import Model, Workload
from provisioning.drivers.base import allocations_reconcile
from provisioning.drivers.kubernetes.cold_starts import go_duration, pull_seconds
from provisioning.drivers.kubernetes.driver import KubernetesProvisioner
from provisioning.models import Allocation, EndpointColdStart
from provisioning.services.endpoints import endpoint_wake
from provisioning.services.placing import AllocationSpec, allocation_request
from provisioning.services.stopping import allocation_stop
from tests.fakes.kubernetes import K8sServer
from tests.support import SYSTEM
from tests.support.kubernetes import H100, hosts_of, live, state

IMAGE = "ghcr.io/acme/server:1.0"
NAMESPACE = "ladder-acme"


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ready(server: K8sServer, allocation: Allocation, replicas: int) -> None:
    status = {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas}
    server.set_status("apps/v1", "deployments", f"ldr-{allocation.pk}", NAMESPACE, status)


def prepull(server: K8sServer, allocation: Allocation) -> dict[str, Any] | None:
    return server.get_object("apps/v1", "DaemonSet", f"ldr-{allocation.pk}-prepull", NAMESPACE)


def pinned(daemonset: dict[str, Any]) -> set[str]:
    spec = daemonset["spec"]["template"]["spec"]
    (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return set(term["matchExpressions"][0]["values"])


def replica(
    server: K8sServer, allocation: Allocation, name: str, *, created: datetime, scheduled: datetime, warm: datetime
) -> None:
    """A replica pod as the ReplicaSet and the kubelet leave it: scheduled, then ready once its model is loaded."""
    server.put_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "labels": {"ladder.io/allocation": str(allocation.pk)},
                "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
            "spec": {"containers": [{"name": "worker", "image": IMAGE}]},
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(scheduled)},
                    {"type": "Initialized", "status": "True", "lastTransitionTime": stamp(scheduled)},
                    {"type": "Ready", "status": "True", "lastTransitionTime": stamp(warm)},
                ],
            },
        }
    )


def event(server: K8sServer, pod: str, n: int, reason: str, message: str, at: datetime, container: str = "worker"):
    server.put_object(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{pod}.{n:x}", "namespace": NAMESPACE},
            "involvedObject": {
                "kind": "Pod",
                "name": pod,
                "namespace": NAMESPACE,
                "fieldPath": f"spec.containers{{{container}}}",
            },
            "reason": reason,
            "message": message,
            "type": "Normal",
            "lastTimestamp": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    )


def running_endpoint(server: K8sServer, acme: Any) -> Allocation:
    spec = AllocationSpec(rung="serverless", gpu_models=(H100,), gpus=2)
    workload = Workload(image=IMAGE, model=Model(size_gb=16))
    allocation = allocation_request(tenant=acme, name="llm", spec=spec, actor=SYSTEM, workload=workload)
    KubernetesProvisioner().provision(allocation.pk)
    ready(server, allocation, 1)
    allocations_reconcile()
    assert state(allocation) == S.RUNNING
    return allocation


def asleep(server: K8sServer, allocation: Allocation) -> set[str]:
    """Scaled to zero by the loop, its last pod gone: idle. The hosts it ran on."""
    ran_on = hosts_of(allocation)
    deployment = live(server, "apps/v1", "Deployment", f"ldr-{allocation.pk}", NAMESPACE)
    server.put_object({**deployment, "spec": {**deployment["spec"], "replicas": 0}})
    ready(server, allocation, 0)
    allocations_reconcile()
    assert state(allocation) == S.IDLE
    return ran_on


def woken(allocation: Allocation) -> datetime:
    assert endpoint_wake(allocation=allocation, actor=SYSTEM)
    KubernetesProvisioner().provision(allocation.pk)  # what its queued task does
    allocation.refresh_from_db()
    assert allocation.woke_at is not None
    return allocation.woke_at


@pytest.fixture
def fleet(k8s_fleet: K8sServer, settings: Any) -> K8sServer:
    settings.LADDER_SERVERLESS_PREPULL = True
    return k8s_fleet


def test_a_wake_is_split_at_the_clusters_own_signals(fleet: K8sServer, acme: Any) -> None:
    endpoint = running_endpoint(fleet, acme)
    ran_on = asleep(fleet, endpoint)
    daemonset = prepull(fleet, endpoint)
    assert daemonset is not None
    assert pinned(daemonset) >= ran_on  # pulled in advance where it ran, and where the engine would place it
    assert daemonset["spec"]["template"]["spec"]["initContainers"][0]["image"] == IMAGE

    woke = woken(endpoint)
    assert pinned(daemonset) >= hosts_of(endpoint)  # the engine placed it where the image was pulled in advance
    pod = f"ldr-{endpoint.pk}-5c7d9-x2k4p"
    replica(
        fleet,
        endpoint,
        pod,
        created=woke + timedelta(seconds=1),
        scheduled=woke + timedelta(seconds=3.2),
        warm=woke + timedelta(seconds=40),
    )
    event(fleet, pod, 1, "Scheduled", f"Successfully assigned {NAMESPACE}/{pod} to a node", woke + timedelta(seconds=3))
    event(fleet, pod, 2, "Pulling", f'Pulling image "{IMAGE}"', woke + timedelta(seconds=4))
    pulled = f'Successfully pulled image "{IMAGE}" in 12.3s (12.3s including waiting). Image size: 8123456789 bytes.'
    event(fleet, pod, 3, "Pulled", pulled, woke + timedelta(seconds=16))
    # Another container's pull says nothing of the worker's.
    event(fleet, pod, 4, "Pulled", 'Successfully pulled image "x" in 9m0s', woke, container="fetch-0")
    ready(fleet, endpoint, 1)
    allocations_reconcile()
    assert state(endpoint) == S.RUNNING

    row = EndpointColdStart.objects.get(allocation=endpoint)
    assert (row.device_wait_ms, row.image_pull_ms, row.model_load_ms) == (3200, 12_300, 24_500)
    assert (row.total_ms, row.image_cached, row.model_source) == (40_000, False, "hub")
    assert (row.woke_at, row.ready_at) == (woke, woke + timedelta(seconds=40))
    fleet.tick()  # the foreground deletion finishes
    assert prepull(fleet, endpoint) is None  # it runs again: the pods holding its image elsewhere are gone


def test_an_image_already_on_the_node_pulls_nothing_and_older_pods_are_not_the_wakes(
    fleet: K8sServer, acme: Any
) -> None:
    endpoint = running_endpoint(fleet, acme)
    asleep(fleet, endpoint)
    woke = woken(endpoint)
    old = f"ldr-{endpoint.pk}-5c7d9-old00"  # created before the wake (a replica of the earlier run, going)
    replica(fleet, endpoint, old, created=woke - timedelta(minutes=5), scheduled=woke, warm=woke)
    pod = f"ldr-{endpoint.pk}-5c7d9-new00"
    replica(
        fleet,
        endpoint,
        pod,
        created=woke + timedelta(seconds=1),
        scheduled=woke + timedelta(seconds=2),
        warm=woke + timedelta(seconds=9.5),
    )
    event(fleet, pod, 1, "Pulled", f'Container image "{IMAGE}" already present on machine', woke)
    ready(fleet, endpoint, 1)
    allocations_reconcile()
    row = EndpointColdStart.objects.get(allocation=endpoint)
    assert (row.device_wait_ms, row.image_pull_ms, row.model_load_ms, row.total_ms) == (2000, 0, 7500, 9500)
    assert row.image_cached is True


def test_without_the_signals_the_wake_keeps_its_total_and_no_phases(fleet: K8sServer, acme: Any, settings: Any) -> None:
    settings.LADDER_SERVERLESS_PREPULL = False
    endpoint = running_endpoint(fleet, acme)
    asleep(fleet, endpoint)
    assert prepull(fleet, endpoint) is None  # pre-pull is off
    woken(endpoint)
    ready(fleet, endpoint, 1)  # the Deployment says so; no replica pod read back (a cluster that lists none)
    allocations_reconcile()
    endpoint.refresh_from_db()
    row = EndpointColdStart.objects.get(allocation=endpoint)
    assert (row.device_wait_ms, row.image_pull_ms, row.model_load_ms, row.image_cached) == (None, None, None, None)
    assert row.total_ms == endpoint.cold_start_ms


def test_stopping_an_idle_endpoint_deletes_its_prepull(
    fleet: K8sServer, acme: Any, django_capture_on_commit_callbacks: Any
) -> None:
    endpoint = running_endpoint(fleet, acme)
    asleep(fleet, endpoint)
    assert prepull(fleet, endpoint) is not None
    with django_capture_on_commit_callbacks(execute=True):
        allocation_stop(allocation=endpoint, actor=SYSTEM)
    fleet.tick()
    allocations_reconcile()
    assert prepull(fleet, endpoint) is None
    assert state(endpoint) == S.STOPPED


def test_the_kubelets_durations_and_events_read_as_seconds() -> None:
    assert go_duration("12.3s") == pytest.approx(12.3)
    assert go_duration("1m2.5s") == pytest.approx(62.5)
    assert go_duration("850ms") == pytest.approx(0.85)
    assert go_duration("1h0m0s") == 3600
    with pytest.raises(ValueError, match="not a Go duration"):
        go_duration("soon")
    at = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)

    def said(reason: str, message: str, seconds: float) -> dict[str, Any]:
        when = (at + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"reason": reason, "message": message, "lastTimestamp": when, "involvedObject": {}}

    assert pull_seconds([said("Pulling", "Pulling image", 0), said("Pulled", "pulled, somehow", 7)]) == 7
    assert pull_seconds([said("Pulled", 'Successfully pulled image "a" in 2m0s', 0)]) == 120
    assert pull_seconds([said("Created", "Created container worker", 0)]) is None
