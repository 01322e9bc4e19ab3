"""A Slurm cluster on the job rung (``render_slurm``): every Slinky object validated against the vendored CRDs'
served version, the pod templates the operator builds from them validated as core pods, and the placement carried
into the gang's slurmd pods (hosts, clique, claims naming exactly the placed UUIDs, replicas == gang)."""

from __future__ import annotations

import base64
import copy
import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provisioning.domain.workloads import Materials, SecretRef, Workload
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.render_access import access_objects
from provisioning.drivers.kubernetes.render_slurm import LABEL_SLURM_ROLE, SLURMD_IMAGE, slurmd_template
from provisioning.drivers.kubernetes.shapes import AllocationShape, TenantShape
from tests.provisioning.drivers.kubernetes.test_render import node, pinned_hosts, shape, uuid, whole
from tests.support import k8s_schemas as schemas

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx6lNbpUuN5bI3Wq9CY3Mqq9nDk3xjXJ6e0y4r2Vn1T alice@laptop"
SLURM = shape(
    301,
    "job",
    "whole_gpu",
    whole(20, range(8)) + whole(21, range(8)),
    (node(20, "clique-s"), node(21, "clique-s")),
    gang_size=2,
    workload=Workload(framework="slurm", ssh_keys=(7,), env=(("NCCL_DEBUG", "INFO"),)),
    materials=Materials(ssh_keys=(KEY,)),
    slurm_key="k" * 128,
)
NS = "ladder-acme-slurm"


def kinds(objs: list[dict[str, Any]]) -> list[str]:
    return [o["kind"] for o in objs]


def the(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objs if o["kind"] == kind]
    return found


