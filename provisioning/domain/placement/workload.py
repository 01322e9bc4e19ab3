"""What the fleet is being asked for, and how much of each pool's free capacity that demand cannot use.

The engine's default score (``docs/placement.md``, "The fragmentation score") follows the FGD idea (Weng et al.,
"Beware of Fragmentation", USENIX ATC'23): free capacity is only worth what the requests that arrive can use of
it. A GPU's *fragmentation* is its free capacity times the share of the recent requests that cannot use it, and
each request goes where it raises the fleet's fragmentation least. Three ingredients, all learned as requests
arrive, none configured:

- ``Workload``: a decayed histogram of recent requests per pool (GPU model, hall): the shape (whole GPUs, a MIG
  kind, a soft share's size, tenant and mode), counted in every pool the request accepts. Each request's weight
  halves every ``HALF_LIFE`` requests, so the score follows a workload that changes.
- ``Snapshot``: the histogram normalised into the probabilities a decision reads (cumulative, so a lookup is a
  bisect), rebuilt every ``REFRESH`` requests; the fragmentation of each MIG state is cached on it.
- Scarcity: per pool, the GPU demand that only some pools can serve (requests that do not accept every pool),
  against the pool's free GPUs. A request that could go elsewhere pays, per GPU it takes from a pool, the
  probability that the pool's remaining supply falls short of that constrained demand.

Pure Python; no Django.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import accumulate

from provisioning.domain.placement.mig import COMPUTE_SLICES, MigKind, MigState, legal_starts
from provisioning.domain.rungs import Performance

# A request's weight halves after this many later requests. Long enough that a shape asked by 1% of the requests
# is seen about 20 times inside one half-life (a stable estimate), short enough to follow a workload that shifts
# within a day of a busy fleet.
HALF_LIFE = 2000
# Requests between two snapshots: the probabilities move by well under 1% in that many requests at this half-life,
# and rebuilding costs O(shapes), so a decision never pays for it.
REFRESH = 64
FULL = 1000  # milli-GPU

Pool = tuple[str, str]  # (GPU model, hall code)
SoftClass = tuple[int, Performance]  # (tenant, soft-sharing mode): only these shares may join each other's GPUs


@dataclass(frozen=True, slots=True)
class Shape:
    """What one request needs of one pool: ``gpus`` whole GPUs on a node, a MIG ``kind``, or a soft share of
    ``milli`` for ``owner`` (tenant and mode)."""

    gpus: int = 0
    kind: MigKind | None = None
    milli: int = 0
    owner: SoftClass | None = None


@dataclass(slots=True)
class _PoolCounts:
    whole: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    mig: dict[MigKind, float] = field(default_factory=lambda: defaultdict(float))
    soft: dict[SoftClass, dict[int, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    soft_by_mode: dict[Performance, dict[int, float]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(float))
    )
    total: float = 0.0
    exclusive_milli: float = 0.0  # GPU demand of requests that accept this pool but not every pool, split evenly
    # (GPUs on one node, CPU in milli-cores, memory in MiB) -> weight: what the requests ask of a node's host beside
    # its GPUs (a MIG slice or soft share counts one GPU); only requests that ask some
    host: dict[tuple[int, int, int], float] = field(default_factory=lambda: defaultdict(float))


# ``PoolView._soft_cumulative``: the owner's sizes, their cumulative counts and weight, every tenant's likewise.
SoftSizes = tuple[list[int], list[float], float, list[int], list[float], float]


@dataclass(slots=True)
class PoolView:
    """One pool's probabilities, over every recent request (including those that cannot use the pool)."""

    excluded: float  # share of requests that cannot use this pool at all
    whole_above: tuple[float, ...]  # whole_above[f]: share asking more than f whole GPUs of this pool (f = 0..8)
    mig: dict[MigKind, float]
    exclusive: float  # share of the GPU demand that only some pools (this one among them) can serve
    # Soft-share sizes per owner, read from the live histogram the first time an owner is asked about in this
    # snapshot (a fleet has many tenants, a decision concerns one): sorted sizes and cumulative shares.
    soft_counts: dict[SoftClass, dict[int, float]] = field(default_factory=dict)
    soft_by_mode: dict[Performance, dict[int, float]] = field(default_factory=dict)
    total: float = 0.0
    unit: float = 1.0  # the weight of the latest request: weights / unit is an effective count of requests
    soft_sizes: dict[SoftClass, SoftSizes | None] = field(default_factory=dict)
    soft_modes: dict[Performance, tuple[list[int], list[float], float]] = field(default_factory=dict)
    # Per free-GPU count f (0..8), the CPU and memory asked by the requests that f free GPUs could hold, sorted, with
    # the share of all requests asking each or more (``host_short``); empty while no request asks any.
    host_tails: tuple[tuple[list[int], list[float], list[int], list[float]], ...] = ()
    mig_frag: dict[MigState, float] = field(default_factory=dict)  # cache: fragmentation of a MIG GPU's state

    def soft_usable(self, owner: SoftClass | None, room: int) -> float:
        """Share of requests that could use ``room`` milli left on a soft GPU of ``owner``."""
        if owner is None:
            return 0.0
        if owner in self.soft_sizes:
            found = self.soft_sizes[owner]
        else:
            found = self.soft_sizes[owner] = self._soft_cumulative(owner)
        if found is None:
            return 0.0
        own_sizes, own_cumulative, own_weight, all_sizes, all_cumulative, all_weight = found
        i, j = bisect_right(own_sizes, room), bisect_right(all_sizes, room)
        return (own_weight * own_cumulative[i - 1] if i else 0.0) + (all_weight * all_cumulative[j - 1] if j else 0.0)

    def _soft_cumulative(self, owner: SoftClass) -> SoftSizes | None:
        """The owner's share sizes and every tenant's of the mode, each with its cumulative count, and the weights
        that make their sum at a size the owner's cumulative share of all requests (None: no history). A tenant's
        own history is thin (one of many tenants), so its size distribution is shrunk towards that of every
        tenant's shares of the mode: the tenant's effective count of recent shares against one pseudo-count per
        size seen in the pool (a tenant with little history is taken to ask like the others; one with much, like
        itself). Every tenant's sizes are read once per snapshot and mode, the owner's once per snapshot."""
        mode = owner[1]
        every = self.soft_modes.get(mode)
        if every is None:
            everyone = self.soft_by_mode.get(mode, {})
            ordered = sorted(everyone)
            cumulative = list(accumulate(map(everyone.__getitem__, ordered)))
            every = self.soft_modes[mode] = (ordered, cumulative, cumulative[-1] if cumulative else 0.0)
        all_sizes, all_cumulative, all_total = every
        own = self.soft_counts.get(owner, {})
        own_total = sum(own.values())
        if not own_total or not all_total:
            return None
        seen, prior = own_total / self.unit, float(len(all_sizes))
        mass = own_total / (self.total or 1.0)  # the owner's share of all requests: only it may use its rooms
        own_sizes = sorted(own)
        own_cumulative = list(accumulate(map(own.__getitem__, own_sizes)))
        scale = mass / (seen + prior)
        return own_sizes, own_cumulative, scale * seen / own_total, all_sizes, all_cumulative, scale * prior / all_total

    def soft_fragmentation(self, owner: SoftClass | None, room: int) -> float:
        """Milli-GPU of ``room`` on a soft GPU that, in expectation, no request can use."""
        return room * max(0.0, 1.0 - self.soft_usable(owner, room)) if room > 0 else 0.0

    def mig_fragmentation(self, state: MigState) -> float:
        """Milli-GPU of a partly used MIG GPU's free compute that, in expectation, no request can use."""
        cached = self.mig_frag.get(state)
        if cached is None:
            usable = sum(p for kind, p in self.mig.items() if legal_starts(state, kind))
            cached = self.mig_frag[state] = state.free_compute * FULL / COMPUTE_SLICES * max(0.0, 1.0 - usable)
        return cached

    def host_short(self, free: int, cpu_left: int | None, memory_left: int | None) -> float:
        """Share of requests that ``free`` free GPUs could hold but whose CPU or memory a host with ``cpu_left`` and
        ``memory_left`` (None: not tracked) cannot: the larger of the two shares, a lower bound of their union."""
        if not self.host_tails or free <= 0:
            return 0.0
        cpus, cpu_tail, memories, memory_tail = self.host_tails[min(free, 8)]
        short = 0.0
        if cpu_left is not None and cpus:
            i = bisect_right(cpus, cpu_left)
            short = cpu_tail[i] if i < len(cpus) else 0.0
        if memory_left is not None and memories:
            i = bisect_right(memories, memory_left)
            short = max(short, memory_tail[i] if i < len(memories) else 0.0)
        return short

    def free_gpu_fragmentation(self, free: int) -> float:
        """Milli-GPU of one wholly free GPU on a node with ``free`` of them that, in expectation, is unusable:
        by requests that cannot use the pool, and by whole-GPU requests larger than the node's free GPUs."""
        return FULL * (self.excluded + self.whole_above[min(free, 8)])

    def take_whole(self, free: int, take: int) -> float:
        """Change of the node's fragmentation when ``take`` of its ``free`` wholly free GPUs are taken: the taken
        ones stop counting, the rest now count against requests larger than what is left."""
        left = free - take
        return left * (self.free_gpu_fragmentation(left) - self.free_gpu_fragmentation(free)) - take * (
            self.free_gpu_fragmentation(free)
        )


