"""The simulated fleet's dcgm-exporter: what each simulated node's GPUs report, in the exporter's own exposition
(``provisioning.domain.gpu_metrics.exposition``), driven by what the simulated workloads do
(``provisioning.drivers.simulated.gpu_activity``). Served per node at ``/simulated/dcgm/<hostname>/metrics`` for a
Prometheus to scrape as it would scrape the exporter's DaemonSet, with the node list for Prometheus's HTTP service
discovery at ``/simulated/dcgm/targets``.

Per GPU, as the exporter reports it:
- a whole GPU: one set of series (no ``GPU_I_*`` labels), its holder's work, or idle when free;
- a soft-shared GPU (MPS, time-slicing, fractions: one tenant's allocations by rule): one set of series, the shares'
  work added up by their share of the GPU;
- a GPU in MIG mode: per instance, its own memory and profiling series (``GPU_I_PROFILE``, ``GPU_I_ID``); the
  parent's power, temperature, utilisation and last XID without them.
Where the exporter maps pods, the series carry ``pod``, ``namespace`` and ``container`` of the workload on it.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from provisioning.domain.gpu_metrics import (
    DRAM_ACTIVE,
    FB_FREE,
    FB_USED,
    GPU_UTIL,
    PER_INSTANCE,
    POWER,
    SM_ACTIVE,
    SM_OCCUPANCY,
    TEMPERATURE,
    TENSOR_ACTIVE,
    XID,
    DeviceLabels,
    exposition,
    gpu_instance_id,
    profile_memory_gb,
)
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.mig import COMPUTE_SLICES, GEOMETRY
from provisioning.drivers.base import SimulatedProvisioner, provisioner
from provisioning.drivers.kubernetes.shapes import namespace_for
from provisioning.drivers.simulated import GpuActivity, gpu_activity
from provisioning.models import AllocationDevice, Gpu, Node

# Board power by GPU model (W): idle, and at full load.
POWER_WATTS = {"A100": (55, 400), "H100": (70, 700), "H200": (75, 700), "B200": (120, 1000), "GB200": (120, 1200)}
MODEL_NAMES = {  # the exporter's modelName, as NVML names the board
    "A100-40GB": "NVIDIA A100-SXM4-40GB",
    "A100-80GB": "NVIDIA A100-SXM4-80GB",
    "H100-SXM-80GB": "NVIDIA H100 80GB HBM3",
    "H100-NVL-94GB": "NVIDIA H100 NVL",
    "H200-141GB": "NVIDIA H200",
}


def _watts(model: str) -> tuple[int, int]:
    return next((w for prefix, w in POWER_WATTS.items() if model.startswith(prefix)), (60, 400))


def _values(activity: GpuActivity, memory_gb: float) -> dict[str, float]:
    used = round(activity.memory_used_gb * 1024)
    return {
        SM_ACTIVE.name: round(activity.sm_active, 6),
        SM_OCCUPANCY.name: round(activity.sm_occupancy, 6),
        TENSOR_ACTIVE.name: round(activity.tensor_active, 6),
        DRAM_ACTIVE.name: round(activity.dram_active, 6),
        FB_USED.name: used,
        FB_FREE.name: max(0, round(memory_gb * 1024) - used),
    }


def _board(model: str, sm_active: float, xid: int) -> dict[str, float]:
    idle_w, full_w = _watts(model)
    return {
        GPU_UTIL.name: round(min(1.0, sm_active * 1.15) * 100),
        POWER.name: round(idle_w + (full_w - idle_w) * sm_active, 3),
        TEMPERATURE.name: round(31 + 45 * sm_active),
        XID.name: xid,
    }


def node_readings(node: Node, *, now: datetime) -> list[tuple[DeviceLabels, dict[str, float]]]:
    """Every series the node's exporter reports now."""
    driver = SimulatedProvisioner()
    model = node.gpu_model.name
    memory_gb = float(node.gpu_model.memory_gb)
    held: dict[int, list[AllocationDevice]] = defaultdict(list)
    devices = AllocationDevice.objects.filter(gpu__node=node, active=True).select_related(
        "allocation__tenant", "allocation__gpu_model", "allocation__hall"
    )
    for device in devices:
        assert device.gpu_id is not None  # noqa: S101 - filtered by its GPU
        held[device.gpu_id].append(device)
    readings = []
    for gpu in Gpu.objects.filter(node=node).order_by("index"):
        base = DeviceLabels(
            gpu=gpu.index,
            uuid=gpu.uuid,
            pci_bus_id=f"00000000:{0x18 + 0x10 * gpu.index:02X}:00.0",
            model_name=MODEL_NAMES.get(model, f"NVIDIA {model}"),
            hostname=node.hostname,
            driver_version=node.driver_version,
        )
        on_it = held.get(gpu.pk, [])
        mig = [d for d in on_it if d.mig_profile]
        if mig:
            busy = 0.0
            for device in sorted(mig, key=lambda d: d.mig_start or 0):
                kind = CATALOG[model].profile_kind(device.mig_profile)
                assert kind is not None  # noqa: S101 - placed from the catalog
                size = GEOMETRY[kind].memory
                instance_gb = float(profile_memory_gb(device.mig_profile) or 0)
                activity = _activity(driver, device, now, instance_gb)
                labels = _mig_labels(base, device, gpu_instance_id(size, device.mig_start or 0))
                values = _values(activity, instance_gb)
                readings.append((labels, {k: v for k, v in values.items() if k in PER_INSTANCE}))
                busy += activity.sm_active * GEOMETRY[kind].compute / COMPUTE_SLICES
            readings.append((base, _board(model, busy, gpu.simulated_xid or 0)))
            continue
        activity, pod = GpuActivity.idle(), {}
        if on_it:
            parts = [(d, (d.share_milli or 1000) / 1000) for d in on_it]
            acts = [(_activity(driver, d, now, memory_gb * share), share) for d, share in parts]
            activity = GpuActivity(
                sm_active=min(1.0, sum(a.sm_active * share for a, share in acts)),
                sm_occupancy=min(1.0, sum(a.sm_occupancy * share for a, share in acts)),
                tensor_active=min(1.0, sum(a.tensor_active * share for a, share in acts)),
                dram_active=min(1.0, sum(a.dram_active * share for a, share in acts)),
                memory_used_gb=min(memory_gb, sum(a.memory_used_gb for a, _ in acts)),
            )
            pod = _pod(on_it[0])
        labels = DeviceLabels(**{**base.__dict__, "pod": pod})
        readings.append(
            (labels, {**_values(activity, memory_gb), **_board(model, activity.sm_active, gpu.simulated_xid or 0)})
        )
    return readings


