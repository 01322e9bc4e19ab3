"""The fleet as the operator console draws it: regions → halls → NVLink domains → nodes → GPUs, each GPU as the
segments that occupy it (a whole GPU; MIG instances by start position and memory slices; soft shares side by
side), with who holds each and a sentence saying so for screen readers. One read of the fleet in four queries,
whatever its size.

MIG geometry is NVIDIA's (``provisioning.domain.placement.mig``): eight memory slices, an instance occupying its
profile's memory slices from its start. The drawing uses the same eight columns for every GPU, so a soft share is
drawn to the nearest eighth (the sentence gives it exactly)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from provisioning.domain.placement.mig import GEOMETRY, MEMORY_SLICES, MigKind
from provisioning.models import AllocationDevice, Gpu, Node

PALETTE = 12  # tenant colours (CSS classes t0..t11); tenants beyond share colours, the legend and text tell apart
STATES = ["ready", "draining", "quarantined", "sanitizing", "maintenance", "failed", "registering"]


@dataclass
class Segment:
    start: int  # memory-slice column, 0..7
    length: int
    tenant: str
    colour: int
    what: str  # "whole", "1g.10gb", "0.250 share"
    allocation: int


@dataclass
class GpuCell:
    index: int
    segments: list[Segment] = field(default_factory=list)
    sm_active: float | None = None  # DCGM's, over the last minutes, when the map is coloured by activity

    @property
    def activity_class(self) -> str:
        """``a0`` (idle, under 1%) to ``a4`` (75% and more); "" when not known."""
        if self.sm_active is None:
            return ""
        return "a0" if self.sm_active < 0.01 else f"a{min(4, 1 + int(self.sm_active * 4))}"

    @property
    def use(self) -> str:
        taken = sum(s.length for s in self.segments)
        return "free" if taken == 0 else "full" if taken >= MEMORY_SLICES else "partly used"

    @property
    def use_class(self) -> str:
        return self.use.replace(" ", "-")

    def describe(self) -> str:
        if not self.segments:
            return f"GPU {self.index}: free" + self._activity_words()
        parts = []
        for s in self.segments:
            where = f" at slice {s.start}" if s.what not in ("whole",) and not s.what.endswith("share") else ""
            parts.append(f"{s.what}{where} for {s.tenant} (allocation {s.allocation})")
        return f"GPU {self.index}: " + "; ".join(parts) + self._activity_words()

    def _activity_words(self) -> str:
        return "" if self.sm_active is None else f"; SM active {self.sm_active:.0%}"


@dataclass
class NodeRow:
    node: Node
    gpus: list[GpuCell]

    def gpus_html(self) -> SafeString:
        """The node's GPU boxes, drawn here rather than in a template loop: a 1,024-GPU map renders several times
        faster. Every text is escaped; classes come from numbers and fixed words only."""
        parts = []
        for gpu in self.gpus:
            text = escape(gpu.describe())
            segments = "".join(
                f'<span class="seg t{s.colour:d} s{s.start:d} l{s.length:d}"></span>' for s in gpu.segments
            )
            classes = f"gpu u-{gpu.use_class} {gpu.activity_class}".rstrip()
            parts.append(f'<li class="{classes}" title="{text}"><span class="sr">{text}</span>{segments}</li>')
        return mark_safe("".join(parts))  # noqa: S308 - built from escaped text and fixed markup


@dataclass
class Domain:
    name: str
    nodes: list[NodeRow] = field(default_factory=list)


@dataclass
class HallBox:
    code: str
    fenced_for: str | None
    domains: dict[str, Domain] = field(default_factory=dict)


@dataclass
class RegionBox:
    code: str
    name: str
    halls: dict[str, HallBox] = field(default_factory=dict)


@dataclass
class FleetMap:
    regions: list[RegionBox]
    tenants: list[tuple[str, int]]  # (slug, colour) for the legend
    gpus: int
    counts: dict[str, int]  # free / partly used / full
    node_states: dict[str, int]


def _kind_length(profiles: dict[str, str], profile: str) -> int:
    kind = profiles.get(profile)
    try:
        return GEOMETRY[MigKind(kind)].memory if kind else 1
    except ValueError:
        return 1


def fleet_map(sm_active: dict[str, float] | None = None) -> FleetMap:
    """The map; ``sm_active``: each GPU's SM active by UUID, to colour it by what it does."""
    nodes = list(
        Node.objects.select_related("hall__region", "gpu_model").order_by(
            "hall__region__code", "hall__code", "nvlink_domain", "hostname"
        )
    )
    gpus: dict[int, list[tuple[int, int]]] = defaultdict(list)  # node -> [(gpu id, index)]
    uuids: dict[int, str] = {}
    for gpu_id, node_id, index, uuid in Gpu.objects.order_by("node_id", "index").values_list(
        "pk", "node_id", "index", "uuid"
    ):
        gpus[node_id].append((gpu_id, index))
        uuids[gpu_id] = uuid
    devices: dict[int, list[Any]] = defaultdict(list)
    rows = (
        AllocationDevice.objects.filter(active=True, gpu__isnull=False)
        .order_by("gpu_id", "mig_start", "pk")
        .values("gpu_id", "mig_profile", "mig_start", "share_milli", "allocation_id", "allocation__tenant__slug")
    )
    for row in rows:
        devices[row["gpu_id"]].append(row)
    slugs = sorted({d["allocation__tenant__slug"] for ds in devices.values() for d in ds})
    colour = {slug: i % PALETTE for i, slug in enumerate(slugs)}
    regions: dict[str, RegionBox] = {}
    counts = {"free": 0, "partly used": 0, "full": 0}
    states: dict[str, int] = defaultdict(int)
    total = 0
    for node in nodes:
        region = regions.setdefault(node.hall.region.code, RegionBox(node.hall.region.code, node.hall.region.name))
        hall = region.halls.setdefault(node.hall.code, HallBox(node.hall.code, node.hall.fenced_for))
        domain = hall.domains.setdefault(node.nvlink_domain, Domain(node.nvlink_domain))
        profiles = node.gpu_model.mig_profiles or {}
        cells = []
        for gpu_id, index in gpus.get(node.pk, []):
            cell = GpuCell(index, sm_active=(sm_active or {}).get(uuids[gpu_id]))
            offset = 0
            for d in devices.get(gpu_id, []):
                slug = d["allocation__tenant__slug"]
                if d["mig_profile"]:
                    start, length, what = (
                        d["mig_start"] or 0,
                        _kind_length(profiles, d["mig_profile"]),
                        d["mig_profile"],
                    )
                elif d["share_milli"]:
                    length = max(1, round(d["share_milli"] * MEMORY_SLICES / 1000))
                    start, what = min(offset, MEMORY_SLICES - length), f"{d['share_milli'] / 1000:.3f} share"
                    offset += length
                else:
                    start, length, what = 0, MEMORY_SLICES, "whole"
                cell.segments.append(Segment(start, length, slug, colour[slug], what, d["allocation_id"]))
            counts[cell.use] += 1
            cells.append(cell)
        total += len(cells)
        states[node.state] += 1
        domain.nodes.append(NodeRow(node, cells))
    return FleetMap(
        regions=list(regions.values()),
        tenants=[(slug, colour[slug]) for slug in slugs],
        gpus=total,
        counts=counts,
        node_states=dict(states),
    )
