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

A request that carries its ``Pricing`` goes only to pools (GPU model x region) whose shape has an effective price;
when none of the pools the tenant may use has one, it is refused ``not_priced`` (docs/billing.md).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from provisioning.placement.catalog import CATALOG
from provisioning.placement.isolation import (
    RUNGS,
    SOFT_SHARING,
    Performance,
    Reason,
    Refusal,
    Rung,
    Security,
    TenantPolicy,
    check_rung,
    hall_allowed,
    may_join_mig_gpu,
    may_join_soft_gpu,
)
from provisioning.placement.mig import COMPUTE_SLICES, EMPTY, GEOMETRY, MigKind, best_start, place, remove
from provisioning.placement.state import (
    FULL_SHARE,
    MAX_GPUS_PER_NODE,
    Buckets,
    FleetState,
    GangGroup,
    GpuSlot,
    NodeSlot,
)
from provisioning.placement.workload import EMPTY_VIEW, Pool, PoolView, Shape, Snapshot, scarcity

TIE_BREAK_SCAN = 32  # candidates looked at for the domain tie-break; bounds the cost of a decision
POLICIES = ("fragmentation", "best-fit")
LEVEL_SCAN = 32  # a tenant's soft-share levels scored per pool, fullest first; bounds the cost of a decision
EPSILON = 1e-9  # scores closer than this are a tie (float sums in a different order)
BucketsOf = Callable[[tuple[str, str]], Buckets | None]  # (model, hall) -> the free-count buckets to choose from


@dataclass(frozen=True)
class Share:
    mode: Performance
    milli: int  # share of one GPU in thousandths, 1..999


@dataclass(frozen=True)
class Pricing:
    """What the price book says of a request's shape at the moment of the decision: the (GPU model, region) pools
    that sell it at an effective price, and the name of the SKU a pool would sell it as (what a refusal names).
    The engine never reads a price: it only leaves out the pools that have none."""

    priced: frozenset[tuple[str, str]]
    sku: Callable[[str, str], str]  # (model, region) -> the SKU's name


@dataclass(frozen=True)
class Request:
    rung: Rung
    models: tuple[str, ...]
    gpus: int = 0  # whole GPUs (per gang member)
    mig_profile: str | None = None
    share: Share | None = None
    nodes: int = 0  # bare metal
    gang_size: int = 1
    topology: str | None = None  # "nvlink": every member inside one NVLink domain
    regions: frozenset[str] | None = None  # narrows the tenant's residency for this request
    pricing: Pricing | None = None  # None: placed without asking the price book (pure uses: benchmarks, planners)

    @property
    def performance(self) -> Performance:
        if self.mig_profile is not None:
            return Performance.MIG
        if self.share is not None:
            return self.share.mode
        return Performance.WHOLE_GPU


@dataclass(frozen=True)
class Device:
    node_id: int
    hostname: str
    gpu_index: int
    gpu_uuid: str
    mig_profile: str | None = None
    mig_start: int | None = None
    share_milli: int | None = None


@dataclass(frozen=True)
class Placement:
    tenant_id: int
    rung: Rung
    performance: Performance
    security: Security
    model: str
    devices: tuple[Device, ...]
    held_nodes: tuple[int, ...] = ()  # bare-metal hosts given whole to the tenant
    dedicated: bool = False


@dataclass(frozen=True)
class Refused:
    reasons: tuple[Refusal, ...]

    @property
    def code(self) -> Reason:
        return self.reasons[0].code

    @property
    def message(self) -> str:
        return self.reasons[0].message


def milli_of(request: Request) -> int:
    """What a request uses of the tenant's GPU quota, in milli-GPU (a MIG slice counts its compute share)."""
    members = request.gang_size
    if request.nodes:
        return 0  # counted when the nodes are known (their GPU count)
    if request.mig_profile is not None:
        kind = _kind(request.models[0], request.mig_profile)
        return mig_milli(kind) if kind else 0
    if request.share is not None:
        return request.share.milli
    return request.gpus * FULL_SHARE * members


def mig_milli(kind: MigKind) -> int:
    return math.ceil(GEOMETRY[kind].compute * FULL_SHARE / COMPUTE_SLICES)


def _kind(model: str, profile: str) -> MigKind | None:
    spec = CATALOG.get(model)
    return spec.profile_kind(profile) if spec else None


def mig_join_refusal(gpu: GpuSlot, policy: TenantPolicy, security: Security) -> Refusal | None:
    """Why the tenant may not have a MIG slice on this partly used GPU (rule 2), None when it may."""
    others = any(t != policy.tenant_id for t in gpu.mig_tenants)
    return may_join_mig_gpu(policy, security, others, gpu.mig_dedicated)


