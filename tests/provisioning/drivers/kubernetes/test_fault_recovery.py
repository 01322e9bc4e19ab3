"""Automatic fault recovery on the fake Kubernetes API server: a GPU node the health tooling reports failing is
found by reconciliation (no operator), quarantined with the condition that said so, and the gang on it is placed
again, its Job replaced on the new nodes (the checkpoint volume kept) and restarted from the checkpoint the workload
reported, billed up to that checkpoint, the lost work reported."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from time_machine import TimeMachineFixture

from billing.domain.metering import to_ms
from billing.models import UsageInterval
from core.models import AuditEvent
from provisioning.domain.states import AllocationState as S
from provisioning.domain.workload_output import LogLine
from provisioning.drivers.base import allocations_reconcile
from provisioning.drivers.kubernetes.client import ClusterUnavailable
from provisioning.drivers.kubernetes.driver import KubernetesProvisioner
from provisioning.drivers.kubernetes.output import checkpoint_report
from provisioning.drivers.kubernetes.recovery import ANNOTATION_PLACEMENT
from provisioning.models import Allocation, AllocationFault, Node, NodeState
from provisioning.services.fleet import fleet_load, node_undrain
from tests.fakes.kubernetes import K8sServer
from tests.support import SYSTEM
from tests.support.fleet_documents import node as node_spec
from tests.support.fleet_documents import small_fleet
from tests.support.kubernetes import condition, gang_up, hosts_of, job, live, pinned, place, ready, state

NS = "ladder-acme"


@pytest.fixture
def fleet(k8s_fleet: K8sServer) -> K8sServer:
    """The small fleet with a third 8-GPU H100 host in eu-west-1a's NVLink domain (room to place a 2x4 gang again),
    every GPU node Ready as its kubelet reports it."""
    document = small_fleet()
    document["regions"][0]["halls"][0]["nodes"].append(node_spec("euw1a-04", "eu-west-1a/nvl-0"))
    fleet_load(document=document, actor=SYSTEM)
    for node in Node.objects.all():
        k8s_fleet.put_object(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node.hostname, "labels": {"kubernetes.io/hostname": node.hostname}},
                "spec": {"taints": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
                "status": {"conditions": [ready("True", datetime.now(UTC) - timedelta(days=1))]},
            }
        )
    return k8s_fleet


@pytest.fixture
def clock(time_machine: TimeMachineFixture) -> Any:
    """A stopped clock the test moves (the fake server reads it too): ``clock(seconds)`` goes to T0 + seconds. T0
    is five minutes into the current hour, so the few minutes a test moves through never cross an hour, where the
    ledger cuts usage intervals."""
    start = datetime.now(UTC).replace(minute=5, second=0, microsecond=0)
    time_machine.move_to(start, tick=False)

    def move(seconds: float) -> datetime:
        moment = start + timedelta(seconds=seconds)
        time_machine.move_to(moment, tick=False)
        return moment

    move.start = start  # type: ignore[attr-defined]
    return move


def intervals(allocation: Allocation, start: datetime) -> list[tuple[int, int | None]]:
    base = to_ms(start)
    return sorted(
        (row.start_ms - base, None if row.end_ms is None else row.end_ms - base)
        for row in UsageInterval.objects.filter(allocation=allocation)
    )


def actions(target_type: str, target_id: int) -> list[str]:
    return list(
        AuditEvent.objects.filter(target_type=target_type, target_id=str(target_id))
        .order_by("seq")
        .values_list("action", flat=True)
    )


def running_gang(server: K8sServer, acme: Any, clock: Any) -> Allocation:
    allocation = place(acme, rung="job", gpus=8, gang_size=2, topology="nvlink")
    clock(0)
    KubernetesProvisioner().provision(allocation.pk)
    gang_up(server, allocation)
    allocations_reconcile()
    assert state(allocation) == S.RUNNING
    return allocation


def test_a_node_fault_under_a_gang_restarts_it_from_its_checkpoint(
    fleet: K8sServer, acme: Any, clock: Any, api: Any, alice: Any
) -> None:
    gang = running_gang(fleet, acme, clock)
    start = clock.start
    first_hosts = hosts_of(gang)
    assert len(first_hosts) == 2  # 2 members x 4 GPUs, on two hosts
    pvc = live(fleet, "v1", "PersistentVolumeClaim", f"ldr-{gang.pk}-checkpoints", NS)
    [leader, _] = sorted(p["metadata"]["name"] for p in fleet.objects(kind="Pod", namespace=NS))
    # The workload checkpoints at 60 s and says so on stdout; reconciliation learns it while the nodes live.
    fleet.set_logs(
        NS,
        leader,
        "worker",
        [
            (start + timedelta(seconds=30), "step 100 loss 2.1"),
            (start + timedelta(seconds=60), 'LADDER_CHECKPOINT {"step": 200, "path": "step-200"}'),
            (start + timedelta(seconds=75), "step 250 loss 1.9"),
        ],
    )
    clock(80)
    allocations_reconcile()
    gang.refresh_from_db()
    assert (gang.checkpoint_at, gang.checkpoint_step) == (start + timedelta(seconds=60), "200")

    # At 100 s the health tooling reports an NVLink fault on one of the gang's hosts; nobody calls an operator.
    failed = sorted(first_hosts)[0]
    nvlink = {
        "type": "GpuNvlinkWatch",
        "status": "True",
        "reason": "GpuNvlinkWatchIsNotHealthy",
        "message": "GPU 3 NVLink link 7 down",
        "lastTransitionTime": (start + timedelta(seconds=100)).isoformat(),
    }
    condition(fleet, failed, nvlink)
    clock(105)
    allocations_reconcile()

    node = Node.objects.get(hostname=failed)
    assert node.state == NodeState.QUARANTINED
    quarantined = AuditEvent.objects.get(target_type="node", target_id=str(node.pk), action="node.quarantined")
    assert (quarantined.actor_type, quarantined.actor_label) == ("system", "kubernetes")  # no operator
    assert quarantined.data["evidence"]["condition"] == "GpuNvlinkWatch"
    assert "link 7 down" in quarantined.data["reason"]
    assert state(gang) == S.RESTARTING
    assert failed not in hosts_of(gang)
    assert len(hosts_of(gang)) == 2
    # Billing stopped at the checkpoint: the 40 s since are done again, at the provider's cost.
    assert intervals(gang, start) == [(0, 60_000)]
    [fault] = AllocationFault.objects.filter(allocation=gang)
    assert (fault.hostname, fault.outcome, fault.lost_ms) == (failed, "restarted", 40_000)
    assert fault.fault_at == start + timedelta(seconds=100)
    assert fault.checkpoint_at == start + timedelta(seconds=60)
    restarting = AuditEvent.objects.get(target_id=str(gang.pk), action="allocation.restarting")
    assert restarting.data["lost_ms"] == 40_000
    assert restarting.data["cause"].startswith("GpuNvlinkWatch=True")

    # The old gang's Job goes first, with its pods (foreground deletion); the checkpoint volume stays.
    old = job(fleet, gang)
    assert old["metadata"].get("deletionTimestamp")
    fleet.tick()
    assert fleet.get_object("batch/v1", "Job", f"ldr-{gang.pk}", NS) is None
    assert fleet.objects(kind="Pod", namespace=NS) == []
    clock(110)
    allocations_reconcile()
    new = job(fleet, gang)
    assert set(pinned(new)) == hosts_of(gang)
    assert failed not in pinned(new)
    assert new["metadata"]["annotations"][ANNOTATION_PLACEMENT] != old["metadata"]["annotations"][ANNOTATION_PLACEMENT]
    assert new["spec"]["suspend"] is True  # queued in Kueue again, as a first start
    kept = live(fleet, "v1", "PersistentVolumeClaim", f"ldr-{gang.pk}-checkpoints", NS)
    assert kept["metadata"]["uid"] == pvc["metadata"]["uid"]
    env = {e["name"]: e["value"] for e in new["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["LADDER_CHECKPOINT_MARKER"] == "/checkpoints/ladder-checkpoint.json"
    assert state(gang) == S.RESTARTING  # until the new gang is up

    clock(130)
    gang_up(fleet, gang)
    allocations_reconcile()
    assert state(gang) == S.RUNNING
    assert intervals(gang, start) == [(0, 60_000), (130_000, None)]
    fault.refresh_from_db()
    assert fault.running_at == start + timedelta(seconds=130)

    body = api(alice).get(f"/api/v1/allocations/{gang.pk}").json()
    assert body["state"] == "running"
    assert body["restarts"] == 1
    assert body["goodput_lost_seconds"] == "40.000"
    assert body["faults"][0]["node"] == failed
    assert body["faults"][0]["lost_seconds"] == "40.000"
    assert body["faults"][0]["checkpoint_at"].startswith((start + timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%S"))


def test_other_work_on_the_failing_node_fails_and_a_node_with_none_is_only_quarantined(
    fleet: K8sServer, acme: Any, clock: Any
) -> None:
    gang = running_gang(fleet, acme, clock)
    host = sorted(hosts_of(gang))[0]
    idle = Node.objects.get(hostname="use1a-01")
    # Not failing: a node that only reports the fault's absence, or is NotReady for less than the grace.
    condition(fleet, "euw1a-03", {"type": "GpuMemWatch", "status": "False", "reason": "No Health Failures"})
    condition(fleet, "euw1b-01", ready("False", clock.start, reason="KubeletNotReady"))
    clock(30)
    condition(fleet, host, {"type": "SysLogsXIDError", "status": "True", "reason": "XID 79", "message": "fell off"})
    condition(fleet, idle.hostname, ready("Unknown", clock.start - timedelta(minutes=5), reason="NodeStatusUnknown"))
    allocations_reconcile()
    assert state(gang) == S.RESTARTING
    assert Node.objects.get(hostname="euw1a-03").state == NodeState.READY
    assert Node.objects.get(hostname="euw1b-01").state == NodeState.READY
    idle.refresh_from_db()
    assert idle.state == NodeState.QUARANTINED
    assert actions("node", idle.pk) == ["node.quarantined"]
    assert not AllocationFault.objects.exclude(hostname=host).exists()


def test_a_container_on_the_failing_node_fails(fleet: K8sServer, acme: Any, clock: Any) -> None:
    container = place(acme, rung="container", gpus=1)
    host = container.devices.get().hostname
    clock(0)
    condition(fleet, host, {"type": "GpuMemWatch", "status": "True", "reason": "DBE", "message": "double bit ECC"})
    allocations_reconcile()
    assert state(container) == S.FAILED
    assert host in container.failure_reason
    assert Node.objects.get(hostname=host).state == NodeState.QUARANTINED


def test_reconciling_twice_changes_nothing_more_and_a_recovered_node_stays_quarantined(
    fleet: K8sServer, acme: Any, clock: Any
) -> None:
    gang = running_gang(fleet, acme, clock)
    host = sorted(hosts_of(gang))[0]
    clock(50)
    condition(fleet, host, ready("False", clock.start, reason="KubeletNotReady"))
    clock(120)  # NotReady past the grace
    allocations_reconcile()
    assert state(gang) == S.RESTARTING
    seen = AuditEvent.objects.count()
    faults = AllocationFault.objects.count()
    allocations_reconcile()
    assert AuditEvent.objects.count() == seen
    assert AllocationFault.objects.count() == faults == 1
    # The kubelet comes back: the node stays out until an operator returns it.
    condition(fleet, host, ready("True", clock.start + timedelta(seconds=121)))
    allocations_reconcile()
    node = Node.objects.get(hostname=host)
    assert node.state == NodeState.QUARANTINED
    node_undrain(node=node, actor=SYSTEM, reason="checked")
    allocations_reconcile()
    assert Node.objects.get(hostname=host).state == NodeState.READY


def test_a_cluster_that_does_not_answer_changes_nothing(fleet: K8sServer, acme: Any, clock: Any) -> None:
    gang = running_gang(fleet, acme, clock)
    host = sorted(hosts_of(gang))[0]
    condition(fleet, host, {"type": "GpuPcieWatch", "status": "True", "reason": "PCIe replay"})
    seen = AuditEvent.objects.count()
    fleet.down = True
    with pytest.raises(ClusterUnavailable):
        allocations_reconcile()  # the running gang's status could not be read either
    assert Node.objects.get(hostname=host).state == NodeState.READY
    assert state(gang) == S.RUNNING
    assert AuditEvent.objects.count() == seen
    fleet.down = False
    allocations_reconcile()
    assert state(gang) == S.RESTARTING


def test_checkpoint_reports_are_read_from_the_log_lines() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)

    def report(text: str) -> tuple[datetime, str] | None:
        return checkpoint_report(LogLine(at=at, text=text, source="worker-0"))

    assert report("LADDER_CHECKPOINT") == (at, "")
    assert report('LADDER_CHECKPOINT {"step": 12}') == (at, "12")
    assert report('LADDER_CHECKPOINT {"path": "s-3"}') == (at, "s-3")
    assert report("LADDER_CHECKPOINTS done") is None
    assert report("LADDER_CHECKPOINT {broken") is None
    assert report("LADDER_CHECKPOINT [1]") is None
    assert report("saved LADDER_CHECKPOINT") is None
