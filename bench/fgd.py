"""The ``fgd`` baseline: Fragmentation Gradient Descent as published (Weng et al., "Beware of Fragmentation",
USENIX ATC'23), on the GPU dimension only, the way this benchmark models the trace.

The paper's measure, for a node ``n`` and a task ``m`` of the target workload:

- if ``m`` cannot run on ``n`` at all (a GPU model it does not accept, more whole GPUs than are free, no GPU with
  room for its share), every unallocated GPU resource of ``n`` is fragmented for ``m``;
- otherwise the fragmented part is what ``m`` cannot use GPU by GPU: for a whole-GPU task, the free parts of
  partly used GPUs; for a GPU-sharing task, GPUs whose free part is smaller than its share.

The node's fragmentation is the expectation over the workload, ``F_n = sum_m p_m F_n(m)``, and each task goes to
the candidate (node, and the GPU for a share or slice) whose placement increases ``F_n`` least. Here the target
workload is the distribution of the pods the replay has offered so far (counted per pod, before it is placed;
the paper assumes it known, and sampling with replacement draws from a fixed one). A pod is a task type by its
GPU count, its share (``gpu_milli``), how it is served (soft share, or the MIG kind covering it) and the catalog
models it accepts. Unallocated GPU resources are what the benchmark counts: a free GPU 1000 milli, a soft-shared
GPU 1000 minus its shares, a MIG GPU its free compute slices (as sevenths). The paper has no tenants: a soft GPU's
free part counts as usable by any share, though the engine lets only its tenant's shares join it (the candidates
obey the isolation rules; the score does not know them). MIG slices, absent from the paper, are a task type like
shares: usable on a free GPU or a partly used one with a legal start, and every legal start is scored.

Candidates are every feasible node, one free GPU per node, and every partly used GPU the request may join; ties
go to the lowest (node id, GPU index, start). Node fragmentation is cached per node signature (model, free GPUs,
soft rooms, MIG states) for the current workload snapshot, rebuilt when the pods seen double and then every 64.
"""

from __future__ import annotations

import math
import random
import sys
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from itertools import accumulate
from typing import NamedTuple

from bench.baselines import MigChoice, Partly, _Baseline
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.decision import Placement, Refused, Request
from provisioning.domain.placement.isolation import TenantPolicy
from provisioning.domain.placement.mig import COMPUTE_SLICES, EMPTY, MigKind, MigState, legal_starts, place
from provisioning.domain.placement.state import FULL_SHARE, MAX_GPUS_PER_NODE, FleetState, GpuSlot, NodeSlot
from provisioning.domain.placement.whole_gpus import BucketsOf

REBUILD_EVERY = 64


class Task(NamedTuple):
    """A task type of the target workload."""

    gpus: int  # whole GPUs; 0 for a share, a MIG slice or CPU-only work
    milli: int  # a soft share's size; 0 otherwise
    kind: MigKind | None  # the MIG kind of a fractional pod served by slices
    models: frozenset[str]
    cpu: int = 0  # milli-cores, in the whole-node model; a task with no GPU shape is CPU-only work


# model, free GPUs, soft rooms, MIG states, CPU left (milli-core; -1 when the node does not track it)
Signature = tuple[str, int, tuple[int, ...], tuple[MigState, ...], int]


def _mig_order(state: MigState) -> tuple[int, int, bool]:
    return state.mem_mask, state.compute_used, state.media_used


def _mig_free(state: MigState) -> float:
    return state.free_compute * FULL_SHARE / COMPUTE_SLICES


@dataclass
class _ModelView:
    """The workload as one GPU model sees it: who cannot use it, and the shapes of those who can (with the CPU they
    ask, 0 in the GPU-only model): whole GPUs, shares and MIG kinds, and CPU-only work."""

    excluded: float = 0.0
    whole: dict[tuple[int, int], float] = field(default_factory=dict)  # (GPUs, CPU) -> p
    shares: list[tuple[int, int, float]] = field(default_factory=list)  # (milli, CPU, p), sorted by milli
    mig: dict[tuple[MigKind, int], float] = field(default_factory=dict)  # (kind, CPU) -> p
    cpu_only: float = 0.0


