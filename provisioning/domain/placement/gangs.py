"""Gangs: all of a gang's members or none, on one group of nodes that share a model, an RDMA fabric and a version
set, and with ``topology="nvlink"`` one NVLink domain; when no group holds the gang but mixing groups would, the
refusal says what mixing it needs (``fabric_split`` or ``version_skew``). Part of the placement engine
(``engine.py``), choosing each member's node as a whole-GPU request would (``whole_gpus.py``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from provisioning.domain.placement.decision import Device, Placement, Request
from provisioning.domain.placement.isolation import Reason, Refusal, TenantPolicy
from provisioning.domain.placement.state import MAX_GPUS_PER_NODE, Buckets, GangGroup
from provisioning.domain.placement.whole_gpus import WholeGpuPlacement


class GangPlacement(WholeGpuPlacement):
    """The engine's gangs (``_gang``), each member on a node its whole-GPU choice finds."""

    def _gang(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> Placement | None:
        """A gang's members all go to one group of nodes that share a model, an RDMA fabric and a version set
        (``NodeSlot.gang_group``), and with ``topology="nvlink"`` one NVLink domain; among the groups that hold it,
        the tightest (the fewest members it could hold), so large groups stay whole for large gangs. Without a
        topology the members then go one by one, each where a single request of that size would, inside the group.
        When no group holds the gang but the fleet would by mixing groups, the refusal says what mixing it needs."""
        state = self.state
        per, members = request.gpus, request.gang_size
        in_domain = request.topology == "nvlink"
        index: Mapping[tuple[str, str], Mapping[Any, Buckets]] = state.domain_groups if in_domain else state.gang_groups
        steps = [(free, free // per) for free in range(per, MAX_GPUS_PER_NODE + 1)]
        capacity: dict[tuple[int, str, GangGroup], int] = defaultdict(int)
        best: tuple[int, int, Buckets, int] | None = None  # (members it holds, model rank, buckets, single-node free)
        for rank, model in enumerate(request.models):
            for hall in halls:
                for group, buckets in index.get((model, hall), {}).items():
                    held = sum(len(buckets[free]) * each for free, each in steps if buckets[free])
                    if not in_domain:
                        capacity[(rank, model, group)] += held
                    elif held >= members:
                        single = next((f for f in range(per * members, MAX_GPUS_PER_NODE + 1) if buckets[f]), 0)
                        if single:  # one node holds the whole gang: the tightest such node stands for the group
                            held = single // per
                        if best is None or (held, rank) < best[:2]:
                            best = (held, rank, buckets, single)
        if in_domain:
            if best is None:
                blocked += self._gang_split(index, request, halls, steps)
                return None
            return self._gang_from_buckets(request, policy, best[2], best[3])
        feasible = sorted(
            (held, rank, model, group) for (rank, model, group), held in capacity.items() if held >= members
        )
        if not feasible:
            blocked += self._gang_split(index, request, halls, steps)
            return None
        _, _, model, group = feasible[0]
        taken: list[Device] = []
        here: Counter[int] = Counter()  # members per node so far: their CPU and memory are taken at the end
        for _ in range(members):  # the group holds their GPUs: each member finds a node
            full = {n for n, k in here.items() if not self._host_fits(state.nodes[n], k + 1)}
            node = self._best_node_of((model,), halls, per, full, buckets_of=self.group_buckets(group))
            if node is None:  # only the nodes' CPU or memory can fall short of what the group's GPUs hold
                self._give_back(taken)
                return None
            here[node.id] += 1
            taken += self._take_whole(node, per, policy.tenant_id)
        return self._placement(request, policy, model, taken)

    def _gang_from_buckets(
        self, request: Request, policy: TenantPolicy, buckets: Buckets, single: int
    ) -> Placement | None:
        """An NVLink gang inside one group: on the tightest node that holds it whole, else on the group's nodes
        with the most free GPUs first (the fewest nodes); none when their CPU or memory falls short."""
        per, remaining = request.gpus, request.gang_size
        if single:
            nodes = [next(iter(buckets[single].values()))]
        else:
            nodes = [n for free in range(MAX_GPUS_PER_NODE, per - 1, -1) for n in list(buckets[free].values())]
        if single and not self._host_fits(nodes[0], remaining):
            nodes = [n for free in range(MAX_GPUS_PER_NODE, per - 1, -1) for n in list(buckets[free].values())]
        devices: list[Device] = []
        for node in nodes:
            here = 0
            while remaining and node.free >= per and self._host_fits(node, here + 1):
                devices += self._take_whole(node, per, policy.tenant_id)
                remaining -= 1
                here += 1
            if not remaining:
                break
        if remaining:
            self._give_back(devices)
            return None
        return self._placement(request, policy, nodes[0].model, devices)

    @staticmethod
    def _gang_split(
        index: Mapping[tuple[str, str], Mapping[Any, Buckets]],
        request: Request,
        halls: list[str],
        steps: list[tuple[int, int]],
    ) -> list[Refusal]:
        """Why a gang that no group holds was refused, when the fleet would hold it by mixing groups (of its model,
        and for NVLink of one domain): the fabric when even ignoring versions it would need two fabrics, else the
        versions; nothing (plain no capacity) when it would not fit even mixed. Only on a refusal: O(groups)."""
        members, in_domain = request.gang_size, request.topology == "nvlink"
        # Members each scope could hold: in all, per fabric, per version set.
        fits_one: dict[tuple[object, ...], int] = defaultdict(int)
        for model in request.models:
            for hall in halls:
                for group, buckets in index.get((model, hall), {}).items():
                    held = sum(len(buckets[free]) * each for free, each in steps if buckets[free])
                    scope: tuple[str, ...] = (model, hall, group[0]) if in_domain else (model,)
                    fits_one[("all", *scope)] += held
                    fits_one[("fabric", *scope, group[-2])] += held
                    fits_one[("versions", *scope, group[-1])] += held
        room = {kind for (kind, *_), held in fits_one.items() if held >= members}
        if "all" not in room:
            return []
        if "fabric" not in room:
            also = "" if "versions" in room else " and run different driver, CUDA, NCCL or firmware versions"
            return [
                Refusal(
                    Reason.FABRIC_SPLIT,
                    "The gang fits only across nodes on different RDMA fabrics (or with RDMA and without)"
                    f"{also}; a gang's nodes share one fabric.",
                )
            ]
        return [
            Refusal(
                Reason.VERSION_SKEW,
                "The gang fits only across nodes whose driver, CUDA, NCCL or firmware versions differ; "
                "a gang's nodes run one version set.",
            )
        ]
