"""A serverless endpoint's autoscaling, without a database: taken on the serverless rung only, each value in its
bounds, the values agreeing with each other and with the devices the endpoint is placed on (one kept for a
rollout), the defaults filled in as applied, and the replicas kept warm beyond demand."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provisioning.domain.os_images import os_catalog
from provisioning.domain.rungs import Rung
from provisioning.domain.workload_rules import DEFAULT_REGISTRIES, WorkloadInvalid, workload_check
from provisioning.domain.workloads import Autoscaling, Workload, autoscaling_applied, serving_replicas

IMAGE = "vllm/vllm-openai:v0.11.0"


def check(autoscaling: Autoscaling, *, rung: str = Rung.SERVERLESS, devices: int = 4) -> None:
    workload = Workload(image=IMAGE, autoscaling=autoscaling)
    workload_check(workload, rung=rung, registries=DEFAULT_REGISTRIES, os_images=os_catalog(), devices=devices)


def refused(autoscaling: Autoscaling, **kw: Any) -> WorkloadInvalid:
    with pytest.raises(WorkloadInvalid) as caught:
        check(autoscaling, **kw)
    return caught.value


def test_a_serverless_endpoint_takes_every_setting() -> None:
    check(
        Autoscaling(
            min_replicas=1,
            max_replicas=3,
            target_in_flight=8,
            scale_up_window_s=30,
            scale_down_window_s=600,
            buffer_replicas=1,
            signal="kv_cache",
            kv_cache_target=Decimal("0.7"),
        )
    )
    check(Autoscaling(idle_seconds=900))  # scales to zero after its own idle window


@pytest.mark.parametrize("rung", [r for r in Rung if r != Rung.SERVERLESS])
def test_other_rungs_refuse_it_naming_the_rung_that_offers_it(rung: Rung) -> None:
    error = refused(Autoscaling(), rung=rung)
    assert error.field == "autoscaling"
    assert f"The {rung} rung does not take autoscaling" in error.message
    assert "offered on serverless" in error.message


def test_more_replicas_than_the_devices_allow_are_refused_naming_the_limit_and_why() -> None:
    error = refused(Autoscaling(max_replicas=4), devices=4)
    assert error.field == "autoscaling.max_replicas"
    assert "at most 3 replicas" in error.message
    assert "keeps one device free for a rollout's surge replica" in error.message
    one = refused(Autoscaling(max_replicas=2), devices=1)
    assert "at most 1 replicas" in one.message
    assert "placed on one device" in one.message
    check(Autoscaling(max_replicas=3), devices=4)
    check(Autoscaling(max_replicas=1), devices=1)


CROSSED = [
    (Autoscaling(max_replicas=0), "autoscaling.max_replicas", "at most 3"),
    (Autoscaling(min_replicas=-1), "autoscaling.min_replicas", "0 (scale to zero) or more"),
    (Autoscaling(min_replicas=3, max_replicas=2), "autoscaling.min_replicas", "min_replicas (3) is above max_replicas"),
    (Autoscaling(min_replicas=4), "autoscaling.min_replicas", "above max_replicas (3)"),  # the default max
    (Autoscaling(buffer_replicas=-1), "autoscaling.buffer_replicas", "0 or more"),
    (Autoscaling(min_replicas=2, buffer_replicas=2), "autoscaling.buffer_replicas", "(4) is above max_replicas (3)"),
    (Autoscaling(target_in_flight=0), "autoscaling.target_in_flight", "from 1 to 1000"),
    (Autoscaling(scale_up_window_s=3601), "autoscaling.scale_up_window_s", "from 0 to 3600"),
    (Autoscaling(scale_down_window_s=-1), "autoscaling.scale_down_window_s", "from 0 to 3600"),
    (Autoscaling(idle_seconds=10), "autoscaling.idle_seconds", "from 30 to 86400"),
    (Autoscaling(min_replicas=1, idle_seconds=600), "autoscaling.idle_seconds", "never goes to zero"),
    (Autoscaling(signal="gpu"), "autoscaling.signal", "queue_depth, kv_cache"),
    (Autoscaling(kv_cache_target=Decimal("0.5")), "autoscaling.kv_cache_target", 'goes with "signal": "kv_cache"'),
    (
        Autoscaling(signal="kv_cache", kv_cache_target=Decimal(0)),
        "autoscaling.kv_cache_target",
        "above 0 and at most 1",
    ),
    (
        Autoscaling(signal="kv_cache", kv_cache_target=Decimal("1.5")),
        "autoscaling.kv_cache_target",
        "above 0 and at most 1",
    ),
]


@pytest.mark.parametrize(
    ("autoscaling", "field", "words"), CROSSED, ids=[f"{f}-{i}" for i, (_, f, _) in enumerate(CROSSED)]
)
def test_values_out_of_bounds_or_at_odds_are_refused_naming_the_field(
    autoscaling: Autoscaling, field: str, words: str
) -> None:
    error = refused(autoscaling, devices=4)
    assert error.field == field
    assert words in error.message


def test_the_defaults_are_filled_in_as_applied() -> None:
    applied = autoscaling_applied(None, devices=4, idle_seconds=299.5)
    assert applied == Autoscaling(
        min_replicas=0,
        max_replicas=3,  # four devices: one kept for a rollout
        target_in_flight=4,
        scale_up_window_s=0,
        scale_down_window_s=300,
        idle_seconds=300,  # the operator's window, in whole seconds
        buffer_replicas=0,
        signal="queue_depth",
        kv_cache_target=None,  # not scaled on the KV cache
    )
    kv = autoscaling_applied(Autoscaling(signal="kv_cache", max_replicas=2), devices=4, idle_seconds=300)
    assert (kv.max_replicas, kv.kv_cache_target) == (2, Decimal("0.8"))
    always_on = autoscaling_applied(Autoscaling(min_replicas=1), devices=1, idle_seconds=300)
    assert (always_on.max_replicas, always_on.idle_seconds, always_on.floor) == (1, None, 1)
    own_window = autoscaling_applied(Autoscaling(idle_seconds=900), devices=2, idle_seconds=300)
    assert own_window.idle_seconds == 900


def test_the_buffer_keeps_replicas_warm_beyond_demand_within_the_bounds() -> None:
    scaling = autoscaling_applied(Autoscaling(buffer_replicas=2, target_in_flight=4), devices=8, idle_seconds=300)
    assert scaling.max_replicas == 7
    assert scaling.warm_replicas(1) == 3  # one replica's demand, two more warm
    assert scaling.warm_replicas(9) == 5  # ceil(9 / 4) = 3, and two more
    assert scaling.warm_replicas(100) == 7  # never above max_replicas


@given(
    devices=st.integers(min_value=1, max_value=16),
    minimum=st.integers(min_value=0, max_value=15),
    buffer=st.integers(min_value=0, max_value=15),
    target=st.integers(min_value=1, max_value=50),
    depth=st.floats(min_value=0.001, max_value=10_000, allow_nan=False),
)
def test_a_valid_endpoint_keeps_its_warm_replicas_between_its_floor_and_its_maximum(
    devices: int, minimum: int, buffer: int, target: int, depth: float
) -> None:
    asked = Autoscaling(min_replicas=minimum, buffer_replicas=buffer, target_in_flight=target)
    try:
        check(asked, devices=devices)
    except WorkloadInvalid:
        assert minimum + buffer > serving_replicas(devices)
        return
    scaling = autoscaling_applied(asked, devices=devices, idle_seconds=300)
    assert scaling.max_replicas is not None
    assert 1 <= scaling.floor <= scaling.warm_replicas(depth) <= scaling.max_replicas <= serving_replicas(devices)


def test_the_stored_form_keeps_the_fraction_as_a_decimal_string() -> None:
    asked = Autoscaling(min_replicas=1, signal="kv_cache", kv_cache_target=Decimal("0.750"))
    stored = Workload(image=IMAGE, autoscaling=asked).to_json()
    assert stored["autoscaling"]["kv_cache_target"] == "0.75"
    assert Workload.from_json(stored).autoscaling == asked
    assert Workload.from_json(Workload(image=IMAGE).to_json()).autoscaling is None
