"""Why does Kubernetes not offer a node's GPUs? A layer-by-layer reading of one Node object.

The operator's question is "this node has eight healthy GPUs and Kubernetes thinks it has none". The answer is
the first layer of the NVIDIA stack that is broken, read bottom-up from the Node object alone (``metadata.labels``,
``spec.taints``, ``spec.unschedulable``, ``status.capacity``, ``status.allocatable``, ``status.conditions``) and
compared with what the fleet inventory expects. Pure: no Django, no I/O; the API fetches the Node and calls
:func:`diagnose_node`.

Layers, in order, with the evidence each one relies on and why:

``node``
    The ``Ready`` condition. A NotReady kubelet publishes nothing else we can trust.
``driver``
    ``nvidia.com/gpu.present`` (set by the GPU operator on nodes where node feature discovery saw an NVIDIA PCI
    device, ``feature.node.kubernetes.io/pci-10de.present``), ``nvidia.com/gpu.deploy.operands`` (``false``
    switches the whole operator off for the node), ``nvidia.com/gpu.deploy.driver`` (``true``, or
    ``pre-installed`` when the host brings its own driver), ``nvidia.com/gpu-driver-upgrade-state`` (the
    operator's driver-upgrade state machine; ``upgrade-failed`` or a step in flight takes the GPUs away), and the
    driver version that GPU feature discovery (GFD) reads through NVML: ``nvidia.com/cuda.driver-version.*``
    (current GFD), ``nvidia.com/cuda.driver.major`` (deprecated GFD name, still written) or
    ``nvidia.com/gpu.driver.major`` (written by some labellers other than GFD). GFD writes these only when the
    kernel driver is loaded and answers, so they are the only driver evidence a Node carries; their absence can
    also mean GFD itself is not running (``nvidia.com/gpu.deploy.gpu-feature-discovery`` is in the evidence).
    ``nvidia.com/gpu.count`` is how many GPUs NVML enumerates; fewer than the inventory means GPUs fell off the
    bus. On confidential-computing hosts ``nvidia.com/cc.mode`` (wanted) must match ``nvidia.com/cc.mode.state``
    and ``nvidia.com/cc.ready.state`` must not be ``false``. On passthrough hosts
    (``nvidia.com/gpu.workload.config=vm-passthrough``) the "driver" is vfio-pci, deployed by the vfio-manager
    (``nvidia.com/gpu.deploy.vfio-manager``), and GFD does not run.
``toolkit``
    ``nvidia.com/gpu.deploy.container-toolkit``: ``true``/``pre-installed`` deployed, ``false`` disabled,
    ``paused-*`` stopped by the operator, absent: no evidence at all. The operator's validator reports its
    toolkit check through its own pod and host files, not through the Node, so a deployed-but-broken toolkit
    shows up here only indirectly (GFD, which runs under the NVIDIA runtime, stops refreshing labels).
    Not applicable to passthrough hosts.
``device_plugin``
    ``nvidia.com/mig.config.state`` first (``pending``/``rebooting``: the MIG manager is re-cutting the GPUs and
    has paused the plugin; ``failed``: it gave up), then ``nvidia.com/gpu.deploy.device-plugin``
    (``paused-for-mig-change`` while the MIG manager works), ``nvidia.com/mig.strategy`` (Ladder needs
    ``mixed``), then ``status.capacity``: ``nvidia.com/gpu`` (divided by ``nvidia.com/gpu.replicas`` when
    time-slicing replicates devices; ``nvidia.com/gpu.shared`` under ``renameByDefault``) against
    ``nvidia.com/gpu.count`` and the inventory, and each ``nvidia.com/mig-<profile>`` against ``expected_mig``.
    Under the mixed strategy a GPU in MIG mode leaves ``nvidia.com/gpu``, so the whole-GPU capacity is
    ``expected_gpus`` less the GPUs in MIG mode. Passthrough hosts: ``nvidia.com/gpu.deploy.sandbox-device-plugin``
    and the passthrough resources (``nvidia.com/<device name>`` or ``nvidia.com/pgpu``).
    Nodes served by the NVIDIA DRA driver instead (the ResourceSlices of driver ``gpu.nvidia.com`` for the node,
    which the caller passes) are read from those slices: devices of type ``gpu`` or ``vfio`` are whole GPUs,
    devices of type ``mig`` count per ``profile``; the device plugin is expected to be off there, and a node that
    still advertises ``nvidia.com/gpu`` while the driver publishes its GPUs is a fault (each could hand the same
    GPU out). Ladder's claims need the DRA driver (docs/kubernetes.md §2, "Device plugin nodes").
``allocatable``
    ``status.allocatable`` below capacity (the device plugin marks devices unhealthy, e.g. after an Xid error,
    and the kubelet removes them from allocatable only), ``spec.unschedulable`` (cordoned), and NoSchedule or
    NoExecute taints that Ladder's pods do not tolerate. A ``ladder.io/dedicated`` taint fences the node for one
    tenant on purpose: it is reported as information, never as the fault. On a DRA node, a device tainted
    NoSchedule or NoExecute (the driver's health check) is not allocatable.
``rdma``
    Only for nodes the fleet says have RDMA NICs (``Node.rdma``: the fabric, link layer, each NIC's RDMA device
    and rail, and optionally the rate every port should train at, ``rate_gbps``). The fleet's NICs are the
    expected ones; NICs the node has beyond them (a storage or front-end NIC) are ignored. Kubernetes has no core
    field for an RDMA port, so the layer reads what the NIC stack and a small reporter publish:

    * ``rdma.ladder.io/<device>`` node annotations, one per RDMA device, written by the reporter DaemonSet of
      docs/jobs.md ("Diagnosing a node's RDMA NICs") from the kernel's sysfs: a JSON object with ``state`` and
      ``phys_state``
      (``/sys/class/infiniband/<device>/ports/1/state`` and ``phys_state``: ``4: ACTIVE``, ``5: LinkUp``),
      ``rate`` (``ports/1/rate``: ``400 Gb/sec (4X NDR)``), ``link_layer`` (``ports/1/link_layer``:
      ``InfiniBand`` or ``Ethernet``), and ``pcie_width``/``pcie_max_width`` (the PCI device's
      ``current_link_width`` and ``max_link_width``). This is the only source of a port's rate and width.
    * The ResourceSlices of the NIC DRA driver DraNet (kubernetes-sigs/dranet, driver ``dra.net``): a device with
      ``dra.net/rdma`` true names its RDMA device in ``dra.net/rdmaDevice`` (``mlx5_0``) and its network
      interface's operational state in ``dra.net/state`` (``up``/``down``); an InfiniBand port without a netdev
      has no state there.
    * Node-level labels, read to explain NICs that nothing reports: node feature discovery's built-in custom
      rules ``rdma.capable`` (a PCI device of vendor 15b3, Mellanox/NVIDIA) and ``rdma.available`` (the kernel
      modules ``ib_uverbs`` and ``rdma_ucm`` loaded), published as ``feature.node.kubernetes.io/rdma.*`` or, by
      newer releases, ``feature.node.kubernetes.io/custom-rdma.*``; and the NVIDIA network operator's
      ``network.nvidia.com/operator.mofed.wait`` (``true`` while its OFED driver container is not ready, which
      holds back its device plugins). The device plugins' own resources (the SR-IOV network device plugin's or
      the RDMA shared device plugin's ``status.capacity`` entries) are named by the operator's configuration,
      not by RDMA device, so they cannot say which NIC is missing and are not read.

    Findings, worst first, each naming the NIC (device, rail) and its evidence: a NIC ``missing`` (nothing
    reports the device); its link ``down`` (sysfs state ``DOWN``, or DraNet's ``down``), or up but not ``ACTIVE``
    (``INIT``/``ARMED``: no subnet manager configured the port); a ``link_layer`` other than the fleet's (a VPI
    card left in the other mode); and ``degraded``, the failure that halves bandwidth while everything looks up:
    a port that trained below the fleet's ``rate_gbps`` (NDR 400 Gb/s at 200, a 4X link at 2X), below the
    fastest of the node's other NICs when the fleet states no rate, or a PCIe link below its maximum width (x8
    of x16). A rate is known only from the annotations: a NIC seen only by DraNet is reported up, rate unknown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from provisioning.fleet_document import Nic, Rdma
from provisioning.kubernetes.shapes import TAINT_DEDICATED

LAYERS = ("node", "driver", "toolkit", "device_plugin", "allocatable")  # device_plugin: or the DRA driver
RDMA_LAYER = "rdma"  # after LAYERS, for nodes the fleet says have RDMA NICs
DRA_DRIVER = "gpu.nvidia.com"
NIC_DRA_DRIVER = "dra.net"  # DraNet (kubernetes-sigs/dranet)
NOT_CHECKED = "not checked"

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"
MIG_PREFIX = "nvidia.com/mig-"

L_PRESENT = "nvidia.com/gpu.present"
L_NFD_PCI = "feature.node.kubernetes.io/pci-10de.present"
L_OPERANDS = "nvidia.com/gpu.deploy.operands"
L_WORKLOAD = "nvidia.com/gpu.workload.config"
L_DEPLOY_DRIVER = "nvidia.com/gpu.deploy.driver"
L_DEPLOY_GFD = "nvidia.com/gpu.deploy.gpu-feature-discovery"
L_DEPLOY_TOOLKIT = "nvidia.com/gpu.deploy.container-toolkit"
L_DEPLOY_PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
L_DEPLOY_VFIO = "nvidia.com/gpu.deploy.vfio-manager"
L_DEPLOY_SANDBOX_PLUGIN = "nvidia.com/gpu.deploy.sandbox-device-plugin"
L_UPGRADE_STATE = "nvidia.com/gpu-driver-upgrade-state"
L_DRIVER_FULL = "nvidia.com/cuda.driver-version.full"
L_DRIVER_MAJOR = "nvidia.com/cuda.driver-version.major"
L_DRIVER_MAJOR_OLD = "nvidia.com/cuda.driver.major"
L_DRIVER_MAJOR_ALT = "nvidia.com/gpu.driver.major"
L_COUNT = "nvidia.com/gpu.count"
L_PRODUCT = "nvidia.com/gpu.product"
L_REPLICAS = "nvidia.com/gpu.replicas"
L_MIG_STRATEGY = "nvidia.com/mig.strategy"
L_MIG_CONFIG = "nvidia.com/mig.config"
L_MIG_STATE = "nvidia.com/mig.config.state"
L_CC_MODE = "nvidia.com/cc.mode"
L_CC_STATE = "nvidia.com/cc.mode.state"
L_CC_READY = "nvidia.com/cc.ready.state"

A_RDMA_PREFIX = "rdma.ladder.io/"  # + the RDMA device: the reporter DaemonSet's sysfs reading (docs/jobs.md)
L_RDMA_CAPABLE = ("feature.node.kubernetes.io/rdma.capable", "feature.node.kubernetes.io/custom-rdma.capable")
L_RDMA_AVAILABLE = ("feature.node.kubernetes.io/rdma.available", "feature.node.kubernetes.io/custom-rdma.available")
L_MOFED_WAIT = "network.nvidia.com/operator.mofed.wait"
NIC_ATTR_RDMA = f"{NIC_DRA_DRIVER}/rdma"
NIC_ATTR_DEVICE = f"{NIC_DRA_DRIVER}/rdmaDevice"
NIC_ATTR_STATE = f"{NIC_DRA_DRIVER}/state"
LINK_LAYER_OF_SYSFS = {"infiniband": "infiniband", "ethernet": "roce"}  # sysfs ports/1/link_layer -> the fleet's
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec(?:\s*\((\d+)X\s*([A-Za-z0-9]*)\))?")

DRIVER_VERSION_LABELS = (L_DRIVER_FULL, L_DRIVER_MAJOR, L_DRIVER_MAJOR_OLD, L_DRIVER_MAJOR_ALT)
DEPLOYED = frozenset({"true", "pre-installed"})
# Steps of the GPU operator's driver-upgrade state machine during which the driver pod is being replaced and the
# node drained; "upgrade-required" (waiting its turn) and "upgrade-done" leave the GPUs in service.
UPGRADE_IN_FLIGHT = frozenset(
    {
        "cordon-required",
        "wait-for-jobs-required",
        "pod-deletion-required",
        "drain-required",
        "pod-restart-required",
        "reboot-required",
        "reboot-validation-required",
        "reboot-post-required",
        "validation-required",
        "uncordon-required",
    }
)
MIG_IN_PROGRESS = frozenset({"pending", "rebooting"})
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})

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


@dataclass(frozen=True)
class _Finding:
    ok: bool
    detail: str
    evidence: dict[str, Any]


class _Node:
    """Read access to a Node dict as the API returns it (camelCase), or as the Python client's to_dict() does."""

    def __init__(self, obj: Mapping[str, Any], resource_slices: Sequence[Mapping[str, Any]] = ()) -> None:
        self.metadata: Mapping[str, Any] = obj.get("metadata") or {}
        self.spec: Mapping[str, Any] = obj.get("spec") or {}
        self.status: Mapping[str, Any] = obj.get("status") or {}
        self.labels: Mapping[str, str] = self.metadata.get("labels") or {}
        self.annotations: Mapping[str, str] = self.metadata.get("annotations") or {}
        self.capacity: Mapping[str, Any] = self.status.get("capacity") or {}
        self.allocatable: Mapping[str, Any] = self.status.get("allocatable") or {}
        self.taints: list[Mapping[str, Any]] = list(self.spec.get("taints") or [])
        self.conditions: list[Mapping[str, Any]] = list(self.status.get("conditions") or [])
        # The devices the NVIDIA DRA driver publishes for this node (a pool may span several slices).
        self.dra_devices: list[Mapping[str, Any]] = [
            device
            for found in resource_slices
            if (spec := found.get("spec") or {}).get("driver") == DRA_DRIVER
            and (spec.get("nodeName") or spec.get("node_name")) == self.name
            for device in spec.get("devices") or []
        ]
        self.dra = bool(self.dra_devices)
        # DraNet's RDMA NICs for this node, by RDMA device name.
        self.nic_devices: dict[str, Mapping[str, Any]] = {
            str(_attribute(device, NIC_ATTR_DEVICE, NIC_DRA_DRIVER)): device
            for found in resource_slices
            if (spec := found.get("spec") or {}).get("driver") == NIC_DRA_DRIVER
            and (spec.get("nodeName") or spec.get("node_name")) == self.name
            for device in spec.get("devices") or []
            if _attribute(device, NIC_ATTR_RDMA, NIC_DRA_DRIVER) is True
            and _attribute(device, NIC_ATTR_DEVICE, NIC_DRA_DRIVER)
        }

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    def label(self, key: str) -> str | None:
        value = self.labels.get(key)
        return None if value is None else str(value)

    def pick(self, *keys: str) -> dict[str, str | None]:
        return {key: self.label(key) for key in keys}

    @property
    def passthrough(self) -> bool:
        return self.label(L_WORKLOAD) == "vm-passthrough"


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
    n = _Node(node, resource_slices)
    mig = {_profile(name): count for name, count in (expected_mig or {}).items()}
    steps: list[tuple[str, Callable[[], _Finding]]] = [
        ("node", lambda: _check_node(n)),
        ("driver", lambda: _check_driver(n, expected_gpus)),
        ("toolkit", lambda: _check_toolkit(n)),
        ("device_plugin", lambda: _check_device_plugin(n, expected_gpus, mig, expected_mig_gpus)),
        ("allocatable", lambda: _check_allocatable(n, LADDER_TOLERATIONS if tolerations is None else tolerations)),
    ]
    if rdma is not None:
        expected = rdma
        steps.append((RDMA_LAYER, lambda: _check_rdma(n, expected)))
    checks: list[Check] = []
    broken: tuple[str, _Finding] | None = None
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


