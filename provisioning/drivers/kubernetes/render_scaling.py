"""What scales a serverless endpoint's Deployment, by the operator's choice (``LADDER_SERVERLESS_AUTOSCALER``): a
HorizontalPodAutoscaler on external metrics a metrics adapter serves, or a KEDA ScaledObject whose triggers query
Prometheus directly. Either is rendered from the endpoint's autoscaling as applied (docs/serverless.md,
"Autoscaling"). Pure functions returning plain dicts (no Django, no I/O).

The scaling signals:
- queue depth: the requests waiting and in flight on the endpoint's route, counted by the Gateway's proxy (Envoy
  Gateway's ``envoy_cluster_upstream_rq_pending_active + envoy_cluster_upstream_rq_active`` of the route's
  backend cluster ``httproute/<namespace>/ldr-<id>/rule/<n>``), ``target_in_flight`` per replica. The HPA reads it
  as the external metric ``ladder_queue_depth``.
- KV cache (``"signal": "kv_cache"``, alongside the queue depth): vLLM's ``vllm:kv_cache_usage_perc``, averaged
  over the endpoint's pods, scaled to ``kv_cache_target``. The HPA reads it as the external metric
  ``ladder_kv_cache_usage``.

The HPA never goes below one replica (the reconcile loop takes an idle endpoint to zero, ``scaling.py``); KEDA goes
to zero itself after ``cooldownPeriod`` when ``min_replicas`` is 0, and the loop releases the devices once no pod
is left, as with the HPA.
"""

from __future__ import annotations

from decimal import Decimal

from provisioning.domain.workloads import KV_CACHE, Autoscaling, autoscaling_applied
from provisioning.drivers.kubernetes.manifest import Obj, obj, own, selector
from provisioning.drivers.kubernetes.shapes import KEDA, LABEL_ALLOCATION, AllocationShape, object_name

QUEUE_DEPTH_METRIC = "ladder_queue_depth"
KV_CACHE_METRIC = "ladder_kv_cache_usage"
VLLM_KV_CACHE = "vllm:kv_cache_usage_perc"
KEDA_API = "keda.sh/v1alpha1"
HPA_API = "autoscaling/v2"
# KEDA's metrics server names a trigger's metric ``s<index>-<scaler>`` and finds its ScaledObject by this label.
KEDA_QUEUE_DEPTH_METRIC = "s0-prometheus"
KEDA_SCALED_OBJECT_LABEL = "scaledobject.keda.sh/name"
# Where each autoscaler keeps its fewest replicas: the reconcile loop raises it to keep a buffer warm.
MIN_FIELD = {"HorizontalPodAutoscaler": "minReplicas", "ScaledObject": "minReplicaCount"}


def autoscaling_of(a: AllocationShape) -> Autoscaling:
    """The endpoint's autoscaling as applied to its placed devices and the operator's idle window."""
    asked = a.workload.autoscaling if a.workload is not None else None
    return autoscaling_applied(asked, devices=len(a.devices), idle_seconds=a.idle_seconds)


def autoscaler_kind(autoscaler: str) -> tuple[str, str]:
    """The API version and kind of the object that scales an endpoint under ``autoscaler``."""
    return (KEDA_API, "ScaledObject") if autoscaler == KEDA else (HPA_API, "HorizontalPodAutoscaler")


def queue_depth_metric(autoscaler: str, allocation_id: int) -> tuple[str, str]:
    """Where ``external.metrics.k8s.io`` serves an endpoint's queue depth, as (metric, label selector): the metrics
    adapter's ``ladder_queue_depth`` by the allocation's label; with KEDA, whose metrics server then answers for
    that API, the ScaledObject's first trigger (``s0-prometheus``) by the ScaledObject's name."""
    if autoscaler == KEDA:
        return KEDA_QUEUE_DEPTH_METRIC, f"{KEDA_SCALED_OBJECT_LABEL}={object_name(allocation_id)}"
    return QUEUE_DEPTH_METRIC, f"{LABEL_ALLOCATION}={allocation_id}"


def autoscaler_floor(autoscaler: str, scaling: Autoscaling) -> int:
    """The fewest replicas the autoscaler is given: an HPA at least one (the loop takes it to zero), KEDA the
    endpoint's ``min_replicas`` (it goes to zero itself)."""
    return scaling.min_replicas if autoscaler == KEDA else scaling.floor


