"""Allocation shapes to Kubernetes manifests: pure functions returning plain dicts (no Django, no I/O).

What a tenant gets (docs/design.md §2, §5; docs/kubernetes.md §2):
- ``namespace_set``: the tenant's namespace with restricted Pod Security, a GPU ResourceQuota, a LimitRange,
  default-deny NetworkPolicies (DNS and same-namespace traffic allowed) and the Kueue LocalQueue ``ladder``.
- ``allocation_objects``: one allocation, by rung: a Pod (whole GPUs via ``nvidia.com/gpu``, a MIG slice via a DRA
  ``resource.k8s.io/v1`` claim), a KubeVirt VirtualMachine, a Kata confidential Pod, a Kueue-queued Indexed Job with
  a checkpoint volume, or a Deployment + Service + HPA for serverless; with the tenant's workload in it
  (``render_workload``) and the ways in (``render_access``: Services, HTTPRoutes, SSH, NetworkPolicies).
- bare metal (``render_metal``): node taints and labels, the BareMetalHost patches that boot the tenant's OS, and
  the sanitize Job between tenants.
- ``cluster_setup``: what an operator installs once (``ladder-system``, Kueue Topology, ResourceFlavors and
  ClusterQueue, the Kata confidential RuntimeClasses, the shared Gateway and the SSH gateway's Service and RBAC).

Names are deterministic (``ldr-<id>``, ``ldr-<id>-gpus``, ``ldr-<id>-secrets``, ...), so re-rendering is idempotent
under server-side apply. Every object carries ``app.kubernetes.io/managed-by: ladder``; tenant objects also carry
``ladder.io/tenant`` and ``ladder.io/allocation``. ``tests/provisioning/kubernetes/test_render*.py`` validate every
manifest against the Kubernetes 1.34, Kueue, KubeVirt, Gateway API and Metal3 schemas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import yaml

from provisioning.kubernetes.manifest import (
    DEFAULT_BASE_DOMAIN,
    HOSTNAME,
    MANAGED_BY_LABEL,
    NAMESPACE_NAME,
    SYSTEM_NAMESPACE,
    UID,
    Obj,
    hosts,
    labels_of,
    meta,
    obj,
    own,
    pinned_to,
    restricted,
    secret,
    selector,
    single_host,
)
from provisioning.kubernetes.render_access import access_objects, gateway, serve_port, ssh_gateway
from provisioning.kubernetes.render_metal import (
    METAL3_NAMESPACE,
    bare_metal_host_objects,
    bare_metal_host_release,
    bare_metal_node_patches,
    node_release,
    sanitize_job,
    sanitize_job_name,
)
from provisioning.kubernetes.render_workload import (
    PodParts,
    os_image_of,
    placeholder_materials,
    pod_parts,
    user_data,
    userdata_name,
    workload_secrets,
)
from provisioning.kubernetes.shapes import (
    DEFAULT_IMAGE,
    GPU_PRODUCTS,
    LABEL_JURISDICTION,
    LABEL_TENANT,
    MANAGED_BY,
    AllocationShape,
    TenantShape,
    namespace_of,
)
from provisioning.placement.catalog import CATALOG
from provisioning.workloads import Checkpoint

__all__ = [  # what the driver, k8s_render and the tests use, wherever it is defined
    "METAL3_NAMESPACE",
    "SYSTEM_NAMESPACE",
    "allocation_objects",
    "bare_metal_host_objects",
    "bare_metal_host_release",
    "bare_metal_node_patches",
    "cluster_setup",
    "documents",
    "flavor_name",
    "namespace_set",
    "node_release",
    "placeholder_materials",
    "sanitize_job",
    "sanitize_job_name",
    "system_namespace",
]

CLIQUE = "nvidia.com/gpu.clique"
GPU_PRODUCT = "nvidia.com/gpu.product"
CC_MODE = "nvidia.com/cc.mode"

KUEUE_API = "kueue.x-k8s.io/v1beta2"  # the CRDs' storage version; v1beta1 is still served but deprecated
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
LOCAL_QUEUE = "ladder"
CLUSTER_QUEUE = "ladder-gpu"
TOPOLOGY = "ladder-gpu"

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"  # time-slicing/MPS replicas under the device plugin's renameByDefault
PASSTHROUGH_GPU = "nvidia.com/pgpu"  # what NVIDIA's Kata sandbox device plugin advertises by default
MIG_CLASS = "mig.nvidia.com"  # NVIDIA's DRA device class for MIG devices
DRA_DOMAIN = "gpu.nvidia.com"  # the NVIDIA DRA driver's attribute domain
KATA_RUNTIME = {"snp": "kata-qemu-nvidia-gpu-snp", "tdx": "kata-qemu-nvidia-gpu-tdx"}

RESTART_FROM_CHECKPOINT = 75  # exit code of a gang member that lost a peer: restart the gang, not a failure
QUEUE_DEPTH_PER_REPLICA = "4"
VM_IMAGE = "quay.io/containerdisks/ubuntu:24.04"


# --- building blocks ----------------------------------------------------------------------------------------------


def _whole_gpus(a: AllocationShape) -> int:
    return len({d.gpu_uuid for d in a.devices})


def _resources(gpu_key: str | None, count: int, whole_gpus: int) -> Obj:
    """cpu/memory sized to the GPUs (8 cores and 64 GiB each; 2 cores and 16 GiB for a slice or a share).
    Extended resources go in limits only: the API server copies them to requests."""
    cpu, memory = (8 * whole_gpus, 64 * whole_gpus) if whole_gpus else (2, 16)
    limits: Obj = {"memory": f"{memory}Gi", **({gpu_key: str(count)} if gpu_key else {})}
    return {"requests": {"cpu": str(cpu), "memory": f"{memory}Gi"}, "limits": limits}


def _container(
    a: AllocationShape,
    parts: PodParts,
    resources: Obj,
    interactive: bool = False,
    env: list[Obj] | None = None,
    mounts: list[Obj] | None = None,
    **extra: Any,
) -> Obj:
    """The worker: the rung's resources, environment and mounts first, then the workload's."""
    container: Obj = {"name": "worker", "image": parts.image, "resources": resources, "securityContext": restricted()}
    if interactive and a.workload is None and parts.image == DEFAULT_IMAGE:
        # The stock CUDA image has no long-running process: keep the tenant's GPU box up until it is released.
        container["command"] = ["sleep", "infinity"]
    fields = {
        "command": parts.command,
        "args": parts.args,
        "env": [*(env or []), *parts.env] or None,
        "ports": parts.ports or None,
        "volumeMounts": [*(mounts or []), *parts.mounts] or None,
        **extra,
    }
    return {**container, **{k: v for k, v in fields.items() if v is not None}}


def _pod_spec(
    parts: PodParts, containers: list[Obj], restart: str, volumes: list[Obj] | None = None, **extra: Any
) -> Obj:
    security = {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "fsGroup": UID}
    spec: Obj = {
        "containers": [*containers, *parts.sidecars],
        "restartPolicy": restart,
        "securityContext": {**security, "seccompProfile": {"type": "RuntimeDefault"}},
        "automountServiceAccountToken": False,  # tenant code has no business with the Kubernetes API
    }
    fields = {
        "initContainers": parts.init_containers or None,
        "imagePullSecrets": parts.pull_secrets or None,
        "shareProcessNamespace": parts.share_processes or None,
        "volumes": [*(volumes or []), *parts.volumes] or None,
        **extra,
    }
    return {**spec, **{k: v for k, v in fields.items() if v is not None}}


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
    spec = {"metadata": {"labels": labels_of(a)}, "spec": {"devices": {"requests": [request]}}}
    return obj("resource.k8s.io/v1", "ResourceClaimTemplate", own(a, f"{a.object_name}-gpus"), spec=spec)


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
    objs = [obj("v1", "Namespace", meta(ns, labels=ns_labels))]

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
        objs.append(obj("v1", "ResourceQuota", meta("ladder-gpu-quota", ns, labels), spec={"hard": hard}))

    # Defaults for containers that state no cpu/memory (Ladder's GPU containers always state theirs).
    defaults = {"default": {"cpu": "2", "memory": "4Gi"}, "defaultRequest": {"cpu": "250m", "memory": "512Mi"}}
    objs.append(
        obj(
            "v1",
            "LimitRange",
            meta("ladder-defaults", ns, labels),
            spec={"limits": [{"type": "Container", **defaults}]},
        )
    )

    def policy(name: str, **spec: Any) -> Obj:
        return obj("networking.k8s.io/v1", "NetworkPolicy", meta(name, ns, labels), spec={"podSelector": {}, **spec})

    kube_dns = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME: "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    dns_ports = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    here: list[Obj] = [{"podSelector": {}}]  # any pod of this namespace
    both = ["Ingress", "Egress"]
    objs += [
        policy("default-deny", policyTypes=both),
        policy("allow-dns", policyTypes=["Egress"], egress=[{"to": [kube_dns], "ports": dns_ports}]),
        policy("allow-same-namespace", policyTypes=both, ingress=[{"from": here}], egress=[{"to": here}]),
        obj(KUEUE_API, "LocalQueue", meta(LOCAL_QUEUE, ns, labels), spec={"clusterQueue": CLUSTER_QUEUE}),
    ]
    return objs


# --- workloads by rung --------------------------------------------------------------------------------------------


def allocation_objects(a: AllocationShape) -> list[Obj]:
    """The allocation's objects in apply order (Secrets first, then the workload, then the ways in; delete them in
    reverse). Bare metal has none here: see ``bare_metal_node_patches`` and ``bare_metal_host_objects``."""
    rung, performance = a.rung, a.performance
    if rung == "bare_metal":
        return []
    if rung == "container" and performance in ("whole_gpu", "mig"):
        workload = [_mig_claim_template(a), _container_pod(a)] if performance == "mig" else [_container_pod(a)]
    elif rung == "vm" and performance == "whole_gpu":
        workload = _virtual_machine(a)
    elif rung == "confidential_vm" and performance == "whole_gpu":
        workload = [_confidential_pod(a)]
    elif rung == "job" and performance == "whole_gpu":
        workload = _gang_job(a)
    elif rung == "serverless" and performance in ("whole_gpu", "mig", "mps", "time_slicing", "fractional"):
        workload = _serverless(a)
    else:
        raise ValueError(f"allocation {a.id}: the {rung} rung does not offer {performance} performance isolation")
    # A confidential VM's secrets never enter the cluster: the guest takes them from the key broker once attested.
    secrets = [] if rung == "confidential_vm" else workload_secrets(a)
    return secrets + workload + access_objects(a)


def _container_pod(a: AllocationShape) -> Obj:
    claims = None
    if a.performance == "mig":
        claims, resources = _mig_fields(a)
    else:
        resources = _resources(GPU, _whole_gpus(a), _whole_gpus(a))
    parts = pod_parts(a)
    container = _container(a, parts, resources, interactive=True)
    affinity = pinned_to([single_host(a)])
    spec = _pod_spec(parts, [container], "Always", affinity=affinity, resourceClaims=claims)
    return obj("v1", "Pod", own(a), spec=spec)


def _confidential_pod(a: AllocationShape) -> Obj:
    """A Kata confidential pod: the whole GPUs pass through (VFIO) into a TEE guest of the node's CPU vendor.

    No secret value and no dataset link is in it or in any Secret: the guest's attestation agent asks Ladder for a
    nonce, sends its evidence, and receives the workload's secrets sealed to a key made inside the TEE
    (``LADDER_ATTESTATION_URL``, with the allocation's ``LADDER_ATTESTATION_CREDENTIAL``, which lets it attest and
    nothing more). It writes them where the workload expects them: secret files under ``SECRET_FILES``, variables
    into the workload's environment, datasets into their volumes (empty until then)."""
    host = single_host(a)
    tee = next((n.cc_tee for n in a.nodes if n.hostname == host), None)
    if tee is None or tee not in KATA_RUNTIME:
        raise ValueError(f"allocation {a.id}: host {host} is not a confidential-computing host with a known CPU TEE")
    if a.attestation is None:
        raise ValueError(f"allocation {a.id}: a confidential VM needs its way to the attestation API")
    gpus = _whole_gpus(a)
    resources = _resources(PASSTHROUGH_GPU, gpus, gpus)
    resources["limits"]["cpu"] = resources["requests"]["cpu"]  # Kata sizes the guest from the limits
    w = a.workload
    sealed = a
    if w is not None:
        # What the key broker releases is left out of the pod: no secretKeyRef, no dataset download container.
        volumes = tuple(replace(v, dataset=None) for v in w.volumes)
        sealed = replace(a, workload=replace(w, secrets=(), volumes=volumes))
    parts = pod_parts(sealed)
    url, credential = a.attestation
    attest_env = [
        {"name": "LADDER_ATTESTATION_URL", "value": url},
        {"name": "LADDER_ATTESTATION_CREDENTIAL", "value": credential},
    ]
    container = _container(a, parts, resources, interactive=True, env=attest_env)
    spec = _pod_spec(
        parts, [container], "Always", runtimeClassName=KATA_RUNTIME[tee], nodeSelector={CC_MODE: "on", HOSTNAME: host}
    )
    return obj("v1", "Pod", own(a), spec=spec)


