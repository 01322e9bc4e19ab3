"""The whole node (docs/placement.md, "The whole node"): a placement takes CPU and memory beside its GPUs on the
node they go to, no node gives more than it has, release and apply are exact, the score counts GPUs a host short
of CPU or memory strands, and CPU-only work is placed as such."""

from __future__ import annotations

import random

import pytest

from provisioning.domain.placement.decision import Placement, Refused, Request, Share
from provisioning.domain.placement.engine import POLICIES, PlacementEngine
from provisioning.domain.placement.isolation import HallInfo, Reason, TenantPolicy
from provisioning.domain.placement.state import FleetState
from provisioning.domain.placement.workload import Shape
from provisioning.domain.rungs import Performance, Rung

H100 = "H100-SXM-80GB"
HALL = "eu-west-1a"
CPU = 1000  # milli-core per core
GIB = 1024  # MiB
ONE_GPU = Shape(gpus=1)


def fleet(*nodes: tuple[int, int, int]) -> FleetState:
    """Nodes of H100s in one hall and NVLink domain: (GPUs, cores, GiB) each, ids from 1."""
    state = FleetState()
    state.add_hall(HallInfo(HALL, "eu-west", "EU", None))
    for i, (gpus, cores, gib) in enumerate(nodes, start=1):
        state.add_node(
            id=i,
            hostname=f"node-{i}",
            hall=HALL,
            model=H100,
            gpu_uuids=[f"GPU-{i}-{g}" for g in range(gpus)],
            nvlink_domain="nvl-0",
            cpu_milli=cores * CPU,
            memory_mib=gib * GIB,
        )
    return state


def gpus(n: int, cores: float = 0, gib: int = 0, gang: int = 1) -> Request:
    return Request(
        rung=Rung.CONTAINER, models=(H100,), gpus=n, cpu_milli=int(cores * CPU), memory_mib=gib * GIB, gang_size=gang
    )


def cpu_only(cores: float, gib: int = 0) -> Request:
    return Request(rung=Rung.CONTAINER, models=(H100,), cpu_milli=int(cores * CPU), memory_mib=gib * GIB)


def policy(tenant: int = 1) -> TenantPolicy:
    return TenantPolicy(tenant_id=tenant)


def used(state: FleetState) -> dict[int, tuple[int, int]]:
    return {n.id: (n.cpu_used, n.memory_used) for n in state.nodes.values()}


@pytest.mark.parametrize("engine_policy", POLICIES)
def test_a_node_short_of_cpu_or_memory_is_passed_over(engine_policy: str) -> None:
    e = PlacementEngine(fleet((8, 16, 512), (8, 64, 512), (8, 64, 64)), engine_policy)
    got = e.place(gpus(2, cores=24, gib=128), policy())
    assert isinstance(got, Placement)
    assert {d.node_id for d in got.devices} == {2}  # node 1 has 16 cores, node 3 64 GiB
    assert [(t.node_id, t.cpu_milli, t.memory_mib) for t in got.host] == [(2, 24 * CPU, 128 * GIB)]
    assert used(e.state)[2] == (24 * CPU, 128 * GIB)
    refused = e.place(gpus(1, cores=48, gib=128), policy())
    assert isinstance(refused, Refused)  # 40 cores left on node 2, 16 on node 1, 64 GiB on node 3
    assert refused.code is Reason.NO_CAPACITY


def test_release_and_apply_give_back_and_take_exactly_what_was_taken() -> None:
    e = PlacementEngine(fleet((8, 64, 512), (8, 64, 512)))
    placed = [e.place(gpus(1, cores=8, gib=64), policy()) for _ in range(3)]
    assert all(isinstance(p, Placement) for p in placed)
    before = used(e.state)
    assert sum(c for c, _ in before.values()) == 24 * CPU
    e.release(placed[1])  # type: ignore[arg-type]
    assert sum(c for c, _ in used(e.state).values()) == 16 * CPU
    e.apply(placed[1])  # type: ignore[arg-type]
    assert used(e.state) == before
    preview = e.preview(gpus(2, cores=16, gib=64), policy())
    assert isinstance(preview, Placement)
    assert preview.host
    assert used(e.state) == before  # a preview takes nothing


def test_the_score_puts_a_cpu_heavy_request_where_it_strands_no_gpus() -> None:
    # Two nodes with 4 GPUs free each, one with 40 cores left, one with 64. The workload asks 8 cores per GPU.
    state = fleet((8, 64, 1024), (8, 64, 1024))
    for node in state.nodes.values():
        for gpu in node.gpus[:4]:
            state.hold_whole(gpu, 9)
    lean = 1
    state.take_host(state.nodes[lean], 24 * CPU, 0)  # 40 cores left beside its 4 GPUs
    e = PlacementEngine(state)
    for _ in range(70):  # a workload of 1 GPU with 8 cores each
        state.workload.observe([((H100, HALL), ONE_GPU)], 1000, False, (8 * CPU, 0))
    e._snapshot = None
    got = e.place(gpus(1, cores=32), policy())
    assert isinstance(got, Placement)
    # On the lean node it would leave 3 GPUs with 8 cores (2 stranded); on the other, 3 GPUs with 32 cores (none).
    assert got.devices[0].node_id != lean


