"""What scales a serverless endpoint, rendered from its autoscaling: a HorizontalPodAutoscaler (the default) or a
KEDA ScaledObject (``LADDER_SERVERLESS_AUTOSCALER=keda``), with its bounds, windows and signals; every one
validated offline against Kubernetes 1.34 (strict) or KEDA's CRD, and the validator shown to catch a wrong field."""

from __future__ import annotations

import copy
from dataclasses import replace
from decimal import Decimal
from typing import Any

import jsonschema
import pytest

from provisioning.domain.workloads import Autoscaling, Workload
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.render_scaling import kv_cache_query, queue_depth_query
from provisioning.drivers.kubernetes.shapes import AllocationShape
from tests.provisioning.drivers.kubernetes.test_render import SERVERLESS, SERVERLESS_MIG, TIME_SLICED, by_kind, one
from tests.support import k8s_schemas as schemas

PROMETHEUS = "http://prometheus.monitoring.svc:9090"
ASKED = [
    None,
    Autoscaling(),
    Autoscaling(min_replicas=1, target_in_flight=16, scale_up_window_s=30, scale_down_window_s=900),
    Autoscaling(idle_seconds=900, buffer_replicas=1),
    Autoscaling(min_replicas=1, signal="kv_cache"),
    Autoscaling(signal="kv_cache", kv_cache_target=Decimal("0.65")),
]


def endpoint(
    autoscaling: Autoscaling | None, shape: AllocationShape = SERVERLESS, autoscaler: str = "hpa"
) -> AllocationShape:
    workload = Workload(image="vllm/vllm-openai:v0.11.0", autoscaling=autoscaling)
    return replace(shape, workload=workload, autoscaler=autoscaler, prometheus_url=PROMETHEUS)


@pytest.mark.parametrize("autoscaler", ["hpa", "keda"])
@pytest.mark.parametrize("shape", [SERVERLESS, SERVERLESS_MIG, TIME_SLICED], ids=["whole", "mig", "time-sliced"])
@pytest.mark.parametrize("asked", ASKED, ids=[f"asked-{i}" for i in range(len(ASKED))])
def test_every_autoscaler_rendered_validates(
    asked: Autoscaling | None, shape: AllocationShape, autoscaler: str
) -> None:
    objs = render.allocation_objects(endpoint(asked, shape, autoscaler))
    schemas.validate_all(objs)
    kinds = [o["kind"] for o in objs]
    assert ("ScaledObject" in kinds, "HorizontalPodAutoscaler" in kinds) == (autoscaler == "keda", autoscaler == "hpa")


def test_the_hpa_takes_the_endpoints_bounds_windows_and_target() -> None:
    asked = Autoscaling(min_replicas=2, target_in_flight=16, scale_up_window_s=30, scale_down_window_s=900)
    hpa = one(render.allocation_objects(endpoint(asked)), "HorizontalPodAutoscaler")["spec"]
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (2, 2)  # three GPUs: one kept for a rollout
    assert hpa["behavior"] == {
        "scaleUp": {"stabilizationWindowSeconds": 30},
        "scaleDown": {"stabilizationWindowSeconds": 900},
    }
    (queue,) = hpa["metrics"]
    assert queue["external"] == {
        "metric": {"name": "ladder_queue_depth", "selector": {"matchLabels": {"ladder.io/allocation": "108"}}},
        "target": {"type": "AverageValue", "averageValue": "16"},
    }


def test_an_hpa_never_goes_below_one_the_loop_takes_it_to_zero() -> None:
    hpa = one(render.allocation_objects(endpoint(Autoscaling(min_replicas=0))), "HorizontalPodAutoscaler")["spec"]
    assert hpa["minReplicas"] == 1
    default = one(render.allocation_objects(endpoint(None)), "HorizontalPodAutoscaler")["spec"]
    assert (default["minReplicas"], default["maxReplicas"]) == (1, 2)
    assert default["behavior"]["scaleDown"] == {"stabilizationWindowSeconds": 300}
    assert default["metrics"][0]["external"]["target"]["averageValue"] == "4"


