"""Properties of the engine over random request sequences, under each placement policy: whatever the order, no
device is double-booked, soft-shared GPUs hold one tenant, residency and fences hold, MIG placements are legal,
and releasing everything gives back an empty fleet."""

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.decision import Placement, Request, Share
from provisioning.domain.placement.engine import POLICIES as POLICY_NAMES
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.isolation import Reason, hall_allowed
from provisioning.domain.placement.mig import GEOMETRY, MigKind, rebuild
from provisioning.domain.rungs import Performance, Rung
from tests.support.placement_fleet import fleet, policy

H100, H200 = "H100-SXM-80GB", "H200-141GB"
MODELS = st.sampled_from([(H100,), (H200,), (H100, H200)])

POLICIES = {
    1: policy(1),
    2: policy(2, regions=frozenset({"eu-west"})),
    3: policy(3, jurisdiction="EU", sovereign=True),
    4: policy(4, dedicated_hardware=True),
    5: policy(5, jurisdictions=frozenset({"US"})),
}

REQUESTS = st.one_of(
    st.builds(lambda m, n: Request(rung=Rung.CONTAINER, models=m, gpus=n), MODELS, st.integers(1, 8)),
    st.builds(lambda m, n: Request(rung=Rung.VM, models=m, gpus=n), MODELS, st.integers(1, 4)),
    st.builds(
        lambda p: Request(rung=Rung.CONTAINER, models=(H100,), mig_profile=p),
        st.sampled_from(sorted(CATALOG[H100].mig_profiles)),
    ),
    st.builds(
        lambda mode, milli: Request(rung=Rung.SERVERLESS, models=(H100,), share=Share(mode, milli)),
        st.sampled_from([Performance.MPS, Performance.TIME_SLICING, Performance.FRACTIONAL]),
        st.integers(1, 999),
    ),
    st.builds(
        lambda n, size, topo: Request(rung=Rung.JOB, models=(H100,), gpus=n, gang_size=size, topology=topo),
        st.sampled_from([1, 2, 4, 8]),
        st.integers(2, 4),
        st.sampled_from([None, "nvlink"]),
    ),
    st.builds(lambda m, n: Request(rung=Rung.BARE_METAL, models=m, nodes=n), MODELS, st.integers(1, 2)),
    st.builds(lambda n: Request(rung=Rung.CONFIDENTIAL_VM, models=(H100,), gpus=n), st.integers(1, 8)),
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("place"), st.sampled_from(sorted(POLICIES)), REQUESTS),
        st.tuples(st.just("release"), st.integers(0, 1000), st.none()),
    ),
    max_size=40,
)


