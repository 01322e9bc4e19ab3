"""The ``rdma`` layer of node diagnosis (``diagnosis.py``), checked after the GPU layers (``diagnosis_gpu.py``).
Pure: no Django, no I/O.

Only for nodes the fleet says have RDMA NICs (``Node.rdma``: the fabric, link layer, each NIC's RDMA device
and rail, and optionally the rate every port should train at, ``rate_gbps``). The fleet's NICs are the
expected ones; NICs the node has beyond them (a storage or front-end NIC) are ignored. Kubernetes has no core
field for an RDMA port, so the layer reads what the NIC stack and a small reporter publish:

* ``rdma.ladder.io/<device>`` node annotations, one per RDMA device, written by the reporter DaemonSet of
  docs/jobs.md ("Diagnosing a node's RDMA NICs") from the kernel's sysfs: a JSON object with ``state`` and
  ``phys_state``
  (``/sys/class/infiniband/<device>/ports/1/state`` and ``phys_state``: ``4: ACTIVE``, ``5: LinkUp``),
  ``rate`` (``ports/1/rate``: ``400 Gb/sec (4X NDR)``), ``link_layer`` (``ports/1/link_layer``:
  ``InfiniBand`` or ``Ethernet``), and ``pcie_width``/``pcie_max_width`` (the PCI device's
  ``current_link_width`` and ``max_link_width``). This is the only source of a port's rate and width.
* The ResourceSlices of the NIC DRA driver DraNet (kubernetes-sigs/dranet, driver ``dra.net``): a device with
  ``dra.net/rdma`` true names its RDMA device in ``dra.net/rdmaDevice`` (``mlx5_0``) and its network
  interface's operational state in ``dra.net/state`` (``up``/``down``); an InfiniBand port without a netdev
  has no state there.
* Node-level labels, read to explain NICs that nothing reports: node feature discovery's built-in custom
  rules ``rdma.capable`` (a PCI device of vendor 15b3, Mellanox/NVIDIA) and ``rdma.available`` (the kernel
  modules ``ib_uverbs`` and ``rdma_ucm`` loaded), published as ``feature.node.kubernetes.io/rdma.*`` or, by
  newer releases, ``feature.node.kubernetes.io/custom-rdma.*``; and the NVIDIA network operator's
  ``network.nvidia.com/operator.mofed.wait`` (``true`` while its OFED driver container is not ready, which
  holds back its device plugins). The device plugins' own resources (the SR-IOV network device plugin's or
  the RDMA shared device plugin's ``status.capacity`` entries) are named by the operator's configuration,
  not by RDMA device, so they cannot say which NIC is missing and are not read.

Findings, worst first, each naming the NIC (device, rail) and its evidence: a NIC ``missing`` (nothing
reports the device); its link ``down`` (sysfs state ``DOWN``, or DraNet's ``down``), or up but not ``ACTIVE``
(``INIT``/``ARMED``: no subnet manager configured the port); a ``link_layer`` other than the fleet's (a VPI
card left in the other mode); and ``degraded``, the failure that halves bandwidth while everything looks up:
a port that trained below the fleet's ``rate_gbps`` (NDR 400 Gb/s at 200, a 4X link at 2X), below the
fastest of the node's other NICs when the fleet states no rate, or a PCIe link below its maximum width (x8
of x16). A rate is known only from the annotations: a NIC seen only by DraNet is reported up, rate unknown.
"""

from __future__ import annotations

import json
import re
from typing import Any

from provisioning.domain.fleet_document import Nic, Rdma
from provisioning.drivers.kubernetes.node_reading import (
    L_NFD_PCI,
    NIC_DRA_DRIVER,
    Finding,
    NodeReading,
    as_int,
    device_attribute,
    shown,
)

A_RDMA_PREFIX = "rdma.ladder.io/"  # + the RDMA device: the reporter DaemonSet's sysfs reading (docs/jobs.md)
L_RDMA_CAPABLE = ("feature.node.kubernetes.io/rdma.capable", "feature.node.kubernetes.io/custom-rdma.capable")
L_RDMA_AVAILABLE = ("feature.node.kubernetes.io/rdma.available", "feature.node.kubernetes.io/custom-rdma.available")
L_MOFED_WAIT = "network.nvidia.com/operator.mofed.wait"
NIC_ATTR_STATE = f"{NIC_DRA_DRIVER}/state"
LINK_LAYER_OF_SYSFS = {"infiniband": "infiniband", "ethernet": "roce"}  # sysfs ports/1/link_layer -> the fleet's
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec(?:\s*\((\d+)X\s*([A-Za-z0-9]*)\))?")


