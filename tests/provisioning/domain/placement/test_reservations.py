"""Reservations in the engine: a pool keeps its reservations' unused room for their tenants, in GPUs and in whole
nodes. On-demand work never takes it, spot work borrows it and is preempted to give it back, the owner's reserved
work fits within it and never beyond it, and every count comes back when work leaves. (That the owner's work is
never refused while its reservation has room, whatever it runs, is measured end to end by
``bench/capacity_classes.py``.)"""

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


def engine(reserved: int = 8, nodes: int = 2) -> PlacementEngine:
    state = fleet(h100_nodes=nodes, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0, per_domain=8)
    state.reservations[7] = Reservation(7, OWNER, H100, HALL, reserved)
    return PlacementEngine(state, "best-fit")


def ask(gpus: int, klass: CapacityClass = ON_DEMAND, *, rung: Rung = Rung.CONTAINER, gang_size: int = 1) -> Request:
    reservation = 7 if klass is RESERVED else None
    return Request(
        rung=rung, models=(H100,), gpus=gpus, gang_size=gang_size, capacity_class=klass, reservation=reservation
    )


def test_another_tenants_on_demand_work_never_takes_the_kept_room() -> None:
    e = engine(reserved=8)  # 16 GPUs, 8 of them kept for the owner
    assert isinstance(e.place(ask(8), policy(OTHER)), Placement)
    refused = e.place(ask(1), policy(OTHER))
    assert isinstance(refused, Refused)
    assert refused.reasons[0].code is Reason.NO_CAPACITY
    assert isinstance(e.place(ask(8, RESERVED), policy(OWNER)), Placement)  # the owner's room, whole
    assert e.state.reserved_milli[7] == 8000


def test_spot_borrows_the_room_and_is_preempted_when_the_owner_needs_it() -> None:
    e = engine(reserved=8)
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
    e = engine(reserved=4)
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
    e = engine(reserved=8)
    assert isinstance(e.place(ask(8), policy(OWNER)), Placement)
    assert isinstance(e.place(ask(1), policy(OWNER)), Refused)  # on-demand: the kept room is for reserved work
    assert isinstance(e.place(ask(8, RESERVED), policy(OWNER)), Placement)


def test_counts_come_back_when_work_leaves() -> None:
    e = engine(reserved=8)
    holders = fingerprint(e)[0]  # every GPU's holders (the indexes' order may differ after a release)
    placed = [e.place(ask(4, RESERVED), policy(OWNER)), e.place(ask(8, SPOT), policy(OTHER))]
    for p in placed:
        assert isinstance(p, Placement)
        e.release(p)
    counts = (+e.state.reserved_milli, +e.state.spot_whole, +e.state.spot_on_node)
    assert (fingerprint(e)[0], *counts) == (holders, {}, {}, {})
    for p in placed:
        assert isinstance(p, Placement)
        e.apply(p)  # read back from the database
    assert e.state.reserved_milli[7] == 4000
    assert e.state.spot_whole[(H100, HALL)] == 8


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
    for klass, tenant, gpus in asks:
        held = all(a >= b for a, b in zip(e.state.reclaimable(pool), e.state.kept(pool), strict=True))
        placed = e.place(ask(gpus, klass), policy(tenant))
        room = reserved * 1000 - e.state.reserved_milli[7]
        assert room >= 0  # reserved work never beyond its reservation
        if held and klass is ON_DEMAND and isinstance(placed, Placement):
            # The room stays free or borrowed by spot, on nodes whole enough to take any request within it.
            (gpus_left, nodes_left), (kept_gpus, kept_nodes) = e.state.reclaimable(pool), e.state.kept(pool)
            assert gpus_left >= kept_gpus
            assert nodes_left >= kept_nodes
