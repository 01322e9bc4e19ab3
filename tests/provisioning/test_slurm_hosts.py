"""The hosts a Slurm cluster ran on (slurmd as root with host capabilities) are wiped before another tenant gets
them: after its release, and after a node fault moved the gang off some of them."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.drivers.base import SimulatedProvisioner
from provisioning.models import Allocation, Node
from provisioning.services.fleet import fleet_load, node_fail
from tests.api.test_workloads import public_key
from tests.support import SYSTEM
from tests.support.fleet_documents import node, small_fleet

URL = "/api/v1/allocations"


@pytest.fixture
def four_hosts(db: Any) -> None:
    """Four 8-GPU H100 hosts in one NVLink domain: room for a 2 x 8 Slurm cluster and for it to move."""
    document = small_fleet()
    document["regions"][0]["halls"][0]["nodes"] = [node(f"h{i}", "eu-west-1a/nvl-0") for i in range(1, 5)]
    fleet_load(document=document, actor=SYSTEM)


def slurm_cluster(client: Any) -> dict[str, Any]:
    key = client.post("/api/v1/ssh-keys", {"name": "laptop", "public_key": public_key()}, format="json").json()["id"]
    body = {
        "name": "cluster",
        "rung": "job",
        "gpu_model": "H100-SXM-80GB",
        "gpus": 8,
        "gang": {"size": 2, "topology": "nvlink"},
        "workload": {"framework": "slurm", "ssh_keys": [key]},
    }
    made = client.post(URL, body, format="json")
    assert made.status_code == 201, made.content
    return dict(made.json())


def states(hosts: set[str]) -> dict[str, tuple[str, bool]]:
    return {n.hostname: (n.state, n.sanitize_required) for n in Node.objects.filter(hostname__in=hosts)}


def test_the_hosts_a_fault_moved_a_slurm_cluster_off_are_wiped(
    api: Any, alice: Any, four_hosts: None, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    cluster = slurm_cluster(client)
    before = {d["node"] for d in cluster["devices"]}
    failed = sorted(before)[0]
    with django_capture_on_commit_callbacks(execute=True):
        node_fail(
            node=Node.objects.get(hostname=failed), actor=SYSTEM, last_checkpoint=SimulatedProvisioner().last_checkpoint
        )
    after = {d.hostname for d in Allocation.objects.get(pk=cluster["id"]).devices.filter(active=True)}
    assert len(after) == 2
    assert failed not in after
    found = states(before | after)
    assert found[failed] == ("failed", True)  # wiped on its way back from repair
    left = before - after - {failed}
    assert left  # the gang moved off its healthy host too (this fleet's placement takes two free hosts)
    for host in left:
        assert found[host] == ("sanitizing", True)
    for host in after:
        assert found[host] == ("ready", False)  # the gang's own hosts now: nobody else's yet


def test_the_hosts_of_a_released_slurm_cluster_are_wiped_and_a_container_leaves_none(
    api: Any, alice: Any, four_hosts: None, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    cluster = slurm_cluster(client)
    hosts = {d["node"] for d in cluster["devices"]}
    container = client.post(
        URL, {"name": "box", "rung": "container", "gpu_model": "H100-SXM-80GB", "gpus": 8}, format="json"
    ).json()
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"{URL}/{cluster['id']}").status_code == 200
        assert client.delete(f"{URL}/{container['id']}").status_code == 200
    assert states(hosts) == {host: ("sanitizing", True) for host in hosts}
    box = {d["node"] for d in container["devices"]}
    assert states(box) == {host: ("ready", False) for host in box}
