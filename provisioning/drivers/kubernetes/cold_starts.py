"""A serverless endpoint's cold start on Kubernetes: read from the cluster's own signals as the woken endpoint
becomes ``running``, and shortened by pulling its image in advance when it goes idle.

- ``cold_start_read``: the first replica warm since the wake: its ``PodScheduled`` condition (the device wait
  ends), the kubelet's ``Pulled`` event for its worker (``Successfully pulled image "x" in 12.3s``, or ``Container
  image "x" already present on machine``: 0), and its ``Ready`` condition (warm: the readiness probe is the model's
  warm signal), split by ``provisioning.domain.cold_start.observed``.
- ``prepull_apply`` / ``prepull_delete``: the DaemonSet ``ldr-<id>-prepull`` (``render_prepull``) on the hosts the
  next replica is likely to take; applied when the endpoint goes idle, deleted once it runs again (and by the
  release, with the endpoint's other objects, when it stops).

Reads change nothing; the pre-pull is best effort (a cluster that does not answer leaves the next wake to pull).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from provisioning.domain.cold_start import ColdStart, model_source, observed
from provisioning.drivers.kubernetes.client import ClusterUnavailable, Kube
from provisioning.drivers.kubernetes.desired import allocation_namespace, teardown_shape
from provisioning.drivers.kubernetes.output import pods_of, time_of
from provisioning.drivers.kubernetes.render_prepull import prepull_daemonset, prepull_ref
from provisioning.models import Allocation

log = logging.getLogger(__name__)
WORKER = "spec.containers{worker}"  # the kubelet's fieldPath for the endpoint's own container
PULLED = re.compile(r'Successfully pulled image "[^"]*" in (?P<took>(?:[0-9.]+(?:ns|us|µs|ms|s|m|h))+)')
GO_DURATION = re.compile(r"([0-9.]+)(ns|us|µs|ms|s|m|h)")
UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(text: str) -> float:
    """A Go duration as the kubelet prints it (``12.3s``, ``1m2.5s``, ``850ms``), in seconds."""
    parts = GO_DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{text!r} is not a Go duration")
    return sum(float(number) * UNITS[unit] for number, unit in parts)


def _condition(pod: dict[str, Any], kind: str) -> datetime | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True" and condition.get("lastTransitionTime"):
            return time_of(condition["lastTransitionTime"])
    return None


def _event_time(event: dict[str, Any]) -> datetime | None:
    stamp = event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
    return time_of(stamp) if stamp else None


def pull_seconds(events: Iterable[dict[str, Any]]) -> float | None:
    """How long the kubelet took to pull the worker's image, from its events: 0 when it was already present; the
    duration the ``Pulled`` event states, else the time between ``Pulling`` and ``Pulled``; None: no word of it."""
    ours = [e for e in events if (e.get("involvedObject") or {}).get("fieldPath", WORKER) == WORKER]
    pulling = next((_event_time(e) for e in ours if e.get("reason") == "Pulling"), None)
    for event in ours:
        if event.get("reason") != "Pulled":
            continue
        message = event.get("message") or ""
        if "already present on machine" in message:
            return 0.0
        found = PULLED.search(message)
        if found:
            return go_duration(found["took"])
        pulled = _event_time(event)
        if pulling is not None and pulled is not None:
            return max(0.0, (pulled - pulling).total_seconds())
    return None


def cold_start_read(kube: Kube, allocation: Allocation) -> ColdStart | None:
    """The woken endpoint's cold start as its cluster reported it: the replica that became ready first since the
    wake, and its phases (None: no replica created since the wake is ready yet)."""
    woke_at = allocation.woke_at
    if woke_at is None:
        return None
    since = woke_at.replace(microsecond=0)  # the API server's timestamps are to the second
    warm = []
    for pod in pods_of(kube, allocation):
        created = pod["metadata"].get("creationTimestamp")
        ready = _condition(pod, "Ready")
        if created and time_of(created) >= since and ready is not None:
            warm.append((ready, pod))
    if not warm:
        return None
    ready_at, pod = min(warm, key=lambda found: found[0])
    events = kube.list(
        "v1",
        "Event",
        namespace=allocation_namespace(allocation),
        fields={"involvedObject.name": pod["metadata"]["name"]},
    )
    return observed(
        woke_at=woke_at,
        ready_at=max(ready_at, woke_at),
        scheduled_at=_condition(pod, "PodScheduled"),
        pull_s=pull_seconds(events),
        model_source=model_source(allocation.workload_spec.workload),
    )


def prepull_apply(kube: Kube, allocation: Allocation, hostnames: Iterable[str]) -> bool:
    """Pull the endpoint's image onto ``hostnames`` (best effort: False when the cluster did not take it)."""
    hosts = sorted(set(hostnames))
    if not hosts:
        return False
    try:
        kube.apply(prepull_daemonset(teardown_shape(allocation), hosts))
    except (ApiException, ClusterUnavailable) as error:
        log.warning("allocation %s: its image was not pulled in advance: %s", allocation.pk, error)
        return False
    log.info("allocation %s: pulling its image in advance on %s", allocation.pk, ", ".join(hosts))
    return True


def prepull_delete(kube: Kube, allocation: Allocation) -> bool:
    """Delete the endpoint's pre-pull DaemonSet once it runs again (best effort: one left behind is applied anew at
    its next sleep and deleted at its stop); False when there was none or the cluster did not answer."""
    try:
        return kube.delete(prepull_ref(teardown_shape(allocation)))
    except (ApiException, ClusterUnavailable) as error:
        log.warning("allocation %s: its pre-pull DaemonSet was not deleted: %s", allocation.pk, error)
        return False
