"""Reads that provisioning makes of other apps' data (a tenant's contract as the placement engine sees it), the
fleet's figures the metrics scrape reads, an allocation's RDMA fabric as its API representation states it, and the
fleet as operators read it, the same in the API and the console: drift from the target versions, version skew
within NVLink domains, fragmentation and the rolling upgrade plan; volumes: who mounts each, which ones new work
may mount, and each region's storage per class; and serverless endpoints' cold starts and request times as the API,
the portal and the operators' console publish them (P50/P90/P99, ``provisioning.domain.cold_start``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import Count, Q, QuerySet, Sum

from core.cache import samples_read
from provisioning.domain.cold_start import PHASES, percentiles
from provisioning.domain.fabric import FabricRefused, fabric_of
from provisioning.domain.fleet_document import Rdma
from provisioning.domain.placement.fragmentation import fragmentation
from provisioning.domain.placement.isolation import HallInfo, RegionInfo, TenantPolicy, region_allowed
from provisioning.domain.placement.state import FleetState
from provisioning.domain.rungs import rung_facts, rungs_where
from provisioning.domain.states import HOLDS_DEVICES, TERMINAL, WORKING, AllocationState
from provisioning.domain.upgrades import PlanAllocation, PlanDomain, PlanNode, upgrade_plan, wave_gpu_limit
from provisioning.domain.volumes import COUNTED, MOUNTABLE, PROVISIONED, SnapshotState, VolumeKind
from provisioning.models import (
    Allocation,
    AllocationDevice,
    Cluster,
    EndpointColdStart,
    Hall,
    Node,
    NodeState,
    Region,
    VersionTarget,
    Volume,
    VolumeAttachment,
    VolumeSnapshot,
)
from tenancy.models import Tenant

UNKNOWN = "unknown"


class VersionField(NamedTuple):
    name: str  # in fleet documents, version targets and the API
    attr: str  # the Node field
    label: str  # as the consoles write it


# The versions a node runs, in the order a version set lists them (the placement engine's, the drift's, the skew's).
VERSION_FIELDS = (
    VersionField("driver", "driver_version", "driver"),
    VersionField("cuda", "cuda_version", "CUDA"),
    VersionField("nccl", "nccl_version", "NCCL"),
    VersionField("firmware", "firmware_version", "firmware"),
)


def hall_info(hall: Hall) -> HallInfo:
    """A hall as the residency rules and the engine see it: its code, its region's code and jurisdiction, its
    fence."""
    return HallInfo(hall.code, hall.region.code, hall.region.jurisdiction, hall.fenced_for)


def region_info(region: Region) -> RegionInfo:
    """A region as the residency rules see it: its code, its jurisdiction and the jurisdictions its halls are fenced
    for."""
    fenced = Hall.objects.filter(region=region, fenced_for__isnull=False).values_list("fenced_for", flat=True)
    return RegionInfo(code=region.code, jurisdiction=region.jurisdiction, fenced_for=frozenset(filter(None, fenced)))


def residency_refusal(tenant: Tenant, region: Region) -> str | None:
    """Why the tenant's data may not live in ``region`` (None: it may): the one rule for stored data, data assets
    and volumes alike (``provisioning.domain.placement.isolation.region_allowed``)."""
    refusal = region_allowed(tenant_policy(tenant), region_info(region))
    return refusal.message if refusal is not None else None


def allocations_on(node: Node, states: Collection[str]) -> QuerySet[Allocation]:
    """The allocations in ``states`` with work on ``node``: a device there, or their pods without a GPU (a
    launcher, a Ray head, a Slurm controller: ``Allocation.side_node``)."""
    there = Q(devices__gpu__node=node, devices__active=True) | Q(side_node=node)
    return Allocation.objects.filter(there, state__in=states).distinct()


def tenant_policy(tenant: Tenant) -> TenantPolicy:
    """The placement engine's view of a tenant's contract."""
    regions = tenant.residency_regions
    jurisdictions = tenant.residency_jurisdictions
    return TenantPolicy(
        tenant_id=tenant.pk,
        jurisdiction=next(iter(jurisdictions)) if tenant.sovereign and jurisdictions else None,
        regions=frozenset(regions) if regions is not None else None,
        jurisdictions=frozenset(jurisdictions) if jurisdictions is not None else None,
        sovereign=tenant.sovereign,
        dedicated_hardware=tenant.dedicated_hardware,
        allow_soft_sharing=tenant.allow_soft_sharing,
    )


def allocation_state_counts() -> dict[tuple[str, str], int]:
    """Allocations in each live state, by (state, rung): one GROUP BY over the ``(state, state_changed_at)`` index.
    Stopped and failed ones are left out: they only ever grow."""
    live = [state.value for state in AllocationState if state not in TERMINAL]
    rows = Allocation.objects.filter(state__in=live).order_by().values("state", "rung").annotate(n=Count("id"))
    return {(row["state"], row["rung"]): row["n"] for row in rows}


def clusters_reconciled() -> list[tuple[str, str, datetime | None]]:
    """Each registered cluster's name, health and when reconciliation last went round (one small table)."""
    return list(Cluster.objects.order_by("name").values_list("name", "health", "reconciled_at"))


