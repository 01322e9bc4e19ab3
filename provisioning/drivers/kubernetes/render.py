"""Allocation shapes to Kubernetes manifests: pure functions returning plain dicts (no Django, no I/O).

What a tenant gets (docs/design.md §2, §5; docs/kubernetes.md §2):
- ``namespace_set``: the tenant's namespace with restricted Pod Security, a ResourceQuota, a LimitRange,
  default-deny NetworkPolicies (DNS and same-namespace traffic allowed) and the Kueue LocalQueue ``ladder``.
- ``allocation_objects``: one allocation, by rung: a Pod, a KubeVirt VirtualMachine, a Kata confidential Pod, a
  Kueue-queued gang with a checkpoint volume (and a ComputeDomain on multi-node NVLink) by the workload's framework
  (``render_jobs``: an Indexed Job for torchrun, an MPIJob, a RayJob), or a Deployment + Service + an HPA or a
  KEDA ScaledObject (``render_scaling``) for serverless; every device through a DRA ``resource.k8s.io/v1`` claim
  whose selectors name exactly the placed devices (``render_devices``; ``share_claims``: the tenant's claim per
  soft-shared GPU); with the tenant's workload in it (``render_workload``) and the ways in (``render_access``:
  Services, HTTPRoutes, SSH, NetworkPolicies).
- bare metal (``render_metal``): node taints and labels, the BareMetalHost patches that boot the tenant's OS, and
  the sanitize Job between tenants.
- ``cluster_setup``: what an operator installs once (``ladder-system``, Kueue Topology, ResourceFlavors and
  ClusterQueue, the Kata confidential RuntimeClasses, the shared Gateway and the SSH gateway's Service and RBAC).

Names are deterministic (``ldr-<id>``, ``ldr-<id>-gpus``, ``ldr-<id>-secrets``, ...), so re-rendering is idempotent
under server-side apply. Every object carries ``app.kubernetes.io/managed-by: ladder``; tenant objects also carry
``ladder.io/tenant`` and ``ladder.io/allocation``. ``tests/provisioning/drivers/kubernetes/test_render*.py``
validate every
manifest against the Kubernetes 1.34, Kueue, KubeVirt, Gateway API, Metal3 and KEDA schemas.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import yaml

from provisioning.domain.capacity_classes import CLASSES
from provisioning.domain.fabric import FABRIC_RESOURCE_PREFIX, resource_prefix_check
from provisioning.domain.rungs import DEFAULT_FRAMEWORK, Framework, Rung, rung_facts
from provisioning.drivers.kubernetes.manifest import (
    CLIQUE,
    DEFAULT_BASE_DOMAIN,
    GPU_PRODUCT,
    HOSTNAME,
    LOCAL_QUEUE,
    MANAGED_BY_LABEL,
    NAMESPACE_NAME,
    QUEUE_LABEL,
    SYSTEM_NAMESPACE,
    Obj,
    hosts,
    labels_of,
    meta,
    obj,
    own,
    pinned_to,
    preemptible_pod_fields,
    priority_class_name,
    secret,
    selector,
    single_host,
)
from provisioning.drivers.kubernetes.render_access import (
    LADDER_API_SERVICE,
    access_objects,
    endpoint_token_policy,
    gateway,
    gateway_check_policy,
    serve_port,
    ssh_gateway,
)
from provisioning.drivers.kubernetes.render_devices import (
    CLAIM,
    GPU,
    GPU_CLASS,
    IMEX_CHANNEL,
    KUEUE_DEVICE_CLASSES,
    MIG_CLASS,
    MPS_CLIENTS_PER_GPU,
    SOFT_SHARING,
    VFIO_CLASS,
    claim_fields,
    claim_template,
    claim_template_name,
    device_request,
    memory_quantity,
    mig_selectors,
    per_device,
    share_claims,
    share_env,
    share_fields,
    uuid_selector,
)
from provisioning.drivers.kubernetes.render_jobs import (
    CHECKPOINT_REPORT,
    JOB_RENDERERS,
    KUEUE_FRAMEWORKS,
    RESTART_FROM_CHECKPOINT,
    ROLE_LABEL,
)
from provisioning.drivers.kubernetes.render_metal import (
    METAL3_NAMESPACE,
    bare_metal_host_objects,
    bare_metal_host_release,
    bare_metal_node_patches,
    node_release,
    sanitize_job,
    sanitize_job_name,
)
from provisioning.drivers.kubernetes.render_scaling import autoscaler
from provisioning.drivers.kubernetes.render_slurm import SLURM_KUEUE_FRAMEWORK, slurm_cluster
from provisioning.drivers.kubernetes.render_volumes import vm_volumes
from provisioning.drivers.kubernetes.render_workload import (
    os_image_of,
    placeholder_materials,
    pod_parts,
    pod_spec,
    user_data,
    userdata_name,
    worker_container,
    workload_secrets,
)
from provisioning.drivers.kubernetes.shapes import (
    DEFAULT_IMAGE,
    GPU_PRODUCTS,
    LABEL_JURISDICTION,
    LABEL_TENANT,
    MANAGED_BY,
    SLURM_NAMESPACE_SUFFIX,
    AllocationShape,
    TenantShape,
    namespace_of,
)

__all__ = [  # what the driver, k8s_render and the tests use, wherever it is defined
    "CHECKPOINT_REPORT",
    "METAL3_NAMESPACE",
    "QUEUE_LABEL",
    "RESTART_FROM_CHECKPOINT",
    "ROLE_LABEL",
    "SYSTEM_NAMESPACE",
    "allocation_objects",
    "bare_metal_host_objects",
    "bare_metal_host_release",
    "bare_metal_node_patches",
    "cluster_setup",
    "documents",
    "endpoint_token_policy",
    "flavor_name",
    "kueue_configuration",
    "namespace_set",
    "node_release",
    "placeholder_materials",
    "sanitize_job",
    "sanitize_job_name",
    "share_claims",
    "system_namespace",
]

CC_MODE = "nvidia.com/cc.mode"

KUEUE_API = "kueue.x-k8s.io/v1beta2"  # the CRDs' storage version; v1beta1 is still served but deprecated
CLUSTER_QUEUE = "ladder-gpu"
TOPOLOGY = "ladder-gpu"

PASSTHROUGH_GPU = "nvidia.com/pgpu"  # what NVIDIA's Kata sandbox device plugin advertises by default
KATA_RUNTIME = {"snp": "kata-qemu-nvidia-gpu-snp", "tdx": "kata-qemu-nvidia-gpu-tdx"}

# A serverless replica going away: seconds out of the Service before SIGTERM, then to finish its streams.
PRE_STOP_SECONDS = 10
STREAM_GRACE_SECONDS = 300
READY_PATH_ENV = "LADDER_READY_PATH"
DEFAULT_READY_PATH = "/health"
VM_IMAGE = "quay.io/containerdisks/ubuntu:24.04"


# --- building blocks ----------------------------------------------------------------------------------------------


def _whole_gpus(a: AllocationShape) -> int:
    return len({d.gpu_uuid for d in a.devices})


# --- the tenant's namespace -------------------------------------------------------------------------------------


def namespace_set(tenant: TenantShape, *, slurm: bool = False) -> list[Obj]:
    """Namespace, ResourceQuota (when the tenant has a GPU quota), LimitRange, NetworkPolicies, LocalQueue.

    ``slurm``: the tenant's ``ladder-<slug>-slurm`` instead, for its Slurm clusters: the same set, but Pod Security
    enforces "privileged" there (Slinky's slurmd adds capabilities and its login node runs sshd as root; the audit
    level stays "restricted", so every such pod is on the record). Nothing else of the tenant runs in it."""
    ns = namespace_of(tenant.slug) + (SLURM_NAMESPACE_SUFFIX if slurm else "")
    labels = {LABEL_TENANT: tenant.slug}
    ns_labels = {**labels, **({LABEL_JURISDICTION: tenant.jurisdiction} if tenant.jurisdiction else {})}
    for mode in ("enforce", "warn", "audit"):
        level = "privileged" if slurm and mode != "audit" else "restricted"
        ns_labels[f"pod-security.kubernetes.io/{mode}"] = level
        ns_labels[f"pod-security.kubernetes.io/{mode}-version"] = "latest"
    objs = [obj("v1", "Namespace", meta(ns, labels=ns_labels))]

    if tenant.gpu_quota_milli is not None:
        objs.append(obj("v1", "ResourceQuota", meta("ladder-gpu-quota", ns, labels), spec={"hard": quota(tenant)}))

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


def quota(tenant: TenantShape) -> dict[str, str]:
    """The namespace's ``ResourceQuota``: a backstop under the placement engine, which enforces the tenant's quota
    exactly; it bounds what reaches the cluster without Ladder (a pod that bypasses Kueue, a claim written by
    hand). Per key, with W = the quota's whole GPUs (rounded down):

    - GPU devices by DRA device class (Kubernetes 1.34's ``<class>.deviceclass.resource.k8s.io/devices``): W
      passthrough GPUs (``vfio``); W whole GPUs plus one soft-shared GPU per soft mode (a tenant's shares of one
      mode fill one GPU before the next opens, so the shares of up to three modes may each hold a partly used GPU
      the quota does not count whole); MIG devices 7 to a GPU (floor of 7 x milli / 1000, so a fractional quota
      still admits slices).
    - ``nvidia.com/gpu`` and ``nvidia.com/pgpu`` requests: W, for nodes still served by device plugins and for
      the DRA driver's extended-resource mapping of ``nvidia.com/gpu`` (docs/kubernetes.md §2).
    - ResourceClaims: one per claimed device at most (a claim holds at least one), plus one IMEX channel claim per
      gang member (at most one member per whole GPU).
    - pods: one per claim, plus the MPS limit of 48 clients on each soft-shared GPU (soft-share pods name their
      GPU's claim instead of making one). Finished pods do not count.
    - storage, when the tenant has a storage quota: a job's checkpoint volume is 64 GiB per GPU and one PVC per job
      (a job holds at least one GPU), and its volumes' claims fill the storage quota at most, one claim per GB at
      most (a volume is 1 GB or more). Without a storage quota the tenant's volumes are unbounded, and so is this.
    """
    milli = tenant.gpu_quota_milli or 0
    whole = milli // 1000
    soft_gpus = len(SOFT_SHARING)
    devices = {GPU_CLASS: whole + soft_gpus, VFIO_CLASS: whole, MIG_CLASS: 7 * milli // 1000}
    claims = sum(devices.values()) + whole
    hard = {f"{device_class}.deviceclass.resource.k8s.io/devices": str(n) for device_class, n in devices.items()}
    return {
        **hard,
        f"requests.{GPU}": str(whole),
        f"requests.{PASSTHROUGH_GPU}": str(whole),
        "count/resourceclaims.resource.k8s.io": str(claims),
        "pods": str(claims + MPS_CLIENTS_PER_GPU * soft_gpus),
        **_storage_quota(whole, tenant.volume_quota_gb),
    }


def _storage_quota(whole_gpus: int, volume_gb: int | None) -> dict[str, str]:
    if volume_gb is None:
        return {}
    return {
        "requests.storage": f"{64 * whole_gpus + volume_gb}Gi",
        "persistentvolumeclaims": str(whole_gpus + volume_gb),
    }


# --- workloads by rung --------------------------------------------------------------------------------------------


def allocation_objects(a: AllocationShape) -> list[Obj]:
    """The allocation's objects in apply order (Secrets first, then the workload, then the ways in; delete them in
    reverse). Bare metal has none here: see ``bare_metal_node_patches`` and ``bare_metal_host_objects``."""
    offer = rung_facts(a.rung)
    if offer.rung not in WORKLOADS:
        return []
    if a.performance not in offer.performance:
        raise ValueError(f"allocation {a.id}: the {a.rung} rung does not offer {a.performance} performance isolation")
    workload = WORKLOADS[offer.rung](a)
    # A confidential VM's secrets never enter the cluster: the guest takes them from the key broker once attested.
    secrets = [] if offer.rung is Rung.CONFIDENTIAL_VM else workload_secrets(a)
    return secrets + workload + access_objects(a)


def _container(a: AllocationShape) -> list[Obj]:
    return [claim_template(a, per_device(a, GPU_CLASS)), _container_pod(a)]


def _gang(a: AllocationShape) -> list[Obj]:
    """The job rung's gang, by the workload's framework."""
    framework = a.workload.framework if a.workload is not None else DEFAULT_FRAMEWORK
    if framework not in GANGS:
        raise ValueError(f"allocation {a.id}: the job rung does not render the {framework} framework here")
    return GANGS[Framework(framework)](a)


def _container_pod(a: AllocationShape) -> Obj:
    claims, resources = claim_fields(a, _whole_gpus(a) if a.performance == "whole_gpu" else 0)
    parts = pod_parts(a)
    container = worker_container(a, parts, resources, interactive=True)
    affinity = pinned_to([single_host(a)])
    spec = pod_spec(parts, [container], "Always", affinity=affinity, resourceClaims=claims)
    return obj("v1", "Pod", own(a), spec=spec)


def _confidential_pod(a: AllocationShape) -> list[Obj]:
    """A Kata confidential pod: the whole GPUs pass through (VFIO) into a TEE guest of the node's CPU vendor, each
    claimed by UUID from the DRA driver's vfio class.

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
    claims, resources = claim_fields(a, _whole_gpus(a))
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
    container = worker_container(a, parts, resources, interactive=True, env=attest_env)
    spec = pod_spec(
        parts,
        [container],
        "Always",
        runtimeClassName=KATA_RUNTIME[tee],
        nodeSelector={CC_MODE: "on", HOSTNAME: host},
        resourceClaims=claims,
    )
    return [claim_template(a, per_device(a, VFIO_CLASS)), obj("v1", "Pod", own(a), spec=spec)]


def _virtual_machine(a: AllocationShape) -> list[Obj]:
    """A KubeVirt VM with the placed GPUs passed through, each claimed by UUID from the DRA driver's vfio class
    (KubeVirt's ``GPUsWithDRA`` feature gate: the VMI's ``resourceClaims`` reach the virt-launcher pod, and each
    ``gpus`` entry names its claim's request, so GPU i is exactly request ``gpu-i``).

    With a workload, the VM boots the catalog's disk for its ``os_image`` and cloud-init user data (the tenant's,
    with its SSH keys for the image's user) from the Secret ``ldr-<id>-userdata``: user data may hold secrets, so
    it never sits in the VirtualMachine itself. The tenant's volumes come in as disks (block) and virtiofs
    filesystems, mounted by that user data (``render_volumes.vm_volumes``)."""
    host, gpus = single_host(a), _whole_gpus(a)
    cpu_milli, memory_mib = a.host_for(gpus)
    # Without a workload: the shape's image, unless it is the CUDA container image, which is no VM disk.
    stock = a.image if a.image != DEFAULT_IMAGE else VM_IMAGE
    image = os_image_of(a).vm_disk if a.workload is not None else stock
    mine = vm_volumes(a)  # the tenant's volumes: disks, virtiofs filesystems, and the guest's mounts
    disks = [{"name": "rootdisk", "disk": {"bus": "virtio"}}, *mine.disks]
    volumes: list[Obj] = [{"name": "rootdisk", "containerDisk": {"image": image}}, *mine.volumes]
    objs = []
    if a.workload is not None:
        objs.append(secret(own(a, userdata_name(a)), {"userdata": user_data(a, mounts=mine.mounts)}))
        disks.append({"name": "cloudinitdisk", "disk": {"bus": "virtio"}})
        volumes.append({"name": "cloudinitdisk", "cloudInitNoCloud": {"secretRef": {"name": userdata_name(a)}}})
    devices = {
        "gpus": [{"name": f"gpu{i}", "claimName": CLAIM, "requestName": f"gpu-{i}"} for i in range(gpus)],
        "disks": disks,
        **({"filesystems": mine.filesystems} if mine.filesystems else {}),
        "interfaces": [{"name": "default", "masquerade": {}}],
    }
    domain = {
        # what the VM took of its node's host when it was placed (the rung's bundle: twice its GPUs' memory)
        "cpu": {"cores": max(1, cpu_milli // 1000), "sockets": 1, "threads": 1},
        "resources": {"requests": {"memory": memory_quantity(memory_mib)}},
        "firmware": {"bootloader": {"efi": {"secureBoot": False}}},  # the GPUs' large BARs need UEFI
        "devices": devices,
    }
    vmi = {
        "domain": domain,
        "nodeSelector": {HOSTNAME: host},
        "resourceClaims": [{"name": CLAIM, "resourceClaimTemplateName": claim_template_name(a)}],
        "evictionStrategy": "None",  # passthrough GPUs cannot live-migrate: a drain stops the VM
        "networks": [{"name": "default", "pod": {}}],
        "volumes": volumes,
        **preemptible_pod_fields(a),  # spot: the guest is shut down at the notice, stopped at its deadline
    }
    # runStrategy, not the deprecated ``running``. The template's labels reach the launcher pod, which the
    # allocation's Services and NetworkPolicies select.
    spec = {"runStrategy": "Always", "template": {"metadata": {"labels": labels_of(a)}, "spec": vmi}}
    template = claim_template(a, per_device(a, VFIO_CLASS))
    return [*objs, template, obj("kubevirt.io/v1", "VirtualMachine", own(a), spec=spec)]


def warm_probe(a: AllocationShape) -> Obj:
    """Readiness is the model's warm signal: ``GET <path>`` on the serving port answers 200 only once the model
    is loaded. The path is the workload's ``LADDER_READY_PATH`` variable, else ``/health`` (what vLLM, TGI,
    SGLang and llama.cpp's server answer once loaded); the stock image answers ``/ready``."""
    env = dict(a.workload.env) if a.workload is not None else {}
    path = env.get(READY_PATH_ENV) or (DEFAULT_READY_PATH if a.workload is not None else "/ready")
    return {"httpGet": {"path": path, "port": "http"}, "initialDelaySeconds": 2, "periodSeconds": 2}


def _serverless(a: AllocationShape) -> list[Obj]:
    """A Deployment of replicas (one placed device each) and what scales it on its queue depth, by the endpoint's
    autoscaling (an HPA or a KEDA ScaledObject, ``render_scaling``); its Service (port 80 to the serving port),
    HTTPRoute and ingress from ``ladder-system`` come with the other ways in (render_access).

    ``spec.replicas`` is left out, so re-applying never fights the autoscaler. Scale to zero is the driver's: the
    HPA cannot go below 1 (HPAScaleToZero is alpha), so when ``ladder_queue_depth`` has been 0 for the endpoint's
    idle window the driver sets the Deployment's scale to 0 (an HPA does not act on a target at 0 replicas); once
    the last pod is gone the endpoint is ``idle`` and its devices go back to the engine. The first request wakes it
    (the gateway's check places it again), the driver applies it with its new placement and sets 1, and the
    autoscaler takes over again.

    Rollouts never drop a replica that is serving (``maxUnavailable: 0``): the new replica comes up first on one
    spare device (``maxSurge: 1``). The spare is headroom the endpoint keeps: with N placed devices it goes up to
    N - 1 replicas at most (``serving_replicas``), so a rollout at full scale still has a device for its surge
    replica; an endpoint of one device rolls only from zero (at a wake, when nothing is serving). Readiness is the
    model's warm signal (``warm_probe``), so traffic and the surge's hand-over wait for a loaded model; a replica
    that goes away (scale-down, rollout) is first taken out of the Service, then has ``STREAM_GRACE_SECONDS`` to
    finish its streams after SIGTERM."""
    labels = labels_of(a)
    objs, claims, resources, env = _serverless_devices(a)
    parts = pod_parts(a, serve_port(a))
    # The endpoint leaves the Service (and the gateway's pool) during the pre-stop pause, before SIGTERM.
    lifecycle = {"preStop": {"sleep": {"seconds": PRE_STOP_SECONDS}}}
    container = worker_container(a, parts, resources, env=env, readinessProbe=warm_probe(a), lifecycle=lifecycle)
    pod = pod_spec(
        parts,
        [container],
        "Always",
        affinity=pinned_to(hosts(a)),
        resourceClaims=claims,
        terminationGracePeriodSeconds=PRE_STOP_SECONDS + STREAM_GRACE_SECONDS,
    )
    deployment = {
        "selector": {"matchLabels": selector(a)},
        # Never unavailable: the surge replica starts on the spare device and is warm before an old one goes.
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        "template": {"metadata": {"labels": labels}, "spec": pod},
    }
    return [*objs, obj("apps/v1", "Deployment", own(a), spec=deployment), autoscaler(a)]


def _serverless_devices(a: AllocationShape) -> tuple[list[Obj], list[Obj], Obj, list[Obj]]:
    """A replica's device: the claim template's objects, the pod's ``resourceClaims``, the worker's ``resources``
    and environment. Replicas share one pod template, so each replica's claim takes one device among the placed
    ones (one whole GPU, or one MIG device at its placed start); there are never more replicas than devices (the
    HPA's maximum, and no surge), so the replicas hold the placed devices and nothing else. A soft share names
    the tenant's claim for its GPU (``share_claims``); soft sharing never crosses tenants (rule 1)."""
    if a.performance == "mig":
        request = device_request(CLAIM, MIG_CLASS, mig_selectors(a))
    elif a.performance == "whole_gpu":
        request = device_request(CLAIM, GPU_CLASS, [uuid_selector(d.gpu_uuid for d in a.devices)])
    else:
        claims, resources = share_fields(a)
        return [], claims, resources, share_env(a)
    claims, resources = claim_fields(a, 1 if a.performance == "whole_gpu" else 0)
    return [claim_template(a, [request])], claims, resources, []


# The workload of each rung of the table, and on the job rung of each framework. Bare metal is not here: its nodes
# are patched and its OS booted by ``render_metal``.
WORKLOADS: dict[Rung, Callable[[AllocationShape], list[Obj]]] = {
    Rung.CONTAINER: _container,
    Rung.VM: _virtual_machine,
    Rung.CONFIDENTIAL_VM: _confidential_pod,
    Rung.JOB: _gang,
    Rung.SERVERLESS: _serverless,
}
GANGS: dict[Framework, Callable[[AllocationShape], list[Obj]]] = {**JOB_RENDERERS, Framework.SLURM: slurm_cluster}


# --- once per cluster ---------------------------------------------------------------------------------------------


def kueue_configuration(fabric_resource_prefix: str = FABRIC_RESOURCE_PREFIX) -> Obj:
    """The part of Kueue's own ``Configuration`` (its manager's config file, not an API object) Ladder needs: DRA
    support on, each device class Ladder's gangs claim mapped to the resource the ClusterQueue covers, the job
    integrations of the job rung's frameworks (Kueue manages only the kinds listed there), and the fabric's VFs
    (``<prefix>/rail<r>``) left out of Kueue's accounting (``excludeResourcePrefixes``): Kueue admits only
    resources its ClusterQueue covers, and a VF is a per-node device the scheduler and the device plugin count,
    which a cluster-wide quota could not express."""
    mappings = [{"name": name, "deviceClassNames": [cls]} for cls, name in sorted(KUEUE_DEVICE_CLASSES.items())]
    excluded = [f"{resource_prefix_check(fabric_resource_prefix)}/"]
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "featureGates": {"DynamicResourceAllocation": True},
        "integrations": {"frameworks": [*KUEUE_FRAMEWORKS, SLURM_KUEUE_FRAMEWORK]},
        "resources": {"deviceClassMappings": mappings, "excludeResourcePrefixes": excluded},
    }


def flavor_name(model: str) -> str:
    return "ladder-" + re.sub(r"[^a-z0-9-]+", "-", model.lower())


def system_namespace() -> Obj:
    """``ladder-system``: Ladder's own namespace. The sanitize Job is privileged, so it is at the privileged Pod
    Security level (tenant namespaces stay restricted)."""
    labels = {f"pod-security.kubernetes.io/{m}": "privileged" for m in ("enforce", "warn", "audit")}
    return obj("v1", "Namespace", meta(SYSTEM_NAMESPACE, labels=labels))


def cluster_setup(
    models: list[str],
    gpus_per_model: Mapping[str, int] | None = None,
    *,
    base_domain: str = DEFAULT_BASE_DOMAIN,
    api: tuple[str, str, int] = LADDER_API_SERVICE,
    hold_seconds: float = 60.0,
) -> list[Obj]:
    """What an operator installs once per cluster: ``ladder-system``, the Kueue Topology (NVLink clique, then
    host), a ResourceFlavor per GPU model, the ClusterQueue ``ladder-gpu`` for Ladder's namespaces (preempting
    lower priorities within it), a WorkloadPriorityClass per capacity class (``ladder-spot`` below the others), the
    Kata
    confidential RuntimeClasses, the Gateway ``ladder`` for ``*.<base_domain>`` with Ladder's per-request check
    on it (``gateway_check_policy``: ``api`` is Ladder's web Service, ``hold_seconds`` how long a wake holds a
    request) and the SSH gateway's ServiceAccount, RBAC and Service. Kueue's GPU quota is the fleet's size per
    model (``gpus_per_model``, default 1024): the placement engine already decided who gets which GPU; Kueue only
    gates when a gang starts."""
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
        # GPUs arrive as DRA claims, counted as nvidia.com/gpu through Kueue's deviceClassMappings
        # (KUEUE_DEVICE_CLASSES); a multi-node NVLink gang adds one IMEX channel claim per member.
        quotas = {"cpu": str(32 * gpus), "memory": f"{256 * gpus}Gi", GPU: str(gpus), IMEX_CHANNEL: str(gpus)}
        flavors.append(
            {"name": flavor_name(model), "resources": [{"name": r, "nominalQuota": q} for r, q in quotas.items()]}
        )
    queue = {
        "namespaceSelector": {"matchLabels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU, IMEX_CHANNEL], "flavors": flavors}],
        # Within Ladder's queue, a workload of a higher class's priority may evict lower ones (spot) to be admitted.
        "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Never"},
    }
    objs.append(obj(KUEUE_API, "ClusterQueue", meta(CLUSTER_QUEUE), spec=queue))
    for klass, facts in CLASSES.items():
        description = f"Ladder {facts.label}: {facts.promise}"
        priority = meta(priority_class_name(klass))
        objs.append(obj(KUEUE_API, "WorkloadPriorityClass", priority, value=facts.priority, description=description))
    for handler in sorted(KATA_RUNTIME.values()):
        scheduling = {"nodeSelector": {CC_MODE: "on"}}
        objs.append(obj("node.k8s.io/v1", "RuntimeClass", meta(handler), handler=handler, scheduling=scheduling))
    return [*objs, gateway(base_domain), *gateway_check_policy(api, hold_seconds), *ssh_gateway()]


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