def test_cpu_only_work_goes_where_no_gpu_is_free_and_strands_nothing() -> None:
    e = PlacementEngine(fleet((8, 64, 512), (8, 64, 512)))
    full = e.place(gpus(8, cores=16), policy())
    assert isinstance(full, Placement)
    for _ in range(3):
        e.state.workload.observe([((H100, HALL), ONE_GPU)], 1000, False, (8 * CPU, 0))
    e._snapshot = None
    head = e.place(cpu_only(32, gib=64), policy(2))
    assert isinstance(head, Placement)
    assert head.devices == ()
    assert head.model == H100
    assert [t.node_id for t in head.host] == [full.devices[0].node_id]  # its 8 GPUs are taken: nothing stranded
    assert head.milli == 0
    too_big = e.place(cpu_only(70), policy(2))
    assert isinstance(too_big, Refused)
    assert too_big.code is Reason.NO_CAPACITY
    e.release(head)
    assert used(e.state)[full.devices[0].node_id] == (16 * CPU, 0)


def test_a_gang_puts_two_members_on_a_node_only_when_its_cpu_holds_both() -> None:
    e = PlacementEngine(fleet((8, 40, 512), (8, 40, 512)))
    gang = e.place(gpus(4, cores=24, gang=2), policy())
    assert isinstance(gang, Placement)
    on = sorted(d.node_id for d in gang.devices)
    assert on in ([2] * 4 + [1] * 4, [1] * 4 + [2] * 4)  # 48 cores: not both on one node
    assert sorted((t.node_id, t.cpu_milli) for t in gang.host) == [(1, 24 * CPU), (2, 24 * CPU)]
    refused = e.place(gpus(4, cores=24, gang=2), policy())
    assert isinstance(refused, Refused)  # the GPUs are there (4 + 4), the cores are not (16 + 16 with 24 each)
    assert used(e.state) == {1: (24 * CPU, 0), 2: (24 * CPU, 0)}  # the refused gang left nothing taken
    assert all(g.whole_tenant is not None for n in e.state.nodes.values() for g in n.gpus[:4])


@pytest.mark.parametrize("engine_policy", POLICIES)
def test_shares_and_slices_join_only_gpus_whose_host_has_room(engine_policy: str) -> None:
    e = PlacementEngine(fleet((1, 8, 64), (1, 64, 512)), engine_policy)
    share = Request(rung=Rung.SERVERLESS, models=(H100,), share=Share(Performance.FRACTIONAL, 300), cpu_milli=6 * CPU)
    first = e.place(share, policy())
    assert isinstance(first, Placement)
    again = e.place(share, policy())
    assert isinstance(again, Placement)
    assert sum(t.cpu_milli for t in first.host + again.host) == 12 * CPU
    assert all(n.cpu_used <= n.cpu_milli for n in e.state.nodes.values())
    slice_ = Request(rung=Rung.CONTAINER, models=(H100,), mig_profile="1g.10gb", cpu_milli=60 * CPU)
    assert isinstance(e.place(slice_, policy(2)), Refused)  # no node has 60 cores left beside a free GPU


def test_cpu_and_memory_are_asked_in_amounts_of_zero_or_more() -> None:
    e = PlacementEngine(fleet((8, 64, 512)))
    bad = e.place(Request(rung=Rung.CONTAINER, models=(H100,), gpus=1, cpu_milli=-1), policy())
    assert isinstance(bad, Refused)
    assert bad.code is Reason.INVALID_ISOLATION
    none = e.place(Request(rung=Rung.CONTAINER, models=(H100,)), policy())
    assert isinstance(none, Refused)
    assert none.code is Reason.INVALID_ISOLATION


def test_a_fleet_that_states_no_cpu_places_gpus_as_before() -> None:
    plain = FleetState()
    plain.add_hall(HallInfo(HALL, "eu-west", "EU", None))
    plain.add_node(id=1, hostname="n", hall=HALL, model=H100, gpu_uuids=["a", "b"], nvlink_domain="d")
    e = PlacementEngine(plain)
    got = e.place(gpus(2, cores=500, gib=9000), policy())
    assert isinstance(got, Placement)  # nothing tracked: nothing limits, and the take is still recorded
    assert not plain.tracks_host


@pytest.mark.parametrize("engine_policy", POLICIES)
def test_no_sequence_of_placements_and_releases_gives_a_node_more_than_it_has(engine_policy: str) -> None:
    rng = random.Random(7)
    e = PlacementEngine(fleet((8, 96, 1024), (8, 64, 512), (4, 128, 2048), (8, 32, 256)), engine_policy)
    live: list[Placement] = []
    for _ in range(400):
        if live and rng.random() < 0.4:
            e.release(live.pop(rng.randrange(len(live))))
        else:
            roll = rng.random()
            cores, gib = rng.choice((0, 2, 8, 24, 48)), rng.choice((0, 16, 64, 256))
            if roll < 0.5:
                request = gpus(rng.choice((1, 2, 4, 8)), cores, gib, gang=rng.choice((1, 1, 2)))
            elif roll < 0.7:
                request = Request(
                    rung=Rung.SERVERLESS,
                    models=(H100,),
                    share=Share(Performance.FRACTIONAL, rng.choice((100, 250, 500))),
                    cpu_milli=cores * CPU,
                    memory_mib=gib * GIB,
                )
            elif roll < 0.85:
                request = Request(
                    rung=Rung.CONTAINER,
                    models=(H100,),
                    mig_profile="1g.10gb",
                    cpu_milli=cores * CPU,
                    memory_mib=gib * GIB,
                )
            else:
                request = cpu_only(max(cores, 1), gib)
            got = e.place(request, policy(rng.randrange(1, 4)))
            if isinstance(got, Placement):
                live.append(got)
        expected: dict[int, list[int]] = {n: [0, 0] for n in e.state.nodes}
        for p in live:
            for t in p.host:
                expected[t.node_id][0] += t.cpu_milli
                expected[t.node_id][1] += t.memory_mib
        for node in e.state.nodes.values():
            assert [node.cpu_used, node.memory_used] == expected[node.id]
            assert node.cpu_used <= node.cpu_milli
            assert node.memory_used <= node.memory_mib
