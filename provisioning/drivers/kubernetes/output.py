"""What a workload wrote and what the cluster reported about it: its pods' logs (the ``log`` subresource), the
core/v1 Events of its objects, and the checkpoint reports its log carries (docs/kubernetes.md §8). Read by the
driver; nothing here changes anything.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from provisioning.domain.rungs import SIDE_ROLES, Rung
from provisioning.domain.workload_output import LogLine, WorkloadEvent
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.client import Kube
from provisioning.drivers.kubernetes.shapes import LABEL_ALLOCATION, namespace_for
from provisioning.models import Allocation

LOG_READ_LINES = 10_000  # the most one read of the logs returns, as on the simulated fleet
LOG_KEPT_LINES = 100_000  # the most kept when the workload ends: its last lines
CONSOLE_CONTAINER = "guest-console-log"  # KubeVirt's serial console log, beside ``compute`` in virt-launcher
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # an Indexed Job's member: label (1.28+), annotation
MPI_REPLICA_INDEX = "training.kubeflow.org/replica-index"  # an MPIJob worker's index, set by the mpi-operator


def time_of(value: str) -> datetime:
    """An RFC 3339 time as the API writes it (``Z``, any number of fraction digits; beyond microseconds dropped)."""
    return datetime.fromisoformat(value)


def pods_of(kube: Kube, allocation: Allocation) -> list[dict[str, Any]]:
    namespace = namespace_for(allocation.tenant.slug, allocation.workload_spec)
    pods = kube.list("v1", "Pod", namespace=namespace, labels={LABEL_ALLOCATION: str(allocation.pk)})
    return sorted(pods, key=lambda pod: (pod["metadata"].get("creationTimestamp") or "", pod["metadata"]["name"]))


def log_sources(pod: dict[str, Any], rung: str) -> list[tuple[str, str]]:
    """``(container, source)`` to read from a pod: a VM's console only; otherwise every container, under the pod's
    name or its part of a gang, with the container's name added when the pod has more than one."""
    meta = pod["metadata"]
    containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
    if rung == Rung.VM:
        return [(CONSOLE_CONTAINER, "console")] if CONSOLE_CONTAINER in containers else []
    source = _gang_source(meta) if rung == Rung.JOB else None
    source = source or meta["name"]
    return [(c, source if len(containers) == 1 else f"{source}/{c}") for c in containers]


def _gang_source(meta: dict[str, Any]) -> str | None:
    """A gang pod's part (its ``ladder.io/role``): ``worker-<index>`` for a torchrun or MPI member (the Indexed
    Job's completion index, the mpi-operator's replica index), or a pod without a GPU by its role in the table of
    rungs (``SIDE_ROLES``: ``launcher`` for MPI, ``head`` and ``submitter`` for Ray, whose submitter follows the
    job's output). A Ray worker has no stable index: its pod's name."""
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    role = labels.get(render.ROLE_LABEL)
    if role in SIDE_ROLES:
        return str(role)
    index = labels.get(COMPLETION_INDEX, annotations.get(COMPLETION_INDEX, labels.get(MPI_REPLICA_INDEX)))
    return f"worker-{index}" if index is not None else None


def parse_log(text: str, source: str) -> list[LogLine]:
    """``<RFC 3339 time> <text>`` lines (``timestamps=true``); a line without a time keeps the one before's."""
    lines: list[LogLine] = []
    for raw in text.removesuffix("\n").split("\n") if text else []:
        stamp, _, rest = raw.partition(" ")
        try:
            at = time_of(stamp)
        except ValueError:
            if not lines:
                continue
            at, rest = lines[-1].at, raw
        lines.append(LogLine(at=at, text=rest, source=source))
    return lines


def read_logs(kube: Kube, allocation: Allocation, *, since: datetime | None = None, tail: int) -> list[LogLine]:
    """Every container's last ``tail`` lines after ``since``, merged in time order, then the last ``tail`` of all."""
    if allocation.rung == Rung.BARE_METAL or tail <= 0:
        return []
    namespace = namespace_for(allocation.tenant.slug, allocation.workload_spec)
    lines: list[LogLine] = []
    for pod in pods_of(kube, allocation):
        for container, source in log_sources(pod, allocation.rung):
            try:
                text = kube.pod_log(namespace, pod["metadata"]["name"], container, since=since, tail=tail)
            except ApiException as error:
                if error.status in (400, 404):
                    continue  # not started yet (nothing written), or the pod went between the list and the read
                raise
            # The API takes sinceTime to the second: the lines of that second up to ``since`` are dropped here.
            lines += [line for line in parse_log(text, source) if since is None or line.at > since]
    lines.sort(key=lambda line: line.at)  # stable: lines of one moment stay in their container's order
    return lines[len(lines) - tail :] if len(lines) > tail else lines


def workload_event(event: dict[str, Any]) -> WorkloadEvent:
    involved = event.get("involvedObject") or {}
    stamp = (
        event.get("lastTimestamp")
        or (event.get("series") or {}).get("lastObservedTime")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or event["metadata"]["creationTimestamp"]
    )
    return WorkloadEvent(
        at=time_of(stamp),
        reason=event.get("reason") or "",
        message=event.get("message") or "",
        type=event.get("type") or "Normal",
        source=f"{involved.get('kind', '')}/{involved.get('name', '')}",
    )


CHECKPOINT_REPORT = render.CHECKPOINT_REPORT  # printed once a checkpoint is complete (docs/kubernetes.md)
CHECKPOINT_READ_LINES = 1_000  # per container, since the last kept checkpoint


def checkpoint_report(line: LogLine) -> tuple[datetime, str] | None:
    """``LADDER_CHECKPOINT`` alone or followed by a JSON object (``{"step": ..., "path": ...}``): when (the log line's
    own time, which the kubelet stamps) and which step. Anything else, a malformed object included, is not one."""
    text = line.text.strip()
    if text != CHECKPOINT_REPORT and not text.startswith(CHECKPOINT_REPORT + " "):
        return None
    rest = text[len(CHECKPOINT_REPORT) :].strip()
    step = ""
    if rest:
        try:
            found = json.loads(rest)
        except ValueError:
            return None
        if not isinstance(found, dict):
            return None
        step = str(found.get("step", found.get("path", "")))
    return line.at, step
