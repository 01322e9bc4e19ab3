"""The placement engine: a request and a tenant's policy in, a placement or a refusal with reasons out.

Pure Python over ``FleetState``. The packing policy, and why, is in ``docs/placement.md``. Two policies:

- ``fragmentation`` (the default): each whole-GPU request, MIG slice and soft share goes where it raises the
  expected fragmentation of its pool least, measured against the recent workload (``workload.py``: a decayed
  histogram of the requests the engine sees), plus the scarcity of the pool's model for requests that cannot use
  another; ties go as under ``best-fit``;
- ``best-fit``: whole GPUs on the node with the fewest free GPUs that still fit, ties broken towards the NVLink
  domain with the fewest free GPUs, so that whole domains stay free for large gangs; MIG: the partly used GPU
  whose state leaves the least after placing (tightest fit), at the start that keeps the most valuable profiles
  placeable, a fresh GPU only when no partly used one fits; soft shares: the tenant's own shared GPU with the
  least room that still fits, never another tenant's.

Under both: gangs are all members or none, with ``topology="nvlink"`` inside the single domain that fits most
tightly, and all of a gang's nodes on one RDMA fabric with one version set (driver, CUDA, NCCL, firmware); bare metal
takes whole free nodes, from the most used domains first. ``place`` applies the decision to the state;
``release`` undoes it.

The engine is built in layers, one module each: ``whole_gpus.py`` chooses the node for whole GPUs (the base the
others build on), ``gangs.py`` places gangs, ``shares.py`` MIG slices and soft shares, ``preemption.py`` places a
request by taking back spot work (``place_preempting``); this module holds the entry points, the checks and whole
hosts (bare metal, confidential VMs). What it is asked and answers is ``decision.py``.

A request that carries its ``Pricing`` goes only to pools (GPU model x region) whose shape has an effective price;
when none of the pools the tenant may use has one, it is refused ``not_priced`` (docs/billing.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace

from provisioning.domain.capacity_classes import CLASSES, DEFAULT_CLASS
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.decision import (
    Device,
    HostTake,
    Placement,
    Refused,
    Request,
    mig_milli,
    milli_of,
)
from provisioning.domain.placement.gangs import GangPlacement
from provisioning.domain.placement.isolation import Reason, Refusal, TenantPolicy, check_rung, hall_allowed
from provisioning.domain.placement.mig import place, remove
from provisioning.domain.placement.preemption import PreemptingPlacement
from provisioning.domain.placement.shares import SharePlacement
from provisioning.domain.placement.state import FULL_SHARE, FleetState, NodeSlot
from provisioning.domain.placement.whole_gpus import EPSILON, Reach, room_of
from provisioning.domain.placement.workload import Pool, Shape
from provisioning.domain.rungs import RUNGS

POLICIES = ("fragmentation", "best-fit")
RETRIES = 8  # nodes a one-node request skips, one by one, when it would break a reservation's rule, before its hall


class PlacementEngine(GangPlacement, SharePlacement, PreemptingPlacement):
    def __init__(self, state: FleetState, policy: str = "fragmentation", *, keep_whole: float = 0.0) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown placement policy {policy!r}; one of {', '.join(POLICIES)}")
        if not 0.0 <= keep_whole < 1.0:
            raise ValueError(f"keep_whole is a share of a pool's GPUs, from 0 up to 1; got {keep_whole!r}")
        self.state = state
        self.policy = policy
        self.keep_whole = keep_whole
        self._snapshot = None  # the workload as the current decision reads it

    # --- entry points ------------------------------------------------------------------------------------------

    def place(self, request: Request, policy: TenantPolicy, *, quota_milli: int | None = None) -> Placement | Refused:
        return self._place(request, policy, quota_milli, observe=True)

    def preview(self, request: Request, policy: TenantPolicy, *, quota_milli: int | None = None) -> Placement | Refused:
        """Where ``place`` would put the request now, leaving the engine exactly as it found it: the request is not
        counted in the workload the fragmentation score learns from (the last decision's snapshot is read as it
        stands), and the decision is released inside a ``FleetState.trial`` before it is answered. What a serverless
        endpoint going idle asks, to pull its image in advance where its next replica is likely to go."""
        with self.state.trial():  # the indexes' order too: ties between equal nodes break as they did
            result = self._place(request, policy, quota_milli, observe=False)
            if isinstance(result, Placement):
                self.release(result)
        return result

    def _place(
        self, request: Request, policy: TenantPolicy, quota_milli: int | None, *, observe: bool, reach: str = "any"
    ) -> Placement | Refused:
        """``reach``, for reserved work: ``home`` (its reservation's own nodes only), ``pool`` (the rest of the pool
        only), ``any`` (home first)."""
        refusal = self._validate(request)
        if refusal:
            return Refused((refusal,))
        used_before = self.state.tenant_milli[policy.tenant_id]
        if quota_milli is not None and used_before + milli_of(request) > quota_milli:
            return self._over_quota(milli_of(request), used_before, quota_milli)
        halls, residency = self._halls(request, policy)
        if request.reservation is not None:
            drawn = self._drawn(request, policy, halls)
            if isinstance(drawn, Refusal):
                return Refused((drawn,))
            request, halls = drawn
        if not halls:
            return Refused(tuple(residency) or (Refusal(Reason.NO_CAPACITY, "No such GPUs in the fleet."),))
        groups = self._priced(request, halls)
        if isinstance(groups, Refusal):
            return Refused((groups,))
        if self.policy == "fragmentation" and observe:
            self._observe(request, policy.tenant_id, halls)
            self._snapshot = self.state.workload.snapshot()
        blocked: list[Refusal] = []
        result: Placement | None = None
        for sold, sold_halls in groups:
            result = self._decide_keeping(sold, policy, sold_halls, blocked, reach)
            if result is not None:
                break
        if result is not None:
            used = self.state.tenant_milli[policy.tenant_id]
            if quota_milli is not None and used > quota_milli:  # bare metal is known only once nodes are chosen
                self.release(result)
                return self._over_quota(used - used_before, used_before, quota_milli)
            return result
        if blocked:
            return Refused(tuple(blocked[:1]))
        what = self._describe(request)
        return Refused((Refusal(Reason.NO_CAPACITY, f"No capacity for {what} right now."),))

    def _decide(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> Placement | None:
        halls = list(halls)
        while True:
            self._host = (request.cpu_milli, request.memory_mib)
            try:
                placed = self._decide_shape(request, policy, halls, blocked)
            finally:
                self._host = (0, 0)
            if placed is None or not (request.side_cpu_milli or request.side_memory_mib):
                return placed
            hall = self.state.nodes[placed.devices[0].node_id].hall.code
            beside = self._beside(placed, request, policy, hall)
            if beside is not None:
                return beside
            halls.remove(hall)  # the members fit there, their side pods did not: the next hall
            if not halls:
                return None

    def _beside(self, placed: Placement, request: Request, policy: TenantPolicy, hall: str) -> Placement | None:
        """The job's pods without a GPU (``Request.side_cpu_milli``) together on one node of its members' model and
        ``hall``, chosen as CPU-only work is (``_cpu_only``: a node with no GPU free first, and of those its
        members' own). None, with the members given back, when no node there holds them."""
        side = Request(
            rung=request.rung,
            models=(placed.model,),
            cpu_milli=request.side_cpu_milli,
            memory_mib=request.side_memory_mib,
        )
        self._host = (side.cpu_milli, side.memory_mib)
        try:
            found = self._cpu_only(side, policy, [hall], near=frozenset(d.node_id for d in placed.devices))
        finally:
            self._host = (0, 0)
        if found is None:
            self.release(placed)
            return None
        return replace(placed, side=found.host[0])

    def _decide_shape(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> Placement | None:
        if request.cpu_only:
            return self._cpu_only(request, policy, halls)
        if request.nodes:
            return self._bare_metal(request, policy, halls)
        if RUNGS[request.rung].attested:
            return self._confidential(request, policy, halls, blocked)
        if request.mig_profile is not None:
            return self._mig(request, policy, halls, blocked)
        if request.share is not None:
            return self._soft(request, policy, halls, blocked)
        if request.gang_size > 1:
            return self._gang(request, policy, halls, blocked)
        return self._whole(request, policy, halls)

    # --- reservations ----------------------------------------------------------------------------------------

    def _drawn(self, request: Request, policy: TenantPolicy, halls: list[str]) -> tuple[Request, list[str]] | Refusal:
        """A reserved request narrowed to its reservation's pool, or why it cannot draw on it."""
        reservation = self.state.reservations.get(request.reservation or 0)
        if reservation is None or reservation.tenant_id != policy.tenant_id:
            return Refusal(Reason.RESERVATION, f"The tenant holds no reservation {request.reservation}.")
        room = reservation.gpus * FULL_SHARE - self.state.reserved_milli[reservation.id]
        need = milli_of(request)
        if need > room:
            return Refusal(
                Reason.RESERVATION,
                f"Reservation {reservation.id} has {room / FULL_SHARE:g} of its {reservation.gpus} GPUs left; this "
                f"needs {need / FULL_SHARE:g}.",
            )
        if reservation.model not in request.models or reservation.hall not in halls:
            return Refusal(
                Reason.RESERVATION,
                f"Reservation {reservation.id} is for {reservation.model} in {reservation.hall}, which this request "
                "may not use.",
            )
        return replace(request, models=(reservation.model,)), [reservation.hall]

    def _decide_keeping(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal], reach: str = "any"
    ) -> Placement | None:
        """``_decide``, stamped with the request's class and reservation and counted, by the reservations' rules
        (docs/capacity.md): the owner's reserved work on its reservation's own nodes first, else elsewhere in the
        pool; other work that may not be preempted never on a reservation's nodes, nor where it would leave a
        reservation unable to take a request within its room (``FleetState.keeps_room``); spot work anywhere."""
        if not self.state.reservations or CLASSES[request.capacity_class].preemptible:
            return self._decide_within(request, policy, halls, blocked, None)
        homes: dict[int, tuple[NodeSlot, ...]] = {}
        pools: list[tuple[str, str]] = []
        for model in request.models:
            for hall in halls:
                found = self.state.homes((model, hall))
                if found:
                    homes.update(found)
                    pools.append((model, hall))
        rid = request.reservation
        own = homes.pop(rid, None) if rid is not None else None
        others = frozenset(node.id for nodes in homes.values() for node in nodes)
        if own is not None and rid is not None and self._keep_own and request.gang_size == 1 and not request.nodes:
            # The first pass keeps the reservation's own nodes whole for its large jobs: a job smaller than a node
            # goes onto one its work already shares, or onto the pool's other nodes, never a whole one of its own.
            shared = self.state.reserved_on_node
            whole = frozenset(n.id for n in own if request.gpus < len(n.gpus) and not shared[(rid, n.id)])
            own = tuple(n for n in own if n.id not in whole)
            others |= whole
        reaches = [Reach(skip=others, pools=tuple(pools))]
        if own is not None:
            home = {"home": [Reach(only=own, pack=True)], "pool": []}.get(reach, [Reach(only=own)])
            reaches = home + reaches if reach != "home" else home
        for where in reaches:
            result = self._decide_within(request, policy, halls, blocked, where)
            if result is not None:
                return result
        return None

    def _decide_within(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal], reach: Reach | None
    ) -> Placement | None:
        """One try of ``_decide_keeping``: a placement that breaks a reservation's rule is taken back, and the next
        try skips its node (up to ``RETRIES`` nodes, for a request on one node) or, after that, its hall."""
        halls = list(halls)
        tried: set[int] = set()
        one_node = not request.nodes and request.gang_size == 1
        # The owner's reserved work, on its first pass, keeps what its own reservation's room needs when it can: a
        # small job does not break the last node a large one within the room would take, while another node holds it.
        own_pool = self._own_pool(request) if self._keep_own and reach is not None else None
        keeping = own_pool is not None and self.state.keeps_room(own_pool)
        while halls:
            self._reach = reach if not tried or reach is None else replace(reach, skip=reach.skip | tried)
            try:
                result = self._decide(request, policy, halls, blocked)
            finally:
                self._reach = None
            if result is None:
                return None
            if request.capacity_class is not DEFAULT_CLASS or request.reservation is not None:
                result = replace(result, capacity_class=request.capacity_class, reservation=request.reservation)
                self._count(result, 1)
            if reach is None:
                return result
            over = self._over_kept(result, reach.skip)
            if over is None and keeping and own_pool is not None and not self.state.keeps_room(own_pool):
                over = own_pool[1]
            if over is None:
                return result
            self.release(result)
            nodes = {d.node_id for d in result.devices}
            if one_node and len(nodes) == 1 and len(tried) < RETRIES:
                tried |= nodes
            else:
                halls.remove(over)
        return None

    def _own_pool(self, request: Request) -> tuple[str, str] | None:
        """The pool of the reservation the request draws on (None: no reservation, or not one the state holds)."""
        reservation = self.state.reservations.get(request.reservation) if request.reservation is not None else None
        return reservation.pool if reservation is not None else None

    def _over_kept(self, placement: Placement, owned: frozenset[int]) -> str | None:
        """A hall where the placement took a node of another reservation (``owned``: those nodes, as they were
        before it) or left a reservation unable to take a request within its room, if any."""
        state = self.state
        for d in placement.devices:
            if d.node_id in owned:
                return state.nodes[d.node_id].hall.code
        for pool in {(placement.model, state.nodes[d.node_id].hall.code) for d in placement.devices}:
            if not state.keeps_room(pool, besides=placement.reservation):
                return pool[1]
        return None

    def _count(self, placement: Placement, sign: int) -> None:
        """Keep the reservations' use and spot work's whole GPUs with a placement put in (1) or taken out (-1)."""
        state = self.state
        if placement.reservation is not None:
            state.reserved_milli[placement.reservation] += sign * placement.milli
            on_node = Counter(d.node_id for d in placement.devices)
            for node_id, devices in on_node.items():
                key = (placement.reservation, node_id)
                state.reserved_on_node[key] += sign * devices
                jobs = state.reserved_jobs.setdefault(key, Counter())
                jobs[devices] += sign
                if jobs[devices] <= 0:
                    del jobs[devices]
                    if not jobs:
                        del state.reserved_jobs[key]
        if CLASSES[placement.capacity_class].preemptible:
            for d in placement.devices:
                if d.mig_profile is None and d.share_milli is None:
                    state.spot_whole[(placement.model, state.nodes[d.node_id].hall.code)] += sign
                    state.spot_on_node[d.node_id] += sign

    def _priced(self, request: Request, halls: list[str]) -> list[tuple[Request, list[str]]] | Refusal:
        """The request narrowed to the pools that sell its shape at a price: groups of its models (in its order)
        with the halls each group is priced in, tried one after the other. A price book priced alike in every
        region the request may use (the usual one) gives one group, the request as it came. No priced pool among
        the halls the tenant may use: ``not_priced``, naming the SKU of the first pool that offers the shape."""
        pricing = request.pricing
        if pricing is None:
            return [(request, halls)]
        state = self.state
        groups: dict[tuple[str, ...], list[str]] = {}
        unpriced: tuple[str, str] | None = None
        for model in request.models:
            offered = [hall for hall in halls if model in state.models_in_hall[hall]]
            sold = tuple(hall for hall in offered if (model, state.halls[hall].region) in pricing.priced)
            if sold:
                groups.setdefault(sold, []).append(model)
            elif offered and unpriced is None:
                unpriced = (model, state.halls[offered[0]].region)
        if not groups:
            model, region = unpriced or (request.models[0], state.halls[halls[0]].region)
            sku = pricing.sku(model, region)
            what = self._describe(replace(request, models=(model,)))
            return Refusal(
                Reason.NOT_PRICED,
                f"{sku} has no price yet: {what} in {region} cannot be billed, so it is not sold. Ask for another "
                "shape or region, or ask the operator to price it.",
                sku=sku,
            )
        if len(groups) == 1:
            ((sold, models),) = groups.items()
            if len(sold) == len(halls) and len(models) == len(request.models):
                return [(request, halls)]
        return [(replace(request, models=tuple(models)), list(sold)) for sold, models in groups.items()]

    @staticmethod
    def _over_quota(need: int, used: int, quota: int) -> Refused:
        left = max(quota - used, 0) / FULL_SHARE
        return Refused((Refusal(Reason.QUOTA, f"This needs {need / FULL_SHARE:g} GPUs of quota; {left:g} are left."),))

    def apply(self, placement: Placement) -> None:
        """Put a placement decided earlier (read back from the database) into the state."""
        state = self.state
        tenant = placement.tenant_id
        self._count(placement, 1)
        for take in placement.takes:
            state.take_host(state.nodes[take.node_id], take.cpu_milli, take.memory_mib)
        for node_id in placement.held_nodes:
            state.hold_node(state.nodes[node_id], tenant)
        for device in placement.devices:
            node = state.nodes[device.node_id]
            gpu = node.gpus[device.gpu_index]
            if node.cc_mode:
                state.hold_node(node, tenant)
            if device.mig_profile is not None and device.mig_start is not None:
                kind = CATALOG[placement.model].mig_profiles[device.mig_profile]
                state.set_mig(gpu, place(gpu.mig, kind, device.mig_start), tenant, mig_milli(kind), placement.dedicated)
            elif device.share_milli is not None:
                state.set_soft(gpu, tenant, placement.performance, device.share_milli)
            else:
                state.hold_whole(gpu, tenant)

    def release(self, placement: Placement) -> None:
        state = self.state
        tenant = placement.tenant_id
        self._count(placement, -1)
        for take in placement.takes:
            state.take_host(state.nodes[take.node_id], -take.cpu_milli, -take.memory_mib)
        for device in placement.devices:
            node = state.nodes[device.node_id]
            gpu = node.gpus[device.gpu_index]
            if device.mig_profile is not None and device.mig_start is not None:
                kind = CATALOG[placement.model].mig_profiles[device.mig_profile]
                state.set_mig(gpu, remove(gpu.mig, kind, device.mig_start), tenant, -mig_milli(kind), False)
            elif device.share_milli is not None:
                state.set_soft(gpu, tenant, placement.performance, -device.share_milli)
            elif gpu.whole_tenant == tenant:
                state.release_whole(gpu)
            if node.cc_mode and node.holder == tenant and all(g.free for g in node.gpus):
                state.hold_node(node, None)  # the tenant's last GPU on a confidential host is gone
        for node_id in placement.held_nodes:
            state.hold_node(state.nodes[node_id], None)

    # --- the workload ----------------------------------------------------------------------------------------

    def _observe(self, request: Request, tenant: int, halls: list[str]) -> None:
        """Count the request in the histogram of every pool it accepts (bare metal and confidential hosts are
        whole hosts outside the general pool: nothing to fragment)."""
        if request.nodes or request.cpu_only or RUNGS[request.rung].attested:
            return
        state = self.state
        entries: list[tuple[Pool, Shape]] = []
        offered: set[str] = set()
        for hall in halls:
            offered |= state.models_in_hall[hall]
            for model in request.models:
                if (model, hall) not in state.by_free:
                    continue
                if request.mig_profile is not None:
                    shape = Shape(kind=CATALOG[model].mig_profiles[request.mig_profile])
                elif request.share is not None:
                    shape = Shape(milli=request.share.milli, owner=(tenant, request.share.mode))
                else:
                    shape = Shape(gpus=request.gpus)
                entries.append(((model, hall), shape))
        if entries:
            constrained = not offered <= set(request.models)
            host = (request.cpu_milli, request.memory_mib)  # per member: what one node's host is asked
            state.workload.observe(entries, milli_of(request), constrained, host)

    # --- checks ----------------------------------------------------------------------------------------------

    def _validate(self, request: Request) -> Refusal | None:
        bad = check_rung(request.rung, request.performance)
        if bad:
            return bad
        if request.cpu_milli < 0 or request.memory_mib < 0:
            return Refusal(Reason.INVALID_ISOLATION, "CPU and memory are asked in amounts of 0 or more.")
        shapes = sum(bool(x) for x in (request.gpus, request.mig_profile, request.share, request.nodes))
        if shapes != 1 and not (request.cpu_only and request.gang_size == 1):
            return Refusal(
                Reason.INVALID_ISOLATION, "Ask for exactly one of: gpus, mig_profile, share, nodes; or CPUs alone."
            )
        if RUNGS[request.rung].whole_nodes != bool(request.nodes):
            return Refusal(Reason.INVALID_ISOLATION, "Bare metal is sold in whole nodes, and only bare metal is.")
        if request.gang_size > 1 and not request.gpus:
            return Refusal(Reason.INVALID_ISOLATION, "A gang's members are whole GPUs.")
        for model in request.models:
            spec = CATALOG.get(model)
            if spec is None:
                return Refusal(Reason.INVALID_ISOLATION, f"Unknown GPU model {model}.")
            if request.mig_profile is not None and spec.profile_kind(request.mig_profile) is None:
                return Refusal(Reason.INVALID_ISOLATION, f"{model} has no MIG profile {request.mig_profile}.")
            if RUNGS[request.rung].attested and not spec.cc_capable:
                return Refusal(Reason.INVALID_ISOLATION, f"{model} cannot run confidential VMs.")
        if request.share is not None and not 0 < request.share.milli < FULL_SHARE:
            return Refusal(Reason.INVALID_ISOLATION, "A soft share is a fraction of one GPU, above 0 and below 1.")
        return None

    def _halls(self, request: Request, policy: TenantPolicy) -> tuple[list[str], list[Refusal]]:
        """Halls the tenant may use that hold at least one acceptable model, and why the others were dropped."""
        allowed: list[str] = []
        refused: list[Refusal] = []
        for code, hall in self.state.halls.items():
            if not self.state.models_in_hall[code] & set(request.models):
                continue
            why = hall_allowed(policy, hall)
            if why is None and request.regions is not None and hall.region not in request.regions:
                why = Refusal(Reason.RESIDENCY, f"Region {hall.region} was not asked for.")
            if why is None:
                allowed.append(code)
            else:
                refused.append(why)
        return allowed, refused

    def _describe(self, request: Request) -> str:
        models = " or ".join(request.models)
        if request.cpu_only:
            return f"{_host_words(request.cpu_milli, request.memory_mib)} beside {models} GPUs"
        if request.nodes:
            return f"{request.nodes} whole {models} node(s)"
        if request.mig_profile:
            return f"a {request.mig_profile} MIG slice of {models}"
        if request.share:
            return f"a {request.share.milli / 10:g}% {request.share.mode} share of {models}"
        gang = f"{request.gang_size} x " if request.gang_size > 1 else ""
        side = ""
        if request.side_cpu_milli or request.side_memory_mib:
            side = f" and {_host_words(request.side_cpu_milli, request.side_memory_mib)} beside them"
        return f"{gang}{request.gpus} {models} GPU(s){side}"

    # --- CPU-only work ------------------------------------------------------------------------------------------

    def _cpu_only(
        self, request: Request, policy: TenantPolicy, halls: list[str], near: frozenset[int] = frozenset()
    ) -> Placement | None:
        """CPU and memory without a GPU (a Ray head, an MPI launcher, a Slurm controller): on the node whose free
        GPUs it fragments least (``_host_fragmentation``), then one of the nodes ``near`` (a job's own members'),
        then the one with the most CPU left per free GPU (a node with no GPU free first: its CPU feeds nothing else),
        then the lower id. O(nodes of the accepted pools)."""
        best: tuple[float, bool, float, int, NodeSlot] | None = None
        for node in self._host_candidates(request, halls):
            fragments = self._host_fragmentation(node, (node.model, node.hall.code), 0)
            free = node.free + sum(room_of(gpu) for gpu in node.gpus) / FULL_SHARE
            spare = (node.cpu_milli - node.cpu_used - request.cpu_milli) / free if free else float("inf")
            ranked = (round(fragments / EPSILON) * EPSILON, node.id not in near, -spare, node.id)
            if best is None or ranked < best[:4]:
                best = (*ranked, node)
        return self._take_cpu_only(request, policy, best[4] if best is not None else None)

    def _host_candidates(self, request: Request, halls: list[str]) -> Iterator[NodeSlot]:
        """The general nodes of the request's pools, within the decision's reach, whose CPU and memory hold it."""
        reach = self._reach
        skip = reach.skip if reach is not None else frozenset()
        only = {n.id for n in reach.only} if reach is not None and reach.only is not None else None
        for model in request.models:
            for hall in halls:
                for node in self.state.pool_nodes.get((model, hall), ()):
                    reachable = node.general and node.id not in skip and (only is None or node.id in only)
                    if reachable and self._host_fits(node):
                        yield node

    def _take_cpu_only(self, request: Request, policy: TenantPolicy, node: NodeSlot | None) -> Placement | None:
        if node is None:
            return None
        take = HostTake(node.id, request.cpu_milli, request.memory_mib)
        self.state.take_host(node, take.cpu_milli, take.memory_mib)
        return self._placement(request, policy, node.model, [], host=(take,))

    # --- whole hosts -----------------------------------------------------------------------------------------------

    def _bare_metal(self, request: Request, policy: TenantPolicy, halls: list[str]) -> Placement | None:
        chosen: list[NodeSlot] = []
        for model in request.models:
            candidates = []
            for hall in halls:
                buckets = self.state.by_free.get((model, hall))
                if buckets:
                    skip = self._reach.skip if self._reach is not None else frozenset()
                    candidates += [
                        n for b in buckets[1:] for n in b.values() if n.free == len(n.gpus) and n.id not in skip
                    ]
            candidates.sort(key=lambda n: (self.state.domain_free[n.nvlink_domain], n.id))
            if len(candidates) >= request.nodes:
                chosen = candidates[: request.nodes]
                break
        if not chosen:
            return None
        devices: list[Device] = []
        for node in chosen:
            devices += self._take_whole(node, len(node.gpus), policy.tenant_id)
            self.state.hold_node(node, policy.tenant_id)
        return self._placement(request, policy, chosen[0].model, devices, tuple(n.id for n in chosen))

    def _confidential(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> Placement | None:
        """Whole GPUs on a CC host in CC mode; the whole host goes to one tenant (docs/design.md §3 rule 3).
        Never on a host whose CPU TEE is unknown: when only such hosts would fit, the refusal says so."""
        hall_set = set(halls)
        best: NodeSlot | None = None
        tee_unknown = 0
        for node in self.state.cc_nodes:
            if node.state != "ready" or node.hall.code not in hall_set or node.model not in request.models:
                continue
            if node.holder not in (None, policy.tenant_id) or node.free < request.gpus or not self._host_fits(node):
                continue
            if not node.confidential:
                tee_unknown += 1
                continue
            # Prefer a host the tenant already holds, then the tightest fit.
            key = (node.holder is None, node.free)
            if best is None or key < (best.holder is None, best.free):
                best = node
        if best is None:
            if tee_unknown:
                blocked.append(
                    Refusal(
                        Reason.CC_TEE_UNKNOWN,
                        f"The only confidential-computing hosts with room ({tee_unknown}) have no declared CPU TEE "
                        "(SEV-SNP or TDX), so no confidential VM can be started or attested there.",
                    )
                )
            return None
        devices = [Device(best.id, best.hostname, g.index, g.uuid) for g in best.gpus if g.free][: request.gpus]
        for d in devices:
            gpu = best.gpus[d.gpu_index]
            gpu.whole_tenant = policy.tenant_id
            self.state.tenant_milli[policy.tenant_id] += FULL_SHARE
        if best.holder is None:
            self.state.hold_node(best, policy.tenant_id)
        # Not in ``held_nodes``: those are bare-metal hosts, held by (and wiped after) one allocation. A CC host is
        # held while any of the tenant's GPUs on it is (``apply`` and ``release`` follow the devices), so it stays
        # the tenant's when this VM stops and another of its VMs still runs there.
        return self._placement(request, policy, best.model, devices)


def _host_words(cpu_milli: int, memory_mib: int) -> str:
    return f"{cpu_milli / 1000:g} CPUs and {memory_mib} MiB"
