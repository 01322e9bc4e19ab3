"""Allocation shapes to Kubernetes manifests: pure functions returning plain dicts (no Django, no I/O).

What a tenant gets (DESIGN §2, §5):
- ``namespace_set``: the tenant's namespace with restricted Pod Security, a GPU ResourceQuota, a LimitRange,
  default-deny NetworkPolicies (DNS and same-namespace traffic allowed) and the Kueue LocalQueue ``ladder``.
- ``allocation_objects``: the workload of one allocation, by rung: a Pod (whole GPUs via ``nvidia.com/gpu``, a
  MIG slice via a DRA ``resource.k8s.io/v1`` claim), a KubeVirt VirtualMachine, a Kata confidential Pod, a
  Kueue-queued Indexed Job with a checkpoint volume, or a Deployment + Service + HPA for serverless.
- ``bare_metal_node_patches`` / ``node_release`` / ``sanitize_job``: bare metal holds whole nodes, no workload.
- ``cluster_setup``: what an operator installs once (``ladder-system``, Kueue Topology, ResourceFlavors and
  ClusterQueue, the Kata confidential RuntimeClasses).

Names are deterministic (``ldr-<id>``, ``ldr-<id>-gpus``, ``ldr-<id>-checkpoints``), so re-rendering is idempotent
under server-side apply. Every object carries ``app.kubernetes.io/managed-by: ladder``; tenant objects also carry
``ladder.io/tenant`` and ``ladder.io/allocation``. ``tests/provisioning/kubernetes/test_render.py`` validates every
manifest against the Kubernetes 1.34, Kueue and KubeVirt schemas.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from provisioning.kubernetes.shapes import (
    DEFAULT_IMAGE,
    GPU_PRODUCTS,
    LABEL_ALLOCATION,
    LABEL_DEDICATED,
    LABEL_JURISDICTION,
    LABEL_TENANT,
    MANAGED_BY,
    TAINT_DEDICATED,
    AllocationShape,
    TenantShape,
    namespace_of,
)
from provisioning.placement.catalog import CATALOG

Obj = dict[str, Any]

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
HOSTNAME = "kubernetes.io/hostname"
CLIQUE = "nvidia.com/gpu.clique"
GPU_PRODUCT = "nvidia.com/gpu.product"
CC_MODE = "nvidia.com/cc.mode"

KUEUE_API = "kueue.x-k8s.io/v1beta2"  # the CRDs' storage version; v1beta1 is still served but deprecated
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
LOCAL_QUEUE = "ladder"
CLUSTER_QUEUE = "ladder-gpu"
TOPOLOGY = "ladder-gpu"
SYSTEM_NAMESPACE = "ladder-system"

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"  # time-slicing/MPS replicas under the device plugin's renameByDefault
PASSTHROUGH_GPU = "nvidia.com/pgpu"  # what NVIDIA's Kata sandbox device plugin advertises by default
MIG_CLASS = "mig.nvidia.com"  # NVIDIA's DRA device class for MIG devices
DRA_DOMAIN = "gpu.nvidia.com"  # the NVIDIA DRA driver's attribute domain
KATA_RUNTIME = {"snp": "kata-qemu-nvidia-gpu-snp", "tdx": "kata-qemu-nvidia-gpu-tdx"}

UID = 1000  # tenant containers run as this user: restricted refuses images that would start as root
SERVE_PORT = 8000
RESTART_FROM_CHECKPOINT = 75  # exit code of a gang member that lost a peer: restart the gang, not a failure
QUEUE_DEPTH_PER_REPLICA = "4"
VM_IMAGE = "quay.io/containerdisks/ubuntu:24.04"
SCRATCH = "/var/lib/ladder/scratch"
SANITIZE_SCRIPT = """set -eu
# Reset every GPU (clears the memory and state the tenant left), then empty the node's scratch directory.
nvidia-smi --query-gpu=index --format=csv,noheader | while read -r gpu; do nvidia-smi --gpu-reset -i "$gpu"; done
find /host-scratch -mindepth 1 -xdev -delete
"""


# --- building blocks ----------------------------------------------------------------------------------------------


def _meta(name: str, namespace: str | None = None, labels: Mapping[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "labels": {MANAGED_BY_LABEL: MANAGED_BY, **(labels or {})}}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _obj(api_version: str, kind: str, metadata: Obj, **fields: Any) -> Obj:
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


def _labels(a: AllocationShape) -> dict[str, str]:
    # Extra labels never override Ladder's own: the driver and the Services select on those.
    return {**a.extra_labels, LABEL_TENANT: a.tenant, LABEL_ALLOCATION: str(a.id), MANAGED_BY_LABEL: MANAGED_BY}


def _own(a: AllocationShape, name: str | None = None) -> Obj:
    return _meta(name or a.object_name, a.namespace, _labels(a))


def _hosts(a: AllocationShape) -> list[str]:
    return sorted({d.hostname for d in a.devices} | {n.hostname for n in a.nodes})


def _single_host(a: AllocationShape) -> str:
    hosts = {d.hostname for d in a.devices}
    if len(hosts) != 1:
        raise ValueError(f"allocation {a.id}: a {a.rung} runs on one host, placed on {sorted(hosts)}")
    return hosts.pop()


def _whole_gpus(a: AllocationShape) -> int:
    return len({d.gpu_uuid for d in a.devices})


def _pinned_to(hosts: Iterable[str]) -> Obj:
    """Required node affinity on the placed hosts. Not ``spec.nodeName``: that bypasses the scheduler, so DRA
    claims would never be allocated, device-plugin resources would not be checked before the kubelet admits the
    pod, and Kueue's topology-aware scheduling could not place a gang among its hosts."""
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": sorted(set(hosts))}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _resources(gpu_key: str | None, count: int, whole_gpus: int) -> Obj:
    """cpu/memory sized to the GPUs (8 cores and 64 GiB each; 2 cores and 16 GiB for a slice or a share).
    Extended resources go in limits only: the API server copies them to requests."""
    cpu, memory = (8 * whole_gpus, 64 * whole_gpus) if whole_gpus else (2, 16)
    limits: Obj = {"memory": f"{memory}Gi", **({gpu_key: str(count)} if gpu_key else {})}
    return {"requests": {"cpu": str(cpu), "memory": f"{memory}Gi"}, "limits": limits}


