"""The placement engine on small fleets: each request shape, each refusal code, and the packing choices."""

import pytest

from provisioning.domain.placement.decision import Placement, Refused, Request, Share
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.isolation import Reason
from provisioning.domain.placement.offerings import offerings
from provisioning.domain.rungs import Performance, Rung, Security
from tests.support.placement_fleet import OLD, VERSIONS, fleet, policy

H100, H200 = "H100-SXM-80GB", "H200-141GB"


@pytest.fixture
def engine():
    return PlacementEngine(fleet())


def whole(n, *, rung=Rung.CONTAINER, models=(H100,), **kw):
    return Request(rung=rung, models=models, gpus=n, **kw)


def test_it_grants_both_axes_and_the_devices(engine):
    placed = engine.place(whole(2), policy(1))
    assert placed.performance is Performance.WHOLE_GPU
    assert placed.security is Security.CONTAINER
    assert len(placed.devices) == 2
    assert len({d.node_id for d in placed.devices}) == 1


def test_whole_gpus_go_best_fit(engine):
    first = engine.place(whole(6), policy(1))
    second = engine.place(whole(2), policy(2))
    assert second.devices[0].node_id == first.devices[0].node_id  # the 2 left on that node, not a fresh node


def test_best_fit_keeps_emptier_nvlink_domains_whole(engine):
    engine.place(whole(8), policy(1))  # fills one node of domain nvl-0
    one = engine.place(whole(1), policy(2))
    assert one.devices[0].hostname.endswith("n1")  # the other node of the already used domain


def test_a_gang_in_one_nvlink_domain_is_all_or_nothing(engine):
    gang = Request(rung=Rung.JOB, models=(H100,), gpus=8, gang_size=2, topology="nvlink")
    placed = engine.place(gang, policy(1))
    domains = {engine.state.nodes[d.node_id].nvlink_domain for d in placed.devices}
    assert len(placed.devices) == 16
    assert len(domains) == 1
    too_big = Request(rung=Rung.JOB, models=(H100,), gpus=8, gang_size=3, topology="nvlink")
    before = engine.state.tenant_milli[2]
    refused = engine.place(too_big, policy(2))
    assert isinstance(refused, Refused)
    assert refused.code is Reason.NO_CAPACITY
    assert engine.state.tenant_milli[2] == before


def test_a_skewed_node_never_joins_a_multi_node_gang():
    engine = PlacementEngine(fleet(h100_nodes=2, skewed=("eu-west-1a-h100-n1",)))
    gang = Request(rung=Rung.JOB, models=(H100,), gpus=8, gang_size=2, topology="nvlink")
    refused = engine.place(gang, policy(1, regions=frozenset({"eu-west"})))
    assert isinstance(refused, Refused)
    assert refused.code is Reason.VERSION_SKEW
    single_node = Request(rung=Rung.JOB, models=(H100,), gpus=4, gang_size=2, topology="nvlink")
    assert not isinstance(engine.place(single_node, policy(1, regions=frozenset({"eu-west"}))), Refused)


def test_mig_slices_pack_onto_partly_used_gpus_at_legal_starts(engine):
    first = engine.place(Request(rung=Rung.CONTAINER, models=(H100,), mig_profile="3g.40gb"), policy(1))
    second = engine.place(Request(rung=Rung.CONTAINER, models=(H100,), mig_profile="4g.40gb"), policy(2))
    assert first.devices[0].mig_start == 4
    assert (second.devices[0].gpu_uuid, second.devices[0].mig_start) == (first.devices[0].gpu_uuid, 0)


def test_a_dedicated_tenant_never_shares_a_gpu(engine):
    shared = engine.place(Request(rung=Rung.CONTAINER, models=(H100,), mig_profile="1g.10gb"), policy(1))
    mine = engine.place(
        Request(rung=Rung.CONTAINER, models=(H100,), mig_profile="1g.10gb"), policy(2, dedicated_hardware=True)
    )
    assert mine.devices[0].gpu_uuid != shared.devices[0].gpu_uuid
    third = engine.place(Request(rung=Rung.CONTAINER, models=(H100,), mig_profile="1g.10gb"), policy(3))
    assert third.devices[0].gpu_uuid != mine.devices[0].gpu_uuid


def test_soft_shares_stay_within_one_tenant(engine):
    share = Request(rung=Rung.SERVERLESS, models=(H100,), share=Share(Performance.TIME_SLICING, 250))
    a1 = engine.place(share, policy(1))
    a2 = engine.place(share, policy(1))
    b1 = engine.place(share, policy(2))
    assert a1.devices[0].gpu_uuid == a2.devices[0].gpu_uuid
    assert b1.devices[0].gpu_uuid != a1.devices[0].gpu_uuid


