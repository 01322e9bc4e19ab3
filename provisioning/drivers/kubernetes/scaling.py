"""A serverless endpoint's replicas in its cluster: its Deployment woken from zero replicas; a buffer of warm
replicas beyond demand kept while it is active (its autoscaler's fewest replicas raised); and scaled to zero once
its queue has been empty for its idle window (an HPA never goes below one). And its token policy, in place exactly
while it runs: the gateway checks callers itself while replicas serve, and sends an idle endpoint's calls to
Ladder's check, which wakes it. Called by the driver as it reads the endpoint's status; the endpoint's autoscaling
is as applied (``endpoint_autoscaling``, docs/serverless.md).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone
from kubernetes.client.exceptions import ApiException

from provisioning.domain.workloads import Autoscaling
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.client import Kube
from provisioning.drivers.kubernetes.desired import allocation_shape
from provisioning.drivers.kubernetes.render_scaling import (
    MIN_FIELD,
    autoscaler_floor,
    autoscaler_kind,
    queue_depth_metric,
)
from provisioning.drivers.kubernetes.shapes import object_name
from provisioning.drivers.kubernetes.status import live_object, quantity
from provisioning.models import Allocation
from provisioning.services.workloads import endpoint_autoscaling

log = logging.getLogger(__name__)
ANNOTATION_IDLE_SINCE = "ladder.io/idle-since"


def deployment_wake(kube: Kube, allocation: Allocation) -> None:
    """A woken endpoint's Deployment (applied with its new placement) goes from 0 to 1 replica; the HPA, which
    does not act on a target at zero, takes over from there."""
    deployment = next(
        (o for o in render.allocation_objects(allocation_shape(allocation)) if o["kind"] == "Deployment"), None
    )
    live = live_object(kube, deployment) if deployment is not None else None
    if live is not None and (live.get("spec") or {}).get("replicas") == 0:
        patch = {"metadata": {"annotations": {ANNOTATION_IDLE_SINCE: None}}, "spec": {"replicas": 1}}
        kube.merge_patch(live, patch)
        log.info("allocation %s: woken, scaling from zero", allocation.pk)


def token_policy_apply(kube: Kube, allocation: Allocation) -> None:
    """The running endpoint's callers are checked by the gateway itself from now on (no call reaches Ladder)."""
    policy = render.endpoint_token_policy(allocation_shape(allocation))
    if live_object(kube, policy) is None:
        kube.apply(policy)
        log.info("allocation %s: running, the gateway checks its callers' tokens", allocation.pk)


def token_policy_withdraw(kube: Kube, allocation: Allocation) -> None:
    """The endpoint's calls go to Ladder's check again (which wakes it when it is idle)."""
    kube.delete(render.endpoint_token_policy(allocation_shape(allocation)), propagation="Background")


def deployment_scale(kube: Kube, allocation: Allocation, deployment: dict[str, Any]) -> None:
    """A running endpoint's pass, on its queue depth (the external metric its autoscaler scales on; without it,
    nothing is changed): its warm buffer (``autoscaler_keep_warm``), then its way to zero
    (``deployment_scale_to_zero``)."""
    scaling = endpoint_autoscaling(allocation)
    if scaling is None:
        return
    depth = _queue_depth(kube, allocation, deployment["metadata"]["namespace"])
    if depth is None:
        return
    if scaling.buffer_replicas:
        autoscaler_keep_warm(kube, allocation, deployment["metadata"]["namespace"], scaling, depth)
    deployment_scale_to_zero(kube, allocation, deployment, scaling, depth)


def autoscaler_keep_warm(
    kube: Kube, allocation: Allocation, namespace: str, scaling: Autoscaling, depth: float
) -> None:
    """While the endpoint is active (requests waiting or in flight), its autoscaler keeps at least its demand and
    ``buffer_replicas`` more (``Autoscaling.warm_replicas``): the HPA's ``minReplicas`` (a ScaledObject's
    ``minReplicaCount``) is raised to that; once demand is gone, it goes back to the floor Ladder renders. The next
    apply renders the floor too."""
    autoscaler = settings.LADDER_SERVERLESS_AUTOSCALER
    api_version, kind = autoscaler_kind(autoscaler)
    live = kube.get(api_version, kind, object_name(allocation.pk), namespace)
    if live is None:
        return
    wanted = scaling.warm_replicas(depth) if depth > 0 else autoscaler_floor(autoscaler, scaling)
    field = MIN_FIELD[kind]
    if (live.get("spec") or {}).get(field) != wanted:
        kube.merge_patch(live, {"spec": {field: wanted}})
        log.info("allocation %s: %s %s set to %s (queue depth %s)", allocation.pk, kind, field, wanted, depth)


def deployment_scale_to_zero(
    kube: Kube, allocation: Allocation, deployment: dict[str, Any], scaling: Autoscaling, depth: float
) -> None:
    """An endpoint whose queue has been empty for its ``idle_seconds`` (by default the operator's
    ``LADDER_SERVERLESS_IDLE_SECONDS``) goes to 0 replicas (an HPA never does); once its last pod is gone it is
    ``idle`` and its devices are released (the driver's ``status``). One with ``min_replicas`` 1 or more never
    does. The first request after that wakes it through the gateway's check (``gateway_authorize``), not the
    metric: at zero there is no device to start a replica on until the engine places one."""
    replicas = (deployment.get("spec") or {}).get("replicas")
    annotations = (deployment.get("metadata") or {}).get("annotations") or {}
    idle_since = annotations.get(ANNOTATION_IDLE_SINCE)
    now = timezone.now()
    if depth > 0 or scaling.idle_seconds is None:
        if idle_since:
            kube.merge_patch(deployment, {"metadata": {"annotations": {ANNOTATION_IDLE_SINCE: None}}})
    elif replicas != 0:
        if not idle_since:
            kube.merge_patch(deployment, {"metadata": {"annotations": {ANNOTATION_IDLE_SINCE: now.isoformat()}}})
        elif (now - datetime.fromisoformat(idle_since)).total_seconds() >= scaling.idle_seconds:
            # The token policy goes first: from here on the gateway asks Ladder, whose check wakes it again.
            token_policy_withdraw(kube, allocation)
            kube.merge_patch(deployment, {"spec": {"replicas": 0}})
            log.info("allocation %s: idle since %s, scaled to zero", allocation.pk, idle_since)


def _queue_depth(kube: Kube, allocation: Allocation, namespace: str) -> float | None:
    """The requests waiting and in flight on the endpoint's route, as ``external.metrics.k8s.io`` serves them to
    its autoscaler (``queue_depth_metric``); None when nothing serves it."""
    metric, selected = queue_depth_metric(settings.LADDER_SERVERLESS_AUTOSCALER, allocation.pk)
    try:
        found = kube.request(
            "GET",
            f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{metric}",
            query=[("labelSelector", selected)],
        )
    except ApiException:
        return None  # no metrics adapter serving it
    return sum(quantity(str(item.get("value", "0"))) for item in (found or {}).get("items", []))
