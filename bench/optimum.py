"""The optimum of the placement benchmark: the most a clairvoyant offline packer could serve of a replay's stream.

Run from the repository root (pure Python over ``bench.replay``, plus the HiGHS solver, ``highspy``)::

    python -m bench.optimum [--nodes NODES.csv] [--pods PODS.csv] [--sharing tenant|mig|unsafe] [--seeds 3]
                            [--order auto|sampled|file] [--time-limit 120] [--json]

For each seed it takes the pods ``bench.replay.replay`` offers for that seed (``offered``: its ``sampled`` draw, or
file order for a pods file without times, until the offered demand reaches the cluster's GPUs), asks them of a
``bench.replay.Planner`` (the replay's pod -> request mapping and sharing mode) and solves an integer program over
the same fleet (``bench.trace``'s node -> catalog model mapping). The packer knows the whole stream and may refuse
any pod; it obeys the rules the replay's engine enforces:

- a whole-GPU pod of ``k`` GPUs takes ``k`` free GPUs of one node of a model it accepts;
- a GPU is either whole, or MIG-partitioned, or soft-shared (never two of these);
- a soft share goes onto a GPU of a model it accepts whose shares sum to at most 1000 milli, all of one tenant in
  ``tenant`` mode, of anyone in ``unsafe`` mode (the replay asks every share there as one tenant);
- in ``mig`` mode a fractional pod takes the MIG kind the Planner asks (the smallest covering its share), and a
  GPU holds a set of kinds only if they fit at legal starts of ``mig.py``'s geometry (memory slices and the 7
  compute slices; tenants may share a MIG GPU at the container rung the replay asks for).

Halls, NVLink domains and versions constrain nothing here: the trace's tenants have no residency and no pod is a
gang, so the engine may use any node of an accepted model.

The program aggregates what is interchangeable (a "configuration" model): nodes by (model class, GPU count), where
models no pod tells apart form one class; pods by (GPU count or share or MIG kind, owner, accepted models, demand).
Its integers are how many nodes of each type hold each multiset of whole pods, how many GPUs of each class each
owner fills with each maximal multiset of shares or MIG kinds (a *pattern*), and how many pods of each kind are
served on each class. Every integer solution is a real packing and every packing is one, so the model is exact,
not a relaxation. The objective is what the replay measures, in units of 1/7000 GPU so that it is integral:

- ``allocated``: whole GPUs, plus a share's milli/1000, plus a MIG kind's compute/7 (``bench.replay.measure``), so
  ``unallocated_gpus`` = cluster GPUs - the maximum is a lower bound on every policy's ``unallocated_gpus``;
- ``served``: the demand of the pods served (``Plan.demand_milli``), an upper bound on every policy's
  ``served_gpus``. In ``tenant`` and ``unsafe`` modes both objectives are the same (nothing is rounded up), so one
  solve gives both. In ``mig`` mode a slice allocates more than its pod's demand (a 0.6-GPU pod holds a 7g) and
  each is solved on its own; a packer that picks which pods to serve can then often allocate every GPU, so the
  ``unallocated_gpus`` bound is 0 and the served bound is the one that tells policies apart.

Why it is a bound: every replay run is a feasible point of this program (same pods, same fleet, same rules; the
online order and the policies' choices only narrow what is reachable). HiGHS's dual bound is an upper bound on the
program's maximum, and the objective is integral, so its floor is too; that floor is what is reported, whether or
not the solve finished. When the time limit stops it, ``status`` says so and ``gap_gpus`` is the distance between
that bound and the best packing found; the bound stays valid, only looser.

**The whole node** (``host``: every node's CPU and memory from the trace, every pod's ask, as ``bench/whole_node.py``
replays them). Node types are then (model class, GPUs, CPU, memory), and the pods served on nodes of one type ask
at most the CPU and memory those nodes have *together*: a relaxation (a pod's CPU may be counted across two nodes),
so the whole-node figure is an upper bound on what any packer serves, not always a packing. CPU-only pods serve no
GPU demand, and a packer maximising it may refuse them: they are left out. A soft share refused ``no_capacity``
falls back to its MIG kind in the replay, which a host short of CPU can cause beside free GPUs; so every
fractional pod may be served either way (``Item.fallback``). A slice rounds its pod up, so (as in ``mig`` mode) a
packer choosing its pods may allocate every GPU: only ``served`` is solved, and the unallocated bound is 0.

One route is left out of the GPU-only model, and the replay never takes it: in ``tenant`` and ``unsafe`` modes the
replay asks a fractional pod for MIG slices only after its soft share was refused ``no_capacity``, i.e. when no GPU
of the accepted models is free (every policy in ``bench/`` gives a share a free GPU when there is one). The MIG request
names the same models, so it can only join a partly used MIG GPU; none exists, since the first would have needed a
free GPU. So no run in those modes holds a MIG slice (``rounding_gpus`` is 0.0 in every such row), and the bound
covers every run. ``--no-share-ratio`` (tenants that must take slices) breaks that argument and is not offered.

``gap_closed`` turns a replay's rows and the optimum into "ladder closed X% of the gap between the best of
first-fit and best-fit and the optimum". Results and their reading: ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter

import highspy

from bench.replay import SHARINGS, Plan, Planner, sampled
from bench.trace import NODES_CSV, PODS_CSVS, Pod, TraceNode, load_nodes, load_pods
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.mig import COMPUTE_SLICES, EMPTY, GEOMETRY, MigKind, MigState, legal_starts, place
from provisioning.domain.placement.state import FULL_SHARE

Row = dict[str, object]
UNIT = FULL_SHARE * COMPUTE_SLICES  # objective units per GPU: a milli is 7 units, a MIG compute slice 1000
MIG_OWNER = -1  # the owner of every MIG item: tenants share MIG GPUs
BASELINES = ("first-fit", "best-fit")  # the rivals of bench.placement.UNALLOCATED_RIVALS

Slot = int | MigKind  # what an item takes of a shared GPU: a soft share's milli, or a MIG kind
Pattern = tuple[tuple[Slot, int], ...]  # (slot, count) pairs: what one shared GPU holds
NodePattern = tuple[tuple[int, int], ...]  # (GPUs per pod, count) pairs: the whole pods one node holds


@dataclass(frozen=True, slots=True)
class Item:
    """Pods the program cannot tell apart: it decides how many of each are served, and on which model class."""

    models: tuple[str, ...]
    demand_milli: int
    gpus: int = 0  # whole GPUs on one node; 0 for a pod that takes part of one GPU
    share: int = 0  # a soft share's milli
    kind: MigKind | None = None
    owner: int = 0  # who may share its GPU: the tenant (every share asks as tenant 0 in unsafe mode), or MIG_OWNER
    # The whole-node model: what it asks of its node's host, and the MIG kind a soft share may fall back to (the
    # replay asks it when the share is refused ``no_capacity``, which a host short of CPU can cause beside free GPUs).
    cpu_milli: int = 0
    memory_mib: int = 0
    fallback: MigKind | None = None
    fallback_models: tuple[str, ...] = ()

    @property
    def slot(self) -> Slot:
        return self.kind if self.kind is not None else self.share

    def allocated(self) -> int:
        """What it allocates when served, in units (``bench.replay.measure``)."""
        if self.kind is not None:
            return GEOMETRY[self.kind].compute * FULL_SHARE
        return (self.gpus * FULL_SHARE + self.share) * COMPUTE_SLICES

    def served(self) -> int:
        return self.demand_milli * COMPUTE_SLICES


def item_of(plan: Plan) -> Item | None:
    """The item of a pod, from what the replay's Planner asks for it (with its CPU and memory, when it asks them:
    ``Planner(host=True)``); None for CPU-only work, which serves no GPU demand (a packer that maximises it
    refuses such work wherever it would be in the way, so the bound leaves it out)."""
    first = plan.attempts[0][0]
    cpu, memory = first.cpu_milli, first.memory_mib
    if not plan.demand_milli:
        return None
    if not plan.fractional:
        return Item(first.models, plan.demand_milli, gpus=first.gpus, cpu_milli=cpu, memory_mib=memory)
    kind = CATALOG[first.models[0]].mig_profiles[first.mig_profile or ""]
    models = tuple(m for request, _ in plan.attempts for m in request.models)
    if plan.soft is None:
        return Item(models, plan.demand_milli, kind=kind, owner=MIG_OWNER, cpu_milli=cpu, memory_mib=memory)
    request, policy = plan.soft
    assert request.share is not None
    host = cpu > 0 or memory > 0  # the GPU-only model never falls back (the module's "one route")
    return Item(
        request.models,
        plan.demand_milli,
        share=request.share.milli,
        owner=policy.tenant_id,
        cpu_milli=cpu,
        memory_mib=memory,
        fallback=kind if host else None,
        fallback_models=models if host else (),
    )


# --- patterns ---------------------------------------------------------------------------------------------------------


def whole_patterns(gpus: int, sizes: Iterable[int]) -> list[NodePattern]:
    """Every multiset of whole-pod sizes one node of ``gpus`` GPUs can hold, the empty one included (the GPUs a
    pattern leaves go to shares and slices)."""
    sizes = sorted({s for s in sizes if s <= gpus}, reverse=True)
    found: list[NodePattern] = []

    def extend(i: int, room: int, chosen: NodePattern) -> None:
        if i == len(sizes):
            found.append(chosen)
            return
        for count in range(room // sizes[i], -1, -1):
            extend(i + 1, room - count * sizes[i], (*chosen, (sizes[i], count)) if count else chosen)

    extend(0, gpus, ())
    return found


def share_patterns(caps: Counter[int]) -> list[Pattern]:
    """The maximal multisets of soft shares (milli, at most ``caps[milli]`` of each) that fit on one GPU: a GPU
    holding fewer shares is covered by a maximal pattern with slots left empty."""
    sizes = sorted(caps, reverse=True)
    found: list[Pattern] = []

    def extend(i: int, room: int, chosen: Pattern) -> None:
        if i == len(sizes):
            taken = dict(chosen)
            if all(s > room or taken.get(s, 0) == caps[s] for s in sizes):
                found.append(chosen)
            return
        for count in range(min(caps[sizes[i]], room // sizes[i]), -1, -1):
            extend(i + 1, room - count * sizes[i], (*chosen, (sizes[i], count)) if count else chosen)

    extend(0, FULL_SHARE, ())
    return found


def mig_patterns(kinds: Iterable[MigKind]) -> list[Pattern]:
    """The maximal multisets of these MIG kinds that one GPU holds at legal starts. Instances at legal starts of
    one final layout can be created in any order, so layouts are built in a fixed order of kinds."""
    order = sorted(set(kinds), key=lambda k: GEOMETRY[k].nvml_id)
    layouts: set[tuple[int, ...]] = set()

    def extend(state: MigState, first: int, counts: tuple[int, ...]) -> None:
        layouts.add(counts)
        for i in range(first, len(order)):
            for start in legal_starts(state, order[i]):
                extend(place(state, order[i], start), i, (*counts[:i], counts[i] + 1, *counts[i + 1 :]))

    extend(EMPTY, 0, (0,) * len(order))
    maximal = [
        c for c in layouts if not any(o != c and all(a >= b for a, b in zip(o, c, strict=True)) for o in layouts)
    ]
    return [tuple((k, n) for k, n in zip(order, c, strict=True) if n) for c in sorted(maximal, reverse=True)]


# --- the program ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Solve:
    """One solve, in GPUs. ``bound`` is valid whatever the status; it is the maximum when ``status`` is optimal."""

    bound: float
    found: float  # the best packing found (serving nothing is one)
    status: str
    seconds: float  # building the program and solving it

    @property
    def gap_gpus(self) -> float:
        return round(max(self.bound - self.found, 0.0), 3)


class Program:
    """A maximisation over non-negative integers, built column by column; rows are named by hashable keys."""

    def __init__(self) -> None:
        self.rows: dict[Hashable, int] = {}
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.costs: list[float] = []
        self.caps: list[float] = []
        self.starts: list[int] = [0]
        self.index: list[int] = []
        self.value: list[float] = []

    def row(self, key: Hashable, lower: float = -highspy.kHighsInf, upper: float = 0.0) -> int:
        if key not in self.rows:
            self.rows[key] = len(self.lower)
            self.lower.append(lower)
            self.upper.append(upper)
        return self.rows[key]

    def column(self, cost: float, cap: float, entries: Iterable[tuple[Hashable, float]]) -> None:
        for key, coefficient in entries:
            self.index.append(self.row(key))
            self.value.append(coefficient)
        self.costs.append(cost)
        self.caps.append(cap)
        self.starts.append(len(self.index))

    def maximise(self, time_limit: float, ceiling: int) -> tuple[int, float, str]:
        """The dual bound (floored: the objective is integral), the best value found, and HiGHS's status.
        ``ceiling`` is a bound known beforehand, for a solve stopped before HiGHS has one."""
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = len(self.costs), len(self.lower)
        lp.sense_ = highspy.ObjSense.kMaximize
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = self.costs, [0.0] * len(self.costs), self.caps
        lp.row_lower_, lp.row_upper_ = self.lower, self.upper
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = self.starts, self.index, self.value
        lp.integrality_ = [highspy.HighsVarType.kInteger] * len(self.costs)
        h = _highs()
        h.setOptionValue("time_limit", float(time_limit))
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("mip_abs_gap", 0.999)  # the objective is integral: a gap below one unit proves optimality
        h.passModel(lp)
        h.run()
        info = h.getInfo()
        # a dual bound within float noise of an integer stands for that integer; below it, the integer under it
        bound = min(math.floor(min(info.mip_dual_bound, ceiling) + 1e-6), ceiling)
        found = info.objective_function_value if math.isfinite(info.objective_function_value) else 0.0
        return bound, found, h.modelStatusToString(h.getModelStatus()).lower()


def _highs() -> highspy.Highs:
    """A silent solver. HiGHS prints its banner on stdout when the process builds its first one, before any option
    can be set; it would spoil ``--json``, so it goes to stderr."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    h.setOptionValue("output_flag", False)
    return h