# --- layers ---------------------------------------------------------------------------------------------------


def _check_node(n: _Node) -> _Finding:
    ready = next((c for c in n.conditions if c.get("type") == "Ready"), None)
    if ready is None:
        return _Finding(False, "node not ready: the kubelet has reported no Ready condition", {"ready": None})
    evidence = {"ready": {key: ready.get(key) for key in ("status", "reason", "message")}}
    if ready.get("status") != "True":
        reason = ready.get("reason") or "no reason given"
        message = ready.get("message") or ""
        detail = f"node not ready (Ready={ready.get('status')}): {reason}" + (f": {message}" if message else "")
        return _Finding(False, detail, evidence)
    return _Finding(True, "node is Ready", evidence)


def _check_driver(n: _Node, expected_gpus: int) -> _Finding:
    workload = n.label(L_WORKLOAD)
    evidence: dict[str, Any] = n.pick(
        L_PRESENT, L_NFD_PCI, L_OPERANDS, L_WORKLOAD, L_DEPLOY_DRIVER, L_DEPLOY_GFD, L_UPGRADE_STATE
    )
    if workload == "vm-vgpu":
        return _Finding(False, f"node is set up for vGPU ({L_WORKLOAD}=vm-vgpu), which Ladder does not use", evidence)
    if n.label(L_PRESENT) != "true":
        if n.label(L_NFD_PCI) == "true":
            detail = f"the GPU operator has not taken this node: NFD sees an NVIDIA PCI device but {L_PRESENT} is unset"
        else:
            detail = f"no NVIDIA GPU seen on this node: neither {L_PRESENT} nor {L_NFD_PCI} is true"
        return _Finding(False, detail, evidence)
    if n.label(L_OPERANDS) == "false":
        return _Finding(False, f"GPU operator operands are switched off for this node ({L_OPERANDS}=false)", evidence)
    upgrade = n.label(L_UPGRADE_STATE)
    if upgrade == "upgrade-failed":
        return _Finding(False, f"driver upgrade failed ({L_UPGRADE_STATE}=upgrade-failed)", evidence)
    if upgrade in UPGRADE_IN_FLIGHT:
        return _Finding(False, f"driver upgrade in progress ({L_UPGRADE_STATE}={upgrade})", evidence)
    if n.passthrough:
        evidence.update(n.pick(L_DEPLOY_VFIO))
        vfio = n.label(L_DEPLOY_VFIO)
        if vfio != "true":
            return _Finding(
                False, f"passthrough node without vfio-pci binding: {L_DEPLOY_VFIO}={_shown(vfio)}", evidence
            )
        cc = _check_cc(n, evidence)
        return cc or _Finding(True, "passthrough node: GPUs are bound to vfio-pci by the vfio-manager", evidence)

    evidence.update(n.pick(*DRIVER_VERSION_LABELS, L_COUNT, L_PRODUCT))
    version = _driver_version(n)
    if version is None:
        deploy = n.label(L_DEPLOY_DRIVER)
        why = {
            None: f"{L_DEPLOY_DRIVER} is unset",
            "false": f"the operator does not deploy a driver here ({L_DEPLOY_DRIVER}=false) and none reports",
            "pre-installed": "the host's pre-installed driver does not answer",
        }.get(deploy, f"{L_DEPLOY_DRIVER}={deploy}")
        gfd = n.label(L_DEPLOY_GFD)
        if gfd not in DEPLOYED:
            why += f"; GPU feature discovery is not deployed ({L_DEPLOY_GFD}={_shown(gfd)}), so nothing reports it"
        return _Finding(False, f"no NVIDIA driver reported: no driver version labels; {why}", evidence)
    count = _int(n.label(L_COUNT))
    single_mig = n.label(L_MIG_STRATEGY) == "single" and "-MIG-" in (n.label(L_PRODUCT) or "")
    if count is not None and not single_mig and count != expected_gpus:
        if count < expected_gpus:
            detail = f"driver {version} sees {count} of {expected_gpus} GPUs ({L_COUNT}={count})"
        else:
            detail = f"driver {version} reports {count} GPUs but the inventory expects {expected_gpus}"
        return _Finding(False, detail, evidence | {"expected_gpus": expected_gpus})
    cc = _check_cc(n, evidence)
    return cc or _Finding(True, f"driver {version} loaded, {_shown(count)} GPUs enumerated", evidence)


