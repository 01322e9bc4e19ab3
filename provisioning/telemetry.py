"""An allocation's GPU metrics, read from the operator's Prometheus (``core.prometheus``), which scrapes NVIDIA's
dcgm-exporter on every GPU node (the simulated fleet serves one: ``provisioning.simulated_exporter``).

Whose series: only the allocation's own devices, as the engine placed them (``AllocationDevice``: the GPU's UUID,
and for a MIG slice its GPU instance), and only for the time it held each (``held_since`` until ``released_at``).
A soft share (single-tenant by rule) reads its GPU's totals, labelled ``gpu`` scope. Three ways to read, by size:

- **Per device** (up to ``PER_DEVICE_MAX`` devices): one range query a metric for all the devices, by UUID; every
  series returned is matched again to a device (``DeviceKey.matches``), so a sibling MIG instance, the GPU's own
  series under a slice, or any series whatever its pod labels say, is never another tenant's to read. The devices'
  points are combined here: ratios averaged, memory and power summed, temperature and peak memory the hottest.
- **Aggregated** (more devices): Prometheus combines them (``avg``, ``sum``, ``max``) over selectors that match
  exactly the devices' series (``exact_selectors``), one range query a metric for each run of instants over which
  the same devices were held (``held_runs``). No per-device series are returned.
- **Rollups** (a step of five minutes or more): the allocation's five-minute rollups, which Prometheus records
  from the exporter's series joined with Ladder's ``ladder_allocation_device_info`` (what the engine placed, served
  on ``/metrics``; the rules are ``deploy/observability/gpu-rollups.rules.yml``): one series a metric, whatever the
  allocation's size. A read whose window the rollups do not cover (the rules not loaded, or loaded since) reads
  the raw series as above.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from core.prometheus import PrometheusUnavailable, Series, instant, ranged, ranged_all
from provisioning.domain.gpu_metrics import (
    DRAM_ACTIVE,
    FB_FREE,
    FB_USED,
    POWER,
    SM_ACTIVE,
    TEMPERATURE,
    TENSOR_ACTIVE,
    DeviceKey,
    Scope,
    Slice,
    Usage,
    exact_selectors,
    findings,
    gpu_instance_id,
    held_runs,
    profile_memory_gb,
    selector,
    series_of,
)
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.mig import COMPUTE_SLICES, GEOMETRY
from provisioning.models import Allocation, AllocationDevice

MAX_POINTS = 11_000  # Prometheus refuses a range query of more points per series
PER_DEVICE_MAX = 16  # an allocation of more devices is read aggregated by Prometheus, without per-device series
ROLLUP_SECONDS = 300  # the rollups' interval: a read at this step or longer reads them
# The rollups must start within this long of the window's first held instant to be read (a rule's first evaluation
# after the devices were placed, and Ladder's /metrics scraped before it).
ROLLUP_LAG_SECONDS = 2 * ROLLUP_SECONDS


class Resolution:
    RAW = "raw"  # the exporter's samples, as scraped
    ROLLUP = "5m"  # the five-minute rollups


@dataclass(frozen=True)
class Metric:
    name: str
    query: str  # PromQL over a series selector, ``{sel}``
    unit: str
    combine: str  # how the devices' values make the allocation's: mean, sum or max
    rollup: str  # the recording rule's series, per allocation (deploy/observability/gpu-rollups.rules.yml)
    per_instance: bool = True  # a MIG instance has its own (else the GPU's, shared with the other instances)
    per_device: bool = True  # False: combined only (per device it is another metric's series)

    def aggregated(self, selectors: Sequence[str]) -> str:
        """Prometheus combining the series the selectors match (each exact: ``exact_selectors``)."""
        union = " or ".join(f"({self.query.format(sel='{' + s + '}')})" for s in selectors)
        return f"{_AGGREGATE[self.combine]}({union})"

    def rolled_up(self, allocation_id: int, step_seconds: float) -> str:
        """The allocation's rollups over each step: their mean, or their most for a metric combined by max."""
        over = "max_over_time" if self.combine == "max" else "avg_over_time"
        return f'{over}({self.rollup}{{allocation="{allocation_id}"}}[{step_seconds:g}s])'