# Worst first: the order findings are reported in.
_SEVERITY = ("missing", "unreadable", "down", "not_active", "link_layer", "degraded")
_DOWN_STATES = frozenset({"down", "lowerlayerdown", "notpresent", "dormant"})  # a netdev's operstate
_PHYS_HINTS = {
    "Polling": "no peer answers: cable, transceiver or switch port",
    "Disabled": "the port is administratively disabled",
    "LinkErrorRecovery": "the link keeps failing its training",
    "Sleep": "the port is asleep (not polling)",
}


def check_rdma(n: NodeReading, rdma: Rdma) -> Finding:
    """The fleet's NICs against what the node reports (see the module docstring, ``rdma``)."""
    readings = [_nic_reading(n, nic) for nic in rdma.nics]
    peer_rate = max((r["rate_gbps"] for r in readings if r.get("rate_gbps") is not None), default=None)
    expected_rate = rdma.rate_gbps if rdma.rate_gbps is not None else peer_rate
    for nic, reading in zip(rdma.nics, readings, strict=True):
        _judge(reading, nic, rdma, expected_rate, stated=rdma.rate_gbps is not None)
    found: dict[str, Any] = {
        "fabric": rdma.fabric,
        "link_layer": rdma.link_layer,
        "expected_rate_gbps": rdma.rate_gbps,
        "nics": readings,
    }
    labels = {key: n.label(key) for key in (*L_RDMA_CAPABLE, *L_RDMA_AVAILABLE, L_MOFED_WAIT) if n.label(key)}
    if labels:
        found["labels"] = labels
    evidence: dict[str, Any] = {"rdma": found}
    if not any(r["present"] for r in readings):
        return Finding(False, f"none of the {len(readings)} RDMA NICs is reported: {_why_no_nic(n)}", evidence)
    faults = sorted(
        (r for r in readings if r["finding"] != "ok"), key=lambda r: (_SEVERITY.index(r["finding"]), r["rail"])
    )
    if len(faults) == 1:
        return Finding(False, f"RDMA NIC {faults[0]['problem']}", evidence)
    if faults:
        detail = f"{len(faults)} of {len(readings)} RDMA NICs faulty: " + "; ".join(r["problem"] for r in faults)
        return Finding(False, detail, evidence)
    rate = f", {peer_rate} Gb/s" if peer_rate is not None else ", rate not reported"
    return Finding(True, f"{len(readings)} RDMA NICs up on fabric {rdma.fabric} ({rdma.link_layer}{rate})", evidence)


def _nic_reading(n: NodeReading, nic: Nic) -> dict[str, Any]:
    """What the reporter's annotation and DraNet say of one of the fleet's NICs."""
    reading: dict[str, Any] = {"device": nic.device, "rail": nic.rail, "present": False, "sources": []}
    raw = n.annotations.get(f"{A_RDMA_PREFIX}{nic.device}")
    if raw is not None:
        reading["present"] = True
        reading["sources"].append(f"{A_RDMA_PREFIX}{nic.device}")
        try:
            report = json.loads(raw)
        except ValueError:
            report = None
        if not isinstance(report, dict):
            reading["unreadable"] = str(raw)[:200]
        else:
            reading["state"] = _sysfs_word(report.get("state"))
            reading["phys_state"] = _sysfs_word(report.get("phys_state"))
            reading["link_layer"] = report.get("link_layer")
            reading["rate"] = report.get("rate")
            match = _RATE.match(str(report.get("rate") or ""))
            if match:
                number = float(match.group(1))
                reading["rate_gbps"] = int(number) if number.is_integer() else number
                reading["width"] = f"{match.group(2)}X" if match.group(2) else None
                reading["speed"] = match.group(3) or None
            reading["pcie_width"] = as_int(report.get("pcie_width"))
            reading["pcie_max_width"] = as_int(report.get("pcie_max_width"))
    device = n.nic_devices.get(nic.device)
    if device is not None:
        reading["present"] = True
        reading["sources"].append(f"{NIC_DRA_DRIVER} device {device.get('name')}")
        reading["dra_state"] = device_attribute(device, NIC_ATTR_STATE, NIC_DRA_DRIVER)
    return reading


