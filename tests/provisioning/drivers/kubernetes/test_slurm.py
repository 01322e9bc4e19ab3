"""A Slurm cluster bought on the job rung, end to end on the fake Kubernetes API server through the official client:
submitted through the API, its Slinky objects applied in the tenant's Slurm namespace, running once the gang's
slurmd nodes, slurmctld and the login node are ready, reached over SSH through the hall's gateway, its logs read,
metered like any gang (GPU-seconds = 16 x its running time), released, and nothing of it left in the cluster."""

from __future__ import annotations

import base64
import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from time_machine import TimeMachineFixture

from billing.domain.metering import to_ms
from billing.models import UsageInterval
from provisioning.drivers.base import allocations_reconcile
from provisioning.drivers.kubernetes.render import sanitize_job_name
from provisioning.drivers.kubernetes.render_slurm import LABEL_SLURM_ROLE
from provisioning.models import Allocation, Node
from tests.api.test_workloads import public_key
from tests.fakes.kubernetes import K8sServer

URL = "/api/v1/allocations"
NS = "ladder-acme-slurm"
SLINKY = "slinky.slurm.net/v1beta1"
READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}


@pytest.fixture
def clock(time_machine: TimeMachineFixture) -> Any:
    """A stopped clock the test moves: ``clock(seconds)`` goes to T0 + seconds, T0 five minutes into the hour (the
    few minutes the test moves through never cross an hour, where the ledger cuts intervals)."""
    start = datetime.now(UTC).replace(minute=5, second=0, microsecond=0)
    time_machine.move_to(start, tick=False)

    def move(seconds: float) -> datetime:
        moment = start + timedelta(seconds=seconds)
        time_machine.move_to(moment, tick=False)
        return moment

    move.start = start  # type: ignore[attr-defined]
    return move


OWNER = {"slurmd": "NodeSet", "slurmctld": "Controller", "login": "LoginSet"}


def pod(server: K8sServer, allocation_id: int, name: str, role: str, container: str) -> None:
    """A pod the operator would make from one of the cluster's objects (their template's labels, owned by it, so
    deleting the object deletes it), ready."""
    labels = {"ladder.io/allocation": str(allocation_id), LABEL_SLURM_ROLE: role}
    owner = server.get_object(SLINKY, OWNER[role], f"ldr-{allocation_id}", NS)
    assert owner is not None
    ref = {
        "apiVersion": SLINKY,
        "kind": OWNER[role],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    server.put_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": labels, "ownerReferences": [ref]},
            "spec": {"containers": [{"name": container, "image": "slinky"}]},
            "status": READY,
        }
    )


def state(allocation_id: int) -> str:
    return Allocation.objects.get(pk=allocation_id).state