def _check_cc(n: _Node, evidence: dict[str, Any]) -> _Finding | None:
    wanted, state, ready = n.label(L_CC_MODE), n.label(L_CC_STATE), n.label(L_CC_READY)
    if wanted is None and state is None and ready is None:
        return None
    evidence.update(n.pick(L_CC_MODE, L_CC_STATE, L_CC_READY))
    if wanted is not None and state is not None and state != wanted:
        return _Finding(False, f"confidential-computing mode not applied: wanted {wanted}, state {state}", evidence)
    if ready == "false":
        return _Finding(False, f"confidential-computing mode not ready ({L_CC_READY}=false)", evidence)
    return None


def _check_toolkit(n: _Node) -> _Finding:
    if n.passthrough:
        return _Finding(True, "not applicable: passthrough node, GPUs go whole to VMs", n.pick(L_WORKLOAD))
    value = n.label(L_DEPLOY_TOOLKIT)
    evidence: dict[str, Any] = n.pick(L_DEPLOY_TOOLKIT)
    runtime = n.status.get("nodeInfo") or n.status.get("node_info") or {}
    runtime_version = runtime.get("containerRuntimeVersion") or runtime.get("container_runtime_version")
    if runtime_version:
        evidence["containerRuntimeVersion"] = runtime_version
    if value in DEPLOYED:
        return _Finding(True, f"container toolkit deployed ({L_DEPLOY_TOOLKIT}={value})", evidence)
    return _Finding(False, _deploy_problem("container toolkit", L_DEPLOY_TOOLKIT, value), evidence)


