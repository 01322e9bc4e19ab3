"""The defragmentation planner consolidates movable work (jobs, serverless replicas, MIG slices and soft shares),
never touches what may not move, and a planned move is checked again against the live fleet."""

import copy

from provisioning.domain.placement.decision import Placement, Request, Share
from provisioning.domain.placement.defragment import move_check, plan_defragmentation
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.fragmentation import fragmentation
from provisioning.domain.rungs import Performance, Rung
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
    plan = plan_defragmentation(state, {1: a, 3: y}, movable={3: "job"})
    assert [(m.allocation_id, m.gpus) for m in plan.moves] == [(3, 2)]
    assert plan.moves[0].to_nodes == [a.devices[0].hostname]
    before = {p.hall: p for p in fragmentation(plan.before)}["eu-west-1a"]
    after = {p.hall: p for p in fragmentation(plan.after)}["eu-west-1a"]
    assert after.free_gpus == before.free_gpus
    assert sum(1 for n in plan.after.nodes.values() if n.free == 8) == 1
    assert sum(1 for n in plan.before.nodes.values() if n.free == 8) == 0


def test_it_leaves_a_job_where_moving_it_gains_nothing():
    state, placements = scattered()
    plan = plan_defragmentation(state, placements, movable={2: "job"})
    assert plan.moves == []


def test_it_never_moves_what_is_not_restartable_and_leaves_the_fleet_alone():
    state, placements = scattered()
    plan = plan_defragmentation(state, placements, movable={})
    assert plan.moves == []
    assert plan.before is state
    assert [g.whole_tenant for n in state.nodes.values() for g in n.gpus] == [
        g.whole_tenant for n in plan.after.nodes.values() for g in n.gpus
    ]


def test_the_plan_of_a_move_says_how_it_moves_and_holds_both_placements():
    state = fleet(h100_nodes=2, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0)
    engine = PlacementEngine(state)
    a = placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), gpus=5), 1)
    s = placed(engine, Request(rung=Rung.SERVERLESS, models=(H100,), gpus=1), 2)
    filler = placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), gpus=2), 1)  # the first node is full
    t = placed(engine, Request(rung=Rung.SERVERLESS, models=(H100,), gpus=1), 2)  # alone on the second node
    engine.release(filler)
    assert t.devices[0].node_id != a.devices[0].node_id
    plan = plan_defragmentation(state, {1: a, 2: s, 3: t}, movable={2: "serverless", 3: "serverless"})
    assert [(m.allocation_id, m.kind) for m in plan.moves] == [(3, "serverless")]
    move = plan.moves[0]
    assert move.before == t
    assert move.after.devices[0].node_id == a.devices[0].node_id
    assert move.after.tenant_id == t.tenant_id
    assert move.after.performance is Performance.WHOLE_GPU


def mig_scatter():
    """Two H100s each with one tenant's 3g slice and one 1g slice of other tenants: one GPU can take them all."""
    state = fleet(h100_nodes=1, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0)
    engine = PlacementEngine(state)
    a = placed(engine, Request(rung=Rung.SERVERLESS, models=(H100,), mig_profile="3g.40gb"), 1)
    filler = placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), mig_profile="4g.40gb"), 3)
    b = placed(engine, Request(rung=Rung.SERVERLESS, models=(H100,), mig_profile="1g.10gb"), 2)  # a fresh GPU
    engine.release(filler)
    return state, engine, {1: a, 2: b}


def test_it_re_lays_out_mig_slices_to_empty_a_gpu():
    state, _, placements = mig_scatter()
    a, b = placements[1], placements[2]
    assert a.devices[0].gpu_uuid != b.devices[0].gpu_uuid
    plan = plan_defragmentation(state, placements, movable={1: "serverless", 2: "serverless"})
    assert [m.allocation_id for m in plan.moves] == [2]  # the emptier GPU is emptied
    after = plan.moves[0].after.devices[0]
    assert after.gpu_uuid == a.devices[0].gpu_uuid
    assert after.mig_profile == "1g.10gb"
    start = a.devices[0].mig_start
    assert after.mig_start is not None
    assert not start <= after.mig_start < start + 4
    old_gpu = plan.after.nodes[b.devices[0].node_id].gpus[b.devices[0].gpu_index]
    assert old_gpu.free
    # The live fleet is untouched, and the planned move is still sound there.
    assert not state.nodes[b.devices[0].node_id].gpus[b.devices[0].gpu_index].free
    live = copy.deepcopy(state)
    PlacementEngine(live).release(b)
    assert move_check(live, plan.moves[0].after) is None


