"""What each rung and isolation promise means, in plain words: shown before anything is bought. One place, so
the launch page, the allocation page and the docs say the same thing."""

from __future__ import annotations

from typing import Any

PERFORMANCE = {
    "whole_gpu": "Whole GPUs: every SM and all the memory of each GPU are yours alone.",
    "mig": "A MIG slice: your own SMs, memory and memory bandwidth, a hardware partition of the GPU.",
    "mps": "MPS: a share of one GPU's SMs in one shared context; only your own processes share it.",
    "time_slicing": "Time-sliced: the GPU switches between processes with no memory isolation; only your own "
    "processes share it.",
    "fractional": "Fractional: soft limits on memory and compute of one GPU; only your own processes share it.",
}
SECURITY = {
    "container": "A container in your own namespace: isolated by namespaces, seccomp and network policy, on a kernel "
    "shared with the host.",
    "vm": "A virtual machine: a hypervisor boundary, with the GPUs passed through to it.",
    "confidential_vm": "A confidential VM: memory encrypted by the CPU (TDX or SEV-SNP) and GPUs in CC mode, "
    "attested before it runs.",
    "bare_metal": "Whole machines: nobody else runs on them, and they are wiped before the next tenant.",
}
RUNGS: dict[str, dict[str, Any]] = {
    "bare_metal": {
        "title": "Bare metal",
        "what": "Whole nodes with all their GPUs, your OS image, reached over SSH.",
        "performance": ["whole_gpu"],
        "security": "bare_metal",
        "unit": "node-hours",
    },
    "vm": {
        "title": "Virtual machine",
        "what": "1 to 8 whole GPUs passed through to a VM you boot with cloud-init.",
        "performance": ["whole_gpu"],
        "security": "vm",
        "unit": "GPU-hours",
    },
    "confidential_vm": {
        "title": "Confidential VM",
        "what": "Whole GPUs in confidential-computing mode, attested before use.",
        "performance": ["whole_gpu"],
        "security": "confidential_vm",
        "unit": "GPU-hours",
    },
    "container": {
        "title": "Container",
        "what": "A whole GPU or a MIG slice running your image.",
        "performance": ["whole_gpu", "mig"],
        "security": "container",
        "unit": "GPU-hours (a slice weighs its share)",
    },
    "job": {
        "title": "Job",
        "what": "A gang of members that start together, restarted from the last checkpoint after a fault.",
        "performance": ["whole_gpu"],
        "security": "container",
        "unit": "GPU-hours of goodput",
    },
    "serverless": {
        "title": "Serverless",
        "what": "An endpoint called with your API key; replicas on whole GPUs, MIG slices or soft shares. Idle, it "
        "scales to zero: it keeps its address and settings, holds no GPU and costs nothing; the next request wakes "
        "it after a cold start.",
        "performance": ["whole_gpu", "mig", "mps", "time_slicing", "fractional"],
        "security": "container",
        "unit": "GPU-seconds of ready replicas only (nothing while idle at zero)",
    },
}
# What an allocation's state means to its tenant, where a state needs saying (the allocation page).
STATES = {
    "restarting": "A node under your job failed (or the fleet is being tidied): it is placed again on healthy GPUs "
    "and resumes from its last checkpoint. The time since that checkpoint is not billed.",
    "idle": "Scaled to zero: no GPU held and nothing billed. Your endpoint keeps its address; the next request "
    "wakes it (a cold start) and waits for it.",
}


def duration(seconds: float) -> str:
    """A span of time as people say it: "45 s", "12 min", "3 h 20 min"."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"
