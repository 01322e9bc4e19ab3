"""The Alibaba GPU trace (cluster-trace-gpu-v2023, the FGD paper's data) as a Ladder fleet and request stream.

Mapping, by memory class (the trace's models have no MIG; each becomes the MIG-capable catalog model of its
class, with the node's GPU count unchanged):

- ``P100`` (16 GB), ``T4`` (16 GB), ``V100M16`` (16 GB), ``A10`` (24 GB) -> ``A100-40GB``: the smallest MIG-capable
  card we sell; its 1g.5gb..3g.20gb slices are the same size class as these cards.
- ``V100M32`` (32 GB) -> ``A100-80GB``: the 32 GB class needs the larger memory per slice.
- ``G2``, ``G3`` (Alibaba's anonymised newest models, always in 8-GPU servers) -> ``H100-SXM-80GB``: the 8-GPU
  NVLink (HGX) server class of our catalog.

Fleet layout, deterministic: node ``i`` (0-based, file order) gets id ``i + 1`` and hall ``HALLS[i % 4]`` (two
regions, two halls each); inside a (hall, model) pool, consecutive nodes form NVLink domains of 8 nodes.

Pods: ``num_gpu == 0`` is skipped, except in the whole-node model, where it is CPU-only work on any model's node;
``num_gpu == 1`` with ``gpu_milli < 1000`` is a fractional request of ``gpu_milli`` thousandths; anything else asks
for ``num_gpu`` whole GPUs on one node. In the whole-node model every pod also asks its ``cpu_milli`` and
``memory_mib``, and every node has its own. ``gpu_spec`` (allowed trace
models, ``|``-separated, empty = any) becomes the request's ``models`` tuple in catalog order (cheapest class
first). Tenant: ``crc32(name) % 50 + 1``, so a pod sampled twice belongs to the same tenant both times.
"""

from __future__ import annotations

import csv
import zlib
from dataclasses import dataclass
from pathlib import Path

from provisioning.domain.placement.isolation import HallInfo
from provisioning.domain.placement.state import FleetState

REPO = Path(__file__).resolve().parents[1]
# Fetched by `make bench-data` and checked against the SHA-256 sums committed beside them (see the README there).
DATA = REPO / "bench" / "data" / "alibaba-gpu-v2023"
NODES_CSV = DATA / "openb_node_list_gpu_node.csv"
PODS_CSVS = tuple(
    DATA / f"openb_pod_list_{name}.csv" for name in ("default", "gpushare40", "gpushare100", "multigpu30", "gpuspec20")
)

TRACE_MODELS: dict[str, str] = {
    "P100": "A100-40GB",
    "T4": "A100-40GB",
    "V100M16": "A100-40GB",
    "A10": "A100-40GB",
    "V100M32": "A100-80GB",
    "G2": "H100-SXM-80GB",
    "G3": "H100-SXM-80GB",
}
# Catalog models the trace maps to, in the order a request lists them when any model will do.
MODEL_ORDER: tuple[str, ...] = ("A100-40GB", "A100-80GB", "H100-SXM-80GB")

HALLS: tuple[HallInfo, ...] = (
    HallInfo("eu-west-1a", "eu-west", "EU", None),
    HallInfo("us-east-1a", "us-east", "US", None),
    HallInfo("eu-west-1b", "eu-west", "EU", None),
    HallInfo("us-east-1b", "us-east", "US", None),
)
NODES_PER_DOMAIN = 8
TENANTS = 50
VERSIONS = ("580.65", "13.0", "2.27", "96.00")


@dataclass(frozen=True, slots=True)
class TraceNode:
    sn: str
    gpus: int
    trace_model: str
    cpu_milli: int = 0
    memory_mib: int = 0

    @property
    def model(self) -> str:
        return TRACE_MODELS[self.trace_model]