def _virtual_machine(a: AllocationShape) -> list[Obj]:
    """A KubeVirt VM with the placed GPUs passed through. ``deviceName`` is ``nvidia.com/<catalog model>``: the
    operator aliases the PCI-database names of NVIDIA's KubeVirt GPU device plugin to the catalog's (its
    ``GPUAliases`` config) and permits them in the KubeVirt CR, so one name holds across pci.ids versions.

    With a workload, the VM boots the catalog's disk for its ``os_image`` and cloud-init user data (the tenant's,
    with its SSH keys for the image's user) from the Secret ``ldr-<id>-userdata``: user data may hold secrets, so
    it never sits in the VirtualMachine itself."""
    host, gpus = single_host(a), _whole_gpus(a)
    memory_gb = CATALOG[a.gpu_model].memory_gb if a.gpu_model in CATALOG else 80
    # Without a workload: the shape's image, unless it is the CUDA container image, which is no VM disk.
    stock = a.image if a.image != DEFAULT_IMAGE else VM_IMAGE
    image = os_image_of(a).vm_disk if a.workload is not None else stock
    disks = [{"name": "rootdisk", "disk": {"bus": "virtio"}}]
    volumes: list[Obj] = [{"name": "rootdisk", "containerDisk": {"image": image}}]
    objs = []
    if a.workload is not None:
        objs.append(secret(own(a, userdata_name(a)), {"userdata": user_data(a)}))
        disks.append({"name": "cloudinitdisk", "disk": {"bus": "virtio"}})
        volumes.append({"name": "cloudinitdisk", "cloudInitNoCloud": {"secretRef": {"name": userdata_name(a)}}})
    domain = {
        "cpu": {"cores": 8 * gpus, "sockets": 1, "threads": 1},
        "resources": {"requests": {"memory": f"{2 * memory_gb * gpus}Gi"}},  # twice the GPU memory, for staging
        "firmware": {"bootloader": {"efi": {"secureBoot": False}}},  # the GPUs' large BARs need UEFI
        "devices": {
            "gpus": [{"name": f"gpu{i}", "deviceName": f"nvidia.com/{a.gpu_model}"} for i in range(gpus)],
            "disks": disks,
            "interfaces": [{"name": "default", "masquerade": {}}],
        },
    }
    vmi = {
        "domain": domain,
        "nodeSelector": {HOSTNAME: host},
        "evictionStrategy": "None",  # passthrough GPUs cannot live-migrate: a drain stops the VM
        "networks": [{"name": "default", "pod": {}}],
        "volumes": volumes,
    }
    # runStrategy, not the deprecated ``running``. The template's labels reach the launcher pod, which the
    # allocation's Services and NetworkPolicies select.
    spec = {"runStrategy": "Always", "template": {"metadata": {"labels": labels_of(a)}, "spec": vmi}}
    return [*objs, obj("kubevirt.io/v1", "VirtualMachine", own(a), spec=spec)]


