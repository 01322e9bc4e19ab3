"""An endpoint's own autoscaling on Kubernetes, against the fake API server through the official client: it goes to
zero after its own idle window, never with ``min_replicas`` 1 or more, and keeps ``buffer_replicas`` warm beyond
demand while requests come in (its HPA's, or KEDA ScaledObject's, fewest replicas raised), back to the floor once
demand is gone. The clock is moved by the test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from time_machine import TimeMachineFixture

from lifecycle.services.customers import allocation_request
from provisioning.domain.states import AllocationState as S
from provisioning.domain.workloads import Autoscaling, Workload
from provisioning.drivers.base import allocations_reconcile
from provisioning.drivers.kubernetes.driver import KubernetesProvisioner
from provisioning.models import Allocation
from provisioning.services.placing import AllocationSpec
from tests.fakes.kubernetes import K8sServer
from tests.provisioning.drivers.kubernetes.test_scale_to_zero import deployment
from tests.support import SYSTEM
from tests.support.kubernetes import H100, live, queue_depth, state
from tests.support.kubernetes import replicas_ready as ready


@pytest.fixture
def clock(time_machine: TimeMachineFixture) -> Any:
    """A stopped clock the test moves: ``clock(seconds)`` goes to T0 + seconds."""
    start = datetime.now(UTC).replace(microsecond=0)
    time_machine.move_to(start, tick=False)

    def move(seconds: float) -> None:
        time_machine.move_to(start + timedelta(seconds=seconds), tick=False)

    return move


def running_endpoint(server: K8sServer, tenant: Any, autoscaling: Autoscaling, gpus: int = 4) -> Allocation:
    """An endpoint admitted through the workload rules, applied and running one ready replica."""
    workload = Workload(image="vllm/vllm-openai:v0.11.0", autoscaling=autoscaling)
    spec = AllocationSpec(rung="serverless", gpu_models=(H100,), gpus=gpus)
    allocation = allocation_request(tenant=tenant, name="chat", spec=spec, actor=SYSTEM, workload=workload)
    KubernetesProvisioner().provision(allocation.pk)
    ready(server, allocation, 1)
    allocations_reconcile()
    assert state(allocation) == S.RUNNING
    return allocation


def keda_queue_depth(server: K8sServer, allocation: Allocation, value: str) -> None:
    """What KEDA's metrics server serves for the ScaledObject's first trigger (the queue depth query's result):
    with KEDA installed, it answers for ``external.metrics.k8s.io``."""
    server.put_object(
        {
            "apiVersion": "external.metrics.k8s.io/v1beta1",
            "kind": "s0-prometheus",
            "metadata": {
                "name": f"s0-{allocation.pk}",
                "namespace": "ladder-acme",
                "labels": {"scaledobject.keda.sh/name": f"ldr-{allocation.pk}"},
            },
            "value": value,
        }
    )


def test_an_endpoint_goes_to_zero_after_its_own_idle_window(
    k8s_fleet: K8sServer, acme: Any, settings: Any, clock: Any
) -> None:
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 0  # the operator's window: the endpoint's own wins
    allocation = running_endpoint(k8s_fleet, acme, Autoscaling(idle_seconds=600))
    queue_depth(k8s_fleet, allocation, "0")
    allocations_reconcile()  # empty: noted
    assert "ladder.io/idle-since" in deployment(k8s_fleet, allocation)["metadata"]["annotations"]
    clock(599)
    allocations_reconcile()
    assert deployment(k8s_fleet, allocation)["spec"].get("replicas") != 0
    clock(600)
    allocations_reconcile()
    assert deployment(k8s_fleet, allocation)["spec"]["replicas"] == 0


def test_an_endpoint_with_min_replicas_never_goes_to_zero(
    k8s_fleet: K8sServer, acme: Any, settings: Any, clock: Any
) -> None:
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
    allocation = running_endpoint(k8s_fleet, acme, Autoscaling(min_replicas=2))
    hpa = live(k8s_fleet, "autoscaling/v2", "HorizontalPodAutoscaler", f"ldr-{allocation.pk}", "ladder-acme")
    assert hpa["spec"]["minReplicas"] == 2
    queue_depth(k8s_fleet, allocation, "0")
    for seconds in (0, 3600, 86_400):
        clock(seconds)
        allocations_reconcile()
    found = deployment(k8s_fleet, allocation)
    assert found["spec"].get("replicas") != 0
    assert "ladder.io/idle-since" not in (found["metadata"].get("annotations") or {})
    assert state(allocation) == S.RUNNING


@pytest.mark.parametrize(
    ("autoscaler", "api_version", "kind", "field", "floor"),
    [
        ("hpa", "autoscaling/v2", "HorizontalPodAutoscaler", "minReplicas", 1),
        ("keda", "keda.sh/v1alpha1", "ScaledObject", "minReplicaCount", 0),  # KEDA goes to zero itself
    ],
)
def test_a_buffer_keeps_replicas_warm_beyond_demand_while_requests_come_in(
    k8s_fleet: K8sServer,
    acme: Any,
    settings: Any,
    clock: Any,
    autoscaler: str,
    api_version: str,
    kind: str,
    field: str,
    floor: int,
) -> None:
    settings.LADDER_SERVERLESS_AUTOSCALER = autoscaler
    allocation = running_endpoint(k8s_fleet, acme, Autoscaling(buffer_replicas=1, target_in_flight=4), gpus=4)

    def fewest() -> int:
        return int(live(k8s_fleet, api_version, kind, f"ldr-{allocation.pk}", "ladder-acme")["spec"][field])

    assert fewest() == floor
    for depth, warm in (("5", 3), ("2", 2), ("40", 3), ("0", floor)):
        # 5 in flight: two replicas' demand and one more; 2: one and one more; 40: never above max_replicas (3).
        if autoscaler == "keda":
            keda_queue_depth(k8s_fleet, allocation, depth)
        else:
            queue_depth(k8s_fleet, allocation, depth)
        allocations_reconcile()
        assert fewest() == warm, depth
