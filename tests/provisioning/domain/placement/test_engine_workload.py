"""The engine's fragmentation policy against its best-fit policy: where the workload it has seen changes a choice."""

import pytest

from provisioning.domain.placement.decision import Placement, Refused, Request, Share
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.workload import Shape
from provisioning.domain.rungs import Performance, Rung
from tests.support.placement_fleet import fleet, policy

H100, H200 = "H100-SXM-80GB", "H200-141GB"
EU = frozenset({"eu-west"})


def whole(n, models=(H100,)):
    return Request(rung=Rung.CONTAINER, models=models, gpus=n)


def placed(result: Placement | Refused) -> Placement:
    assert isinstance(result, Placement), result
    return result


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="unknown placement policy"):
        PlacementEngine(fleet(), policy="worst-fit")


def test_every_request_the_engine_sees_is_counted_in_the_pools_it_accepts():
    engine = PlacementEngine(fleet())
    engine.place(whole(2, (H100, H200)), policy(1, regions=EU))
    view = engine.state.workload.snapshot()
    for key in (("H100-SXM-80GB", "eu-west-1a"), ("H200-141GB", "eu-west-1a")):
        assert view.pool(key).whole_above[1] == 1.0  # the one request asked for more than one GPU
    assert view.pool(("H100-SXM-80GB", "us-east-1a")).excluded == 1.0  # outside the tenant's regions


def test_a_request_that_accepts_either_model_leaves_the_one_constrained_requests_need():
    def run(placement_policy):
        engine = PlacementEngine(fleet(h100_nodes=2, h200_nodes=2, cc_nodes=0), policy=placement_policy)
        for tenant in range(1, 5):  # a workload where half the requests can only use H200
            assert isinstance(engine.place(whole(1, (H200,)), policy(tenant, regions=EU)), Placement)
            assert isinstance(engine.place(whole(1, (H200, H100)), policy(tenant, regions=EU)), Placement)
        return placed(engine.place(whole(1, (H200, H100)), policy(9, regions=EU)))

    assert run("best-fit").model == H200  # the customer's first acceptable model
    assert run("fragmentation").model == H100  # H200 is what the constrained half cannot do without


def test_a_single_gpu_keeps_the_hole_the_workload_asks_for():
    def run(placement_policy):
        engine = PlacementEngine(fleet(h100_nodes=2, h200_nodes=0, cc_nodes=0), policy=placement_policy)
        eu = policy(1, regions=EU)
        four = placed(engine.place(whole(4), eu))
        rest = placed(engine.place(whole(4), eu))  # node A full
        three = placed(engine.place(whole(3), eu))  # node B: 5 free
        engine.release(rest)  # node A: 4 free
        assert four.devices[0].node_id != three.devices[0].node_id
        for _ in range(20):  # the workload asks for 4 GPUs at a time
            engine.state.workload.observe([(("H100-SXM-80GB", "eu-west-1a"), Shape(gpus=4))], 4000, False)
        engine.state.workload.snapshot()
        one = placed(engine.place(whole(1), eu))
        return one.devices[0].node_id, four.devices[0].node_id, three.devices[0].node_id

    chosen, a, _ = run("best-fit")
    assert chosen == a  # fewest free GPUs: node A, whose 4 free GPUs were what a 4-GPU request needed
    chosen, a, b = run("fragmentation")
    assert chosen == b  # node B goes from 5 to 4 free, node A keeps its 4


def test_soft_shares_still_stay_with_their_tenant():
    engine = PlacementEngine(fleet(h100_nodes=1, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0))
    share = Request(rung=Rung.SERVERLESS, models=(H100,), share=Share(Performance.FRACTIONAL, 300))
    mine = placed(engine.place(share, policy(1)))
    theirs = placed(engine.place(share, policy(2)))
    again = placed(engine.place(share, policy(1)))
    assert theirs.devices[0].gpu_uuid != mine.devices[0].gpu_uuid
    assert again.devices[0].gpu_uuid == mine.devices[0].gpu_uuid  # the tenant's own GPU with room