def test_a_two_by_eight_slurm_cluster_runs_is_metered_and_leaves_nothing(
    api: Any, alice: Any, acme: Any, k8s_fleet: K8sServer, clock: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    key = client.post("/api/v1/ssh-keys", {"name": "laptop", "public_key": public_key()}, format="json").json()["id"]
    body = {
        "name": "my-slurm",
        "rung": "job",
        "gpu_model": "H100-SXM-80GB",
        "gpus": 8,
        "gang": {"size": 2, "topology": "nvlink"},
        "workload": {"framework": "slurm", "ssh_keys": [key]},
    }
    clock(0)
    with django_capture_on_commit_callbacks(execute=True):
        made = client.post(URL, body, format="json")
    assert made.status_code == 201, made.content
    allocation_id = made.json()["id"]
    name = f"ldr-{allocation_id}"
    placed = Allocation.objects.get(pk=allocation_id).devices.filter(active=True)
    assert placed.count() == 16

    # Applied: the Slurm namespace (privileged for Slinky), the Controller, the gang's NodeSet and the LoginSet.
    namespace = k8s_fleet.get_object("v1", "Namespace", NS)
    assert namespace is not None
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    nodeset = k8s_fleet.get_object(SLINKY, "NodeSet", name, NS)
    assert nodeset is not None
    assert nodeset["spec"]["replicas"] == 2
    hosts = nodeset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert hosts["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == sorted({d.hostname for d in placed})
    assert k8s_fleet.get_object(SLINKY, "Controller", name, NS) is not None
    assert k8s_fleet.get_object(SLINKY, "LoginSet", name, NS) is not None
    assert state(allocation_id) == "provisioning"
    # The cluster's key is in its Secret, never in what k8s_render prints for review.
    auth = k8s_fleet.get_object("v1", "Secret", f"{name}-slurm-auth", NS)
    assert auth is not None
    applied_key = base64.b64decode(auth["data"]["slurm.key"]).decode()
    assert len(applied_key) == 128
    out = io.StringIO()
    call_command("k8s_render", allocation=allocation_id, stdout=out)
    assert applied_key not in out.getvalue()
    assert auth["data"]["slurm.key"] not in out.getvalue()
    assert base64.b64encode(b"<slurm auth key>").decode() in out.getvalue()

    # The gang's slurmd nodes ready, but not yet slurmctld nor the login node: still provisioning.
    clock(5)
    k8s_fleet.set_status(SLINKY, "nodesets", name, NS, {"nodeSetHash": "h", "selector": "s", "readyReplicas": 2})
    for i in (0, 1):
        pod(k8s_fleet, allocation_id, f"{name}-{i}", "slurmd", "slurmd")
    allocations_reconcile()
    assert state(allocation_id) == "provisioning"
    assert not UsageInterval.objects.filter(allocation_id=allocation_id).exists()

    clock(10)
    k8s_fleet.set_status(SLINKY, "loginsets", name, NS, {"replicas": 1, "selector": "s"})
    pod(k8s_fleet, allocation_id, f"{name}-controller-0", "slurmctld", "slurmctld")
    pod(k8s_fleet, allocation_id, f"{name}-login-7c9f", "login", "login")
    allocations_reconcile()
    got = client.get(f"{URL}/{allocation_id}").json()
    assert got["state"] == "running", got
    assert got["access"]["ssh"]["command"] == f"ssh {name}@ssh.{got['hall']}.ladder.localhost"
    route = k8s_fleet.get_object("v1", "Service", f"{name}-ssh", NS)
    assert route is not None
    assert route["spec"]["selector"] == {"ladder.io/allocation": str(allocation_id), LABEL_SLURM_ROLE: "login"}
    assert route["metadata"]["annotations"]["ladder.io/ssh-login"] == "root"

    written = clock.start + timedelta(seconds=12)
    k8s_fleet.set_logs(NS, f"{name}-0", "slurmd", [(written, "slurmd started")])
    k8s_fleet.set_logs(NS, f"{name}-controller-0", "slurmctld", [(written + timedelta(seconds=1), "slurmctld up")])
    lines = client.get(f"{URL}/{allocation_id}/logs").json()["lines"]
    assert [line["text"] for line in lines] == ["slurmd started", "slurmctld up"]

    clock(610)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"{URL}/{allocation_id}").status_code == 200
    k8s_fleet.tick()
    allocations_reconcile()
    assert state(allocation_id) == "stopped"

    # Metered from running (T0 + 10 s) to the stop (T0 + 610 s): 16 GPUs x 600 s.
    base = to_ms(clock.start)
    (interval,) = UsageInterval.objects.filter(allocation_id=allocation_id)
    assert interval.end_ms is not None
    assert (interval.start_ms - base, interval.end_ms - base) == (10_000, 610_000)
    assert interval.units_milli == 16_000
    assert interval.quantity_milli == 16 * 600 * 1000

    left = [
        o for o in k8s_fleet.objects(namespace=NS) if (o["metadata"].get("labels") or {}).get("ladder.io/allocation")
    ]
    assert [(o["kind"], o["metadata"]["name"]) for o in left] == []

    # slurmd ran as root with host capabilities: its two hosts are wiped before another tenant gets them.
    hosts = sorted(set(Allocation.objects.get(pk=allocation_id).devices.values_list("hostname", flat=True)))
    assert len(hosts) == 2
    assert dict(Node.objects.filter(hostname__in=hosts).values_list("hostname", "state")) == {
        host: "sanitizing" for host in hosts
    }
    wipes = [k8s_fleet.get_object("batch/v1", "Job", sanitize_job_name(host), "ladder-system") for host in hosts]
    assert all(wipe is not None for wipe in wipes)
    clock(700)
    for host in hosts:
        done = {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}
        k8s_fleet.set_status("batch/v1", "jobs", sanitize_job_name(host), "ladder-system", done)
    allocations_reconcile()
    assert set(Node.objects.filter(hostname__in=hosts).values_list("state", flat=True)) == {"ready"}