def as_pod(name: str, template: dict[str, Any], container: dict[str, Any], container_name: str) -> dict[str, Any]:
    """The pod an operator builds from a template and a container's fields, for the core schema."""
    spec = {**template.get("spec", {}), "containers": [{"name": container_name, **container}]}
    metadata = {"name": name, "namespace": NS, **template.get("metadata", {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def test_a_two_by_eight_slurm_cluster_validates_and_carries_the_placement() -> None:
    objs = render.allocation_objects(SLURM)
    schemas.validate_all(objs)
    assert kinds(objs) == [
        *("Secret", "Secret", "ConfigMap", "Controller", "ResourceClaimTemplate", "NodeSet", "LoginSet"),
        *("Service", "NetworkPolicy"),
    ]
    assert {o["metadata"]["namespace"] for o in objs} == {NS}
    assert {o["apiVersion"] for o in objs if o["kind"] in ("Controller", "NodeSet", "LoginSet")} == {
        "slinky.slurm.net/v1beta1"
    }

    nodeset = the(objs, "NodeSet")["spec"]
    assert nodeset["replicas"] == 2
    assert nodeset["controllerRef"] == {"name": "ldr-301"}
    assert nodeset["extraConf"] == "Gres=gpu:8"
    template = nodeset["template"]
    labels, annotations = template["metadata"]["labels"], template["metadata"]["annotations"]
    assert labels["ladder.io/allocation"] == "301"
    assert labels[LABEL_SLURM_ROLE] == "slurmd"
    assert labels["kueue.x-k8s.io/queue-name"] == "ladder"
    assert labels["kueue.x-k8s.io/pod-group-name"] == "ldr-301"
    assert annotations == {
        "kueue.x-k8s.io/pod-group-total-count": "2",
        "kueue.x-k8s.io/podset-required-topology": "nvidia.com/gpu.clique",
    }
    spec = template["spec"]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["gpu-node-20", "gpu-node-21"]
    assert spec["nodeSelector"] == {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.clique": "clique-s",
    }
    assert spec["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "ldr-301-gpus"}]
    slurmd = nodeset["slurmd"]
    assert slurmd["image"] == SLURMD_IMAGE
    assert slurmd["resources"]["claims"] == [{"name": "gpus"}]
    assert slurmd["securityContext"]["privileged"] is False
    assert {"name": "NCCL_DEBUG", "value": "INFO"} in slurmd["env"]
    schemas.validate_all([as_pod("ldr-301-0", template, slurmd, "slurmd")])

    # Each member claims 8 of exactly the 16 placed GPUs.
    (request,) = the(objs, "ResourceClaimTemplate")["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["count"] == 8
    named = set(re.findall(r'"(gpu-[^"]+)"', request["exactly"]["selectors"][0]["cel"]["expression"]))
    assert named == {uuid(h, g).lower() for h in (20, 21) for g in range(8)}

    controller = the(objs, "Controller")["spec"]
    auth = objs[0]
    assert auth["metadata"]["name"] == "ldr-301-slurm-auth"
    assert controller["slurmKeyRef"] == {"name": "ldr-301-slurm-auth", "key": "slurm.key"}
    assert base64.b64decode(auth["data"]["slurm.key"]).decode() == "k" * 128
    assert auth["data"]["jwt.key"] != auth["data"]["slurm.key"]
    assert "resourceClaims" not in controller["template"]["spec"]  # CPU only
    schemas.validate_all([as_pod("ldr-301-controller-0", controller["template"], controller["slurmctld"], "slurmctld")])

    login = the(objs, "LoginSet")["spec"]
    assert login["rootSshAuthorizedKeys"] == KEY + "\n"
    assert login["sssdConfRef"] == {"name": "ldr-301-sssd", "key": "sssd.conf"}
    assert login["template"]["metadata"]["labels"][LABEL_SLURM_ROLE] == "login"
    schemas.validate_all([as_pod("ldr-301-login", login["template"], login["login"], "login")])

    # The SSH gateway's route lands on the login pod's sshd, as root; only the gateway may reach it.
    service = the(objs, "Service")
    assert service["metadata"]["labels"]["ladder.io/ssh-user"] == "ldr-301"
    assert service["metadata"]["annotations"]["ladder.io/ssh-login"] == "root"
    assert service["metadata"]["annotations"]["ladder.io/ssh-authorized-keys"] == KEY
    assert service["spec"]["selector"] == {"ladder.io/allocation": "301", LABEL_SLURM_ROLE: "login"}
    assert service["spec"]["ports"] == [{"name": "ssh", "port": 22, "targetPort": 22, "protocol": "TCP"}]
    policy = the(objs, "NetworkPolicy")["spec"]
    assert policy["podSelector"] == {"matchLabels": {"ladder.io/allocation": "301", LABEL_SLURM_ROLE: "login"}}
    (rule,) = policy["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 22}]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ladder-system"}}}]


def test_the_controller_and_login_node_request_what_was_placed_and_go_where_it_was() -> None:
    objs = render.allocation_objects(replace(SLURM, side_host=node(22).hostname))
    schemas.validate_all(objs)
    controller, login = the(objs, "Controller")["spec"], the(objs, "LoginSet")["spec"]
    for template, container, name in (
        (controller["template"], controller["slurmctld"], "slurmctld"),
        (login["template"], login["login"], "login"),
    ):
        assert pinned_hosts(template["spec"]) == [node(22).hostname]
        assert container["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}
        schemas.validate_all([as_pod(f"ldr-301-{name}", template, container, name)])
    assert "affinity" not in the(render.allocation_objects(SLURM), "Controller")["spec"]["template"]["spec"]


def test_multi_node_nvlink_adds_a_compute_domain_and_a_channel_per_member() -> None:
    gb200 = replace(SLURM, gpu_model="GB200", devices=whole(20, range(4)) + whole(21, range(4)))
    objs = render.allocation_objects(gb200)
    schemas.validate_all(objs)
    domain = the(objs, "ComputeDomain")
    assert domain["spec"]["channel"]["resourceClaimTemplate"]["name"] == "ldr-301-channel"
    nodeset = the(objs, "NodeSet")["spec"]
    assert nodeset["extraConf"] == "Gres=gpu:4"
    assert {"name": "channel", "resourceClaimTemplateName": "ldr-301-channel"} in nodeset["template"]["spec"][
        "resourceClaims"
    ]
    assert {"name": "channel"} in nodeset["slurmd"]["resources"]["claims"]


def test_the_tenants_secrets_and_image_reach_slurmd_by_reference() -> None:
    w = Workload(framework="slurm", image="nvcr.io/nvidia/pytorch:25.01-py3", secrets=(SecretRef("HF_TOKEN"),))
    objs = render.allocation_objects(replace(SLURM, workload=w, materials=Materials(secrets={"HF_TOKEN": "s3cr3t"})))
    schemas.validate_all(objs)
    slurmd = the(objs, "NodeSet")["spec"]["slurmd"]
    assert slurmd["image"] == "nvcr.io/nvidia/pytorch:25.01-py3"
    ref = {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "ldr-301-secrets", "key": "HF_TOKEN"}}}
    assert ref in slurmd["env"]
    assert "s3cr3t" not in str([o for o in objs if o["kind"] != "Secret"])
    assert not [o for o in objs if o["kind"] == "Service"]  # no keys: no SSH route


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="auth key"):
        render.allocation_objects(replace(SLURM, slurm_key=None))
    with pytest.raises(ValueError, match="equal members"):
        render.allocation_objects(replace(SLURM, gang_size=3))
    split = (node(20, "clique-s"), node(21, "clique-t"))
    with pytest.raises(ValueError, match="one NVLink domain"):
        render.allocation_objects(replace(SLURM, nodes=split))