def _mig_labels(base: DeviceLabels, device: AllocationDevice, instance: int) -> DeviceLabels:
    fields = {**base.__dict__, "mig_profile": device.mig_profile, "gpu_instance": instance, "pod": _pod(device)}
    return DeviceLabels(**fields)


def _pod(device: AllocationDevice) -> dict[str, str]:
    allocation = device.allocation
    return {
        "container": "worker",
        "namespace": namespace_for(allocation.tenant.slug, allocation.workload_spec),
        "pod": f"ldr-{allocation.pk}-0",
    }


def _activity(driver: SimulatedProvisioner, device: AllocationDevice, now: datetime, memory_gb: float) -> GpuActivity:
    allocation = device.allocation
    return gpu_activity(driver.timeline(allocation), now=now, memory_gb=memory_gb, called_at=allocation.last_called_at)


def node_exposition(hostname: str, *, now: datetime) -> str | None:
    """The node's exporter text; None for a host the simulated fleet does not have."""
    node = Node.objects.filter(hostname=hostname).select_related("gpu_model").first()
    return None if node is None else exposition(node_readings(node, now=now))


def exporter_targets(base_url: str) -> list[dict[str, object]]:
    """Prometheus HTTP service discovery: one target per simulated node's exporter, at ``base_url``."""
    host = base_url.split("://", 1)[-1].rstrip("/")
    return [
        {"targets": [host], "labels": {"__metrics_path__": f"/simulated/dcgm/{name}/metrics", "node": name}}
        for name in Node.objects.order_by("hostname").values_list("hostname", flat=True)
    ]


def served() -> bool:
    """The simulated fleet is the provisioner, so its exporter is served."""
    return isinstance(provisioner(), SimulatedProvisioner)