def autoscaler(a: AllocationShape) -> Obj:
    """The endpoint's HorizontalPodAutoscaler or KEDA ScaledObject."""
    scaling = autoscaling_of(a)
    return _scaled_object(a, scaling) if a.autoscaler == KEDA else _hpa(a, scaling)


def _quantity(value: int | Decimal) -> str:
    """A Kubernetes quantity, exact: whole numbers as they are, fractions in thousandths (0.8 -> 800m)."""
    return str(int(value)) if value == int(value) else f"{int(value * 1000)}m"


def _behavior(scaling: Autoscaling) -> Obj:
    return {
        "scaleUp": {"stabilizationWindowSeconds": scaling.scale_up_window_s},
        "scaleDown": {"stabilizationWindowSeconds": scaling.scale_down_window_s},
    }


def _hpa(a: AllocationShape, scaling: Autoscaling) -> Obj:
    metrics = [
        {
            "type": "External",
            "external": {
                "metric": {"name": QUEUE_DEPTH_METRIC, "selector": {"matchLabels": selector(a)}},
                "target": {"type": "AverageValue", "averageValue": _quantity(scaling.target_in_flight)},
            },
        }
    ]
    if scaling.signal == KV_CACHE and scaling.kv_cache_target is not None:
        # The pods' average use against the target: the HPA scales the replicas by their ratio (a Value target).
        metrics.append(
            {
                "type": "External",
                "external": {
                    "metric": {"name": KV_CACHE_METRIC, "selector": {"matchLabels": selector(a)}},
                    "target": {"type": "Value", "value": _quantity(scaling.kv_cache_target)},
                },
            }
        )
    spec = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": a.object_name},
        "minReplicas": autoscaler_floor(a.autoscaler, scaling),
        "maxReplicas": scaling.max_replicas,
        "metrics": metrics,
        "behavior": _behavior(scaling),
    }
    return obj(HPA_API, "HorizontalPodAutoscaler", own(a), spec=spec)


def queue_depth_query(a: AllocationShape) -> str:
    """PromQL: the requests waiting and in flight on the endpoint's route, at the Gateway's proxies."""
    cluster = f'envoy_cluster_name=~"httproute/{a.namespace}/{a.object_name}/rule/.+"'
    pending, active = "envoy_cluster_upstream_rq_pending_active", "envoy_cluster_upstream_rq_active"
    return f"sum({pending}{{{cluster}}}) + sum({active}{{{cluster}}})"


def kv_cache_query(a: AllocationShape) -> str:
    """PromQL: vLLM's KV cache use, averaged over the endpoint's pods (``ldr-<id>-<hash>-<suffix>``)."""
    return f'avg({VLLM_KV_CACHE}{{namespace="{a.namespace}",pod=~"{a.object_name}-.+"}})'


def _scaled_object(a: AllocationShape, scaling: Autoscaling) -> Obj:
    # The queue depth comes first: the reconcile loop reads it back as KEDA's s0-prometheus (queue_depth_metric).
    triggers = [
        {
            "type": "prometheus",
            "name": "queue-depth",
            "metricType": "AverageValue",
            "metadata": {
                "serverAddress": a.prometheus_url,
                "query": queue_depth_query(a),
                "threshold": _quantity(scaling.target_in_flight),
            },
        }
    ]
    if scaling.signal == KV_CACHE and scaling.kv_cache_target is not None:
        triggers.append(
            {
                "type": "prometheus",
                "name": "kv-cache",
                "metricType": "Value",
                "metadata": {
                    "serverAddress": a.prometheus_url,
                    "query": kv_cache_query(a),
                    "threshold": str(scaling.kv_cache_target.normalize()),
                },
            }
        )
    spec: Obj = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": a.object_name},
        "minReplicaCount": autoscaler_floor(a.autoscaler, scaling),
        "maxReplicaCount": scaling.max_replicas,
        "advanced": {"horizontalPodAutoscalerConfig": {"behavior": _behavior(scaling)}},
        "triggers": triggers,
    }
    if scaling.idle_seconds is not None:
        spec["cooldownPeriod"] = scaling.idle_seconds  # an empty queue this long: KEDA scales it to zero
    return obj(KEDA_API, "ScaledObject", own(a), spec=spec)
