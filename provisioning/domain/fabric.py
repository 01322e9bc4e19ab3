"""The RDMA fabric a multi-node allocation's nodes meet on, and the tenant's own isolation on it. Pure (no Django):
the Kubernetes renderers (``provisioning.drivers.kubernetes.render_fabric``), the bare-metal user data and the API's
``fabric`` object all state the same facts from here.

A tenant's fabric traffic is fenced by the fabric itself, per tenant, never shared with another tenant:

- InfiniBand: a partition. The subnet manager admits a port (or an SR-IOV virtual function's GUID) to partitions,
  and HCAs and switches drop packets whose P_Key is not in the port's table (IBTA specification, volume 1,
  "Partitioning"). A tenant's P_Key is ``0x8000 | n`` (bit 15: full membership) with its partition number ``n`` =
  the tenant's primary key, 1 to 0x7FFE: 0x0000 is invalid and 0x7FFF is the default partition every port is in.
  So 32,766 tenants fit.
- RoCE: an IEEE 802.1Q VLAN, ``n + 1`` for the tenant's primary key ``n``: VLANs 2 to 4094 (0 and 4095 are reserved
  by 802.1Q, 1 is a switch's default VLAN). So 4,093 tenants fit.

A tenant beyond either range is refused with ``FabricRefused``, never given a shared or wrapped-around number. A
primary key is never handed out twice (PostgreSQL sequences; Django's SQLite ``AUTOINCREMENT``), so a closed
tenant's partition or VLAN never passes to the next.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from provisioning.domain.fleet_document import Nic, Rdma

# The SR-IOV network device plugin's resource prefix for Ladder's per-rail VF pools (``<prefix>/rail<r>``); the
# operator's setting ``LADDER_FABRIC_RESOURCE_PREFIX`` overrides it.
FABRIC_RESOURCE_PREFIX = "rdma.ladder.io"
PARTITION_MAX = 0x7FFE  # partition numbers 0x0001-0x7FFE; 0x7FFF is the default partition
PKEY_FULL_MEMBER = 0x8000
VLAN_FIRST, VLAN_LAST = 2, 4094
VLAN_TENANTS = VLAN_LAST - VLAN_FIRST + 1  # 4,093
RESOURCE_PREFIX_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+\Z")


class FabricRefused(ValueError):
    """The allocation's nodes cannot carry its fabric as stated: refused, never run on a shared fabric."""


@dataclass(frozen=True)
class Isolation:
    kind: str  # "partition_key" (InfiniBand) | "vlan" (RoCE)
    value: int  # the P_Key with its membership bit, or the VLAN ID

    @property
    def shown(self) -> str:
        """As operators write it: a P_Key in hex (``0x8005``), a VLAN in decimal."""
        return f"0x{self.value:04x}" if self.kind == "partition_key" else str(self.value)

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.shown}


def tenant_isolation(link_layer: str, tenant_number: int) -> Isolation:
    """The tenant's partition key (InfiniBand) or VLAN (RoCE), from its primary key (see the module's docstring)."""
    if link_layer == "infiniband":
        if not 1 <= tenant_number <= PARTITION_MAX:
            raise FabricRefused(
                f"tenant #{tenant_number} has no InfiniBand partition: partition numbers 1 to {PARTITION_MAX} "
                f"({PARTITION_MAX} tenants) go to tenants #1 to #{PARTITION_MAX}"
            )
        return Isolation("partition_key", PKEY_FULL_MEMBER | tenant_number)
    if link_layer == "roce":
        if not 1 <= tenant_number <= VLAN_TENANTS:
            raise FabricRefused(
                f"tenant #{tenant_number} has no RoCE VLAN: VLANs {VLAN_FIRST} to {VLAN_LAST} ({VLAN_TENANTS} tenants) "
                f"go to tenants #1 to #{VLAN_TENANTS}"
            )
        return Isolation("vlan", tenant_number + VLAN_FIRST - 1)
    raise FabricRefused(f"link layer {link_layer!r} is neither infiniband nor roce")


