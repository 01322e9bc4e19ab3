"""What the simulated fleet's workloads print and report, computed from their timeline (no Django, no storage).

A simulated workload writes one line every ``log_every`` seconds from the moment it runs until it stops: first
what starts it (the command, or a VM's boot), then lines a user of that rung would recognise (training steps and
checkpoints for a job, requests for an endpoint). Line ``i`` is a function of the allocation and ``i`` alone, so
``since`` and ``tail`` are arithmetic and any window is computed without generating the rest.
"""

from __future__ import annotations

import hashlib
import math
import shlex
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property

from provisioning.domain.os_images import OsImage
from provisioning.domain.workload_output import LogLine, WorkloadEvent
from provisioning.domain.workloads import STOCK_IMAGE, Workload, WorkloadSpec

MAX_LINES = 10_000  # the most one read returns


@dataclass(frozen=True)
class Timeline:
    allocation_id: int
    rung: str
    hosts: tuple[str, ...]
    gpu_model: str
    created_at: datetime
    running_since: datetime | None  # None: not running yet
    ended_at: datetime | None  # when it stopped or failed; None: still going
    workload: Workload | None = None
    os_image: OsImage | None = None
    log_every: float = 10.0
    checkpoint_every: float = 60.0
    provision_seconds: float = 2.0

    def end(self, now: datetime) -> datetime:
        return min(self.ended_at, now) if self.ended_at else now

    @cached_property
    def spec(self) -> WorkloadSpec:
        return WorkloadSpec.of(self.rung, self.workload)


