"""Keeping GPUs whole (``PlacementEngine(keep_whole=...)``, docs/placement.md "Keeping GPUs whole"): a soft share
or MIG slice cuts a fresh GPU only while its pool has more wholly free GPUs than it keeps for whole-GPU work (the
share of its GPUs, times the share of recent requests asking whole GPUs of it); joining a partly used GPU and
whole-GPU work are never held back, and a workload without whole-GPU requests keeps nothing."""

from __future__ import annotations

import pytest

from provisioning.domain.placement.decision import Placement, Refused, Request, Share
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.isolation import Reason
from provisioning.domain.rungs import Performance, Rung
from tests.support.placement_fleet import fleet, policy

H100 = "H100-SXM-80GB"


def engine(keep_whole: float, engine_policy: str = "fragmentation") -> PlacementEngine:
    state = fleet(h100_nodes=2, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0)  # one pool of 16 GPUs
    return PlacementEngine(state, engine_policy, keep_whole=keep_whole)


def whole(e: PlacementEngine, tenant: int = 1) -> Placement | Refused:
    return e.place(Request(rung=Rung.CONTAINER, models=(H100,), gpus=1), policy(tenant))


def share(
    e: PlacementEngine, tenant: int, milli: int, mode: Performance = Performance.FRACTIONAL
) -> Placement | Refused:
    return e.place(Request(rung=Rung.SERVERLESS, models=(H100,), share=Share(mode, milli)), policy(tenant))


def test_the_last_free_gpus_go_to_whole_gpu_work_and_shares_join_what_is_cut() -> None:
    e = engine(keep_whole=0.5)
    assert isinstance(whole(e), Placement)  # the workload so far: whole-GPU requests, so 8 of 16 GPUs are kept
    first = share(e, 2, 300)
    assert isinstance(first, Placement)  # 15 free: a fresh GPU is cut
    for _ in range(10):
        assert isinstance(whole(e), Placement)
    assert e.state.pool_free[(H100, "eu-west-1a")] == 4
    refused = share(e, 3, 300)
    assert isinstance(refused, Refused)  # 4 free, 8 kept: no fresh GPU for a share
    assert refused.reasons[0].code is Reason.NO_CAPACITY
    joined = share(e, 2, 400)
    assert isinstance(joined, Placement)  # joining its own shared GPU takes nothing whole
    assert joined.devices[0].gpu_uuid == first.devices[0].gpu_uuid
    assert isinstance(whole(e), Placement)  # whole-GPU work takes the kept GPUs


@pytest.mark.parametrize(("keep", "engine_policy"), [(0.0, "fragmentation"), (0.5, "best-fit")])
def test_nothing_is_kept_by_default_nor_without_the_workload(keep: float, engine_policy: str) -> None:
    e = engine(keep_whole=keep, engine_policy=engine_policy)
    for _ in range(14):
        assert isinstance(whole(e), Placement)
    assert isinstance(share(e, 3, 300), Placement)  # best-fit reads no workload: it keeps nothing


def test_a_pool_nobody_asks_whole_gpus_of_keeps_none() -> None:
    e = engine(keep_whole=0.9)
    for tenant in range(2, 18):
        assert isinstance(share(e, tenant, 600), Placement)  # every GPU cut for shares: 16 tenants, 16 GPUs
    assert e.state.pool_free[(H100, "eu-west-1a")] == 0


def test_keep_whole_is_a_share() -> None:
    with pytest.raises(ValueError, match="keep_whole"):
        engine(keep_whole=1.0)
