"""What the placement engine is asked and what it answers: a ``Request`` (a ``Share`` of one GPU when it asks for
soft sharing), and a ``Placement`` of ``Device``s or a ``Refused`` with its reasons; and what a request takes of the
tenant's GPU quota. Pure Python, like the engine (``engine.py``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from provisioning.domain.capacity_classes import DEFAULT_CLASS, CapacityClass
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.isolation import Reason, Refusal
from provisioning.domain.placement.mig import COMPUTE_SLICES, GEOMETRY, MigKind
from provisioning.domain.placement.state import FULL_SHARE
from provisioning.domain.rungs import Performance, Rung, Security


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
    capacity_class: CapacityClass = DEFAULT_CLASS
    reservation: int | None = None  # reserved: the tenant's reservation it draws on
    # The host's CPU (thousandths of a core) and memory (MiB) beside the GPUs, per gang member; taken on the node
    # its GPUs go to. A request with neither GPUs nor any other shape but CPU is CPU-only work (a launcher, a head).
    cpu_milli: int = 0
    memory_mib: int = 0
    # What the job's pods without a GPU take together (``FrameworkFacts.side_host``): on one node of the members'
    # hall beside them (``Placement.side``).
    side_cpu_milli: int = 0
    side_memory_mib: int = 0

    @property
    def cpu_only(self) -> bool:
        return not (self.gpus or self.mig_profile or self.share or self.nodes) and self.cpu_milli > 0

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
class HostTake:
    """CPU and memory a placement takes of one node beside its GPUs."""

    node_id: int
    cpu_milli: int
    memory_mib: int


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
    capacity_class: CapacityClass = DEFAULT_CLASS
    reservation: int | None = None
    host: tuple[HostTake, ...] = ()  # CPU and memory taken beside the devices, per node
    side: HostTake | None = None  # the job's pods without a GPU (its launcher, head, controller), on one node

    @property
    def takes(self) -> tuple[HostTake, ...]:
        """Everything it takes of hosts: beside its devices, and its side pods'."""
        return self.host if self.side is None else (*self.host, self.side)

    @property
    def milli(self) -> int:
        """What its devices take of GPUs, in thousandths (a MIG slice its compute, a soft share its share)."""
        total = 0
        for d in self.devices:
            if d.mig_profile is not None:
                total += mig_milli(CATALOG[self.model].mig_profiles[d.mig_profile])
            else:
                total += d.share_milli if d.share_milli is not None else FULL_SHARE
        return total


@dataclass(frozen=True)
class Refused:
    reasons: tuple[Refusal, ...]

    @property
    def code(self) -> Reason:
        return self.reasons[0].code

    @property
    def message(self) -> str:
        return self.reasons[0].message


def members_on(devices: int, gpus: int) -> int:
    """How many members ``devices`` devices hold, a member being ``gpus`` whole GPUs (0: a MIG slice or a soft
    share, one device each)."""
    return -(-devices // (gpus or 1))


def host_takes(devices: Iterable[Device], gpus: int, cpu_milli: int, memory_mib: int) -> tuple[HostTake, ...]:
    """The CPU and memory a placement takes per node: ``cpu_milli`` and ``memory_mib`` once per member on it, a
    member being ``gpus`` whole GPUs (0: a MIG slice or a soft share, one device each)."""
    if not (cpu_milli or memory_mib):
        return ()
    on_node = Counter(d.node_id for d in devices)
    members = {node: members_on(count, gpus) for node, count in on_node.items()}
    return tuple(HostTake(node, cpu_milli * n, memory_mib * n) for node, n in members.items())


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