def model_classes(fleet_models: Iterable[str], items: Iterable[Item]) -> list[tuple[str, ...]]:
    """The fleet's models grouped by which items accept them: within a class, every item takes all or none."""
    accepts = sorted({frozenset(i.models) for i in items}, key=sorted)
    groups: dict[tuple[bool, ...], list[str]] = {}
    for model in sorted(set(fleet_models)):
        groups.setdefault(tuple(model in a for a in accepts), []).append(model)
    return [tuple(g) for g in groups.values()]


NodeType = tuple[str, int, int, int]  # (model, GPUs, CPU milli-cores, memory MiB; both 0: the host untracked)


def solve(
    items: Counter[Item],
    fleet: Counter[NodeType],
    objective: Callable[[Item], int],
    time_limit: float,
    via_mig: Callable[[Item], int] | None = None,
) -> Solve:
    """The most ``objective`` (units per pod; ``via_mig`` for a soft share served by its fallback MIG kind) the
    items can earn on a fleet of ``fleet[(model, gpus, cpu, memory)]`` nodes.

    Rows: ``pods`` (an item's pods served, on any site, at most its count), ``nodes`` (a node type's nodes, each
    in one pattern of whole pods), ``whole`` (a site's k-GPU pods served, at most the k-GPU places its nodes'
    patterns hold), ``free`` (a site's GPUs in shared patterns, at most those its nodes' patterns leave) and
    ``slot`` (an owner's pods of one share size or MIG kind on a site, at most the places its patterns hold).
    A site is a model class, or, where nodes state their host, one node type; there ``cpu`` and ``memory`` hold
    what the pods served on the site ask to what its nodes have *together* (a relaxation: a pod's CPU may be
    counted against several nodes, so the whole-node bound is an upper bound, not always reached)."""
    started = perf_counter()
    classes = model_classes((m for m, *_ in fleet), items)
    class_of = {m: c for c in classes for m in c}
    node_types: Counter[tuple[tuple[str, ...], int, int, int]] = Counter()
    for (model, gpus, cpu, memory), count in fleet.items():
        node_types[(class_of[model], gpus, cpu, memory)] += count

    def site_of(node_type: tuple[tuple[str, ...], int, int, int]) -> Hashable:
        return node_type if node_type[2] or node_type[3] else node_type[0]

    sites: dict[Hashable, tuple[str, ...]] = {site_of(t): t[0] for t in node_types}
    tracked = {site_of(t) for t in node_types if t[2] or t[3]}
    most_gpus: Counter[Hashable] = Counter()
    program = Program()
    for item, count in items.items():
        program.row(("pods", item), upper=count)
    sizes = {i.gpus for i in items if i.gpus}
    for node_type, count in node_types.items():
        cls, gpus, cpu, memory = node_type
        site = site_of(node_type)
        most_gpus[site] = max(most_gpus[site], gpus)
        if cpu or memory:
            program.row(("cpu", site), upper=count * cpu)
            program.row(("memory", site), upper=count * memory)
        program.row(("nodes", node_type), lower=count, upper=count)
        for pattern in whole_patterns(gpus, sizes):
            left = gpus - sum(size * n for size, n in pattern)
            entries: list[tuple[Hashable, float]] = [(("nodes", node_type), 1), (("free", site), -left)]
            program.column(0, count, entries + [(("whole", site, size), -n) for size, n in pattern])
    caps: dict[int, Counter[Slot]] = {}
    for item, count in items.items():
        if not item.gpus:
            caps.setdefault(item.owner, Counter())[item.slot] += count
        if item.fallback is not None:
            caps.setdefault(MIG_OWNER, Counter())[item.fallback] += count
    for owner, cap in caps.items():
        kinds = [k for k in cap if isinstance(k, MigKind)]
        patterns = (
            mig_patterns(kinds)
            if kinds
            else share_patterns(Counter({k: n for k, n in cap.items() if isinstance(k, int)}))
        )
        takers = [i for i in items if not i.gpus and (i.owner == owner or (owner == MIG_OWNER and i.fallback))]
        for site, cls in sites.items():
            if any(cls[0] in (i.fallback_models if i.owner != owner else i.models) for i in takers):
                for layout in patterns:
                    entries = [(("free", site), 1), *((("slot", owner, site, k), -n) for k, n in layout)]
                    program.column(0, highspy.kHighsInf, entries)
    for item, count in items.items():
        for site, cls in sites.items():
            takes = [(("cpu", site), item.cpu_milli), (("memory", site), item.memory_mib)] if site in tracked else []
            if item.fallback is not None and via_mig is not None and cls[0] in item.fallback_models:
                route = [(("pods", item), 1), (("slot", MIG_OWNER, site, item.fallback), 1), *takes]
                program.column(via_mig(item), count, [(k, v) for k, v in route if v])
            if cls[0] not in item.models:
                continue
            if not item.gpus:
                route = [(("pods", item), 1), (("slot", item.owner, site, item.slot), 1), *takes]
            elif most_gpus[site] >= item.gpus:
                route = [(("pods", item), 1), (("whole", site, item.gpus), 1), *takes]
            else:
                continue
            program.column(objective(item), count, [(k, v) for k, v in route if v])
    every_pod = sum(objective(i) * n for i, n in items.items())
    if via_mig is not None:
        every_pod = sum(max(objective(i), via_mig(i) if i.fallback else 0) * n for i, n in items.items())
    every_gpu = sum(gpus * n for (_, gpus, *_), n in fleet.items()) * UNIT  # a pod allocates at least what it serves
    # the dual bound, never the best packing found, whatever stopped the solve
    bound, found, status = program.maximise(time_limit, min(every_pod, every_gpu))
    return Solve(bound / UNIT, found / UNIT, status, perf_counter() - started)


