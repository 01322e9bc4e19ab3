"""What a running workload gives back, as every driver reports it: the lines it wrote and the events the backend
reported about it; and the text kept of its logs when it ends."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class LogLine:
    at: datetime
    text: str
    source: str = "worker"  # the container, "console" for a VM's serial console, or a member "worker-<n>"


@dataclass(frozen=True)
class WorkloadEvent:
    """Something the backend reports about the workload: scheduling, pulls, starts, restarts, faults."""

    at: datetime
    reason: str  # Scheduled, Pulling, Pulled, Started, BackOff, Killing, NodeFailed...
    message: str
    type: str = "Normal"  # Normal | Warning, as Kubernetes reports them
    source: str = ""


def log_text(lines: Iterable[LogLine]) -> str:
    """Log lines as the text kept when a workload ends: one line each, "<time> [<source>] <text>"."""
    return "".join(f"{line.at.isoformat()} [{line.source}] {line.text}\n" for line in lines)