def _gang_job(a: AllocationShape) -> list[Obj]:
    """A checkpoint PVC, a headless Service for rank discovery, and an Indexed Job of ``gang_size`` pods queued in
    Kueue (admitted all together, inside one NVLink clique).

    A pod lost to a node failure or a drain (condition DisruptionTarget) does not count against ``backoffLimit``
    and is recreated; its peers, having lost the NCCL world, exit with ``RESTART_FROM_CHECKPOINT`` and are
    recreated too (also not counted). The gang resumes from ``$LADDER_CHECKPOINT_DIR`` (the workload's
    ``checkpoint.path``, else /checkpoints) and saves every ``$LADDER_CHECKPOINT_INTERVAL_S`` seconds; only other
    failures count.
    """
    gang, total = a.gang_size, len(a.devices)
    if gang < 1 or total % gang:
        raise ValueError(f"allocation {a.id}: {total} GPUs do not split into {gang} equal members")
    per_member, name, labels = total // gang, a.object_name, labels_of(a)
    checkpoints = f"{name}-checkpoints"
    checkpoint = (a.workload.checkpoint if a.workload else None) or Checkpoint()
    # Every member writes its shards from its own node: ReadWriteMany, from the cluster's default class.
    pvc_spec = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": f"{64 * total}Gi"}}}
    # publishNotReadyAddresses: members rendezvous before any of them is ready.
    ranks = {"clusterIP": "None", "selector": selector(a), "publishNotReadyAddresses": True}
    env = {
        "LADDER_CHECKPOINT_DIR": checkpoint.path,
        "LADDER_CHECKPOINT_INTERVAL_S": str(checkpoint.interval_s),
        "LADDER_RESTART_EXIT_CODE": str(RESTART_FROM_CHECKPOINT),
        "MASTER_ADDR": f"{name}-0.{name}",  # index 0's hostname under the headless Service (spec.subdomain)
        "WORLD_SIZE": str(gang),
        "NPROC_PER_NODE": str(per_member),
    }
    parts = pod_parts(a)
    container = _container(
        a,
        parts,
        _resources(GPU, per_member, per_member),
        env=[{"name": k, "value": v} for k, v in env.items()],
        mounts=[{"name": "checkpoints", "mountPath": checkpoint.path}],
    )
    pod = _pod_spec(
        parts,
        [container],
        "Never",  # podFailurePolicy requires it
        volumes=[{"name": "checkpoints", "persistentVolumeClaim": {"claimName": checkpoints}}],
        affinity=pinned_to(hosts(a)),
        # The product label lets Kueue pick this model's ResourceFlavor (hostnames alone do not).
        nodeSelector={GPU_PRODUCT: GPU_PRODUCTS[a.gpu_model][0]} if a.gpu_model in GPU_PRODUCTS else None,
        subdomain=name,
        terminationGracePeriodSeconds=300,  # members checkpoint on SIGTERM
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
        obj("v1", "PersistentVolumeClaim", own(a, checkpoints), spec=pvc_spec),
        obj("v1", "Service", own(a), spec=ranks),
        obj("batch/v1", "Job", meta(name, a.namespace, {**labels, QUEUE_LABEL: LOCAL_QUEUE}), spec=job),
    ]


