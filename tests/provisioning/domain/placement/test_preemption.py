"""Placing by taking back spot work (``PlacementEngine.place_preempting``): only when the request fits no other way,
only for a class that may preempt, only preemptible candidates, the cheapest sufficient victims (a gang whole or
not at all), never one whose release does not help, and the state untouched when nothing would make room."""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from provisioning.domain.capacity_classes import CLASSES, CapacityClass
from provisioning.domain.placement.decision import Placement, Refused, Request, Share
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.isolation import Reason
from provisioning.domain.placement.preemption import Preempting, Victim
from provisioning.domain.rungs import Performance, Rung
from tests.provisioning.domain.placement.test_preview import ENDPOINTS, fingerprint
from tests.support.placement_fleet import fleet, policy

H100 = "H100-SXM-80GB"
SPOT, ON_DEMAND = CapacityClass.SPOT, CapacityClass.ON_DEMAND
OWNER = 1  # the tenant asking


def engine(nodes: int = 2, **kwargs: int) -> PlacementEngine:
    layout = {"h200_nodes": 0, "fenced_nodes": 0, "us_nodes": 0, "cc_nodes": 0, **kwargs}
    return PlacementEngine(fleet(h100_nodes=nodes, per_domain=8, **layout), "best-fit")


def spot(e: PlacementEngine, allocation_id: int, cost_ms: int, request: Request, tenant: int = 7) -> Victim:
    placed = e.place(request, policy(tenant))
    assert isinstance(placed, Placement)
    return Victim(allocation_id, placed, SPOT, cost_ms)


def whole(gpus: int, *, rung: Rung = Rung.CONTAINER, **extra: object) -> Request:
    return Request(rung=rung, models=(H100,), gpus=gpus, **extra)  # type: ignore[arg-type]


def holders(e: PlacementEngine) -> dict[str, int | None]:
    return {g.uuid: g.whole_tenant for node in e.state.nodes.values() for g in node.gpus}


def test_the_classes_say_who_may_preempt_whom() -> None:
    assert [c for c, facts in CLASSES.items() if facts.preemptible] == [SPOT]
    assert {c for c, facts in CLASSES.items() if facts.preempts} == {ON_DEMAND, CapacityClass.RESERVED}
    assert CLASSES[SPOT].notice_seconds == 30


def test_a_request_that_fits_preempts_nothing() -> None:
    e = engine()
    victim = spot(e, 1, 0, whole(8))
    found = e.place_preempting(whole(8), policy(OWNER), capacity_class=ON_DEMAND, candidates=[victim])
    assert isinstance(found, Placement)  # the other node was free
    assert all(holders(e)[d.gpu_uuid] == 7 for d in victim.placement.devices)


def test_the_cheapest_victims_that_make_room_and_no_more() -> None:
    e = engine()
    # node A: a (cost 10) and b (100); node B: c (20) and d (30), four GPUs each
    a, b, c, d = (spot(e, i, cost, whole(4)) for i, cost in ((1, 10), (2, 100), (3, 20), (4, 30)))
    assert {x.placement.devices[0].node_id for x in (a, b)} != {x.placement.devices[0].node_id for x in (c, d)}
    found = e.place_preempting(whole(8), policy(OWNER), capacity_class=ON_DEMAND, candidates=[a, b, c, d])
    assert isinstance(found, Preempting)
    assert [v.allocation_id for v in found.victims] == [3, 4]  # 50 ms of goodput, not a and b's 110
    assert found.cost_ms == 50
    held = holders(e)
    assert all(held[dev.gpu_uuid] == OWNER for dev in found.placement.devices)
    assert all(held[dev.gpu_uuid] == 7 for v in (a, b) for dev in v.placement.devices)  # spared, untouched
    assert {dev.node_id for dev in found.placement.devices} == {c.placement.devices[0].node_id}


def test_a_gang_is_preempted_whole_or_not_at_all() -> None:
    e = engine(nodes=2)
    gang = spot(e, 1, 5, Request(rung=Rung.JOB, models=(H100,), gpus=8, gang_size=2))
    assert len({dev.node_id for dev in gang.placement.devices}) == 2
    found = e.place_preempting(whole(8), policy(OWNER), capacity_class=ON_DEMAND, candidates=[gang])
    assert isinstance(found, Preempting)
    assert found.victims == (gang,)
    held = holders(e)
    freed = [dev for dev in gang.placement.devices if held[dev.gpu_uuid] is None]
    assert len(freed) == 8  # the member the request did not take is free too: nothing of the gang runs on