METRICS: tuple[Metric, ...] = (
    Metric("sm_active", f"{SM_ACTIVE.name}{{sel}}", "ratio", "mean", "allocation:gpu_sm_active:avg5m"),
    Metric("tensor_active", f"{TENSOR_ACTIVE.name}{{sel}}", "ratio", "mean", "allocation:gpu_tensor_active:avg5m"),
    Metric("dram_active", f"{DRAM_ACTIVE.name}{{sel}}", "ratio", "mean", "allocation:gpu_dram_active:avg5m"),
    Metric("memory_used", f"{FB_USED.name}{{sel}}", "MiB", "sum", "allocation:gpu_memory_used:sum5m"),
    Metric("memory_peak", f"{FB_USED.name}{{sel}}", "MiB", "max", "allocation:gpu_memory_peak:max5m", per_device=False),
    Metric(
        "memory_total",
        f"({FB_USED.name}{{sel}} + {FB_FREE.name}{{sel}})",
        "MiB",
        "sum",
        "allocation:gpu_memory_total:sum5m",
    ),
    Metric("power", f"{POWER.name}{{sel}}", "W", "sum", "allocation:gpu_power:sum5m", per_instance=False),
    Metric(
        "temperature", f"{TEMPERATURE.name}{{sel}}", "C", "max", "allocation:gpu_temperature:max5m", per_instance=False
    ),
)
_COMBINE: dict[str, Callable[[list[float]], float]] = {"mean": lambda v: sum(v) / len(v), "sum": sum, "max": max}
_AGGREGATE = {"mean": "avg", "sum": "sum", "max": "max"}


@dataclass(frozen=True)
class HeldDevice:
    key: DeviceKey
    device: AllocationDevice

    def held_at(self, t: float) -> bool:
        return self.held_through(t, t)

    def held_during(self, begin: float, end: float) -> bool:
        """Held at some time between ``begin`` and ``end`` (unix seconds)."""
        since = self.device.held_since.timestamp()
        until = self.device.released_at.timestamp() if self.device.released_at is not None else None
        return since < end and (until is None or until > begin)

    def held_through(self, begin: float, end: float) -> bool:
        """Held for all of ``begin`` to ``end`` (unix seconds)."""
        since = self.device.held_since.timestamp()
        until = self.device.released_at.timestamp() if self.device.released_at is not None else None
        return since <= begin and (until is None or end <= until)


@dataclass
class AllocationMetrics:
    devices: list[HeldDevice]
    start: datetime
    end: datetime
    step_seconds: float
    series: dict[str, dict[str, list[tuple[float, float]]]] = field(default_factory=dict)  # metric -> device -> points
    combined: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # metric -> points
    findings: list[str] = field(default_factory=list)
    unavailable: str | None = None
    resolution: str = Resolution.RAW
    per_device: bool = True  # False: ``series`` is empty, the devices too many to list their points


def device_key(device: AllocationDevice, model: str) -> DeviceKey:
    """How the exporter names the device's series."""
    if device.mig_profile:
        kind = CATALOG[model].profile_kind(device.mig_profile)
        if kind is None:
            raise ValueError(f"{device.mig_profile} is no MIG profile of {model}")
        return DeviceKey(device.gpu_uuid, gpu_instance_id(GEOMETRY[kind].memory, device.mig_start or 0))
    scope = Scope.GPU if device.share_milli is not None else Scope.DEVICE
    return DeviceKey(device.gpu_uuid, None, scope)


def held_devices(allocation: Allocation, *, start: datetime, end: datetime) -> list[HeldDevice]:
    """The devices the allocation held at some time between ``start`` and ``end``."""
    rows = allocation.devices.filter(held_since__lte=end).exclude(released_at__lt=start).order_by("held_since", "id")
    return [HeldDevice(device_key(d, allocation.gpu_model.name), d) for d in rows]