def _judge(reading: dict[str, Any], nic: Nic, rdma: Rdma, expected_rate: float | None, *, stated: bool) -> None:
    """Set the reading's ``finding`` (one of :data:`_SEVERITY`, or ``ok``) and, for a fault, its ``problem``."""
    name = f"{nic.device} (rail {nic.rail})"
    reading["finding"], problem = "ok", ""
    state, phys = reading.get("state"), reading.get("phys_state")
    sysfs_layer = str(reading.get("link_layer") or "").lower()
    if not reading["present"]:
        reading["finding"] = "missing"
        problem = (
            f"{name} missing: no {A_RDMA_PREFIX}{nic.device} annotation and no {NIC_DRA_DRIVER} device names it"
            " (the NIC is not on the PCI bus, its driver did not bind, or it was renamed)"
        )
    elif "unreadable" in reading:
        reading["finding"] = "unreadable"
        problem = f"{name}: its {A_RDMA_PREFIX}{nic.device} annotation is not a JSON object"
    elif state is not None and state != "ACTIVE":
        physical_up = phys == "LinkUp"
        reading["finding"] = "not_active" if physical_up and state in ("INIT", "ARMED") else "down"
        if reading["finding"] == "not_active":
            problem = (
                f"{name} link up but {state}, not ACTIVE (phys_state=LinkUp): no subnet manager configured the port"
            )
        else:
            hint = _PHYS_HINTS.get(str(phys), "")
            problem = f"{name} link down (state={state}, phys_state={shown(phys)})" + (f": {hint}" if hint else "")
    elif state is None and str(reading.get("dra_state") or "").lower() in _DOWN_STATES:
        reading["finding"] = "down"
        problem = f"{name} link down ({NIC_ATTR_STATE}={reading['dra_state']})"
    elif sysfs_layer and LINK_LAYER_OF_SYSFS.get(sysfs_layer) != rdma.link_layer:
        reading["finding"] = "link_layer"
        problem = (
            f"{name} runs link layer {reading['link_layer']} but fabric {rdma.fabric} is {rdma.link_layer}"
            " (a VPI card in the other mode)"
        )
    elif expected_rate is not None and reading.get("rate_gbps") is not None and reading["rate_gbps"] < expected_rate:
        reading["finding"] = "degraded"
        trained = f"{reading['rate_gbps']} Gb/s" + (
            f" ({reading['rate'].split('(', 1)[1]}" if "(" in str(reading["rate"]) else ""
        )
        against = "the fleet's" if stated else "its fastest peer's"
        problem = f"{name} degraded: trained at {trained}, below {against} {expected_rate} Gb/s"
    elif (
        reading.get("pcie_width") is not None
        and reading.get("pcie_max_width") is not None
        and reading["pcie_width"] < reading["pcie_max_width"]
    ):
        reading["finding"] = "degraded"
        problem = (
            f"{name} degraded: PCIe link at x{reading['pcie_width']} of x{reading['pcie_max_width']},"
            " the host side caps its bandwidth"
        )
    if problem:
        reading["problem"] = problem


def _why_no_nic(n: NodeReading) -> str:
    """Why nothing reports any of the node's RDMA NICs, from the node-level labels."""
    capable = any(n.label(key) == "true" for key in L_RDMA_CAPABLE)
    available = any(n.label(key) == "true" for key in L_RDMA_AVAILABLE)
    if n.label(L_MOFED_WAIT) == "true":
        return f"the network operator's OFED driver is not ready ({L_MOFED_WAIT}=true)"
    if capable and not available:
        return (
            "node feature discovery sees the NICs but not the RDMA kernel modules (rdma.capable=true,"
            " rdma.available unset): ib_uverbs and rdma_ucm are not loaded"
        )
    if not capable and n.label(L_NFD_PCI) is not None:
        return "node feature discovery runs but sees no NIC of vendor 15b3 (no rdma.capable label)"
    return (
        f"no {A_RDMA_PREFIX}<device> annotation and no {NIC_DRA_DRIVER} ResourceSlice for the node: is the RDMA"
        " reporter DaemonSet (or DraNet) running here? (docs/jobs.md, Diagnosing a node's RDMA NICs)"
    )


def _sysfs_word(value: Any) -> str | None:
    """``4: ACTIVE`` -> ``ACTIVE``, ``5: LinkUp`` -> ``LinkUp`` (sysfs prints the number and the name)."""
    if value is None:
        return None
    text = str(value).strip()
    word = text.split(":", 1)[1].strip() if ":" in text else text
    return word.upper() if word.lower() in {"down", "init", "armed", "active", "active_defer", "nop"} else word
