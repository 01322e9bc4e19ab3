"""Fragmentation figures: free GPUs, stranded MIG slices, the largest gang per NVLink domain."""

from provisioning.domain.placement.decision import Request
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.fragmentation import fragmentation
from provisioning.domain.placement.state import FleetState
from provisioning.domain.rungs import Rung
from tests.support.placement_fleet import fleet, policy

H100 = "H100-SXM-80GB"


def pool(state, hall="eu-west-1a", model=H100):
    return next(p for p in fragmentation(state) if (p.model, p.hall) == (model, hall))


def test_an_empty_fleet_is_all_free_and_gang_ready():
    state = fleet(h100_nodes=4, per_domain=2, cc_nodes=0)
    figures = pool(state)
    assert (figures.gpus, figures.free_gpus, figures.unallocated_gpus, figures.stranded_mig_slices) == (32, 32, 32, 0)
    assert set(figures.largest_gang_gpus.values()) == {16}


def test_two_3g_slices_strand_a_compute_slice():
    state = fleet(h100_nodes=1, cc_nodes=0)
    engine = PlacementEngine(state)
    for _ in range(2):
        engine.place(Request(rung=Rung.CONTAINER, models=(H100,), mig_profile="3g.40gb"), policy(1))
    figures = pool(state)
    assert figures.stranded_mig_slices == 1
    assert figures.free_gpus == 7
    assert abs(figures.unallocated_gpus - (7 + 1 / 7)) < 0.01


def test_a_skewed_node_shrinks_the_largest_multi_node_gang():
    state = fleet(h100_nodes=2, per_domain=2, cc_nodes=0, skewed=("eu-west-1a-h100-n1",))
    assert set(pool(state).largest_gang_gpus.values()) == {8}


def test_a_domain_split_between_fabrics_fits_the_largest_gang_of_one_fabric():
    state = fleet(h100_nodes=4, per_domain=4, cc_nodes=0)
    nodes = sorted(
        (n for n in state.nodes.values() if n.hall.code == "eu-west-1a" and n.model == H100), key=lambda n: n.id
    )
    fresh = FleetState()  # the same nodes again, three on one fabric and one on another
    for hall in state.halls.values():
        fresh.add_hall(hall)
    for i, n in enumerate(nodes):
        fresh.add_node(
            id=n.id,
            hostname=n.hostname,
            hall=n.hall.code,
            model=n.model,
            gpu_uuids=[g.uuid for g in n.gpus],
            nvlink_domain=n.nvlink_domain,
            versions=n.versions,
            fabric="ib-1" if i == 3 else "ib-0",
        )
    assert set(pool(fresh).largest_gang_gpus.values()) == {24}
