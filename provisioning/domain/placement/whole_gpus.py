"""Whole GPUs: the node a request for ``need`` whole GPUs goes to, under either policy, and taking its GPUs.

The base of the placement engine (``engine.py``): gangs (``gangs.py``) and MIG slices and soft shares (``shares.py``)
find their nodes through it, and so does the defragmentation planner (``defragment.py``). ``fragmentation``: the
node whose GPUs raise the expected fragmentation of their pool least (``_scored_node``); ``best-fit``: the fewest
free GPUs that still hold the request (``_best_fit_node``); under both, ties go to the NVLink domain with the fewest
free GPUs, so that whole domains stay free for large gangs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from provisioning.domain.placement.decision import Device, HostTake, Placement, Request, host_takes
from provisioning.domain.placement.isolation import TenantPolicy
from provisioning.domain.placement.mig import COMPUTE_SLICES
from provisioning.domain.placement.state import (
    FULL_SHARE,
    MAX_GPUS_PER_NODE,
    Buckets,
    FleetState,
    GangGroup,
    GpuSlot,
    NodeSlot,
)
from provisioning.domain.placement.workload import EMPTY_VIEW, Pool, PoolView, Snapshot, scarcity
from provisioning.domain.rungs import RUNGS

TIE_BREAK_SCAN = 32  # candidates looked at for the domain tie-break; bounds the cost of a decision
EPSILON = 1e-9  # scores closer than this are a tie (float sums in a different order)
BucketsOf = Callable[[tuple[str, str]], Buckets | None]  # (model, hall) -> the free-count buckets to choose from


def room_of(gpu: GpuSlot) -> float:
    """What a partly used GPU has left for fractional work (milli-GPU): a soft share's room, a MIG GPU's free
    compute; 0 on a GPU held whole or wholly free."""
    if gpu.soft_tenant is not None:
        return FULL_SHARE - gpu.soft_used
    if not gpu.mig.empty:
        return gpu.mig.free_compute * FULL_SHARE / COMPUTE_SLICES
    return 0.0


@dataclass(frozen=True, slots=True)
class Reach:
    """Where the current decision may put a fresh node's GPUs (reservations' homes, ``FleetState.homes``): only on
    ``only`` (a reservation's own nodes, for its reserved work), never on ``skip`` (the nodes other reservations own,
    for work that may not be preempted)."""

    only: tuple[NodeSlot, ...] | None = None
    skip: frozenset[int] = frozenset()
    pack: bool = False  # on ``only``: the node with the least room free or spot-held, or none (preempt there)
    pools: tuple[tuple[str, str], ...] = ()  # pools with reservations: packed by room, outside ``skip``


class WholeGpuPlacement:
    """The fleet state and the policy the engine decides by, the workload as a decision reads it, and the choice of
    a node for whole GPUs."""

    state: FleetState
    policy: str  # one of engine.POLICIES
    _snapshot: Snapshot | None  # the workload as the current decision reads it
    _reach: Reach | None = None  # where the current decision may go, when reservations narrow it
    # Reserved work's first pass (``place_preempting``): not onto the node its own reservation's next large request
    # needs, while another place takes it (``PlacementEngine._decide_within``).
    _keep_own: bool = False
    # The share of each pool's GPUs kept wholly free for whole-GPU work, scaled by how much of the workload asks for
    # them: a MIG slice or soft share cuts a fresh GPU only while its pool has more free (``_fresh_buckets``); 0
    # keeps none. docs/placement.md, "Keeping GPUs whole".
    keep_whole: float = 0.0
    # The current decision's CPU (milli-core) and memory (MiB) per member, taken beside its GPUs on their node.
    _host: tuple[int, int] = (0, 0)

    # --- the workload ----------------------------------------------------------------------------------------

    def _view(self, key: Pool) -> PoolView:
        return self._snapshot.pool(key) if self._snapshot is not None else EMPTY_VIEW

    def _scarcity(self, key: Pool) -> float:
        state = self.state
        return scarcity(self._view(key).exclusive, state.pool_free[key], state.free_gpus)

    # --- the host beside the GPUs ----------------------------------------------------------------------------------

    def _host_fits(self, node: NodeSlot, members: int = 1) -> bool:
        """Whether the node's CPU and memory left hold ``members`` of the current decision's."""
        cpu, memory = self._host
        return not (cpu or memory) or node.host_fits(cpu * members, memory * members)

    def _host_fragmentation(self, node: NodeSlot, key: Pool, gpus: int, room_left: float = 0.0) -> float:
        """Change of the node's fragmentation by its host (milli-GPU) when ``gpus`` of its free GPUs and the
        decision's CPU and memory are taken, leaving ``room_left`` for fractional work on a GPU it took (milli-GPU),
        as the FGD paper counts a node short of CPU: its free GPUs are fragmented for the recent requests they
        could hold but whose CPU or memory the host left cannot (``PoolView.host_short``), and the room on its partly
        used GPUs (soft shares, MIG) for the fractional ones. Negative when the decision takes capacity its host
        could no longer feed; never below minus its free GPUs (``_least_host_fragmentation`` stops by that)."""
        view = self._view(key)
        if not view.host_tails:
            return 0.0
        free = node.free
        room = sum(room_of(gpu) for gpu in node.gpus)
        cpu = node.cpu_milli - node.cpu_used if node.cpu_milli else None
        memory = node.memory_mib - node.memory_used if node.memory_mib else None

        def fragmented(free: int, room: float, cpu: int | None, memory: int | None) -> float:
            return free * FULL_SHARE * view.host_short(free, cpu, memory) + room * view.host_short(1, cpu, memory)

        before = fragmented(free, room, cpu, memory)
        take_cpu, take_memory = self._host
        return (
            fragmented(
                free - gpus,
                room + room_left,
                cpu - take_cpu if cpu is not None else None,
                memory - take_memory if memory is not None else None,
            )
            - before
        )

    # --- whole GPUs --------------------------------------------------------------------------------------------

    def _best_node(
        self,
        models: Iterable[str],
        halls: list[str],
        need: int,
        skip: AbstractSet[int] = frozenset(),
        buckets_of: BucketsOf | None = None,
    ) -> NodeSlot | None:
        reach = self._reach
        if reach is not None:
            if reach.only is not None:
                return self._tightest(reach.only, models, halls, need, skip | reach.skip, pack=reach.pack)
            if reach.skip:
                skip = reach.skip | skip
            if reach.pools:
                return self._fewest_reclaimable(reach.pools, models, halls, need, skip)
        return self._best_node_of(models, halls, need, skip, buckets_of)

    def _fresh_buckets(self, key: tuple[str, str]) -> Buckets | None:
        """A pool's free-count buckets for a fresh GPU cut for a MIG slice or a soft share: none while the pool has
        no more wholly free GPUs than it keeps for whole-GPU work: ``keep_whole`` of its GPUs, times the share of
        recent requests that ask for whole GPUs of it (the workload: a pool nobody asks whole GPUs of keeps none)."""
        state = self.state
        if self.keep_whole:
            kept = self.keep_whole * state.pool_gpus[key] * self._view(key).whole_above[0]
            if state.pool_free[key] <= kept:
                return None
        return state.by_free.get(key)

    def _fewest_reclaimable(
        self,
        pools: Iterable[tuple[str, str]],
        models: Iterable[str],
        halls: list[str],
        need: int,
        skip: AbstractSet[int],
    ) -> NodeSlot | None:
        """In pools with reservations, work that may not be preempted goes to the node with the fewest GPUs free or
        lent to spot work that still has ``need`` free (best fit, counting spot work's GPUs as room), so that the
        nodes wholly free or lent stay whole for the reservations' overflow; the customer's earlier model first,
        ties towards the fuller NVLink domain, then the lower id. A pool without reservations: the engine's policy."""
        state = self.state
        reserved = set(pools)
        domain_free = state.domain_free
        for model in models:
            keyed = [(model, hall) for hall in halls]
            if not any(key in reserved for key in keyed):
                found = self._best_node_of((model,), halls, need, skip)
            else:
                found = None
                best: tuple[int, int, int, int] | None = None
                for key in keyed:
                    if key not in reserved:
                        other = self._best_node_of((model,), [key[1]], need, skip)
                        candidates = [other] if other is not None else []
                    else:
                        pool = state.pool_nodes.get(key, ())
                        candidates = [n for n in pool if n.general and n.id not in skip and self._host_fits(n)]
                    for n in candidates:
                        free = state.free_on(n)
                        if free >= need:
                            rank = (state.room_on(n), free, domain_free[n.nvlink_domain], n.id)
                            if best is None or rank < best:
                                best, found = rank, n
            if found is not None:
                return found
        return None

    def _tightest(
        self,
        nodes: Iterable[NodeSlot],
        models: Iterable[str],
        halls: list[str],
        need: int,
        skip: AbstractSet[int],
        *,
        pack: bool = False,
    ) -> NodeSlot | None:
        """Among a reservation's own nodes, the one with the fewest free GPUs that still hold ``need`` (under either
        policy: the tenant's nodes are packed tight, so that they stay whole for its large jobs); ties towards the
        fuller NVLink domain, then the lower id. ``pack``: counting the GPUs spot work borrows as room, the node with
        the least room that holds ``need``, and none when spot work holds too much of it (the caller preempts it
        there rather than break a node that is whole but for spot work)."""
        wanted, where = set(models), set(halls)
        state = self.state
        domain_free = state.domain_free
        usable = [
            n
            for n in nodes
            if n.model in wanted and n.hall.code in where and n.general and n.id not in skip and self._host_fits(n)
        ]
        free = state.free_on
        if pack:
            roomy = [n for n in usable if state.room_on(n) >= need]
            best = min(
                roomy, key=lambda n: (state.room_on(n), -free(n), domain_free[n.nvlink_domain], n.id), default=None
            )
            return best if best is not None and free(best) >= need else None
        fits = [n for n in usable if free(n) >= need]
        return min(fits, key=lambda n: (free(n), domain_free[n.nvlink_domain], n.id), default=None)

    def group_buckets(self, group: GangGroup) -> BucketsOf:
        """Reads each pool's buckets of one gang group only (``FleetState.gang_groups``): where a gang member may go."""
        groups = self.state.gang_groups
        return lambda key: groups.get(key, {}).get(group)

    def _best_node_of(
        self,
        models: Iterable[str],
        halls: list[str],
        need: int,
        skip: AbstractSet[int] = frozenset(),
        buckets_of: BucketsOf | None = None,
    ) -> NodeSlot | None:
        """``buckets_of`` narrows the choice to some of each pool's nodes (a gang's group); default the pool's."""
        if self.policy == "fragmentation":
            found = self._scored_node(models, halls, need, skip, buckets_of=buckets_of)
            return found[1] if found else None
        return self._best_fit_node(models, halls, need, skip, buckets_of)

    def _scored_node(
        self,
        models: Iterable[str],
        halls: list[str],
        need: int,
        skip: AbstractSet[int] = frozenset(),
        leaves: Callable[[PoolView], float] | None = None,
        buckets_of: BucketsOf | None = None,
        room: float = 0.0,
    ) -> tuple[float, NodeSlot] | None:
        """The node whose ``need`` free GPUs raise the expected fragmentation least, and that rise (milli-GPU).
        ``room``: what the decision leaves for fractional work on the GPU it takes (a MIG slice's or soft share's
        GPU; ``_host_fragmentation``).

        Scored per (pool, free count): taking GPUs changes a node's fragmentation only through its free count
        (``PoolView.take_whole``), plus what the pool's scarcity charges per GPU taken, plus ``leaves``: the
        fragmentation of what the request leaves on a GPU it only partly uses (a MIG slice, a soft share). Equal
        scores go as best fit would: fewer free GPUs, the customer's earlier model, the fuller NVLink domain."""
        state = self.state
        scored: list[tuple[float, int, int, Pool]] = []
        read = buckets_of or state.by_free.get
        found: dict[Pool, Buckets] = {}
        for rank, model in enumerate(models):
            for hall in halls:
                key = (model, hall)
                buckets = read(key)
                if not buckets:
                    continue
                found[key] = buckets
                view = self._view(key)
                base = need * FULL_SHARE * self._scarcity(key) + (leaves(view) if leaves is not None else 0.0)
                for free in range(need, MAX_GPUS_PER_NODE + 1):
                    if buckets[free]:
                        score = round((base + view.take_whole(free, need)) / EPSILON) * EPSILON  # float noise ties
                        scored.append((score, free, rank, key))
        scored.sort()
        if state.tracks_host:
            return self._least_host_fragmentation(scored, found, need, skip, room)
        i = 0
        while i < len(scored):
            score, free, rank, _ = scored[i]
            j = i
            while j < len(scored) and scored[j][:3] == (score, free, rank):
                j += 1
            node = self._fullest_domain([found[k][free] for *_, k in scored[i:j]], skip)
            if node is not None:
                return score, node
            i = j
        return None

    def _least_host_fragmentation(
        self,
        scored: list[tuple[float, int, int, Pool]],
        found: dict[Pool, Buckets],
        need: int,
        skip: AbstractSet[int],
        room: float,
    ) -> tuple[float, NodeSlot] | None:
        """``_scored_node`` on a fleet that places CPU and memory: among the groups' nodes that hold the decision's
        CPU and memory, the least score plus the change of what the node's host fragments (``_host_fragmentation``);
        per group the first 32 that fit (of at most 128 looked at), ties as ``_scored_node``'s. The groups come in
        score order, and that change is at least minus the node's free GPUs, so the scan stops at the first group
        that cannot do better."""
        best: tuple[float, int, int, int, NodeSlot] | None = None
        domain_free = self.state.domain_free
        for score, free, rank, key in scored:
            if best is not None and score - MAX_GPUS_PER_NODE * FULL_SHARE > best[0]:
                break
            if best is not None and score - free * FULL_SHARE > best[0]:
                continue
            fitting = looked = 0
            for node in found[key][free].values():
                looked += 1
                if looked > 4 * TIE_BREAK_SCAN:
                    break
                if node.id in skip or not self._host_fits(node):
                    continue
                fitting += 1
                if fitting > TIE_BREAK_SCAN:
                    break
                total = round((score + self._host_fragmentation(node, key, need, room)) / EPSILON) * EPSILON
                ranked = (total, free, rank, domain_free[node.nvlink_domain])
                if best is None or ranked < best[:4]:
                    best = (*ranked, node)
        return (best[0], best[4]) if best is not None else None

    def _fullest_domain(self, groups: list[dict[int, NodeSlot]], skip: AbstractSet[int]) -> NodeSlot | None:
        """Among equally good nodes, one in the NVLink domain with the fewest free GPUs (first 32 per group)."""
        best: NodeSlot | None = None
        best_domain_free = 0
        domain_free = self.state.domain_free
        for group in groups:
            seen = 0
            for node in group.values():
                if node.id in skip:
                    continue  # skipped nodes do not use up the scan
                seen += 1
                if seen > TIE_BREAK_SCAN:
                    break
                free = domain_free[node.nvlink_domain]
                if best is None or free < best_domain_free:
                    best, best_domain_free = node, free
        return best

    def _best_fit_node(
        self,
        models: Iterable[str],
        halls: list[str],
        need: int,
        skip: AbstractSet[int] = frozenset(),
        buckets_of: BucketsOf | None = None,
    ) -> NodeSlot | None:
        """Best fit: the fewest free GPUs that still hold ``need``; ties towards the most used NVLink domain."""
        state = self.state
        read = buckets_of or state.by_free.get
        for free in range(need, 9):
            best: NodeSlot | None = None
            best_domain_free = 0
            for model in models:
                for hall in halls:
                    buckets = read((model, hall))
                    if not buckets or not buckets[free]:
                        continue
                    seen = 0
                    for node in buckets[free].values():
                        if node.id in skip or not self._host_fits(node):
                            continue  # skipped nodes do not use up the scan
                        seen += 1
                        if seen > TIE_BREAK_SCAN:
                            break
                        domain_free = state.domain_free[node.nvlink_domain]
                        if best is None or domain_free < best_domain_free:
                            best, best_domain_free = node, domain_free
                if best is not None:
                    return best  # the customer's first acceptable model wins over a later one
        return None

    def _take_whole(self, node: NodeSlot, count: int, tenant: int) -> list[Device]:
        devices: list[Device] = []
        for gpu in node.gpus:
            if len(devices) == count:
                break
            if gpu.free:
                self.state.hold_whole(gpu, tenant)
                devices.append(Device(node.id, node.hostname, gpu.index, gpu.uuid))
        return devices

    def _whole(self, request: Request, policy: TenantPolicy, halls: list[str]) -> Placement | None:
        node = self._best_node(request.models, halls, request.gpus)
        if node is None:
            return None
        devices = self._take_whole(node, request.gpus, policy.tenant_id)
        return self._placement(request, policy, node.model, devices)

    def _give_back(self, devices: list[Device]) -> None:
        """Undo ``_take_whole`` for a decision that did not complete."""
        for d in devices:
            self.state.release_whole(self.state.nodes[d.node_id].gpus[d.gpu_index])

    def _take_host(self, request: Request, devices: list[Device]) -> tuple[HostTake, ...]:
        """Take the request's CPU and memory on each node its devices went to, once per member there
        (``host_takes``). Bare metal takes whole hosts: nothing beside."""
        if request.nodes:
            return ()
        takes = host_takes(devices, request.gpus, request.cpu_milli, request.memory_mib)
        for take in takes:
            self.state.take_host(self.state.nodes[take.node_id], take.cpu_milli, take.memory_mib)
        return takes

    def _placement(
        self,
        request: Request,
        policy: TenantPolicy,
        model: str,
        devices: list[Device],
        held: tuple[int, ...] = (),
        host: tuple[HostTake, ...] | None = None,
    ) -> Placement:
        """The decision as the engine answers it, with the request's CPU and memory taken beside its devices
        (``host``: already taken, for CPU-only work)."""
        return Placement(
            tenant_id=policy.tenant_id,
            rung=request.rung,
            performance=request.performance,
            security=RUNGS[request.rung].security,
            model=model,
            devices=tuple(devices),
            held_nodes=held,
            dedicated=policy.dedicated_hardware,
            host=self._take_host(request, devices) if host is None else host,
        )
