"""Is a GPU node failing? The judgement behind automatic fault recovery, read from one Node object.

Pure: no Django, no I/O. The driver reads every GPU node of a registered cluster on each reconcile and asks
:func:`node_fault`; a node it names is quarantined and what ran on it recovers (``node_failed``). The layered
:func:`provisioning.drivers.kubernetes.diagnosis.diagnose_node` answers a different question ("why are this node's GPUs
not offered?"): a cordon, a driver upgrade or a MIG re-cut take GPUs out of the scheduler without hurting what
runs, so only the evidence below moves work. Both read the kubelet's ``Ready`` condition the same way.

Evidence, each a ``status.conditions`` entry:

``Ready`` False or Unknown
    The kubelet says the node cannot run pods (False), or has stopped reporting and the node lifecycle controller
    gave up on it after its grace period (Unknown). A kubelet restart also reads False for a moment, so it counts
    only once it has lasted ``not_ready_grace`` seconds since its ``lastTransitionTime``.
The GPU health tooling's conditions (``fault_conditions``)
    Conditions a health agent writes onto the Node when a GPU fault is fatal to the work on it, e.g. NVSentinel's
    syslog monitor (``SysLogsXIDError``, ``SysLogsSXIDError`` for NVSwitch/NVLink, ``SysLogsGPUFallenOff``) and its
    DCGM health monitor (``GpuMemWatch`` for uncorrectable ECC, ``GpuNvlinkWatch``, ``GpuPcieWatch``,
    ``GpuDriverWatch``), AKS's node-problem-detector GPU checks (``GPUMissing``) and node-problem-detector's
    ``KernelDeadlock``. A condition counts when its status is the one named (``True`` unless the entry says
    ``Type=False``), at once: the agent already judged it fatal.

No evidence is no fault: a node without a ``Ready`` condition (not yet reported) or missing from the cluster is
not judged, so a half-registered node or a wrong answer never moves anyone's work.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# NVSentinel (syslog and DCGM health monitors) writes a condition only for a fatal event; app-caused XIDs
# (13, 31, 43...) are not among them, so a tenant cannot take a node out of the pool by crashing its own kernel.
DEFAULT_FAULT_CONDITIONS = (
    "SysLogsXIDError",
    "SysLogsSXIDError",
    "SysLogsGPUFallenOff",
    "GpuMemWatch",
    "GpuNvlinkWatch",
    "GpuPcieWatch",
    "GpuDriverWatch",
    "GPUMissing",
    "KernelDeadlock",
)


@dataclass(frozen=True)
class FaultCondition:
    """A condition type and the status that means the node is failing."""

    type: str
    bad_status: str = "True"

    @classmethod
    def parse(cls, entry: str) -> FaultCondition:
        """``Type`` (bad when True) or ``Type=Status``."""
        name, _, status = entry.strip().partition("=")
        if not name.strip():
            raise ValueError(f"{entry!r}: a fault condition names a condition type")
        return cls(name.strip(), status.strip() or "True")


def fault_conditions(entries: Iterable[str]) -> tuple[FaultCondition, ...]:
    return tuple(FaultCondition.parse(entry) for entry in entries if entry.strip())


@dataclass(frozen=True)
class Fault:
    """Why a node is failing: the condition, since when (its transition time), and what it said."""

    node: str
    condition: str
    status: str
    reason: str
    message: str
    since: datetime | None

    @property
    def cause(self) -> str:
        """One line for the audit log and the allocation's fault record."""
        text = f"{self.condition}={self.status}"
        if self.reason:
            text += f" ({self.reason})"
        if self.message:
            text += f": {self.message}"
        return text[:300]

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "condition": self.condition,
            "status": self.status,
            "reason": self.reason,
            "message": self.message[:500],
            "since": self.since.isoformat() if self.since else None,
        }


def _since(condition: Mapping[str, Any]) -> datetime | None:
    stamp = condition.get("lastTransitionTime") or condition.get("last_transition_time")
    if isinstance(stamp, datetime):
        return stamp
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(str(stamp))
    except ValueError:
        return None


def _fault(name: str, condition: Mapping[str, Any]) -> Fault:
    return Fault(
        node=name,
        condition=str(condition.get("type") or ""),
        status=str(condition.get("status") or ""),
        reason=str(condition.get("reason") or ""),
        message=str(condition.get("message") or ""),
        since=_since(condition),
    )


def node_fault(
    node: Mapping[str, Any], *, faults: Iterable[FaultCondition], now: datetime, not_ready_grace: float
) -> Fault | None:
    """The first evidence that the node is failing (the GPU tooling's conditions first: they say what broke),
    or None."""
    meta = node.get("metadata") or {}
    name = str(meta.get("name") or "")
    conditions = {str(c.get("type")): c for c in (node.get("status") or {}).get("conditions") or []}
    for wanted in faults:
        found = conditions.get(wanted.type)
        if found is not None and str(found.get("status")) == wanted.bad_status:
            return _fault(name, found)
    ready = conditions.get("Ready")
    if ready is None or ready.get("status") == "True":
        return None
    fault = _fault(name, ready)
    if fault.since is not None and (now - fault.since).total_seconds() < not_ready_grace:
        return None  # a kubelet restart, most likely: look again on the next reconcile
    return fault