def allocation_fabric(allocation: Allocation) -> dict[str, Any] | None:
    """The RDMA fabric the allocation's nodes meet on, as ``provisioning.domain.fabric.Fabric.as_json`` states it (the
    tenant's partition key or VLAN, the NICs per node); None unless it is a job or bare metal on two nodes or
    more, every one with RDMA NICs. Its devices now, else the ones it last held (as the devices it shows); a
    combination the driver refuses (``FabricRefused``) is none: the allocation fails with the reason."""
    if not rung_facts(allocation.rung).spans_nodes:
        return None
    devices = list(allocation.devices.all())  # prefetched by the API's queryset
    hostnames = {d.hostname for d in [d for d in devices if d.active] or devices}
    if len(hostnames) < 2:
        return None
    rdma = dict(Node.objects.filter(hall_id=allocation.hall_id, hostname__in=hostnames).values_list("hostname", "rdma"))
    try:
        fabric = fabric_of([(h, Rdma.from_json(rdma.get(h))) for h in sorted(hostnames)], allocation.tenant_id)
    except FabricRefused:
        return None
    return fabric.as_json() if fabric is not None else None


@dataclass(frozen=True)
class NodeDrift:
    """A node that differs from its GPU model's target, or whose versions are not all known."""

    node: Node
    differs: dict[str, tuple[str, str]] = field(default_factory=dict)  # field -> (the node's, the target's)
    unknown: tuple[str, ...] = ()  # fields the node reads "unknown" (never published: docs/kubernetes.md)
    has_target: bool = True

    def as_dict(self) -> dict[str, Any]:
        node = self.node
        return {
            "hostname": node.hostname,
            "gpu_model": node.gpu_model.name,
            "hall": node.hall.code,
            "nvlink_domain": node.nvlink_domain,
            "state": node.state,
            "has_target": self.has_target,
            "differs": {f: {"node": mine, "target": wanted} for f, (mine, wanted) in self.differs.items()},
            "unknown": list(self.unknown),
        }


def node_drift(node: Node, target: VersionTarget | None) -> NodeDrift | None:
    """How one node differs from its target (None: it matches, and every version is known)."""
    unknown = tuple(f.name for f in VERSION_FIELDS if getattr(node, f.attr) == UNKNOWN)
    differs = {}
    if target is not None:
        for f in VERSION_FIELDS:
            mine, wanted = getattr(node, f.attr), getattr(target, f.name)
            if mine != wanted:
                differs[f.name] = (mine, wanted)
    if not differs and not unknown:
        return None
    return NodeDrift(node=node, differs=differs, unknown=unknown, has_target=target is not None)


def fleet_drift() -> list[NodeDrift]:
    """Every node (failed ones aside: they leave the fleet through repair) that differs from its GPU model's target,
    with the fields and both values, or reads ``unknown`` for any version; by hall, domain and hostname. An
    ``unknown`` never matches a target, so such a node drifts wherever a target is set, and is listed even where
    none is: placement compares versions exactly, and two unknowns compare equal though they may not be."""
    targets = {t.gpu_model_id: t for t in VersionTarget.objects.all()}
    nodes = (
        Node.objects.exclude(state=NodeState.FAILED)
        .select_related("hall", "gpu_model")
        .order_by("hall__code", "nvlink_domain", "hostname")
    )
    return [d for n in nodes if (d := node_drift(n, targets.get(n.gpu_model_id))) is not None]


@dataclass(frozen=True)
class FieldSkew:
    """One version that differs between the nodes of an NVLink domain."""

    field: VersionField
    values: tuple[tuple[str, int], ...]  # each value and how many of the domain's nodes run it, by value
    norm: str  # the majority's value
    outliers: tuple[tuple[Node, str], ...]  # the nodes off the majority, with what they run

    @property
    def label(self) -> str:
        return self.field.label

    def as_dict(self) -> dict[str, Any]:
        return {
            "field": self.field.name,
            "values": dict(self.values),
            "norm": self.norm,
            "outliers": [{"id": n.pk, "hostname": n.hostname, "value": value} for n, value in self.outliers],
        }


