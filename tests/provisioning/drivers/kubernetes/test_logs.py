"""What the Kubernetes driver reads of a workload, through the official client against the fake API server: its pods'
logs (a container, a gang's members, a VM's serial console; since and tail), the Events about its objects, and what
``release`` hands on in ``workload_ended`` before the teardown (once; nothing when the cluster does not answer)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from provisioning.domain.states import AllocationState as S
from provisioning.domain.workload_output import LogLine, WorkloadEvent
from provisioning.domain.workloads import Checkpoint, Workload
from provisioning.drivers.kubernetes.client import ClusterUnavailable, Kube
from provisioning.drivers.kubernetes.driver import KubernetesProvisioner
from provisioning.events import workload_ended
from provisioning.models import Allocation, Cluster
from provisioning.services.stopping import allocation_stop
from tests.fakes.kubernetes import K8sServer
from tests.support import K8S_TOKEN, SYSTEM
from tests.support.kubernetes import live, place, state

NS = "ladder-acme"
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
INDEX = "batch.kubernetes.io/job-completion-index"
IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def gang(tenant: Any) -> Allocation:
    return place(tenant, rung="job", gpus=8, gang_size=2, topology="nvlink")


def pod(server: K8sServer, allocation: Allocation, name: str, containers: list[str], **meta: Any) -> str:
    """A pod of the allocation as a controller creates it (the Job's, KubeVirt's), with the allocation's label."""
    labels = {"ladder.io/allocation": str(allocation.pk), **meta.pop("labels", {})}
    server.put_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": meta.pop("namespace", NS), "labels": labels, **meta},
            "spec": {"containers": [{"name": c, "image": IMAGE} for c in containers]},
        }
    )
    return name


def member(server: K8sServer, allocation: Allocation, index: int, *, as_label: bool = True) -> str:
    """A gang member: the Job controller writes its completion index as an annotation, and as a label since 1.28."""
    return pod(
        server,
        allocation,
        f"ldr-{allocation.pk}-{index}-k{index}x7q",
        ["worker"],
        labels={INDEX: str(index)} if as_label else {},
        annotations={INDEX: str(index)},
    )


def event(server: K8sServer, involved: tuple[str, str], reason: str, *, namespace: str = NS, **fields: Any) -> None:
    kind, name = involved
    server.put_object(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{reason.lower()}", "namespace": namespace},
            "involvedObject": {"kind": kind, "name": name, "namespace": namespace},
            "reason": reason,
            "message": f"{reason} {name}",
            "type": "Normal",
            **fields,
        }
    )


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def with_workload(allocation: Allocation, **fields: Any) -> Allocation:
    allocation.workload = Workload(image=IMAGE, command=("python", "train.py"), **fields).to_json()
    allocation.save(update_fields=["workload"])
    return allocation


