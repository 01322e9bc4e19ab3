"""Every placed device is a DRA claim that selects exactly the engine's devices: proved by evaluating each rendered
CEL selector against the devices the NVIDIA DRA driver publishes in ResourceSlices (built here as the driver
builds them, and validated as ``resource.k8s.io/v1`` ResourceSlices), for every rung and shape. Plus the driver's
own objects (ComputeDomain against its CRD, GpuConfig against the Go types' JSON names), the Kueue mapping and
the RBAC that lets Ladder apply them.

The evaluator understands the CEL the renderer emits and the driver's device classes use, nothing more: string
literals, ``device`` member and index access, ``lowerAscii()``, ``==``, ``!=``, ``in`` (a list, or a map's
keys), ``!``, ``&&``, ``||`` and parentheses. An expression outside that subset fails the test."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.shapes import AllocationShape, DeviceShape, TenantShape
from tests.provisioning.drivers.kubernetes.test_render import (
    ALLOCATIONS,
    CONTAINER,
    CVM_TDX,
    GANG,
    MIG,
    SERVERLESS,
    SERVERLESS_MIG,
    TIME_SLICED,
    VM,
    by_kind,
    node,
    one,
    shape,
    uuid,
    whole,
)
from tests.provisioning.drivers.kubernetes.test_render_workload import _granted, _kinds
from tests.support import k8s_schemas as schemas

DRIVER = "gpu.nvidia.com"
# The device classes' selectors as the NVIDIA DRA driver's chart installs them (deviceclass-*.yaml).
CLASSES = {
    cls: f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"
    for cls, kind in (("gpu.nvidia.com", "gpu"), ("mig.nvidia.com", "mig"), ("vfio.gpu.nvidia.com", "vfio"))
}
GO_TYPES = schemas.SCHEMAS / "nvidia-dra-driver"

# --- a tiny CEL evaluator -----------------------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(?:(?P<str>"[^"]*"|\'[^\']*\')|(?P<op>==|!=|&&|\|\||[.\[\](),!])|(?P<ident>[A-Za-z_]\w*))')


def _tokens(text: str) -> list[str]:
    found, at = [], 0
    while at < len(text.rstrip()):
        m = _TOKEN.match(text, at)
        if m is None or m.end() == at:
            raise SyntaxError(f"unexpected text at {at}: {text[at:]!r}")
        found.append(m.group(m.lastgroup or ""))
        at = m.end()
    return found


class _Parser:
    def __init__(self, text: str, device: dict[str, Any]) -> None:
        self.tokens, self.at, self.device = _tokens(text), 0, device

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise SyntaxError(f"expected {expected!r}, found {token!r}")
        self.at += 1
        return token

    def run(self) -> Any:
        value = self.disjunction()
        if self.peek() is not None:
            raise SyntaxError(f"trailing {self.peek()!r}")
        return value

    def disjunction(self) -> Any:
        values = [self.conjunction()]
        while self.peek() == "||":
            self.take()
            values.append(self.conjunction())
        return any(values) if len(values) > 1 else values[0]

    def conjunction(self) -> Any:
        values = [self.unary()]
        while self.peek() == "&&":
            self.take()
            values.append(self.unary())
        return all(values) if len(values) > 1 else values[0]

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not self.unary()
        left = self.member()
        op = self.peek()
        if op in ("==", "!=", "in"):
            self.take()
            right = self.member()
            if op == "in":
                return left in (right.keys() if isinstance(right, dict) else right)
            return (left == right) if op == "==" else (left != right)
        return left

    def member(self) -> Any:
        value = self.primary()
        while self.peek() in (".", "["):
            if self.take() == ".":
                name = self.take()
                if self.peek() == "(":
                    self.take("(")
                    self.take(")")
                    if name != "lowerAscii" or not isinstance(value, str):
                        raise SyntaxError(f"unknown method {name}")
                    value = value.lower()
                else:
                    value = value[name]  # a missing field is an evaluation error, as in CEL
            else:
                key = self.disjunction()
                self.take("]")
                value = value[key]
        return value

    def primary(self) -> Any:
        token = self.take()
        if token[0] in "\"'":
            return token[1:-1]
        if token == "(":
            value = self.disjunction()
            self.take(")")
            return value
        if token == "[":
            items = []
            while self.peek() != "]":
                items.append(self.disjunction())
                if self.peek() == ",":
                    self.take()
            self.take("]")
            return items
        if token == "device":
            return self.device
        raise SyntaxError(f"unknown identifier {token!r}")


def cel(expression: str, device: dict[str, Any]) -> bool:
    result = _Parser(expression, device).run()
    assert isinstance(result, bool), expression
    return result


def test_the_evaluator_follows_cel() -> None:
    device = {"driver": DRIVER, "attributes": {DRIVER: {"uuid": "GPU-AB"}}, "capacity": {DRIVER: {"memorySlice2": 1}}}
    assert cel('device.attributes["gpu.nvidia.com"].uuid.lowerAscii() == "gpu-ab"', device)
    assert not cel('device.attributes["gpu.nvidia.com"].uuid == "gpu-ab"', device)
    assert cel('device.attributes["gpu.nvidia.com"].uuid.lowerAscii() in ["x", "gpu-ab"]', device)
    assert cel(
        '"memorySlice2" in device.capacity["gpu.nvidia.com"] && !("memorySlice1" in device.capacity["gpu.nvidia.com"])',
        device,
    )
    assert cel("device.driver == 'x' || (device.driver == 'gpu.nvidia.com')", device)
    with pytest.raises(KeyError):
        cel('device.attributes["gpu.nvidia.com"].parentUUID == "x"', device)
    with pytest.raises(SyntaxError):
        cel('device.attributes["gpu.nvidia.com"].uuid.startsWith("GPU")', device)


# --- ResourceSlices as the NVIDIA DRA driver publishes them ---------------------------------------------------------

# MIG layouts cut by the MIG manager: (profile, start, size) per GPU index.
MIG_LAYOUTS: dict[tuple[str, int], list[tuple[str, int, int]]] = {
    ("gpu-node-02", 3): [("3g.40gb", 0, 4), ("3g.40gb", 4, 4)],  # the same profile twice: only the start tells
    ("gpu-node-09", 0): [("1g.10gb", s, 1) for s in range(7)],
    ("gpu-node-09", 1): [("1g.10gb", s, 1) for s in range(7)],
}


def resource_slice(hostname: str, gpus: int = 8, upper_case: bool = False) -> dict[str, Any]:
    """The slice of one node: its whole GPUs (or, on a passthrough node, vfio devices) and the MIG devices of the
    GPUs in MIG mode. ``upper_case``: UUIDs as NVML prints them (older driver releases) rather than lower-cased."""
    host = int(hostname.rsplit("-", 1)[1])
    devices = []
    for index in range(gpus):
        gpu = uuid(host, index)
        gpu = gpu if upper_case else gpu.lower()
        layout = MIG_LAYOUTS.get((hostname, index))
        if layout is None:
            kind = "vfio" if host in (4, 5, 6) else "gpu"  # the VM and confidential hosts bind vfio-pci
            name = f"gpu-vfio-{index}" if kind == "vfio" else f"gpu-{index}"
            attributes = {"type": {"string": kind}, "uuid": {"string": gpu}}
            devices.append({"name": name, "attributes": attributes, "capacity": {"memory": {"value": "80Gi"}}})
            continue
        for profile, start, size in layout:
            attributes = {
                "type": {"string": "mig"},
                "uuid": {"string": f"mig-{host:02x}{index:02x}{start:02x}-0000-0000-0000-000000000000"},
                "parentUUID": {"string": uuid(host, index)},
                "profile": {"string": profile},
            }
            capacity = {f"memorySlice{i}": {"value": "1"} for i in range(start, start + size)}
            name = f"gpu-{index}-mig-{profile.replace('.', '')}-{start}-{size}"
            devices.append({"name": name, "attributes": attributes, "capacity": capacity})
    spec = {
        "driver": DRIVER,
        "nodeName": hostname,
        "pool": {"name": hostname, "generation": 1, "resourceSliceCount": 1},
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{hostname}-gpu.nvidia.com-abcde"},
        "spec": {**spec, "devices": devices},
    }


def cel_device(published: dict[str, Any]) -> dict[str, Any]:
    """A published device as CEL sees it: unqualified attribute and capacity names are the driver's."""
    attributes = {k: next(iter(v.values())) for k, v in published["attributes"].items()}
    capacity = {k: v["value"] for k, v in (published.get("capacity") or {}).items()}
    return {"driver": DRIVER, "attributes": {DRIVER: attributes}, "capacity": {DRIVER: capacity}}


