"""Baseline placers for the benchmark: first fit, best fit and random, as subclasses of the engine (``fgd``, the
FGD paper's score, is in ``bench/fgd.py`` on the same frame).

They override only the engine's choices (``_best_node``, ``_fresh_gpu``, ``_mig``, ``_soft``); validation,
residency, the request shapes and every change to the state (``hold_whole``, ``set_mig``, ``set_soft``) stay the
engine's, so the metrics are computed the same way for every policy. They obey the same isolation rules: soft
shares go only onto the tenant's own soft GPUs or free GPUs (``may_join_soft_gpu``), MIG slices only at legal
starts (``mig.legal_starts``) of GPUs the tenant may join (``may_join_mig_gpu``).

- ``first-fit``: the first node in id order with enough free GPUs; MIG: the first GPU in (node id, index) order
  with a legal start, partly used or free, at its lowest legal start; soft: the tenant's first GPU with room,
  else the first free GPU.
- ``best-fit``: the node with the fewest free GPUs that still fit, lowest id on ties (no NVLink-domain
  tie-break); MIG: the partly used GPU with the least free compute that fits, at its lowest legal start, else a
  free GPU on the best-fit node; soft: the tenant's GPU with the least room that fits, else as MIG.
- ``random``: a uniform choice (seeded) among the feasible nodes, GPUs and legal starts.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.decision import Device, Placement, Request, Share, mig_milli
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.isolation import Refusal, TenantPolicy, may_join_mig_gpu
from provisioning.domain.placement.mig import EMPTY, MigKind, legal_starts, place
from provisioning.domain.placement.state import FULL_SHARE, MAX_GPUS_PER_NODE, FleetState, GpuSlot, NodeSlot
from provisioning.domain.placement.whole_gpus import BucketsOf
from provisioning.domain.rungs import RUNGS

MigChoice = tuple[GpuSlot, MigKind, int]  # GPU, kind on that GPU's model, start
Partly = tuple[GpuSlot, MigKind, tuple[int, ...]]  # a partly used GPU where the kind fits, and its legal starts


def _order(gpu: GpuSlot) -> tuple[int, int]:
    return gpu.node.id, gpu.index


class _Baseline(PlacementEngine, ABC):
    """The shared frame: collect what is feasible under the isolation rules, let the subclass choose."""

    def __init__(self, state: FleetState) -> None:
        super().__init__(state, policy="best-fit")  # the engine's own workload histogram stays out of the way

    def _pools(self, models: Iterable[str], halls: list[str]) -> list[list[dict[int, NodeSlot]]]:
        """The free-count buckets of every acceptable (model, hall) pool."""
        by_free = self.state.by_free
        return [by_free[(m, h)] for m in models for h in halls if (m, h) in by_free]

    def _kind_on(self, gpu: GpuSlot, profile: str) -> MigKind:
        return CATALOG[gpu.node.model].mig_profiles[profile]

    def _mig(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> Placement | None:
        security = RUNGS[request.rung].security
        profile = request.mig_profile or ""
        partly: list[Partly] = []
        for model in request.models:
            kind = CATALOG[model].mig_profiles[profile]
            for hall in halls:
                for mig_state, gpus in self.state.mig_by_state.get((model, hall), {}).items():
                    starts = legal_starts(mig_state, kind)
                    if not starts:
                        continue
                    for gpu in gpus.values():
                        if not self._host_fits(gpu.node):
                            continue
                        others = any(t != policy.tenant_id for t in gpu.mig_tenants)
                        why = may_join_mig_gpu(policy, security, others, gpu.mig_dedicated)
                        if why is None:
                            partly.append((gpu, kind, starts))
                        elif not blocked:
                            blocked.append(why)
        choice = self._choose_mig(partly, request, halls)
        if choice is None:
            return None
        gpu, kind, start = choice
        self.state.set_mig(
            gpu, place(gpu.mig, kind, start), policy.tenant_id, mig_milli(kind), policy.dedicated_hardware
        )
        node = gpu.node
        device = Device(node.id, node.hostname, gpu.index, gpu.uuid, request.mig_profile, start)
        return self._placement(request, policy, node.model, [device])

    def _fresh_mig(self, request: Request, halls: list[str]) -> MigChoice | None:
        gpu = self._fresh_gpu(request.models, halls)
        if gpu is None:
            return None
        kind = self._kind_on(gpu, request.mig_profile or "")
        return gpu, kind, legal_starts(EMPTY, kind)[0]

    def _soft_gpu(self, request: Request, share: Share, policy: TenantPolicy, halls: list[str]) -> GpuSlot | None:
        """The engine checks the sharing rules and commits; a baseline only chooses among the tenant's own
        shared GPUs with room (and free GPUs)."""
        own = sorted(
            (
                gpu
                for model in request.models
                for hall in halls
                if (pool := self.state.soft_pools.get((policy.tenant_id, share.mode, model, hall))) is not None
                for gpu in pool.gpus()
                if gpu.soft_used + share.milli <= FULL_SHARE and self._host_fits(gpu.node)
            ),
            key=_order,
        )  # in (node, index) order, so the random baseline draws from a stable list
        return self._choose_soft(own, request, halls)

    def _fitting(self, bucket: dict[int, NodeSlot], skip: AbstractSet[int]) -> list[int]:
        """The ids of a free-count bucket's nodes outside ``skip`` whose CPU and memory hold the decision's."""
        return [i for i, node in bucket.items() if i not in skip and self._host_fits(node)]

    def _cpu_only(
        self, request: Request, policy: TenantPolicy, halls: list[str], near: frozenset[int] = frozenset()
    ) -> Placement | None:
        return self._take_cpu_only(request, policy, self._choose_host(list(self._host_candidates(request, halls))))

    def _choose_host(self, nodes: list[NodeSlot]) -> NodeSlot | None:
        """CPU-only work: the first node (lowest id); best fit and random override it."""
        return min(nodes, key=lambda n: n.id, default=None)

    @abstractmethod
    def _choose_mig(self, partly: list[Partly], request: Request, halls: list[str]) -> MigChoice | None: ...

    @abstractmethod
    def _choose_soft(self, own: list[GpuSlot], request: Request, halls: list[str]) -> GpuSlot | None: ...


class FirstFitEngine(_Baseline):
    def _best_node(
        self,
        models: Iterable[str],
        halls: list[str],
        need: int,
        skip: AbstractSet[int] = frozenset(),
        buckets_of: BucketsOf | None = None,  # the engine's pools kept whole: not a baseline's rule
    ) -> NodeSlot | None:
        first: NodeSlot | None = None
        for buckets in self._pools(models, halls):
            for bucket in buckets[need:]:
                ids = self._fitting(bucket, skip)
                if ids:
                    node = bucket[min(ids)]
                    if first is None or node.id < first.id:
                        first = node
        return first

    def _choose_mig(self, partly: list[Partly], request: Request, halls: list[str]) -> MigChoice | None:
        fresh = self._fresh_mig(request, halls)
        first = min(partly, key=lambda p: _order(p[0]), default=None)
        if first is not None and (fresh is None or _order(first[0]) < _order(fresh[0])):
            return first[0], first[1], first[2][0]
        return fresh

    def _choose_soft(self, own: list[GpuSlot], request: Request, halls: list[str]) -> GpuSlot | None:
        if own:
            return min(own, key=_order)
        return self._fresh_gpu(request.models, halls)


class BestFitEngine(_Baseline):
    def _best_node(
        self,
        models: Iterable[str],
        halls: list[str],
        need: int,
        skip: AbstractSet[int] = frozenset(),
        buckets_of: BucketsOf | None = None,  # the engine's pools kept whole: not a baseline's rule
    ) -> NodeSlot | None:
        pools = self._pools(models, halls)
        for free in range(need, MAX_GPUS_PER_NODE + 1):
            best: NodeSlot | None = None
            for buckets in pools:
                bucket = buckets[free]
                ids = self._fitting(bucket, skip)
                if ids:
                    node = bucket[min(ids)]
                    if best is None or node.id < best.id:
                        best = node
            if best is not None:
                return best
        return None

    def _choose_mig(self, partly: list[Partly], request: Request, halls: list[str]) -> MigChoice | None:
        tightest = min(partly, key=lambda p: (p[0].mig.free_compute, _order(p[0])), default=None)
        if tightest is not None:
            return tightest[0], tightest[1], tightest[2][0]
        return self._fresh_mig(request, halls)

    def _choose_soft(self, own: list[GpuSlot], request: Request, halls: list[str]) -> GpuSlot | None:
        if own:
            return min(own, key=lambda g: (FULL_SHARE - g.soft_used, _order(g)))
        return self._fresh_gpu(request.models, halls)

    def _choose_host(self, nodes: list[NodeSlot]) -> NodeSlot | None:
        """The node with the least CPU left after (then memory), the lowest id on ties."""
        return min(nodes, key=lambda n: (n.cpu_milli - n.cpu_used, n.memory_mib - n.memory_used, n.id), default=None)


class RandomEngine(_Baseline):
    def __init__(self, state: FleetState, seed: int) -> None:
        super().__init__(state)
        self.rng = random.Random(f"random-placer-{seed}")

    def _free_gpus(self, models: Iterable[str], halls: list[str]) -> list[GpuSlot]:
        """The free GPUs of the acceptable pools on nodes whose CPU and memory hold the decision's, in a stable
        order."""
        return [
            gpu
            for buckets in self._pools(models, halls)
            for bucket in buckets
            for node in bucket.values()
            if self._host_fits(node)
            for gpu in node.gpus
            if gpu.free
        ]

    def _best_node(
        self,
        models: Iterable[str],
        halls: list[str],
        need: int,
        skip: AbstractSet[int] = frozenset(),
        buckets_of: BucketsOf | None = None,  # the engine's pools kept whole: not a baseline's rule
    ) -> NodeSlot | None:
        nodes = [n for buckets in self._pools(models, halls) for b in buckets[need:] for n in b.values()]
        nodes = [n for n in nodes if n.id not in skip and self._host_fits(n)]
        return self.rng.choice(nodes) if nodes else None

    def _fresh_gpu(self, models: Iterable[str], halls: list[str]) -> GpuSlot | None:
        free = self._free_gpus(models, halls)
        return self.rng.choice(free) if free else None

    def _choose_mig(self, partly: list[Partly], request: Request, halls: list[str]) -> MigChoice | None:
        free = self._free_gpus(request.models, halls)
        if not partly and not free:
            return None
        r = self.rng.randrange(len(partly) + len(free))
        if r < len(partly):
            gpu, kind, starts = partly[r]
        else:
            gpu = free[r - len(partly)]
            kind = self._kind_on(gpu, request.mig_profile or "")
            starts = legal_starts(EMPTY, kind)
        return gpu, kind, self.rng.choice(starts)

    def _choose_soft(self, own: list[GpuSlot], request: Request, halls: list[str]) -> GpuSlot | None:
        free = self._free_gpus(request.models, halls)
        if not own and not free:
            return None
        r = self.rng.randrange(len(own) + len(free))
        return own[r] if r < len(own) else free[r - len(own)]

    def _choose_host(self, nodes: list[NodeSlot]) -> NodeSlot | None:
        return self.rng.choice(nodes) if nodes else None


POLICIES = ("ladder", "first-fit", "best-fit", "fgd", "random")
# Also accepted by ``--policy`` (not part of ``--all``): the engine under its ``best-fit`` policy, as it placed
# before it learned the workload.
EXTRA_POLICIES = ("ladder-best-fit",)


def make_engine(policy: str, state: FleetState, seed: int, keep_whole: float = 0.0) -> PlacementEngine:
    """The engine a policy names; ``keep_whole`` (the engine's share of each pool kept whole for whole-GPU work)
    applies to ``ladder`` and ``ladder-best-fit`` only. ``fgd`` on a fleet that tracks CPU and memory is the paper's
    whole model (``FGDEngine(whole=True)``)."""
    if policy == "ladder":
        return PlacementEngine(state, keep_whole=keep_whole)
    if policy == "ladder-best-fit":
        return PlacementEngine(state, policy="best-fit", keep_whole=keep_whole)
    if policy == "fgd":
        from bench.fgd import FGDEngine

        return FGDEngine(state, whole=state.tracks_host, seed=seed)
    if policy == "first-fit":
        return FirstFitEngine(state)
    if policy == "best-fit":
        return BestFitEngine(state)
    if policy == "random":
        return RandomEngine(state, seed)
    raise ValueError(f"unknown policy {policy!r}; one of {', '.join(POLICIES + EXTRA_POLICIES)}")
