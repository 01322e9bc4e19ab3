"""What node diagnosis (``diagnosis.py``) reads of a Kubernetes Node object, and how: the names NVIDIA's GPU
operator, node feature discovery and the DRA drivers (NVIDIA's for GPUs, DraNet for RDMA NICs) write on it or
publish for it; read access to the Node with the devices those drivers publish for it (``NodeReading``); and what a
layer finds (``Finding``). Pure: no Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DRA_DRIVER = "gpu.nvidia.com"
NIC_DRA_DRIVER = "dra.net"  # DraNet (kubernetes-sigs/dranet)

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
NIC_ATTR_RDMA = f"{NIC_DRA_DRIVER}/rdma"
NIC_ATTR_DEVICE = f"{NIC_DRA_DRIVER}/rdmaDevice"


@dataclass(frozen=True)
class Finding:
    ok: bool
    detail: str
    evidence: dict[str, Any]


class NodeReading:
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
            str(device_attribute(device, NIC_ATTR_DEVICE, NIC_DRA_DRIVER)): device
            for found in resource_slices
            if (spec := found.get("spec") or {}).get("driver") == NIC_DRA_DRIVER
            and (spec.get("nodeName") or spec.get("node_name")) == self.name
            for device in spec.get("devices") or []
            if device_attribute(device, NIC_ATTR_RDMA, NIC_DRA_DRIVER) is True
            and device_attribute(device, NIC_ATTR_DEVICE, NIC_DRA_DRIVER)
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


def device_attribute(device: Mapping[str, Any], name: str, driver: str = DRA_DRIVER) -> Any:
    """A device attribute's value (the one typed field of ``{"string": ...}``, ``{"bool": ...}``), by its name
    qualified or not (an unqualified name is the driver's own)."""
    attributes = device.get("attributes") or {}
    value = (
        attributes.get(name) or attributes.get(f"{driver}/{name}") or attributes.get(name.removeprefix(f"{driver}/"))
    )
    return next(iter(value.values()), None) if isinstance(value, Mapping) and value else None


def as_int(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def shown(value: Any) -> str:
    return "unset" if value is None else str(value)
