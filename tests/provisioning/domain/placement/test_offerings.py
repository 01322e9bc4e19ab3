"""Offerings: every rung x model x region with both axes, and the capacity free right now."""

from provisioning.domain.placement.decision import Request
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.offerings import offerings
from provisioning.domain.rungs import Rung
from tests.support.placement_fleet import fleet, policy

H100, H200 = "H100-SXM-80GB", "H200-141GB"


def row(rows, rung, model=H100, region="eu-west"):
    return next(r for r in rows if (r.rung, r.gpu_model, r.region) == (rung, model, region))


def test_it_lists_each_rung_with_both_axes_and_free_capacity():
    state = fleet(h100_nodes=2, h200_nodes=1, fenced_nodes=1, us_nodes=1, cc_nodes=1)
    rows = offerings(state)
    container = row(rows, Rung.CONTAINER)
    assert container.performance_isolation == ["mig", "whole_gpu"]
    assert container.security_isolation == "container"
    assert container.available == 16
    assert container.sovereign_available == 8  # the fenced hall, for sovereign EU tenants only
    assert container.mig_profiles["3g.40gb"] == 16
    assert row(rows, Rung.BARE_METAL).available == 2
    assert row(rows, Rung.BARE_METAL).unit == "node-seconds"
    assert row(rows, Rung.CONFIDENTIAL_VM).available == 8
    assert row(rows, Rung.SERVERLESS).performance_isolation == ["fractional", "mig", "mps", "time_slicing", "whole_gpu"]


def test_capacity_follows_placements():
    state = fleet(h100_nodes=1, h200_nodes=0, fenced_nodes=0, us_nodes=0, cc_nodes=0)
    engine = PlacementEngine(state)
    engine.place(Request(rung=Rung.CONTAINER, models=(H100,), gpus=3), policy(1))
    engine.place(Request(rung=Rung.CONTAINER, models=(H100,), mig_profile="4g.40gb"), policy(1))
    rows = offerings(state)
    container = row(rows, Rung.CONTAINER)
    assert container.available == 4
    assert container.mig_profiles["3g.40gb"] == 5  # 4 free GPUs + the one with a 4g at 0
    assert container.mig_profiles["4g.40gb"] == 4
    assert row(rows, Rung.BARE_METAL).available == 0