def test_it_moves_only_what_may_move_and_never_empties_a_gpu_by_halves():
    state, _, placements = mig_scatter()
    assert plan_defragmentation(state, placements, movable={}).moves == []
    plan = plan_defragmentation(state, placements, movable={1: "serverless"})  # the 1g slice stays
    assert [m.allocation_id for m in plan.moves] == [1]  # so the 3g slice joins it, emptying its own GPU
    assert plan.moves[0].after.devices[0].gpu_uuid == placements[2].devices[0].gpu_uuid


def test_it_never_re_lays_a_slice_onto_a_gpu_of_a_tenant_with_dedicated_hardware():
    state = fleet(h100_nodes=1, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0)
    engine = PlacementEngine(state)
    dedicated = engine.place(
        Request(rung=Rung.SERVERLESS, models=(H100,), mig_profile="3g.40gb"), policy(1, dedicated_hardware=True)
    )
    assert isinstance(dedicated, Placement)
    filler = placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), mig_profile="4g.40gb"), 3)
    b = placed(engine, Request(rung=Rung.SERVERLESS, models=(H100,), mig_profile="1g.10gb"), 2)
    engine.release(filler)
    plan = plan_defragmentation(state, {1: dedicated, 2: b}, movable={1: "serverless", 2: "serverless"})
    assert all(m.after.devices[0].gpu_uuid != dedicated.devices[0].gpu_uuid for m in plan.moves if m.allocation_id == 2)


def test_it_gathers_a_tenants_soft_shares_onto_fewer_gpus_and_never_onto_anothers():
    state = fleet(h100_nodes=1, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0)
    engine = PlacementEngine(state)
    share = Share(Performance.TIME_SLICING, 600)
    first = placed(engine, Request(rung=Rung.SERVERLESS, models=(H100,), share=share), 1)
    second = placed(engine, Request(rung=Rung.SERVERLESS, models=(H100,), share=share), 1)  # no room: a new GPU
    other = placed(engine, Request(rung=Rung.SERVERLESS, models=(H100,), share=Share(Performance.TIME_SLICING, 100)), 2)
    small = placed(engine, Request(rung=Rung.SERVERLESS, models=(H100,), share=Share(Performance.TIME_SLICING, 300)), 1)
    assert small.devices[0].gpu_uuid in {first.devices[0].gpu_uuid, second.devices[0].gpu_uuid}
    engine.release(first)  # now: tenant 1 has 300 on one GPU (with or without 600) ...
    placements = {2: second, 3: other, 4: small}
    plan = plan_defragmentation(state, placements, movable={2: "serverless", 3: "serverless", 4: "serverless"})
    for move in plan.moves:
        target = move.after.devices[0]
        gpu = state.nodes[target.node_id].gpus[target.gpu_index]
        assert gpu.soft_tenant in (None, move.after.tenant_id)  # soft sharing never crosses tenants
    moved = {m.allocation_id for m in plan.moves}
    assert 3 not in moved  # tenant 2 has no other shared GPU to go to
    if second.devices[0].gpu_uuid != small.devices[0].gpu_uuid:
        assert moved == {4}
        assert plan.moves[0].after.devices[0].gpu_uuid == second.devices[0].gpu_uuid


def test_a_planned_move_is_refused_once_its_target_is_taken():
    state = fleet(h100_nodes=2, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0)
    engine = PlacementEngine(state)
    a = placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), gpus=5), 1)
    b = placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), gpus=8), 1)
    x = placed(engine, Request(rung=Rung.JOB, models=(H100,), gpus=2), 2)
    engine.release(b)
    y = placed(engine, Request(rung=Rung.JOB, models=(H100,), gpus=2), 3)
    engine.release(x)
    plan = plan_defragmentation(state, {1: a, 3: y}, movable={3: "job"})
    after = plan.moves[0].after
    assert move_check(state, after) is None
    placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), gpus=3), 4)  # someone takes the node's last GPUs
    assert "is taken" in (move_check(state, after) or "")
    state.set_node_state(a.devices[0].node_id, "draining")
    assert "no longer takes this work" in (move_check(state, after) or "")