def running(server: K8sServer, allocation: Allocation) -> None:
    """Provisioned, and up as far as the driver can tell."""
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    name = f"ldr-{allocation.pk}"
    if allocation.rung == "job":
        server.set_status("batch/v1", "jobs", name, NS, {"active": 2, "ready": 2})
    else:
        server.set_status(
            "v1", "pods", name, NS, {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        )
    driver.status(allocation.pk)
    assert state(allocation) == S.RUNNING


@pytest.fixture
def ended() -> Iterator[list[dict[str, Any]]]:
    """What ``workload_ended`` was sent, one dict of its arguments per send."""
    sent: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        sent.append(kwargs)

    workload_ended.connect(receiver, weak=False)
    try:
        yield sent
    finally:
        workload_ended.disconnect(receiver)


def only_reads(server: K8sServer, since: int) -> bool:
    return {method for method, _ in server.requests[since:]} == {"GET"}


# --- logs -----------------------------------------------------------------------------------------------------------


def test_a_containers_log_is_read_with_its_times(k8s_fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=1)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    name = f"ldr-{allocation.pk}"
    written = [(at(0), "$ python train.py"), (at(1.5), "epoch 1 loss 2.31"), (at(2.000001), ""), (at(3), "a  b ")]
    k8s_fleet.set_logs(NS, name, "worker", written)
    before = len(k8s_fleet.requests)
    assert driver.logs(allocation) == [LogLine(at=t, text=text, source=name) for t, text in written]
    assert only_reads(k8s_fleet, before)


def test_a_gangs_members_are_merged_in_time_order_under_their_index(k8s_fleet: K8sServer, acme: Any) -> None:
    allocation = gang(acme)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    first, second = member(k8s_fleet, allocation, 0), member(k8s_fleet, allocation, 1, as_label=False)
    member(k8s_fleet, allocation, 2)  # a replacement not started yet: nothing written, nothing read
    k8s_fleet.set_logs(NS, first, "worker", [(at(0), "rank 0 up"), (at(2), "step 1"), (at(4), "step 2")])
    k8s_fleet.set_logs(NS, second, "worker", [(at(1), "rank 1 up"), (at(3), "step 1"), (at(5), "step 2")])
    lines = driver.logs(allocation)
    assert [(line.at, line.source, line.text) for line in lines] == [
        (at(0), "worker-0", "rank 0 up"),
        (at(1), "worker-1", "rank 1 up"),
        (at(2), "worker-0", "step 1"),
        (at(3), "worker-1", "step 1"),
        (at(4), "worker-0", "step 2"),
        (at(5), "worker-1", "step 2"),
    ]
    # The tail is taken after the merge: the last three of the gang, not three of each member.
    assert driver.logs(allocation, tail=3) == lines[-3:]


def test_a_vms_log_is_its_serial_console(k8s_fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="vm", gpus=2)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    launcher = pod(
        k8s_fleet,
        allocation,
        f"virt-launcher-ldr-{allocation.pk}-q8x2z",
        ["compute", "guest-console-log"],
        labels={"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": f"ldr-{allocation.pk}"},
    )
    k8s_fleet.set_logs(NS, launcher, "compute", [(at(0), '{"component":"virt-launcher","msg":"domain started"}')])
    boot = [(at(1), "[    0.000000] Linux version 6.8.0"), (at(9), "ubuntu login:")]
    k8s_fleet.set_logs(NS, launcher, "guest-console-log", boot)
    assert driver.logs(allocation) == [LogLine(at=t, text=text, source="console") for t, text in boot]


def test_since_and_tail(k8s_fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=1)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    k8s_fleet.set_logs(NS, f"ldr-{allocation.pk}", "worker", [(at(i + 0.25), f"line {i}") for i in range(10)])

    def texts(**options: Any) -> list[str]:
        return [line.text for line in driver.logs(allocation, **options)]

    assert texts(since=at(3.25)) == [f"line {i}" for i in range(4, 10)]  # after that moment, not at it
    assert texts(since=at(3.5)) == [f"line {i}" for i in range(4, 10)]  # the API's sinceTime is to the second
    assert texts(tail=2) == ["line 8", "line 9"]
    assert texts(since=at(7), tail=5) == ["line 7", "line 8", "line 9"]
    assert texts(tail=0) == []
    assert texts(since=at(60)) == []


def test_another_allocations_pods_never_leak(k8s_fleet: K8sServer, acme: Any, globex: Any) -> None:
    mine, theirs = place(acme, rung="container", gpus=1), place(acme, rung="container", gpus=1)
    other_tenants = place(globex, rung="container", gpus=1)
    driver = KubernetesProvisioner()
    for allocation in (mine, theirs, other_tenants):
        driver.provision(allocation.pk)
    k8s_fleet.set_logs(NS, f"ldr-{mine.pk}", "worker", [(at(0), "mine")])
    k8s_fleet.set_logs(NS, f"ldr-{theirs.pk}", "worker", [(at(1), "my teammate's")])
    k8s_fleet.set_logs("ladder-globex", f"ldr-{other_tenants.pk}", "worker", [(at(2), "globex's")])
    # Labelled as mine, but in another tenant's namespace: never looked at.
    stray = pod(k8s_fleet, mine, "stray", ["worker"], namespace="ladder-globex")
    k8s_fleet.set_logs("ladder-globex", stray, "worker", [(at(3), "not mine")])
    event(k8s_fleet, ("Pod", f"ldr-{theirs.pk}"), "Pulled", firstTimestamp=stamp(at(1)))
    event(k8s_fleet, ("Pod", f"ldr-{mine.pk}"), "Pulled", namespace="ladder-globex", firstTimestamp=stamp(at(1)))
    assert [line.text for line in driver.logs(mine)] == ["mine"]
    assert driver.events(mine) == []


def test_bare_metal_has_no_logs(k8s_fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="bare_metal", nodes=1)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    before = len(k8s_fleet.requests)
    assert driver.logs(allocation) == []
    assert k8s_fleet.requests[before:] == []  # no pod to ask about


def test_an_allocation_never_placed_has_nothing_to_read(k8s_fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=1)
    allocation.devices.all().delete()  # as a request still waiting for capacity
    assert KubernetesProvisioner().events(allocation) == []
    assert KubernetesProvisioner().logs(allocation) == []


def test_an_unreachable_cluster_is_said_so(k8s_fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=1)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    k8s_fleet.set_logs(NS, f"ldr-{allocation.pk}", "worker", [(at(0), "hello")])
    k8s_fleet.fail_on["/log$"] = 503
    with pytest.raises(ClusterUnavailable):
        driver.logs(allocation)  # not an empty log
    k8s_fleet.fail_on.clear()
    k8s_fleet.down = True
    with pytest.raises(ClusterUnavailable):
        driver.events(allocation)


# --- events ---------------------------------------------------------------------------------------------------------


def test_events_of_the_allocations_objects_and_pods_in_time_order(k8s_fleet: K8sServer, acme: Any) -> None:
    allocation = gang(acme)
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    name = f"ldr-{allocation.pk}"
    first = member(k8s_fleet, allocation, 0)
    event(k8s_fleet, ("Job", name), "Suspended", firstTimestamp=stamp(at(0)), lastTimestamp=stamp(at(0)))
    event(
        k8s_fleet,
        ("PersistentVolumeClaim", f"{name}-checkpoints"),
        "ProvisioningSucceeded",
        eventTime=at(1).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    )
    event(k8s_fleet, ("Pod", first), "Started", firstTimestamp=stamp(at(5)))
    backoff: dict[str, Any] = {
        "firstTimestamp": stamp(at(2)),
        "lastTimestamp": stamp(at(30)),
        "count": 4,
        "type": "Warning",
    }
    event(k8s_fleet, ("Pod", first), "BackOff", **backoff)  # repeated: known by its last time
    event(k8s_fleet, ("ConfigMap", "kube-root-ca.crt"), "Updated", firstTimestamp=stamp(at(3)))  # not the allocation's
    before = len(k8s_fleet.requests)
    found = driver.events(allocation)
    assert only_reads(k8s_fleet, before)
    assert [(e.at, e.reason, e.type, e.source) for e in found] == [
        (at(0), "Suspended", "Normal", f"Job/{name}"),
        (at(1), "ProvisioningSucceeded", "Normal", f"PersistentVolumeClaim/{name}-checkpoints"),
        (at(5), "Started", "Normal", f"Pod/{first}"),
        (at(30), "BackOff", "Warning", f"Pod/{first}"),
    ]
    assert found[0] == WorkloadEvent(at(0), "Suspended", f"Suspended {name}", "Normal", f"Job/{name}")


def test_events_are_selected_by_the_name_of_the_object_they_are_about(k8s_fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=1)
    KubernetesProvisioner().provision(allocation.pk)
    event(k8s_fleet, ("Pod", f"ldr-{allocation.pk}"), "Scheduled", firstTimestamp=stamp(at(0)))
    event(k8s_fleet, ("Pod", f"ldr-{allocation.pk}0"), "Scheduled", firstTimestamp=stamp(at(0)))
    kube = Kube.connect(api_server=k8s_fleet.url, credentials={"token": K8S_TOKEN})
    found = kube.list("v1", "Event", namespace=NS, fields={"involvedObject.name": f"ldr-{allocation.pk}"})
    assert [e["involvedObject"]["name"] for e in found] == [f"ldr-{allocation.pk}"]


# --- the end of a workload ------------------------------------------------------------------------------------------


def test_release_hands_on_the_log_once_before_the_teardown(
    k8s_fleet: K8sServer, acme: Any, ended: list[dict[str, Any]]
) -> None:
    allocation = with_workload(place(acme, rung="container", gpus=1))
    running(k8s_fleet, allocation)
    name = f"ldr-{allocation.pk}"
    k8s_fleet.set_logs(NS, name, "worker", [(at(0), "$ python train.py"), (at(1.5), "epoch 1")])
    allocation_stop(allocation=allocation, actor=SYSTEM)
    driver = KubernetesProvisioner()
    driver.release(allocation.pk)
    [sent] = ended
    assert sent["allocation"].pk == allocation.pk
    assert sent["logs"] == (
        f"2030-01-01T12:00:00+00:00 [{name}] $ python train.py\n2030-01-01T12:00:01.500000+00:00 [{name}] epoch 1\n"
    )
    assert sent["checkpoint"] is None
    assert abs((sent["at"] - datetime.now(UTC)).total_seconds()) < 60
    assert live(k8s_fleet, "v1", "Pod", name, NS)["metadata"]["deletionTimestamp"]  # deleting: after the send
    driver.release(allocation.pk)  # the task, retried: the teardown has begun, the log was sent
    k8s_fleet.tick()
    driver.status(allocation.pk)
    assert state(allocation) == S.STOPPED
    assert len(ended) == 1


def test_release_of_a_job_names_its_checkpoint_volume(
    k8s_fleet: K8sServer, acme: Any, ended: list[dict[str, Any]]
) -> None:
    allocation = with_workload(gang(acme), checkpoint=Checkpoint(interval_s=600))
    running(k8s_fleet, allocation)
    claim = f"ldr-{allocation.pk}-checkpoints"
    k8s_fleet.set_status("v1", "persistentvolumeclaims", claim, NS, {"phase": "Bound", "capacity": {"storage": "1Ti"}})
    first, second = member(k8s_fleet, allocation, 0), member(k8s_fleet, allocation, 1)
    k8s_fleet.set_logs(NS, first, "worker", [(at(0), "saved checkpoint step-1")])
    k8s_fleet.set_logs(NS, second, "worker", [(at(0.5), "step 1 loss 2.1")])
    allocation_stop(allocation=allocation, actor=SYSTEM)
    KubernetesProvisioner().release(allocation.pk)
    [sent] = ended
    cluster = Cluster.objects.get(hall=allocation.hall).name
    assert sent["checkpoint"] == {"location": f"pvc://{cluster}/{NS}/{claim}", "size_bytes": 2**40}
    assert sent["logs"].splitlines() == [
        "2030-01-01T12:00:00+00:00 [worker-0] saved checkpoint step-1",
        "2030-01-01T12:00:00.500000+00:00 [worker-1] step 1 loss 2.1",
    ]


def test_bare_metal_release_sends_an_empty_log_once(
    k8s_fleet: K8sServer, acme: Any, ended: list[dict[str, Any]]
) -> None:
    allocation = place(acme, rung="bare_metal", nodes=1)
    allocation.workload = Workload(os_image="ubuntu-24.04", cloud_init="#!/bin/sh\necho up\n").to_json()
    allocation.save(update_fields=["workload"])
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)
    assert state(allocation) == S.RUNNING
    allocation_stop(allocation=allocation, actor=SYSTEM)
    driver.release(allocation.pk)
    assert state(allocation) == S.STOPPED
    Allocation.objects.filter(pk=allocation.pk).update(state=S.STOPPING)  # the task ran again, from before
    driver.release(allocation.pk)  # the wipe had begun: not sent again
    [sent] = ended
    assert (sent["logs"], sent["checkpoint"]) == ("", None)  # the host's console is its BMC's, not the cluster's


