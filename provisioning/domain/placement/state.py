"""The in-memory fleet the engine decides on, with the indexes that keep a decision cheap.

Every change (a placement, a release, a node leaving ``ready``) updates the indexes locally, so a decision
never rebuilds them: whole-GPU choices read buckets of nodes by free-GPU count, MIG choices read partly used
GPUs grouped by their ``MigState``, soft shares read the tenant's own shared GPUs.

``trial`` takes back what changed the indexes' order: a decision placed and released inside it (the engine's
``preview``) leaves the state exactly as it was, down to which of two equal nodes the next decision meets first.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from provisioning.domain.placement.isolation import HallInfo
from provisioning.domain.placement.mig import EMPTY, MigState
from provisioning.domain.placement.workload import Workload
from provisioning.domain.rungs import Performance

G = TypeVar("G")
READY = "ready"
MAX_GPUS_PER_NODE = 8
FULL_SHARE = 1000  # milli-GPU


@dataclass(eq=False, slots=True)
class GpuSlot:
    node: NodeSlot
    index: int
    uuid: str
    whole_tenant: int | None = None
    mig: MigState = EMPTY
    mig_tenants: Counter[int] = field(default_factory=Counter)
    mig_dedicated: int | None = None  # a dedicated-hardware tenant holds slices here: nobody else may
    soft_tenant: int | None = None
    soft_mode: Performance | None = None
    soft_used: int = 0  # milli-GPU

    @property
    def free(self) -> bool:
        return self.whole_tenant is None and self.mig.empty and self.soft_tenant is None


@dataclass(eq=False, slots=True)
class NodeSlot:
    id: int
    hostname: str
    hall: HallInfo
    model: str
    nvlink_domain: str
    versions: tuple[str, ...] = ()
    cc_capable: bool = False
    cc_mode: bool = False
    state: str = READY
    gpus: list[GpuSlot] = field(default_factory=list)
    holder: int | None = None  # a tenant holding the whole host (bare metal, confidential VM host)
    # The CPU TEE of a confidential host ("snp", "tdx"); None: unknown, so it never takes a confidential VM (no
    # runtime to start it in, and no claim its attestation evidence could be held to).
    cpu_tee: str | None = None
    fabric: str = ""  # the RDMA fabric its NICs are cabled to ("": none); a multi-node gang stays on one
    # What the host sells beside its GPUs, after the reserve it keeps for itself (docs/placement.md, "The whole
    # node"): CPU in thousandths of a core and memory in MiB; 0: not tracked, so it never limits a placement.
    cpu_milli: int = 0
    memory_mib: int = 0
    cpu_used: int = 0
    memory_used: int = 0

    @property
    def gang_group(self) -> GangGroup:
        """What every node of one gang shares: the RDMA fabric ("" among nodes without RDMA) and the exact versions
        (driver, CUDA, NCCL, firmware). NCCL and RDMA do not cross fabrics, and a collective whose ranks run
        different NCCL or driver builds can hang or fail in ways no single rank reports."""
        return (self.fabric, self.versions)

    @property
    def confidential(self) -> bool:
        """A confidential-computing host that can take a confidential VM: in CC mode with a known CPU TEE."""
        return self.cc_mode and self.cpu_tee is not None

    @property
    def free(self) -> int:
        return sum(1 for g in self.gpus if g.free)

    @property
    def tracks_host(self) -> bool:
        return bool(self.cpu_milli or self.memory_mib)

    def host_fits(self, cpu_milli: int, memory_mib: int) -> bool:
        """Whether the node's CPU and memory left hold ``cpu_milli`` and ``memory_mib`` (a dimension it does not
        track always does)."""
        return (not self.cpu_milli or self.cpu_used + cpu_milli <= self.cpu_milli) and (
            not self.memory_mib or self.memory_used + memory_mib <= self.memory_mib
        )

    @property
    def general(self) -> bool:
        """In the general pool: ready, not held whole, and not a confidential-computing host."""
        return self.state == READY and self.holder is None and not self.cc_mode


Key = tuple[str, str]  # (GPU model, hall code)
GangGroup = tuple[str, tuple[str, ...]]  # (RDMA fabric, versions): one gang's nodes all share it
DomainGroup = tuple[str, str, tuple[str, ...]]  # (NVLink domain, RDMA fabric, versions): an NVLink gang's group
Buckets = list[dict[int, NodeSlot]]  # free GPU count (index) -> nodes with that many free GPUs
SoftKey = tuple[int, Performance, str, str]  # (tenant, mode, GPU model, hall code)


def _buckets(groups: dict[G, Buckets], group: G) -> Buckets:
    found = groups.get(group)
    if found is None:
        found = groups[group] = [{} for _ in range(MAX_GPUS_PER_NODE + 1)]
    return found


@dataclass(frozen=True)
class Reservation:
    """Whole GPUs of one pool kept for one tenant (docs/capacity.md), on nodes of its own: its home
    (``FleetState.homes``), enough of the pool's nodes to hold ``gpus``. Its reserved work goes there first; other
    work that may not be preempted never does; spot work borrows them until preempted. ``nodes``: the nodes it is
    pinned to, when the caller chose them; otherwise the state chooses."""

    id: int
    tenant_id: int
    model: str
    hall: str
    gpus: int
    nodes: tuple[int, ...] = ()

    @property
    def pool(self) -> Key:
        return (self.model, self.hall)


@dataclass(slots=True)
class SoftPool:
    by_used: dict[int, dict[int, GpuSlot]] = field(default_factory=dict)
    levels: list[int] = field(default_factory=list)  # sorted keys of by_used

    def add(self, gpu: GpuSlot) -> None:
        group = self.by_used.get(gpu.soft_used)
        if group is None:
            group = self.by_used[gpu.soft_used] = {}
            insort(self.levels, gpu.soft_used)
        group[id(gpu)] = gpu

    def discard(self, gpu: GpuSlot, used: int) -> None:
        group = self.by_used.get(used)
        if group is not None and group.pop(id(gpu), None) is not None and not group:
            del self.by_used[used]
            self.levels.pop(bisect_left(self.levels, used))

    def gpus(self) -> Iterator[GpuSlot]:
        for group in self.by_used.values():
            yield from group.values()

    def fullest_fitting(self, room: int, host_fits: Callable[[NodeSlot], bool]) -> GpuSlot | None:
        """A GPU with the most share in use that is still at most ``room``, on a node ``host_fits`` accepts."""
        for used in reversed(self.levels[: bisect_right(self.levels, room)]):
            for gpu in self.by_used[used].values():
                if host_fits(gpu.node):
                    return gpu
        return None


class FleetState:
    def __init__(self) -> None:
        self.nodes: dict[int, NodeSlot] = {}
        self.halls: dict[str, HallInfo] = {}
        self.models_in_hall: dict[str, set[str]] = defaultdict(set)
        self.domains: dict[str, list[NodeSlot]] = defaultdict(list)
        self.domain_free: Counter[str] = Counter()
        self.cc_nodes: list[NodeSlot] = []
        # (model, hall) -> free count -> general nodes with that many free GPUs (count >= 1)
        self.by_free: dict[Key, list[dict[int, NodeSlot]]] = {}
        # (model, hall) -> MigState -> partly used MIG GPUs of general nodes
        self.mig_by_state: dict[Key, dict[MigState, dict[int, GpuSlot]]] = {}
        # tenant -> soft-shared GPUs it holds
        # (tenant, mode, model, hall) -> soft-shared GPUs of general nodes by the share in use, with the used levels
        # sorted, so the fullest GPU that still fits a share is a bisect away however many the tenant holds.
        self.soft_pools: dict[SoftKey, SoftPool] = {}
        self.tenant_milli: Counter[int] = Counter()  # usage in milli-GPU, for quotas
        # The same buckets as ``by_free``, split further by what a gang's nodes must share: per (model, hall), by
        # (fabric, versions) for any gang and by (NVLink domain, fabric, versions) for an NVLink gang. A gang decision
        # reads group capacities from bucket sizes (O(groups x 9)) and never walks the nodes.
        self.gang_groups: dict[Key, dict[GangGroup, Buckets]] = {}
        self.domain_groups: dict[Key, dict[DomainGroup, Buckets]] = {}
        self._node_buckets: dict[int, tuple[Buckets, Buckets, Buckets]] = {}
        self.version = 0  # bumped by every change, so a caller can tell whether a failed step changed anything
        self._node_free: dict[int, int] = {}
        # Wholly free GPUs of general nodes per (model, hall) and in all: the supply the scarcity score weighs.
        self.pool_free: Counter[Key] = Counter()
        self.pool_gpus: Counter[Key] = Counter()  # every GPU of each (model, hall), for what a pool keeps whole
        self.free_gpus = 0
        self.tracks_host = False  # some node states its CPU or memory: placements take them too
        # Reservations by id, what each one's own work holds (milli-GPU), and the whole GPUs spot work holds per
        # (model, hall): what preemption can take back.
        self.reservations: dict[int, Reservation] = {}
        self.reserved_milli: Counter[int] = Counter()
        self.spot_whole: Counter[Key] = Counter()
        self.spot_on_node: Counter[int] = Counter()  # whole GPUs spot work holds, by node
        self.reserved_on_node: Counter[tuple[int, int]] = Counter()  # (reservation, node) -> devices its work holds
        # (reservation, node) -> its allocations there, by the devices each holds on the node (``keeps_room``).
        self.reserved_jobs: dict[tuple[int, int], Counter[int]] = {}
        self.pool_nodes: dict[Key, list[NodeSlot]] = defaultdict(list)
        # Each pool's reservations' homes, with the reservations they were chosen for (``homes``).
        self._homes: dict[Key, tuple[tuple[Reservation, ...], dict[int, tuple[NodeSlot, ...]]]] = {}
        # What the fleet has been asked for lately (the engine's fragmentation score); kept with the state so that
        # it lives as long as the fleet it describes, whichever engine object decides on it.
        self.workload = Workload()
        # Inside ``trial``: each index container as it was before its first change, by identity.
        self._undo: dict[int, tuple[Any, Any]] | None = None

    # --- reservations ------------------------------------------------------------------------------------------

    def homes(self, pool: Key) -> dict[int, tuple[NodeSlot, ...]]:
        """Each of the pool's reservations' own nodes, by reservation id: as many general nodes as hold its GPUs,
        none shared. Its pinned ``nodes`` first, then the nodes its work already holds (so a state rebuilt from the
        database finds its work at home), then the nodes with the most GPUs free or held by spot work, the lowest id
        first. Kept until the pool's reservations change or one of the nodes leaves the general pool."""
        reservations = tuple(sorted((r for r in self.reservations.values() if r.pool == pool), key=lambda r: r.id))
        cached = self._homes.get(pool)
        if cached is not None and cached[0] == reservations and all(n.general for ns in cached[1].values() for n in ns):
            return cached[1]
        found: dict[int, tuple[NodeSlot, ...]] = {}
        if reservations:
            taken: set[int] = set()
            general = [node for node in self.pool_nodes.get(pool, ()) if node.general]
            for r in reservations:
                pinned = set(r.nodes)
                order = sorted(
                    general,
                    key=lambda n: (n.id not in pinned, -self.reserved_on_node[(r.id, n.id)], -self.room_on(n), n.id),
                )
                chosen: list[NodeSlot] = []
                held = 0
                for node in order:
                    if held >= r.gpus:
                        break
                    if node.id not in taken:
                        chosen.append(node)
                        taken.add(node.id)
                        held += len(node.gpus)
                found[r.id] = tuple(chosen)
        self._save(self._homes)
        self._homes[pool] = (reservations, found)
        return found

    def free_on(self, node: NodeSlot) -> int:
        """The node's wholly free GPUs, as the indexes count them (none off the general pool)."""
        return self._node_free[node.id]

    def room_on(self, node: NodeSlot) -> int:
        """The node's whole GPUs that are free or that spot work holds: what its owner could take back."""
        return self._node_free[node.id] + self.spot_on_node[node.id] if node.general else 0

    def room_left(self, reservation: Reservation) -> int:
        """The reservation's unused room in whole GPUs (a partly used GPU counts as used)."""
        return max(0, reservation.gpus * FULL_SHARE - self.reserved_milli[reservation.id]) // FULL_SHARE

    def keeps_room(self, pool: Key, *, besides: int | None = None) -> bool:
        """Whether each of the pool's reservations (``besides``: leaving this one out) keeps what its room may ask
        for, now or by preempting spot work (a node's room: ``room_on``): its own nodes, and what they may lack asked
        of the pool's other nodes, each of those going to one need:

        - a whole node for each node-sized request its room may hold beyond its own whole nodes (``_short``): now,
          or once any of its work has left, since work leaving a node partly used raises the room but not the whole
          nodes;
        - else, when its own nodes have none that takes any single request up to a node, one spare node that does
          (a reservation smaller than a node: counted by the GPU, a node with that many), sized by the whole
          reservation rather than its room now;
        - and in all, the GPUs its room has beyond its own nodes' room."""
        homes = self.homes(pool)
        if not homes:
            return True
        wants: list[int] = []  # one node each, at least this big
        gpus = 0  # and in all
        for rid, nodes in homes.items():
            if rid == besides:
                continue
            reservation = self.reservations[rid]
            rooms = [self.room_on(node) for node in nodes]
            size = max((len(node.gpus) for node in nodes), default=MAX_GPUS_PER_NODE)
            room = self.room_left(reservation)
            own = [size] * self._short(reservation, nodes, rooms, size)
            if not own and max(rooms, default=0) < min(reservation.gpus, size):
                own = [min(reservation.gpus, size)]
            wants += own
            gpus += max(sum(own), room - sum(rooms))
        if not gpus:
            return True
        owned = {node.id for nodes in homes.values() for node in nodes}
        others = sorted((self.room_on(n) for n in self.pool_nodes[pool] if n.id not in owned), reverse=True)
        if sum(others) < gpus or len(others) < len(wants):
            return False
        return all(have >= want for have, want in zip(others, sorted(wants, reverse=True), strict=False))

    def _short(self, reservation: Reservation, nodes: tuple[NodeSlot, ...], rooms: list[int], size: int) -> int:
        """How many whole nodes the reservation's own nodes may lack for node-sized requests within its room: now
        (its room over whole nodes, less its whole nodes), or at worst once its work has left every node but some,
        each of those keeping only its smallest allocation there. Keeping ``k`` nodes that way, smallest first,
        leaves ``reservation.gpus`` less what they keep as room, on all its wholeable nodes but those ``k``."""
        now = self.room_left(reservation) // size - sum(1 for r in rooms if r >= size)
        smallest: list[int] = []  # per own node its work could leave whole: its smallest allocation there
        for node, node_room in zip(nodes, rooms, strict=True):
            if node_room + self.reserved_on_node[(reservation.id, node.id)] >= size:
                jobs = self.reserved_jobs.get((reservation.id, node.id))
                smallest.append(min(jobs) if jobs else 0)
        worst, kept, stays = max(now, reservation.gpus // size - len(smallest)), 0, 0
        for least in sorted(m for m in smallest if m):
            kept, stays = kept + 1, stays + least
            worst = max(worst, max(0, reservation.gpus - stays) // size - (len(smallest) - kept))
        return max(0, worst)

    def kept(self, pool: Key, *, besides: int | None = None) -> tuple[int, int]:
        """What the pool keeps for its reservations (``besides``: leaving this one's out): their unused room in whole
        GPUs, and the nodes they own."""
        gpus = nodes = 0
        homes = self.homes(pool)
        for r in self.reservations.values():
            if r.pool == pool and r.id != besides:
                gpus += -(-max(0, r.gpus * FULL_SHARE - self.reserved_milli[r.id]) // FULL_SHARE)
                nodes += len(homes.get(r.id, ()))
        return gpus, nodes

    def reclaimable(self, pool: Key) -> tuple[int, int]:
        """The pool's whole GPUs that are free or that spot work holds (preemption takes those back), and its
        nodes whose every GPU is."""
        nodes = 0
        for free, bucket in enumerate(self.by_free.get(pool, ())):  # wholly free (a node with none free is in none)
            nodes += sum(1 for node in bucket.values() if free == len(node.gpus))
        for node_id, spot in self.spot_on_node.items():
            node = self.nodes[node_id]
            if spot and (node.model, node.hall.code) == pool and self._node_free[node_id] + spot == len(node.gpus):
                nodes += 1
        return self.pool_free[pool] + self.spot_whole[pool], nodes

    # --- trials ----------------------------------------------------------------------------------------------------

    @contextmanager
    def trial(self) -> Iterator[None]:
        """Changes made inside are for a look only: the caller undoes them (releases what it placed), and on the way
        out every index container is put back as it was, its order included (a dict keeps the order its keys came
        in, and the buckets' order breaks ties between equal nodes). Not nested."""
        if self._undo is not None:
            raise RuntimeError("a trial is already open")
        self._undo = {}
        version = self.version
        try:
            yield
        finally:
            for container, saved in reversed(self._undo.values()):
                if isinstance(container, dict):
                    container.clear()
                    container.update(saved)
                else:
                    container[:] = saved
            self._undo = None
            self.version = version

    def _save(self, container: dict[Any, Any] | list[Any]) -> None:
        """Inside a trial, keep ``container`` as it is before its first change."""
        if self._undo is not None and id(container) not in self._undo:
            self._undo[id(container)] = (container, container.copy())

    # --- building --------------------------------------------------------------------------------------------

    def add_hall(self, hall: HallInfo) -> None:
        self.halls[hall.code] = hall

    def add_node(
        self,
        *,
        id: int,
        hostname: str,
        hall: str,
        model: str,
        gpu_uuids: list[str],
        nvlink_domain: str,
        versions: tuple[str, ...] = (),
        cc_capable: bool = False,
        cc_mode: bool = False,
        state: str = READY,
        cpu_tee: str | None = None,
        fabric: str = "",
        cpu_milli: int = 0,
        memory_mib: int = 0,
    ) -> NodeSlot:
        node = NodeSlot(id, hostname, self.halls[hall], model, nvlink_domain, versions, cc_capable, cc_mode, state)
        node.cpu_tee = cpu_tee or None
        node.fabric = fabric
        node.cpu_milli, node.memory_mib = cpu_milli, memory_mib
        self.tracks_host = self.tracks_host or node.tracks_host
        node.gpus = [GpuSlot(node, i, uuid) for i, uuid in enumerate(gpu_uuids)]
        self.nodes[id] = node
        self.models_in_hall[hall].add(model)
        self.pool_nodes[(model, hall)].append(node)
        self.pool_gpus[(model, hall)] += len(gpu_uuids)
        self.domains[nvlink_domain].append(node)
        if cc_mode:
            self.cc_nodes.append(node)
        self._node_free[id] = 0
        key = (model, hall)
        self._node_buckets[id] = (
            self._bucket(node),
            _buckets(self.gang_groups.setdefault(key, {}), node.gang_group),
            _buckets(self.domain_groups.setdefault(key, {}), (nvlink_domain, *node.gang_group)),
        )
        self._reindex_node(node)
        return node

    # --- index maintenance -------------------------------------------------------------------------------------

    def _bucket(self, node: NodeSlot) -> list[dict[int, NodeSlot]]:
        key = (node.model, node.hall.code)
        if key not in self.by_free:
            self.by_free[key] = [{} for _ in range(MAX_GPUS_PER_NODE + 1)]
        return self.by_free[key]

    def _mig_groups(self, node: NodeSlot) -> dict[MigState, dict[int, GpuSlot]]:
        if self._undo is not None:
            self._save(self.mig_by_state)
        return self.mig_by_state.setdefault((node.model, node.hall.code), {})

    def _unindex_gpu_mig(self, gpu: GpuSlot) -> None:
        groups = self._mig_groups(gpu.node)
        group = groups.get(gpu.mig)
        if group is not None:
            if self._undo is not None:
                self._save(groups)
                self._save(group)
            group.pop(id(gpu), None)
            if not group:
                del groups[gpu.mig]

    def _index_gpu_mig(self, gpu: GpuSlot) -> None:
        if gpu.node.general and not gpu.mig.empty:
            groups = self._mig_groups(gpu.node)
            if self._undo is not None:
                self._save(groups)
                self._save(groups.setdefault(gpu.mig, {}))
            groups.setdefault(gpu.mig, {})[id(gpu)] = gpu

    def _reindex_node(self, node: NodeSlot, gpu: GpuSlot | None = None) -> None:
        """Put a node where its current free count and state say, and its GPUs' MIG and soft shares where theirs
        do: only ``gpu``'s, when only that GPU changed (the node's state did not), else every GPU's, O(GPUs on the
        node)."""
        self.version += 1
        old = self._node_free[node.id]
        free = node.free if node.general else 0
        trial = self._undo is not None
        for buckets in self._node_buckets[node.id]:
            if trial:
                self._save(buckets[old])
                self._save(buckets[free])
            buckets[old].pop(node.id, None)
            if free:
                buckets[free][node.id] = node
        self.domain_free[node.nvlink_domain] += free - old
        self.pool_free[(node.model, node.hall.code)] += free - old
        self.free_gpus += free - old
        self._node_free[node.id] = free
        for changed in node.gpus if gpu is None else (gpu,):
            self._unindex_gpu_mig(changed)
            self._index_gpu_mig(changed)
            if changed.soft_tenant is not None:
                self._unindex_gpu_soft(changed, changed.soft_used)
                self._index_gpu_soft(changed)

    def _soft_pool(self, tenant: int, mode: Performance, node: NodeSlot, used: int) -> SoftPool:
        if self._undo is not None:
            self._save(self.soft_pools)
        pool = self.soft_pools.setdefault((tenant, mode, node.model, node.hall.code), SoftPool())
        if self._undo is not None:
            self._save(pool.by_used)
            self._save(pool.levels)
            if used in pool.by_used:
                self._save(pool.by_used[used])
        return pool

    def _unindex_gpu_soft(self, gpu: GpuSlot, used: int) -> None:
        if gpu.soft_tenant is not None and gpu.soft_mode is not None:
            self._soft_pool(gpu.soft_tenant, gpu.soft_mode, gpu.node, used).discard(gpu, used)

    def _index_gpu_soft(self, gpu: GpuSlot) -> None:
        if gpu.soft_tenant is not None and gpu.soft_mode is not None and gpu.soft_used > 0 and gpu.node.general:
            self._soft_pool(gpu.soft_tenant, gpu.soft_mode, gpu.node, gpu.soft_used).add(gpu)

    def set_node_state(self, node_id: int, state: str) -> None:
        node = self.nodes[node_id]
        node.state = state
        self._reindex_node(node)

    # --- changes to one GPU --------------------------------------------------------------------------------------

    def hold_whole(self, gpu: GpuSlot, tenant: int) -> None:
        gpu.whole_tenant = tenant
        self.tenant_milli[tenant] += FULL_SHARE
        self._reindex_node(gpu.node, gpu)

    def release_whole(self, gpu: GpuSlot) -> None:
        if gpu.whole_tenant is None:
            raise ValueError(f"GPU {gpu.uuid} is not held whole")
        self.tenant_milli[gpu.whole_tenant] -= FULL_SHARE
        gpu.whole_tenant = None
        self._reindex_node(gpu.node, gpu)

    def set_mig(self, gpu: GpuSlot, new: MigState, tenant: int, delta_milli: int, dedicated: bool) -> None:
        self.version += 1
        was_free = gpu.free
        self._unindex_gpu_mig(gpu)
        gpu.mig = new
        if delta_milli > 0:
            gpu.mig_tenants[tenant] += 1
            if dedicated:
                gpu.mig_dedicated = tenant
        else:
            gpu.mig_tenants[tenant] -= 1
            if gpu.mig_tenants[tenant] <= 0:
                del gpu.mig_tenants[tenant]
                if gpu.mig_dedicated == tenant:
                    gpu.mig_dedicated = None
        self.tenant_milli[tenant] += delta_milli
        if was_free != gpu.free:
            self._reindex_node(gpu.node, gpu)
        else:
            self._index_gpu_mig(gpu)

    def set_soft(self, gpu: GpuSlot, tenant: int, mode: Performance, delta_milli: int) -> None:
        self.version += 1
        was_free = gpu.free
        self._unindex_gpu_soft(gpu, gpu.soft_used)
        gpu.soft_used += delta_milli
        self.tenant_milli[tenant] += delta_milli
        if gpu.soft_used > 0:
            gpu.soft_tenant, gpu.soft_mode = tenant, mode
        else:
            gpu.soft_tenant, gpu.soft_mode = None, None
        if was_free != gpu.free:
            self._reindex_node(gpu.node, gpu)  # indexes this GPU's share too
        else:
            self._index_gpu_soft(gpu)

    def take_host(self, node: NodeSlot, cpu_milli: int, memory_mib: int) -> None:
        """Take (or, negative, give back) CPU and memory of a node beside its GPUs."""
        self.version += 1
        node.cpu_used += cpu_milli
        node.memory_used += memory_mib

    def hold_node(self, node: NodeSlot, tenant: int | None) -> None:
        """Give a whole host to a tenant (bare metal, confidential VM host), or take it back (None)."""
        node.holder = tenant
        self._reindex_node(node)

    # --- views ---------------------------------------------------------------------------------------------------

    def nodes_with_free(self, model: str, hall: str, at_least: int) -> list[dict[int, NodeSlot]]:
        buckets = self.by_free.get((model, hall))
        return buckets[at_least:] if buckets else []
