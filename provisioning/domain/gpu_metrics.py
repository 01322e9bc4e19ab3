"""GPU telemetry as NVIDIA's dcgm-exporter publishes it, and what Ladder makes of it (no Django).

- ``FIELDS``: the dcgm-exporter fields Ladder reads, with the exporter's own Prometheus type and help text
  (``etc/default-counters.csv`` and ``etc/dcp-metrics-included.csv`` of NVIDIA/dcgm-exporter, vendored under
  ``docs/reference/dcgm-exporter/`` with their licence).
- ``exposition``: a node's readings written exactly as the exporter's template writes them
  (``render_metrics.go``): per field ``# HELP`` and ``# TYPE``, then one line per GPU or MIG instance labelled
  ``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, for a MIG instance ``GPU_I_PROFILE`` and
  ``GPU_I_ID``, ``hostname``, then the pod labels (``container``, ``namespace``, ``pod``, in that order) where the
  exporter maps pods, then the attributes (``DCGM_FI_DRIVER_VERSION``). The simulated fleet serves it.
- ``DeviceKey`` / ``selector``: which series are an allocation's: a whole GPU or a soft share by the GPU's ``UUID``
  (its series without ``GPU_I_ID``), a MIG instance by its parent's ``UUID`` and its ``GPU_I_ID``. Never by pod
  labels, which an exporter sets from what the kubelet says runs there, not from what Ladder placed.
- ``exact_selectors`` / ``held_runs``: for Prometheus to combine many devices itself: matchers that select exactly
  their series (each UUID with its ``GPU_I_ID``), and the runs of a range query's instants over which the same
  devices were held.
- ``gpu_instance_id``: the GPU instance id of a MIG placement, as the MIG layouts Ladder's nodes are cut with number
  them (in placement order: the 7g instance 0, the 4g/3g at start s ``1 + s // 4``, the 2g/1g-double at ``3 + s //
  2``, the 1g at ``7 + s``; distinct for every legal layout).
- ``findings``: plain-words findings from an allocation's series: idle minutes, memory it could do without (and
  the MIG slice that would hold it, with what it would save), tensor cores unused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum

from provisioning.domain.placement.mig import MigKind


@dataclass(frozen=True)
class Field:
    name: str
    prom_type: str
    help: str


# The fields Ladder reads (and the simulated exporter publishes), with the exporter's help text as it ships.
SM_ACTIVE = Field("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.")
SM_OCCUPANCY = Field("DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM.")
TENSOR_ACTIVE = Field("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.")
DRAM_ACTIVE = Field(
    "DCGM_FI_PROF_DRAM_ACTIVE",
    "gauge",
    "Ratio of cycles the device memory interface is active sending or receiving data.",
)
GPU_UTIL = Field("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).")
FB_FREE = Field("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).")
FB_USED = Field("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).")
POWER = Field("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).")
TEMPERATURE = Field("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).")
XID = Field("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.")
FIELDS: tuple[Field, ...] = (
    GPU_UTIL,
    FB_FREE,
    FB_USED,
    POWER,
    TEMPERATURE,
    XID,
    SM_ACTIVE,
    SM_OCCUPANCY,
    TENSOR_ACTIVE,
    DRAM_ACTIVE,
)
# What a MIG instance reports of its own; the rest (power, temperature, XID, utilisation) is the parent GPU's.
PER_INSTANCE = frozenset({FB_FREE.name, FB_USED.name, SM_ACTIVE.name, SM_OCCUPANCY.name, TENSOR_ACTIVE.name,
                          DRAM_ACTIVE.name})  # fmt: skip
DRIVER_VERSION_ATTRIBUTE = "DCGM_FI_DRIVER_VERSION"


# --- the exposition -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceLabels:
    """What the exporter labels one GPU's (or MIG instance's) series with."""

    gpu: int
    uuid: str
    pci_bus_id: str
    model_name: str
    hostname: str
    mig_profile: str | None = None
    gpu_instance: int | None = None
    pod: Mapping[str, str] = field(default_factory=dict)  # container, namespace, pod: where the exporter maps pods
    driver_version: str = ""

    def render(self) -> str:
        parts = [
            f'gpu="{self.gpu}"',
            f'UUID="{self.uuid}"',
            f'pci_bus_id="{self.pci_bus_id}"',
            f'device="nvidia{self.gpu}"',
            f'modelName="{_escape(self.model_name)}"',
        ]
        if self.mig_profile:
            parts += [f'GPU_I_PROFILE="{self.mig_profile}"', f'GPU_I_ID="{self.gpu_instance}"']
        parts.append(f'hostname="{_escape(self.hostname)}"')
        parts += [f'{k}="{_escape(v)}"' for k, v in sorted(self.pod.items())]
        if self.driver_version:
            parts.append(f'{DRIVER_VERSION_ATTRIBUTE}="{_escape(self.driver_version)}"')
        return ",".join(parts)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _value(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:.6g}"


def exposition(readings: Iterable[tuple[DeviceLabels, Mapping[str, float]]], *, at_ms: int | None = None) -> str:
    """The exporter's text for a node: each field's block, then a line per device reporting it. ``at_ms``: stamp
    every sample with that instant (the exposition format's optional timestamp, which the exporter itself never
    writes: for replaying what a node reported earlier)."""
    rows = list(readings)
    stamp = "" if at_ms is None else f" {at_ms}"
    blocks = []
    for f in FIELDS:
        lines = [
            f"{f.name}{{{labels.render()}}} {_value(values[f.name])}{stamp}"
            for labels, values in rows
            if f.name in values
        ]
        if lines:
            blocks.append("\n".join([f"# HELP {f.name} {f.help}", f"# TYPE {f.name} {f.prom_type}", *lines]))
    return "".join(block + "\n" for block in blocks)


# --- whose series -----------------------------------------------------------------------------------------------


def profile_memory_gb(profile: str) -> int | None:
    """The memory a MIG profile's name states (``1g.10gb`` -> 10, ``1g.10gb+me`` -> 10)."""
    found = re.search(r"\.(\d+)gb", profile)
    return int(found[1]) if found else None