class FGDEngine(_Baseline):
    """``whole``: the paper's whole model, for the whole-node benchmark: the target workload is ``prior`` (the
    pods file's typical pods, fixed), a task the node's CPU left cannot hold finds every idle GPU of it fragmented
    (as does CPU-only work), and a candidate's score is the plugin's 0-100 integer,
    ``int(100 * sigmoid((F_before - F_after) / 1000))``, the best score's candidates drawn at random (seeded)."""

    def __init__(self, state: FleetState, *, whole: bool = False, seed: int = 0) -> None:
        super().__init__(state)
        self.whole = whole
        self.rng = random.Random(f"fgd-{seed}")
        self.seen: Counter[Task] = Counter()
        self._prior = False
        self._built_at = 0
        self._views: dict[str, _ModelView] = {}
        self._frag: dict[Signature, float] = {}
        self._sigs: dict[int, Signature] = {}
        self._version = -1

    def prior(self, tasks: Counter[Task]) -> None:
        """Fix the target workload to ``tasks`` (the whole model's typical pods); ``expect`` then learns nothing."""
        self.seen = Counter(tasks)
        self._prior = True
        self._rebuild(sum(self.seen.values()))

    # --- the workload --------------------------------------------------------------------------------------------

    def expect(self, task: Task) -> None:
        """One more pod of the target workload (called before it is placed)."""
        if self._prior:
            return
        self.seen[task] += 1
        count = sum(self.seen.values())
        if count - self._built_at >= min(max(self._built_at, 1), REBUILD_EVERY):
            self._rebuild(count)

    def _rebuild(self, count: int) -> None:
        self._built_at = count
        self._frag.clear()
        views: dict[str, _ModelView] = {}
        for model in {n.model for n in self.state.nodes.values()}:
            view = views[model] = _ModelView()
            shares: Counter[tuple[int, int]] = Counter()
            for task, seen in self.seen.items():
                p = seen / count
                cpu = task.cpu if self.whole else 0
                if not (task.gpus or task.milli or task.kind):
                    view.cpu_only += p  # no GPU it could use: every idle GPU is fragmented for it
                elif model not in task.models:
                    view.excluded += p
                elif task.kind is not None:
                    view.mig[(task.kind, cpu)] = view.mig.get((task.kind, cpu), 0.0) + p
                elif task.milli:
                    shares[(task.milli, cpu)] += seen
                else:
                    view.whole[(task.gpus, cpu)] = view.whole.get((task.gpus, cpu), 0.0) + p
            view.shares = [(m, c, shares[(m, c)] / count) for m, c in sorted(shares)]
        self._views = views

    # --- the measure -------------------------------------------------------------------------------------------

    def _signature(self, node: NodeSlot) -> Signature:
        sig = self._sigs.get(node.id)
        if sig is None:
            free = 0
            rooms: list[int] = []
            migs: list[MigState] = []
            for gpu in node.gpus:
                if gpu.whole_tenant is not None:
                    continue
                if not gpu.mig.empty:
                    migs.append(gpu.mig)
                elif gpu.soft_tenant is not None:
                    rooms.append(FULL_SHARE - gpu.soft_used)
                else:
                    free += 1
            cpu = node.cpu_milli - node.cpu_used if self.whole and node.cpu_milli else -1
            sig = (node.model, free, tuple(sorted(rooms)), tuple(sorted(migs, key=_mig_order)), cpu)
            self._sigs[node.id] = sig
        return sig

    def fragmentation(self, sig: Signature) -> float:
        """``F_n`` in milli-GPU for a node in this state, over the current workload."""
        cached = self._frag.get(sig)
        if cached is not None:
            return cached
        model, free, rooms, migs, cpu_left = sig
        if cpu_left < 0:
            cpu_left = sys.maxsize  # not tracked: no task lacks CPU here
        view = self._views.get(model)
        partial = sum(rooms) + sum(_mig_free(s) for s in migs)
        total = free * FULL_SHARE + partial
        if view is None:
            return total  # nothing seen yet: no task can use anything
        frag = (view.excluded + view.cpu_only) * total
        for (gpus, cpu), p in view.whole.items():
            frag += p * (total if free < gpus or cpu_left < cpu else partial)
        if view.shares:
            above = list(accumulate(reversed(rooms)))  # above[j]: the j+1 largest rooms
            for milli, cpu, p in view.shares:
                fits = len(rooms) - bisect_left(rooms, milli)
                if (not free and not fits) or cpu_left < cpu:
                    frag += p * total
                else:
                    frag += p * (partial - (above[fits - 1] if fits else 0))
        for (kind, cpu), p in view.mig.items():
            usable = sum(_mig_free(s) for s in migs if legal_starts(s, kind))
            if (not free and not usable) or cpu_left < cpu:
                frag += p * total
            else:
                frag += p * (partial - usable)
        self._frag[sig] = frag
        return frag

    def _delta(self, before: Signature, after: Signature) -> float:
        """What the choice adds to ``F_n``; in the whole model, the plugin's 0-100 score turned into a cost (lower
        is better), so that candidates within one score point tie."""
        delta = self.fragmentation(after) - self.fragmentation(before)
        if not self.whole:
            return delta
        return -float(int(100.0 / (1.0 + math.exp(min(700.0, delta / 1000.0)))))

    def _tie(self, node: NodeSlot) -> float:
        """The tie-break after the score: the lower node id, or in the whole model a random draw."""
        return self.rng.random() if self.whole else node.id

    def _after(self, sig: Signature, free: int, rooms: tuple[int, ...], migs: tuple[MigState, ...]) -> Signature:
        """The node's signature once the current decision's GPUs and CPU are taken."""
        cpu_left = sig[4] - self._host[0] if sig[4] >= 0 else -1
        return (sig[0], free, rooms, migs, cpu_left)

    # --- decisions -----------------------------------------------------------------------------------------------

    def place(self, request: Request, policy: TenantPolicy, *, quota_milli: int | None = None) -> Placement | Refused:
        if self.state.version != self._version:
            self._sigs.clear()  # the state changed outside this engine's decisions
        result = super().place(request, policy, quota_milli=quota_milli)
        if isinstance(result, Placement):
            for device in result.devices:
                self._sigs.pop(device.node_id, None)
            for take in result.host:
                self._sigs.pop(take.node_id, None)
        self._version = self.state.version
        return result

    def _candidates(self, models: Iterable[str], halls: list[str], need: int) -> Iterable[NodeSlot]:
        for buckets in self._pools(models, halls):
            for bucket in buckets[need:]:
                yield from bucket.values()

    def _best_node(
        self,
        models: Iterable[str],
        halls: list[str],
        need: int,
        skip: AbstractSet[int] = frozenset(),
        buckets_of: BucketsOf | None = None,  # the engine's pools kept whole: not a baseline's rule
    ) -> NodeSlot | None:
        best: tuple[float, float] | None = None
        chosen: NodeSlot | None = None
        for node in self._candidates(models, halls, need):
            if node.id in skip or not self._host_fits(node):
                continue
            sig = self._signature(node)
            key = (self._delta(sig, self._after(sig, sig[1] - need, sig[2], sig[3])), self._tie(node))
            if best is None or key < best:
                best, chosen = key, node
        return chosen

    def _cpu_only(
        self, request: Request, policy: TenantPolicy, halls: list[str], near: frozenset[int] = frozenset()
    ) -> Placement | None:
        """CPU-only work on the node whose ``F_n`` its CPU raises least (the paper's rule for every pod)."""
        best: tuple[float, float] | None = None
        chosen: NodeSlot | None = None
        for node in self._host_candidates(request, halls):
            sig = self._signature(node)
            key = (self._delta(sig, self._after(sig, sig[1], sig[2], sig[3])), self._tie(node))
            if best is None or key < best:
                best, chosen = key, node
        return self._take_cpu_only(request, policy, chosen)

    def _fresh_choices(self, models: Iterable[str], halls: list[str]) -> Iterable[tuple[NodeSlot, Signature, GpuSlot]]:
        for node in self._candidates(models, halls, 1):
            if self._host_fits(node):
                yield node, self._signature(node), next(g for g in node.gpus if g.free)

    def _choose_mig(self, partly: list[Partly], request: Request, halls: list[str]) -> MigChoice | None:
        best: tuple[float, float, int, int] | None = None
        choice: MigChoice | None = None
        for gpu, kind, starts in partly:
            model, free, rooms, migs, _ = sig = self._signature(gpu.node)
            rest = list(migs)
            rest.remove(gpu.mig)
            for start in starts:
                after = tuple(sorted((*rest, place(gpu.mig, kind, start)), key=_mig_order))
                key = (self._delta(sig, self._after(sig, free, rooms, after)), self._tie(gpu.node), gpu.index, start)
                if best is None or key < best:
                    best, choice = key, (gpu, kind, start)
        profile = request.mig_profile or ""
        for node, sig, gpu in self._fresh_choices(request.models, halls):
            model, free, rooms, migs, _ = sig
            kind = CATALOG[model].mig_profiles[profile]
            for start in legal_starts(EMPTY, kind):
                after = tuple(sorted((*migs, place(EMPTY, kind, start)), key=_mig_order))
                key = (self._delta(sig, self._after(sig, free - 1, rooms, after)), self._tie(node), gpu.index, start)
                if best is None or key < best:
                    best, choice = key, (gpu, kind, start)
        return choice

    def _choose_soft(self, own: list[GpuSlot], request: Request, halls: list[str]) -> GpuSlot | None:
        milli = request.share.milli if request.share is not None else 0
        best: tuple[float, float, int] | None = None
        choice: GpuSlot | None = None
        for gpu in own:
            _, free, rooms, migs, _ = sig = self._signature(gpu.node)
            rest = list(rooms)
            room = FULL_SHARE - gpu.soft_used
            rest.remove(room)
            after = self._after(sig, free, tuple(sorted((*rest, room - milli))), migs)
            key = (self._delta(sig, after), self._tie(gpu.node), gpu.index)
            if best is None or key < best:
                best, choice = key, gpu
        for node, sig, gpu in self._fresh_choices(request.models, halls):
            _, free, rooms, migs, _ = sig
            after = self._after(sig, free - 1, tuple(sorted((*rooms, FULL_SHARE - milli))), migs)
            key = (self._delta(sig, after), self._tie(node), gpu.index)
            if best is None or key < best:
                best, choice = key, gpu
        return choice


def task_of(request: Request, more: Iterable[Request] = ()) -> Task:
    """The task type of a pod asked as ``request`` (and, for a MIG slice on several models, ``more``)."""
    models = frozenset(request.models).union(*(r.models for r in more))
    cpu = request.cpu_milli
    if request.share is not None:
        return Task(0, request.share.milli, None, models, cpu)
    if request.mig_profile is not None:
        return Task(0, 0, CATALOG[request.models[0]].mig_profiles[request.mig_profile], models, cpu)
    return Task(min(request.gpus, MAX_GPUS_PER_NODE), 0, None, models, cpu)


def fragmentation_rate(state: FleetState, tasks: Counter[Task], unallocated: float) -> float:
    """The paper's fragmentation rate: the fleet's GPUs fragmented for the workload ``tasks`` (``F_n`` summed over
    every node, the whole model's CPU rule included when the nodes track CPU), over its unallocated GPUs."""
    if not tasks or unallocated <= 0:
        return 0.0
    measure = FGDEngine(state, whole=state.tracks_host)
    measure.prior(tasks)
    fragmented = sum(measure.fragmentation(measure._signature(node)) for node in state.nodes.values())
    return fragmented / FULL_SHARE / unallocated
