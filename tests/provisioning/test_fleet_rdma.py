"""A fleet document's RDMA NICs: what each node declares, the rules it must follow, and what is stored."""

from __future__ import annotations

from typing import Any

import pytest

from core.actor import Actor
from provisioning.domain.fleet_document import Nic, Rdma, check, format_path
from provisioning.models import Node
from provisioning.services.fleet import FleetDocumentInvalid, fleet_load
from tests.support.fleet_documents import DELETE, changed, small_fleet

pytestmark = pytest.mark.django_db

ACTOR = Actor.system("tests")
NODE = "regions.0.halls.0.nodes.0"
NODE_PATH = "regions[0].halls[0].nodes[0]"


def rdma(fabric: str = "eu-west-1a/ib-0", link_layer: str = "infiniband", nics: int = 8) -> dict[str, Any]:
    """One NIC per GPU, rail i for GPU i, as an H100 HGX node is cabled to a rail-optimised fabric."""
    return {
        "fabric": fabric,
        "link_layer": link_layer,
        "nics": [{"device": f"mlx5_{i}", "rail": i, "gpus": [i]} for i in range(nics)],
    }


def with_rdma() -> dict[str, Any]:
    document = changed(small_fleet(), f"{NODE}.rdma", rdma())
    return changed(document, "regions.0.halls.0.nodes.1.rdma", rdma())


def reasons_of(document: dict[str, Any]) -> dict[str, str]:
    spec, reasons = check(document)
    assert spec is None
    return {format_path(r.path): r.message for r in reasons}


def test_the_nics_are_read_and_stored_with_their_fabric() -> None:
    spec, reasons = check(with_rdma())
    assert reasons == []
    assert spec is not None
    first = next(n for _, n in spec.nodes() if n.hostname == "euw1a-01")
    assert first.rdma == Rdma("eu-west-1a/ib-0", "infiniband", tuple(Nic(f"mlx5_{i}", i, (i,)) for i in range(8)))
    fleet_load(document=with_rdma(), actor=ACTOR)
    node = Node.objects.get(hostname="euw1a-01")
    assert node.fabric == "eu-west-1a/ib-0"
    assert Rdma.from_json(node.rdma) == first.rdma
    assert Node.objects.get(hostname="euw1a-03").rdma == {}  # no NICs declared: none
    assert Node.objects.get(hostname="euw1a-03").fabric == ""


def test_a_node_that_loses_its_nics_in_the_document_loses_them_in_the_fleet() -> None:
    fleet_load(document=with_rdma(), actor=ACTOR)
    fleet_load(document=changed(with_rdma(), f"{NODE}.rdma", DELETE), actor=ACTOR)
    node = Node.objects.get(hostname="euw1a-01")
    assert (node.rdma, node.fabric) == ({}, "")
    assert Node.objects.get(hostname="euw1a-02").fabric == "eu-west-1a/ib-0"


@pytest.mark.parametrize(
    ("path", "value", "where", "message"),
    [
        ("rdma.link_layer", "ethernet", "rdma.link_layer", 'must be "infiniband" or "roce", not "ethernet"'),
        ("rdma.link_layer", DELETE, "rdma.link_layer", "is required"),
        ("rdma.fabric", "ib 0", "rdma.fabric", "1 to 100 characters without spaces"),
        ("rdma.nics", [], "rdma.nics", "must list 1 to 16 NICs, not 0"),
        ("rdma.nics.1.device", "mlx5_0", "rdma.nics[1].device", 'device "mlx5_0" is listed twice'),
        ("rdma.nics.1.device", "MLX5-1", "rdma.nics[1].device", "an RDMA device name such as mlx5_0"),
        ("rdma.nics.1.rail", 0, "rdma.nics[1].rail", "rail 0 is taken by another NIC"),
        ("rdma.nics.1.rail", -1, "rdma.nics[1].rail", "must be a whole number 0 to 63, not -1"),
        ("rdma.nics.1.gpus", [8], "rdma.nics[1].gpus", "must list GPU indexes of this node (0 to 7), not [8]"),
        ("rdma.nics.1.port", 1, "rdma.nics[1].port", "unknown field"),
        ("rdma.subnet", "x", "rdma.subnet", "unknown field"),
        ("rdma", "ib", "rdma", "must be an object, not a string"),
    ],
)
def test_a_bad_nic_is_named_by_its_path(path: str, value: Any, where: str, message: str) -> None:
    reasons = reasons_of(changed(with_rdma(), f"{NODE}.{path}", value))
    assert message in reasons[f"{NODE_PATH}.{where}"], reasons
    assert len(reasons) == 1, reasons


def test_a_fabric_stays_in_one_hall_and_one_link_layer() -> None:
    # The us-east node cabled to eu-west's fabric: a fabric is wired inside one hall.
    document = changed(with_rdma(), "regions.1.halls.0.nodes.0.rdma", rdma())
    assert "a fabric cannot span halls" in reasons_of(document)["regions[1].halls[0].nodes[0].rdma.fabric"]
    document = changed(with_rdma(), "regions.0.halls.0.nodes.1.rdma", rdma(link_layer="roce"))
    assert "one fabric has one link layer" in reasons_of(document)["regions[0].halls[0].nodes[1].rdma.link_layer"]


def test_a_refused_nic_loads_nothing() -> None:
    document = changed(with_rdma(), f"{NODE}.rdma.nics.1.rail", 0)
    with pytest.raises(FleetDocumentInvalid):
        fleet_load(document=document, actor=ACTOR)
    assert not Node.objects.exists()


def test_operators_read_a_nodes_nics(api: Any, operator: Any) -> None:
    fleet_load(document=with_rdma(), actor=ACTOR)
    node = Node.objects.get(hostname="euw1a-01")
    body = api(operator).get(f"/api/v1/ops/nodes/{node.pk}").json()
    assert body["rdma"]["fabric"] == "eu-west-1a/ib-0"
    assert body["rdma"]["nics"][3] == {"device": "mlx5_3", "rail": 3, "gpus": [3]}
    plain = Node.objects.get(hostname="euw1a-03")
    assert api(operator).get(f"/api/v1/ops/nodes/{plain.pk}").json()["rdma"] is None