# --- the bound of a replay's stream -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bound:
    """The optimum of one stream: ``served`` bounds the demand served, ``allocated`` the GPUs allocated (the same
    solve when the two objectives agree; None when it is not solved: every GPU, see ``optimum``)."""

    cluster_gpus: int
    offered_gpus: float
    served: Solve
    allocated: Solve | None

    @property
    def unallocated_gpus(self) -> float:
        return 0.0 if self.allocated is None else round(self.cluster_gpus - self.allocated.bound, 3)

    @property
    def solves(self) -> tuple[Solve, ...]:
        if self.allocated is None or self.served is self.allocated:
            return (self.served,)
        return (self.served, self.allocated)

    @property
    def status(self) -> str:
        return "/".join(dict.fromkeys(s.status for s in self.solves))

    @property
    def gap_gpus(self) -> float:
        return max(s.gap_gpus for s in self.solves)

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.solves)

    def row(self) -> Row:
        return {
            "offered_gpus": self.offered_gpus,
            "served_gpus": round(self.served.bound, 3),
            "unallocated_gpus": self.unallocated_gpus,
            "status": self.status,
            "gap_gpus": self.gap_gpus,
            "seconds": round(self.seconds, 2),
        }


def offered(
    nodes: Sequence[TraceNode], pods: Sequence[Pod], *, seed: int, in_file_order: bool, load: int = 100
) -> list[Pod]:
    """The pods ``bench.replay.replay`` offers for this seed, in its order and with its stopping rule: drawn by
    ``sampled`` (or in file order) until the offered demand reaches ``load`` percent of the cluster's GPUs."""
    capacity = sum(n.gpus for n in nodes) * FULL_SHARE * load // 100
    stream: list[Pod] = []
    total = 0
    for pod in pods if in_file_order else sampled(pods, seed):
        if total >= capacity:
            break
        stream.append(pod)
        total += pod.demand_milli
    return stream