def _check_device_plugin(
    n: _Node, expected_gpus: int, mig: Mapping[str, int], expected_mig_gpus: int | None
) -> _Finding:
    if n.dra:
        return _check_dra_driver(n, expected_gpus, mig, expected_mig_gpus)
    if n.passthrough:
        return _check_sandbox_plugin(n, expected_gpus)
    evidence: dict[str, Any] = n.pick(
        L_DEPLOY_PLUGIN, L_MIG_STRATEGY, L_MIG_CONFIG, L_MIG_STATE, L_COUNT, L_REPLICAS, L_PRODUCT
    )
    state, config = n.label(L_MIG_STATE), n.label(L_MIG_CONFIG)
    if state in MIG_IN_PROGRESS:
        return _Finding(False, f"MIG reconfiguration in progress: {L_MIG_STATE}={state} (target {config})", evidence)
    if state == "failed":
        return _Finding(False, f"MIG reconfiguration failed: {L_MIG_STATE}=failed (target {config})", evidence)
    deploy = n.label(L_DEPLOY_PLUGIN)
    if deploy not in DEPLOYED:
        return _Finding(False, _deploy_problem("device plugin", L_DEPLOY_PLUGIN, deploy), evidence)
    if n.label(L_MIG_STRATEGY) == "single" and "-MIG-" in (n.label(L_PRODUCT) or ""):
        return _Finding(
            False,
            f"device plugin runs the MIG strategy single ({L_PRODUCT}={n.label(L_PRODUCT)}); Ladder needs mixed",
            evidence,
        )

    capacity = _gpu_resources(n.capacity)
    evidence["capacity"] = capacity
    evidence["expected_gpus"] = expected_gpus
    if mig:
        evidence["expected_mig"] = dict(mig)
    replicas = max(_int(n.label(L_REPLICAS)) or 1, 1)
    whole = (capacity.get(GPU, 0) + capacity.get(GPU_SHARED, 0)) // replicas
    advertised_mig = {key[len(MIG_PREFIX) :]: value for key, value in capacity.items() if key.startswith(MIG_PREFIX)}

    for profile in sorted(set(mig) | set(advertised_mig)):
        want, have = mig.get(profile, 0), advertised_mig.get(profile, 0)
        if want != have:
            if want == 0:
                detail = f"device plugin advertises {have} {MIG_PREFIX}{profile} the inventory does not expect"
            else:
                detail = f"device plugin advertises {have} of {want} expected {MIG_PREFIX}{profile}"
            return _Finding(False, detail, evidence)
    low, high = _whole_gpu_range(expected_gpus, mig, expected_mig_gpus)
    if not low <= whole <= high:
        wanted = str(low) if low == high else f"{low}-{high}"
        resource = GPU_SHARED if capacity.get(GPU_SHARED) else GPU
        detail = f"device plugin advertises {whole} of {wanted} expected whole GPUs ({resource})"
        count = _int(n.label(L_COUNT))
        if count is not None:
            detail += f" while {L_COUNT}={count}"
        if replicas > 1:
            detail += f", {replicas} replicas each"
        return _Finding(False, detail, evidence)
    evidence["offered"] = _gpu_phrase(whole, advertised_mig, n.label(L_PRODUCT) or "GPU")
    return _Finding(True, f"device plugin advertises {evidence['offered']}", evidence)


