"""Reservations in the engine: a reservation owns nodes of its pool (its home), and the pool keeps what its home may
lack. The owner's reserved work goes home first, packed; on-demand work never takes a reserved node nor the room
kept for it; spot work borrows it and is preempted to give it back; the owner's reserved work fits within its room
and never beyond it, and is not refused for capacity while the pool keeps its room; every count comes back when
work leaves."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from provisioning.domain.capacity_classes import CapacityClass
from provisioning.domain.placement.decision import Placement, Refused, Request
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.isolation import Reason
from provisioning.domain.placement.preemption import Preempting, Victim
from provisioning.domain.placement.state import Reservation
from provisioning.domain.rungs import Rung
from tests.provisioning.domain.placement.test_preview import fingerprint
from tests.support.placement_fleet import fleet, policy

H100 = "H100-SXM-80GB"
HALL = "eu-west-1a"
OWNER, OTHER = 1, 2
SPOT, ON_DEMAND, RESERVED = CapacityClass.SPOT, CapacityClass.ON_DEMAND, CapacityClass.RESERVED


def engine(reserved: int = 8, nodes: int = 3) -> PlacementEngine:
    state = fleet(h100_nodes=nodes, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0, per_domain=8)
    state.reservations[7] = Reservation(7, OWNER, H100, HALL, reserved)
    return PlacementEngine(state, "best-fit")


def ask(gpus: int, klass: CapacityClass = ON_DEMAND, *, rung: Rung = Rung.CONTAINER, gang_size: int = 1) -> Request:
    reservation = 7 if klass is RESERVED else None
    return Request(
        rung=rung, models=(H100,), gpus=gpus, gang_size=gang_size, capacity_class=klass, reservation=reservation
    )


def test_the_owner_has_nodes_of_its_own_and_its_work_goes_there() -> None:
    e = engine(reserved=8)
    (home,) = e.state.homes((H100, HALL))[7]
    mine = e.place(ask(1, RESERVED), policy(OWNER))
    theirs = e.place(ask(1), policy(OTHER))
    assert isinstance(mine, Placement)
    assert isinstance(theirs, Placement)
    assert {d.node_id for d in mine.devices} == {home.id}
    assert home.id not in {d.node_id for d in theirs.devices}  # on-demand work never on a reserved node
    assert e.state.reserved_on_node[(7, home.id)] == 1


def test_the_owners_work_packs_its_nodes_and_takes_them_back_from_spot() -> None:
    e = engine(reserved=16, nodes=3)
    a, b = e.state.homes((H100, HALL))[7]
    spot = e.place(ask(4, SPOT, rung=Rung.JOB), policy(OTHER))
    assert isinstance(spot, Placement)
    spot_node = spot.devices[0].node_id
    mine = e.place(ask(4, RESERVED), policy(OWNER))
    assert isinstance(mine, Placement)
    assert spot_node in (a.id, b.id)
    assert mine.devices[0].node_id == spot_node  # beside the spot work: the other node stays whole
    found = e.place_preempting(
        ask(8, RESERVED), policy(OWNER), capacity_class=RESERVED, candidates=[Victim(1, spot, SPOT, cost_ms=0)]
    )
    assert isinstance(found, Placement)  # the other node was whole: nothing preempted
    assert {d.node_id for d in found.devices} == {a.id, b.id} - {spot_node}


def test_the_owners_small_work_keeps_its_nodes_whole_while_the_pool_has_room_for_it() -> None:
    e = engine(reserved=16, nodes=3)  # two nodes the owner's, one the pool's
    a, b = sorted(e.state.homes((H100, HALL))[7], key=lambda n: n.id)
    (c,) = [n for n in e.state.pool_nodes[(H100, HALL)] if n.id not in (a.id, b.id)]

    def reserve(gpus: int) -> set[int]:
        found = e.place_preempting(ask(gpus, RESERVED), policy(OWNER), capacity_class=RESERVED, candidates=[])
        assert isinstance(found, Placement)
        return {d.node_id for d in found.devices}

    assert reserve(1) == {c.id}  # not onto a whole node of its own: that stays whole for a large job
    assert reserve(8) <= {a.id, b.id}
    assert reserve(1) == {c.id}
    assert isinstance(e.place(ask(6), policy(OTHER)), Placement)  # the pool's node is full now
    assert len(reserve(1)) == 1  # nowhere else: onto its own node after all, never refused
    assert e.state.reserved_milli[7] == 11_000


def test_the_pool_keeps_what_the_owners_nodes_may_lack_once_its_work_leaves() -> None:
    """A job of 1 GPU beside one of 7 on two of the owner's three nodes, the third whole: its room (8) fits now, but
    once the 7s leave it is 22 GPUs with one node whole, so the pool keeps a whole node for its second 8-GPU job."""
    e = engine(reserved=24, nodes=4)
    pool = (H100, HALL)
    home = {n.id for n in e.state.homes(pool)[7]}
    theirs = e.place(ask(8), policy(OTHER))
    assert isinstance(theirs, Placement)  # the pool's node, while the owner's three are whole
    mine: dict[int, list[Placement]] = {}
    for gpus in (7, 7, 1, 1):
        found = e.place_preempting(ask(gpus, RESERVED), policy(OWNER), capacity_class=RESERVED, candidates=[])
        assert isinstance(found, Placement)
        mine.setdefault(gpus, []).append(found)
    shared = {d.node_id for p in mine[1] for d in p.devices}
    assert len(shared) == 2  # beside the 7s
    assert shared < home  # one node of its own still whole
    e.release(theirs)
    assert e.state.room_left(e.state.reservations[7]) == 8
    refused = e.place(ask(1), policy(OTHER))
    assert isinstance(refused, Refused)  # the pool's node is kept whole for what the 7s leave behind
    for big in mine[7]:
        e.release(big)
    for _ in range(2):
        found = e.place_preempting(ask(8, RESERVED), policy(OWNER), capacity_class=RESERVED, candidates=[])
        assert isinstance(found, Placement)


def test_another_tenants_on_demand_work_never_takes_the_kept_room() -> None:
    e = engine(reserved=8, nodes=2)  # 16 GPUs: a node of them the owner's
    assert isinstance(e.place(ask(8), policy(OTHER)), Placement)
    refused = e.place(ask(1), policy(OTHER))
    assert isinstance(refused, Refused)
    assert refused.reasons[0].code is Reason.NO_CAPACITY
    assert isinstance(e.place(ask(8, RESERVED), policy(OWNER)), Placement)  # the owner's room, whole
    assert e.state.reserved_milli[7] == 8000


def test_spot_borrows_the_room_and_is_preempted_when_the_owner_needs_it() -> None:
    e = engine(reserved=8, nodes=2)
    spot = e.place(ask(8, SPOT, rung=Rung.JOB, gang_size=2), policy(OTHER))
    assert isinstance(spot, Placement)  # all sixteen: the kept room too
    assert e.state.spot_whole[(H100, HALL)] == 16
    assert isinstance(e.place(ask(8, RESERVED), policy(OWNER)), Refused)  # the room is borrowed
    victim = Victim(1, spot, SPOT, cost_ms=0)
    found = e.place_preempting(ask(8, RESERVED), policy(OWNER), capacity_class=RESERVED, candidates=[victim])
    assert isinstance(found, Preempting)
    assert found.victims == (victim,)
    assert e.state.spot_whole[(H100, HALL)] == 0
    assert e.state.reserved_milli[7] == 8000


def test_reserved_work_stays_inside_its_reservation() -> None:
    e = engine(reserved=4, nodes=2)
    assert isinstance(e.place(ask(4, RESERVED), policy(OWNER)), Placement)
    beyond = e.place(ask(1, RESERVED), policy(OWNER))
    assert isinstance(beyond, Refused)
    assert beyond.reasons[0].code is Reason.RESERVATION
    assert "0 of its 4 GPUs left" in beyond.reasons[0].message
    assert isinstance(e.place(ask(1), policy(OWNER)), Placement)  # beyond it: on-demand, as anyone
    theirs = e.place(ask(1, RESERVED), policy(OTHER))
    assert isinstance(theirs, Refused)
    assert theirs.reasons[0].code is Reason.RESERVATION  # not their reservation
    elsewhere = e.place(replace(ask(1, RESERVED), regions=frozenset({"us-east"})), policy(OWNER))
    assert isinstance(elsewhere, Refused)


def test_the_owners_on_demand_work_does_not_eat_its_own_reservation_either() -> None:
    e = engine(reserved=8, nodes=2)
    assert isinstance(e.place(ask(8), policy(OWNER)), Placement)
    assert isinstance(e.place(ask(1), policy(OWNER)), Refused)  # on-demand: the kept room is for reserved work
    assert isinstance(e.place(ask(8, RESERVED), policy(OWNER)), Placement)


def test_counts_come_back_when_work_leaves() -> None:
    e = engine(reserved=8, nodes=2)
    holders = fingerprint(e)[0]  # every GPU's holders (the indexes' order may differ after a release)
    placed = [e.place(ask(4, RESERVED), policy(OWNER)), e.place(ask(8, SPOT), policy(OTHER))]
    for p in placed:
        assert isinstance(p, Placement)
        e.release(p)
    counts = (+e.state.reserved_milli, +e.state.spot_whole, +e.state.spot_on_node, +e.state.reserved_on_node)
    assert (fingerprint(e)[0], *counts) == (holders, {}, {}, {}, {})
    for p in placed:
        assert isinstance(p, Placement)
        e.apply(p)  # read back from the database
    assert e.state.reserved_milli[7] == 4000
    assert e.state.spot_whole[(H100, HALL)] == 8


def test_a_reservation_pinned_to_nodes_owns_those() -> None:
    state = fleet(h100_nodes=3, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0, per_domain=8)
    pinned = max(n.id for n in state.pool_nodes[(H100, HALL)] if n.general)
    state.reservations[7] = Reservation(7, OWNER, H100, HALL, 8, nodes=(pinned,))
    assert [n.id for n in state.homes((H100, HALL))[7]] == [pinned]


Op = tuple[str, CapacityClass, int, int]  # ("ask", class, tenant, gpus) or ("end", _, index, _)


@settings(max_examples=150, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(
                st.just("ask"),
                st.sampled_from([ON_DEMAND, SPOT, RESERVED, RESERVED]),
                st.sampled_from([OWNER, OTHER]),
                st.sampled_from([1, 1, 2, 3, 4, 8]),
            ),
            st.tuples(st.just("end"), st.just(SPOT), st.integers(0, 30), st.just(0)),  # any running work
        ),
        max_size=40,
    ),
    reserved=st.sampled_from([4, 8, 12, 16]),
    nodes=st.integers(3, 5),
)
def test_reserved_work_is_never_refused_while_the_pool_keeps_its_room(ops: list[Op], reserved: int, nodes: int) -> None:
    """Any mix of sizes, arrivals and departures, the owner's included: while the pool keeps a reservation's room
    (``keeps_room``), the owner's request within it is placed (preempting spot work if need be); work that may not
    be preempted, other than the owner's reserved work, never leaves the pool without it; and no work leaving
    does."""
    e = engine(reserved=reserved, nodes=nodes)
    pool = (H100, HALL)
    running: list[Placement] = []
    for op, klass, who, gpus in ops:
        if op == "end":
            if running:
                kept = e.state.keeps_room(pool)
                e.release(running.pop(who % len(running)))
                assert e.state.keeps_room(pool) or not kept
            continue
        kept = e.state.keeps_room(pool)
        request = ask(gpus, klass, rung=Rung.JOB if klass is SPOT else Rung.CONTAINER)
        tenant = OWNER if klass is RESERVED else who
        candidates = [Victim(i, p, SPOT, 0) for i, p in enumerate(running) if p.capacity_class is SPOT]
        found = e.place_preempting(request, policy(tenant), capacity_class=klass, candidates=candidates)
        if isinstance(found, Preempting):
            running = [p for p in running if p not in {v.placement for v in found.victims}]
            found = found.placement
        room = reserved * 1000 - e.state.reserved_milli[7]
        assert room >= 0  # reserved work never beyond its reservation
        if isinstance(found, Placement):
            running.append(found)
            if kept and klass is ON_DEMAND:
                assert e.state.keeps_room(pool)
        elif klass is RESERVED and kept:
            assert found.reasons[0].code is Reason.RESERVATION  # beyond its room, never for capacity


@settings(max_examples=80, deadline=None)
@given(
    asks=st.lists(
        st.tuples(st.sampled_from([ON_DEMAND, SPOT, RESERVED]), st.sampled_from([OWNER, OTHER]), st.integers(1, 8)),
        max_size=12,
    ),
    reserved=st.integers(1, 16),
)
def test_no_one_elses_on_demand_work_eats_into_the_kept_room(
    asks: list[tuple[CapacityClass, int, int]], reserved: int
) -> None:
    e = engine(reserved=reserved)
    pool = (H100, HALL)
    owned = {n.id for n in e.state.homes(pool)[7]}
    for klass, tenant, gpus in asks:
        held = e.state.keeps_room(pool)
        placed = e.place(ask(gpus, klass), policy(tenant))
        room = reserved * 1000 - e.state.reserved_milli[7]
        assert room >= 0  # reserved work never beyond its reservation
        if klass is ON_DEMAND and isinstance(placed, Placement):
            assert not owned & {d.node_id for d in placed.devices}  # never on the reservation's nodes
            if held:
                assert e.state.keeps_room(pool)