def optimum(
    nodes: Sequence[TraceNode], stream: Sequence[Pod], sharing: str, time_limit: float = 120.0, *, host: bool = False
) -> Bound:
    """The bound for one offered stream under one sharing mode (``time_limit`` seconds per solve); ``host``: the
    whole-node model (each node's CPU and memory, each pod's ask, ``solve``'s relaxation of them). Where soft shares
    may fall back to MIG slices (``Item.fallback``), a slice rounds its pod up and a packer choosing which pods to
    serve can allocate every GPU (as in ``mig`` mode): the allocated objective is not solved, and the unallocated
    bound is 0."""
    planner = Planner(sharing, host=host)
    items = Counter(item for item in (item_of(planner.plan(pod)) for pod in stream) if item is not None)
    fleet = Counter((n.model, n.gpus, n.cpu_milli if host else 0, n.memory_mib if host else 0) for n in nodes)
    if any(i.fallback for i in items):
        served = solve(items, fleet, Item.served, time_limit, Item.served)
        return Bound(sum(n.gpus for n in nodes), sum(p.demand_milli for p in stream) / FULL_SHARE, served, None)
    allocated = solve(items, fleet, Item.allocated, time_limit)
    same = all(i.allocated() == i.served() for i in items)
    served = allocated if same else solve(items, fleet, Item.served, time_limit)
    offered_gpus = sum(p.demand_milli for p in stream) / FULL_SHARE
    return Bound(sum(n.gpus for n in nodes), offered_gpus, served, allocated)


