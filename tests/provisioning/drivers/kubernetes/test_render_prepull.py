"""An idle endpoint's image pulled in advance: the DaemonSet ``ldr-<id>-prepull`` validates against Kubernetes 1.34
(strict), runs only on the hosts it is given, asks for no GPU, keeps Pod Security "restricted", pulls with the
endpoint's own credentials, and its pods are never taken for the endpoint's replicas. A replica reading its model
from a model cache volume finds it in ``LADDER_MODEL_DIR``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from provisioning.domain.workloads import Model, Volume, Workload
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.render_prepull import PAUSE_IMAGE, prepull_daemonset, prepull_ref
from provisioning.drivers.kubernetes.render_workload import placeholder_materials
from provisioning.drivers.kubernetes.shapes import DEFAULT_IMAGE, AllocationShape, DeviceShape, NodeShape
from tests.support import k8s_schemas as schemas

IMAGE = "ghcr.io/acme/server:1.0"


def endpoint(workload: Workload | None = None) -> AllocationShape:
    devices = tuple(DeviceShape(hostname="gpu-node-07", gpu_index=g, gpu_uuid=f"GPU-7-{g}") for g in range(2))
    shape = AllocationShape(
        id=108,
        name="llm",
        tenant="acme",
        rung="serverless",
        performance="whole_gpu",
        security="container",
        gpu_model="H100-SXM-80GB",
        devices=devices,
        nodes=(NodeShape(hostname="gpu-node-07", nvlink_domain="clique-a"),),
        workload=workload,
    )
    return replace(shape, materials=placeholder_materials(workload)) if workload is not None else shape


def pod_spec(daemonset: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = daemonset["spec"]["template"]["spec"]
    return spec


def test_the_prepull_daemonset_is_valid_restricted_and_holds_no_gpu() -> None:
    daemonset = prepull_daemonset(endpoint(Workload(image=IMAGE)), ["gpu-node-09", "gpu-node-07", "gpu-node-09"])
    schemas.validate_all([daemonset])
    schemas.validate_pod_templates(daemonset)
    assert (daemonset["apiVersion"], daemonset["kind"]) == ("apps/v1", "DaemonSet")
    assert (daemonset["metadata"]["name"], daemonset["metadata"]["namespace"]) == ("ldr-108-prepull", "ladder-acme")
    spec = pod_spec(daemonset)
    assert schemas.restricted_violations(spec) == []
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-node-07", "gpu-node-09"]}
            ]
        }
    ]
    (pull,) = spec["initContainers"]
    (pause,) = spec["containers"]
    assert (pull["image"], pull["command"]) == (IMAGE, ["true"])
    assert pause["image"] == PAUSE_IMAGE
    for container in (pull, pause):
        assert "claims" not in container["resources"]
        assert not any("nvidia.com" in key for key in container["resources"].get("limits", {}))
    assert "resourceClaims" not in spec
    assert "volumes" not in spec
    assert spec["automountServiceAccountToken"] is False
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert "imagePullSecrets" not in spec


def test_its_pods_are_never_the_endpoints_replicas() -> None:
    shape = endpoint(Workload(image=IMAGE))
    daemonset = prepull_daemonset(shape, ["gpu-node-07"])
    labels = daemonset["spec"]["template"]["metadata"]["labels"]
    assert "ladder.io/allocation" not in labels  # the Service, the replica count and the logs select on it
    assert labels["ladder.io/prepull"] == "108"
    assert daemonset["spec"]["selector"] == {"matchLabels": {"ladder.io/prepull": "108"}}
    service = next(o for o in render.allocation_objects(shape) if o["kind"] == "Service")
    assert not set(service["spec"]["selector"].items()) <= set(labels.items())
    ref = prepull_ref(shape)
    assert (ref["kind"], ref["metadata"]["name"], ref["metadata"]["namespace"]) == (
        "DaemonSet",
        "ldr-108-prepull",
        "ladder-acme",
    )


def test_it_pulls_the_stock_image_or_with_the_endpoints_own_credentials() -> None:
    stock = prepull_daemonset(endpoint(), ["gpu-node-07"])
    assert pod_spec(stock)["initContainers"][0]["image"] == DEFAULT_IMAGE
    private = prepull_daemonset(endpoint(Workload(image=IMAGE, pull_secret="REGISTRY")), ["gpu-node-07"])
    schemas.validate_all([private])
    assert pod_spec(private)["imagePullSecrets"] == [{"name": "ldr-108-pull"}]
    with pytest.raises(ValueError, match="at least one host"):
        prepull_daemonset(endpoint(), [])


def test_a_replica_finds_its_model_cache_in_ladder_model_dir() -> None:
    cache = Volume("/models", volume=5, read_only=True)
    shape = endpoint(Workload(image=IMAGE, volumes=(cache,), model=Model(size_gb=20, volume=5)))
    objs = render.allocation_objects(shape)
    schemas.validate_all(objs)
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    (worker,) = deployment["spec"]["template"]["spec"]["containers"]
    assert {"name": "LADDER_MODEL_DIR", "value": "/models"} in worker["env"]
    assert {"name": "vol-0", "mountPath": "/models", "readOnly": True} in worker["volumeMounts"]
    downloaded = endpoint(Workload(image=IMAGE, model=Model(size_gb=20)))
    deployment = next(o for o in render.allocation_objects(downloaded) if o["kind"] == "Deployment")
    (worker,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "LADDER_MODEL_DIR" not in {e["name"] for e in worker.get("env") or []}