@dataclass(frozen=True)
class DomainSkew:
    """An NVLink domain (within its hall) and each version its nodes do not all share."""

    hall: str
    domain: str
    nodes: int
    fields: tuple[FieldSkew, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "hall": self.hall,
            "nvlink_domain": self.domain,
            "nodes": self.nodes,
            "fields": [f.as_dict() for f in self.fields],
        }


def domain_skew(nodes: Sequence[Node]) -> tuple[FieldSkew, ...]:
    """The majority-version rule, for the nodes of one NVLink domain in hostname order: each version field on which
    they differ, with the value most of them run as the domain's norm (on a tie, the one the first node runs) and
    the nodes off it. Reads only the nodes' version fields: no query."""
    skewed = []
    for f in VERSION_FIELDS:
        counted = Counter(getattr(n, f.attr) for n in nodes)
        if len(counted) < 2:
            continue
        norm = max(counted, key=counted.__getitem__)  # max keeps the first of equals: the first node's value
        outliers = tuple((n, getattr(n, f.attr)) for n in nodes if getattr(n, f.attr) != norm)
        skewed.append(FieldSkew(f, tuple(sorted(counted.items())), norm, outliers))
    return tuple(skewed)


def version_skew() -> list[DomainSkew]:
    """Every NVLink domain (within its hall) with the versions its nodes do not all share (``domain_skew``); the
    domains with skew first, then by hall and domain. The operators' console and ``/api/v1/ops/fleet/skew`` show
    it. Placement needs no norm: a multi-node gang keeps to one exact version set (provisioning.domain.placement)."""
    domains: dict[tuple[str, str], list[Node]] = defaultdict(list)
    for node in Node.objects.select_related("hall").order_by("hall__code", "nvlink_domain", "hostname"):
        domains[(node.hall.code, node.nvlink_domain)].append(node)
    out = [DomainSkew(hall, domain, len(nodes), domain_skew(nodes)) for (hall, domain), nodes in domains.items()]
    out.sort(key=lambda d: (not d.fields, d.hall, d.domain))
    return out


def fragmentation_figures(state: FleetState) -> list[dict[str, Any]]:
    """How usable the free capacity is, per GPU model and hall (``provisioning.domain.placement.fragmentation``), as the
    API's ``/api/v1/ops/fragmentation`` and defragmentation plans and the operators' console give it; the largest
    gang per NVLink domain by domain. The caller reads ``state`` under the fleet cache."""
    return [
        {
            "gpu_model": p.model,
            "hall": p.hall,
            "gpus": p.gpus,
            "free_gpus": p.free_gpus,
            "unallocated_gpus": p.unallocated_gpus,
            "stranded_mig_slices": p.stranded_mig_slices,
            "largest_gang_gpus": dict(sorted(p.largest_gang_gpus.items())),
        }
        for p in fragmentation(state)
    ]


def upgrade_plan_input() -> tuple[list[PlanDomain], int]:
    """The fleet as the upgrade planner reads it: every NVLink domain (by hall) with its nodes, which of them drift
    from their target (``unknown`` fields alone do not make a node drift: there is nothing to upgrade it to), the
    GPUs in use on each and the allocations holding devices there; and the fleet's GPUs (failed nodes aside)."""
    targets = {t.gpu_model_id: t for t in VersionTarget.objects.all()}
    nodes = list(Node.objects.exclude(state=NodeState.FAILED).select_related("hall").order_by("hostname"))
    in_use: dict[int, set[int]] = defaultdict(set)
    holders: dict[int, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))  # node -> allocation -> hosts
    allocations: dict[int, tuple[str, str]] = {}
    devices = AllocationDevice.objects.filter(active=True, allocation__state__in=HOLDS_DEVICES, gpu__isnull=False)
    for row in devices.values(
        "gpu_id", "gpu__node_id", "hostname", "allocation_id", "allocation__rung", "allocation__tenant__slug"
    ):
        in_use[row["gpu__node_id"]].add(row["gpu_id"])
        holders[row["gpu__node_id"]][row["allocation_id"]].add(row["hostname"])
        allocations[row["allocation_id"]] = (row["allocation__tenant__slug"], row["allocation__rung"])
    by_domain: dict[tuple[str, str], list[Node]] = defaultdict(list)
    for node in nodes:
        by_domain[(node.hall.code, node.nvlink_domain)].append(node)
    domains = []
    for (hall, name), members in sorted(by_domain.items()):
        plan_nodes = []
        hosts: dict[int, set[str]] = defaultdict(set)
        for node in members:
            drift = node_drift(node, targets.get(node.gpu_model_id))
            plan_nodes.append(
                PlanNode(node.pk, node.hostname, node.gpu_count, len(in_use[node.pk]), bool(drift and drift.differs))
            )
            for allocation_id, where in holders[node.pk].items():
                hosts[allocation_id] |= where
        held = tuple(
            PlanAllocation(a, allocations[a][0], allocations[a][1], tuple(sorted(where)))
            for a, where in sorted(hosts.items())
        )
        domains.append(PlanDomain(hall, name, tuple(plan_nodes), held))
    return domains, sum(n.gpu_count for n in nodes)