def _points(series: Series, held: HeldDevice) -> list[tuple[float, float]]:
    return [(t, v) for t, v in series.points if held.held_at(t)]


def allocation_metrics(
    allocation: Allocation,
    *,
    start: datetime,
    end: datetime,
    step_seconds: float,
    prices: Mapping[str, Decimal] | None = None,
    only: Sequence[str] | None = None,
    per_device_max: int = PER_DEVICE_MAX,
) -> AllocationMetrics:
    """The allocation's GPU metrics from ``start`` to ``end`` every ``step_seconds``, combined (and per device up
    to ``per_device_max`` devices), with findings. ``prices``: the hourly price of a whole GPU (``"whole"``) and of
    each MIG profile in its pool, for the findings to say what a slice would save; ``only``: read just these
    metrics (by name). Prometheus not answering leaves the series empty and says why."""
    held = held_devices(allocation, start=start, end=end)
    found = AllocationMetrics(held, start, end, step_seconds, per_device=len(held) <= per_device_max)
    if not held:
        return found
    wanted = [m for m in METRICS if only is None or m.name in only]
    try:
        if step_seconds >= ROLLUP_SECONDS and _rolled_up(found, allocation.pk, wanted):
            found.resolution = Resolution.ROLLUP
            if found.per_device:
                _per_device(found, [m for m in wanted if m.per_device], combine=False)
        elif found.per_device:
            _per_device(found, wanted, combine=True)
        else:
            _aggregated(found, wanted)
    except PrometheusUnavailable as error:
        found.series, found.combined, found.unavailable = {}, {}, str(error)
        return found
    found.findings = findings(_usage(found, allocation), slices=_slices(allocation), prices=prices)
    return found


def _per_device(found: AllocationMetrics, metrics: Sequence[Metric], *, combine: bool) -> None:
    """Each metric's series for every device, matched to the devices here; combined here when ``combine``."""
    sel = "{" + selector([h.key for h in found.devices]) + "}"
    queried = [m for m in metrics if m.per_device]
    answers = ranged_all(
        [(m.query.format(sel=sel), found.start, found.end) for m in queried], step_seconds=found.step_seconds
    )
    for metric, rows in zip(queried, answers, strict=True):
        # A device's series may come from more than one scrape of its exporter (a restarted exporter pod, two
        # jobs): one value per device and instant, so nothing is counted twice.
        per_device: dict[str, dict[float, float]] = {}
        for h in found.devices:
            if h.key.gpu_instance is not None and not metric.per_instance:
                continue  # the GPU's, shared with its other instances: not the slice's to read
            for series in rows:
                if h.key.matches(series.labels):
                    per_device.setdefault(h.key.name, {}).update(_points(series, h))
        devices = {k: sorted(v.items()) for k, v in per_device.items()}
        found.series[metric.name] = devices
        if combine:
            found.combined[metric.name] = _combined(devices.values(), metric.combine)
    if combine and any(m.name == "memory_peak" for m in metrics):  # per device, the peak is its memory used
        found.combined["memory_peak"] = _combined(found.series.get("memory_used", {}).values(), "max")


def _aggregated(found: AllocationMetrics, metrics: Sequence[Metric]) -> None:
    """Each metric combined by Prometheus, one query per run of instants over which the same devices were held."""
    step_ms = round(found.step_seconds * 1000)
    holds = [
        (
            round(h.device.held_since.timestamp() * 1000),
            None if h.device.released_at is None else round(h.device.released_at.timestamp() * 1000),
        )
        for h in found.devices
    ]
    start_ms = round(found.start.timestamp() * 1000)
    runs = held_runs(holds, start_ms=start_ms, end_ms=round(found.end.timestamp() * 1000), step_ms=step_ms)
    queries: list[tuple[Metric, str, datetime, datetime]] = []
    for first, last, members in runs:
        keys = [found.devices[i].key for i in members]
        every = exact_selectors(keys)
        boards = exact_selectors([k for k in keys if k.gpu_instance is None])  # what has a board's power, heat
        for metric in metrics:
            selectors = every if metric.per_instance else boards
            if selectors:
                queries.append((metric, metric.aggregated(selectors), _at(first), _at(last)))
    answers = ranged_all([(q, a, b) for _, q, a, b in queries], step_seconds=found.step_seconds)
    for metric in metrics:
        found.combined[metric.name] = []
    for (metric, *_), rows in zip(queries, answers, strict=True):
        found.combined[metric.name] += [(t, round(v, 6)) for series in rows for t, v in series.points]


