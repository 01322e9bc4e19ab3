"""The two isolation promises in plain words: how the GPU is shared (performance) and what separates one tenant's
work from another's (security). Written once, here: the portal's launch and allocation pages say them, and the
API's offerings carry them, so `ladder launch` shows the same words in its plan before anything is bought.

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from provisioning.domain.rungs import Performance, Security

PERFORMANCE: Mapping[str, str] = {
    Performance.WHOLE_GPU: "Whole GPUs: every SM and all the memory of each GPU are yours alone.",
    Performance.MIG: "A MIG slice: your own SMs, memory and memory bandwidth, a hardware partition of the GPU.",
    Performance.MPS: "MPS: a share of one GPU's SMs in one shared context; only your own processes share it.",
    Performance.TIME_SLICING: "Time-sliced: the GPU switches between processes with no memory isolation; only your "
    "own processes share it.",
    Performance.FRACTIONAL: "Fractional: soft limits on memory and compute of one GPU; only your own processes "
    "share it.",
}
SECURITY: Mapping[str, str] = {
    Security.CONTAINER: "A container in your own namespace: isolated by namespaces, seccomp and network policy, on a "
    "kernel shared with the host.",
    Security.VM: "A virtual machine: a hypervisor boundary, with the GPUs passed through to it.",
    Security.CONFIDENTIAL_VM: "A confidential VM: memory encrypted by the CPU (TDX or SEV-SNP) and GPUs in CC mode, "
    "attested before it runs.",
    Security.BARE_METAL: "Whole machines: nobody else runs on them, and they are wiped before the next tenant.",
}


def performance_words(performance: str) -> str:
    """How the GPU is shared, in words (an isolation without words: its name)."""
    return PERFORMANCE.get(performance, performance)


def security_words(security: str) -> str:
    """What separates the tenant's work from other tenants', in words (an isolation without words: its name)."""
    return SECURITY.get(security, security)


def performances_words(performances: Iterable[str]) -> dict[str, str]:
    """Each of a rung's performance isolations in words, by name."""
    return {performance: performance_words(performance) for performance in performances}
