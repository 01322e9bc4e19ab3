"""What the portal's allocation page and the operators' console show of serverless endpoints' cold starts: the same
figures the API publishes (``provisioning.selectors.cold_start_figures``, ``cold_start_table``), as rows of
P50/P90/P99 written the way people read a wait ("850 ms", "13.0 s")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from provisioning.domain.cold_start import Percentiles
from provisioning.domain.rungs import rung_facts
from provisioning.drivers.base import provisioner
from provisioning.models import Allocation
from provisioning.selectors import cold_start_figures, cold_start_table

CONSOLE_DAYS = 30  # the operators' table counts the wakes of this many days

ROWS = (
    ("total", "Cold start (wake to warm)"),
    ("device_wait", "Device wait"),
    ("image_pull", "Image pull"),
    ("model_load", "Model load"),
    ("queue_delay", "Queue delay (per request)"),
    ("execution", "Execution (per request)"),
)


def waited(ms: int | None) -> str:
    """A wait in milliseconds as people read it: "—" for none, "850 ms" under a second, else "13.0 s"."""
    if ms is None:
        return "—"
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _row(key: str, label: str, found: Percentiles) -> dict[str, Any]:
    return {
        "key": key,
        "label": label,
        "count": found.count,
        "p50": waited(found.p50),
        "p90": waited(found.p90),
        "p99": waited(found.p99),
    }


def endpoint_cold_starts(allocation: Allocation) -> dict[str, Any] | None:
    """The allocation page's "Cold starts": a row per figure and the latest wakes; None for what is no endpoint."""
    if not rung_facts(allocation.rung).endpoint:
        return None
    figures = cold_start_figures(allocation)
    requests = provisioner().request_times([allocation.pk], now=timezone.now())[allocation.pk]
    found = {
        "total": figures["total"],
        **figures["phases"],
        "queue_delay": requests.queue_delay,
        "execution": requests.execution,
    }
    recent = [
        {
            "woke_at": row.woke_at,
            "total": waited(row.total_ms),
            "phases": [waited(row.device_wait_ms), waited(row.image_pull_ms), waited(row.model_load_ms)],
            "image_cached": row.image_cached,
            "model_source": row.model_source,
        }
        for row in figures["recent"]
    ]
    return {
        "count": figures["count"],
        "rows": [_row(k, label, found[k]) for k, label in ROWS],
        "recent": recent,
        "requests_window": requests.window,
        "requests_unavailable": requests.unavailable,
    }


def console_cold_starts() -> list[dict[str, Any]]:
    """The operators' table: each endpoint with its wakes of the last ``CONSOLE_DAYS`` days, P50/P90/P99, and the P90
    of its requests' queue delay and execution time (its driver's ``request_times``, read for all rows at once)."""
    now = timezone.now()
    table = cold_start_table(since=now - timedelta(days=CONSOLE_DAYS))
    requests = provisioner().request_times([row["allocation"].pk for row in table], now=now)
    rows = []
    for row in table:
        times = requests[row["allocation"].pk]
        rows.append(
            {
                "allocation": row["allocation"],
                **_row("total", "", row["figures"]),
                "queue_p90": waited(times.queue_delay.p90),
                "execution_p90": waited(times.execution.p90),
                "requests": times.queue_delay.count,
                "requests_unavailable": times.unavailable,
                "window": times.window,
            }
        )
    return rows
