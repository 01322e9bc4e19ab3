"""Importing a cluster's nodes into the fleet inventory (``manage.py fleet_sync --cluster NAME``).

Each Node object becomes a fleet-document node from its GPU operator labels (GPU feature discovery):
``nvidia.com/gpu.product`` (the catalog model), ``nvidia.com/gpu.count``, ``nvidia.com/gpu.clique`` (the NVLink
domain), ``nvidia.com/cc.mode``, and the driver and CUDA version labels; node feature discovery's CPU security
labels give a confidential host's TEE. The GPU operator labels no NCCL or firmware version: they come from
``ladder.io/nccl-version`` / ``ladder.io/firmware-version``, as a label (what a node feature discovery local
feature file publishes, docs/kubernetes.md) or an annotation (set by hand), else ``unknown``. The document goes
through ``fleet_load``, so the same rules apply to a synced node as to a loaded one, and nothing the cluster does
not list is touched.

A node's RDMA NICs (the fleet document's ``rdma``) come from the evidence node diagnosis reads
(provisioning/drivers/kubernetes/diagnosis_rdma.py, the ``rdma`` layer): the reporter DaemonSet's
``rdma.ladder.io/<device>``
annotations, each a JSON object whose ``link_layer`` (sysfs: ``InfiniBand`` or ``Ethernet``, i.e. RoCE) gives the
fabric's link layer and whose ``rail`` and ``gpus`` (the reporter's configuration: NIC i on rail i, the GPUs under
its PCIe switch) place the NIC; and the operator's node label ``ladder.io/fabric``, the fabric's name within the
hall (a label value cannot hold a ``/``, so the fabric is ``<hall>/<label>``, named like an NVLink domain). A node
with NICs but no fabric label, or a NIC without its rail, is imported without ``rdma`` and the reason noted: no
guessed fabric joins two nodes that share none. The expected port rate (``rate_gbps``) is left out: what a port
trained at is no statement of what it should train at; state it in a fleet document.

A node's ``host`` comes from its status: ``capacity`` gives the cores and memory, and what the kubelet keeps back
from ``allocatable`` (system and kube reserves, eviction threshold) is the host's reserve (``host_entry``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from core.actor import Actor
from provisioning.domain.fleet_document import LINK_LAYERS
from provisioning.drivers.kubernetes.diagnosis_rdma import A_RDMA_PREFIX, LINK_LAYER_OF_SYSFS
from provisioning.drivers.kubernetes.shapes import model_of_product
from provisioning.models import Cluster
from provisioning.services.fleet import FleetLoadResult, fleet_load

GIB = 1 << 30

UNKNOWN = "unknown"
# Versions the GPU operator does not label, by fleet-document field: the key an operator publishes them under.
PUBLISHED_VERSIONS = {"nccl": "ladder.io/nccl-version", "firmware": "ladder.io/firmware-version"}

TEE_LABELS = {
    "feature.node.kubernetes.io/cpu-security.sev.snp.enabled": "snp",
    "feature.node.kubernetes.io/cpu-security.tdx.enabled": "tdx",
}
L_FABRIC = "ladder.io/fabric"


@dataclass
class NodeImport:
    nodes: list[dict[str, Any]] = field(default_factory=list)  # fleet-document node entries
    tees: dict[str, str] = field(default_factory=dict)  # hostname -> snp | tdx
    skipped: list[str] = field(default_factory=list)  # why a Node object is not a GPU node we can sell
    notes: list[str] = field(default_factory=list)  # what an imported node was imported without, and why


def _version(labels: dict[str, str], stem: str, parts: tuple[str, ...]) -> str | None:
    found = [labels.get(f"{stem}.{part}") for part in parts]
    return ".".join(p for p in found if p) if found[0] else None


def rdma_entry(
    labels: dict[str, str], annotations: dict[str, str], *, hall: str, hostname: str, gpus: int
) -> tuple[dict[str, Any] | None, str | None]:
    """The node's fleet-document ``rdma`` from its annotations and fabric label, or None and why not (None, None:
    the node reports no RDMA NIC)."""
    reports: dict[str, Any] = {}
    for key, raw in sorted(annotations.items()):
        if not key.startswith(A_RDMA_PREFIX):
            continue
        device = key[len(A_RDMA_PREFIX) :]
        try:
            reports[device] = json.loads(raw)
        except ValueError:
            return None, f"{hostname}: annotation {key} is not JSON; imported without rdma"
        if not isinstance(reports[device], dict):
            return None, f"{hostname}: annotation {key} is not a JSON object; imported without rdma"
    if not reports:
        return None, None
    fabric = labels.get(L_FABRIC)
    if not fabric:
        return None, f"{hostname}: {len(reports)} RDMA NICs reported but no {L_FABRIC} label; imported without rdma"
    layers = {LINK_LAYER_OF_SYSFS.get(str(r.get("link_layer") or "").lower()) for r in reports.values()}
    if len(layers) != 1 or not layers <= set(LINK_LAYERS):
        shown = sorted(str(r.get("link_layer")) for r in reports.values())
        return (
            None,
            f"{hostname}: its NICs report link layers {shown}, not one InfiniBand or Ethernet; imported without rdma",
        )
    nics = []
    for device, report in reports.items():
        rail, indexes = report.get("rail"), report.get("gpus", [])
        if not isinstance(rail, int) or isinstance(rail, bool):
            return None, f"{hostname}: RDMA NIC {device} reports no rail; imported without rdma"
        if not isinstance(indexes, list):
            return None, f"{hostname}: RDMA NIC {device} reports gpus that are not a list; imported without rdma"
        nics.append({"device": device, "rail": rail, "gpus": [g for g in indexes if isinstance(g, int) and g < gpus]})
    return {"fabric": f"{hall}/{fabric}", "link_layer": layers.pop(), "nics": nics}, None


def _published(key: str, labels: dict[str, str], annotations: dict[str, str]) -> str:
    """A version the operator publishes: the label first (node feature discovery keeps it current on every
    rescan), else the annotation (set by hand, may be stale), else ``unknown`` (the drift selector names it)."""
    for source in (labels, annotations):
        value = (source.get(key) or "").strip()
        if value:
            return value
    return UNKNOWN


def host_entry(status: dict[str, Any]) -> dict[str, int] | None:
    """The fleet document's ``host`` from a node's status: its capacity's CPU cores and memory (whole cores and
    GiB, rounded down), and as the reserve what the kubelet keeps out of its allocatable (rounded up, so the host
    never sells what it does not give). None when the status reports no capacity or nothing allocatable."""
    capacity, allocatable = status.get("capacity") or {}, status.get("allocatable") or {}
    try:
        cores, memory = parse_quantity(capacity["cpu"]), parse_quantity(capacity["memory"]) / GIB
        cores_left, memory_left = parse_quantity(allocatable["cpu"]), parse_quantity(allocatable["memory"]) / GIB
    except (KeyError, ValueError, TypeError):
        return None
    host = {"cpu_cores": math.floor(cores), "memory_gib": math.floor(memory)}
    host["reserved_cpu_cores"] = min(host["cpu_cores"] - 1, max(0, math.ceil(cores - cores_left)))
    host["reserved_memory_gib"] = min(host["memory_gib"] - 1, max(0, math.ceil(memory - memory_left)))
    return host if host["cpu_cores"] >= 1 and host["memory_gib"] >= 1 else None


def node_entries(objects: list[dict[str, Any]], *, hall: str) -> NodeImport:
    """Fleet-document node entries for the GPU nodes among ``objects`` (pure)."""
    result = NodeImport()
    for obj in objects:
        meta = obj.get("metadata") or {}
        labels: dict[str, str] = meta.get("labels") or {}
        annotations: dict[str, str] = meta.get("annotations") or {}
        hostname = labels.get("kubernetes.io/hostname") or meta.get("name", "")
        product = labels.get("nvidia.com/gpu.product")
        if not product:
            result.skipped.append(f"{hostname}: no nvidia.com/gpu.product label (not a GPU node, or GFD not running)")
            continue
        model = model_of_product(product)
        if model is None:
            result.skipped.append(f"{hostname}: GPU product {product!r} is not in the catalog")
            continue
        try:
            count = int(labels.get("nvidia.com/gpu.count", ""))
        except ValueError:
            result.skipped.append(f"{hostname}: no usable nvidia.com/gpu.count label")
            continue
        cc_mode = labels.get("nvidia.com/cc.mode", "off") in ("on", "ppcie")
        cc_capable = cc_mode or labels.get("nvidia.com/cc.capable") == "true"
        tee = next((tee for label, tee in TEE_LABELS.items() if labels.get(label) == "true"), None)
        if cc_mode and tee is None:
            # The fleet document refuses a CC-mode host without its TEE: it could never take a confidential VM.
            result.skipped.append(f"{hostname}: in CC mode, but node feature discovery reports no SEV-SNP or TDX")
            continue
        if tee and cc_capable:
            result.tees[hostname] = tee
        rdma, why_not = rdma_entry(labels, annotations, hall=hall, hostname=hostname, gpus=count)
        if why_not:
            result.notes.append(why_not)
        result.nodes.append(
            {
                "hostname": hostname,
                "gpu_model": model,
                "gpu_count": count,
                "nvlink_domain": labels.get("nvidia.com/gpu.clique") or f"{hall}/{hostname}",
                "cc_capable": cc_capable,
                "cc_mode": cc_mode,
                "cpu_tee": tee if cc_capable else None,
                "versions": {
                    "driver": _version(labels, "nvidia.com/cuda.driver", ("major", "minor", "rev")) or UNKNOWN,
                    "cuda": _version(labels, "nvidia.com/cuda.runtime", ("major", "minor")) or UNKNOWN,
                    **{field: _published(key, labels, annotations) for field, key in PUBLISHED_VERSIONS.items()},
                },
            }
            | ({"rdma": rdma} if rdma else {})
            | ({"host": host} if (host := host_entry(obj.get("status") or {})) else {})
        )
    return result


def fleet_sync(*, cluster: Cluster, objects: list[dict[str, Any]], actor: Actor) -> tuple[FleetLoadResult, NodeImport]:
    """Load the cluster's GPU nodes, with their TEEs, into its hall (through ``fleet_load``)."""
    hall = cluster.hall
    region = hall.region
    imported = node_entries(objects, hall=hall.code)
    document = {
        "regions": [
            {
                "code": region.code,
                "name": region.name,
                "jurisdiction": region.jurisdiction,
                "halls": [{"code": hall.code, "fenced_for": hall.fenced_for, "nodes": imported.nodes}],
            }
        ]
    }
    return fleet_load(document=document, actor=actor), imported
