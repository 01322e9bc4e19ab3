"""The fleet document: its format, every rule it must follow, and where in a file a problem sits.

Pure Python (no Django): ``check`` turns a parsed document into a ``FleetSpec`` or a list of ``Reason``s, each
naming its place as a JSON path (``regions[0].halls[1].nodes[3].gpu_model``); ``check_against_fleet`` adds the
rules that need the fleet already registered; ``locate`` gives each reason the line of its place in the file
(``json_source.parse_text`` parses a file's text and remembers the line of every value).

Format::

    {"regions": [{"code": "eu-west", "name": "EU West", "jurisdiction": "EU",
                  "halls": [{"code": "eu-west-1a", "fenced_for": null,
                             "nodes": [{"hostname": "n1", "gpu_model": "H100-SXM-80GB", "gpu_count": 8,
                                        "nvlink_domain": "eu-west-1a/nvl-0", "cc_capable": false,
                                        "cc_mode": false, "cpu_tee": null,
                                        "versions": {"driver": "580.65", "cuda": "13.0", "nccl": "2.27",
                                                     "firmware": "96.00"},
                                        "rdma": {"fabric": "eu-west-1a/ib-0", "link_layer": "infiniband",
                                                 "nics": [{"device": "mlx5_0", "rail": 0, "gpus": [0]}, ...]}}]}]}]}

Every key is required except a node's ``cc_mode`` (default false), ``cpu_tee`` (default null), ``rdma``
(default null: no RDMA NIC) and ``host`` (default null: its CPU and memory untracked; ``node_host.py``); unknown
keys are refused, so a misspelt optional key never passes silently.

``rdma`` describes the node's RDMA NICs for multi-node jobs (docs/jobs.md, "The fabric"): the ``fabric`` they are
cabled to (an InfiniBand subnet or a RoCE network, named like an NVLink domain; a gang never spans two),
its ``link_layer`` (``infiniband`` or ``roce``), and each NIC: its RDMA ``device`` name (``mlx5_0``), the
``rail`` it is cabled to (rail-optimised fabrics wire NIC i of every node to one leaf), and the ``gpus`` (indexes)
that sit under the same PCIe switch, which NCCL should pair with it. A fabric joins nodes of one hall and one link
layer; a NIC's device name and rail are unique on its node, and a GPU index is below the node's ``gpu_count``.
The optional ``rate_gbps`` is the rate each port should train at (400 for NDR 4x or 400GbE); node diagnosis reports
a port below it as degraded (provisioning/drivers/kubernetes/diagnosis_rdma.py, the ``rdma`` layer).

``cpu_tee`` is the CPU's trusted execution environment of a confidential-computing host: ``"snp"`` (AMD SEV-SNP)
or ``"tdx"`` (Intel TDX). It picks the guest's runtime and is what attestation evidence from the host must claim.
A node in ``cc_mode`` must declare it: such a host serves confidential VMs only (it is out of the general pool),
and without its TEE it could never take one, so loading it would only add capacity that can never be sold.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from provisioning.domain.json_source import Path, SourceMap, json_type
from provisioning.domain.node_host import Host, check_host
from provisioning.domain.placement.catalog import CATALOG

MAX_GPUS_PER_NODE = 8
CODE_MAX = 40
CODE_RE = re.compile(rf"^(?=.{{1,{CODE_MAX}}}\Z)[a-z0-9]+(?:-[a-z0-9]+)*\Z")
JURISDICTION_RE = re.compile(r"^[A-Z]{2,8}\Z")
HOSTNAME_RE = re.compile(
    r"^(?=.{1,253}\Z)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\Z"
)
VERSION_RE = re.compile(r"^\S{1,32}\Z")
VERSION_KEYS = ("driver", "cuda", "nccl", "firmware")
LINK_LAYERS = ("infiniband", "roce")
MAX_NICS_PER_NODE = 16
MAX_RATE_GBPS = 3200  # an RDMA port's rate: 1600 (XDR 4x) is the fastest shipping today
RDMA_DEVICE_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}\Z")  # the kernel's RDMA device name: mlx5_0, bnxt_re0, irdma1
CPU_TEES = ("snp", "tdx")  # AMD SEV-SNP, Intel TDX


def format_path(path: Path) -> str:
    """``("regions", 0, "halls", 1, "code")`` -> ``regions[0].halls[1].code``; the root is ``document``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "document"