EMPTY_VIEW = PoolView(0.0, (0.0,) * 9, {}, 0.0)


# A pool no recent request accepts: all of its free capacity is fragmented for the workload.
IDLE_VIEW = PoolView(1.0, (0.0,) * 9, {}, 0.0)


class Snapshot:
    def __init__(self, pools: dict[Pool, PoolView]) -> None:
        self.pools = pools

    def pool(self, key: Pool) -> PoolView:
        return self.pools.get(key, IDLE_VIEW if self.pools else EMPTY_VIEW)


class Workload:
    """The decayed request histogram. ``observe`` is O(pools the request accepts); ``snapshot`` is cached."""

    def __init__(self, half_life: int = HALF_LIFE, refresh: int = REFRESH) -> None:
        self._growth = 2.0 ** (1.0 / half_life)
        self._refresh = refresh
        self._unit = 1.0  # the weight of the next request; earlier ones stay put, so they decay relatively
        self._total = 0.0
        self._demand = 0.0
        self._pools: dict[Pool, _PoolCounts] = defaultdict(_PoolCounts)
        self._since = 0
        self._snapshot: Snapshot | None = None

    @property
    def total(self) -> float:
        return self._total

    def observe(
        self,
        entries: list[tuple[Pool, Shape]],
        demand_milli: int,
        constrained: bool,
        host: tuple[int, int] = (0, 0),
    ) -> None:
        """Count one request in every pool it accepts, with its shape there (a MIG profile name is a different
        kind on different models). ``constrained``: it does not accept every model its halls offer, so its demand
        weighs on the supply of the pools it does accept. ``host``: the CPU and memory it asks beside its GPUs."""
        unit = self._unit
        self._total += unit
        self._demand += unit * demand_milli
        share = unit * demand_milli / len(entries) if constrained and entries else 0.0
        for key, shape in entries:
            counts = self._pools[key]
            counts.total += unit
            counts.exclusive_milli += share
            if host[0] or host[1]:
                counts.host[(shape.gpus or 1, host[0], host[1])] += unit
            if shape.kind is not None:
                counts.mig[shape.kind] += unit
            elif shape.owner is not None:
                counts.soft[shape.owner][shape.milli] += unit
                counts.soft_by_mode[shape.owner[1]][shape.milli] += unit
            else:
                counts.whole[shape.gpus] += unit
        self._unit *= self._growth
        if self._unit > 1e100:
            self._rescale()
        self._since += 1
        if self._since >= self._refresh:
            self._snapshot = None

    def _rescale(self) -> None:
        s = 1.0 / self._unit
        self._unit, self._total, self._demand = 1.0, self._total * s, self._demand * s
        for counts in self._pools.values():
            counts.total *= s
            counts.exclusive_milli *= s
            for asked in counts.host:
                counts.host[asked] *= s
            for n in counts.whole:
                counts.whole[n] *= s
            for kind in counts.mig:
                counts.mig[kind] *= s
            for sizes in (*counts.soft.values(), *counts.soft_by_mode.values()):
                for milli in sizes:
                    sizes[milli] *= s

    def snapshot(self) -> Snapshot:
        if self._snapshot is None:
            self._snapshot = self._build()
            self._since = 0
        return self._snapshot

    def _build(self) -> Snapshot:
        total = self._total
        if total <= 0:
            return Snapshot({})
        views: dict[Pool, PoolView] = {}
        for key, counts in self._pools.items():
            above = [sum(w for n, w in counts.whole.items() if n > f) / total for f in range(9)]
            views[key] = PoolView(
                excluded=max(0.0, 1.0 - counts.total / total),
                whole_above=tuple(above),
                mig={k: w / total for k, w in counts.mig.items()},
                exclusive=counts.exclusive_milli / self._demand if self._demand else 0.0,
                soft_counts=counts.soft,
                soft_by_mode=counts.soft_by_mode,
                total=total,
                unit=self._unit,
                host_tails=_host_tails(counts.host, total) if counts.host else (),
            )
        return Snapshot(views)


