"""A serverless endpoint's replicas in its cluster: its Deployment woken from zero replicas, and scaled to zero
once its queue has been empty for the idle window (an HPA never goes below one); and its token policy, in place
exactly while it runs (docs/serverless.md): the gateway checks callers itself while replicas serve, and sends an
idle endpoint's calls to Ladder's check, which wakes it. Called by the driver as it reads the endpoint's status.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone
from kubernetes.client.exceptions import ApiException

from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.client import Kube
from provisioning.drivers.kubernetes.desired import allocation_shape
from provisioning.drivers.kubernetes.shapes import LABEL_ALLOCATION
from provisioning.drivers.kubernetes.status import live_object, quantity
from provisioning.models import Allocation

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


def deployment_scale_to_zero(kube: Kube, allocation: Allocation, deployment: dict[str, Any]) -> None:
    """An endpoint whose queue has been empty for ``LADDER_SERVERLESS_IDLE_SECONDS`` goes to 0 replicas (an
    HPA never does); once its last pod is gone it is ``idle`` and its devices are released (the driver's
    ``status``). The first request after that wakes it through the gateway's check (``gateway_authorize``), not
    the metric: at zero there is no device to start a replica on until the engine places one. Queue depth is the
    external metric ``ladder_queue_depth`` the HPA scales on; without it, nothing is changed."""
    depth = _queue_depth(kube, allocation, deployment["metadata"]["namespace"])
    if depth is None:
        return
    replicas = (deployment.get("spec") or {}).get("replicas")
    annotations = (deployment.get("metadata") or {}).get("annotations") or {}
    idle_since = annotations.get(ANNOTATION_IDLE_SINCE)
    now = timezone.now()
    if depth > 0:
        if idle_since:
            kube.merge_patch(deployment, {"metadata": {"annotations": {ANNOTATION_IDLE_SINCE: None}}})
    elif replicas != 0:
        if not idle_since:
            kube.merge_patch(deployment, {"metadata": {"annotations": {ANNOTATION_IDLE_SINCE: now.isoformat()}}})
        elif (now - datetime.fromisoformat(idle_since)).total_seconds() >= settings.LADDER_SERVERLESS_IDLE_SECONDS:
            # The token policy goes first: from here on the gateway asks Ladder, whose check wakes it again.
            token_policy_withdraw(kube, allocation)
            kube.merge_patch(deployment, {"spec": {"replicas": 0}})
            log.info("allocation %s: idle since %s, scaled to zero", allocation.pk, idle_since)


def _queue_depth(kube: Kube, allocation: Allocation, namespace: str) -> float | None:
    try:
        found = kube.request(
            "GET",
            f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/ladder_queue_depth",
            query=[("labelSelector", f"{LABEL_ALLOCATION}={allocation.pk}")],
        )
    except ApiException:
        return None  # no metrics adapter serving it
    return sum(quantity(str(item.get("value", "0"))) for item in (found or {}).get("items", []))