@dataclass(frozen=True)
class Reason:
    path: Path
    message: str
    line: int | None = None

    @property
    def where(self) -> str:
        return format_path(self.path)


# --- the validated document ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Nic:
    device: str  # the RDMA device (mlx5_0): what NCCL_IB_HCA names
    rail: int  # the rail it is cabled to (its leaf switch in a rail-optimised fabric)
    gpus: tuple[int, ...]  # the GPUs under its PCIe switch (GPU-NIC affinity)


@dataclass(frozen=True)
class Rdma:
    fabric: str  # the InfiniBand subnet or RoCE network its NICs are cabled to
    link_layer: str  # infiniband | roce
    nics: tuple[Nic, ...]
    rate_gbps: int | None = None  # the rate every port should train at; None: not stated

    def as_json(self) -> dict[str, Any]:
        nics = [{"device": n.device, "rail": n.rail, "gpus": list(n.gpus)} for n in self.nics]
        found: dict[str, Any] = {"fabric": self.fabric, "link_layer": self.link_layer, "nics": nics}
        if self.rate_gbps is not None:
            found["rate_gbps"] = self.rate_gbps
        return found

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Rdma | None:
        """The stored form back (``Node.rdma``); empty or None: the node has no RDMA NIC."""
        if not data:
            return None
        nics = tuple(Nic(n["device"], int(n["rail"]), tuple(n["gpus"])) for n in data["nics"])
        rate = data.get("rate_gbps")
        return cls(
            fabric=data["fabric"],
            link_layer=data["link_layer"],
            nics=nics,
            rate_gbps=None if rate is None else int(rate),
        )


@dataclass(frozen=True)
class NodeSpec:
    path: Path
    hostname: str
    gpu_model: str
    gpu_count: int
    nvlink_domain: str
    cc_capable: bool
    cc_mode: bool
    driver: str
    cuda: str
    nccl: str
    firmware: str
    cpu_tee: str | None = None
    rdma: Rdma | None = None
    host: Host | None = None  # its CPU and memory (node_host.py); None: not tracked


@dataclass(frozen=True)
class HallSpec:
    path: Path
    code: str
    fenced_for: str | None
    nodes: tuple[NodeSpec, ...]


@dataclass(frozen=True)
class RegionSpec:
    path: Path
    code: str
    name: str
    jurisdiction: str
    halls: tuple[HallSpec, ...]


@dataclass(frozen=True)
class FleetSpec:
    regions: tuple[RegionSpec, ...]

    def halls(self) -> Iterator[tuple[RegionSpec, HallSpec]]:
        for region in self.regions:
            for hall in region.halls:
                yield region, hall

    def nodes(self) -> Iterator[tuple[HallSpec, NodeSpec]]:
        for _, hall in self.halls():
            for node in hall.nodes:
                yield hall, node


# --- checking -----------------------------------------------------------------------------------------------


_MISSING = object()


def _shown(value: str) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else f'{text[:57]}..."'