def _attribute(device: Mapping[str, Any], name: str, driver: str = DRA_DRIVER) -> Any:
    """A device attribute's value (the one typed field of ``{"string": ...}``, ``{"bool": ...}``), by its name
    qualified or not (an unqualified name is the driver's own)."""
    attributes = device.get("attributes") or {}
    value = (
        attributes.get(name) or attributes.get(f"{driver}/{name}") or attributes.get(name.removeprefix(f"{driver}/"))
    )
    return next(iter(value.values()), None) if isinstance(value, Mapping) and value else None


def _check_dra_driver(n: _Node, expected_gpus: int, mig: Mapping[str, int], expected_mig_gpus: int | None) -> _Finding:
    """The NVIDIA DRA driver's devices for the node, against the inventory; the device plugin must be off."""
    kinds: dict[str, int] = {}
    published_mig: dict[str, int] = {}
    for device in n.dra_devices:
        kind = str(_attribute(device, "type") or "unknown")
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind == "mig":
            profile = str(_attribute(device, "profile"))
            published_mig[profile] = published_mig.get(profile, 0) + 1
    whole = kinds.get("gpu", 0) + kinds.get("vfio", 0)
    evidence: dict[str, Any] = {"served_by": "dra", "dra_devices": kinds, "expected_gpus": expected_gpus}
    evidence |= n.pick(L_DEPLOY_PLUGIN, L_MIG_CONFIG, L_MIG_STATE, L_PRODUCT)
    if mig:
        evidence["expected_mig"] = dict(mig)
    plugin = {
        k: v
        for k, v in _gpu_resources(n.capacity).items()
        if v and (k in (GPU, GPU_SHARED) or k.startswith(MIG_PREFIX))
    }
    if plugin:
        evidence["capacity"] = plugin
        return _Finding(
            False,
            f"both the device plugin ({', '.join(sorted(plugin))}) and the DRA driver {DRA_DRIVER} offer this node's"
            " GPUs, so one GPU can be handed out twice: turn the device plugin off here",
            evidence,
        )
    state, config = n.label(L_MIG_STATE), n.label(L_MIG_CONFIG)
    if state in MIG_IN_PROGRESS:
        return _Finding(False, f"MIG reconfiguration in progress: {L_MIG_STATE}={state} (target {config})", evidence)
    if state == "failed":
        return _Finding(False, f"MIG reconfiguration failed: {L_MIG_STATE}=failed (target {config})", evidence)
    for profile in sorted(set(mig) | set(published_mig)):
        want, have = mig.get(profile, 0), published_mig.get(profile, 0)
        if want != have:
            return _Finding(False, f"DRA driver publishes {have} of {want} expected MIG devices {profile}", evidence)
    low, high = _whole_gpu_range(expected_gpus, mig, expected_mig_gpus)
    if not low <= whole <= high:
        wanted = str(low) if low == high else f"{low}-{high}"
        return _Finding(False, f"DRA driver publishes {whole} of {wanted} expected whole GPUs", evidence)
    evidence["offered"] = _gpu_phrase(whole, published_mig, n.label(L_PRODUCT) or "GPU") + f" (DRA {DRA_DRIVER})"
    return _Finding(True, f"DRA driver publishes {evidence['offered']}", evidence)