DEFAULT_WAVE_SHARE = 0.1  # of the fleet's GPUs, when the operator gives no limit


def fleet_upgrade_plan(*, max_share: float | None = None, max_domains: int | None = None) -> dict[str, Any]:
    """The rolling upgrade as the API and ``manage.py fleet_upgrade_plan`` show it: waves of whole drifting NVLink
    domains (``provisioning.domain.upgrades``), each within ``max_share`` of the fleet's GPUs and ``max_domains``
    domains;
    with neither limit, a tenth of the fleet. Raises ``PlanLimitError`` for limits no drifting domain fits."""
    if max_share is None and max_domains is None:
        max_share = DEFAULT_WAVE_SHARE
    domains, fleet_gpus = upgrade_plan_input()
    max_gpus = fleet_gpus if max_share is None else wave_gpu_limit(fleet_gpus=fleet_gpus, max_share=max_share)
    waves = upgrade_plan(domains, max_gpus=max_gpus, max_domains=max_domains)
    return {
        "fleet_gpus": fleet_gpus,
        "max_gpus_per_wave": max_gpus,
        "max_domains_per_wave": max_domains,
        "waves": [w.as_dict() for w in waves],
    }


# --- volumes ------------------------------------------------------------------------------------------------------


def volumes_attached_to(volume_ids: Sequence[int]) -> dict[int, list[int]]:
    """The allocations (ids) that mount each of ``volume_ids`` now, in id order."""
    found: dict[int, list[int]] = {v: [] for v in volume_ids}
    for volume_id, allocation_id in (
        VolumeAttachment.objects.filter(volume_id__in=list(volume_ids), released_at=None)
        .order_by("allocation_id")
        .values_list("volume_id", "allocation_id")
    ):
        found[volume_id].append(allocation_id)
    return found


def volumes_counted_gb(tenant_ids: Collection[int] | None = None) -> dict[int, int]:
    """GB each tenant's volumes count against its storage quota (volumes in a ``COUNTED`` state), by tenant id;
    every tenant's, or those of ``tenant_ids``. A tenant with none is absent."""
    volumes = Volume.objects.filter(state__in=list(COUNTED))
    if tenant_ids is not None:
        volumes = volumes.filter(tenant_id__in=list(tenant_ids))
    grouped = volumes.order_by().values("tenant_id").annotate(gb=Sum("size_gb")).values_list("tenant_id", "gb")
    return {tenant_id: int(gb or 0) for tenant_id, gb in grouped}


def volumes_mountable(*, tenant: Tenant, kinds: Collection[str]) -> list[Volume]:
    """The tenant's volumes of ``kinds`` that new work may mount (not going away), by name, with their region."""
    return list(
        Volume.objects.filter(tenant=tenant, state__in=list(MOUNTABLE), kind__in=list(kinds))
        .select_related("region")
        .order_by("name", "pk")
    )


SNAPSHOT_CLASS = "snapshot"  # the storage class of snapshots (billing's storage kind of the same name)
STORAGE_CLASSES = (VolumeKind.FILESYSTEM.value, VolumeKind.BLOCK.value, SNAPSHOT_CLASS)


@dataclass(frozen=True)
class StorageFigures:
    """One region's storage of one class: how many volumes (or snapshots) the backend holds, the GB provisioned,
    and the GB in use as the backend last reported it (None: none reported; snapshots report none)."""

    region: str
    storage_class: str  # filesystem, block or snapshot
    count: int
    provisioned_gb: int
    used_gb: int | None

    @property
    def used_share(self) -> float | None:
        """The share of the provisioned GB in use (None: nothing provisioned, or nothing reported)."""
        if self.used_gb is None or not self.provisioned_gb:
            return None
        return self.used_gb / self.provisioned_gb


