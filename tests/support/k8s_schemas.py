"""Offline validation of rendered manifests: Kubernetes 1.34 kinds with ``kubernetes-validate`` (strict), Kueue,
Gateway API, Metal3, NVIDIA DRA driver (ComputeDomain), CSI snapshot (VolumeSnapshot, VolumeSnapshotClass) and
KEDA (ScaledObject) objects against their CRDs' ``openAPIV3Schema``, KubeVirt objects against KubeVirt's swagger,
plus the checks no schema expresses (object names, label syntax, Pod Security "restricted").

Unknown fields fail everywhere. CRD and swagger schemas rarely say ``additionalProperties: false`` (the API server
prunes or, with strict field validation, rejects unknown fields instead), so every object schema that lists
``properties`` and says nothing of ``additionalProperties`` is closed here before validating. CEL rules
(``x-kubernetes-validations``) and other ``x-kubernetes-*`` extensions are ignored by jsonschema.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate  # type: ignore[import-untyped]
import yaml
from referencing import Registry, Resource

K8S_VERSION = "1.34.0"
# The add-ons' CRDs (Kueue, Gateway API, Metal3, KEDA, ...) and KubeVirt's swagger the tests use, copied into the
# repository with their sources and licence (tests/data/k8s-schemas/README.md).
SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "k8s-schemas"
K8S_DEFINITIONS = (
    Path(kubernetes_validate.__file__).parent
    / "kubernetes-json-schema"
    / f"v{K8S_VERSION}-local-strict"
    / "_definitions.json"
)
OBJECT_META = "https://kubernetes.io/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
# Kinds whose names must be DNS-1123 labels (they become hostnames or label values), not only subdomains.
LABEL_NAMED_KINDS = {"Namespace", "Service", "Job"}


class ManifestError(AssertionError):
    pass


def closed(schema: Any) -> Any:
    """A copy of ``schema`` in which every object schema with ``properties`` rejects other properties."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed(value) for key, value in schema.items()}
    if (
        "properties" in schema
        and isinstance(schema["properties"], dict)
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


# --- metadata and names ---------------------------------------------------------------------------------------


@functools.cache
def _object_meta_validator() -> jsonschema.protocols.Validator:
    definitions = Resource.from_contents(json.loads(K8S_DEFINITIONS.read_text()))
    registry: Registry = definitions @ Registry()
    return jsonschema.Draft202012Validator({"$ref": OBJECT_META}, registry=registry)


def check_metadata(obj: dict[str, Any]) -> None:
    """Names and labels as the API server would check them (no schema says so)."""
    meta = obj.get("metadata") or {}
    name = meta.get("name", "")
    pattern = DNS_LABEL if obj.get("kind") in LABEL_NAMED_KINDS else DNS_SUBDOMAIN
    limit = 63 if obj.get("kind") in LABEL_NAMED_KINDS else 253
    if not (pattern.match(name) and len(name) <= limit):
        raise ManifestError(f"{obj.get('kind')} name {name!r} is not a valid object name")
    if "namespace" in meta and not DNS_LABEL.match(meta["namespace"]):
        raise ManifestError(f"namespace {meta['namespace']!r} is not a DNS label")
    for where, labels in _all_labels(obj):
        for key, value in labels.items():
            prefix, _, label = key.rpartition("/")
            if (prefix and not DNS_SUBDOMAIN.match(prefix)) or not LABEL_NAME.match(label) or len(label) > 63:
                raise ManifestError(f"{where}: label key {key!r} is invalid")
            if not isinstance(value, str) or (value and not LABEL_NAME.match(value)) or len(value) > 63:
                raise ManifestError(f"{where}: label {key}={value!r} has an invalid value")


def _all_labels(obj: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("labels", "matchLabels", "nodeLabels") and isinstance(value, dict):
                found.append((f"{path}.{key}", value))
            else:
                found += _all_labels(value, f"{path}.{key}")
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            found += _all_labels(item, f"{path}[{i}]")
    return found


# --- Kubernetes core kinds --------------------------------------------------------------------------------------


def validate_core(obj: dict[str, Any]) -> None:
    """Kubernetes 1.34, strict (unknown fields fail)."""
    used = kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    if used != "1.34":
        raise ManifestError(f"validated against Kubernetes {used}, not 1.34")


# --- CustomResourceDefinitions: Kueue, Gateway API, Metal3 ------------------------------------------------------

# API group -> (the project's name in messages, its directory under SCHEMAS).
CRD_GROUPS = {
    "kueue.x-k8s.io": ("Kueue", "kueue"),
    "gateway.networking.k8s.io": ("Gateway API", "gateway-api"),
    "gateway.envoyproxy.io": ("Envoy Gateway", "envoy-gateway"),
    "metal3.io": ("Metal3", "metal3"),
    "resource.nvidia.com": ("NVIDIA DRA driver", "nvidia-dra-driver"),
    "slinky.slurm.net": ("Slinky", "slinky"),
    "kubeflow.org": ("mpi-operator", "mpi-operator"),
    "ray.io": ("KubeRay", "kuberay"),
    "k8s.cni.cncf.io": ("Multus", "multus"),
    "snapshot.storage.k8s.io": ("external-snapshotter", "external-snapshotter"),
    "keda.sh": ("KEDA", "keda"),
}


@functools.cache
def crds(group: str) -> dict[str, dict[str, Any]]:
    """Kind -> CRD, from the CRD files of one API group."""
    found = {}
    for path in sorted((SCHEMAS / CRD_GROUPS[group][1]).glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        if crd["spec"]["group"] == group:
            found[crd["spec"]["names"]["kind"]] = crd
    return found


def kueue_crds() -> dict[str, dict[str, Any]]:
    return crds("kueue.x-k8s.io")


def storage_version(group: str, kind: str) -> str:
    crd = crds(group)[kind]
    version = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
    return f"{group}/{version}"


def kueue_storage_version(kind: str) -> str:
    return storage_version("kueue.x-k8s.io", kind)


@functools.cache
def _crd_validator(group: str, kind: str, version: str) -> jsonschema.protocols.Validator:
    crd = crds(group)[kind]
    served = {v["name"]: v for v in crd["spec"]["versions"] if v.get("served")}
    if version not in served:
        raise ManifestError(f"{CRD_GROUPS[group][0]} {kind} does not serve {version} (serves {sorted(served)})")
    return jsonschema.Draft202012Validator(closed(served[version]["schema"]["openAPIV3Schema"]))


def validate_crd(obj: dict[str, Any], group: str | None = None) -> None:
    """An object of a group in ``CRD_GROUPS`` (``group``, when given, is the one it must be in)."""
    kind = obj.get("kind", "")
    found, _, version = obj.get("apiVersion", "").rpartition("/")
    expected = group or found
    if expected not in CRD_GROUPS:
        raise ManifestError(f"no CRDs for API group {expected!r}")
    project = CRD_GROUPS[expected][0]
    if kind not in crds(expected):
        raise ManifestError(f"no {project} CRD for kind {kind!r}")
    if found != expected:
        raise ManifestError(f"{kind} apiVersion {obj.get('apiVersion')!r} is not in group {expected}")
    scope = crds(expected)[kind]["spec"]["scope"]
    if (scope == "Namespaced") != ("namespace" in obj.get("metadata", {})):
        raise ManifestError(f"{kind} is {scope}: metadata.namespace is wrong")
    _crd_validator(expected, kind, version).validate(obj)
    _object_meta_validator().validate(obj.get("metadata", {}))


def validate_kueue(obj: dict[str, Any]) -> None:
    validate_crd(obj, "kueue.x-k8s.io")


def validate_gateway_api(obj: dict[str, Any]) -> None:
    validate_crd(obj, "gateway.networking.k8s.io")


def validate_metal3(obj: dict[str, Any]) -> None:
    validate_crd(obj, "metal3.io")


def validate_keda(obj: dict[str, Any]) -> None:
    validate_crd(obj, "keda.sh")


# --- KubeVirt ---------------------------------------------------------------------------------------------------


@functools.cache
def _kubevirt_validator() -> jsonschema.protocols.Validator:
    swagger = json.loads((SCHEMAS / "kubevirt" / "swagger.json").read_text())
    # The swagger document is the root, so its "#/definitions/..." references resolve as they are.
    root = {"$ref": "#/definitions/v1.VirtualMachine", "definitions": closed(swagger["definitions"])}
    return jsonschema.Draft7Validator(root)


def validate_kubevirt(obj: dict[str, Any]) -> None:
    if (obj.get("apiVersion"), obj.get("kind")) != ("kubevirt.io/v1", "VirtualMachine"):
        raise ManifestError(f"not a kubevirt.io/v1 VirtualMachine: {obj.get('apiVersion')} {obj.get('kind')}")
    _kubevirt_validator().validate(obj)


# --- any manifest -----------------------------------------------------------------------------------------------


def validate(obj: dict[str, Any]) -> None:
    """Validate one manifest with the validator of its API group; raises on the first problem."""
    group = obj.get("apiVersion", "").partition("/")[0] if "/" in obj.get("apiVersion", "") else ""
    if group in CRD_GROUPS:
        validate_crd(obj, group)
    elif group == "kubevirt.io":
        validate_kubevirt(obj)
    else:
        validate_core(obj)
    check_metadata(obj)


def validate_all(objs: list[dict[str, Any]]) -> None:
    for obj in objs:
        try:
            validate(copy.deepcopy(obj))
        except jsonschema.ValidationError as error:
            where = "/".join(map(str, error.absolute_path))
            raise ManifestError(f"{obj['kind']} {obj['metadata'].get('name')}: {where}: {error.message}") from error


# --- Pod Security "restricted" ----------------------------------------------------------------------------------

RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates of a workload object, the operators' kinds included: an MPIJob's launcher and workers, a
    RayJob's head, worker groups and submitter."""
    spec = obj.get("spec") or {}
    if obj["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet", "ReplicaSet"):
        return [spec["template"]]
    if obj["kind"] == "MPIJob":
        return [replica["template"] for replica in spec["mpiReplicaSpecs"].values()]
    if obj["kind"] == "RayJob":
        cluster = spec.get("rayClusterSpec") or {}
        groups = [cluster["headGroupSpec"], *(cluster.get("workerGroupSpecs") or [])]
        submitter = [spec["submitterPodTemplate"]] if "submitterPodTemplate" in spec else []
        return [group["template"] for group in groups] + submitter
    return []


def pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod specs an object creates: a Pod's own, or a workload's pod templates."""
    if obj["kind"] == "Pod":
        return [obj["spec"]]
    return [template["spec"] for template in pod_templates(obj)]


def validate_pod_templates(obj: dict[str, Any]) -> None:
    """Each of an operator kind's pod templates as the Pod it becomes, against Kubernetes 1.34 (strict): the
    CRDs carry the PodSpec schema of the Kubernetes version they were generated with, so a field the cluster's
    own API server would refuse is caught here."""
    for i, template in enumerate(pod_templates(obj)):
        metadata = {"name": f"{obj['metadata']['name']}-{i}", **(template.get("metadata") or {})}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}
        validate_core(copy.deepcopy(pod))
        check_metadata(pod)


def restricted_violations(spec: dict[str, Any]) -> list[str]:
    """Where a pod spec breaks the Pod Security Standards' "restricted" profile (which includes "baseline")."""
    problems = []
    pod_ctx = spec.get("securityContext") or {}
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(host):
            problems.append(f"{host} is set")
    for volume in spec.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            problems.append(f"volume {volume['name']} uses {sorted(kinds - RESTRICTED_VOLUMES)}")
    pod_seccomp = (pod_ctx.get("seccompProfile") or {}).get("type")
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    containers += spec.get("ephemeralContainers") or []
    for c in containers:
        ctx = c.get("securityContext") or {}
        name = c.get("name")
        if ctx.get("privileged"):
            problems.append(f"{name}: privileged")
        if ctx.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation is not false")
        caps = ctx.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            problems.append(f"{name}: capabilities do not drop ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            problems.append(f"{name}: adds capabilities {caps['add']}")
        if not ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")):
            problems.append(f"{name}: runAsNonRoot is not true")
        if ctx.get("runAsUser", pod_ctx.get("runAsUser")) == 0:
            problems.append(f"{name}: runs as user 0")
        seccomp = (ctx.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{name}: seccompProfile is {seccomp}")
        if any(p.get("hostPort") for p in c.get("ports") or []):
            problems.append(f"{name}: uses a hostPort")
    return problems
