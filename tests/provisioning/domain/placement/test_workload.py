"""The workload histogram and the fragmentation score read from it: probabilities that add up, decay at the stated
half-life, and fragmentation that never exceeds the free capacity it measures."""

from hypothesis import given, settings
from hypothesis import strategies as st

from provisioning.domain.placement.mig import EMPTY, GEOMETRY, MigKind, place
from provisioning.domain.placement.workload import FULL, Shape, Workload, scarcity
from provisioning.domain.rungs import Performance

POOLS = [("H100-SXM-80GB", "eu-west-1a"), ("H100-SXM-80GB", "us-east-1a"), ("H200-141GB", "eu-west-1a")]
OWNERS = [(1, Performance.FRACTIONAL), (2, Performance.FRACTIONAL), (1, Performance.MPS)]

SHAPES = st.one_of(
    st.builds(lambda n: Shape(gpus=n), st.integers(1, 8)),
    st.builds(lambda k: Shape(kind=k), st.sampled_from(list(MigKind))),
    st.builds(lambda m, o: Shape(milli=m, owner=o), st.integers(1, 999), st.sampled_from(OWNERS)),
)
REQUESTS = st.lists(
    st.tuples(SHAPES, st.lists(st.sampled_from(POOLS), min_size=1, max_size=3, unique=True), st.booleans()),
    min_size=1,
    max_size=60,
)


def fill(requests, **kw):
    workload = Workload(**kw)
    for shape, pools, constrained in requests:
        workload.observe([(p, shape) for p in pools], 1000, constrained)
    return workload


@settings(max_examples=100, deadline=None)
@given(requests=REQUESTS)
def test_each_pool_sees_every_request_as_its_own_or_excluded(requests):
    snapshot = fill(requests, refresh=1).snapshot()
    for key in POOLS:
        view = snapshot.pool(key)
        own = view.whole_above[0] + sum(view.mig.values()) + sum(view.soft_usable(o, FULL) for o in OWNERS)
        assert 0.0 <= view.excluded <= 1.0
        assert abs(own + view.excluded - 1.0) < 1e-9 or not any(key in p for _, p, _ in requests)
        assert list(view.whole_above) == sorted(view.whole_above, reverse=True)
        assert 0.0 <= view.exclusive <= 1.0 + 1e-9


@settings(max_examples=100, deadline=None)
@given(requests=REQUESTS, free=st.integers(0, 8), take=st.integers(1, 8), room=st.integers(0, 1000))
def test_fragmentation_never_exceeds_the_free_capacity_it_measures(requests, free, take, room):
    view = fill(requests, refresh=1).snapshot().pool(POOLS[0])
    for owner in (*OWNERS, None):
        assert 0.0 <= view.soft_fragmentation(owner, room) <= room
    for kind in MigKind:
        state = place(EMPTY, kind, GEOMETRY[kind].starts[0])
        assert 0.0 <= view.mig_fragmentation(state) <= state.free_compute * FULL / 7 + 1e-9
    assert 0.0 <= view.free_gpu_fragmentation(free) <= FULL + 1e-9
    if take <= free:
        # taking GPUs never leaves more fragmented capacity than the node had free
        before = free * view.free_gpu_fragmentation(free)
        assert before + view.take_whole(free, take) <= (free - take) * FULL + 1e-9


@settings(max_examples=50, deadline=None)
@given(exclusive=st.floats(0, 1), pool=st.integers(0, 10_000), extra=st.integers(0, 10_000))
def test_scarcity_is_a_probability_that_falls_as_supply_grows(exclusive, pool, extra):
    fleet = 20_000
    low, high = scarcity(exclusive, pool, fleet), scarcity(exclusive, pool + extra, fleet)
    assert 0.0 <= high <= low <= 1.0


def test_a_request_weighs_half_after_one_half_life():
    workload = Workload(half_life=100, refresh=1)
    key = POOLS[0]
    workload.observe([(key, Shape(gpus=8))], 8000, False)
    for _ in range(100):
        workload.observe([(key, Shape(gpus=1))], 1000, False)
    view = workload.snapshot().pool(key)
    # 101 requests; the k-th weighs growth ** k, so the first (the 8-GPU one) weighs half the last
    growth = 2 ** (1 / 100)
    weights = [growth**k for k in range(101)]
    assert abs(weights[0] / weights[-1] - 0.5) < 1e-12
    assert abs(view.whole_above[1] - weights[0] / sum(weights)) < 1e-12


def test_the_snapshot_is_reused_until_enough_requests_arrived():
    workload = Workload(refresh=4)
    key = POOLS[0]
    workload.observe([(key, Shape(gpus=1))], 1000, False)
    first = workload.snapshot()
    for _ in range(3):
        workload.observe([(key, Shape(gpus=2))], 2000, False)
        assert workload.snapshot() is first
    workload.observe([(key, Shape(gpus=2))], 2000, False)
    assert workload.snapshot() is not first


def test_constrained_demand_is_what_makes_a_pool_scarce():
    workload = Workload(refresh=1)
    h100, h200 = POOLS[0], POOLS[2]
    for _ in range(10):
        workload.observe([(h100, Shape(gpus=1)), (h200, Shape(gpus=1))], 1000, False)  # either will do
        workload.observe([(h200, Shape(gpus=1))], 1000, True)  # only H200
    snapshot = workload.snapshot()
    assert snapshot.pool(h100).exclusive == 0.0
    assert abs(snapshot.pool(h200).exclusive - 0.5) < 1e-3  # later requests weigh a little more
    assert scarcity(snapshot.pool(h200).exclusive, pool_free=8, fleet_free=64) == 1.0
    assert scarcity(snapshot.pool(h100).exclusive, pool_free=8, fleet_free=64) == 0.0


def test_a_tenant_with_little_history_is_taken_to_ask_like_the_others():
    workload = Workload(half_life=10**12, refresh=1)  # no decay, for round figures
    key = POOLS[0]
    newcomer, regular = (1, Performance.FRACTIONAL), (2, Performance.FRACTIONAL)
    workload.observe([(key, Shape(milli=300, owner=newcomer))], 300, False)
    for _ in range(40):
        workload.observe([(key, Shape(milli=600, owner=regular))], 600, False)
    view = workload.snapshot().pool(key)
    mass = view.soft_usable(newcomer, FULL)  # the newcomer's share of the requests, all sizes
    # one share of 300 seen, against one pseudo-count per size in the pool (300 and 600) spread as everybody asks
    # (1/41 at 300): about two thirds of its mass is expected at 600, where its own history alone puts nothing
    assert abs(view.soft_usable(newcomer, 599) - mass * (1 * 1 + 2 * (1 / 41)) / 3) < 1e-6
    assert abs(view.soft_usable(newcomer, 600) - mass) < 1e-9
    # the regular tenant's 40 shares outweigh the two pseudo-counts: its own sizes dominate
    assert view.soft_usable(regular, 599) < 0.05 * view.soft_usable(regular, FULL)