def _check_sandbox_plugin(n: _Node, expected_gpus: int) -> _Finding:
    evidence: dict[str, Any] = n.pick(L_DEPLOY_SANDBOX_PLUGIN)
    deploy = n.label(L_DEPLOY_SANDBOX_PLUGIN)
    if deploy != "true":
        return _Finding(False, _deploy_problem("sandbox device plugin", L_DEPLOY_SANDBOX_PLUGIN, deploy), evidence)
    capacity = _gpu_resources(n.capacity)
    passthrough = {key: value for key, value in capacity.items() if _is_passthrough_resource(key)}
    evidence["capacity"] = capacity
    evidence["expected_gpus"] = expected_gpus
    total = sum(passthrough.values())
    if total != expected_gpus:
        return _Finding(
            False, f"sandbox device plugin advertises {total} of {expected_gpus} passthrough GPUs", evidence
        )
    evidence["offered"] = ", ".join(f"{value} x {key}" for key, value in sorted(passthrough.items()))
    return _Finding(True, f"sandbox device plugin advertises {evidence['offered']}", evidence)


def _check_allocatable(n: _Node, tolerations: Sequence[Mapping[str, Any]]) -> _Finding:
    capacity = _gpu_resources(n.capacity)
    allocatable = _gpu_resources(n.allocatable)
    evidence: dict[str, Any] = {"allocatable": allocatable, "unschedulable": bool(n.spec.get("unschedulable"))}
    tainted = [
        str(device.get("name"))
        for device in n.dra_devices
        if any(t.get("effect") in BLOCKING_EFFECTS for t in device.get("taints") or [])
    ]
    if tainted:
        evidence["tainted_devices"] = tainted
        detail = f"{len(tainted)} of {len(n.dra_devices)} DRA devices are tainted (unhealthy): {', '.join(tainted)}"
        return _Finding(False, detail, evidence)
    for resource, have in sorted(capacity.items()):
        usable = allocatable.get(resource, 0)
        if usable < have:
            evidence["capacity"] = capacity
            detail = f"{usable} of {have} {resource} allocatable: the device plugin reports {have - usable} unhealthy"
            return _Finding(False, detail, evidence)
    taints = [_taint(t) for t in n.taints]
    evidence["taints"] = taints
    if n.spec.get("unschedulable"):
        return _Finding(False, "node is cordoned (spec.unschedulable=true)", evidence)
    notes: list[str] = []
    for taint in taints:
        if taint["effect"] not in BLOCKING_EFFECTS:
            continue
        if taint["key"] == TAINT_DEDICATED:
            evidence["dedicated"] = taint["value"]
            notes.append(f"dedicated to tenant {taint['value']} ({TAINT_DEDICATED} taint, expected)")
            continue
        if taint["key"] == "node.kubernetes.io/unschedulable":
            return _Finding(False, f"node is cordoned ({_taint_text(taint)})", evidence)
        if not any(_tolerates(toleration, taint) for toleration in tolerations):
            return _Finding(False, f"taint {_taint_text(taint)} is not tolerated by Ladder's pods", evidence)
    total = len(n.dra_devices) if n.dra else sum(allocatable.values())
    detail = f"{total} GPU devices allocatable, schedulable"
    if notes:
        detail += "; " + "; ".join(notes)
    return _Finding(True, detail, evidence)


# Worst first: the order findings are reported in.
_SEVERITY = ("missing", "unreadable", "down", "not_active", "link_layer", "degraded")
_DOWN_STATES = frozenset({"down", "lowerlayerdown", "notpresent", "dormant"})  # a netdev's operstate
_PHYS_HINTS = {
    "Polling": "no peer answers: cable, transceiver or switch port",
    "Disabled": "the port is administratively disabled",
    "LinkErrorRecovery": "the link keeps failing its training",
    "Sleep": "the port is asleep (not polling)",
}


