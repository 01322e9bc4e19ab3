"""The rolling upgrade planner (pure): whole drifting domains in waves, within the limits, emptiest first."""

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioning.domain.upgrades import (
    PlanAllocation,
    PlanDomain,
    PlanLimitError,
    PlanNode,
    upgrade_plan,
    wave_gpu_limit,
)

NODES = st.lists(
    st.tuples(st.integers(1, 8), st.integers(0, 8), st.booleans()).map(
        lambda t: (t[0], min(t[1], t[0]), t[2])  # (gpus, in use <= gpus, drifting)
    ),
    min_size=1,
    max_size=4,
)
FLEETS = st.lists(NODES, min_size=0, max_size=12)


def build(fleet):
    domains, next_id = [], 1
    for i, nodes in enumerate(fleet):
        members = []
        for gpus, used, drifting in nodes:
            members.append(PlanNode(next_id, f"n{next_id}", gpus, used, drifting))
            next_id += 1
        domains.append(PlanDomain(f"h{i % 2}", f"d{i}", tuple(members)))
    return domains


@settings(max_examples=300, deadline=None)
@given(fleet=FLEETS, max_gpus=st.integers(1, 40), max_domains=st.one_of(st.none(), st.integers(1, 4)))
def test_every_drifting_domain_goes_whole_into_exactly_one_wave_within_the_limits(fleet, max_gpus, max_domains):
    domains = build(fleet)
    drifting = [d for d in domains if d.drifting]
    if any(d.gpus > max_gpus for d in drifting):
        with pytest.raises(PlanLimitError, match="raise the limit"):
            upgrade_plan(domains, max_gpus=max_gpus, max_domains=max_domains)
        return
    waves = upgrade_plan(domains, max_gpus=max_gpus, max_domains=max_domains)
    planned = [d for w in waves for d in w.domains]
    assert sorted((d.hall, d.name) for d in planned) == sorted((d.hall, d.name) for d in drifting)  # once each
    assert [w.number for w in waves] == list(range(1, len(waves) + 1))
    for wave in waves:
        assert wave.domains, "an empty wave"
        assert wave.gpus <= max_gpus
        assert max_domains is None or len(wave.domains) <= max_domains
        for domain in wave.domains:
            assert domain in domains  # the domain object itself, with all of its nodes: never part of one
    in_use = [d.gpus_in_use for d in planned]
    assert in_use == sorted(in_use), "a fuller domain before an emptier one"
    for earlier, later in pairwise(waves):  # a wave closes only when the next domain breaks a limit
        nxt = later.domains[0]
        assert earlier.gpus + nxt.gpus > max_gpus or len(earlier.domains) == max_domains


def test_a_wave_lists_each_allocation_once_with_what_it_must_do():
    gang = PlanAllocation(7, "acme", "job", ("n1", "n2"))
    vm = PlanAllocation(3, "globex", "vm", ("n2",))
    a = PlanDomain("h", "d0", (PlanNode(1, "n1", 8, 8, True), PlanNode(2, "n2", 8, 4, False)), (gang, vm))
    b = PlanDomain("h", "d1", (PlanNode(3, "n3", 8, 0, True),))
    c = PlanDomain("h", "d2", (PlanNode(4, "n4", 8, 0, False),))  # no drift: not drained
    waves = upgrade_plan([a, b, c], max_gpus=16)
    assert [[d.name for d in w.domains] for w in waves] == [["d1"], ["d0"]]  # emptiest first; d1 + d0 = 24 > 16
    second = waves[1].as_dict()
    assert [n["hostname"] for n in second["domains"][0]["nodes"]] == ["n1", "n2"]  # the whole domain, n2 too
    assert second["allocations"] == [
        {"id": 3, "tenant": "globex", "rung": "vm", "action": "move", "hostnames": ["n2"]},
        {"id": 7, "tenant": "acme", "rung": "job", "action": "checkpoint", "hostnames": ["n1", "n2"]},
    ]
    assert (second["gpus"], second["gpus_in_use"]) == (16, 12)


def test_a_gang_over_two_domains_of_one_wave_is_listed_once_with_all_its_nodes():
    gang = (PlanAllocation(5, "acme", "job", ("n1",)), PlanAllocation(5, "acme", "job", ("n2",)))
    a = PlanDomain("h", "d0", (PlanNode(1, "n1", 8, 4, True),), gang[:1])
    b = PlanDomain("h", "d1", (PlanNode(2, "n2", 8, 4, True),), gang[1:])
    [wave] = upgrade_plan([a, b], max_gpus=16)
    assert [(x.id, x.hostnames, x.action) for x in wave.allocations] == [(5, ("n1", "n2"), "checkpoint")]


def test_limits_that_are_no_limits_are_refused():
    with pytest.raises(PlanLimitError):
        wave_gpu_limit(fleet_gpus=100, max_share=0)
    with pytest.raises(PlanLimitError):
        wave_gpu_limit(fleet_gpus=100, max_share=1.5)
    assert wave_gpu_limit(fleet_gpus=100, max_share=0.25) == 25
    with pytest.raises(PlanLimitError, match="no domain could ever be drained"):
        upgrade_plan([], max_gpus=0)
    with pytest.raises(PlanLimitError, match="max_domains"):
        upgrade_plan([], max_gpus=8, max_domains=0)