def seed_bounds(
    nodes_csv: Path, pods_csv: Path, sharing: str, seeds: int, time_limit: float = 120.0, order: str = "auto"
) -> tuple[list[Bound], str]:
    """The bound of each seed 0..seeds-1, reading the files and the order as ``bench.placement.run_config`` does,
    and that order (``sampled`` or ``file``)."""
    nodes = load_nodes(nodes_csv)
    pods, timed = load_pods(pods_csv)
    in_file_order = order == "file" or (order == "auto" and not timed)
    streams = (offered(nodes, pods, seed=s, in_file_order=in_file_order) for s in range(seeds))
    return [optimum(nodes, stream, sharing, time_limit) for stream in streams], "file" if in_file_order else "sampled"


def run_optimum(
    nodes_csv: Path, pods_csv: Path, sharing: str, seeds: int, time_limit: float = 120.0, order: str = "auto"
) -> Row:
    """Per seed and on average: what the command prints."""
    bounds, used = seed_bounds(nodes_csv, pods_csv, sharing, seeds, time_limit, order)
    mean: Row = {
        "seed": "mean",
        "offered_gpus": round(statistics.fmean(b.offered_gpus for b in bounds), 2),
        "served_gpus": round(statistics.fmean(b.served.bound for b in bounds), 2),
        "unallocated_gpus": round(statistics.fmean(b.unallocated_gpus for b in bounds), 2),
        "status": "/".join(dict.fromkeys(b.status for b in bounds)),
        "gap_gpus": max(b.gap_gpus for b in bounds),
        "seconds": round(statistics.fmean(b.seconds for b in bounds), 2),
    }
    return {
        "pods_file": pods_csv.name,
        "sharing": sharing,
        "order": used,
        "cluster_gpus": bounds[0].cluster_gpus,
        "seeds": [{"seed": seed, **bound.row()} for seed, bound in enumerate(bounds)],
        "mean": mean,
    }