def _container(a: AllocationShape, resources: Obj, interactive: bool = False, **extra: Any) -> Obj:
    # Pod Security "restricted": no privilege escalation, no capabilities, non-root, RuntimeDefault seccomp.
    security = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    container: Obj = {"name": "worker", "image": a.image, "resources": resources, "securityContext": security}
    if interactive and a.image == DEFAULT_IMAGE:
        # The stock CUDA image has no long-running process: keep the tenant's GPU box up until it is released.
        container["command"] = ["sleep", "infinity"]
    return {**container, **{k: v for k, v in extra.items() if v is not None}}


def _pod_spec(containers: list[Obj], restart: str, **extra: Any) -> Obj:
    security = {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "fsGroup": UID}
    spec: Obj = {
        "containers": containers,
        "restartPolicy": restart,
        "securityContext": {**security, "seccompProfile": {"type": "RuntimeDefault"}},
        "automountServiceAccountToken": False,  # tenant code has no business with the Kubernetes API
    }
    return {**spec, **{k: v for k, v in extra.items() if v is not None}}


def _mig_claim_template(a: AllocationShape) -> Obj:
    """A DRA claim template for one MIG device of the placed profile on one of the placed parent GPUs. The v1
    API nests the request under ``exactly``; the two CEL selectors must both match."""
    profiles = {d.mig_profile for d in a.devices}
    if len(profiles) != 1 or None in profiles:
        raise ValueError(f"allocation {a.id}: MIG devices need one profile, got {sorted(map(str, profiles))}")
    parents = sorted({d.gpu_uuid for d in a.devices})
    attrs = f'device.attributes["{DRA_DOMAIN}"]'
    quoted = ", ".join(f'"{p}"' for p in parents)
    parent = f"{attrs}.parentUUID == {quoted}" if len(parents) == 1 else f"{attrs}.parentUUID in [{quoted}]"
    selectors = [{"cel": {"expression": f'{attrs}.profile == "{profiles.pop()}"'}}, {"cel": {"expression": parent}}]
    request = {"name": "mig", "exactly": {"deviceClassName": MIG_CLASS, "selectors": selectors}}
    spec = {"metadata": {"labels": _labels(a)}, "spec": {"devices": {"requests": [request]}}}
    return _obj("resource.k8s.io/v1", "ResourceClaimTemplate", _own(a, f"{a.object_name}-gpus"), spec=spec)


