"""The RDMA fabric of a multi-node job's pods: what every gang renderer (torchrun's Indexed Job here; MPI, Ray and
Slurm elsewhere) adds so its members meet over InfiniBand or RoCE, not only over the cluster's overlay network.
Pure functions returning plain dicts (no Django, no I/O).

How a member reaches the fabric (the NVIDIA Network Operator's SR-IOV recipe, done with the upstream parts):

- The SR-IOV network device plugin (k8snetworkplumbingwg/sriov-network-device-plugin) advertises each node's
  virtual functions per rail as the extended resource ``<prefix>/rail<r>`` (``AllocationShape.
  fabric_resource_prefix``). A member requests one VF per rail (requests == limits, as extended resources must).
- Multus (k8snetworkplumbingwg/multus-cni) reads the pod annotation ``k8s.v1.cni.cncf.io/networks`` and attaches
  one secondary interface per rail, ``rail<r>``, from the allocation's NetworkAttachmentDefinition
  ``ldr-<id>-rail<r>``. The NAD's ``k8s.v1.cni.cncf.io/resourceName`` annotation tells Multus which device
  plugin resource holds the VF, whose PCI address it hands the CNI plugin as ``deviceID``.
- InfiniBand: the ``ib-sriov`` CNI (k8snetworkplumbingwg/ib-sriov-cni) with the tenant's ``pkey``,
  ``rdmaIsolation`` (the VF's RDMA device moves into the pod's network namespace: the pod sees its own devices
  only) and ``ibKubernetesEnabled`` (the CNI waits until ib-kubernetes has had the subnet manager add the VF's
  GUID to that partition: the partition is what isolates tenants, the switches enforce it).
- RoCE: the ``sriov`` CNI (k8snetworkplumbingwg/sriov-cni) with the tenant's ``vlan`` (tagged by the NIC's
  embedded switch: the VF cannot leave it), ``spoofchk`` on and ``trust`` off (no other MAC, no VLAN of its own),
  chained with the ``rdma`` CNI (k8snetworkplumbingwg/rdma-cni) for the same RDMA namespace isolation.
- Addresses come from whereabouts (k8snetworkplumbingwg/whereabouts): one subnet per rail (two interfaces in one
  subnet would answer each other's ARP), a pool per tenant and rail (``network_name``); the ranges of two tenants
  may overlap, their partitions or VLANs never do. RoCE v2 needs the address (its GIDs are made from it); on
  InfiniBand it is IPoIB, for tools and RDMA CM, while NCCL speaks verbs by LID.

DRA (``resource.k8s.io``, e.g. the NVIDIA DRA driver's or an SR-IOV DRA driver's NIC devices) is the alternative:
GPUs and NICs in one claim, with a constraint pairing each GPU with the NIC under its PCIe switch. It is not used
yet: no released NIC driver ships a stable DeviceClass and CNI configuration to rely on, whereas device plugin,
Multus and the SR-IOV CNIs are what the network operators install today. The interface of ``fabric_parts`` does
not change if it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from provisioning.domain.fabric import Fabric, fabric_of, resource_prefix_check
from provisioning.drivers.kubernetes.manifest import Obj, hosts, obj, own
from provisioning.drivers.kubernetes.shapes import AllocationShape

NAD_API = "k8s.cni.cncf.io/v1"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
RESOURCE_NAME_ANNOTATION = "k8s.v1.cni.cncf.io/resourceName"
CNI_VERSION = "0.3.1"  # spoken by ib-sriov, sriov, rdma and whereabouts alike
RAIL_SUBNET_BASE = 192  # rail r's addresses are 10.(192 + r).0.0/16: 10.192.0.0/10 must be free in the cluster
ROCE_V2_GID_INDEX = "3"  # the RoCE v2 GID of the interface's IPv4 address, on mlx5 (0, 1: link-local; 2: RoCE v1)
PRIMARY_INTERFACE = "eth0"  # the pod network: NCCL's bootstrap, and torchrun's rendezvous


@dataclass(frozen=True)
class FabricParts:
    """What a gang renderer adds for the fabric; empty when the gang has none."""

    objects: tuple[Obj, ...] = ()  # applied before the pods (NetworkAttachmentDefinitions)
    annotations: Mapping[str, str] = field(default_factory=dict)  # the member pod template's
    env: tuple[Obj, ...] = ()  # the worker container's (NCCL_*, LADDER_FABRIC*)
    resources: Mapping[str, str] = field(default_factory=dict)  # per member, requests == limits (VFs)


def nad_name(a: AllocationShape, rail: int) -> str:
    return f"{a.object_name}-rail{rail}"


def interface_name(rail: int) -> str:
    return f"rail{rail}"


def resource_name(a: AllocationShape, rail: int) -> str:
    return f"{resource_prefix_check(a.fabric_resource_prefix)}/rail{rail}"


def allocation_fabric(a: AllocationShape) -> Fabric | None:
    """The fabric of the allocation's nodes (``provisioning.domain.fabric.fabric_of``); a host without a node shape
    counts as one without RDMA."""
    known = {n.hostname: n.rdma for n in a.nodes}
    return fabric_of([(host, known.get(host)) for host in hosts(a)], a.fabric_partition)


def fabric_parts(a: AllocationShape, per_member: int) -> FabricParts:
    """The fabric's objects, annotations, environment and VF requests for a gang whose members hold
    ``per_member`` GPUs each. Empty unless the gang spans more than one node and every node has RDMA NICs.

    Each member asks for one VF on each rail all the gang's nodes share, whatever its GPUs: the pod template is
    the same for every member, and which of a node's placed GPUs a member gets is the DRA scheduler's choice, made
    after rendering. NCCL then picks, per GPU, the NIC closest to it on the PCIe tree (it reads the topology from
    /sys, where a VF sits under its PF's switch): the affinity needs no hint. ``LADDER_FABRIC_NICS`` states the
    map anyway, per node (``LADDER_NODE_NAME`` says which node the member is on), for tools and checks."""
    if per_member < 1 or len(a.devices) % per_member:
        raise ValueError(f"allocation {a.id}: {len(a.devices)} GPUs do not split into members of {per_member}")
    fabric = allocation_fabric(a)
    if fabric is None:
        return FabricParts()
    rails = fabric.rails
    objects = tuple(_attachment(a, fabric, rail) for rail in rails)
    networks = [{"name": nad_name(a, rail), "interface": interface_name(rail)} for rail in rails]
    return FabricParts(
        objects=objects,
        annotations={NETWORKS_ANNOTATION: json.dumps(networks, separators=(",", ":"))},
        env=tuple(_env(fabric)),
        resources={resource_name(a, rail): "1" for rail in rails},
    )


def _attachment(a: AllocationShape, fabric: Fabric, rail: int) -> Obj:
    """The NetworkAttachmentDefinition of one rail: the tenant's partition key or VLAN is in its CNI config."""
    name = nad_name(a, rail)
    ipam = {
        "type": "whereabouts",
        "range": f"10.{RAIL_SUBNET_BASE + rail}.0.0/16",
        "network_name": f"{a.namespace}-rail{rail}",
    }
    config: Obj
    if fabric.link_layer == "infiniband":
        config = {
            "cniVersion": CNI_VERSION,
            "name": name,
            "type": "ib-sriov",
            "pkey": fabric.isolation.shown,
            "link_state": "enable",
            "rdmaIsolation": True,
            "ibKubernetesEnabled": True,
            "ipam": ipam,
        }
    else:
        sriov = {
            "type": "sriov",
            "vlan": fabric.isolation.value,
            "spoofchk": "on",
            "trust": "off",
            "link_state": "enable",
            "ipam": ipam,
        }
        config = {"cniVersion": CNI_VERSION, "name": name, "plugins": [sriov, {"type": "rdma"}]}
    metadata = own(a, name)
    metadata["annotations"] = {RESOURCE_NAME_ANNOTATION: resource_name(a, rail)}
    return obj(NAD_API, "NetworkAttachmentDefinition", metadata, spec={"config": json.dumps(config, sort_keys=True)})


def device_prefixes(devices: tuple[str, ...]) -> str:
    """``NCCL_IB_HCA`` inside a pod: the drivers' device name prefixes (``mlx5``), which NCCL matches as prefixes.
    A VF's RDMA device is not named like the host's PF (``mlx5_0`` on the host, ``mlx5_12`` for one of its VFs,
    whatever number the kernel gave), and with RDMA isolation the pod sees only its own VFs: the prefix picks
    exactly those."""
    return ",".join(sorted({re.sub(r"_?[0-9]+$", "", device) for device in devices}))


def _env(fabric: Fabric) -> list[Obj]:
    interfaces = {rail: interface_name(rail) for rail in fabric.rails}
    nics = {
        node.hostname: [
            {"interface": interfaces[nic.rail], "rail": nic.rail, "host_device": nic.device, "gpus": list(nic.gpus)}
            for nic in node.nics
            if nic.rail in interfaces
        ]
        for node in fabric.nodes
    }
    values = {
        "NCCL_IB_HCA": device_prefixes(fabric.devices),
        "NCCL_SOCKET_IFNAME": f"={PRIMARY_INTERFACE}",  # "=": this interface exactly, not every eth0*
        **({"NCCL_IB_GID_INDEX": ROCE_V2_GID_INDEX} if fabric.link_layer == "roce" else {}),
        **({"NCCL_CROSS_NIC": "0"} if fabric.rail_optimised else {}),
        "LADDER_FABRIC": fabric.name,
        "LADDER_FABRIC_LINK_LAYER": fabric.link_layer,
        "LADDER_FABRIC_ISOLATION": f"{fabric.isolation.kind}={fabric.isolation.shown}",
        "LADDER_FABRIC_NICS": json.dumps(nics, sort_keys=True, separators=(",", ":")),
    }
    node_name = {"name": "LADDER_NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    return [*({"name": k, "value": v} for k, v in values.items()), node_name]


# --- bare metal: the tenant's own OS on the hosts -----------------------------------------------------------------

FABRIC_FILE = "/etc/ladder/fabric.json"


def host_fabric(a: AllocationShape) -> tuple[dict[str, str], dict[str, str]]:
    """What a bare-metal allocation's hosts boot with for the fabric: the variables for ``/etc/environment`` and
    the files (``FABRIC_FILE``: the allocation's fabric, as the API states it). Empty unless it holds two hosts or
    more, each with RDMA NICs.

    No pod, no VF: the tenant's OS drives the physical functions, named as the host names them, so
    ``NCCL_IB_HCA`` lists them exactly (``=mlx5_0,mlx5_1``). The isolation is the fabric's: the subnet manager
    puts the hosts' ports in the tenant's partition only (InfiniBand), or the switch ports are access ports of
    the tenant's VLAN (RoCE), and the tenant's root on the host changes neither."""
    fabric = allocation_fabric(a)
    if fabric is None:
        return {}, {}
    env = {
        "NCCL_IB_HCA": "=" + ",".join(fabric.devices),
        **({"NCCL_IB_GID_INDEX": ROCE_V2_GID_INDEX} if fabric.link_layer == "roce" else {}),
        **({"NCCL_CROSS_NIC": "0"} if fabric.rail_optimised else {}),
        "LADDER_FABRIC": fabric.name,
        "LADDER_FABRIC_LINK_LAYER": fabric.link_layer,
        "LADDER_FABRIC_ISOLATION": f"{fabric.isolation.kind}={fabric.isolation.shown}",
        "LADDER_FABRIC_FILE": FABRIC_FILE,
    }
    return env, {FABRIC_FILE: json.dumps(fabric.as_json(), indent=2, sort_keys=True) + "\n"}