def test_nothing_is_sent_without_a_workload(k8s_fleet: K8sServer, acme: Any, ended: list[dict[str, Any]]) -> None:
    allocation = place(acme, rung="container", gpus=1)
    running(k8s_fleet, allocation)
    allocation_stop(allocation=allocation, actor=SYSTEM)
    KubernetesProvisioner().release(allocation.pk)
    assert ended == []


def test_an_unreachable_cluster_during_release_sends_nothing_and_loses_nothing(
    k8s_fleet: K8sServer, acme: Any, ended: list[dict[str, Any]]
) -> None:
    allocation = with_workload(gang(acme))
    running(k8s_fleet, allocation)
    first, second = member(k8s_fleet, allocation, 0), member(k8s_fleet, allocation, 1)
    k8s_fleet.set_logs(NS, first, "worker", [(at(0), "rank 0")])
    k8s_fleet.set_logs(NS, second, "worker", [(at(1), "rank 1")])
    allocation_stop(allocation=allocation, actor=SYSTEM)
    driver = KubernetesProvisioner()
    k8s_fleet.fail_on[f"/pods/{second}/log$"] = 503  # the first member's log was read; the second's is not
    before = len(k8s_fleet.requests)
    with pytest.raises(ClusterUnavailable):
        driver.release(allocation.pk)
    assert ended == []
    assert only_reads(k8s_fleet, before)  # nothing torn down
    assert state(allocation) == S.STOPPING
    k8s_fleet.fail_on.clear()
    driver.release(allocation.pk)  # the task's retry
    [sent] = ended
    assert [line.split(" ", 1)[1] for line in sent["logs"].splitlines()] == ["[worker-0] rank 0", "[worker-1] rank 1"]