def test_spot_never_preempts_and_only_spot_is_preempted() -> None:
    e = engine(nodes=1)
    victim = spot(e, 1, 0, whole(8))
    before = fingerprint(e)
    refused = e.place_preempting(whole(1), policy(OWNER), capacity_class=SPOT, candidates=[victim])
    assert isinstance(refused, Refused)
    assert refused.reasons[0].code is Reason.NO_CAPACITY
    assert fingerprint(e) == before
    on_demand = Victim(2, victim.placement, ON_DEMAND, 0)
    with pytest.raises(ValueError, match="not preemptible"):
        e.place_preempting(whole(1), policy(OWNER), capacity_class=ON_DEMAND, candidates=[on_demand])


def test_nothing_changes_when_even_every_candidate_would_not_make_room() -> None:
    e = engine(nodes=2)
    mine = e.place(whole(8), policy(3))  # on-demand work of another tenant: not a candidate
    assert isinstance(mine, Placement)
    victim = spot(e, 1, 0, whole(4))
    before = fingerprint(e)
    refused = e.place_preempting(whole(8, gang_size=2, rung=Rung.JOB), policy(OWNER), capacity_class=ON_DEMAND,
                                 candidates=[victim])  # fmt: skip
    assert isinstance(refused, Refused)
    assert fingerprint(e) == before


def test_a_candidate_whose_release_does_not_help_is_never_a_victim() -> None:
    # The tenant may use the EU only: the US spot work is no victim, whatever it costs.
    e = PlacementEngine(fleet(h100_nodes=1, h200_nodes=0, fenced_nodes=0, us_nodes=1, cc_nodes=0), "best-fit")
    us = spot(e, 1, 0, whole(8, regions=frozenset({"us-east"})))
    eu = spot(e, 2, 1_000, whole(8, regions=frozenset({"eu-west"})))
    eu_only = policy(OWNER, regions=frozenset({"eu-west"}))
    found = e.place_preempting(whole(2), eu_only, capacity_class=ON_DEMAND, candidates=[us, eu])
    assert isinstance(found, Preempting)
    assert found.victims == (eu,)
    assert all(holders(e)[dev.gpu_uuid] == 7 for dev in us.placement.devices)


def test_a_refusal_for_a_rule_is_not_answered_by_preempting() -> None:
    e = engine(nodes=1)
    victim = spot(e, 1, 0, whole(8))
    no_sharing = policy(OWNER, allow_soft_sharing=False)
    share = Request(rung=Rung.SERVERLESS, models=(H100,), share=Share(Performance.MPS, 500))
    found = e.place_preempting(share, no_sharing, capacity_class=ON_DEMAND, candidates=[victim])
    assert isinstance(found, Refused)
    assert found.reasons[0].code is not Reason.NO_CAPACITY
    assert all(holders(e)[dev.gpu_uuid] == 7 for dev in victim.placement.devices)


@settings(max_examples=40, deadline=None)
@given(
    busy=st.lists(st.tuples(ENDPOINTS, st.integers(0, 5_000)), min_size=1, max_size=12),
    asked=st.one_of(st.builds(whole, st.integers(1, 8)), ENDPOINTS),
)
def test_every_victim_is_needed_and_a_refusal_changes_nothing(busy: list[tuple[Request, int]], asked: Request) -> None:
    e = engine(nodes=1)  # one node of eight GPUs: full often enough to preempt
    candidates = []
    for n, (request, cost) in enumerate(busy, start=1):
        placed = e.place(request, policy(7 + n % 2))  # spot work of two other tenants
        if isinstance(placed, Placement):
            candidates.append(Victim(n, placed, SPOT, cost))
    before = fingerprint(e)
    found = e.place_preempting(asked, policy(OWNER), capacity_class=ON_DEMAND, candidates=candidates)
    event(type(found).__name__)
    if isinstance(found, Refused):
        assert fingerprint(e) == before
        return
    if isinstance(found, Placement):
        return
    # Sparing any one victim would leave no room: put it back beside the placement and the request does not fit.
    e.release(found.placement)
    for spared in found.victims:
        e.apply(spared.placement)
        assert isinstance(e.preview(asked, policy(OWNER)), Refused), spared.allocation_id
        e.release(spared.placement)