def test_a_confidential_vm_never_goes_to_a_host_whose_tee_is_unknown():
    state = fleet(cc_nodes=2)
    known, unknown = [n for n in state.nodes.values() if n.cc_mode]
    unknown.cpu_tee = None
    engine = PlacementEngine(state)
    cvm = whole(8, rung=Rung.CONFIDENTIAL_VM)
    first = engine.place(cvm, policy(1))
    assert isinstance(first, Placement)
    assert {d.node_id for d in first.devices} == {known.id}
    refused = engine.place(cvm, policy(2))
    assert isinstance(refused, Refused)
    assert refused.code is Reason.CC_TEE_UNKNOWN
    assert all(g.free for g in unknown.gpus)
    engine.release(first)
    again = engine.place(cvm, policy(2))
    assert isinstance(again, Placement)
    assert again.devices[0].node_id == known.id  # room on a known host again


def test_offerings_count_no_confidential_gpu_on_an_unknown_tee_host():
    state = fleet(cc_nodes=2)
    next(n for n in state.nodes.values() if n.cc_mode).cpu_tee = None
    [row] = [r for r in offerings(state) if (r.rung, r.gpu_model, r.region) == ("confidential_vm", H100, "eu-west")]
    assert row.available == 8


def test_confidential_vms_get_a_whole_cc_host_for_one_tenant(engine):
    cvm = whole(2, rung=Rung.CONFIDENTIAL_VM)
    first = engine.place(cvm, policy(1))
    node = engine.state.nodes[first.devices[0].node_id]
    assert node.cc_mode
    refused = engine.place(cvm, policy(2))
    assert isinstance(refused, Refused)
    again = engine.place(cvm, policy(1))
    assert again.devices[0].node_id == node.id
    assert not first.held_nodes  # the host is held by the tenant's GPUs on it, not by one VM (nor wiped after it)
    engine.release(first)
    assert node.holder == 1  # the tenant's other VM still runs there
    assert isinstance(engine.place(cvm, policy(2)), Refused)
    engine.release(again)
    assert node.holder is None
    assert not isinstance(engine.place(cvm, policy(2)), Refused)


def test_bare_metal_takes_whole_nodes_and_gives_them_back(engine):
    placed = engine.place(Request(rung=Rung.BARE_METAL, models=(H200,), nodes=2), policy(1))
    assert len(placed.held_nodes) == 2
    assert len(placed.devices) == 16
    assert isinstance(engine.place(whole(1, models=(H200,)), policy(2)), Refused)
    engine.release(placed)
    assert not isinstance(engine.place(whole(1, models=(H200,)), policy(2)), Refused)


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (Request(rung=Rung.VM, models=(H100,), share=Share(Performance.MPS, 500)), Reason.INVALID_ISOLATION),
        (Request(rung=Rung.JOB, models=(H100,), mig_profile="1g.10gb"), Reason.INVALID_ISOLATION),
        (Request(rung=Rung.CONTAINER, models=(H100,), nodes=1), Reason.INVALID_ISOLATION),
        (Request(rung=Rung.CONTAINER, models=(H100,), mig_profile="9g.999gb"), Reason.INVALID_ISOLATION),
        (Request(rung=Rung.CONTAINER, models=("A100-40GB",), gpus=1), Reason.NO_CAPACITY),
    ],
)
def test_it_refuses_what_the_ladder_does_not_offer(engine, request_, code):
    refused = engine.place(request_, policy(1))
    assert isinstance(refused, Refused)
    assert refused.code is code
    assert refused.message


def test_residency_and_fences(engine):
    us_only = policy(1, regions=frozenset({"us-east"}))
    placed = engine.place(whole(8), us_only)
    assert engine.state.nodes[placed.devices[0].node_id].hall.code == "us-east-1a"
    assert isinstance(engine.place(whole(1, models=(H200,)), us_only), Refused)
    sovereign = policy(2, jurisdiction="EU", sovereign=True)
    placed = engine.place(whole(8), sovereign)
    assert engine.state.nodes[placed.devices[0].node_id].hall.code == "eu-west-1b"
    refused = engine.place(whole(1, models=(H200,)), sovereign)
    assert refused.code is Reason.RESIDENCY


def test_quota_is_checked_before_placing(engine):
    refused = engine.place(whole(4), policy(1), quota_milli=3000)
    assert refused.code is Reason.QUOTA
    assert not isinstance(engine.place(whole(3), policy(1), quota_milli=3000), Refused)
    assert engine.place(whole(1), policy(1), quota_milli=3000).code is Reason.QUOTA