def test_a_gang_member_moves_only_onto_a_node_of_its_fabric_and_version_set():
    from dataclasses import replace

    from provisioning.domain.placement.decision import Device
    from provisioning.domain.placement.isolation import HallInfo
    from provisioning.domain.placement.state import FleetState
    from tests.support.placement_fleet import OLD, VERSIONS

    state = FleetState()
    state.add_hall(HallInfo("h", "r", "EU", None))
    layout = [("ib-0", VERSIONS), ("ib-0", VERSIONS), ("ib-1", VERSIONS), ("ib-0", OLD)]  # one NVLink domain
    for node_id, (fabric, versions) in enumerate(layout, start=1):
        state.add_node(
            id=node_id,
            hostname=f"n{node_id}",
            hall="h",
            model=H100,
            gpu_uuids=[f"g{node_id}-{i}" for i in range(8)],
            nvlink_domain="d",
            versions=versions,
            fabric=fabric,
        )
    nodes = state.nodes
    for node_id in (1, 3, 4):
        for gpu in nodes[node_id].gpus[:4]:
            state.hold_whole(gpu, 9)
    engine = PlacementEngine(state)
    gang = placed(engine, Request(rung=Rung.JOB, models=(H100,), gpus=4, gang_size=2), 1)
    assert sorted(d.node_id for d in gang.devices) == [1, 1, 1, 1, 2, 2, 2, 2]
    filler = placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), gpus=2), 2)
    for gpu in nodes[1].gpus[:4]:
        state.release_whole(gpu)
    # n1: 4 free, n2: 2 free, n3 (other fabric) and n4 (older driver): 4 free each, the best fit for a member.
    plan = plan_defragmentation(state, {1: gang, 2: filler}, movable={1: "job"})
    for move in plan.moves:
        assert set(move.to_nodes) <= {"n1", "n2"}, "a member moved off its fabric or version set"

    free = [Device(n, f"n{n}", g.index, g.uuid) for n in (1, 2) for g in nodes[n].gpus if g.free][:6]
    after = replace(gang, devices=(*free[:2], *free[-2:]))
    assert {d.node_id for d in after.devices} == {1, 2}
    assert move_check(state, after) is None
    nodes[2].fabric = "ib-1"  # re-cabled since the plan was made
    assert move_check(state, after) == "its nodes no longer share one RDMA fabric and version set"


def test_a_moved_job_takes_its_cpu_and_memory_along_and_only_to_a_host_that_holds_them():
    def hosted(cores_on_target: int):  # a (5 GPUs) on the first node, the job y (2 GPUs) alone on the second
        state = fleet(h100_nodes=2, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0)
        first, second = sorted(state.nodes.values(), key=lambda n: n.id)[:2]
        first.cpu_milli, first.memory_mib = cores_on_target * 1000, 1 << 20
        second.cpu_milli, second.memory_mib = 64_000, 1 << 20
        state.tracks_host = True
        engine = PlacementEngine(state)
        a = placed(engine, Request(rung=Rung.CONTAINER, models=(H100,), gpus=5, cpu_milli=8_000), 1)
        assert a.devices[0].node_id == first.id
        state.take_host(first, first.cpu_milli - first.cpu_used, 0)  # the first node's host full while y is placed
        y = placed(engine, Request(rung=Rung.JOB, models=(H100,), gpus=2, cpu_milli=16_000, memory_mib=1024), 3)
        state.take_host(first, 8_000 - first.cpu_used, 0)
        return state, first, second, a, y

    state, first, second, a, y = hosted(cores_on_target=64)
    assert y.devices[0].node_id == second.id
    plan = plan_defragmentation(state, {1: a, 3: y}, movable={3: "job"})
    (move,) = plan.moves
    assert [(t.node_id, t.cpu_milli, t.memory_mib) for t in move.after.host] == [(first.id, 16_000, 1024)]
    assert plan.after.nodes[first.id].cpu_used == 24_000
    assert plan.after.nodes[second.id].cpu_used == 0
    assert move_check(state, move.after) is None
    state, first, second, a, y = hosted(cores_on_target=20)  # 12 cores left beside a: the job's 16 do not fit
    assert plan_defragmentation(state, {1: a, 3: y}, movable={3: "job"}).moves == []