class _Checker:
    """Walks a document top-down, collecting every reason (not just the first) and the valid parts."""

    def __init__(self) -> None:
        self.reasons: list[Reason] = []
        self.first_at: dict[str, dict[str, Path]] = {}  # what -> value -> path of its first appearance
        self.domains: dict[str, tuple[str, str, str]] = {}  # NVLink domain -> (hall, GPU model, where)
        self.fabrics: dict[str, tuple[str, str, str]] = {}  # fabric -> (hall, link layer, where)

    def add(self, path: Path, message: str) -> None:
        self.reasons.append(Reason(path, message))

    def obj(self, value: object, path: Path, keys: tuple[str, ...]) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.add(path, f"must be an object, not {json_type(value)}")
            return None
        for key in value:
            if key not in keys:
                self.add((*path, key), f"unknown field (expected: {', '.join(keys)})")
        return value

    def get(self, obj: dict[str, Any], key: str, path: Path) -> object:
        if key not in obj:
            self.add((*path, key), "is required")
            return _MISSING
        return obj[key]

    def text(self, obj: dict[str, Any], key: str, path: Path, pattern: re.Pattern[str], rule: str) -> str | None:
        value = self.get(obj, key, path)
        if value is _MISSING:
            return None
        if not isinstance(value, str):
            self.add((*path, key), f"must be a string, not {json_type(value)}")
            return None
        if not pattern.match(value):
            self.add((*path, key), f"must be {rule}, not {_shown(value)}")
            return None
        return value

    def flag(self, obj: dict[str, Any], key: str, path: Path, default: bool | None = None) -> bool | None:
        if key not in obj and default is not None:
            return default
        value = self.get(obj, key, path)
        if value is _MISSING:
            return None
        if not isinstance(value, bool):
            self.add((*path, key), f"must be true or false, not {json_type(value)}")
            return None
        return value

    def array(self, obj: dict[str, Any], key: str, path: Path) -> list[Any]:
        value = self.get(obj, key, path)
        if value is _MISSING:
            return []
        if not isinstance(value, list):
            self.add((*path, key), f"must be an array, not {json_type(value)}")
            return []
        return value

    def unique(self, what: str, value: str | None, path: Path) -> None:
        """Region codes, hall codes and hostnames name one thing each in the whole document."""
        if value is None:
            return
        first = self.first_at.setdefault(what, {})
        if value in first:
            self.add(path, f"duplicate {what} {_shown(value)} (first at {format_path(first[value])})")
        else:
            first[value] = path

    def domain_fits(self, path: Path, domain: str, hall: str, model: str, where: str) -> None:
        """An NVLink domain is wired inside one hall and joins GPUs of one model."""
        other_hall, other_model, other_where = self.domains.setdefault(domain, (hall, model, where))
        if hall != other_hall:
            self.add(
                (*path, "nvlink_domain"),
                f"NVLink domain {_shown(domain)} is in hall {_shown(other_hall)} ({other_where}); "
                f"a domain cannot span halls",
            )
        elif model != other_model:
            self.add(
                (*path, "nvlink_domain"),
                f"NVLink domain {_shown(domain)} holds {other_model} GPUs ({other_where}); it cannot also hold {model}",
            )

    # -- the document, top-down --

    def document(self, document: object) -> tuple[RegionSpec, ...]:
        doc = self.obj(document, (), ("regions",))
        if doc is None:
            return ()
        regions = [self.region(value, ("regions", i)) for i, value in enumerate(self.array(doc, "regions", ()))]
        return tuple(r for r in regions if r is not None)

    def region(self, value: object, path: Path) -> RegionSpec | None:
        obj = self.obj(value, path, ("code", "name", "jurisdiction", "halls"))
        if obj is None:
            return None
        code = self.text(obj, "code", path, CODE_RE, _CODE_RULE)
        self.unique("region code", code, (*path, "code"))
        name = self.text(obj, "name", path, _NAME_RE, "1 to 200 characters")
        jurisdiction = self.text(obj, "jurisdiction", path, JURISDICTION_RE, _JURISDICTION_RULE)
        halls = [self.hall(v, (*path, "halls", i)) for i, v in enumerate(self.array(obj, "halls", path))]
        if code is None or name is None or jurisdiction is None:
            return None
        return RegionSpec(path, code, name, jurisdiction, tuple(h for h in halls if h is not None))

    def hall(self, value: object, path: Path) -> HallSpec | None:
        obj = self.obj(value, path, ("code", "fenced_for", "nodes"))
        if obj is None:
            return None
        code = self.text(obj, "code", path, CODE_RE, _CODE_RULE)
        self.unique("hall code", code, (*path, "code"))
        fenced_ok, fenced_for = True, None
        if self.get(obj, "fenced_for", path) is _MISSING:
            fenced_ok = False
        elif obj["fenced_for"] is not None:
            fenced_for = self.text(obj, "fenced_for", path, JURISDICTION_RE, f"null or {_JURISDICTION_RULE}")
            fenced_ok = fenced_for is not None
        nodes = [self.node(v, (*path, "nodes", i), code) for i, v in enumerate(self.array(obj, "nodes", path))]
        if code is None or not fenced_ok:
            return None
        return HallSpec(path, code, fenced_for, tuple(n for n in nodes if n is not None))

    def node(self, value: object, path: Path, hall: str | None) -> NodeSpec | None:
        keys = (
            *("hostname", "gpu_model", "gpu_count", "nvlink_domain", "cc_capable", "cc_mode", "cpu_tee", "versions"),
            *("rdma", "host"),
        )
        obj = self.obj(value, path, keys)
        if obj is None:
            return None
        hostname = self.text(obj, "hostname", path, HOSTNAME_RE, _HOSTNAME_RULE)
        self.unique("hostname", hostname, (*path, "hostname"))
        gpu_model = self.text(obj, "gpu_model", path, _NAME_RE, "a GPU model name")
        if gpu_model is not None and gpu_model not in CATALOG:
            self.add((*path, "gpu_model"), f"unknown GPU model {_shown(gpu_model)}; known: {', '.join(CATALOG)}")
            gpu_model = None
        gpu_count = self.count(obj, path)
        domain = self.text(obj, "nvlink_domain", path, _NVLINK_RE, "1 to 100 characters without spaces")
        if domain is not None and gpu_model is not None and hall is not None:
            self.domain_fits(path, domain, hall, gpu_model, format_path(path))
        cc_capable = self.flag(obj, "cc_capable", path)
        cc_mode = self.flag(obj, "cc_mode", path, default=False)
        if cc_mode:
            if cc_capable is False:
                self.add((*path, "cc_mode"), "confidential-computing mode needs a cc_capable node")
                cc_mode = None
            if gpu_model is not None and not CATALOG[gpu_model].cc_capable:
                self.add((*path, "cc_mode"), f"{gpu_model} GPUs do not support confidential computing")
                cc_mode = None
        cpu_tee, tee_ok = self.tee(obj, path, cc_capable, cc_mode)
        versions = self.versions(obj, path)
        rdma, rdma_ok = self.rdma(obj, path, hall, gpu_count)
        host, host_ok = check_host(obj.get("host"), (*path, "host"), self.add)
        if (
            hostname is None
            or gpu_model is None
            or gpu_count is None
            or domain is None
            or cc_capable is None
            or cc_mode is None
            or not tee_ok
            or versions is None
            or not rdma_ok
            or not host_ok
        ):
            return None
        return NodeSpec(
            path,
            hostname,
            gpu_model,
            gpu_count,
            domain,
            cc_capable,
            cc_mode,
            *versions,
            cpu_tee=cpu_tee,
            rdma=rdma,
            host=host,
        )

    def rdma(
        self, node: dict[str, Any], node_path: Path, hall: str | None, gpus: int | None
    ) -> tuple[Rdma | None, bool]:
        """The node's RDMA NICs (None: it has none) and whether they passed (see the module's docstring)."""
        value = node.get("rdma")
        if value is None:
            return None, True
        path = (*node_path, "rdma")
        obj = self.obj(value, path, ("fabric", "link_layer", "nics", "rate_gbps"))
        if obj is None:
            return None, False
        before = len(self.reasons)
        rate = obj.get("rate_gbps")
        if rate is not None and (not isinstance(rate, int) or isinstance(rate, bool) or not 1 <= rate <= MAX_RATE_GBPS):
            self.add(
                (*path, "rate_gbps"), f"must be a whole number of Gb/s, 1 to {MAX_RATE_GBPS}, not {json.dumps(rate)}"
            )
        fabric = self.text(obj, "fabric", path, _NVLINK_RE, "1 to 100 characters without spaces")
        layer = self.get(obj, "link_layer", path)
        if layer is not _MISSING and layer not in LINK_LAYERS:
            shown = _shown(layer) if isinstance(layer, str) else json_type(layer)
            self.add((*path, "link_layer"), f'must be "infiniband" or "roce", not {shown}')
        raw = self.array(obj, "nics", path)
        if "nics" in obj and isinstance(obj["nics"], list) and not 1 <= len(raw) <= MAX_NICS_PER_NODE:
            self.add((*path, "nics"), f"must list 1 to {MAX_NICS_PER_NODE} NICs, not {len(raw)}")
        nics: list[Nic] = []
        devices: set[str] = set()
        rails: set[int] = set()
        for i, item in enumerate(raw):
            nic_path = (*path, "nics", i)
            nic = self.obj(item, nic_path, ("device", "rail", "gpus"))
            if nic is None:
                continue
            device = self.text(nic, "device", nic_path, RDMA_DEVICE_RE, "an RDMA device name such as mlx5_0")
            if device is not None and device in devices:
                self.add((*nic_path, "device"), f"device {_shown(device)} is listed twice on this node")
            rail = self.get(nic, "rail", nic_path)
            if rail is not _MISSING and (not isinstance(rail, int) or isinstance(rail, bool) or not 0 <= rail < 64):
                self.add((*nic_path, "rail"), f"must be a whole number 0 to 63, not {json.dumps(rail)}")
                rail = _MISSING
            elif isinstance(rail, int) and rail in rails:
                self.add((*nic_path, "rail"), f"rail {rail} is taken by another NIC of this node")
            indexes = self.array(nic, "gpus", nic_path)
            bad = [g for g in indexes if not isinstance(g, int) or isinstance(g, bool) or g < 0]
            if bad or (gpus is not None and any(g >= gpus for g in indexes)):
                top = f"0 to {gpus - 1}" if gpus else "0 or more"
                self.add((*nic_path, "gpus"), f"must list GPU indexes of this node ({top}), not {json.dumps(indexes)}")
            if device is not None and isinstance(rail, int) and rail is not _MISSING:
                devices.add(device)
                rails.add(rail)
                nics.append(Nic(device, rail, tuple(sorted(set(g for g in indexes if isinstance(g, int))))))
        if fabric is not None and layer in LINK_LAYERS and hall is not None:
            where = format_path(node_path)
            other_hall, other_layer, other_where = self.fabrics.setdefault(fabric, (hall, layer, where))
            if other_hall != hall:
                self.add(
                    (*path, "fabric"),
                    f"fabric {_shown(fabric)} is in hall {_shown(other_hall)} ({other_where}); "
                    "a fabric cannot span halls",
                )
            elif other_layer != layer:
                self.add(
                    (*path, "link_layer"),
                    f"fabric {_shown(fabric)} is {other_layer} ({other_where}); one fabric has one link layer",
                )
        if len(self.reasons) > before or fabric is None or not isinstance(layer, str) or layer not in LINK_LAYERS:
            return None, False
        return Rdma(fabric=fabric, link_layer=layer, nics=tuple(nics), rate_gbps=rate), True

    def tee(
        self, node: dict[str, Any], path: Path, cc_capable: bool | None, cc_mode: bool | None
    ) -> tuple[str | None, bool]:
        """The node's CPU TEE (None: not declared) and whether it passed: required in CC mode (see the module's
        docstring), and only a cc_capable host has one Ladder can use."""
        value = node.get("cpu_tee")
        if value is not None and value not in CPU_TEES:
            shown = _shown(value) if isinstance(value, str) else json_type(value)
            self.add((*path, "cpu_tee"), f'must be null, "snp" (AMD SEV-SNP) or "tdx" (Intel TDX), not {shown}')
            return None, False
        if value is None and cc_mode:
            self.add(
                (*path, "cpu_tee"),
                'a node in confidential-computing mode must declare its CPU TEE ("snp" or "tdx"): '
                "without it the host can never take a confidential VM",
            )
            return None, False
        if value is not None and cc_capable is False:
            self.add((*path, "cpu_tee"), "a CPU TEE is declared only for a cc_capable node")
            return None, False
        return value, True

    def count(self, node: dict[str, Any], path: Path) -> int | None:
        value = self.get(node, "gpu_count", path)
        if value is _MISSING:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            shown = json.dumps(value) if isinstance(value, float) else json_type(value)
            self.add((*path, "gpu_count"), f"must be a whole number, not {shown}")
            return None
        if not 1 <= value <= MAX_GPUS_PER_NODE:
            self.add((*path, "gpu_count"), f"must be 1 to {MAX_GPUS_PER_NODE}, not {value}")
            return None
        return value

    def versions(self, node: dict[str, Any], node_path: Path) -> tuple[str, str, str, str] | None:
        path = (*node_path, "versions")
        value = self.get(node, "versions", node_path)
        if value is _MISSING:
            return None
        obj = self.obj(value, path, VERSION_KEYS)
        if obj is None:
            return None
        driver, cuda, nccl, firmware = (self.text(obj, key, path, VERSION_RE, _VERSION_RULE) for key in VERSION_KEYS)
        if driver is None or cuda is None or nccl is None or firmware is None:
            return None
        return driver, cuda, nccl, firmware