def check_invariants(engine: PlacementEngine, active: list[Placement]) -> None:
    whole: dict[str, int] = {}
    mig: dict[str, list[tuple[int, MigKind, int]]] = defaultdict(list)
    dedicated: set[str] = set()
    soft: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for placement in active:
        hall = None
        for device in placement.devices:
            node = engine.state.nodes[device.node_id]
            hall = node.hall
            if device.mig_profile is not None and device.mig_start is not None:
                kind = CATALOG[placement.model].mig_profiles[device.mig_profile]
                mig[device.gpu_uuid].append((placement.tenant_id, kind, device.mig_start))
                if placement.dedicated:
                    dedicated.add(device.gpu_uuid)
            elif device.share_milli is not None:
                soft[device.gpu_uuid].append((placement.tenant_id, device.share_milli))
            else:
                assert device.gpu_uuid not in whole, "a whole GPU granted twice"
                whole[device.gpu_uuid] = placement.tenant_id
        assert hall is not None
        assert hall_allowed(POLICIES[placement.tenant_id], hall) is None, "residency or a fence was crossed"
    for uuid, holders in mig.items():
        assert uuid not in whole, "a MIG GPU is also held whole"
        assert uuid not in soft, "a MIG GPU is also soft-shared"
        slices = [(k, s) for _, k, s in holders]
        rebuild(slices)  # raises on an illegal start or an overlap
        assert sum(GEOMETRY[k].compute for k, _ in slices) <= 7
        if uuid in dedicated:
            assert len({t for t, _, _ in holders}) == 1, "a dedicated tenant's GPU was shared"
    for uuid, shares in soft.items():
        assert uuid not in whole
        assert len({t for t, _ in shares}) == 1, "soft sharing crossed tenants"
        assert sum(m for _, m in shares) <= 1000
    pooled = {}
    for key, pool in engine.state.soft_pools.items():
        assert pool.levels == sorted(pool.by_used)
        for used, gpus in pool.by_used.items():
            for gpu in gpus.values():
                assert (gpu.soft_tenant, gpu.soft_mode, gpu.node.model, gpu.node.hall.code) == key
                assert gpu.soft_used == used
                pooled[gpu.uuid] = gpu
    shared_on_general = {g.uuid for n in engine.state.nodes.values() if n.general for g in n.gpus if g.soft_used}
    assert set(pooled) == shared_on_general, "the soft-share index lost or kept a GPU"
    for node in engine.state.nodes.values():
        if node.cc_mode:
            tenants = {whole[g.uuid] for g in node.gpus if g.uuid in whole}
            assert len(tenants) <= 1, "a confidential host serves two tenants"


@pytest.mark.parametrize("placement_policy", POLICY_NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_no_sequence_of_requests_breaks_the_rules(placement_policy, steps):
    engine = PlacementEngine(
        fleet(h100_nodes=3, h200_nodes=1, fenced_nodes=1, us_nodes=1, cc_nodes=1), policy=placement_policy
    )
    active: list[Placement] = []
    for action, arg, request in steps:
        if action == "place":
            result = engine.place(request, POLICIES[arg])
            if isinstance(result, Placement):
                active.append(result)
        elif active:
            engine.release(active.pop(arg % len(active)))
        check_invariants(engine, active)
    for placement in active:
        engine.release(placement)
    state = engine.state
    assert all(g.free for n in state.nodes.values() for g in n.gpus)
    assert all(n.holder is None for n in state.nodes.values())
    assert not any(state.tenant_milli.values())
    for buckets in state.by_free.values():
        for free, nodes in enumerate(buckets):
            assert all(n.free == free and n.general for n in nodes.values())
    indexed = {n.id for buckets in state.by_free.values() for b in buckets for n in b.values()}
    assert indexed == {n.id for n in state.nodes.values() if n.general}
    check_group_indexes(state)


FABRICS = st.sampled_from(["fab-a", "fab-a", "fab-a", "fab-b", ""])  # mostly one fabric: version sets matter too
VERSION_SETS = st.sampled_from([("580.65", "13.0", "2.27", "96.00"), ("570.10", "12.8", "2.21", "95.00")])
GROUPED_NODES = st.lists(
    st.tuples(st.integers(0, 2), FABRICS, VERSION_SETS, st.sampled_from([H100, H200]), st.integers(0, 8)),
    min_size=1,
    max_size=12,
)
GANGS = st.lists(
    st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(2, 5), st.sampled_from([None, "nvlink"]), MODELS),
    min_size=1,
    max_size=8,
)


def grouped_fleet(nodes):
    """Random fleets over two halls of one region: each node's NVLink domain, fabric, versions, model, and how many
    of its 8 GPUs are already taken (by tenant 9) before the gangs arrive."""
    from provisioning.domain.placement.isolation import HallInfo
    from provisioning.domain.placement.state import FleetState

    state = FleetState()
    for hall in ("h1", "h2"):
        state.add_hall(HallInfo(hall, "r", "EU", None))
    for node_id, (domain, fabric, versions, model, used) in enumerate(nodes, start=1):
        hall = "h1" if node_id % 2 else "h2"
        node = state.add_node(
            id=node_id,
            hostname=f"n{node_id}",
            hall=hall,
            model=model,
            gpu_uuids=[f"g{node_id}-{i}" for i in range(8)],
            nvlink_domain=f"{hall}/d{domain}",
            versions=versions,
            fabric=fabric,
        )
        for gpu in node.gpus[:used]:
            state.hold_whole(gpu, 9)
    return state