@dataclass(frozen=True)
class FabricNode:
    hostname: str
    nics: tuple[Nic, ...]


@dataclass(frozen=True)
class Fabric:
    """What a multi-node allocation gets on its fabric: the fabric, its link layer, the tenant's isolation, and
    each node's NICs (device, rail, the GPUs under the same PCIe switch)."""

    name: str
    link_layer: str
    isolation: Isolation
    nodes: tuple[FabricNode, ...]

    @property
    def rails(self) -> tuple[int, ...]:
        """The rails every node has a NIC on: a pod template is shared by all members, so it asks for these."""
        common = set.intersection(*({n.rail for n in node.nics} for node in self.nodes))
        return tuple(sorted(common))

    @property
    def rail_optimised(self) -> bool:
        """More than one rail: NIC i of every node goes to leaf i, so traffic stays on its rail (NCCL_CROSS_NIC=0)."""
        return len(self.rails) > 1

    @property
    def devices(self) -> tuple[str, ...]:
        """Every node's RDMA device names (the physical functions, as the host names them), once each."""
        return tuple(sorted({nic.device for node in self.nodes for nic in node.nics}))

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "link_layer": self.link_layer,
            "isolation": self.isolation.as_json(),
            "rails": list(self.rails),
            "nodes": [
                {
                    "hostname": node.hostname,
                    "nics": [{"device": n.device, "rail": n.rail, "gpus": list(n.gpus)} for n in node.nics],
                }
                for node in self.nodes
            ],
        }


def fabric_of(nodes: Sequence[tuple[str, Rdma | None]], tenant_number: int | None) -> Fabric | None:
    """The fabric of an allocation on ``nodes`` (hostname, its RDMA NICs or None), for the tenant numbered
    ``tenant_number`` (its primary key). None unless there are two nodes or more and every one has RDMA NICs:
    members on one node talk over NVLink and PCIe, and a node without a NIC leaves the gang on the pod network.

    Refused (``FabricRefused``) when the nodes are on different fabrics or link layers (they could not reach each
    other; placement keeps a gang on one fabric), share no rail, or the tenant has no partition or VLAN."""
    hosts = sorted({hostname: rdma for hostname, rdma in nodes}.items())
    if len(hosts) < 2 or any(rdma is None for _, rdma in hosts):
        return None
    found = [(hostname, rdma) for hostname, rdma in hosts if rdma is not None]
    fabrics = sorted({rdma.fabric for _, rdma in found})
    layers = sorted({rdma.link_layer for _, rdma in found})
    if len(fabrics) > 1:
        raise FabricRefused(f"the nodes are on {len(fabrics)} fabrics ({', '.join(fabrics)}); a gang needs one")
    if len(layers) > 1:
        raise FabricRefused(f"fabric {fabrics[0]} mixes link layers {layers}")
    if tenant_number is None:
        raise FabricRefused("the tenant's fabric partition is not known")
    fabric = Fabric(
        name=fabrics[0],
        link_layer=layers[0],
        isolation=tenant_isolation(layers[0], tenant_number),
        nodes=tuple(FabricNode(hostname, tuple(sorted(rdma.nics, key=lambda n: n.rail))) for hostname, rdma in found),
    )
    if not fabric.rails:
        raise FabricRefused(f"the nodes on fabric {fabric.name} have no rail in common")
    return fabric


def resource_prefix_check(prefix: str) -> str:
    """A device plugin resource prefix is a DNS subdomain with at least one dot (``rdma.ladder.io``)."""
    if not RESOURCE_PREFIX_RE.match(prefix) or len(prefix) > 253:
        raise ValueError(f"{prefix!r} is not a resource prefix (a DNS subdomain such as {FABRIC_RESOURCE_PREFIX})")
    return prefix