_INSTANCE_BASE = {8: 0, 4: 1, 2: 3, 1: 7}  # memory slices of the profile -> the first id of its kind
_INSTANCE_STRIDE = {8: 8, 4: 4, 2: 2, 1: 1}


def gpu_instance_id(memory_slices: int, start: int) -> int:
    """The GPU instance id of a MIG instance covering ``memory_slices`` from ``start`` (see the module's doc)."""
    if memory_slices not in _INSTANCE_BASE:
        raise ValueError(f"no MIG profile covers {memory_slices} memory slices")
    return _INSTANCE_BASE[memory_slices] + start // _INSTANCE_STRIDE[memory_slices]


class Scope(StrEnum):
    DEVICE = "device"  # the allocation's own: a whole GPU or its MIG instance
    GPU = "gpu"  # the whole GPU's totals, shown for a soft share (single-tenant by rule): not the process's own


@dataclass(frozen=True)
class DeviceKey:
    """An allocation's device as the exporter's series name it."""

    uuid: str
    gpu_instance: int | None = None  # MIG only
    scope: Scope = Scope.DEVICE

    @property
    def name(self) -> str:
        return self.uuid if self.gpu_instance is None else f"{self.uuid}/{self.gpu_instance}"

    @property
    def series(self) -> tuple[str, str | None]:
        """What its series are known by: (``UUID``, ``GPU_I_ID`` or None), as ``series_of`` reads them."""
        return self.uuid, None if self.gpu_instance is None else str(self.gpu_instance)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a series with these labels is this device's (for a MIG instance, its own series only)."""
        return series_of(labels) == self.series


