"""The RDMA fabric of a multi-node gang (``render_fabric``): per-rail NetworkAttachmentDefinitions validated against
the vendored Multus CRD, the Job still valid Kubernetes 1.34 and restricted, the tenant's partition key or VLAN in
each NAD and never another tenant's, NCCL's environment, and the same facts on bare-metal hosts."""

from __future__ import annotations

import base64
import json
from dataclasses import replace

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from provisioning.domain.fabric import PARTITION_MAX, VLAN_TENANTS, FabricRefused, tenant_isolation
from provisioning.domain.fleet_document import Nic, Rdma
from provisioning.domain.workloads import Materials, Workload
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.client import plural
from provisioning.drivers.kubernetes.render_fabric import FabricParts, fabric_parts
from provisioning.drivers.kubernetes.shapes import AllocationShape
from tests.provisioning.drivers.kubernetes.test_render import BARE_METAL, GANG, TENANT, by_kind, node, one, shape, whole
from tests.provisioning.drivers.kubernetes.test_render_jobs import gang as framework_gang
from tests.provisioning.drivers.kubernetes.test_render_slurm import SLURM
from tests.support import k8s_schemas as schemas


def rdma(layer: str = "infiniband", fabric: str = "eu-west-1a/ib-0", rails: int = 8) -> Rdma:
    # Rail-optimised, as DGX H100 is cabled: NIC i beside GPU i, on leaf i.
    return Rdma(fabric=fabric, link_layer=layer, nics=tuple(Nic(f"mlx5_{i}", i, (i,)) for i in range(rails)))


def gang(layer: str = "infiniband", partition: int | None = 5) -> AllocationShape:
    """A 2x8 torchrun gang on two RDMA nodes."""
    nodes = tuple(replace(node(i, clique="clique-f"), rdma=rdma(layer)) for i in (30, 31))
    devices = whole(30, range(8)) + whole(31, range(8))
    return shape(140, "job", "whole_gpu", devices, nodes, gang_size=2, fabric_partition=partition)