def _serverless(a: AllocationShape) -> list[Obj]:
    """A Deployment of 1..N replicas (one placed device each) and an HPA on queue depth; its Service (port 80 to
    the serving port), HTTPRoute and ingress from ``ladder-system`` come with the other ways in (render_access).

    ``spec.replicas`` is left out, so re-applying never fights the HPA. Scale to zero is the driver's: the HPA
    cannot go below 1 (HPAScaleToZero is alpha), so when ``ladder_queue_depth`` has been 0 for the idle window
    the driver sets the Deployment's scale to 0 (an HPA does not act on a target at 0 replicas), and on the
    first queued request it sets 1 and the HPA takes over again."""
    name, labels = a.object_name, labels_of(a)
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
    parts = pod_parts(a, serve_port(a))
    # The stock image answers /ready; a tenant's server is ready when it accepts connections on its port.
    ready = {"tcpSocket": {"port": "http"}} if a.workload else {"httpGet": {"path": "/ready", "port": "http"}}
    probe = {**ready, "initialDelaySeconds": 30, "periodSeconds": 5}
    container = _container(a, parts, resources, env=env, readinessProbe=probe)
    pod = _pod_spec(parts, [container], "Always", affinity=pinned_to(hosts(a)), resourceClaims=claims)
    deployment = {
        "selector": {"matchLabels": selector(a)},
        # Only the placed devices exist: replace a replica in place, never surge onto a GPU that is not ours.
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
        "template": {"metadata": {"labels": labels}, "spec": pod},
    }
    metric = {
        "metric": {"name": "ladder_queue_depth", "selector": {"matchLabels": selector(a)}},
        "target": {"type": "AverageValue", "averageValue": QUEUE_DEPTH_PER_REPLICA},
    }
    hpa = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        "minReplicas": 1,
        "maxReplicas": max(len(a.devices), 1),
        "metrics": [{"type": "External", "external": metric}],
    }
    return [
        *objs,
        obj("apps/v1", "Deployment", own(a), spec=deployment),
        obj("autoscaling/v2", "HorizontalPodAutoscaler", own(a), spec=hpa),
    ]