@dataclass(frozen=True, slots=True)
class Pod:
    name: str
    num_gpu: int
    milli: int  # thousandths of one GPU for a fractional pod; 1000 for whole-GPU pods
    models: tuple[str, ...]
    tenant: int
    cpu_milli: int = 0
    memory_mib: int = 0

    @property
    def fractional(self) -> bool:
        return self.num_gpu == 1 and self.milli < 1000

    @property
    def cpu_only(self) -> bool:
        return self.num_gpu == 0

    @property
    def demand_milli(self) -> int:
        """GPU demand offered, in thousandths: a fractional pod counts its share, a whole one its GPUs, a CPU-only
        one nothing."""
        return self.milli if self.fractional else self.num_gpu * 1000


def tenant_of(name: str) -> int:
    return zlib.crc32(name.encode()) % TENANTS + 1


def models_of(gpu_spec: str) -> tuple[str, ...]:
    """The catalog models a ``gpu_spec`` allows, in catalog order; empty means any."""
    allowed = {TRACE_MODELS[m] for m in gpu_spec.split("|") if m in TRACE_MODELS}
    if not gpu_spec.strip():
        return MODEL_ORDER
    if not allowed:
        raise ValueError(f"gpu_spec {gpu_spec!r} names no model of the trace")
    return tuple(m for m in MODEL_ORDER if m in allowed)


def _present(path: Path) -> Path:
    if not path.is_file():
        hint = " (`make bench-data` fetches the trace)" if path.resolve() in (NODES_CSV, *PODS_CSVS) else ""
        raise SystemExit(f"{path}: no such file{hint}")
    return path


def load_nodes(path: Path) -> list[TraceNode]:
    with _present(path).open(newline="") as f:
        return [
            TraceNode(row["sn"], int(row["gpu"]), row["model"], int(row["cpu_milli"]), int(row["memory_mib"]))
            for row in csv.DictReader(f)
        ]


def load_pods(path: Path, *, cpu_only: bool = False) -> tuple[list[Pod], bool]:
    """The pods that ask for GPUs (``cpu_only``: and those that ask CPUs alone), in file order, and whether the
    file has times (else: replay in file order)."""
    pods: list[Pod] = []
    with _present(path).open(newline="") as f:
        reader = csv.DictReader(f)
        timed = "creation_time" in (reader.fieldnames or ())
        for row in reader:
            num_gpu, milli = int(row["num_gpu"]), int(row["gpu_milli"])
            cpu, memory = int(row["cpu_milli"]), int(row["memory_mib"])
            if num_gpu == 0 or milli <= 0:
                if cpu_only and num_gpu == 0 and cpu > 0:
                    pods.append(Pod(row["name"], 0, 0, MODEL_ORDER, tenant_of(row["name"]), cpu, memory))
                continue
            if not (num_gpu == 1 and milli < 1000):
                milli = 1000
            models = models_of(row.get("gpu_spec") or "")
            pods.append(Pod(row["name"], num_gpu, milli, models, tenant_of(row["name"]), cpu, memory))
    return pods, timed


def build_fleet(nodes: list[TraceNode], *, host: bool = False) -> FleetState:
    """The fleet; ``host``: with each node's CPU and memory (the whole-node model), else GPUs only."""
    state = FleetState()
    for info in HALLS:
        state.add_hall(info)
    seen_in_pool: dict[tuple[str, str], int] = {}
    for i, node in enumerate(nodes):
        hall = HALLS[i % len(HALLS)].code
        k = seen_in_pool.get((hall, node.model), 0)
        seen_in_pool[(hall, node.model)] = k + 1
        state.add_node(
            id=i + 1,
            hostname=node.sn,
            hall=hall,
            model=node.model,
            gpu_uuids=[f"GPU-{i + 1}-{g}" for g in range(node.gpus)],
            nvlink_domain=f"{hall}/{node.model}/nvl-{k // NODES_PER_DOMAIN}",
            versions=VERSIONS,
            cpu_milli=node.cpu_milli if host else 0,
            memory_mib=node.memory_mib if host else 0,
        )
    return state
