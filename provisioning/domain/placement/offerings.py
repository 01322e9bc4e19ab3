"""What can be bought where, and how much of it is free right now (the public ``/api/v1/offerings``).

Read from the engine's indexes, not by walking every GPU: free whole GPUs are the bucket sizes, MIG capacity per
profile is the free GPUs plus the partly used ones whose state still has a legal start for it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.mig import legal_starts
from provisioning.domain.placement.state import FleetState
from provisioning.domain.rungs import RUNGS, Performance


@dataclass
class Offering:
    rung: str
    gpu_model: str
    region: str
    performance_isolation: list[str]
    security_isolation: str
    unit: str
    available: int = 0  # in the rung's unit, in halls open to every tenant
    sovereign_available: int = 0  # in halls fenced for sovereign tenants
    mig_profiles: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Pool:
    free_gpus: int = 0
    free_nodes: int = 0
    cc_free_gpus: int = 0
    mig: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def offerings(state: FleetState) -> list[Offering]:
    pools: dict[tuple[str, str, bool], _Pool] = defaultdict(_Pool)  # (model, region, fenced)
    for (model, hall_code), buckets in state.by_free.items():
        hall = state.halls[hall_code]
        pool = pools[(model, hall.region, hall.fenced_for is not None)]
        free_here = sum(free * len(nodes) for free, nodes in enumerate(buckets))
        pool.free_gpus += free_here
        pool.free_nodes += sum(1 for nodes in buckets for n in nodes.values() if n.free == len(n.gpus))
        for name, kind in CATALOG[model].mig_profiles.items():
            partly = sum(
                len(g) for s, g in state.mig_by_state.get((model, hall_code), {}).items() if legal_starts(s, kind)
            )
            pool.mig[name] += free_here + partly
    for node in state.cc_nodes:
        # A host whose CPU TEE is unknown never takes a confidential VM, so it is not offered as one.
        if node.state == "ready" and node.holder is None and node.confidential:
            pools[(node.model, node.hall.region, node.hall.fenced_for is not None)].cc_free_gpus += node.free
    regions = sorted({(model, region) for model, region, _ in pools})
    rows: list[Offering] = []
    for rung, offer in RUNGS.items():
        for model, region in regions:
            if offer.attested and not CATALOG[model].cc_capable:
                continue
            row = Offering(
                rung=rung,
                gpu_model=model,
                region=region,
                performance_isolation=sorted(offer.performance),
                security_isolation=offer.security,
                unit=offer.unit,
            )
            for fenced in (False, True):
                found = pools.get((model, region, fenced))
                if found is None:
                    continue
                if offer.whole_nodes:
                    count = found.free_nodes
                elif offer.attested:
                    count = found.cc_free_gpus
                else:
                    count = found.free_gpus
                if fenced:
                    row.sovereign_available += count
                else:
                    row.available += count
                    if Performance.MIG in offer.performance:
                        row.mig_profiles = dict(sorted(found.mig.items()))
            rows.append(row)
    return rows
