"""The allocation page's "What the GPUs do": the last hour, day or week of the allocation's GPU metrics
(``provisioning.telemetry``, the same read as the API's) as two charts, activity and memory with power, and the
findings in words. A day or a week is read at a step of five minutes or more: from the rollups where Prometheus
records them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone

from billing.selectors import pool_hourly_prices
from core.models import AuditEvent
from provisioning.domain.gpu_metrics import Scope
from provisioning.models import Allocation
from provisioning.telemetry import allocation_metrics

POINTS = 120  # a chart's points, whatever its window


@dataclass(frozen=True)
class Window:
    span: timedelta
    words: str  # "over the last ..."
    label_format: str  # the time axis

    @property
    def step_seconds(self) -> int:
        return int(self.span.total_seconds()) // POINTS


WINDOWS = {
    "1h": Window(timedelta(hours=1), "hour", "%H:%M:%S"),
    "24h": Window(timedelta(hours=24), "24 hours", "%d %b %H:%M"),
    "7d": Window(timedelta(days=7), "7 days", "%d %b %H:%M"),
}
DEFAULT_WINDOW = "1h"
CHARTED = ("sm_active", "tensor_active", "dram_active", "memory_used", "memory_peak", "memory_total", "power")


def _percent(points: list[tuple[float, float]]) -> list[float]:
    return [round(v * 100, 1) for _, v in points]


def allocation_gpu_metrics(allocation: Allocation, window: str = DEFAULT_WINDOW) -> dict[str, Any] | None:
    """The charts' data and the findings over ``window`` (a key of ``WINDOWS``; another reads the default); None
    for an allocation that never held a device."""
    if not allocation.devices.exists():
        return None
    name = window if window in WINDOWS else DEFAULT_WINDOW
    shown = WINDOWS[name]
    now = timezone.now()
    prices = pool_hourly_prices(allocation=allocation, now=now)
    found = allocation_metrics(
        allocation, start=now - shown.span, end=now, step_seconds=shown.step_seconds, prices=prices, only=CHARTED
    )
    combined = found.combined
    sm = combined.get("sm_active", [])
    totals = [v for _, v in combined.get("memory_total", [])]
    chart = {
        "labels": [datetime.fromtimestamp(t, tz=UTC).strftime(shown.label_format) for t, _ in sm],
        "sm": _percent(sm),
        "tensor": _percent(combined.get("tensor_active", [])),
        "dram": _percent(combined.get("dram_active", [])),
        "memory": [round(v / 1024, 1) for _, v in combined.get("memory_used", [])],
        "memory_total": round(max(totals) / 1024, 1) if totals else None,
        "power": [round(v) for _, v in combined.get("power", [])],
    }
    return {
        "findings": [finding.replace("`", "") for finding in found.findings],
        "unavailable": found.unavailable,
        "chart": chart,
        "window": name,
        "windows": [(key, w.words) for key, w in WINDOWS.items()],
        "over": shown.words,
        "rollups": found.resolution != "raw",
        "gpu_scope": any(h.key.scope is Scope.GPU for h in found.devices),
        "slice": any(h.key.gpu_instance is not None for h in found.devices),
        "devices": len(found.devices),
    }


def idle_stop_words(allocation: Allocation) -> str | None:
    """The allocation page's "Idle stop" in words: what it asked for, a notice given, or the stop with its evidence
    (``lifecycle.services.idle_stop``); None when it asked for none."""
    workload = allocation.workload_spec.workload
    minutes = workload.idle_stop_after if workload is not None else None
    if not minutes:
        return None
    stopped = (
        AuditEvent.objects.filter(
            action="allocation.idle_stopped", target_type="allocation", target_id=str(allocation.pk)
        )
        .order_by("-seq")
        .first()
    )
    if stopped is not None:
        data = stopped.data
        return (
            f"Stopped {stopped.at:%Y-%m-%d %H:%M} UTC after {round(data['idle_seconds'] / 60)} minutes with its "
            f"GPUs idle (SM active at most {float(data['sm_active_max']):.2%}), past its {minutes} minutes."
        )
    if allocation.idle_notice_at is not None:
        return (
            f"After {minutes} minutes with its GPUs idle. They have been idle since before "
            f"{allocation.idle_notice_at:%H:%M} UTC: it stops within minutes unless they work."
        )
    return f"After {minutes} minutes with its GPUs idle (SM active under 1%), with notice five minutes before."
