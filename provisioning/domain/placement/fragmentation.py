"""How usable the free capacity is: free GPUs, stranded MIG slices, and the largest gang each domain still fits.

A fleet can have many free GPU-equivalents and still turn requests away: slices no MIG profile can use any more,
single free GPUs scattered over nodes when the queue holds 8-GPU jobs, NVLink domains split between RDMA fabrics or
version sets (a multi-node gang stays in one of each). These figures make that visible to operators
(``GET /api/v1/ops/fragmentation``) and to the benchmark.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from provisioning.domain.placement.mig import COMPUTE_SLICES, stranded_compute
from provisioning.domain.placement.state import FULL_SHARE, FleetState, GangGroup, GpuSlot


@dataclass
class PoolFigures:
    model: str
    hall: str
    gpus: int = 0
    free_gpus: int = 0  # wholly free GPUs on nodes in the general pool
    unallocated_gpus: float = 0.0  # whole-GPU equivalents not allocated, stranded slices included
    stranded_mig_slices: int = 0  # compute slices on partly used MIG GPUs that no profile can use
    largest_gang_gpus: dict[str, int] = field(default_factory=dict)  # NVLink domain -> GPUs one gang can get


def allocated_fraction(gpu: GpuSlot) -> float:
    if gpu.whole_tenant is not None:
        return 1.0
    if not gpu.mig.empty:
        return gpu.mig.compute_used / COMPUTE_SLICES
    return gpu.soft_used / FULL_SHARE


def fragmentation(state: FleetState) -> list[PoolFigures]:
    """Figures per (GPU model, hall), in a stable order. O(GPUs): an operator's report, not a decision."""
    pools: dict[tuple[str, str], PoolFigures] = {}
    domain_nodes = defaultdict(list)
    for node in state.nodes.values():
        key = (node.model, node.hall.code)
        pool = pools.setdefault(key, PoolFigures(*key))
        pool.gpus += len(node.gpus)
        for gpu in node.gpus:
            if node.general:
                pool.free_gpus += gpu.free
                pool.stranded_mig_slices += stranded_compute(gpu.mig)
            pool.unallocated_gpus += 0.0 if node.holder is not None else 1.0 - allocated_fraction(gpu)
        domain_nodes[(key, node.nvlink_domain)].append(node)
    for (key, domain), nodes in domain_nodes.items():
        general = [n for n in nodes if n.general]
        groups: Counter[GangGroup] = Counter()
        for n in general:
            groups[n.gang_group] += n.free
        multi_node = max(groups.values(), default=0)  # a multi-node gang stays in one fabric and version set
        single_node = max((n.free for n in general), default=0)
        pools[key].largest_gang_gpus[domain] = max(multi_node, single_node)
    for pool in pools.values():
        pool.unallocated_gpus = round(pool.unallocated_gpus, 3)
    return [pools[k] for k in sorted(pools)]