def _rolled_up(found: AllocationMetrics, allocation_id: int, metrics: Sequence[Metric]) -> bool:
    """Read the allocation's rollups into ``found.combined``, if they cover the window (else leave it empty)."""
    answers = ranged_all(
        [(m.rolled_up(allocation_id, found.step_seconds), found.start, found.end) for m in metrics],
        step_seconds=found.step_seconds,
    )
    held_from = max(found.start, min(h.device.held_since for h in found.devices)).timestamp()
    first = min((rows[0].points[0][0] for rows in answers if rows and rows[0].points), default=None)
    if first is None or first > held_from + ROLLUP_LAG_SECONDS + found.step_seconds:
        return False
    for metric, rows in zip(metrics, answers, strict=True):
        found.combined[metric.name] = [(t, round(v, 6)) for series in rows for t, v in series.points]
    return True


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _combined(per_device: Iterable[list[tuple[float, float]]], how: str) -> list[tuple[float, float]]:
    at: dict[float, list[float]] = defaultdict(list)
    for points in per_device:
        for t, v in points:
            at[t].append(v)
    return [(t, round(_COMBINE[how](values), 6)) for t, values in sorted(at.items())]


def _usage(found: AllocationMetrics, allocation: Allocation) -> Usage:
    used = found.combined.get("memory_peak", [])
    totals = [v for points in found.series.get("memory_total", {}).values() for _, v in points]
    whole = all(h.key.scope is Scope.DEVICE and h.key.gpu_instance is None for h in found.devices)
    return Usage(
        step_seconds=found.step_seconds,
        sm_active=found.combined.get("sm_active", []),
        tensor_active=found.combined.get("tensor_active", []),
        memory_used_gb=[(t, v / 1024) for t, v in used],
        memory_total_gb=(max(totals) / 1024) if totals else _largest_device_gb(found, allocation),
        whole_gpus=whole,
    )


def _largest_device_gb(found: AllocationMetrics, allocation: Allocation) -> float:
    """The memory of the allocation's largest device, as sold (no per-device series to read it from)."""
    sizes = [profile_memory_gb(h.device.mig_profile) or 0 for h in found.devices if h.device.mig_profile]
    whole = any(not h.device.mig_profile for h in found.devices)
    return float(allocation.gpu_model.memory_gb) if whole or not sizes else float(max(sizes))


def _slices(allocation: Allocation) -> list[Slice]:
    spec = CATALOG.get(allocation.gpu_model.name)
    if spec is None:
        return []
    found = []
    for profile, kind in spec.mig_profiles.items():
        gb = profile_memory_gb(profile)
        if gb is not None and "+" not in profile:  # media extensions are sold for video, not for memory
            found.append(Slice(profile, gb, kind))
    return found


def devices_described(found: AllocationMetrics) -> Sequence[dict[str, Any]]:
    """The devices as a read lists them."""
    return [
        {
            "key": h.key.name,
            "scope": h.key.scope.value,
            "hostname": h.device.hostname,
            "gpu_index": h.device.gpu_index,
            "uuid": h.device.gpu_uuid,
            "mig_profile": h.device.mig_profile or None,
            "gpu_instance": h.key.gpu_instance,
            "share_milli": h.device.share_milli,
            "held_since": h.device.held_since,
            "released_at": h.device.released_at,
        }
        for h in found.devices
    ]