class PlacementEngine:
    def __init__(self, state: FleetState, policy: str = "fragmentation") -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown placement policy {policy!r}; one of {', '.join(POLICIES)}")
        self.state = state
        self.policy = policy
        self._snapshot: Snapshot | None = None  # the workload as the current decision reads it

    # --- entry points ------------------------------------------------------------------------------------------

    def place(self, request: Request, policy: TenantPolicy, *, quota_milli: int | None = None) -> Placement | Refused:
        refusal = self._validate(request)
        if refusal:
            return Refused((refusal,))
        used_before = self.state.tenant_milli[policy.tenant_id]
        if quota_milli is not None and used_before + milli_of(request) > quota_milli:
            return self._over_quota(milli_of(request), used_before, quota_milli)
        halls, residency = self._halls(request, policy)
        if not halls:
            return Refused(tuple(residency) or (Refusal(Reason.NO_CAPACITY, "No such GPUs in the fleet."),))
        groups = self._priced(request, halls)
        if isinstance(groups, Refusal):
            return Refused((groups,))
        if self.policy == "fragmentation":
            self._observe(request, policy.tenant_id, halls)
            self._snapshot = self.state.workload.snapshot()
        blocked: list[Refusal] = []
        result: Placement | None = None
        for sold, sold_halls in groups:
            result = self._decide(sold, policy, sold_halls, blocked)
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
        if request.nodes:
            return self._bare_metal(request, policy, halls)
        if request.rung is Rung.CONFIDENTIAL_VM:
            return self._confidential(request, policy, halls, blocked)
        if request.mig_profile is not None:
            return self._mig(request, policy, halls, blocked)
        if request.share is not None:
            return self._soft(request, policy, halls, blocked)
        if request.gang_size > 1:
            return self._gang(request, policy, halls, blocked)
        return self._whole(request, policy, halls)

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
        if request.nodes or request.rung is Rung.CONFIDENTIAL_VM:
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
            state.workload.observe(entries, milli_of(request), constrained)

    def _view(self, key: Pool) -> PoolView:
        return self._snapshot.pool(key) if self._snapshot is not None else EMPTY_VIEW

    def _scarcity(self, key: Pool) -> float:
        state = self.state
        return scarcity(self._view(key).exclusive, state.pool_free[key], state.free_gpus)

    # --- checks ----------------------------------------------------------------------------------------------

    def _validate(self, request: Request) -> Refusal | None:
        bad = check_rung(request.rung, request.performance)
        if bad:
            return bad
        shapes = sum(bool(x) for x in (request.gpus, request.mig_profile, request.share, request.nodes))
        if shapes != 1:
            return Refusal(Reason.INVALID_ISOLATION, "Ask for exactly one of: gpus, mig_profile, share, nodes.")
        if (request.rung is Rung.BARE_METAL) != bool(request.nodes):
            return Refusal(Reason.INVALID_ISOLATION, "Bare metal is sold in whole nodes, and only bare metal is.")
        if request.gang_size > 1 and not request.gpus:
            return Refusal(Reason.INVALID_ISOLATION, "A gang's members are whole GPUs.")
        for model in request.models:
            spec = CATALOG.get(model)
            if spec is None:
                return Refusal(Reason.INVALID_ISOLATION, f"Unknown GPU model {model}.")
            if request.mig_profile is not None and spec.profile_kind(request.mig_profile) is None:
                return Refusal(Reason.INVALID_ISOLATION, f"{model} has no MIG profile {request.mig_profile}.")
            if request.rung is Rung.CONFIDENTIAL_VM and not spec.cc_capable:
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
        if request.nodes:
            return f"{request.nodes} whole {models} node(s)"
        if request.mig_profile:
            return f"a {request.mig_profile} MIG slice of {models}"
        if request.share:
            return f"a {request.share.milli / 10:g}% {request.share.mode} share of {models}"
        gang = f"{request.gang_size} x " if request.gang_size > 1 else ""
        return f"{gang}{request.gpus} {models} GPU(s)"

    # --- whole GPUs --------------------------------------------------------------------------------------------

    def _best_node(
        self, models: Iterable[str], halls: list[str], need: int, skip: AbstractSet[int] = frozenset()
    ) -> NodeSlot | None:
        return self._best_node_of(models, halls, need, skip)

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
    ) -> tuple[float, NodeSlot] | None:
        """The node whose ``need`` free GPUs raise the expected fragmentation least, and that rise (milli-GPU).

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
                        if node.id in skip:
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

    def _placement(
        self, request: Request, policy: TenantPolicy, model: str, devices: list[Device], held: tuple[int, ...] = ()
    ) -> Placement:
        return Placement(
            tenant_id=policy.tenant_id,
            rung=request.rung,
            performance=request.performance,
            security=RUNGS[request.rung].security,
            model=model,
            devices=tuple(devices),
            held_nodes=held,
            dedicated=policy.dedicated_hardware,
        )

    # --- gangs ---------------------------------------------------------------------------------------------------

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
        for _ in range(members):  # the group holds them all: each member finds a node
            node = self._best_node_of((model,), halls, per, buckets_of=self.group_buckets(group))
            if node is None:
                raise AssertionError("a gang group counted room it did not have")
            taken += self._take_whole(node, per, policy.tenant_id)
        return self._placement(request, policy, model, taken)

    def _gang_from_buckets(self, request: Request, policy: TenantPolicy, buckets: Buckets, single: int) -> Placement:
        """An NVLink gang inside one group: on the tightest node that holds it whole, else on the group's nodes
        with the most free GPUs first (the fewest nodes)."""
        per, remaining = request.gpus, request.gang_size
        if single:
            nodes = [next(iter(buckets[single].values()))]
        else:
            nodes = [n for free in range(MAX_GPUS_PER_NODE, per - 1, -1) for n in list(buckets[free].values())]
        devices: list[Device] = []
        for node in nodes:
            while remaining and node.free >= per:
                devices += self._take_whole(node, per, policy.tenant_id)
                remaining -= 1
            if not remaining:
                break
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

    # --- whole hosts -----------------------------------------------------------------------------------------------

    def _bare_metal(self, request: Request, policy: TenantPolicy, halls: list[str]) -> Placement | None:
        chosen: list[NodeSlot] = []
        for model in request.models:
            candidates = []
            for hall in halls:
                buckets = self.state.by_free.get((model, hall))
                if buckets:
                    candidates += [n for b in buckets[1:] for n in b.values() if n.free == len(n.gpus)]
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
            if node.holder not in (None, policy.tenant_id) or node.free < request.gpus:
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

    # --- MIG and soft shares ---------------------------------------------------------------------------------------

    def _fresh_gpu(self, models: Iterable[str], halls: list[str]) -> GpuSlot | None:
        """A free GPU on the node with the fewest free GPUs (keeps empty nodes empty for whole-GPU work)."""
        node = self._best_node(models, halls, 1)
        if node is None:
            return None
        return next(g for g in node.gpus if g.free)

    def _mig(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> Placement | None:
        if self.policy == "fragmentation":
            choice = self._scored_mig(request, policy, halls, blocked)
        else:
            choice = self._best_fit_mig(request, policy, halls, blocked)
        if choice is None:
            return None
        gpu, start, kind = choice
        self.state.set_mig(
            gpu, place(gpu.mig, kind, start), policy.tenant_id, mig_milli(kind), policy.dedicated_hardware
        )
        node = gpu.node
        device = Device(node.id, node.hostname, gpu.index, gpu.uuid, request.mig_profile, start)
        return self._placement(request, policy, node.model, [device])

    def _scored_mig(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> tuple[GpuSlot, int, MigKind] | None:
        """The partly used GPU (one per distinct MIG state) where the slice, at its most valuable start, raises the
        expected fragmentation least, ties towards the tightest; a fresh GPU, from the node and pool the score
        prefers, only when no partly used one fits (cutting a fresh GPU takes a whole GPU from everybody)."""
        security = RUNGS[request.rung].security
        profile = request.mig_profile or ""
        best: tuple[tuple[float, int, int, int], GpuSlot, int, MigKind] | None = None
        for rank, model in enumerate(request.models):
            kind = CATALOG[model].mig_profiles[profile]
            for hall in halls:
                view = self._view((model, hall))
                for mig_state, gpus in self.state.mig_by_state.get((model, hall), {}).items():
                    fit = best_start(mig_state, kind)
                    if fit is None:
                        continue
                    after = place(mig_state, kind, fit[0])
                    score = view.mig_fragmentation(after) - view.mig_fragmentation(mig_state)
                    key = (round(score / EPSILON) * EPSILON, 0, fit[1], rank)
                    if best is not None and key >= best[0]:
                        continue
                    for gpu in gpus.values():
                        why = mig_join_refusal(gpu, policy, security)
                        if why is None:
                            best = (key, gpu, fit[0], kind)
                            break
                        if not blocked:
                            blocked.append(why)
        if best is not None:
            return best[1:]
        for rank, model in enumerate(request.models):
            kind = CATALOG[model].mig_profiles[profile]
            fit = best_start(EMPTY, kind)
            if fit is None:
                continue
            leaves = partial(PoolView.mig_fragmentation, state=place(EMPTY, kind, fit[0]))
            found = self._scored_node((model,), halls, 1, leaves=leaves)
            if found is None:
                continue
            key = (round(found[0] / EPSILON) * EPSILON, 1, fit[1], rank)
            if best is None or key < best[0]:
                best = (key, next(g for g in found[1].gpus if g.free), fit[0], kind)
        return None if best is None else best[1:]

    def _best_fit_mig(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> tuple[GpuSlot, int, MigKind] | None:
        security = RUNGS[request.rung].security
        profile = request.mig_profile or ""
        best: tuple[int, GpuSlot, int, MigKind] | None = None
        for model in request.models:
            kind = CATALOG[model].mig_profiles[profile]
            for hall in halls:
                for mig_state, gpus in self.state.mig_by_state.get((model, hall), {}).items():
                    fit = best_start(mig_state, kind)
                    if fit is None or (best is not None and fit[1] >= best[0]):
                        continue
                    for gpu in gpus.values():
                        why = mig_join_refusal(gpu, policy, security)
                        if why is None:
                            best = (fit[1], gpu, fit[0], kind)
                            break
                        if not blocked:
                            blocked.append(why)
            if best is not None:
                break
        if best is None:
            for model in request.models:
                fresh = self._fresh_gpu((model,), halls)
                kind = CATALOG[model].mig_profiles[profile]
                fit = best_start(EMPTY, kind)
                if fresh is not None and fit is not None:
                    best = (fit[1], fresh, fit[0], kind)
                    break
        if best is None:
            return None
        _, gpu, start, kind = best
        return gpu, start, kind

    def _soft(
        self, request: Request, policy: TenantPolicy, halls: list[str], blocked: list[Refusal]
    ) -> Placement | None:
        share = request.share
        if share is None or share.mode not in SOFT_SHARING:
            return None
        why = may_join_soft_gpu(policy, None)
        if why is not None:
            blocked.append(why)
            return None
        best = self._soft_gpu(request, share, policy, halls)
        if best is None:
            return None
        self.state.set_soft(best, policy.tenant_id, share.mode, share.milli)
        node = best.node
        device = Device(node.id, node.hostname, best.index, best.uuid, share_milli=share.milli)
        return self._placement(request, policy, node.model, [device])

    def _soft_gpu(self, request: Request, share: Share, policy: TenantPolicy, halls: list[str]) -> GpuSlot | None:
        if self.policy == "fragmentation":
            return self._scored_soft_gpu(request, share, policy, halls)
        return self._best_fit_soft_gpu(request, share, policy, halls)

    def _scored_soft_gpu(
        self, request: Request, share: Share, policy: TenantPolicy, halls: list[str]
    ) -> GpuSlot | None:
        """The tenant's own shared GPU (of this mode) where the share raises the expected fragmentation least: the
        room a share leaves is worth what the tenant's own shares of that mode can use of it, nobody else may
        (``PoolView.soft_usable``). Up to 32 share levels per pool, fullest first; ties towards the fullest GPU.
        A fresh GPU, the one whose node and pool the score prefers, only when none of the tenant's fits: joining
        takes nothing anyone else could use, a fresh GPU takes a whole one from everybody (which a thin
        histogram, with no whole-GPU requests in it yet, would not price)."""
        owner = (policy.tenant_id, share.mode)
        best: tuple[tuple[float, int, int], GpuSlot] | None = None
        for rank, model in enumerate(request.models):
            for hall in halls:
                pool = self.state.soft_pools.get((policy.tenant_id, share.mode, model, hall))
                if pool is None:
                    continue
                view = self._view((model, hall))
                top = bisect_right(pool.levels, FULL_SHARE - share.milli)
                for used in reversed(pool.levels[max(0, top - LEVEL_SCAN) : top]):
                    room = FULL_SHARE - used
                    score = view.soft_fragmentation(owner, room - share.milli) - view.soft_fragmentation(owner, room)
                    key = (round(score / EPSILON) * EPSILON, -used, rank)
                    if best is None or key < best[0]:
                        best = (key, next(iter(pool.by_used[used].values())))
        if best is not None:
            return best[1]
        left = FULL_SHARE - share.milli
        found = self._scored_node(request.models, halls, 1, leaves=lambda view: view.soft_fragmentation(owner, left))
        return next(g for g in found[1].gpus if g.free) if found is not None else None

    def _best_fit_soft_gpu(
        self, request: Request, share: Share, policy: TenantPolicy, halls: list[str]
    ) -> GpuSlot | None:
        """The tenant's own shared GPU of this mode with the least room that still fits, else a fresh GPU."""
        best: GpuSlot | None = None
        for model in request.models:
            for hall in halls:
                pool = self.state.soft_pools.get((policy.tenant_id, share.mode, model, hall))
                gpu = pool.fullest_fitting(FULL_SHARE - share.milli) if pool else None
                if gpu is not None and (best is None or gpu.soft_used > best.soft_used):
                    best = gpu
        return best if best is not None else self._fresh_gpu(request.models, halls)
