"""A 2x8 torchrun job on RDMA nodes through the Kubernetes driver and the fake API server: its
NetworkAttachmentDefinitions are applied before its Job and gone after release, its members carry the fabric's
interfaces, VFs and NCCL environment, and its API representation states the fabric with the tenant's partition key
(another tenant never sees it, and the next tenant on the hosts gets its own)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from provisioning.domain.fleet_document import Nic, Rdma
from provisioning.domain.states import AllocationState as S
from provisioning.drivers.kubernetes.driver import KubernetesProvisioner
from provisioning.models import Node
from tests.fakes.kubernetes import K8sServer
from tests.support.kubernetes import H100, gang_up, job, place, state


@pytest.fixture
def rdma_fleet(k8s_fleet: K8sServer) -> K8sServer:
    """Every H100 host on one InfiniBand fabric per hall, eight rails, NIC i beside GPU i."""
    for node in Node.objects.filter(gpu_model__name=H100).select_related("hall"):
        fabric = f"{node.hall.code}/ib-0"
        nics = tuple(Nic(f"mlx5_{i}", i, (i,)) for i in range(8))
        node.rdma = Rdma(fabric=fabric, link_layer="infiniband", nics=nics).as_json()
        node.fabric = fabric
        node.save(update_fields=["rdma", "fabric"])
    return k8s_fleet


def nads(server: K8sServer, namespace: str) -> list[dict[str, Any]]:
    return server.objects(kind="NetworkAttachmentDefinition", namespace=namespace)


def test_a_2x8_job_on_rdma_nodes_gets_its_fabric_and_loses_it_on_release(
    rdma_fleet: K8sServer, acme: Any, globex: Any, alice: Any, charlie: Any, api: Any
) -> None:
    allocation = place(acme, rung="job", gpus=8, gang_size=2)
    assert len({d.hostname for d in allocation.devices.all()}) == 2
    driver = KubernetesProvisioner()
    driver.provision(allocation.pk)

    found = nads(rdma_fleet, "ladder-acme")
    assert sorted(n["metadata"]["name"] for n in found) == sorted(f"ldr-{allocation.pk}-rail{r}" for r in range(8))
    pkey = f"0x{0x8000 | acme.pk:04x}"
    assert {json.loads(n["spec"]["config"])["pkey"] for n in found} == {pkey}
    template = job(rdma_fleet, allocation)["spec"]["template"]
    networks = json.loads(template["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"])
    assert [n["interface"] for n in networks] == [f"rail{r}" for r in range(8)]
    container = template["spec"]["containers"][0]
    assert container["resources"]["limits"]["rdma.ladder.io/rail0"] == "1"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NCCL_IB_HCA"] == "mlx5"
    assert env["LADDER_FABRIC_ISOLATION"] == f"partition_key={pkey}"

    gang_up(rdma_fleet, allocation)
    driver.status(allocation.pk)
    assert state(allocation) == S.RUNNING

    answer = api(alice).get(f"/api/v1/allocations/{allocation.pk}")
    assert answer.status_code == 200
    fabric = answer.json()["fabric"]
    assert fabric["link_layer"] == "infiniband"
    assert fabric["isolation"] == {"kind": "partition_key", "value": pkey}
    assert fabric["rails"] == list(range(8))
    assert sorted(n["hostname"] for n in fabric["nodes"]) == sorted({d.hostname for d in allocation.devices.all()})
    assert fabric["nodes"][0]["nics"][3] == {"device": "mlx5_3", "rail": 3, "gpus": [3]}
    assert api(charlie).get(f"/api/v1/allocations/{allocation.pk}").status_code == 404  # another tenant's

    api(alice).delete(f"/api/v1/allocations/{allocation.pk}")
    driver.release(allocation.pk)
    rdma_fleet.tick()  # foreground deletion finishes
    driver.status(allocation.pk)
    assert state(allocation) == S.STOPPED
    assert nads(rdma_fleet, "ladder-acme") == []

    # The next tenant on the same hosts is fenced in its own partition, never the one before.
    theirs = place(globex, rung="job", gpus=8, gang_size=2)
    driver.provision(theirs.pk)
    their_keys = {json.loads(n["spec"]["config"])["pkey"] for n in nads(rdma_fleet, "ladder-globex")}
    assert their_keys == {f"0x{0x8000 | globex.pk:04x}"}
    assert pkey not in their_keys


def test_a_single_node_job_has_no_fabric(rdma_fleet: K8sServer, acme: Any, alice: Any, api: Any) -> None:
    allocation = place(acme, rung="job", gpus=8)
    assert len({d.hostname for d in allocation.devices.all()}) == 1
    KubernetesProvisioner().provision(allocation.pk)
    assert nads(rdma_fleet, "ladder-acme") == []
    assert api(alice).get(f"/api/v1/allocations/{allocation.pk}").json()["fabric"] is None


def test_the_answer_to_a_placement_states_the_fabric_as_a_read_does(
    rdma_fleet: K8sServer, acme: Any, alice: Any, api: Any
) -> None:
    client = api(alice)
    body = {"name": "train", "rung": "job", "gpus": 8, "gang": {"size": 2}, "gpu_models": [H100]}
    created = client.post("/api/v1/allocations", body, format="json")
    assert created.status_code == 201, created.json()
    read = client.get(f"/api/v1/allocations/{created.json()['id']}").json()
    assert created.json()["fabric"] == read["fabric"]
    assert read["fabric"]["name"].endswith("/ib-0")
