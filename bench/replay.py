"""One benchmark run: turn pods into engine requests, place them until the offered demand fills the cluster,
time every decision and measure what is left.

Sharing modes for a fractional pod (``gpu_milli`` thousandths of one GPU):

- ``mig``: the smallest covering MIG slice (``mig.smallest_covering``) on the container rung; safe across tenants.
- ``tenant`` (Ladder's policy): a soft share on the serverless rung, ``Share(FRACTIONAL, milli)``, which the
  engine keeps within one tenant; the MIG slice when the tenant's policy forbids soft sharing, or when the soft
  share is refused for ``no_capacity``.
- ``unsafe`` (comparison only, never a product mode): the same soft share, but every fractional pod asks as
  tenant 0, so shares of different tenants co-locate on one GPU; same MIG fallback.

A MIG request names a model-specific profile (``1g.5gb`` on an A100-40GB is ``1g.10gb`` on an 80 GB card, and
``1g.10gb`` means a different kind on each), so a slice acceptable on several models is asked as one request
per group of models sharing the profile name, in the pod's model order; together they are one decision.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from time import perf_counter

from bench.baselines import make_engine
from bench.fgd import FGDEngine, Task, fragmentation_rate, task_of
from bench.trace import TENANTS, Pod, TraceNode, build_fleet
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.decision import Placement, Request, Share
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.isolation import Reason, TenantPolicy
from provisioning.domain.placement.mig import COMPUTE_SLICES, GEOMETRY, MigKind, smallest_covering, stranded_compute
from provisioning.domain.placement.state import FULL_SHARE, FleetState
from provisioning.domain.rungs import Performance, Rung

SHARINGS = ("mig", "tenant", "unsafe")
UNSAFE_TENANT = 0

Attempt = tuple[Request, TenantPolicy]


@dataclass(frozen=True, slots=True)
class Plan:
    """What one pod (or synthetic request) asks the engine, in order."""

    demand_milli: int
    fractional: bool
    soft: Attempt | None  # tried first; only ``no_capacity`` falls through to ``attempts``
    attempts: tuple[Attempt, ...]  # tried in order until one is placed


def mig_requests(models: Sequence[str], kind: MigKind) -> tuple[Request, ...]:
    """One container-rung request per group of models that name ``kind`` alike, in the given model order."""
    groups: dict[str, list[str]] = {}
    for model in models:
        groups.setdefault(CATALOG[model].profile_name(kind), []).append(model)
    return tuple(Request(rung=Rung.CONTAINER, models=tuple(ms), mig_profile=name) for name, ms in groups.items())


class Planner:
    """Pods to plans under one sharing mode. Tenants ``1..round(no_share_ratio * 50)`` forbid soft sharing.
    ``host``: the whole-node model, every request asks its pod's CPU and memory beside its GPUs, and a CPU-only
    pod asks those alone."""

    def __init__(
        self, sharing: str, no_share_ratio: float = 0.0, tenants: int = TENANTS, *, host: bool = False
    ) -> None:
        if sharing not in SHARINGS:
            raise ValueError(f"unknown sharing mode {sharing!r}; one of {', '.join(SHARINGS)}")
        self.sharing = sharing
        self.host = host
        no_share = round(no_share_ratio * tenants)
        self.policies = {t: TenantPolicy(tenant_id=t, allow_soft_sharing=t > no_share) for t in range(1, tenants + 1)}
        self.policies[UNSAFE_TENANT] = TenantPolicy(tenant_id=UNSAFE_TENANT)  # the one "tenant" of unsafe mode
        self._cache: dict[tuple[str, int], Plan] = {}

    def policy(self, tenant: int) -> TenantPolicy:
        if tenant not in self.policies:
            self.policies[tenant] = TenantPolicy(tenant_id=tenant)
        return self.policies[tenant]

    def plan(self, pod: Pod) -> Plan:
        key = (pod.name, pod.tenant)
        if key not in self._cache:
            host = (pod.cpu_milli, pod.memory_mib) if self.host else (0, 0)
            self._cache[key] = self._plan(pod.models, pod.num_gpu, pod.milli, pod.tenant, host)
        return self._cache[key]

    def _plan(
        self, models: tuple[str, ...], num_gpu: int, milli: int, tenant: int, host: tuple[int, int] = (0, 0)
    ) -> Plan:
        policy = self.policy(tenant)
        cpu, memory = host
        if not num_gpu:
            alone = Request(rung=Rung.CONTAINER, models=models, cpu_milli=cpu, memory_mib=memory)
            return Plan(0, False, None, ((alone, policy),))
        if not (num_gpu == 1 and milli < FULL_SHARE):
            whole = Request(rung=Rung.CONTAINER, models=models, gpus=num_gpu, cpu_milli=cpu, memory_mib=memory)
            return Plan(num_gpu * FULL_SHARE, False, None, ((whole, policy),))
        slices = tuple(
            (replace(r, cpu_milli=cpu, memory_mib=memory), policy)
            for r in mig_requests(models, smallest_covering(milli))
        )
        soft: Attempt | None = None
        if self.sharing != "mig" and policy.allow_soft_sharing:
            share = Request(
                rung=Rung.SERVERLESS,
                models=models,
                share=Share(Performance.FRACTIONAL, milli),
                cpu_milli=cpu,
                memory_mib=memory,
            )
            soft = (share, policy if self.sharing == "tenant" else self.policy(UNSAFE_TENANT))
        return Plan(milli, True, soft, slices)

    def fractional(self, models: tuple[str, ...], milli: int, tenant: int) -> Plan:
        return self._plan(models, 1, milli, tenant)

    def whole(self, models: tuple[str, ...], gpus: int, tenant: int) -> Plan:
        return self._plan(models, gpus, FULL_SHARE, tenant)

    def mig(self, model: str, kind: MigKind, tenant: int) -> Plan:
        demand = -(-FULL_SHARE * GEOMETRY[kind].compute // COMPUTE_SLICES)  # its compute share, rounded up
        return Plan(demand, False, None, tuple((r, self.policy(tenant)) for r in mig_requests((model,), kind)))


@dataclass
class Run:
    """The raw figures of one run; ``summary`` turns them into the reported metrics."""

    cluster_gpus: int
    offered_milli: int = 0
    served_milli: int = 0
    times: list[float] = field(default_factory=list)
    routes: Counter[str] = field(default_factory=Counter)
    unallocated_gpus: float = 0.0
    stranded_mig_slices: int = 0
    # Load (percent of the cluster's GPUs offered) -> (unallocated GPUs, fragmentation rate, served GPUs) when the
    # offered demand first reached it (``replay(curve=...)``).
    curve: dict[int, tuple[float, float, float]] = field(default_factory=dict)


def decide(engine: PlacementEngine, plan: Plan) -> tuple[str | None, float]:
    """Place one plan; the route it took (``whole``, ``soft``, ``mig``) or None, and the seconds inside the engine."""
    start = perf_counter()
    if isinstance(engine, FGDEngine):  # FGD learns its target workload from the pods offered, before placing
        engine.expect(task_of(*_firsts(plan)))
    route: str | None = None
    fall_back = True
    if plan.soft is not None:
        got = engine.place(*plan.soft)
        if isinstance(got, Placement):
            route = "soft"
        else:
            fall_back = got.code is Reason.NO_CAPACITY
    if route is None and fall_back:
        for request, policy in plan.attempts:
            if isinstance(engine.place(request, policy), Placement):
                route = "mig" if request.mig_profile is not None else "cpu" if request.cpu_only else "whole"
                break
    return route, perf_counter() - start


def apply(engine: PlacementEngine, plan: Plan, run: Run) -> None:
    route, seconds = decide(engine, plan)
    run.times.append(seconds)
    run.offered_milli += plan.demand_milli
    if route is None:
        refused = "refused_fractional" if plan.fractional else "refused_whole" if plan.demand_milli else "refused_cpu"
        run.routes[refused] += 1
    else:
        run.served_milli += plan.demand_milli
        run.routes[route] += 1


def measure(state: FleetState, run: Run) -> None:
    """Unallocated whole-GPU equivalents (a MIG GPU counts compute_used/7, so stranded slices are unallocated;
    a soft-shared GPU counts soft_used/1000) and stranded MIG compute slices, over every GPU of the fleet."""
    unallocated = 0.0
    stranded = 0
    for node in state.nodes.values():
        for gpu in node.gpus:
            # every policy went through the same state methods; check that none broke a rule doing so
            assert sum((gpu.whole_tenant is not None, not gpu.mig.empty, gpu.soft_tenant is not None)) <= 1
            assert 0 <= gpu.soft_used <= FULL_SHARE
            assert gpu.mig.compute_used <= COMPUTE_SLICES
            if gpu.whole_tenant is not None:
                continue
            if not gpu.mig.empty:
                unallocated += 1 - gpu.mig.compute_used / COMPUTE_SLICES
                stranded += stranded_compute(gpu.mig)
            else:
                unallocated += 1 - gpu.soft_used / FULL_SHARE
    run.unallocated_gpus, run.stranded_mig_slices = unallocated, stranded


def sampled(pods: Sequence[Pod], seed: int) -> Iterator[Pod]:
    """Pods drawn with replacement, seeded: the FGD paper's protocol."""
    rng = random.Random(seed)
    while True:
        yield pods[rng.randrange(len(pods))]


