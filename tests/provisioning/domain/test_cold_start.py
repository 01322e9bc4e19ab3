"""A cold start's phases and percentiles, without a database: the model the simulated fleet runs a wake by (device
wait, image pull unless cached, init plus weights at their source's bandwidth), a cold start read back from a
cluster's signals, and nearest-rank P50/P90/P99."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provisioning.domain.cold_start import (
    Bandwidths,
    ModelSource,
    cold_start,
    nearest_rank,
    observed,
    percentiles,
    percentiles_among,
)

LINKS = Bandwidths(registry=0.5, hub=0.25, volume=2.0)
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_it_adds_the_pull_and_the_weights_at_their_bandwidths() -> None:
    start = cold_start(
        device_wait_s=2,
        image_gb=8,
        image_cached=False,
        model_gb=20,
        model_source=ModelSource.HUB,
        init_s=1,
        bandwidths=LINKS,
    )
    assert (start.device_wait_ms, start.image_pull_ms, start.model_load_ms) == (2000, 16_000, 81_000)
    assert start.total_ms == 99_000
    assert (start.image_cached, start.model_source) == (False, ModelSource.HUB)


def test_a_cached_image_pulls_nothing_and_a_volume_reads_at_its_own_bandwidth() -> None:
    start = cold_start(
        device_wait_s=2,
        image_gb=8,
        image_cached=True,
        model_gb=20,
        model_source=ModelSource.VOLUME,
        init_s=1,
        bandwidths=LINKS,
    )
    assert start.phases == {"device_wait": 2000, "image_pull": 0, "model_load": 11_000}
    assert start.total_ms == 13_000


def test_without_a_model_only_the_init_loads_and_weights_need_a_source() -> None:
    start = cold_start(
        device_wait_s=0,
        image_gb=8,
        image_cached=True,
        model_gb=0,
        model_source=ModelSource.NONE,
        init_s=0,
        bandwidths=LINKS,
    )
    assert start.total_ms == 0
    with pytest.raises(ValueError, match="source"):
        cold_start(
            device_wait_s=0,
            image_gb=8,
            image_cached=True,
            model_gb=1,
            model_source=ModelSource.NONE,
            init_s=0,
            bandwidths=LINKS,
        )
    with pytest.raises(ValueError, match="0 or more"):
        cold_start(
            device_wait_s=-1,
            image_gb=8,
            image_cached=True,
            model_gb=0,
            model_source=ModelSource.NONE,
            init_s=0,
            bandwidths=LINKS,
        )
    with pytest.raises(ValueError, match="hub bandwidth"):
        Bandwidths(registry=1, hub=0, volume=1)


@given(
    wait=st.floats(0, 600),
    image=st.floats(0, 50),
    cached=st.booleans(),
    model=st.floats(0, 2000),
    volume=st.booleans(),
    init=st.floats(0, 60),
)
def test_the_phases_always_add_up_to_the_total_and_a_cache_never_makes_it_longer(
    wait: float, image: float, cached: bool, model: float, volume: bool, init: float
) -> None:
    source = ModelSource.VOLUME if volume else ModelSource.HUB
    args = {"device_wait_s": wait, "image_gb": image, "model_gb": model, "init_s": init, "bandwidths": LINKS}
    start = cold_start(image_cached=cached, model_source=source, **args)  # type: ignore[arg-type]
    assert sum(v or 0 for v in start.phases.values()) == start.total_ms
    warm = cold_start(image_cached=True, model_source=ModelSource.VOLUME, **args)  # type: ignore[arg-type]
    assert warm.total_ms <= start.total_ms  # the volume is faster than the hub here, and a cached image pulls 0


def test_a_cold_start_read_from_a_cluster_splits_at_its_signals() -> None:
    start = observed(
        woke_at=T0,
        scheduled_at=T0 + timedelta(seconds=3.2),
        pull_s=12.3,
        ready_at=T0 + timedelta(seconds=40),
        model_source=ModelSource.HUB,
    )
    assert start.phases == {"device_wait": 3200, "image_pull": 12_300, "model_load": 24_500}
    assert (start.total_ms, start.image_cached) == (40_000, False)
    present = observed(
        woke_at=T0,
        scheduled_at=T0 + timedelta(seconds=1),
        pull_s=0,
        ready_at=T0 + timedelta(seconds=5),
        model_source=ModelSource.VOLUME,
    )
    assert present.phases == {"device_wait": 1000, "image_pull": 0, "model_load": 4000}
    assert present.image_cached is True


def test_a_missing_signal_leaves_its_phase_and_the_load_unknown_and_disorder_never_goes_below_zero() -> None:
    unknown = observed(
        woke_at=T0, scheduled_at=None, pull_s=None, ready_at=T0 + timedelta(seconds=9), model_source=ModelSource.NONE
    )
    assert unknown.phases == {"device_wait": None, "image_pull": None, "model_load": None}
    assert (unknown.total_ms, unknown.image_cached) == (9000, None)
    skewed = observed(
        woke_at=T0,
        scheduled_at=T0 + timedelta(seconds=4),
        pull_s=10,  # longer than what is left up to ready: clocks apart
        ready_at=T0 + timedelta(seconds=6),
        model_source=ModelSource.NONE,
    )
    assert skewed.phases == {"device_wait": 4000, "image_pull": 2000, "model_load": 0}
    early = observed(
        woke_at=T0,
        scheduled_at=T0 - timedelta(seconds=1),
        pull_s=0,
        ready_at=T0 + timedelta(seconds=2),
        model_source=ModelSource.NONE,
    )
    assert early.phases == {"device_wait": 0, "image_pull": 0, "model_load": 2000}


def test_percentiles_are_nearest_rank() -> None:
    samples = list(range(1, 101))  # 1..100
    found = percentiles(reversed(samples))
    assert (found.count, found.p50, found.p90, found.p99) == (100, 50, 90, 99)
    assert percentiles([7]).as_dict() == {"count": 1, "p50": 7, "p90": 7, "p99": 7}
    assert percentiles([1, 2, 3, None]).as_dict() == {"count": 3, "p50": 2, "p90": 3, "p99": 3}
    assert percentiles([None]).as_dict() == {"count": 0, "p50": None, "p90": None, "p99": None}
    assert percentiles([10, 20]).p50 == 10  # the smallest with at least half at or below it
    with pytest.raises(ValueError, match="no samples"):
        nearest_rank([], 50)
    with pytest.raises(ValueError, match="more than 0"):
        nearest_rank([1], 0)


@given(st.lists(st.integers(0, 10**9), min_size=1, max_size=300), st.floats(0.01, 100))
def test_a_percentile_is_a_sample_with_at_least_that_share_at_or_below_it(samples: list[int], p: float) -> None:
    ordered = sorted(samples)
    value = nearest_rank(ordered, p)
    assert value in samples
    at_or_below = sum(1 for s in samples if s <= value)
    assert at_or_below >= math.ceil(p / 100 * len(samples))
    below = sum(1 for s in samples if s < value)
    assert below < math.ceil(p / 100 * len(samples))  # and none smaller would do
    found = percentiles(samples)
    assert found.count == len(samples)
    assert (found.p50 or 0) <= (found.p90 or 0) <= (found.p99 or 0)
    assert found.p50 in samples


def test_a_wait_among_requests_counts_the_ones_not_held_as_zero() -> None:
    assert percentiles_among([], 0).as_dict() == {"count": 0, "p50": None, "p90": None, "p99": None}
    assert percentiles_among([], 1000).as_dict() == {"count": 1000, "p50": 0, "p90": 0, "p99": 0}
    # 100 requests, 5 held 2..10 s: as the simulated fleet's list of 95 zeros and the five would give.
    held = [10_000, 2000, 8000, 4000, 6000]
    assert percentiles_among(held, 100) == percentiles([0] * 95 + held)
    assert percentiles_among(held, 100).as_dict() == {"count": 100, "p50": 0, "p90": 0, "p99": 8000}
    # Fewer requests counted than holds (the count is a scrape behind): the holds are all there is.
    assert percentiles_among(held, 3) == percentiles(held)


@given(st.lists(st.integers(0, 10**6), max_size=200), st.integers(0, 400))
def test_a_wait_among_requests_is_the_percentile_of_the_holds_and_the_zeros(held: list[int], extra: int) -> None:
    requests = len(held) + extra
    assert percentiles_among(held, requests) == percentiles([0] * extra + held)
