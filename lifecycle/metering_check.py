"""The metering cross-check: the GPU time the ledger bills against what DCGM reported for the same devices, per
allocation and hourly window, for operators to look at before invoices close (docs/telemetry.md).

An allocation's usage in a window (``billing.models.UsageInterval``, seconds of its devices) is checked against
DCGM's samples of the devices it held then (``DCGM_FI_PROF_SM_ACTIVE``, counted per device and hour through the
operator's Prometheus: one range query for the whole fleet). A window billed while none of its devices reported a
single sample is listed: a node that was lost, an exporter that was stuck, or a device billed that never ran. Reads
only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal

from django.db.models import F, Sum
from django.db.models.functions import Coalesce

from billing.models import UsageInterval
from core.prometheus import ranged
from provisioning.domain.gpu_metrics import SM_ACTIVE, series_of
from provisioning.models import Allocation, AllocationDevice
from provisioning.telemetry import HeldDevice, device_key

HOUR_MS = 3_600_000


@dataclass
class Unreported:
    """An allocation billed in windows where none of its devices reported to DCGM."""

    allocation: Allocation
    billed_micro: int = 0  # device-seconds billed in those windows, in millionths (ms times thousandths of a unit)
    windows: list[datetime] = field(default_factory=list)
    hosts: set[str] = field(default_factory=set)

    @property
    def billed_seconds(self) -> Decimal:
        return Decimal(self.billed_micro) / 1_000_000


def metering_check(*, start: datetime, end: datetime, now: datetime) -> list[Unreported]:
    """Allocations billed between ``start`` and ``end`` (hourly windows) for devices that reported nothing in those
    windows, the most billed first. Raises ``core.prometheus.PrometheusUnavailable``."""
    first = int(start.timestamp() * 1000) // HOUR_MS * HOUR_MS
    last = int(end.timestamp() * 1000)
    billed: dict[tuple[int, int], int] = defaultdict(int)  # (allocation, window) -> device-seconds, in millionths
    now_ms = int(now.timestamp() * 1000)
    rows = (
        UsageInterval.objects.filter(allocation__isnull=False, window_ms__gte=first, window_ms__lt=last)
        .annotate(until=Coalesce("end_ms", now_ms))
        .values("allocation_id", "window_ms")
        .annotate(unit_ms=Sum((F("until") - F("start_ms")) * F("units_milli")))
    )
    for row in rows:
        billed[(row["allocation_id"], row["window_ms"])] += int(row["unit_ms"])
    if not billed:
        return []
    reported: dict[tuple[str, str | None], dict[float, float]] = defaultdict(dict)
    series = ranged(
        f"count_over_time({SM_ACTIVE.name}[1h])",
        start=datetime.fromtimestamp((first + HOUR_MS) / 1000, tz=UTC),
        end=datetime.fromtimestamp((max(w for _, w in billed) + HOUR_MS) / 1000, tz=UTC),
        step_seconds=3600,
    )
    for s in series:
        reported[series_of(s.labels)].update(s.points)
    billed_allocations = Allocation.objects.filter(pk__in={a for a, _ in billed}).select_related("tenant", "gpu_model")
    allocations = {a.pk: a for a in billed_allocations}
    devices: dict[int, list[HeldDevice]] = defaultdict(list)
    for device in AllocationDevice.objects.filter(allocation__in=allocations):
        key = device_key(device, allocations[device.allocation_id].gpu_model.name)
        devices[device.allocation_id].append(HeldDevice(key, device))
    found: dict[int, Unreported] = {}
    for (allocation_id, window), micro in sorted(billed.items()):
        window_end = (window + HOUR_MS) / 1000
        held = [h for h in devices[allocation_id] if h.held_during(window / 1000, window_end)]
        counts = [reported.get(h.key.series, {}).get(window_end, 0) for h in held]
        if held and not any(counts):
            listed = found.setdefault(allocation_id, Unreported(allocations[allocation_id]))
            listed.billed_micro += micro
            listed.windows.append(datetime.fromtimestamp(window / 1000, tz=UTC))
            listed.hosts |= {h.device.hostname for h in held}
    return sorted(found.values(), key=lambda r: (-r.billed_micro, r.allocation.pk))