def env_of(job: dict) -> dict[str, str]:
    container = job["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container["env"]}


def config_of(nad: dict) -> dict:
    return json.loads(nad["spec"]["config"])


def test_a_2x8_infiniband_gang_gets_a_nad_per_rail_vfs_env_and_interfaces() -> None:
    objs = render.allocation_objects(gang())
    schemas.validate_all(objs)  # the NADs against Multus's CRD, the Job against Kubernetes 1.34 (strict)
    nads = by_kind(objs, "NetworkAttachmentDefinition")
    assert [n["metadata"]["name"] for n in nads] == [f"ldr-140-rail{r}" for r in range(8)]
    kinds = [o["kind"] for o in objs]
    assert kinds.index("Job") > max(i for i, k in enumerate(kinds) if k == "NetworkAttachmentDefinition")
    first = config_of(nads[0])
    assert first["type"] == "ib-sriov"
    assert first["pkey"] == "0x8005"
    assert first["rdmaIsolation"] is True
    assert first["ibKubernetesEnabled"] is True
    assert first["ipam"] == {"type": "whereabouts", "range": "10.192.0.0/16", "network_name": "ladder-acme-rail0"}
    assert nads[3]["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/resourceName": "rdma.ladder.io/rail3"}
    assert nads[0]["metadata"]["labels"]["ladder.io/allocation"] == "140"

    job = one(objs, "Job")
    template = job["spec"]["template"]
    networks = json.loads(template["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"])
    assert networks == [{"name": f"ldr-140-rail{r}", "interface": f"rail{r}"} for r in range(8)]
    resources = template["spec"]["containers"][0]["resources"]
    for r in range(8):
        assert resources["requests"][f"rdma.ladder.io/rail{r}"] == resources["limits"][f"rdma.ladder.io/rail{r}"] == "1"
    assert resources["requests"]["cpu"] == "64"  # the GPUs' sizing is kept
    env = env_of(job)
    assert env["NCCL_IB_HCA"] == "mlx5"  # the pod's own VFs, whatever the kernel numbered them
    assert env["NCCL_SOCKET_IFNAME"] == "=eth0"
    assert env["NCCL_CROSS_NIC"] == "0"
    assert "NCCL_IB_GID_INDEX" not in env
    assert env["LADDER_FABRIC"] == "eu-west-1a/ib-0"
    assert env["LADDER_FABRIC_ISOLATION"] == "partition_key=0x8005"
    nics = json.loads(env["LADDER_FABRIC_NICS"])
    assert nics["gpu-node-30"][2] == {"interface": "rail2", "rail": 2, "host_device": "mlx5_2", "gpus": [2]}
    assert env["WORLD_SIZE"] == "2"
    assert env["NPROC_PER_NODE"] == "8"
    spec = template["spec"]
    assert "hostNetwork" not in spec
    assert schemas.restricted_violations(spec) == []


def test_a_roce_gang_gets_the_tenants_vlan_and_rdma_namespace_isolation() -> None:
    objs = render.allocation_objects(gang("roce", partition=41))
    schemas.validate_all(objs)
    config = config_of(by_kind(objs, "NetworkAttachmentDefinition")[1])
    sriov, rdma_cni = config["plugins"]
    assert sriov["type"] == "sriov"
    assert sriov["vlan"] == 42
    assert (sriov["spoofchk"], sriov["trust"]) == ("on", "off")
    assert rdma_cni == {"type": "rdma"}
    env = env_of(one(objs, "Job"))
    assert env["NCCL_IB_GID_INDEX"] == "3"
    assert env["LADDER_FABRIC_ISOLATION"] == "vlan=42"


def test_no_fabric_without_two_rdma_nodes() -> None:
    one_node = shape(141, "job", "whole_gpu", whole(30, range(8)), (replace(node(30), rdma=rdma()),), gang_size=2)
    half = replace(gang(), nodes=(gang().nodes[0], replace(gang().nodes[1], rdma=None)))
    for a in (one_node, half, GANG):
        assert fabric_parts(a, 4 if a is one_node else len(a.devices) // a.gang_size) == FabricParts()
    job = one(render.allocation_objects(GANG), "Job")
    assert "k8s.v1.cni.cncf.io/networks" not in job["spec"]["template"]["metadata"]["annotations"]


def test_only_the_rails_every_node_has_are_asked_for() -> None:
    a = gang()
    short = replace(a.nodes[1], rdma=rdma(rails=4))
    parts = fabric_parts(replace(a, nodes=(a.nodes[0], short)), 8)
    assert sorted(parts.resources) == [f"rdma.ladder.io/rail{r}" for r in range(4)]
    single = fabric_parts(replace(a, nodes=tuple(replace(n, rdma=rdma(rails=1)) for n in a.nodes)), 8)
    assert "NCCL_CROSS_NIC" not in {e["name"] for e in single.env}  # one rail: nothing to keep on it


def test_a_gang_across_fabrics_or_without_a_partition_is_refused() -> None:
    a = gang()
    split = replace(a, nodes=(a.nodes[0], replace(a.nodes[1], rdma=rdma(fabric="eu-west-1a/ib-1"))))
    with pytest.raises(FabricRefused, match="2 fabrics"):
        render.allocation_objects(split)
    with pytest.raises(FabricRefused, match="partition is not known"):
        render.allocation_objects(gang(partition=None))
    with pytest.raises(FabricRefused, match="no RoCE VLAN"):
        render.allocation_objects(gang("roce", partition=VLAN_TENANTS + 1))
    with pytest.raises(ValueError, match="members of 3"):
        fabric_parts(a, 3)


@given(st.integers(1, PARTITION_MAX), st.integers(1, PARTITION_MAX))
def test_a_tenants_partition_key_is_never_anothers(one_tenant: int, other: int) -> None:
    mine, theirs = tenant_isolation("infiniband", one_tenant), tenant_isolation("infiniband", other)
    assert (mine == theirs) == (one_tenant == other)
    assert mine.value & 0x8000
    assert 0x0001 <= mine.value & 0x7FFF <= 0x7FFE


@given(st.integers(1, VLAN_TENANTS), st.integers(1, VLAN_TENANTS))
def test_a_tenants_vlan_is_never_anothers(one_tenant: int, other: int) -> None:
    mine, theirs = tenant_isolation("roce", one_tenant), tenant_isolation("roce", other)
    assert (mine == theirs) == (one_tenant == other)
    assert 2 <= mine.value <= 4094


@given(st.one_of(st.integers(max_value=0), st.integers(min_value=PARTITION_MAX + 1)))
def test_a_tenant_beyond_the_partitions_is_refused(number: int) -> None:
    with pytest.raises(FabricRefused, match="no InfiniBand partition"):
        tenant_isolation("infiniband", number)


def test_bare_metal_hosts_boot_with_the_fabric_in_their_user_data() -> None:
    hosts = tuple(replace(n, rdma=rdma("roce", fabric="eu-west-1a/roce-0")) for n in BARE_METAL.nodes)
    a = replace(BARE_METAL, nodes=hosts, workload=Workload(env=(("NCCL_DEBUG", "INFO"),)), fabric_partition=9)
    a = replace(a, materials=Materials(ssh_keys=()))
    secret = one(render.bare_metal_host_objects(a), "Secret")
    text = base64.b64decode(secret["data"]["userData"]).decode()
    config = yaml.safe_load(text)
    writes = {w["path"]: w for w in config["write_files"]}
    fabric = json.loads(writes["/etc/ladder/fabric.json"]["content"])
    assert fabric["isolation"] == {"kind": "vlan", "value": "10"}
    assert fabric["link_layer"] == "roce"
    assert [n["hostname"] for n in fabric["nodes"]] == ["gpu-node-20", "gpu-node-21"]
    assert writes["/etc/ladder/fabric.json"]["permissions"] == "0444"
    environment = writes["/etc/environment"]["content"]
    assert 'NCCL_IB_HCA="=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"' in environment
    assert 'NCCL_IB_GID_INDEX="3"' in environment
    assert 'NCCL_DEBUG="INFO"' in environment
    plain = replace(BARE_METAL, workload=Workload(), materials=Materials())
    assert (
        "fabric"
        not in base64.b64decode(one(render.bare_metal_host_objects(plain), "Secret")["data"]["userData"]).decode()
    )


def test_kueue_leaves_the_vfs_to_the_scheduler_and_the_quota_admits_them() -> None:
    assert render.kueue_configuration()["resources"]["excludeResourcePrefixes"] == ["rdma.ladder.io/"]
    assert render.kueue_configuration("rdma.example.com")["resources"]["excludeResourcePrefixes"] == [
        "rdma.example.com/"
    ]
    with pytest.raises(ValueError, match="not a resource prefix"):
        render.kueue_configuration("Not A Prefix")
    # A ResourceQuota limits only the resources it lists: the VFs are not among them.
    quota = one(render.namespace_set(TENANT), "ResourceQuota")["spec"]["hard"]
    assert not [key for key in quota if "rdma.ladder.io" in key]


def test_the_client_and_the_fake_name_the_nad_resource_alike() -> None:
    from tests.fakes.kubernetes import plural_of

    assert plural("NetworkAttachmentDefinition") == plural_of("NetworkAttachmentDefinition")
    assert plural("NetworkAttachmentDefinition") == "network-attachment-definitions"


def test_the_multus_validator_catches_a_wrong_field() -> None:
    nad = by_kind(render.allocation_objects(gang()), "NetworkAttachmentDefinition")[0]
    nad["spec"]["cniConfig"] = nad["spec"].pop("config")
    with pytest.raises(schemas.ManifestError, match="cniConfig"):
        schemas.validate_all([nad])


def _on_rdma(a: AllocationShape) -> AllocationShape:
    return replace(a, nodes=tuple(replace(n, rdma=rdma()) for n in a.nodes), fabric_partition=5)


@pytest.mark.parametrize("framework", ["mpi", "ray", "slurm"])
def test_every_frameworks_members_get_the_fabric_and_no_cpu_pod_does(framework: str) -> None:
    a = _on_rdma(SLURM if framework == "slurm" else framework_gang(210, framework))
    objs = render.allocation_objects(a)
    schemas.validate_all(objs)
    nads = by_kind(objs, "NetworkAttachmentDefinition")
    assert len(nads) == 8
    assert {n["metadata"]["namespace"] for n in nads} == {a.namespace}  # beside the pods that attach them
    primary = next(o for o in objs if o["kind"] in ("MPIJob", "RayJob", "NodeSet"))
    kinds = [o["kind"] for o in objs]
    assert kinds.index(primary["kind"]) > max(i for i, k in enumerate(kinds) if k == "NetworkAttachmentDefinition")
    text = json.dumps(primary)
    assert "k8s.v1.cni.cncf.io/networks" in text
    assert '"rdma.ladder.io/rail7": "1"' in text
    assert '"NCCL_IB_HCA"' in text
    for template in schemas.pod_templates(primary):
        spec = template["spec"]
        holds_gpus = bool(spec.get("resourceClaims"))
        annotations = (template.get("metadata") or {}).get("annotations") or {}
        assert ("k8s.v1.cni.cncf.io/networks" in annotations) == holds_gpus  # a launcher or head holds no VF
        limits = spec["containers"][0].get("resources", {}).get("limits", {})
        assert ("rdma.ladder.io/rail0" in limits) == holds_gpus