def _check_rdma(n: _Node, rdma: Rdma) -> _Finding:
    """The fleet's NICs against what the node reports (see the module docstring, ``rdma``)."""
    readings = [_nic_reading(n, nic) for nic in rdma.nics]
    peer_rate = max((r["rate_gbps"] for r in readings if r.get("rate_gbps") is not None), default=None)
    expected_rate = rdma.rate_gbps if rdma.rate_gbps is not None else peer_rate
    for nic, reading in zip(rdma.nics, readings, strict=True):
        _judge(reading, nic, rdma, expected_rate, stated=rdma.rate_gbps is not None)
    found: dict[str, Any] = {
        "fabric": rdma.fabric,
        "link_layer": rdma.link_layer,
        "expected_rate_gbps": rdma.rate_gbps,
        "nics": readings,
    }
    labels = {key: n.label(key) for key in (*L_RDMA_CAPABLE, *L_RDMA_AVAILABLE, L_MOFED_WAIT) if n.label(key)}
    if labels:
        found["labels"] = labels
    evidence: dict[str, Any] = {"rdma": found}
    if not any(r["present"] for r in readings):
        return _Finding(False, f"none of the {len(readings)} RDMA NICs is reported: {_why_no_nic(n)}", evidence)
    faults = sorted(
        (r for r in readings if r["finding"] != "ok"), key=lambda r: (_SEVERITY.index(r["finding"]), r["rail"])
    )
    if len(faults) == 1:
        return _Finding(False, f"RDMA NIC {faults[0]['problem']}", evidence)
    if faults:
        detail = f"{len(faults)} of {len(readings)} RDMA NICs faulty: " + "; ".join(r["problem"] for r in faults)
        return _Finding(False, detail, evidence)
    rate = f", {peer_rate} Gb/s" if peer_rate is not None else ", rate not reported"
    return _Finding(True, f"{len(readings)} RDMA NICs up on fabric {rdma.fabric} ({rdma.link_layer}{rate})", evidence)


def _nic_reading(n: _Node, nic: Nic) -> dict[str, Any]:
    """What the reporter's annotation and DraNet say of one of the fleet's NICs."""
    reading: dict[str, Any] = {"device": nic.device, "rail": nic.rail, "present": False, "sources": []}
    raw = n.annotations.get(f"{A_RDMA_PREFIX}{nic.device}")
    if raw is not None:
        reading["present"] = True
        reading["sources"].append(f"{A_RDMA_PREFIX}{nic.device}")
        try:
            report = json.loads(raw)
        except ValueError:
            report = None
        if not isinstance(report, dict):
            reading["unreadable"] = str(raw)[:200]
        else:
            reading["state"] = _sysfs_word(report.get("state"))
            reading["phys_state"] = _sysfs_word(report.get("phys_state"))
            reading["link_layer"] = report.get("link_layer")
            reading["rate"] = report.get("rate")
            match = _RATE.match(str(report.get("rate") or ""))
            if match:
                number = float(match.group(1))
                reading["rate_gbps"] = int(number) if number.is_integer() else number
                reading["width"] = f"{match.group(2)}X" if match.group(2) else None
                reading["speed"] = match.group(3) or None
            reading["pcie_width"] = _int(report.get("pcie_width"))
            reading["pcie_max_width"] = _int(report.get("pcie_max_width"))
    device = n.nic_devices.get(nic.device)
    if device is not None:
        reading["present"] = True
        reading["sources"].append(f"{NIC_DRA_DRIVER} device {device.get('name')}")
        reading["dra_state"] = _attribute(device, NIC_ATTR_STATE, NIC_DRA_DRIVER)
    return reading


def _judge(reading: dict[str, Any], nic: Nic, rdma: Rdma, expected_rate: float | None, *, stated: bool) -> None:
    """Set the reading's ``finding`` (one of :data:`_SEVERITY`, or ``ok``) and, for a fault, its ``problem``."""
    name = f"{nic.device} (rail {nic.rail})"
    reading["finding"], problem = "ok", ""
    state, phys = reading.get("state"), reading.get("phys_state")
    sysfs_layer = str(reading.get("link_layer") or "").lower()
    if not reading["present"]:
        reading["finding"] = "missing"
        problem = (
            f"{name} missing: no {A_RDMA_PREFIX}{nic.device} annotation and no {NIC_DRA_DRIVER} device names it"
            " (the NIC is not on the PCI bus, its driver did not bind, or it was renamed)"
        )
    elif "unreadable" in reading:
        reading["finding"] = "unreadable"
        problem = f"{name}: its {A_RDMA_PREFIX}{nic.device} annotation is not a JSON object"
    elif state is not None and state != "ACTIVE":
        physical_up = phys == "LinkUp"
        reading["finding"] = "not_active" if physical_up and state in ("INIT", "ARMED") else "down"
        if reading["finding"] == "not_active":
            problem = (
                f"{name} link up but {state}, not ACTIVE (phys_state=LinkUp): no subnet manager configured the port"
            )
        else:
            hint = _PHYS_HINTS.get(str(phys), "")
            problem = f"{name} link down (state={state}, phys_state={_shown(phys)})" + (f": {hint}" if hint else "")
    elif state is None and str(reading.get("dra_state") or "").lower() in _DOWN_STATES:
        reading["finding"] = "down"
        problem = f"{name} link down ({NIC_ATTR_STATE}={reading['dra_state']})"
    elif sysfs_layer and LINK_LAYER_OF_SYSFS.get(sysfs_layer) != rdma.link_layer:
        reading["finding"] = "link_layer"
        problem = (
            f"{name} runs link layer {reading['link_layer']} but fabric {rdma.fabric} is {rdma.link_layer}"
            " (a VPI card in the other mode)"
        )
    elif expected_rate is not None and reading.get("rate_gbps") is not None and reading["rate_gbps"] < expected_rate:
        reading["finding"] = "degraded"
        trained = f"{reading['rate_gbps']} Gb/s" + (
            f" ({reading['rate'].split('(', 1)[1]}" if "(" in str(reading["rate"]) else ""
        )
        against = "the fleet's" if stated else "its fastest peer's"
        problem = f"{name} degraded: trained at {trained}, below {against} {expected_rate} Gb/s"
    elif (
        reading.get("pcie_width") is not None
        and reading.get("pcie_max_width") is not None
        and reading["pcie_width"] < reading["pcie_max_width"]
    ):
        reading["finding"] = "degraded"
        problem = (
            f"{name} degraded: PCIe link at x{reading['pcie_width']} of x{reading['pcie_max_width']},"
            " the host side caps its bandwidth"
        )
    if problem:
        reading["problem"] = problem