def _mig_fields(a: AllocationShape) -> tuple[list[Obj], Obj]:
    """The pod's ``resourceClaims`` and the container's ``resources`` for the MIG claim template."""
    resources = {**_resources(None, 0, 0), "claims": [{"name": "gpu"}]}
    return [{"name": "gpu", "resourceClaimTemplateName": f"{a.object_name}-gpus"}], resources


# --- the tenant's namespace -------------------------------------------------------------------------------------


def namespace_set(tenant: TenantShape) -> list[Obj]:
    """Namespace, ResourceQuota (when the tenant has a GPU quota), LimitRange, NetworkPolicies, LocalQueue."""
    ns = namespace_of(tenant.slug)
    labels = {LABEL_TENANT: tenant.slug}
    ns_labels = {**labels, **({LABEL_JURISDICTION: tenant.jurisdiction} if tenant.jurisdiction else {})}
    for mode in ("enforce", "warn", "audit"):
        ns_labels[f"pod-security.kubernetes.io/{mode}"] = "restricted"
        ns_labels[f"pod-security.kubernetes.io/{mode}-version"] = "latest"
    objs = [_obj("v1", "Namespace", _meta(ns, labels=ns_labels))]

    if tenant.gpu_quota_milli is not None:
        # A backstop: the placement engine enforces the quota exactly. Each key caps one way to get a GPU at the
        # tenant's total. MIG devices count 7 to a GPU (floor of 7 x milli / 1000, so a fractional quota still
        # admits slices), with ResourceQuota's per-device-class syntax for DRA claims (Kubernetes 1.34).
        whole = str(tenant.gpu_quota_milli // 1000)
        hard = {
            f"requests.{GPU}": whole,
            f"requests.{PASSTHROUGH_GPU}": whole,
            f"{MIG_CLASS}.deviceclass.resource.k8s.io/devices": str(7 * tenant.gpu_quota_milli // 1000),
        }
        objs.append(_obj("v1", "ResourceQuota", _meta("ladder-gpu-quota", ns, labels), spec={"hard": hard}))

    # Defaults for containers that state no cpu/memory (Ladder's GPU containers always state theirs).
    defaults = {"default": {"cpu": "2", "memory": "4Gi"}, "defaultRequest": {"cpu": "250m", "memory": "512Mi"}}
    objs.append(
        _obj(
            "v1",
            "LimitRange",
            _meta("ladder-defaults", ns, labels),
            spec={"limits": [{"type": "Container", **defaults}]},
        )
    )

    def policy(name: str, **spec: Any) -> Obj:
        return _obj("networking.k8s.io/v1", "NetworkPolicy", _meta(name, ns, labels), spec={"podSelector": {}, **spec})

    kube_dns = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    dns_ports = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    here: list[Obj] = [{"podSelector": {}}]  # any pod of this namespace
    both = ["Ingress", "Egress"]
    objs += [
        policy("default-deny", policyTypes=both),
        policy("allow-dns", policyTypes=["Egress"], egress=[{"to": [kube_dns], "ports": dns_ports}]),
        policy("allow-same-namespace", policyTypes=both, ingress=[{"from": here}], egress=[{"to": here}]),
        _obj(KUEUE_API, "LocalQueue", _meta(LOCAL_QUEUE, ns, labels), spec={"clusterQueue": CLUSTER_QUEUE}),
    ]
    return objs


# --- workloads by rung --------------------------------------------------------------------------------------------


def allocation_objects(a: AllocationShape) -> list[Obj]:
    """The allocation's objects in apply order (dependencies first; delete them in reverse)."""
    rung, performance = a.rung, a.performance
    if rung == "bare_metal":
        return []  # the tenant holds whole nodes: see bare_metal_node_patches
    if rung == "container" and performance in ("whole_gpu", "mig"):
        return [_mig_claim_template(a), _container_pod(a)] if performance == "mig" else [_container_pod(a)]
    if rung == "vm" and performance == "whole_gpu":
        return [_virtual_machine(a)]
    if rung == "confidential_vm" and performance == "whole_gpu":
        return [_confidential_pod(a)]
    if rung == "job" and performance == "whole_gpu":
        return _gang_job(a)
    if rung == "serverless" and performance in ("whole_gpu", "mig", "mps", "time_slicing", "fractional"):
        return _serverless(a)
    raise ValueError(f"allocation {a.id}: the {rung} rung does not offer {performance} performance isolation")


def _container_pod(a: AllocationShape) -> Obj:
    claims = None
    if a.performance == "mig":
        claims, resources = _mig_fields(a)
    else:
        resources = _resources(GPU, _whole_gpus(a), _whole_gpus(a))
    container = _container(a, resources, interactive=True)
    affinity = _pinned_to([_single_host(a)])
    return _obj("v1", "Pod", _own(a), spec=_pod_spec([container], "Always", affinity=affinity, resourceClaims=claims))


def _confidential_pod(a: AllocationShape) -> Obj:
    """A Kata confidential pod: the whole GPUs pass through (VFIO) into a TEE guest of the node's CPU vendor."""
    host = _single_host(a)
    tee = next((n.cc_tee for n in a.nodes if n.hostname == host), None)
    if tee is None or tee not in KATA_RUNTIME:
        raise ValueError(f"allocation {a.id}: host {host} is not a confidential-computing host in CC mode")
    gpus = _whole_gpus(a)
    resources = _resources(PASSTHROUGH_GPU, gpus, gpus)
    resources["limits"]["cpu"] = resources["requests"]["cpu"]  # Kata sizes the guest from the limits
    container = _container(a, resources, interactive=True)
    spec = _pod_spec(
        [container], "Always", runtimeClassName=KATA_RUNTIME[tee], nodeSelector={CC_MODE: "on", HOSTNAME: host}
    )
    return _obj("v1", "Pod", _own(a), spec=spec)


def _virtual_machine(a: AllocationShape) -> Obj:
    """A KubeVirt VM with the placed GPUs passed through. ``deviceName`` is ``nvidia.com/<catalog model>``: the
    operator aliases the PCI-database names of NVIDIA's KubeVirt GPU device plugin to the catalog's (its
    ``GPUAliases`` config) and permits them in the KubeVirt CR, so one name holds across pci.ids versions."""
    host, gpus = _single_host(a), _whole_gpus(a)
    memory_gb = CATALOG[a.gpu_model].memory_gb if a.gpu_model in CATALOG else 80
    image = a.image if a.image != DEFAULT_IMAGE else VM_IMAGE  # the CUDA container image is not a VM disk
    domain = {
        "cpu": {"cores": 8 * gpus, "sockets": 1, "threads": 1},
        "resources": {"requests": {"memory": f"{2 * memory_gb * gpus}Gi"}},  # twice the GPU memory, for staging
        "firmware": {"bootloader": {"efi": {"secureBoot": False}}},  # the GPUs' large BARs need UEFI
        "devices": {
            "gpus": [{"name": f"gpu{i}", "deviceName": f"nvidia.com/{a.gpu_model}"} for i in range(gpus)],
            "disks": [{"name": "rootdisk", "disk": {"bus": "virtio"}}],
            "interfaces": [{"name": "default", "masquerade": {}}],
        },
    }
    vmi = {
        "domain": domain,
        "nodeSelector": {HOSTNAME: host},
        "evictionStrategy": "None",  # passthrough GPUs cannot live-migrate: a drain stops the VM
        "networks": [{"name": "default", "pod": {}}],
        "volumes": [{"name": "rootdisk", "containerDisk": {"image": image}}],
    }
    # runStrategy, not the deprecated ``running``.
    spec = {"runStrategy": "Always", "template": {"metadata": {"labels": _labels(a)}, "spec": vmi}}
    return _obj("kubevirt.io/v1", "VirtualMachine", _own(a), spec=spec)


def _gang_job(a: AllocationShape) -> list[Obj]:
    """A checkpoint PVC, a headless Service for rank discovery, and an Indexed Job of ``gang_size`` pods queued in
    Kueue (admitted all together, inside one NVLink clique).

    A pod lost to a node failure or a drain (condition DisruptionTarget) does not count against ``backoffLimit``
    and is recreated; its peers, having lost the NCCL world, exit with ``RESTART_FROM_CHECKPOINT`` and are
    recreated too (also not counted). The gang resumes from ``$LADDER_CHECKPOINT_DIR``; only other failures count.
    """
    gang, total = a.gang_size, len(a.devices)
    if gang < 1 or total % gang:
        raise ValueError(f"allocation {a.id}: {total} GPUs do not split into {gang} equal members")
    per_member, name, labels = total // gang, a.object_name, _labels(a)
    checkpoints = f"{name}-checkpoints"
    # Every member writes its shards from its own node: ReadWriteMany, from the cluster's default class.
    pvc_spec = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": f"{64 * total}Gi"}}}
    # publishNotReadyAddresses: members rendezvous before any of them is ready.
    ranks = {"clusterIP": "None", "selector": {LABEL_ALLOCATION: str(a.id)}, "publishNotReadyAddresses": True}
    env = {
        "LADDER_CHECKPOINT_DIR": "/checkpoints",
        "LADDER_RESTART_EXIT_CODE": str(RESTART_FROM_CHECKPOINT),
        "MASTER_ADDR": f"{name}-0.{name}",  # index 0's hostname under the headless Service (spec.subdomain)
        "WORLD_SIZE": str(gang),
        "NPROC_PER_NODE": str(per_member),
    }
    container = _container(
        a,
        _resources(GPU, per_member, per_member),
        env=[{"name": k, "value": v} for k, v in env.items()],
        volumeMounts=[{"name": "checkpoints", "mountPath": "/checkpoints"}],
    )
    pod = _pod_spec(
        [container],
        "Never",  # podFailurePolicy requires it
        affinity=_pinned_to(_hosts(a)),
        # The product label lets Kueue pick this model's ResourceFlavor (hostnames alone do not).
        nodeSelector={GPU_PRODUCT: GPU_PRODUCTS[a.gpu_model][0]} if a.gpu_model in GPU_PRODUCTS else None,
        subdomain=name,
        terminationGracePeriodSeconds=300,  # members checkpoint on SIGTERM
        volumes=[{"name": "checkpoints", "persistentVolumeClaim": {"claimName": checkpoints}}],
    )
    restart = {"containerName": "worker", "operator": "In", "values": [RESTART_FROM_CHECKPOINT]}
    failure_policy = [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "Ignore", "onExitCodes": restart},
    ]
    template = {"metadata": {"labels": labels, "annotations": {"kueue.x-k8s.io/podset-required-topology": CLIQUE}}}
    job = {
        "parallelism": gang,
        "completions": gang,
        "completionMode": "Indexed",
        "suspend": True,  # Kueue unsuspends it on admission
        "backoffLimit": gang,
        "podFailurePolicy": {"rules": failure_policy},
        "template": {**template, "spec": pod},
    }
    return [
        _obj("v1", "PersistentVolumeClaim", _own(a, checkpoints), spec=pvc_spec),
        _obj("v1", "Service", _own(a), spec=ranks),
        _obj("batch/v1", "Job", _meta(name, a.namespace, {**labels, QUEUE_LABEL: LOCAL_QUEUE}), spec=job),
    ]


def _serverless(a: AllocationShape) -> list[Obj]:
    """A Deployment of 1..N replicas (one placed device each), its Service, an HPA on queue depth, and ingress
    from ``ladder-system`` (the gateway) through the tenant's default deny.

    ``spec.replicas`` is left out, so re-applying never fights the HPA. Scale to zero is the driver's: the HPA
    cannot go below 1 (HPAScaleToZero is alpha), so when ``ladder_queue_depth`` has been 0 for the idle window
    the driver sets the Deployment's scale to 0 (an HPA does not act on a target at 0 replicas), and on the
    first queued request it sets 1 and the HPA takes over again."""
    name, labels, selector = a.object_name, _labels(a), {LABEL_ALLOCATION: str(a.id)}
    objs: list[Obj] = []
    claims: list[Obj] | None = None
    env: list[Obj] = []
    if a.performance == "mig":
        objs.append(_mig_claim_template(a))
        claims, resources = _mig_fields(a)
    elif a.performance == "whole_gpu":
        resources = _resources(GPU, 1, 1)
    else:
        # Soft sharing (rule 1: within the tenant only): one replica of the device plugin's shared resource.
        resources = _resources(GPU_SHARED, 1, 0)
        share = a.devices[0].share_milli if a.devices else None
        if share:
            env.append({"name": "LADDER_GPU_SHARE_MILLI", "value": str(share)})
            if a.performance in ("mps", "fractional"):  # MPS enforces a compute cap per client
                env.append({"name": "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "value": str(-(-share // 10))})
    probe = {"httpGet": {"path": "/ready", "port": "http"}, "initialDelaySeconds": 30, "periodSeconds": 5}
    ports = [{"name": "http", "containerPort": SERVE_PORT, "protocol": "TCP"}]
    container = _container(a, resources, ports=ports, readinessProbe=probe, env=env or None)
    pod = _pod_spec([container], "Always", affinity=_pinned_to(_hosts(a)), resourceClaims=claims)
    deployment = {
        "selector": {"matchLabels": selector},
        # Only the placed devices exist: replace a replica in place, never surge onto a GPU that is not ours.
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
        "template": {"metadata": {"labels": labels}, "spec": pod},
    }
    metric = {
        "metric": {"name": "ladder_queue_depth", "selector": {"matchLabels": selector}},
        "target": {"type": "AverageValue", "averageValue": QUEUE_DEPTH_PER_REPLICA},
    }
    hpa = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        "minReplicas": 1,
        "maxReplicas": max(len(a.devices), 1),
        "metrics": [{"type": "External", "external": metric}],
    }
    gateway = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": SYSTEM_NAMESPACE}}}
    ingress = [{"from": [gateway], "ports": [{"protocol": "TCP", "port": SERVE_PORT}]}]
    return [
        *objs,
        _obj("apps/v1", "Deployment", _own(a), spec=deployment),
        _obj(
            "v1",
            "Service",
            _own(a),
            spec={"selector": selector, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
        ),
        _obj("autoscaling/v2", "HorizontalPodAutoscaler", _own(a), spec=hpa),
        _obj(
            "networking.k8s.io/v1",
            "NetworkPolicy",
            _own(a, f"{name}-ingress"),
            spec={"podSelector": {"matchLabels": selector}, "policyTypes": ["Ingress"], "ingress": ingress},
        ),
    ]


# --- bare metal ---------------------------------------------------------------------------------------------------


def _without_ours(taints: Iterable[Obj]) -> list[Obj]:
    return [t for t in taints if t.get("key") != TAINT_DEDICATED]


def bare_metal_node_patches(a: AllocationShape, current_taints: Mapping[str, list[Obj]] | None = None) -> list[Obj]:
    """A server-side-apply Node object per held node: label and NoSchedule taint ``ladder.io/dedicated=<tenant>``.

    ``spec.taints`` is an atomic list: whoever applies it owns all of it. Pass each node's current taints
    (``current_taints[hostname]``) so the others (GPU operator, cordon) are kept; without them only Ladder's taint
    is rendered, which would replace the node's other taints."""
    ours = {"key": TAINT_DEDICATED, "value": a.tenant, "effect": "NoSchedule"}
    return [
        _obj(
            "v1",
            "Node",
            _meta(host, labels={LABEL_DEDICATED: a.tenant}),
            spec={"taints": [*_without_ours((current_taints or {}).get(host, [])), ours]},
        )
        for host in _hosts(a)
    ]


def node_release(hostname: str, current_taints: Iterable[Obj] = ()) -> Obj:
    """The Node object to apply once sanitized: Ladder's label and taint gone, the node's other taints kept.
    (Applying a bare ``{"metadata": {"name": ...}}`` drops the whole atomic taint list Ladder owns.)"""
    return _obj("v1", "Node", {"name": hostname}, spec={"taints": _without_ours(current_taints)})


def sanitize_job_name(hostname: str) -> str:
    """``sanitize-<host>``: DNS-1123, short enough for the job-name label (a hash keeps long names unique)."""
    name = "sanitize-" + re.sub(r"[^a-z0-9-]+", "-", hostname.lower()).strip("-")
    if len(name) > 52:
        name = f"{name[:43].rstrip('-')}-{hashlib.sha256(hostname.encode()).hexdigest()[:8]}"
    return name


def sanitize_job(hostname: str, tenant: str) -> Obj:
    """The wipe of a bare-metal host between tenants: a privileged Job in ``ladder-system`` (Ladder's own namespace
    at the privileged Pod Security level; tenant namespaces stay restricted), pinned to the host and tolerating
    the tenant's taint and a cordon. Its name depends on the host only, so the driver finds it without the
    tenant. No TTL: the driver reads its completion, then deletes it."""
    labels = {"ladder.io/sanitize": "true", **({LABEL_TENANT: tenant} if tenant else {})}
    tolerations = [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
        {"key": TAINT_DEDICATED, "operator": "Exists", "effect": "NoSchedule"},
    ]
    container = {
        "name": "sanitize",
        "image": DEFAULT_IMAGE,
        "command": ["/bin/sh", "-c", SANITIZE_SCRIPT],
        "env": [  # the NVIDIA container runtime injects nvidia-smi and every GPU of the host
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"},
        ],
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "scratch", "mountPath": "/host-scratch"}],
    }
    pod = {
        "restartPolicy": "Never",
        "nodeSelector": {HOSTNAME: hostname},
        "tolerations": tolerations,
        "automountServiceAccountToken": False,
        "containers": [container],
        "volumes": [{"name": "scratch", "hostPath": {"path": SCRATCH, "type": "DirectoryOrCreate"}}],
    }
    template = {"metadata": {"labels": {MANAGED_BY_LABEL: MANAGED_BY, **labels}}, "spec": pod}
    spec = {"backoffLimit": 2, "activeDeadlineSeconds": 3600, "template": template}
    return _obj("batch/v1", "Job", _meta(sanitize_job_name(hostname), SYSTEM_NAMESPACE, labels), spec=spec)


# --- once per cluster ---------------------------------------------------------------------------------------------


def flavor_name(model: str) -> str:
    return "ladder-" + re.sub(r"[^a-z0-9-]+", "-", model.lower())


def system_namespace() -> Obj:
    """``ladder-system``: Ladder's own namespace. The sanitize Job is privileged, so it is at the privileged Pod
    Security level (tenant namespaces stay restricted)."""
    labels = {f"pod-security.kubernetes.io/{m}": "privileged" for m in ("enforce", "warn", "audit")}
    return _obj("v1", "Namespace", _meta(SYSTEM_NAMESPACE, labels=labels))


def cluster_setup(models: list[str], gpus_per_model: Mapping[str, int] | None = None) -> list[Obj]:
    """What an operator installs once per cluster: ``ladder-system``, the Kueue Topology (NVLink clique, then
    host), a ResourceFlavor per GPU model, the ClusterQueue ``ladder-gpu`` for Ladder's namespaces, and the Kata
    confidential RuntimeClasses. Kueue's GPU quota is the fleet's size per model (``gpus_per_model``, default
    1024): the placement engine already decided who gets which GPU; Kueue only gates when a gang starts."""
    unknown = sorted(set(models) - set(GPU_PRODUCTS))
    if unknown:
        raise ValueError(f"unknown GPU models: {unknown}")
    levels = [{"nodeLabel": CLIQUE}, {"nodeLabel": HOSTNAME}]  # Kueue wants the hostname level last
    objs = [system_namespace(), _obj(KUEUE_API, "Topology", _meta(TOPOLOGY), spec={"levels": levels})]
    flavors = []
    for model in sorted(set(models)):
        flavor = {"nodeLabels": {GPU_PRODUCT: GPU_PRODUCTS[model][0]}, "topologyName": TOPOLOGY}
        objs.append(_obj(KUEUE_API, "ResourceFlavor", _meta(flavor_name(model)), spec=flavor))
        gpus = (gpus_per_model or {}).get(model, 1024)
        # Kueue admits only resources its ClusterQueue covers, so cpu and memory are covered too (per GPU).
        quotas = {"cpu": str(32 * gpus), "memory": f"{256 * gpus}Gi", GPU: str(gpus)}
        flavors.append(
            {"name": flavor_name(model), "resources": [{"name": r, "nominalQuota": q} for r, q in quotas.items()]}
        )
    queue = {
        "namespaceSelector": {"matchLabels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU], "flavors": flavors}],
    }
    objs.append(_obj(KUEUE_API, "ClusterQueue", _meta(CLUSTER_QUEUE), spec=queue))
    for handler in sorted(KATA_RUNTIME.values()):
        scheduling = {"nodeSelector": {CC_MODE: "on"}}
        objs.append(_obj("node.k8s.io/v1", "RuntimeClass", _meta(handler), handler=handler, scheduling=scheduling))
    return objs


def documents(objs: Iterable[Obj]) -> str:
    """Multi-document YAML (keys sorted, each document opened by ``---``) for ``k8s_render`` and reviews."""
    return yaml.safe_dump_all(list(objs), sort_keys=True, default_flow_style=False, explicit_start=True, width=4096)