# --- the fake's log subresource, as the API server answers ------------------------------------------------------------


def test_the_log_subresource_answers_as_the_api_does(k8s_fleet: K8sServer, acme: Any) -> None:
    allocation = place(acme, rung="container", gpus=1)
    KubernetesProvisioner().provision(allocation.pk)
    two = pod(k8s_fleet, allocation, "two", ["worker", "sidecar"])
    k8s_fleet.set_logs(NS, two, "worker", [(at(0), "zero"), (at(1.25), "one"), (at(2), "two")])
    kube = Kube.connect(api_server=k8s_fleet.url, credentials={"token": K8S_TOKEN})

    assert kube.pod_log(NS, two, "worker") == (
        "2030-01-01T12:00:00Z zero\n2030-01-01T12:00:01.25Z one\n2030-01-01T12:00:02Z two\n"
    )
    assert kube.pod_log(NS, two, "worker", since=at(1), tail=1) == "2030-01-01T12:00:02Z two\n"
    assert kube.pod_log(NS, two, "worker", since=at(1.9)) == "2030-01-01T12:00:01.25Z one\n2030-01-01T12:00:02Z two\n"
    for container, status, says in (
        ("ghost", 400, "container ghost is not valid for pod two"),
        ("sidecar", 400, "is waiting to start"),
    ):
        with pytest.raises(ApiException) as refused:
            kube.pod_log(NS, two, container)
        assert (refused.value.status, says in refused.value.body) == (status, True)
    with pytest.raises(ApiException) as missing:
        kube.pod_log(NS, "nope", "worker")
    assert missing.value.status == 404

    auth = {"authorization": f"Bearer {K8S_TOKEN}"}
    path = f"/api/v1/namespaces/{NS}/pods/{two}/log"
    assert k8s_fleet.handle("GET", f"{path}?container=worker&tailLines=1", b"", auth) == (200, b"two\n", "text/plain")
    code, body, content_type = k8s_fleet.handle("GET", path, b"", auth)
    assert (code, content_type, b"choose one of: [worker sidecar]" in body) == (400, "application/json", True)
    k8s_fleet.delete_object("v1", "Pod", two, NS)
    assert k8s_fleet.handle("GET", f"{path}?container=worker", b"", auth)[0] == 404  # its logs went with it