def published(hostnames: list[str], upper_case: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
    for hostname in hostnames:
        for device in resource_slice(hostname, upper_case=upper_case)["spec"]["devices"]:
            yield hostname, device


def candidates(request: dict[str, Any], hostnames: list[str], upper_case: bool = False) -> set[tuple[str, str]]:
    """(node, device name) of every published device the request's class and selectors admit."""
    exactly = request["exactly"]
    found = set()
    for hostname, device in published(hostnames, upper_case):
        seen = cel_device(device)
        if not cel(CLASSES[exactly["deviceClassName"]], seen):
            continue
        if all(cel(s["cel"]["expression"], seen) for s in exactly["selectors"]):
            found.add((hostname, device["name"]))
    return found


def placed(a: AllocationShape) -> set[tuple[str, str]]:
    """The engine's devices, by the names the driver publishes them under."""
    found = set()
    for d in a.devices:
        host = int(d.hostname.rsplit("-", 1)[1])
        if d.mig_profile is not None:
            size = next(z for p, s, z in MIG_LAYOUTS[(d.hostname, d.gpu_index)] if s == d.mig_start)
            found.add((d.hostname, f"gpu-{d.gpu_index}-mig-{d.mig_profile.replace('.', '')}-{d.mig_start}-{size}"))
        else:
            found.add((d.hostname, f"gpu-vfio-{d.gpu_index}" if host in (4, 5, 6) else f"gpu-{d.gpu_index}"))
    return found


def neighbours(a: AllocationShape) -> list[str]:
    """The placed hosts and two more: a selector must not reach beyond the placement."""
    return sorted({d.hostname for d in a.devices} | {"gpu-node-30", "gpu-node-31"})


def test_published_slices_are_valid_resource_slices() -> None:
    for hostname in ("gpu-node-01", "gpu-node-02", "gpu-node-05", "gpu-node-09"):
        schemas.validate_all([resource_slice(hostname), resource_slice(hostname, upper_case=True)])


# --- every rung selects exactly the engine's devices --------------------------------------------------------------


def claim_requests(a: AllocationShape) -> list[dict[str, Any]]:
    objs = render.share_claims(a) + render.allocation_objects(a)
    claims = by_kind(objs, "ResourceClaimTemplate") + by_kind(objs, "ResourceClaim")
    (claim,) = claims
    spec = claim["spec"]["spec"] if claim["kind"] == "ResourceClaimTemplate" else claim["spec"]
    requests: list[dict[str, Any]] = spec["devices"]["requests"]
    return requests


@pytest.mark.parametrize("upper_case", [False, True], ids=["lower-case-uuids", "nvml-uuids"])
@pytest.mark.parametrize("a", [CONTAINER, MIG, VM, CVM_TDX], ids=lambda a: f"{a.rung}-{a.performance}")
def test_one_pod_claims_each_placed_device_by_one_request(a: AllocationShape, upper_case: bool) -> None:
    requests = claim_requests(a)
    chosen = set()
    for request in requests:
        found = candidates(request, neighbours(a), upper_case)
        assert len(found) == 1, (request["name"], found)  # one request, one device: no choice left to the scheduler
        assert request["exactly"]["count"] == 1
        chosen |= found
    assert chosen == placed(a)


def test_a_gang_member_takes_its_share_of_the_gangs_gpus_and_nothing_else() -> None:
    (request,) = claim_requests(GANG)
    found = candidates(request, neighbours(GANG))
    assert found == placed(GANG)
    # Each member's claim holds `count` devices of its own node; all members together hold count x gang_size
    # distinct devices out of exactly this many: every one of the gang's GPUs, once.
    assert request["exactly"]["count"] * GANG.gang_size == len(found)
    per_node = {host: sum(1 for h, _ in found if h == host) for host, _ in found}
    assert all(n % request["exactly"]["count"] == 0 for n in per_node.values())


@pytest.mark.parametrize("a", [SERVERLESS, SERVERLESS_MIG], ids=lambda a: a.performance)
def test_each_serverless_replica_takes_one_of_the_placed_devices(a: AllocationShape) -> None:
    (request,) = claim_requests(a)
    assert request["exactly"]["count"] == 1
    assert candidates(request, neighbours(a)) == placed(a)
    hpa = one(render.allocation_objects(a), "HorizontalPodAutoscaler")
    # Never more replicas than devices, one kept for a rollout's surge replica (docs/kubernetes.md, scale to zero).
    assert hpa["spec"]["maxReplicas"] == max(len(placed(a)) - 1, 1)


def test_a_mig_selector_tells_two_devices_of_one_profile_apart_by_start() -> None:
    first = replace(MIG, devices=(replace(MIG.devices[0], mig_start=0),))
    ((_, at_zero),) = candidates(claim_requests(first)[0], ["gpu-node-02"])
    ((_, at_four),) = candidates(claim_requests(MIG)[0], ["gpu-node-02"])
    assert (at_zero, at_four) == ("gpu-3-mig-3g40gb-0-4", "gpu-3-mig-3g40gb-4-4")
    nowhere = replace(MIG, devices=(replace(MIG.devices[0], mig_start=2),))  # not a start the GPU was cut at
    assert candidates(claim_requests(nowhere)[0], ["gpu-node-02"]) == set()


def test_soft_shares_of_one_tenant_on_one_gpu_name_one_claim_of_that_gpu() -> None:
    (request,) = claim_requests(TIME_SLICED)
    assert candidates(request, neighbours(TIME_SLICED)) == placed(TIME_SLICED)
    other = replace(TIME_SLICED, id=120, devices=(replace(TIME_SLICED.devices[0], share_milli=250),))
    assert render.share_claims(other) == render.share_claims(TIME_SLICED)  # re-applied unchanged: one claim
    rival = replace(other, tenant="rival")
    (theirs,) = render.share_claims(rival)
    assert theirs["metadata"]["namespace"] == "ladder-rival"  # never the same claim across tenants


def test_no_placed_work_counts_nvidia_gpu() -> None:
    every = [*ALLOCATIONS, GB200_GANG, MPS]
    for a in every:
        for obj in render.share_claims(a) + render.allocation_objects(a):
            text = repr(obj)
            for counted in ("'nvidia.com/gpu'", "nvidia.com/gpu.shared", "nvidia.com/pgpu", "deviceName"):
                assert counted not in text, (a.id, obj["kind"], counted)


# --- soft sharing: the driver's GpuConfig -------------------------------------------------------------------------

MPS = shape(
    121,
    "serverless",
    "mps",
    (DeviceShape(hostname="gpu-node-03", gpu_index=1, gpu_uuid=uuid(3, 1), share_milli=250),),
    (node(3),),
)


def _json_names(go_file: str, go_type: str) -> set[str]:
    """The JSON names of a Go struct's fields, from its ``json:"..."`` tags (inline fields left out)."""
    text = (GO_TYPES / go_file).read_text()
    body = re.search(rf"type {go_type} struct {{(.*?)\n}}", text, re.S)
    assert body is not None, go_type
    return {n for n in re.findall(r'json:"([^",]*)', body.group(1)) if n}


def test_gpu_config_uses_the_drivers_field_names() -> None:
    for a, strategy in ((TIME_SLICED, "TimeSlicing"), (MPS, "MPS")):
        (claim,) = render.share_claims(a)
        schemas.validate_all([claim])
        (config,) = claim["spec"]["devices"]["config"]
        assert config == {
            "requests": ["gpus"],
            "opaque": {"driver": DRIVER, "parameters": config["opaque"]["parameters"]},
        }
        parameters = config["opaque"]["parameters"]
        assert (parameters["apiVersion"], parameters["kind"]) == ("resource.nvidia.com/v1beta1", "GpuConfig")
        assert set(parameters) - {"apiVersion", "kind"} <= _json_names("gpuconfig.go", "GpuConfig")
        sharing = parameters["sharing"]
        assert set(sharing) <= _json_names("sharing.go", "GpuSharing")
        assert sharing["strategy"] == strategy
        for key, go_type in (("timeSlicingConfig", "TimeSlicingConfig"), ("mpsConfig", "MpsConfig")):
            if key in sharing:
                assert set(sharing[key]) <= _json_names("sharing.go", go_type)
        interval = (sharing.get("timeSlicingConfig") or {}).get("interval")
        assert interval in (None, "Default", "Short", "Medium", "Long")


def test_mps_limits_each_client_to_its_share() -> None:
    deployment = one(render.allocation_objects(MPS), "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25"
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=20480MB"  # a quarter of 80 GB
    assert env["LADDER_GPU_SHARE_MILLI"] == "250"


# --- gangs on multi-node NVLink -----------------------------------------------------------------------------------

GB200_GANG = shape(
    122,
    "job",
    "whole_gpu",
    tuple(d for i in range(40, 44) for d in whole(i, range(4))),
    tuple(node(i, clique="nvl72-a") for i in range(40, 44)),
    gang_size=4,
    gpu_model="GB200",
)


def test_a_gb200_gang_spans_a_compute_domain() -> None:
    objs = render.allocation_objects(GB200_GANG)
    schemas.validate_all(objs)
    domain = one(objs, "ComputeDomain")
    assert domain["apiVersion"] == schemas.storage_version("resource.nvidia.com", "ComputeDomain")
    assert domain["spec"]["channel"]["resourceClaimTemplate"] == {"name": "ldr-122-channel"}
    pod = one(objs, "Job")["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [
        {"name": "gpus", "resourceClaimTemplateName": "ldr-122-gpus"},
        {"name": "channel", "resourceClaimTemplateName": "ldr-122-channel"},
    ]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpus"}, {"name": "channel"}]
    assert pod["nodeSelector"]["nvidia.com/gpu.clique"] == "nvl72-a"
    assert not by_kind(render.allocation_objects(GANG), "ComputeDomain")  # H100: NVLink inside each host only
    one_host = replace(
        GB200_GANG, id=123, devices=whole(40, range(4)), nodes=(node(40, clique="nvl72-a"),), gang_size=1
    )
    assert not by_kind(render.allocation_objects(one_host), "ComputeDomain")


def test_compute_domain_validator_catches_a_wrong_field() -> None:
    domain = one(render.allocation_objects(GB200_GANG), "ComputeDomain")
    domain["spec"]["channel"]["resourceClaimTemplateName"] = domain["spec"]["channel"].pop("resourceClaimTemplate")
    with pytest.raises(schemas.ManifestError):
        schemas.validate_all([domain])


def test_a_gang_across_nvlink_domains_is_refused() -> None:
    split = replace(GANG, nodes=(*GANG.nodes[:2], *(replace(n, nvlink_domain="clique-c") for n in GANG.nodes[2:])))
    with pytest.raises(ValueError, match="one NVLink domain"):
        render.allocation_objects(split)


# --- Kueue, quota, RBAC -------------------------------------------------------------------------------------------


def test_kueue_maps_every_device_class_a_gang_claims_to_a_covered_resource() -> None:
    config = render.kueue_configuration()
    assert config["featureGates"] == {"DynamicResourceAllocation": True}
    mapped = {cls: m["name"] for m in config["resources"]["deviceClassMappings"] for cls in m["deviceClassNames"]}
    (group,) = one(render.cluster_setup(["GB200"]), "ClusterQueue")["spec"]["resourceGroups"]
    for a in (GANG, GB200_GANG):
        objs = render.allocation_objects(a)
        classes = {
            r["exactly"]["deviceClassName"]
            for t in by_kind(objs, "ResourceClaimTemplate")
            for r in t["spec"]["spec"]["devices"]["requests"]
        }
        if by_kind(objs, "ComputeDomain"):
            classes.add("compute-domain-default-channel.nvidia.com")  # the domain's own template
        for cls in classes:
            assert mapped[cls] in group["coveredResources"], cls


def test_quota_of_a_fraction_of_a_gpu() -> None:
    hard = render.quota(TenantShape(slug="small", gpu_quota_milli=500, volume_quota_gb=0))
    assert hard["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "3"  # no whole GPU, shared ones only
    assert hard["vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "0"
    assert hard["mig.nvidia.com.deviceclass.resource.k8s.io/devices"] == "3"
    assert (hard["requests.storage"], hard["persistentvolumeclaims"]) == ("0Gi", "0")


def test_rbac_lets_ladder_apply_claims_and_compute_domains() -> None:
    rendered = set().union(*(_kinds(render.share_claims(a) + render.allocation_objects(a)) for a in (GB200_GANG, MPS)))
    assert {("resource.nvidia.com", "computedomains"), ("resource.k8s.io", "resourceclaims")} <= rendered
    assert rendered - _granted("ladder-provisioner") == set()


def test_every_schema_file_is_recorded_with_its_sum() -> None:
    readme = (schemas.SCHEMAS / "README.md").read_text()
    for path in sorted(Path(GO_TYPES).iterdir()):
        assert f"nvidia-dra-driver/{path.name}" in readme, path.name