def series_of(labels: Mapping[str, str]) -> tuple[str, str | None]:
    """Which device a series is of: its (``UUID``, ``GPU_I_ID`` or None)."""
    return labels.get("UUID", ""), labels.get("GPU_I_ID") or None


def selector(devices: Sequence[DeviceKey]) -> str:
    """The PromQL label matchers for the devices' series: their UUIDs (exact, regex-escaped); every series
    returned is checked again with ``DeviceKey.matches``, so a MIG instance never reads a sibling's."""
    uuids = sorted({d.uuid for d in devices})
    return 'UUID=~"' + "|".join(_regex_escape(u) for u in uuids) + '"'


def exact_selectors(devices: Sequence[DeviceKey]) -> list[str]:
    """Label matchers that select exactly the devices' series, one per GPU instance id (a whole GPU's or a soft
    share's series have none): their union is the devices', nothing else's, so Prometheus may aggregate them
    without a series being checked again."""
    by_instance: dict[int | None, set[str]] = {}
    for d in devices:
        by_instance.setdefault(d.gpu_instance, set()).add(d.uuid)
    found = []
    for instance, uuids in sorted(by_instance.items(), key=lambda item: -1 if item[0] is None else item[0]):
        alternatives = "|".join(_regex_escape(u) for u in sorted(uuids))
        found.append(f'UUID=~"{alternatives}",GPU_I_ID="{"" if instance is None else instance}"')
    return found