def grouped_fleet(layout):
    """One hall of H100 nodes, 8 GPUs each; ``layout`` lists (NVLink domain, RDMA fabric, versions) per node."""
    from provisioning.domain.placement.isolation import HallInfo
    from provisioning.domain.placement.state import FleetState

    state = FleetState()
    state.add_hall(HallInfo("h", "r", "EU", None))
    for node_id, (domain, fabric, versions) in enumerate(layout, start=1):
        state.add_node(
            id=node_id,
            hostname=f"n{node_id}",
            hall="h",
            model=H100,
            gpu_uuids=[f"g{node_id}-{i}" for i in range(8)],
            nvlink_domain=domain,
            versions=versions,
            fabric=fabric,
        )
    return state


def gang(per, members, topology=None):
    return Request(rung=Rung.JOB, models=(H100,), gpus=per, gang_size=members, topology=topology)


def refusal(result):
    assert isinstance(result, Refused), result
    return result


def groups_of(engine, placed):
    return {engine.state.nodes[d.node_id].gang_group for d in placed.devices}


@pytest.mark.parametrize("topology", [None, "nvlink"])
def test_a_gang_goes_to_the_tightest_group_whatever_its_version_set(topology):
    layout = [("d0", "f", OLD)] * 2 + [("d1", "f", VERSIONS)] * 3
    engine = PlacementEngine(grouped_fleet(layout))
    placed = engine.place(gang(8, 2, topology), policy(1))
    assert isinstance(placed, Placement)
    assert groups_of(engine, placed) == {("f", OLD)}  # the 2-node group, not the 3-node one
    again = engine.place(gang(8, 2, topology), policy(1))
    assert groups_of(engine, again) == {("f", VERSIONS)}


@pytest.mark.parametrize("topology", [None, "nvlink"])
def test_a_gang_never_spans_two_rdma_fabrics(topology):
    engine = PlacementEngine(grouped_fleet([("d0", "fab-a", VERSIONS), ("d0", "fab-b", VERSIONS)]))
    refused = refusal(engine.place(gang(8, 2, topology), policy(1)))
    assert refused.code is Reason.FABRIC_SPLIT
    assert "different RDMA fabrics" in refused.message
    assert "versions" not in refused.message
    assert engine.state.tenant_milli[1] == 0
    assert isinstance(engine.place(gang(4, 2, topology), policy(1)), Placement)  # one node holds it: trivially fine


@pytest.mark.parametrize("topology", [None, "nvlink"])
def test_nodes_without_rdma_gang_only_with_each_other(topology):
    engine = PlacementEngine(grouped_fleet([("d0", "", VERSIONS), ("d0", "fab-a", VERSIONS), ("d0", "", VERSIONS)]))
    assert refusal(engine.place(gang(8, 3, topology), policy(1))).code is Reason.FABRIC_SPLIT
    placed = engine.place(gang(8, 2, topology), policy(1))
    assert groups_of(engine, placed) == {("", VERSIONS)}


@pytest.mark.parametrize("topology", [None, "nvlink"])
def test_a_gang_that_fits_only_across_version_sets_is_refused_as_skew(topology):
    engine = PlacementEngine(grouped_fleet([("d0", "f", VERSIONS), ("d0", "f", OLD)]))
    refused = refusal(engine.place(gang(8, 2, topology), policy(1)))
    assert refused.code is Reason.VERSION_SKEW
    assert "versions differ" in refused.message


def test_a_gang_that_would_span_both_says_so_and_one_that_fits_nowhere_is_no_capacity():
    engine = PlacementEngine(grouped_fleet([("d0", "fab-a", VERSIONS), ("d0", "fab-b", OLD)]))
    refused = refusal(engine.place(gang(8, 2, "nvlink"), policy(1)))
    assert refused.code is Reason.FABRIC_SPLIT
    assert "versions" in refused.message
    assert refusal(engine.place(gang(8, 3, "nvlink"), policy(1))).code is Reason.NO_CAPACITY


def test_an_nvlink_gang_still_stays_in_one_domain_of_its_group():
    engine = PlacementEngine(grouped_fleet([("d0", "f", VERSIONS), ("d1", "f", VERSIONS)]))
    assert refusal(engine.place(gang(8, 2, "nvlink"), policy(1))).code is Reason.NO_CAPACITY
    placed = engine.place(gang(8, 2), policy(1))  # no topology: one group across domains is fine
    assert isinstance(placed, Placement)
    assert len({d.node_id for d in placed.devices}) == 2