def _host_tails(
    host: dict[tuple[int, int, int], float], total: float
) -> tuple[tuple[list[int], list[float], list[int], list[float]], ...]:
    """``PoolView.host_tails`` from a pool's host histogram: per free-GPU count f, over the requests asking at most
    f GPUs, the sorted CPU and memory values and the share of all requests asking each or more."""

    def tail(values: dict[int, float]) -> tuple[list[int], list[float]]:
        ordered = sorted(values)
        from_here = list(accumulate(values[v] / total for v in reversed(ordered)))[::-1]
        return ordered, from_here  # from_here[i]: the share asking ordered[i] or more

    tails = []
    for free in range(9):
        cpu: dict[int, float] = defaultdict(float)
        memory: dict[int, float] = defaultdict(float)
        for (gpus, c, m), w in host.items():
            if gpus <= free:
                cpu[c] += w
                memory[m] += w
        tails.append((*tail(cpu), *tail(memory)))
    return tuple(tails)


def scarcity(exclusive: float, pool_free: int, fleet_free: int) -> float:
    """The chance that a GPU taken from a pool is one the constrained demand on it will miss: that demand, over
    what the fleet can still serve (its share of the fleet's free GPUs), against the pool's free GPUs; at most 1."""
    if exclusive <= 0.0:
        return 0.0
    if pool_free <= 0:
        return 1.0
    return min(1.0, exclusive * fleet_free / pool_free)