def _figure(rows: Sequence[Row], policy: str, metric: str) -> float:
    found = [r[metric] for r in rows if r["policy"] == policy]
    if len(found) != 1 or not isinstance(found[0], int | float):
        raise ValueError(f"expected one row of {policy!r} with its {metric}, found {len(found)}")
    return float(found[0])


def gap_closed(
    rows: Sequence[Row],
    optimum: float,
    policy: str = "ladder",
    rivals: Sequence[str] = BASELINES,
    metric: str = "unallocated_gpus",
) -> float | None:
    """The share of the gap between the best of ``rivals`` and the optimum that ``policy`` closes, from the
    replay's rows of one pods file and sharing mode (``bench.placement.run_config`` or its ``--json``) and the
    optimum's mean over the same seeds: (best - policy) / (best - optimum) for ``unallocated_gpus``, the same with
    the signs turned for ``served_gpus``. 1.0 is the optimum, 0.0 no better than the best rival, negative worse;
    None when the best rival already meets the bound."""
    sign = -1 if metric == "served_gpus" else 1  # fewer unallocated GPUs are better, more served ones
    best = min(sign * _figure(rows, p, metric) for p in rivals)
    gap = best - sign * optimum
    if gap <= 0:
        return None
    return (best - sign * _figure(rows, policy, metric)) / gap


COLUMNS = ("seed", "offered_gpus", "served_gpus", "unallocated_gpus", "status", "gap_gpus", "seconds")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.optimum", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=Path, default=NODES_CSV)
    parser.add_argument("--pods", type=Path, default=PODS_CSVS[0])
    parser.add_argument("--sharing", choices=SHARINGS, default="tenant")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--order", choices=("auto", "sampled", "file"), default="auto")
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per solve; then the dual bound")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    report = run_optimum(args.nodes, args.pods, args.sharing, args.seeds, args.time_limit, args.order)
    if args.json:
        print(json.dumps(report))
        return
    print(f"{report['pods_file']} ({report['sharing']}, {report['order']}, {report['cluster_gpus']} GPUs)\n")
    seeds, mean = report["seeds"], report["mean"]
    assert isinstance(seeds, list)
    assert isinstance(mean, dict)
    rows = [*seeds, mean]
    print("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS))
    print("\n".join("| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows))


if __name__ == "__main__":
    main()
