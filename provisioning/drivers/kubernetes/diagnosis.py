"""Why does Kubernetes not offer a node's GPUs? A layer-by-layer reading of one Node object.

The operator's question is "this node has eight healthy GPUs and Kubernetes thinks it has none". The answer is
the first layer of the NVIDIA stack that is broken, read bottom-up from the Node object alone (``metadata.labels``,
``spec.taints``, ``spec.unschedulable``, ``status.capacity``, ``status.allocatable``, ``status.conditions``) and
compared with what the fleet inventory expects. Pure: no Django, no I/O; the API fetches the Node and calls
:func:`diagnose_node`.

Layers, in order: ``node``, ``driver``, ``toolkit``, ``device_plugin`` (or the NVIDIA DRA driver) and
``allocatable`` (``diagnosis_gpu.py``, which says what evidence each one relies on and why), then, only for nodes
the fleet says have RDMA NICs, ``rdma`` (``diagnosis_rdma.py``). The first broken layer is the answer, and the
layers after it are not checked. What the layers read of the Node, and how, is ``node_reading.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from provisioning.domain.fleet_document import Rdma
from provisioning.drivers.kubernetes.diagnosis_gpu import (
    check_allocatable,
    check_device_plugin,
    check_driver,
    check_node,
    check_toolkit,
)
from provisioning.drivers.kubernetes.diagnosis_rdma import check_rdma
from provisioning.drivers.kubernetes.node_reading import GPU, MIG_PREFIX, Finding, NodeReading
from provisioning.drivers.kubernetes.shapes import TAINT_DEDICATED

LAYERS = ("node", "driver", "toolkit", "device_plugin", "allocatable")  # device_plugin: or the DRA driver
RDMA_LAYER = "rdma"  # after LAYERS, for nodes the fleet says have RDMA NICs
NOT_CHECKED = "not checked"

# What Ladder's GPU workloads tolerate: the conventional GPU-node taint (the GPU operator's operands tolerate it
# too, and so does every pod the ExtendedResourceToleration admission plugin sees asking for nvidia.com/gpu).
# The renderer's tolerations are the source of truth; the caller may pass them instead.
LADDER_TOLERATIONS: tuple[Mapping[str, Any], ...] = ({"key": GPU, "operator": "Exists", "effect": "NoSchedule"},)


@dataclass(frozen=True)
class Check:
    layer: str
    ok: bool | None  # None: not checked, because an earlier layer is broken
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return NOT_CHECKED if self.ok is None else ("ok" if self.ok else "failed")

    def as_dict(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "ok": self.ok,
            "status": self.status,
            "detail": self.detail,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class Diagnosis:
    ok: bool
    layer: str | None  # the first broken layer, None when every layer is healthy
    summary: str
    evidence: dict[str, Any]
    checks: list[Check]
    node: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "ok": self.ok,
            "layer": self.layer,
            "summary": self.summary,
            "evidence": self.evidence,
            "checks": [check.as_dict() for check in self.checks],
        }


def diagnose_node(
    node: Mapping[str, Any],
    expected_gpus: int,
    expected_mig: Mapping[str, int] | None = None,
    *,
    expected_mig_gpus: int | None = None,
    tolerations: Sequence[Mapping[str, Any]] | None = None,
    resource_slices: Sequence[Mapping[str, Any]] = (),
    rdma: Rdma | None = None,
) -> Diagnosis:
    """Check the layers in order and report the first broken one.

    ``expected_gpus`` is the number of physical GPUs the inventory holds for the node; ``expected_mig`` the MIG
    devices it expects per profile (``"1g.10gb"`` or ``"mig-1g.10gb"``), for nodes cut under the mixed strategy;
    ``expected_mig_gpus``, when known, how many of the GPUs are in MIG mode (else it is bounded from the
    profiles). ``tolerations`` are those of Ladder's pods (default :data:`LADDER_TOLERATIONS`).
    ``resource_slices``: the cluster's ResourceSlices (those of other nodes and drivers are ignored); when the
    NVIDIA DRA driver publishes the node's GPUs, they are read instead of the device plugin's resources; DraNet's
    (``dra.net``) are read for the RDMA NICs. ``rdma``: the node's NICs as the fleet describes them
    (``Rdma.from_json(Node.rdma)``); when given, the ``rdma`` layer checks them after the GPU layers.
    """
    n = NodeReading(node, resource_slices)
    mig = {_profile(name): count for name, count in (expected_mig or {}).items()}
    steps: list[tuple[str, Callable[[], Finding]]] = [
        ("node", lambda: check_node(n)),
        ("driver", lambda: check_driver(n, expected_gpus)),
        ("toolkit", lambda: check_toolkit(n)),
        ("device_plugin", lambda: check_device_plugin(n, expected_gpus, mig, expected_mig_gpus)),
        ("allocatable", lambda: check_allocatable(n, LADDER_TOLERATIONS if tolerations is None else tolerations)),
    ]
    if rdma is not None:
        expected = rdma
        steps.append((RDMA_LAYER, lambda: check_rdma(n, expected)))
    checks: list[Check] = []
    broken: tuple[str, Finding] | None = None
    for layer, run in steps:
        if broken is not None:
            checks.append(Check(layer, None, NOT_CHECKED))
            continue
        finding = run()
        checks.append(Check(layer, finding.ok, finding.detail, finding.evidence))
        if not finding.ok:
            broken = (layer, finding)
    if broken is not None:
        layer, finding = broken
        return Diagnosis(False, layer, finding.detail, finding.evidence, checks, n.name)
    evidence: dict[str, Any] = {}
    for check in checks:
        evidence.update(check.evidence)
    summary = f"all layers healthy: {evidence.get('offered', 'GPUs')} offered to the scheduler"
    if rdma is not None:
        summary += f"; {checks[-1].detail}"
    if evidence.get("dedicated"):
        summary += f"; dedicated to tenant {evidence['dedicated']} ({TAINT_DEDICATED} taint, expected)"
    return Diagnosis(True, None, summary, evidence, checks, n.name)


def _profile(name: str) -> str:
    return name.removeprefix(MIG_PREFIX).removeprefix("mig-")
