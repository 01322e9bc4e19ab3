"""The engine and the price book: a request carrying its ``Pricing`` goes only to pools (GPU model x region) whose
shape has a price, and is refused ``not_priced``, naming the SKU, when the tenant may use none of those."""

from dataclasses import replace

from provisioning.domain.placement.decision import Placement, Pricing, Refused, Request
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.isolation import Reason
from provisioning.domain.rungs import Rung
from tests.support.placement_fleet import fleet, policy

H100, H200 = "H100-SXM-80GB", "H200-141GB"


def sku(model: str, region: str) -> str:
    return f"container/{model}/gpu/{region}"


def priced(*pools: tuple[str, str]) -> Pricing:
    return Pricing(priced=frozenset(pools), sku=sku)


def hall_of(engine: PlacementEngine, placement: Placement) -> set[str]:
    return {engine.state.nodes[d.node_id].hall.code for d in placement.devices}


def test_only_priced_pools_are_placed_on():
    engine = PlacementEngine(fleet())
    request = Request(rung=Rung.CONTAINER, models=(H100,), gpus=8, pricing=priced((H100, "us-east")))
    placements = [engine.place(request, policy(1)) for _ in range(2)]  # us-east-1a holds two free H100 nodes
    assert all(isinstance(p, Placement) and hall_of(engine, p) == {"us-east-1a"} for p in placements)
    third = engine.place(request, policy(1))
    assert isinstance(third, Refused)
    assert third.code is Reason.NO_CAPACITY  # eu-west-1a has free H100s, but no price there: they are not sold


def test_a_shape_without_a_price_is_refused_naming_its_sku_and_nothing_is_taken():
    engine = PlacementEngine(fleet())
    mig = Request(
        rung=Rung.SERVERLESS,
        models=(H100,),
        mig_profile="3g.40gb",
        pricing=Pricing(priced=frozenset(), sku=lambda m, r: f"serverless/{m}/mig-3g.40gb/{r}"),
    )
    refused = engine.place(mig, policy(1, regions=frozenset({"eu-west"})))
    assert isinstance(refused, Refused)
    assert refused.code is Reason.NOT_PRICED
    assert refused.reasons[0].sku == "serverless/H100-SXM-80GB/mig-3g.40gb/eu-west"
    assert "serverless/H100-SXM-80GB/mig-3g.40gb/eu-west has no price" in refused.message
    assert engine.state.tenant_milli[1] == 0
    placed = engine.place(replace(mig, pricing=None), policy(1, regions=frozenset({"eu-west"})))
    assert isinstance(placed, Placement)  # the same request without the price book's word: the engine had room


def test_a_price_where_the_tenant_may_not_run_does_not_count():
    engine = PlacementEngine(fleet())
    request = Request(rung=Rung.CONTAINER, models=(H100,), gpus=1, pricing=priced((H100, "us-east")))
    refused = engine.place(request, policy(1, regions=frozenset({"eu-west"})))
    assert isinstance(refused, Refused)
    assert refused.code is Reason.NOT_PRICED
    assert refused.reasons[0].sku == sku(H100, "eu-west")  # the pool the tenant may use, not the priced one


def test_residency_is_still_the_first_refusal():
    engine = PlacementEngine(fleet())
    request = Request(rung=Rung.CONTAINER, models=(H200,), gpus=1, pricing=priced())
    refused = engine.place(request, policy(1, regions=frozenset({"us-east"})))  # H200s are in the EU only
    assert isinstance(refused, Refused)
    assert refused.code is Reason.RESIDENCY  # where the tenant may not run, before any question of price


def test_models_priced_in_different_regions_each_go_where_they_are_priced():
    engine = PlacementEngine(fleet())
    both = priced((H100, "us-east"), (H200, "eu-west"))
    request = Request(rung=Rung.CONTAINER, models=(H100, H200), gpus=8, pricing=both)
    first = [engine.place(request, policy(1)) for _ in range(2)]
    assert all(isinstance(p, Placement) and (p.model, hall_of(engine, p)) == (H100, {"us-east-1a"}) for p in first)
    then = engine.place(request, policy(1))  # the priced H100s are taken: the customer's next model, where priced
    assert isinstance(then, Placement)
    assert (then.model, hall_of(engine, then)) == (H200, {"eu-west-1a"})
