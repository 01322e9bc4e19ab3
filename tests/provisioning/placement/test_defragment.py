"""The defragmentation planner consolidates restartable jobs and never touches what may not move."""

from provisioning.placement.defragment import plan_defragmentation
from provisioning.placement.engine import Placement, PlacementEngine, Request
from provisioning.placement.fragmentation import fragmentation
from provisioning.placement.isolation import Rung
from tests.support.placement_fleet import fleet, policy

H100 = "H100-SXM-80GB"


def placed(engine, request, tenant) -> Placement:
    result = engine.place(request, policy(tenant))
    assert isinstance(result, Placement)
    return result


def scattered():
    state = fleet(h100_nodes=2, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0)
    engine = PlacementEngine(state)
    a = placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), gpus=6), 1)  # node 1: 2 free
    b = placed(engine, Request(rung=Rung.JOB, models=(H100,), gpus=4), 2)  # node 2: 4 free
    c = placed(engine, Request(rung=Rung.JOB, models=(H100,), gpus=2), 3)  # fills node 1 (best fit)
    engine.release(c)
    return state, {1: a, 2: b}


def test_it_moves_a_job_to_free_a_whole_node():
    state = fleet(h100_nodes=2, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0)
    engine = PlacementEngine(state)
    a = placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), gpus=5), 1)
    b = placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), gpus=8), 1)
    x = placed(engine, Request(rung=Rung.JOB, models=(H100,), gpus=2), 2)
    engine.release(b)
    y = placed(engine, Request(rung=Rung.JOB, models=(H100,), gpus=2), 3)  # lands on the empty node
    engine.release(x)  # now: node 1 has 3 free, node 2 holds only y
    assert y.devices[0].node_id != a.devices[0].node_id
    plan = plan_defragmentation(state, {1: a, 3: y}, restartable={3})
    assert [(m.allocation_id, m.gpus) for m in plan.moves] == [(3, 2)]
    assert plan.moves[0].to_nodes == [a.devices[0].hostname]
    before = {p.hall: p for p in fragmentation(plan.before)}["eu-west-1a"]
    after = {p.hall: p for p in fragmentation(plan.after)}["eu-west-1a"]
    assert after.free_gpus == before.free_gpus
    assert sum(1 for n in plan.after.nodes.values() if n.free == 8) == 1
    assert sum(1 for n in plan.before.nodes.values() if n.free == 8) == 0


def test_it_leaves_a_job_where_moving_it_gains_nothing():
    state, placements = scattered()
    plan = plan_defragmentation(state, placements, restartable={2})
    assert plan.moves == []


def test_it_never_moves_what_is_not_restartable_and_leaves_the_fleet_alone():
    state, placements = scattered()
    plan = plan_defragmentation(state, placements, restartable=set())
    assert plan.moves == []
    assert plan.before is state
    assert [g.whole_tenant for n in state.nodes.values() for g in n.gpus] == [
        g.whole_tenant for n in plan.after.nodes.values() for g in n.gpus
    ]
