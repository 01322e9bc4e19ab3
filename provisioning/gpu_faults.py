"""XID errors from DCGM as a fault signal (``provisioning.domain.xid``): each GPU's last XID, read from the operator's
Prometheus (``DCGM_FI_DEV_XID_ERRORS``, dcgm-exporter's gauge of the last XID), mapped to its node by the GPU's UUID.

- ``gpu_errors``: what the GPUs of some nodes last reported, with NVIDIA's meaning, whether it is fatal and
  whether it is new (it changed within ``RECENT``): the node diagnosis's XID layer.
- ``xid_faults_recover``: every GPU whose last XID is fatal and new quarantines its node and places the node's
  work elsewhere, exactly as a failing node condition does (``services.fleet.node_fault_recover``: audited with
  the XID as evidence, jobs restarted from their checkpoint, goodput lost recorded). It runs on each reconcile,
  for every driver. The gauge keeps its last value after the fault, so only a change within ``RECENT`` acts: a node
  an operator returned to service is not taken out again by the same old XID.

A Prometheus that does not answer changes nothing (it is logged and counted as a reconcile error).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.actor import Actor
from core.metrics import RECONCILE_ERRORS
from core.prometheus import PrometheusUnavailable, instant
from provisioning.domain.gpu_metrics import XID
from provisioning.domain.xid import Xid, xid
from provisioning.models import Gpu, Node, NodeState
from provisioning.services.faults import LastCheckpoint
from provisioning.services.fleet import node_fault_recover

log = logging.getLogger(__name__)

SYSTEM = Actor.system("gpu-faults")
RECENT = timedelta(minutes=15)


@dataclass(frozen=True)
class GpuError:
    node: Node
    gpu_uuid: str
    gpu_index: int
    xid: Xid
    recent: bool  # it changed within RECENT

    def as_dict(self) -> dict[str, object]:
        return {
            "hostname": self.node.hostname,
            "gpu_uuid": self.gpu_uuid,
            "gpu_index": self.gpu_index,
            **self.xid.as_dict(),
            "recent": self.recent,
        }


def gpu_errors(*, now: datetime, nodes: Iterable[Node] | None = None) -> list[GpuError]:
    """The GPUs (of ``nodes``, default all) whose last XID is not 0, by node and GPU index. Raises
    ``PrometheusUnavailable``."""
    reported = instant(f"{XID.name} != 0", at=now)
    changed = {
        (s.labels.get("UUID"), s.labels.get("instance"))
        for s in instant(f"changes({XID.name}[{int(RECENT.total_seconds())}s]) > 0", at=now)
    }
    wanted = {n.pk for n in nodes} if nodes is not None else None
    uuids = {s.labels.get("UUID") for s in reported if not s.labels.get("GPU_I_ID")}
    gpus = {g.uuid: g for g in Gpu.objects.filter(uuid__in=uuids).select_related("node")}
    found: dict[tuple[int, int], GpuError] = {}
    for sample in reported:
        gpu = gpus.get(sample.labels.get("UUID", ""))
        if gpu is None or sample.labels.get("GPU_I_ID") or (wanted is not None and gpu.node_id not in wanted):
            continue
        recent = (gpu.uuid, sample.labels.get("instance")) in changed
        error = GpuError(gpu.node, gpu.uuid, gpu.index, xid(round(sample.value)), recent)
        key = (gpu.node_id, gpu.index)
        if key not in found or (recent and not found[key].recent):
            found[key] = error
    return [found[k] for k in sorted(found)]


def xid_faults_recover(*, now: datetime, last_checkpoint: LastCheckpoint) -> int:
    """Quarantine the nodes of GPUs with a new fatal XID and recover their work; how many nodes had one."""
    try:
        errors = gpu_errors(now=now)
    except PrometheusUnavailable as unread:
        log.warning("GPU XIDs not read: %s", unread)
        RECONCILE_ERRORS.labels("prometheus", "gpu_xid").inc()
        return 0
    fatal: dict[int, GpuError] = {}
    for error in errors:
        if error.xid.fatal and error.recent and error.node.state != NodeState.FAILED:
            fatal.setdefault(error.node.pk, error)
    for error in fatal.values():
        recovered = node_fault_recover(
            node=error.node,
            cause=f"XID {error.xid.code} on GPU {error.gpu_index}: {error.xid.meaning}",
            evidence={**error.as_dict(), "signal": XID.name},
            fault_at=now,
            actor=SYSTEM,
            last_checkpoint=last_checkpoint,
        )
        if recovered is not None:
            node, code = error.node.hostname, error.xid.code
            log.warning("node %s: XID %s on GPU %s: %s", node, code, error.gpu_index, recovered)
    return len(fatal)
