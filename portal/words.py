"""What each rung and isolation promise means, in plain words: shown before anything is bought. One place, so
the launch page, the allocation page and the docs say the same thing."""

from __future__ import annotations

from typing import Any

from provisioning.domain.rungs import RUNGS as TABLE
from provisioning.domain.rungs import Performance, Security

PERFORMANCE: dict[str, str] = {
    Performance.WHOLE_GPU: "Whole GPUs: every SM and all the memory of each GPU are yours alone.",
    Performance.MIG: "A MIG slice: your own SMs, memory and memory bandwidth, a hardware partition of the GPU.",
    Performance.MPS: "MPS: a share of one GPU's SMs in one shared context; only your own processes share it.",
    Performance.TIME_SLICING: "Time-sliced: the GPU switches between processes with no memory isolation; only your "
    "own processes share it.",
    Performance.FRACTIONAL: "Fractional: soft limits on memory and compute of one GPU; only your own processes "
    "share it.",
}
SECURITY: dict[str, str] = {
    Security.CONTAINER: "A container in your own namespace: isolated by namespaces, seccomp and network policy, on a "
    "kernel shared with the host.",
    Security.VM: "A virtual machine: a hypervisor boundary, with the GPUs passed through to it.",
    Security.CONFIDENTIAL_VM: "A confidential VM: memory encrypted by the CPU (TDX or SEV-SNP) and GPUs in CC mode, "
    "attested before it runs.",
    Security.BARE_METAL: "Whole machines: nobody else runs on them, and they are wiped before the next tenant.",
}
# Each rung in the portal's words, as the table of rungs states them (``RungFacts.words``), for the templates.
RUNGS: dict[str, dict[str, Any]] = {
    rung.value: {
        "title": facts.words.title,
        "what": facts.words.what,
        "performance": [p.value for p in Performance if p in facts.performance],
        "security": facts.security.value,
        "unit": facts.words.unit,
        "item": facts.words.item,
    }
    for rung, facts in TABLE.items()
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