def room(state, request):
    """Members each (model, domain if NVLink, fabric, versions) group could hold, and per scope when mixing versions
    (one fabric), mixing fabrics (one version set), or both."""
    groups: dict[tuple, int] = defaultdict(int)
    fabrics: dict[tuple, int] = defaultdict(int)
    version_sets: dict[tuple, int] = defaultdict(int)
    scopes: dict[tuple, int] = defaultdict(int)
    for node in state.nodes.values():
        if not node.general or node.model not in request.models:
            continue
        scope = (node.model, node.nvlink_domain) if request.topology == "nvlink" else (node.model,)
        held = node.free // request.gpus
        groups[(*scope, node.fabric, node.versions)] += held
        fabrics[(*scope, node.fabric)] += held
        version_sets[(*scope, node.versions)] += held
        scopes[scope] += held
    return groups, fabrics, version_sets, scopes


def check_group_indexes(state):
    """Every general node with free GPUs sits in its group's bucket for its free count, and nowhere else."""
    for index, key_of in (
        (state.gang_groups, lambda n: n.gang_group),
        (state.domain_groups, lambda n: (n.nvlink_domain, *n.gang_group)),
    ):
        seen = {}
        for (model, hall), groups in index.items():
            for group, buckets in groups.items():
                for free, nodes in enumerate(buckets):
                    for node in nodes.values():
                        assert (node.model, node.hall.code, key_of(node), node.free) == (model, hall, group, free)
                        assert node.general
                        assert node.id not in seen
                        seen[node.id] = node
        assert set(seen) == {n.id for n in state.nodes.values() if n.general and n.free}


@pytest.mark.parametrize("placement_policy", POLICY_NAMES)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=GROUPED_NODES, gangs=GANGS)
def test_a_gang_shares_one_fabric_and_one_version_set_and_is_refused_only_when_no_group_holds_it(
    placement_policy, nodes, gangs
):
    engine = PlacementEngine(grouped_fleet(nodes), policy=placement_policy)
    for per, members, topology, models in gangs:
        request = Request(rung=Rung.JOB, models=models, gpus=per, gang_size=members, topology=topology)
        groups, fabrics, version_sets, scopes = room(engine.state, request)
        result = engine.place(request, POLICIES[1])
        if isinstance(result, Placement):
            placed = [engine.state.nodes[d.node_id] for d in result.devices]
            assert len(result.devices) == per * members
            assert len({(n.fabric, n.versions) for n in placed}) == 1, "a gang spans fabrics or version sets"
            assert {n.model for n in placed} == {result.model}
            if topology == "nvlink":
                assert len({n.nvlink_domain for n in placed}) == 1
            for node in {n.id: n for n in placed}.values():
                assert sum(d.node_id == node.id for d in result.devices) % per == 0  # whole members per node
        else:
            assert max(groups.values(), default=0) < members, "refused although one group had room"
            if max(scopes.values(), default=0) < members:
                expected = Reason.NO_CAPACITY  # even mixing everything there is no room
            elif max(fabrics.values(), default=0) < members:
                expected = Reason.FABRIC_SPLIT  # even mixing versions it would need two fabrics
            else:
                expected = Reason.VERSION_SKEW  # one fabric would do, with mixed versions
            assert result.code is expected
            event(f"refused: {expected}")
            if expected is Reason.FABRIC_SPLIT:  # the message adds the versions when they would differ too
                assert ("versions" in result.message) == (max(version_sets.values(), default=0) < members)
        check_group_indexes(engine.state)