def held_device_series() -> list[tuple[int, str, str]]:
    """Every device held now as the exporter's series name it, ``(allocation id, UUID, GPU_I_ID or "")``: what
    Ladder's ``/metrics`` serves as ``ladder_allocation_device_info`` for the rollup rules to join on."""
    rows = AllocationDevice.objects.filter(active=True).select_related("allocation__gpu_model").order_by("id")
    found = []
    for device in rows:
        key = device_key(device, device.allocation.gpu_model.name)
        found.append((device.allocation_id, key.uuid, "" if key.gpu_instance is None else str(key.gpu_instance)))
    return found


def fleet_sm_active(*, now: datetime) -> dict[str, float]:
    """Each GPU's SM active over the last five minutes, by UUID (a MIG GPU's instances averaged), for the
    operators' map. Raises ``PrometheusUnavailable``."""
    query = f"avg by (UUID) (avg_over_time({SM_ACTIVE.name}[5m]))"
    return {s.labels["UUID"]: s.value for s in instant(query, at=now) if "UUID" in s.labels}


IDLE_BILLED_SM_ACTIVE = 0.05  # an hour a held GPU averaged under 5% SM active is an idle GPU-hour


@dataclass
class HeldHours:
    """A tenant's GPU-hours on a rung in a window: held, idle (SM active under 5% in the hour) and unreported (the
    exporter said nothing for a held device: a lost node or a stuck exporter)."""

    tenant: str
    rung: str
    held: float = 0.0
    idle: float = 0.0
    unreported: float = 0.0


def _weight(device: AllocationDevice, model: str) -> float:
    """A device in whole GPUs: a MIG instance its compute slices of seven, a soft share its share."""
    if device.mig_profile:
        kind = CATALOG[model].profile_kind(device.mig_profile)
        return GEOMETRY[kind].compute / COMPUTE_SLICES if kind is not None else 0.0
    return device.share_milli / 1000 if device.share_milli is not None else 1.0


def held_gpu_hours(*, start: datetime, end: datetime) -> list[HeldHours]:
    """Every tenant's GPU-hours per rung from ``start`` to ``end`` (whole hours from ``start``): each device the
    engine placed, for each hour it was held all of, weighed against its average SM active that hour (one range
    query for the whole fleet). The largest idle share first. Raises ``PrometheusUnavailable``."""
    start = start.replace(microsecond=0)  # the hours' instants, as Prometheus answers them
    hours = int((end - start).total_seconds() // 3600)
    if hours < 1:
        return []
    first = start + timedelta(hours=1)
    last = start + timedelta(hours=hours)
    values: dict[tuple[str, str | None], dict[float, float]] = defaultdict(dict)
    for series in ranged(f"avg_over_time({SM_ACTIVE.name}[1h])", start=first, end=last, step_seconds=3600):
        values[series_of(series.labels)].update(series.points)
    held = AllocationDevice.objects.filter(held_since__lt=last).exclude(released_at__lt=first)
    found: dict[tuple[str, str], HeldHours] = {}
    for device in held.select_related("allocation__tenant", "allocation__gpu_model"):
        allocation = device.allocation
        model = allocation.gpu_model.name
        key = device_key(device, model)
        weight = _weight(device, model)
        row = found.setdefault(
            (allocation.tenant.slug, allocation.rung), HeldHours(allocation.tenant.slug, allocation.rung)
        )
        reported = values.get(key.series, {})
        holding = HeldDevice(key, device)
        for i in range(hours):
            at = (first + timedelta(hours=i)).timestamp()
            if not holding.held_through(at - 3600, at):
                continue  # an hour counts when the device was held all of it
            row.held += weight
            value = reported.get(at)
            if value is None:
                row.unreported += weight
            elif value < IDLE_BILLED_SM_ACTIVE:
                row.idle += weight
    return sorted(found.values(), key=lambda r: (-(r.idle / r.held if r.held else 0), r.tenant, r.rung))