def replay(
    nodes: list[TraceNode],
    pods: Sequence[Pod],
    *,
    policy: str,
    sharing: str,
    seed: int,
    in_file_order: bool,
    no_share_ratio: float = 0.0,
    keep_whole: float = 0.0,
    host: bool = False,
    curve: Sequence[int] = (),
) -> Run:
    """Place pods, never removing any, until the offered GPU demand reaches 100% of the cluster's GPUs (``curve``:
    the largest of its loads, in percent, measuring at each). ``host``: the whole-node model (CPU and memory placed,
    CPU-only pods among the pods)."""
    state = build_fleet(nodes, host=host)
    engine = make_engine(policy, state, seed, keep_whole)
    planner = Planner(sharing, no_share_ratio, host=host)
    run = Run(cluster_gpus=sum(n.gpus for n in nodes))
    capacity = run.cluster_gpus * FULL_SHARE
    loads = sorted(curve) or [100]
    tasks: Counter[Task] = Counter()
    for pod in pods if in_file_order else sampled(pods, seed):
        while loads and run.offered_milli >= capacity * loads[0] // 100:
            if curve:
                measure(state, run)
                rate = fragmentation_rate(state, tasks, run.unallocated_gpus)
                served = run.served_milli / FULL_SHARE
                run.curve[loads[0]] = (round(run.unallocated_gpus, 2), round(rate, 4), served)
            loads.pop(0)
        if not loads:
            break
        plan = planner.plan(pod)
        if curve:
            tasks[task_of(*_firsts(plan))] += 1
        apply(engine, plan, run)
    measure(state, run)
    return run


