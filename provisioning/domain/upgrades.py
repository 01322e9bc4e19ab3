"""Rolling upgrade plans: which NVLink domains to drain together, wave by wave, to bring drifting nodes to target.

Pure Python (no Django): ``selectors.upgrade_plan_input`` reads the fleet into these shapes, the operator API and
``manage.py fleet_upgrade_plan`` print the plan. Rules, and why:

- a wave drains whole NVLink domains, never part of one: an NVLink gang lives in one domain, so a domain with one
  node out cannot take the gangs it exists for, and draining it whole costs no more capacity than that;
- only domains with a drifting node (one whose versions differ from its GPU model's target) are drained;
- a wave takes at most ``max_gpus`` GPUs (the share of the fleet the operator allows out at once) and at most
  ``max_domains`` domains; a domain larger than the GPU limit can never be drained under it, which is an error
  (raise the limit), not a silent skip;
- the emptiest domains (fewest GPUs in use) go first: they cost the fewest moves and checkpoints, and each wave
  done frees capacity for the work the later, fuller waves must move;
- each wave lists the running allocations on its nodes: jobs checkpoint and restart elsewhere, the rest move.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from provisioning.domain.rungs import rung_facts


@dataclass(frozen=True)
class PlanNode:
    id: int
    hostname: str
    gpus: int
    gpus_in_use: int
    drifting: bool


@dataclass(frozen=True)
class PlanAllocation:
    id: int
    tenant: str
    rung: str
    hostnames: tuple[str, ...]  # its nodes inside the domain

    @property
    def action(self) -> str:
        """``checkpoint`` for a job (it restarts from its checkpoint elsewhere), ``move`` for anything else."""
        return "checkpoint" if rung_facts(self.rung).restarts_from_checkpoint else "move"


@dataclass(frozen=True)
class PlanDomain:
    hall: str
    name: str
    nodes: tuple[PlanNode, ...]
    allocations: tuple[PlanAllocation, ...] = ()

    @property
    def gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    @property
    def gpus_in_use(self) -> int:
        return sum(n.gpus_in_use for n in self.nodes)

    @property
    def drifting(self) -> bool:
        return any(n.drifting for n in self.nodes)


@dataclass
class Wave:
    number: int
    domains: list[PlanDomain] = field(default_factory=list)

    @property
    def gpus(self) -> int:
        return sum(d.gpus for d in self.domains)

    @property
    def gpus_in_use(self) -> int:
        return sum(d.gpus_in_use for d in self.domains)

    @property
    def allocations(self) -> list[PlanAllocation]:
        """Each allocation on the wave's nodes once, with all of its nodes the wave drains (a gang without topology
        may span two of its domains)."""
        seen: dict[int, PlanAllocation] = {}
        for domain in self.domains:
            for allocation in domain.allocations:
                earlier = seen.get(allocation.id)
                if earlier is not None:
                    allocation = replace(earlier, hostnames=tuple(sorted({*earlier.hostnames, *allocation.hostnames})))
                seen[allocation.id] = allocation
        return sorted(seen.values(), key=lambda a: a.id)

    def as_dict(self) -> dict[str, Any]:
        return {
            "wave": self.number,
            "gpus": self.gpus,
            "gpus_in_use": self.gpus_in_use,
            "domains": [
                {
                    "hall": d.hall,
                    "nvlink_domain": d.name,
                    "gpus": d.gpus,
                    "gpus_in_use": d.gpus_in_use,
                    "nodes": [
                        {"hostname": n.hostname, "gpus": n.gpus, "gpus_in_use": n.gpus_in_use, "drifting": n.drifting}
                        for n in d.nodes
                    ],
                }
                for d in self.domains
            ],
            "allocations": [
                {"id": a.id, "tenant": a.tenant, "rung": a.rung, "action": a.action, "hostnames": list(a.hostnames)}
                for a in self.allocations
            ],
        }


class PlanLimitError(ValueError):
    """The limits cannot hold a drifting domain (or are not limits at all)."""


def wave_gpu_limit(*, fleet_gpus: int, max_share: float) -> int:
    """The GPUs one wave may take: ``max_share`` of the fleet, rounded down (a share, not a suggestion)."""
    if not 0 < max_share <= 1:
        raise PlanLimitError(f"max_share must be above 0 and at most 1, not {max_share:g}.")
    return int(fleet_gpus * max_share)


def upgrade_plan(domains: list[PlanDomain], *, max_gpus: int, max_domains: int | None = None) -> list[Wave]:
    """Waves of whole drifting domains, emptiest first, each within ``max_gpus`` GPUs and ``max_domains`` domains.

    Domains go in order (fewest GPUs in use, then fewest GPUs, then hall and name, so the plan is stable); a wave
    closes when the next domain would break a limit, so an earlier wave never holds a fuller domain than a later
    one. Raises ``PlanLimitError`` when a limit is not positive or a drifting domain alone exceeds ``max_gpus``.
    """
    if max_gpus < 1:
        raise PlanLimitError(f"A wave may take {max_gpus} GPUs: no domain could ever be drained.")
    if max_domains is not None and max_domains < 1:
        raise PlanLimitError("max_domains must be at least 1.")
    drifting = sorted((d for d in domains if d.drifting), key=lambda d: (d.gpus_in_use, d.gpus, d.hall, d.name))
    too_big = [d for d in drifting if d.gpus > max_gpus]
    if too_big:
        names = ", ".join(f"{d.hall}/{d.name} ({d.gpus} GPUs)" for d in too_big)
        raise PlanLimitError(
            f"A wave may take at most {max_gpus} GPUs, and these domains are larger: {names}. "
            "A domain is drained whole; raise the limit."
        )
    waves: list[Wave] = []
    for domain in drifting:
        last = waves[-1] if waves else None
        if last is None or last.gpus + domain.gpus > max_gpus or len(last.domains) >= (max_domains or len(drifting)):
            last = Wave(number=len(waves) + 1)
            waves.append(last)
        last.domains.append(domain)
    return waves