def _why_no_nic(n: _Node) -> str:
    """Why nothing reports any of the node's RDMA NICs, from the node-level labels."""
    capable = any(n.label(key) == "true" for key in L_RDMA_CAPABLE)
    available = any(n.label(key) == "true" for key in L_RDMA_AVAILABLE)
    if n.label(L_MOFED_WAIT) == "true":
        return f"the network operator's OFED driver is not ready ({L_MOFED_WAIT}=true)"
    if capable and not available:
        return (
            "node feature discovery sees the NICs but not the RDMA kernel modules (rdma.capable=true,"
            " rdma.available unset): ib_uverbs and rdma_ucm are not loaded"
        )
    if not capable and n.label(L_NFD_PCI) is not None:
        return "node feature discovery runs but sees no NIC of vendor 15b3 (no rdma.capable label)"
    return (
        f"no {A_RDMA_PREFIX}<device> annotation and no {NIC_DRA_DRIVER} ResourceSlice for the node: is the RDMA"
        " reporter DaemonSet (or DraNet) running here? (docs/jobs.md, Diagnosing a node's RDMA NICs)"
    )


def _sysfs_word(value: Any) -> str | None:
    """``4: ACTIVE`` -> ``ACTIVE``, ``5: LinkUp`` -> ``LinkUp`` (sysfs prints the number and the name)."""
    if value is None:
        return None
    text = str(value).strip()
    word = text.split(":", 1)[1].strip() if ":" in text else text
    return word.upper() if word.lower() in {"down", "init", "armed", "active", "active_defer", "nop"} else word


# --- helpers --------------------------------------------------------------------------------------------------


def _profile(name: str) -> str:
    return name.removeprefix(MIG_PREFIX).removeprefix("mig-")


def _int(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _shown(value: Any) -> str:
    return "unset" if value is None else str(value)


def _driver_version(n: _Node) -> str | None:
    for key in DRIVER_VERSION_LABELS:
        value = n.label(key)
        if value:
            return value
    return None


def _deploy_problem(what: str, key: str, value: str | None) -> str:
    if value is None:
        return f"no {what} evidence: {key} is unset"
    if value == "false":
        return f"{what} is disabled on this node ({key}=false)"
    if value.startswith("paused"):
        return f"{what} is paused by the GPU operator ({key}={value})"
    return f"{what} not deployed ({key}={value})"


def _is_passthrough_resource(key: str) -> bool:
    return key.startswith("nvidia.com/") and key not in (GPU, GPU_SHARED) and not key.startswith(MIG_PREFIX)


def _gpu_resources(resources: Mapping[str, Any]) -> dict[str, int]:
    """The NVIDIA extended resources of a capacity or allocatable map, as integers (unparseable counts as 0)."""
    return {key: _int(value) or 0 for key, value in resources.items() if key.startswith("nvidia.com/")}


_SLICES = re.compile(r"^(\d+)g\.")


def _whole_gpu_range(expected_gpus: int, mig: Mapping[str, int], mig_gpus: int | None) -> tuple[int, int]:
    """How many whole GPUs the mixed strategy should advertise: the GPUs not in MIG mode.

    With the number of MIG-mode GPUs unknown it lies between "every MIG device on its own GPU" and "the MIG
    devices packed 7 compute slices to a GPU".
    """
    if not mig:
        return expected_gpus, expected_gpus
    if mig_gpus is not None:
        return expected_gpus - mig_gpus, expected_gpus - mig_gpus
    devices = sum(mig.values())
    slices = 0
    for profile, count in mig.items():
        match = _SLICES.match(profile)
        slices += (int(match.group(1)) if match else 1) * count
    fewest_parents = -(-slices // 7)
    return max(expected_gpus - devices, 0), max(expected_gpus - fewest_parents, 0)


def _gpu_phrase(whole: int, mig: Mapping[str, int], product: str) -> str:
    parts = [f"{whole} x {product}"] if whole or not mig else []
    parts += [f"{count} x mig-{profile}" for profile, count in sorted(mig.items()) if count]
    return ", ".join(parts)


def _taint(taint: Mapping[str, Any]) -> dict[str, Any]:
    return {"key": taint.get("key"), "value": taint.get("value"), "effect": taint.get("effect")}


def _taint_text(taint: Mapping[str, Any]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint['key']}{value}:{taint['effect']}"


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' matching rule: effect (empty means all), key (empty with Exists means all), then value."""
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")