def _firsts(plan: Plan) -> tuple[Request, list[Request]]:
    first, *more = (plan.soft,) if plan.soft is not None else plan.attempts
    return first[0], [r for r, _ in more]


def summary(policy: str, sharing: str, runs: list[Run]) -> dict[str, object]:
    """Metrics averaged over the runs (seeds); latency percentiles over every decision of every run."""
    times = sorted(t for r in runs for t in r.times)
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    routes: Counter[str] = Counter()
    for r in runs:
        routes.update(r.routes)
    return {
        "policy": policy,
        "sharing": sharing,
        "served_ratio": round(statistics.fmean(r.served_milli / r.offered_milli for r in runs), 4),
        "unallocated_gpus": round(statistics.fmean(r.unallocated_gpus for r in runs), 1),
        "stranded_mig_slices": round(statistics.fmean(r.stranded_mig_slices for r in runs), 1),
        "decisions_per_s": round(len(times) / sum(times)),
        "p50_ms": round(cuts[49] * 1000, 4),
        "p99_ms": round(cuts[98] * 1000, 4),
        "seeds": len(runs),
        "cluster_gpus": runs[0].cluster_gpus,
        "offered_gpus": round(statistics.fmean(r.offered_milli for r in runs) / 1000, 1),
        "served_gpus": round(statistics.fmean(r.served_milli for r in runs) / 1000, 1),
        # allocated beyond the demand it serves: a MIG slice rounds a fractional pod up (0.6 GPU -> 7g)
        "rounding_gpus": round(
            statistics.fmean(r.cluster_gpus - r.unallocated_gpus - r.served_milli / 1000 for r in runs), 1
        )
        + 0.0,  # no "-0.0" from float noise
        "decisions": len(times),
        "routes": {k: round(v / len(runs), 1) for k, v in sorted(routes.items())},
    }