# --- once per cluster ---------------------------------------------------------------------------------------------


def flavor_name(model: str) -> str:
    return "ladder-" + re.sub(r"[^a-z0-9-]+", "-", model.lower())


def system_namespace() -> Obj:
    """``ladder-system``: Ladder's own namespace. The sanitize Job is privileged, so it is at the privileged Pod
    Security level (tenant namespaces stay restricted)."""
    labels = {f"pod-security.kubernetes.io/{m}": "privileged" for m in ("enforce", "warn", "audit")}
    return obj("v1", "Namespace", meta(SYSTEM_NAMESPACE, labels=labels))


def cluster_setup(
    models: list[str], gpus_per_model: Mapping[str, int] | None = None, *, base_domain: str = DEFAULT_BASE_DOMAIN
) -> list[Obj]:
    """What an operator installs once per cluster: ``ladder-system``, the Kueue Topology (NVLink clique, then
    host), a ResourceFlavor per GPU model, the ClusterQueue ``ladder-gpu`` for Ladder's namespaces, the Kata
    confidential RuntimeClasses, the Gateway ``ladder`` for ``*.<base_domain>`` and the SSH gateway's
    ServiceAccount, RBAC and Service. Kueue's GPU quota is the fleet's size per model (``gpus_per_model``, default
    1024): the placement engine already decided who gets which GPU; Kueue only gates when a gang starts."""
    unknown = sorted(set(models) - set(GPU_PRODUCTS))
    if unknown:
        raise ValueError(f"unknown GPU models: {unknown}")
    levels = [{"nodeLabel": CLIQUE}, {"nodeLabel": HOSTNAME}]  # Kueue wants the hostname level last
    objs = [system_namespace(), obj(KUEUE_API, "Topology", meta(TOPOLOGY), spec={"levels": levels})]
    flavors = []
    for model in sorted(set(models)):
        flavor = {"nodeLabels": {GPU_PRODUCT: GPU_PRODUCTS[model][0]}, "topologyName": TOPOLOGY}
        objs.append(obj(KUEUE_API, "ResourceFlavor", meta(flavor_name(model)), spec=flavor))
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
    objs.append(obj(KUEUE_API, "ClusterQueue", meta(CLUSTER_QUEUE), spec=queue))
    for handler in sorted(KATA_RUNTIME.values()):
        scheduling = {"nodeSelector": {CC_MODE: "on"}}
        objs.append(obj("node.k8s.io/v1", "RuntimeClass", meta(handler), handler=handler, scheduling=scheduling))
    return [*objs, gateway(base_domain), *ssh_gateway()]


class _Dumper(yaml.SafeDumper):
    """Writes a value shared by two places twice, never as a YAML anchor and alias: reviewers read each document
    on its own, and some tools that apply manifests reject aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def documents(objs: Iterable[Obj]) -> str:
    """Multi-document YAML (keys sorted, each document opened by ``---``) for ``k8s_render`` and reviews."""
    return yaml.dump_all(
        list(objs), Dumper=_Dumper, sort_keys=True, default_flow_style=False, explicit_start=True, width=4096
    )