def held_runs(
    holds: Sequence[tuple[int, int | None]], *, start_ms: int, end_ms: int, step_ms: int
) -> list[tuple[int, int, tuple[int, ...]]]:
    """A range query's instants (``start_ms``, then every ``step_ms`` up to ``end_ms``) in runs over which the same
    devices are held, a device ``(since, until)`` (ms; ``until`` None: still held) being held at ``t`` when
    ``since <= t <= until``: ``(first instant, last instant, the held devices' indices)``, in time order, instants
    at which none is held left out."""
    count = (end_ms - start_ms) // step_ms + 1
    cuts = {0}
    for since, until in holds:
        cuts.add(-((start_ms - since) // step_ms))  # the first instant at or after since
        if until is not None:
            cuts.add((until - start_ms) // step_ms + 1)  # the first instant after until
    ordered = sorted(c for c in cuts if 0 <= c < count)
    runs: list[tuple[int, int, tuple[int, ...]]] = []
    for i, first in enumerate(ordered):
        last = (ordered[i + 1] if i + 1 < len(ordered) else count) - 1
        t = start_ms + first * step_ms
        held = tuple(j for j, (since, until) in enumerate(holds) if since <= t and (until is None or t <= until))
        if not held:
            continue
        if runs and runs[-1][2] == held and runs[-1][1] == t - step_ms:
            runs[-1] = (runs[-1][0], start_ms + last * step_ms, held)
        else:
            runs.append((t, start_ms + last * step_ms, held))
    return runs


def _regex_escape(text: str) -> str:
    return "".join(f"\\\\{c}" if c in r".^$*+?()[]{}|\\" else c for c in text)


# --- findings ---------------------------------------------------------------------------------------------------

IDLE_SM_ACTIVE = 0.01  # below 1% of cycles with a warp on an SM: idle
TENSOR_UNUSED = 0.005  # busy SMs, tensor pipes active under 0.5% of cycles: the tensor cores sit unused
MEMORY_HEADROOM = 1.1  # a slice must hold the peak memory used with 10% to spare


@dataclass(frozen=True)
class Slice:
    """A MIG profile that could hold the work, and its price against what is paid now."""

    profile: str
    memory_gb: int
    kind: MigKind


def idle_tail_seconds(points: Sequence[tuple[float, float]], step_seconds: float, *, until: float) -> float:
    """How long an SM-active series has been idle without a break up to ``until`` (unix seconds): its points are
    ``step_seconds`` apart; a missing point, or none near ``until``, ends the idle run (a node or exporter that
    reports nothing is not evidence of idle GPUs)."""
    ordered = sorted(points)
    if not ordered or until - ordered[-1][0] > 2 * step_seconds:
        return 0.0
    start = ordered[-1][0]
    for (t_before, before), (t_after, _) in zip(reversed(ordered[:-1]), reversed(ordered[1:]), strict=True):
        if t_after - t_before > 1.5 * step_seconds or before >= IDLE_SM_ACTIVE:
            break
        start = t_before
    if ordered[-1][1] >= IDLE_SM_ACTIVE:
        return 0.0
    return until - start


def idle_time(points: Sequence[tuple[float, float]], step_seconds: float) -> str | None:
    """The idle time of an allocation's SM-active series (averaged over its devices), each point standing for
    ``step_seconds``, as "idle for 47 of the last 60 minutes" (in seconds under two minutes covered); None: never."""
    idle = sum(1 for _, value in points if value < IDLE_SM_ACTIVE) * step_seconds
    covered = len(points) * step_seconds
    if not idle:
        return None
    if covered < 120:
        return f"idle for {round(idle)} of the last {math.ceil(covered)} seconds"
    return f"idle for {max(1, round(idle / 60))} of the last {math.ceil(covered / 60)} minutes"


def smallest_slice(peak_used_gb: float, slices: Iterable[Slice]) -> Slice | None:
    """The smallest MIG profile whose memory holds ``peak_used_gb`` with headroom (None: none does)."""
    fitting = [s for s in slices if s.memory_gb >= peak_used_gb * MEMORY_HEADROOM]
    return min(fitting, key=lambda s: (s.memory_gb, s.profile), default=None)


@dataclass(frozen=True)
class Usage:
    """What findings are made from: the allocation's series, averaged or summed over its devices."""

    step_seconds: float
    sm_active: Sequence[tuple[float, float]]  # mean over devices
    tensor_active: Sequence[tuple[float, float]]  # mean over devices
    memory_used_gb: Sequence[tuple[float, float]]  # per device, the most used
    memory_total_gb: float  # of one device
    whole_gpus: bool  # the allocation holds whole GPUs (a slice suggestion applies)


def findings(usage: Usage, *, slices: Iterable[Slice] = (), prices: Mapping[str, Decimal] | None = None) -> list[str]:
    """Plain-words findings. ``slices``: the MIG profiles of the allocation's GPU model; ``prices``: the hourly
    price of a whole GPU (``"whole"``) and of each profile, when known, to say what a slice would save."""
    found = []
    idle = idle_time(usage.sm_active, usage.step_seconds)
    if idle is not None:
        found.append(idle)
    if usage.memory_used_gb:
        peak = max(value for _, value in usage.memory_used_gb)
        line = f"uses {_gb(peak)} of {_gb(usage.memory_total_gb)}"
        slice_ = smallest_slice(peak, slices) if usage.whole_gpus else None
        if slice_ is not None and slice_.memory_gb < usage.memory_total_gb:
            whole, cheaper = (prices or {}).get("whole"), (prices or {}).get(slice_.profile)
            if whole and cheaper is not None and cheaper < whole:
                saving = round((1 - cheaper / whole) * 100)
                line += f": a `{slice_.profile}` slice would cost {saving}% less"
            else:
                line += f": a `{slice_.profile}` slice would hold it"
        found.append(line)
    busy = [(t, v) for t, v in usage.sm_active if v >= IDLE_SM_ACTIVE]
    if busy:
        busy_at = {t for t, _ in busy}
        tensor = [v for t, v in usage.tensor_active if t in busy_at]
        if tensor and max(tensor) < TENSOR_UNUSED:
            found.append("tensor cores unused")
    return found


def _gb(value: float) -> str:
    return f"{value:.0f} GB" if value >= 10 else f"{value:.1f} GB"