_NAME_RE = re.compile(r"^(?=.{1,200}\Z)\S(?:.*\S)?\Z", re.DOTALL)
_NVLINK_RE = re.compile(r"^\S{1,100}\Z")
_CODE_RULE = f"lower-case letters and digits in groups joined by '-' (at most {CODE_MAX} characters)"
_JURISDICTION_RULE = "2 to 8 upper-case letters (EU, US, UK, ...)"
_HOSTNAME_RULE = "a lower-case DNS name: letters, digits, '-' and '.' (at most 253 characters)"
_VERSION_RULE = "1 to 32 characters without spaces"


def check(document: object, source: SourceMap | None = None) -> tuple[FleetSpec | None, list[Reason]]:
    """The document's spec, or None and every reason it is refused: in document order, or with ``source`` in
    line order and with their lines."""
    checker = _Checker()
    if source is not None:
        for path in source.duplicate_keys:
            checker.add(path, "this key appears twice in its object; the last one would silently win")
    regions = checker.document(document)
    reasons = locate(checker.reasons, source)
    return (None if reasons else FleetSpec(regions)), reasons


@dataclass(frozen=True)
class Registered:
    """What the database already holds that the document's rules depend on."""

    node_halls: Mapping[str, str] = field(default_factory=dict)  # hostname -> hall code, for the doc's hostnames
    hall_regions: Mapping[str, str] = field(default_factory=dict)  # hall code -> region code, for the doc's halls
    # NVLink domain -> (hall code, GPU model, hostname) of a registered node that the document does not list
    domains: Mapping[str, tuple[str, str, str]] = field(default_factory=dict)