def _noise(allocation_id: int, i: int) -> float:
    """A number in [0, 1) that depends on the allocation and the line only."""
    digest = hashlib.sha256(f"{allocation_id}:{i}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


def checkpoint_bytes(allocation_id: int, step: int) -> int:
    """The size of a simulated checkpoint: a few GiB, stable for a given step."""
    return int((2 + 2 * _noise(allocation_id, -step - 1)) * 2**30)


def _start_line(t: Timeline) -> tuple[str, str]:
    w = t.workload or Workload()
    if t.spec.boots_os:
        title = t.os_image.title if t.os_image else "Ubuntu 24.04 LTS"
        return f"[    0.000000] Linux version 6.8.0 ({title}) booting on {', '.join(t.hosts)}", "console"
    argv = [*w.command, *w.args] or ["sleep", "infinity"]
    return f"$ {shlex.join(argv)}", "worker"


def _steps_per_checkpoint(t: Timeline) -> int:
    return max(1, round(t.checkpoint_every / t.log_every))


def _line(t: Timeline, i: int) -> tuple[str, str]:
    if i == 0:
        return _start_line(t)
    noise = _noise(t.allocation_id, i)
    if t.spec.boots_os:
        if i == 1:
            return "cloud-init: modules:final finished; SSH host keys generated", "console"
        return f"[{i * t.log_every:12.6f}] nvidia 0000:{i % 8:02x}:00.0: GPU {i % 8} {t.gpu_model} healthy", "console"
    if t.spec.restarts_from_checkpoint:
        every = _steps_per_checkpoint(t)
        if i % every == 0:
            path = t.workload.checkpoint.path if t.workload and t.workload.checkpoint else "/checkpoints"
            return f"saved checkpoint step-{i // every} to {path}", "worker-0"
        loss = 2.5 * math.exp(-i / 400) + 0.05 * noise
        return f"step {i} loss {loss:.4f} tokens/s {int(9000 + 2000 * noise)}", f"worker-{i % max(1, len(t.hosts))}"
    if t.spec.facts.endpoint:
        return (
            f'10.0.{i % 256}.{int(noise * 250) + 1} "POST /v1/predict HTTP/1.1" 200 {int(20 + 200 * noise)}ms',
            "worker",
        )
    return f"GPU {t.gpu_model} utilization {int(100 * noise)}% memory {int(80 * noise)} GiB", "worker"


def log_lines(t: Timeline, *, now: datetime, since: datetime | None = None, tail: int | None = None) -> list[LogLine]:
    """The lines written by ``now`` (after ``since``; the last ``tail`` of them), at most ``MAX_LINES``."""
    if t.running_since is None:
        return []
    end = t.end(now)
    if end < t.running_since:
        return []
    last = int((end - t.running_since).total_seconds() // t.log_every)
    first = 0
    if since is not None and since >= t.running_since:
        first = int((since - t.running_since).total_seconds() // t.log_every) + 1
    limit = min(tail if tail is not None else MAX_LINES, MAX_LINES)
    first = max(first, last - limit + 1)
    lines = []
    for i in range(first, last + 1):
        text, source = _line(t, i)
        lines.append(LogLine(at=t.running_since + timedelta(seconds=i * t.log_every), text=text, source=source))
    return lines


def last_checkpoint_step(t: Timeline, at: datetime) -> int | None:
    """The step of the last checkpoint a job wrote by ``at`` (None: none yet)."""
    if t.running_since is None or not t.spec.restarts_from_checkpoint:
        return None
    lines = int((min(at, t.end(at)) - t.running_since).total_seconds() // t.log_every)
    step = lines // _steps_per_checkpoint(t)
    return step or None


def events(t: Timeline, *, now: datetime) -> list[WorkloadEvent]:
    """What the simulated backend reports: scheduling, the pull or boot, the start, checkpoints, the end."""
    w = t.workload or Workload()
    out = [WorkloadEvent(t.created_at, "Scheduled", f"Placed on {', '.join(t.hosts) or 'the fleet'}")]
    begin = t.created_at
    if t.spec.boots_os:
        title = t.os_image.title if t.os_image else "the default image"
        out.append(WorkloadEvent(begin, "Provisioning", f"Writing {title} and the user data"))
    else:
        image = w.image or STOCK_IMAGE
        out.append(WorkloadEvent(begin, "Pulling", f"Pulling image {image}"))
    if t.running_since is not None and t.running_since <= now:
        pulled = t.running_since - timedelta(seconds=min(1.0, t.provision_seconds))
        if not t.spec.boots_os:
            out.append(
                WorkloadEvent(max(begin, pulled), "Pulled", f"Successfully pulled image {w.image or 'the stock image'}")
            )
        out.append(WorkloadEvent(t.running_since, "Started", "Started the workload"))
        if t.spec.restarts_from_checkpoint:
            step_every = timedelta(seconds=t.log_every * _steps_per_checkpoint(t))
            last = last_checkpoint_step(t, now) or 0
            for step in range(max(1, last - 99), last + 1):  # the last hundred
                out.append(
                    WorkloadEvent(t.running_since + step * step_every, "CheckpointSaved", f"Checkpoint step-{step}")
                )
    if t.ended_at is not None and t.ended_at <= now:
        out.append(WorkloadEvent(t.ended_at, "Killing", "Stopping the workload"))
    return sorted(out, key=lambda e: e.at)


# --- what the GPUs do -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuActivity:
    """What one simulated device does at an instant, as DCGM would measure it."""

    sm_active: float  # ratios of cycles, 0..1
    sm_occupancy: float
    tensor_active: float
    dram_active: float
    memory_used_gb: float

    @staticmethod
    def idle(memory_used_gb: float = 0.0) -> GpuActivity:
        return GpuActivity(0.0, 0.0, 0.0, 0.0, memory_used_gb)


CUDA_CONTEXT_GB = 0.5  # what a process holding the GPU uses before it does anything


def _idle_command(command: tuple[str, ...]) -> bool:
    """A container kept up for someone to work in: no command, or one that only waits."""
    return not command or command[0] in {"sleep", "bash", "sh", "tail"} or command[:2] == ("jupyter", "lab")


def gpu_activity(t: Timeline, *, now: datetime, memory_gb: float, called_at: datetime | None = None) -> GpuActivity:
    """What the allocation's devices do at ``now`` (each the same; ``memory_gb``: one device's memory):

    - a **job** trains: SMs busy (80-92%), tensor pipes half busy, three quarters of the memory used;
    - a **serverless endpoint** holds its model in memory (its ``model.size_gb``, else 60% of the memory) and
      computes only while called (within the last minute of ``called_at``);
    - a **container, VM or host** runs its command: SMs busy with no tensor work (plain CUDA code), or, with no
      command or one that only waits (``sleep``, a shell, Jupyter), idle with a CUDA context open.

    Nothing runs before the workload runs or after it ended. A fraction of a minute's noise, stable per
    allocation and minute, keeps the charts from being flat lines."""
    if t.running_since is None or now < t.running_since or (t.ended_at is not None and now >= t.ended_at):
        return GpuActivity.idle()
    minute = int(now.timestamp() // 60)
    wobble = _noise(t.allocation_id, minute)
    workload = t.workload or Workload()
    if t.spec.facts.endpoint:
        model = workload.model
        held = min(memory_gb, float(model.size_gb) if model is not None else 0.6 * memory_gb)
        if called_at is None or (now - called_at).total_seconds() > 60:
            return GpuActivity.idle(held)
        return GpuActivity(0.30 + 0.1 * wobble, 0.2, 0.22 + 0.05 * wobble, 0.3, held)
    if t.spec.facts.restarts_from_checkpoint:  # a job: it trains
        return GpuActivity(0.80 + 0.12 * wobble, 0.45, 0.50 + 0.1 * wobble, 0.35, 0.75 * memory_gb)
    if _idle_command(workload.command):
        return GpuActivity(0.002 * wobble, 0.0, 0.0, 0.0, min(memory_gb, CUDA_CONTEXT_GB))
    return GpuActivity(0.65 + 0.1 * wobble, 0.35, 0.0, 0.25, 0.4 * memory_gb)