def storage_figures() -> list[StorageFigures]:
    """Each region's provisioned storage per class, as the operators' console shows it: the volumes the backend
    holds (available or attached: what is billed) by kind, and the ready snapshots; every region and class, zeros
    included, by region code then class. Two GROUP BYs, whatever the number of volumes."""
    found: dict[tuple[str, str], tuple[int, int, int | None]] = {}
    volumes = (
        Volume.objects.filter(state__in=list(PROVISIONED))
        .order_by()
        .values("region__code", "kind")
        .annotate(n=Count("id"), size=Sum("size_gb"), used=Sum("used_gb"))
    )
    for row in volumes:
        found[(row["region__code"], row["kind"])] = (row["n"], row["size"] or 0, row["used"])
    snapshots = (
        VolumeSnapshot.objects.filter(state=SnapshotState.READY)
        .order_by()
        .values("volume__region__code")
        .annotate(n=Count("id"), size=Sum("size_gb"))
    )
    for snap in snapshots:
        found[(snap["volume__region__code"], SNAPSHOT_CLASS)] = (snap["n"], snap["size"] or 0, None)
    return [
        StorageFigures(code, kind, *found.get((code, kind), (0, 0, None)))
        for code in Region.objects.order_by("code").values_list("code", flat=True)
        for kind in STORAGE_CLASSES
    ]


# --- serverless endpoints: cold starts and requests ------------------------------------------------------------

COLD_STARTS_COUNTED = 1000  # an endpoint's percentiles are of its last wakes, this many at most
COLD_STARTS_RECENT = 10  # the wakes a read lists, newest first


def request_samples_key(allocation_id: int) -> str:
    """Where an endpoint's request samples are kept in the default cache (``services.cold_starts``)."""
    return f"endpoint-requests:{allocation_id}"


def hold_samples_key(allocation_id: int) -> str:
    """Where the holds of an endpoint's requests at the gateway's check are kept (``services.cold_starts``)."""
    return f"endpoint-holds:{allocation_id}"


def endpoint_request_samples(allocation_id: int) -> list[tuple[int, int]]:
    """An endpoint's last requests, oldest first: (queue delay, execution time) of each, in milliseconds."""
    return [(int(q), int(e)) for q, e in samples_read(request_samples_key(allocation_id))]


def endpoint_holds(allocation_id: int, *, since: datetime) -> list[int]:
    """How long the gateway's check held each of the endpoint's requests answered since ``since`` while it woke
    (of its last holds kept), in milliseconds."""
    cutoff = since.timestamp()
    return [int(ms) for at, ms in samples_read(hold_samples_key(allocation_id)) if at >= cutoff]


def cold_start_figures(allocation: Allocation) -> dict[str, Any]:
    """An endpoint's cold starts: how many wakes, P50/P90/P99 of their totals and of each phase (of its last
    ``COLD_STARTS_COUNTED``), and its latest wakes. Its requests are its driver's to report (``request_times``)."""
    ours = EndpointColdStart.objects.filter(allocation=allocation).order_by("-ready_at", "-id")
    rows = list(ours[:COLD_STARTS_COUNTED])
    return {
        "count": len(rows) if len(rows) < COLD_STARTS_COUNTED else ours.count(),
        "total": percentiles(r.total_ms for r in rows),
        "phases": {phase: percentiles(getattr(r, f"{phase}_ms") for r in rows) for phase in PHASES},
        "recent": rows[:COLD_STARTS_RECENT],
    }


def cold_start_table(*, since: datetime) -> list[dict[str, Any]]:
    """Every serverless endpoint at work (idle ones included) and every one woken since ``since``: its tenant,
    state, how many wakes since then and the P50/P90/P99 of their totals. The slowest P90 first; endpoints with
    no wake since then last."""
    totals: dict[int, list[int]] = defaultdict(list)
    woken = EndpointColdStart.objects.filter(ready_at__gte=since).order_by().values_list("allocation_id", "total_ms")
    for allocation_id, total in woken:
        totals[allocation_id].append(total)
    endpoints = Allocation.objects.filter(rung__in=rungs_where(lambda f: f.endpoint))
    at_work = endpoints.filter(state__in=WORKING).values_list("pk", flat=True)
    shown = endpoints.filter(pk__in={*totals, *at_work}).select_related("tenant", "hall")
    found = [(percentiles(totals.get(a.pk, [])), a) for a in shown]
    found.sort(key=lambda row: (row[0].p90 is None, -(row[0].p90 or 0), row[1].pk))
    return [{"allocation": allocation, "figures": figures} for figures, allocation in found]