def check_against_fleet(spec: FleetSpec, registered: Registered, source: SourceMap | None = None) -> list[Reason]:
    """Rules against what is registered. A fleet load never moves a node to another hall or a hall to another
    region: that would change where the tenants on it are served from, behind their residency rules' back."""
    checker = _Checker()
    checker.domains = {
        domain: (hall, model, f"registered node {host}") for domain, (hall, model, host) in registered.domains.items()
    }
    for region, hall in spec.halls():
        old_region = registered.hall_regions.get(hall.code)
        if old_region is not None and old_region != region.code:
            checker.add(
                (*hall.path, "code"),
                f"hall {_shown(hall.code)} is registered in region {_shown(old_region)}; "
                f"a fleet load does not move halls between regions",
            )
    for hall, node in spec.nodes():
        old_hall = registered.node_halls.get(node.hostname)
        if old_hall is not None and old_hall != hall.code:
            checker.add(
                (*node.path, "hostname"),
                f"node {_shown(node.hostname)} is registered in hall {_shown(old_hall)}; "
                f"a fleet load does not move nodes between halls",
            )
        if node.nvlink_domain in registered.domains:
            checker.domain_fits(node.path, node.nvlink_domain, hall.code, node.gpu_model, format_path(node.path))
    return locate(checker.reasons, source)


# --- where in the file --------------------------------------------------------------------------------------


def locate(reasons: list[Reason], source: SourceMap | None) -> list[Reason]:
    """The reasons with their lines, in line order (a stable sort keeps document order within a line)."""
    if source is None:
        return reasons
    located = [replace(r, line=source.line_of(r.path)) for r in reasons]
    return sorted(located, key=lambda r: r.line or 0)