def test_the_slurm_namespace_is_privileged_for_slinky_and_audited_as_restricted() -> None:
    objs = render.namespace_set(TenantShape(slug="acme", gpu_quota_milli=16_000), slurm=True)
    schemas.validate_all(objs)
    namespace = objs[0]
    labels = namespace["metadata"]["labels"]
    assert namespace["metadata"]["name"] == NS
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert labels["pod-security.kubernetes.io/audit"] == "restricted"
    assert {o["kind"] for o in objs} >= {"NetworkPolicy", "LocalQueue", "ResourceQuota"}
    assert {o["metadata"].get("namespace") for o in objs[1:]} == {NS}
    # The tenant's own namespace stays restricted.
    assert (
        render.namespace_set(TenantShape(slug="acme"))[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        == "restricted"
    )


def test_kueue_admits_plain_pods_as_groups() -> None:
    assert "pod" in render.kueue_configuration()["integrations"]["frameworks"]


@given(gang=st.integers(min_value=1, max_value=6), per_member=st.sampled_from([1, 2, 4, 8]))
def test_any_gang_gets_one_slurmd_per_member_claiming_its_share_of_exactly_the_placed_gpus(
    gang: int, per_member: int
) -> None:
    devices = tuple(d for h in range(gang) for d in whole(40 + h, range(per_member)))
    a: AllocationShape = replace(
        SLURM, devices=devices, nodes=tuple(node(40 + h, "clique-p") for h in range(gang)), gang_size=gang
    )
    objs = render.allocation_objects(a)
    nodeset = the(objs, "NodeSet")["spec"]
    assert nodeset["replicas"] == gang
    assert nodeset["template"]["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == str(gang)
    (request,) = the(objs, "ResourceClaimTemplate")["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["count"] == per_member
    named = set(re.findall(r'"(gpu-[^"]+)"', request["exactly"]["selectors"][0]["cel"]["expression"]))
    assert named == {d.gpu_uuid.lower() for d in devices}
    assert slurmd_template(a).spec == nodeset["template"]["spec"]
    assert render.allocation_objects(copy.deepcopy(a)) == objs  # deterministic


def test_access_objects_of_a_slurm_cluster_without_keys_are_none() -> None:
    bare = replace(SLURM, workload=Workload(framework="slurm"), materials=Materials())
    assert access_objects(bare) == []