def test_on_the_kv_cache_the_hpa_scales_on_a_second_external_metric_beside_the_queue() -> None:
    asked = Autoscaling(signal="kv_cache", kv_cache_target=Decimal("0.65"))
    hpa = one(render.allocation_objects(endpoint(asked)), "HorizontalPodAutoscaler")["spec"]
    queue, kv = hpa["metrics"]
    assert queue["external"]["metric"]["name"] == "ladder_queue_depth"
    assert kv == {
        "type": "External",
        "external": {
            "metric": {"name": "ladder_kv_cache_usage", "selector": {"matchLabels": {"ladder.io/allocation": "108"}}},
            "target": {"type": "Value", "value": "650m"},
        },
    }
    default = one(render.allocation_objects(endpoint(Autoscaling(signal="kv_cache"))), "HorizontalPodAutoscaler")
    assert default["spec"]["metrics"][1]["external"]["target"]["value"] == "800m"


def test_keda_scales_it_to_zero_itself_on_prometheus_triggers() -> None:
    objs = render.allocation_objects(endpoint(Autoscaling(idle_seconds=900), autoscaler="keda"))
    assert not by_kind(objs, "HorizontalPodAutoscaler")  # KEDA makes its own
    scaled = one(objs, "ScaledObject")
    spec = scaled["spec"]
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    assert scaled["metadata"]["labels"]["ladder.io/allocation"] == "108"
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ldr-108"}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"], spec["cooldownPeriod"]) == (0, 2, 900)
    assert spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 300
    }
    (queue,) = spec["triggers"]
    assert queue == {
        "type": "prometheus",
        "name": "queue-depth",
        "metricType": "AverageValue",
        "metadata": {"serverAddress": PROMETHEUS, "query": queue_depth_query(SERVERLESS), "threshold": "4"},
    }
    assert queue_depth_query(SERVERLESS) == (
        'sum(envoy_cluster_upstream_rq_pending_active{envoy_cluster_name=~"httproute/ladder-acme/ldr-108/rule/.+"}) '
        '+ sum(envoy_cluster_upstream_rq_active{envoy_cluster_name=~"httproute/ladder-acme/ldr-108/rule/.+"})'
    )
    # The operator's idle window when the endpoint names none.
    default = one(
        render.allocation_objects(replace(endpoint(None, autoscaler="keda"), idle_seconds=120)), "ScaledObject"
    )
    assert default["spec"]["cooldownPeriod"] == 120


def test_keda_keeps_an_endpoint_that_never_goes_to_zero_at_its_minimum() -> None:
    asked = Autoscaling(min_replicas=1, signal="kv_cache", kv_cache_target=Decimal("0.7"))
    spec = one(render.allocation_objects(endpoint(asked, autoscaler="keda")), "ScaledObject")["spec"]
    assert spec["minReplicaCount"] == 1
    assert "cooldownPeriod" not in spec
    queue, kv = spec["triggers"]
    assert queue["name"] == "queue-depth"
    assert kv == {
        "type": "prometheus",
        "name": "kv-cache",
        "metricType": "Value",
        "metadata": {"serverAddress": PROMETHEUS, "query": kv_cache_query(SERVERLESS), "threshold": "0.7"},
    }
    assert kv_cache_query(SERVERLESS) == 'avg(vllm:kv_cache_usage_perc{namespace="ladder-acme",pod=~"ldr-108-.+"})'


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "minReplicas"), 1),  # the HPA's word, not KEDA's
        (("spec", "triggers", 0, "metadata", "threshold"), 4),  # trigger metadata are strings
        (("spec", "cooldownPeriod"), "900"),
    ],
)
def test_the_keda_validator_catches_a_wrong_field(path: tuple[Any, ...], value: Any) -> None:
    scaled = one(render.allocation_objects(endpoint(Autoscaling(idle_seconds=900), autoscaler="keda")), "ScaledObject")
    bad = copy.deepcopy(scaled)
    target = bad
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_keda(bad)
    schemas.validate_keda(scaled)
