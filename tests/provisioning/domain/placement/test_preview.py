"""Asking the engine where a request would go, without side effects: ``preview`` answers what ``place`` would decide
now, and leaves every GPU, every tenant's count and the workload the fragmentation score learns from as they were,
under both policies and for every shape a serverless endpoint asks."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.decision import Placement, Refused, Request, Share
from provisioning.domain.placement.engine import POLICIES, PlacementEngine
from provisioning.domain.rungs import Performance, Rung
from tests.support.placement_fleet import fleet, policy

H100 = "H100-SXM-80GB"
ENDPOINTS = st.one_of(
    st.builds(lambda n: Request(rung=Rung.SERVERLESS, models=(H100,), gpus=n), st.integers(1, 8)),
    st.builds(
        lambda p: Request(rung=Rung.SERVERLESS, models=(H100,), mig_profile=p),
        st.sampled_from(sorted(CATALOG[H100].mig_profiles)),
    ),
    st.builds(
        lambda milli: Request(rung=Rung.SERVERLESS, models=(H100,), share=Share(Performance.MPS, milli)),
        st.integers(1, 999),
    ),
)


def fingerprint(engine: PlacementEngine) -> Any:
    """Everything a decision reads: each GPU's holders, each node's holder, each tenant's count, the workload, and
    the order of every index (a tie between equal nodes goes to the one an index meets first)."""
    state = engine.state
    order = (
        [(key, [list(b) for b in buckets]) for key, buckets in state.by_free.items()],
        [
            (k, g, [list(b) for b in buckets])
            for k, groups in state.gang_groups.items()
            for g, buckets in groups.items()
        ],
        [(k, g, [list(b) for b in bs]) for k, groups in state.domain_groups.items() for g, bs in groups.items()],
        [(k, m, list(group)) for k, groups in state.mig_by_state.items() for m, group in groups.items()],
        [(k, pool.levels[:], [(u, list(g)) for u, g in pool.by_used.items()]) for k, pool in state.soft_pools.items()],
        dict(state.pool_free),
        state.free_gpus,
        state.version,
    )
    gpus = tuple(
        (g.uuid, g.whole_tenant, g.mig, tuple(sorted(g.mig_tenants.items())), g.soft_tenant, g.soft_mode, g.soft_used)
        for node in state.nodes.values()
        for g in node.gpus
    )
    holders = tuple((n.id, n.holder) for n in state.nodes.values())
    counts = {tenant: milli for tenant, milli in state.tenant_milli.items() if milli}  # a default 0 is no change
    return gpus, holders, counts, state.workload.total, order


@pytest.mark.parametrize("name", POLICIES)
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(busy=st.lists(st.tuples(ENDPOINTS, st.booleans()), max_size=14), asked=ENDPOINTS)
def test_a_preview_changes_nothing_and_is_what_placing_now_decides(
    name: str, busy: list[tuple[Request, bool]], asked: Request
) -> None:
    engine = PlacementEngine(fleet(h100_nodes=3, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0), name)
    for tenant, (request, gone) in enumerate(busy, start=2):
        placed = engine.place(request, policy(tenant % 4 + 1))  # a few tenants, so soft shares meet their own
        if gone and isinstance(placed, Placement):
            engine.release(placed)  # some went since: the indexes' order is not the order things came in
    before = fingerprint(engine)
    preview = engine.preview(asked, policy(1))
    assert fingerprint(engine) == before
    assert engine.preview(asked, policy(1)) == preview  # asked twice, the same answer
    assert fingerprint(engine) == before
    if name == "best-fit":
        # The fragmentation score learns from each request it places, so its choice may move by the one it counts.
        assert engine.place(asked, policy(1)) == preview


def test_a_trial_is_not_nested() -> None:
    state = fleet()
    with state.trial(), pytest.raises(RuntimeError, match="already open"), state.trial():
        pass


def test_a_refused_preview_is_refused_the_same_and_a_quota_still_counts() -> None:
    engine = PlacementEngine(fleet(h100_nodes=1, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0))
    assert isinstance(engine.place(Request(rung=Rung.CONTAINER, models=(H100,), gpus=8), policy(2)), Placement)
    wanted = Request(rung=Rung.SERVERLESS, models=(H100,), gpus=1)
    assert isinstance(engine.preview(wanted, policy(1)), Refused)
    engine = PlacementEngine(fleet(h100_nodes=1, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0))
    over = engine.preview(wanted, policy(1), quota_milli=500)
    assert isinstance(over, Refused)
    assert over.reasons[0].code.value == "quota"
