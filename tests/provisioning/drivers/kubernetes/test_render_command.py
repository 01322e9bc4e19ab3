"""Rendering from the database: ``allocation_shape`` carries the stored workload, the resolved materials, the hall
and the base domain; the driver applies a workload's objects (bare metal's BareMetalHosts too); ``k8s_render``
prints an allocation's objects with placeholders and resolves no secret."""

from __future__ import annotations

import base64
from io import StringIO
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from provisioning.domain.os_images import os_catalog
from provisioning.domain.workloads import Materials, Port, SecretRef, Workload
from provisioning.drivers.kubernetes.desired import allocation_shape
from provisioning.drivers.kubernetes.driver import KubernetesProvisioner
from provisioning.models import Allocation
from provisioning.services import workloads as workload_services
from provisioning.services.placing import AllocationSpec, allocation_request
from tests.fakes.kubernetes import K8sServer
from tests.support import SYSTEM
from tests.support.kubernetes import enrolled

TOKEN = "hf_db_7c6b5a49"  # a tenant secret's value, resolved by the materials source
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGRhdGFiYXNlLXRlc3Qta2V5 bob@desk"
WORKLOAD = Workload(
    image="ghcr.io/acme/app:2.0",
    command=("python", "app.py"),
    env=(("MODE", "prod"),),
    secrets=(SecretRef("HF_TOKEN"),),
    ports=(Port(8080, "http", "public"),),
    ssh_keys=(3,),
)
METAL = Workload(os_image="rocky-9", cloud_init="#cloud-config\npackages: [htop]\n", ssh_keys=(3,))


def place(tenant: Any, workload: Workload, **spec: Any) -> Allocation:
    allocation = allocation_request(
        tenant=tenant, name="work", spec=AllocationSpec(gpu_models=("H100-SXM-80GB",), **spec), actor=SYSTEM
    )
    Allocation.objects.filter(pk=allocation.pk).update(workload=workload.to_json())
    allocation.refresh_from_db()
    return allocation


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A materials source (the lifecycle app's, in production) that counts its calls."""
    calls: list[int] = []

    def source(allocation: Allocation, workload: Workload) -> Materials:
        calls.append(allocation.pk)
        image = os_catalog()[workload.os_image] if workload.os_image else None
        return Materials(secrets={"HF_TOKEN": TOKEN}, ssh_keys=(KEY,), os_image=image)

    monkeypatch.setattr(workload_services, "_source", [])
    workload_services.materials_source_set(source)
    return calls


def test_the_shape_carries_workload_materials_hall_and_base_domain(
    k8s_fleet: K8sServer, acme: Any, resolved: list[int], settings: Any
) -> None:
    settings.LADDER_BASE_DOMAIN = "gpu.example.net"
    allocation = place(acme, WORKLOAD, rung="container", gpus=1)
    shape = allocation_shape(allocation)
    assert shape.workload == WORKLOAD
    assert shape.materials.secrets == {"HF_TOKEN": TOKEN}
    assert shape.hall == allocation.hall.code
    assert shape.base_domain == "gpu.example.net"
    assert resolved == [allocation.pk]


def test_the_driver_applies_the_workloads_objects(k8s_fleet: K8sServer, acme: Any, resolved: list[int]) -> None:
    allocation = place(acme, WORKLOAD, rung="container", gpus=1)
    KubernetesProvisioner().provision(allocation.pk)
    name, ns = f"ldr-{allocation.pk}", "ladder-acme"
    pod = k8s_fleet.get_object("v1", "Pod", name, ns)
    assert pod is not None
    assert pod["spec"]["containers"][0]["image"] == "ghcr.io/acme/app:2.0"
    secret = k8s_fleet.get_object("v1", "Secret", f"{name}-secrets", ns)
    assert secret is not None
    assert base64.b64decode(secret["data"]["HF_TOKEN"]).decode() == TOKEN
    route = k8s_fleet.get_object("gateway.networking.k8s.io/v1", "HTTPRoute", f"{name}-8080", ns)
    assert route is not None
    assert route["spec"]["hostnames"] == [f"{name}-8080.ladder.localhost"]
    ssh = k8s_fleet.get_object("v1", "Service", f"{name}-ssh", ns)
    assert ssh is not None
    assert ssh["metadata"]["labels"]["ladder.io/ssh-user"] == name


def test_bare_metal_boots_the_tenants_os_through_metal3(k8s_fleet: K8sServer, acme: Any, resolved: list[int]) -> None:
    k8s_fleet.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "metal3"}})  # Metal3's
    allocation = place(acme, METAL, rung="bare_metal", nodes=1)
    KubernetesProvisioner().provision(allocation.pk)
    (host,) = {d.hostname for d in allocation.devices.all()}
    bmh = k8s_fleet.get_object("metal3.io/v1alpha1", "BareMetalHost", host, "metal3")
    assert bmh is not None
    assert bmh["spec"]["image"]["url"] == os_catalog()["rocky-9"].metal_url
    assert bmh["spec"]["userData"] == {"name": f"ldr-{allocation.pk}-userdata", "namespace": "metal3"}
    userdata = k8s_fleet.get_object("v1", "Secret", f"ldr-{allocation.pk}-userdata", "metal3")
    assert userdata is not None
    assert KEY in base64.b64decode(userdata["data"]["userData"]).decode()
    node = k8s_fleet.get_object("v1", "Node", host)
    assert node is not None
    assert node["metadata"]["labels"]["ladder.io/dedicated"] == "acme"


def test_k8s_render_prints_placeholders_and_resolves_nothing(
    k8s_fleet: K8sServer, acme: Any, resolved: list[int]
) -> None:
    allocation = place(acme, WORKLOAD, rung="container", gpus=1)
    out = StringIO()
    call_command("k8s_render", allocation=allocation.pk, stdout=out)
    text = out.getvalue()
    assert TOKEN not in text
    assert KEY not in text
    assert resolved == []  # no secret was read to print this
    documents = [d for d in yaml.safe_load_all(text) if d]
    secret = next(d for d in documents if d["kind"] == "Secret" and d["metadata"]["name"].endswith("-secrets"))
    assert base64.b64decode(secret["data"]["HF_TOKEN"]).decode() == "<secret HF_TOKEN>"
    kinds = [d["kind"] for d in documents]
    assert kinds == [
        "Secret",
        "Secret",
        "ResourceClaimTemplate",
        "Pod",
        "Service",
        "Service",
        "HTTPRoute",
        "BackendTrafficPolicy",
        "SecurityPolicy",
        "NetworkPolicy",
    ]
    assert k8s_fleet.objects() == enrolled(k8s_fleet)  # nothing was applied


def test_k8s_render_of_bare_metal_and_of_the_cluster_setup(
    k8s_fleet: K8sServer, acme: Any, resolved: list[int], settings: Any
) -> None:
    allocation = place(acme, METAL, rung="bare_metal", nodes=1)
    out = StringIO()
    call_command("k8s_render", allocation=allocation.pk, stdout=out)
    kinds = [d["kind"] for d in yaml.safe_load_all(out.getvalue()) if d]
    assert kinds == ["Node", "Secret", "BareMetalHost", "Service"]
    settings.LADDER_BASE_DOMAIN = "gpu.example.net"
    out = StringIO()
    call_command("k8s_render", cluster_setup=True, stdout=out)
    (gateway,) = [d for d in yaml.safe_load_all(out.getvalue()) if d and d["kind"] == "Gateway"]
    assert gateway["spec"]["listeners"][0]["hostname"] == "*.gpu.example.net"
    assert resolved == []
