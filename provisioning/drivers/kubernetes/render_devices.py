"""Device claims: every device the placement engine chose, requested through ``resource.k8s.io/v1`` claims whose
selectors name exactly those devices (docs/kubernetes.md §2, "Devices"). Pure functions returning plain dicts; the
workloads of ``render.py`` put them in their pods, VMs and Jobs.
"""

from __future__ import annotations

from collections.abc import Iterable

from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.rungs import SOFT_SHARING
from provisioning.drivers.kubernetes.manifest import Obj, labels_of, meta, obj, own
from provisioning.drivers.kubernetes.shapes import LABEL_TENANT, AllocationShape, DeviceShape

GPU = "nvidia.com/gpu"  # the device plugin's resource; Kueue's name for DRA GPUs too (KUEUE_DEVICE_CLASSES)
# The NVIDIA DRA driver's device classes (each selects its devices by the attribute ``type``), its attribute and
# driver domain, and the API of its own objects (the opaque claim configuration GpuConfig, ComputeDomain).
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
VFIO_CLASS = "vfio.gpu.nvidia.com"  # GPUs bound to vfio-pci, for passthrough into a VM or a Kata guest
CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"  # IMEX channel 0 of a ComputeDomain
DRA_DOMAIN = "gpu.nvidia.com"
NVIDIA_API = "resource.nvidia.com/v1beta1"
DRA_API = "resource.k8s.io/v1"
CLAIM = "gpus"  # the pod's name for its device claim
IMEX_CHANNEL = "ladder.io/imex-channel"  # Kueue's resource name for ComputeDomain channels
# What Kueue's Configuration maps (``resources.deviceClassMappings``): a claim of these device classes counts as
# that many of the resource, which the ClusterQueue covers. Ladder's gangs claim GPUs and, on multi-node NVLink,
# one IMEX channel per member; a claim of a class Kueue does not map keeps the Job from being admitted.
KUEUE_DEVICE_CLASSES = {GPU_CLASS: GPU, CHANNEL_CLASS: IMEX_CHANNEL}
MPS_CLIENTS_PER_GPU = 48  # the most MPS clients one GPU serves (Volta and later)


def pod_resources(a: AllocationShape, whole_gpus: int) -> Obj:
    """cpu/memory of a pod with ``whole_gpus`` of a member's GPUs (0: its slice or share): its share of what the
    member took of the node's host when it was placed (``AllocationShape.host_for``). The devices themselves come
    from DRA claims (``claims``), never from an ``nvidia.com/gpu`` count."""
    cpu, memory = a.host_for(whole_gpus)
    return {
        "requests": {"cpu": cpu_quantity(cpu), "memory": memory_quantity(memory)},
        "limits": {"memory": memory_quantity(memory)},
    }


def cpu_quantity(milli: int) -> str:
    """Milli-cores as Kubernetes writes them: whole cores ("8"), else thousandths ("1500m")."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def memory_quantity(mib: int) -> str:
    """MiB as Kubernetes writes them: whole GiB ("64Gi"), else MiB ("1536Mi")."""
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


# --- device claims: exactly the devices the engine placed -------------------------------------------------------
#
# Every selector below is a CEL expression over the ResourceSlice devices the NVIDIA DRA driver publishes, in one of
# three forms (tests/provisioning/drivers/kubernetes/test_render_dra.py evaluates them against published devices):
# - a GPU (class gpu.nvidia.com or vfio.gpu.nvidia.com) by its attribute ``uuid``: ``== "<uuid>"`` or
#   ``in [...]``. Compared lower-cased: current driver releases publish the UUID lower-cased, older ones as NVML
#   prints it (``GPU-`` upper-case).
# - a MIG device by ``profile`` and by where it sits: its parent's ``parentUUID`` and its placement start. The
#   driver publishes no start attribute; a MIG device's capacity lists the memory slices it covers
#   (``memorySlice<i>``, for i in [start, start + size)), so "covers slice s and not slice s-1" is exactly "starts
#   at s". This holds for the static MIG layout the MIG manager cuts (docs/kubernetes.md §2); the driver's dynamic
#   MIG (alpha) publishes every possible placement without memory slices, so it cannot be pinned and is not used.
# - a disjunction of MIG placements, for replicas that each take one of the allocation's MIG devices.
# A claim's devices are its own until it is deallocated: no other claim, of this tenant or another, gets them.

_ATTRIBUTES = f'device.attributes["{DRA_DOMAIN}"]'
_CAPACITY = f'device.capacity["{DRA_DOMAIN}"]'


def _strings(values: Iterable[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def uuid_selector(uuids: Iterable[str]) -> Obj:
    """Selects the GPUs whose UUID is one of ``uuids``."""
    found = sorted({u.lower() for u in uuids})
    if not found:
        raise ValueError("a GPU claim needs at least one GPU UUID")
    left = f"{_ATTRIBUTES}.uuid.lowerAscii()"
    expression = f'{left} == "{found[0]}"' if len(found) == 1 else f"{left} in [{_strings(found)}]"
    return {"cel": {"expression": expression}}


def _mig_placement(d: DeviceShape) -> str:
    if d.mig_start is None:
        raise ValueError(f"MIG device on {d.gpu_uuid} has no placement start")
    terms = [
        f'{_ATTRIBUTES}.parentUUID.lowerAscii() == "{d.gpu_uuid.lower()}"',
        f'"memorySlice{d.mig_start}" in {_CAPACITY}',
    ]
    if d.mig_start > 0:
        terms.append(f'!("memorySlice{d.mig_start - 1}" in {_CAPACITY})')
    return " && ".join(terms)


def mig_selectors(a: AllocationShape, devices: Iterable[DeviceShape] | None = None) -> list[Obj]:
    """Selects the MIG devices of the placed profile at the placed parents and starts (all of ``devices``, by
    default the allocation's); a request's selectors must all match."""
    chosen = list(a.devices if devices is None else devices)
    profiles = {d.mig_profile for d in chosen}
    if len(profiles) != 1 or None in profiles:
        raise ValueError(f"allocation {a.id}: MIG devices need one profile, got {sorted(map(str, profiles))}")
    placements = sorted({_mig_placement(d) for d in chosen})
    either = placements[0] if len(placements) == 1 else " || ".join(f"({p})" for p in placements)
    return [
        {"cel": {"expression": f'{_ATTRIBUTES}.profile == "{profiles.pop()}"'}},
        {"cel": {"expression": either}},
    ]


def device_request(name: str, device_class: str, selectors: list[Obj], count: int = 1) -> Obj:
    """One request of the v1 API (nested under ``exactly``): ``count`` devices of the class, all selectors met."""
    exactly = {"deviceClassName": device_class, "selectors": selectors, "allocationMode": "ExactCount", "count": count}
    return {"name": name, "exactly": exactly}


def gpus_of(a: AllocationShape) -> list[DeviceShape]:
    """The allocation's distinct GPUs, by host and index."""
    seen: dict[str, DeviceShape] = {}
    for d in sorted(a.devices, key=lambda d: (d.hostname, d.gpu_index)):
        seen.setdefault(d.gpu_uuid, d)
    return list(seen.values())


def per_device(a: AllocationShape, device_class: str) -> list[Obj]:
    """One request per placed device, each naming exactly one: for a single pod (or VM) holding all of them."""
    if a.performance == "mig":
        return [device_request(f"mig-{i}", MIG_CLASS, mig_selectors(a, [d])) for i, d in enumerate(a.devices)]
    return [device_request(f"gpu-{i}", device_class, [uuid_selector([d.gpu_uuid])]) for i, d in enumerate(gpus_of(a))]


def claim_template_name(a: AllocationShape) -> str:
    return f"{a.object_name}-gpus"


def claim_template(a: AllocationShape, requests: list[Obj]) -> Obj:
    """The allocation's ``ResourceClaimTemplate``: each pod made from a template that names it gets a claim of its
    own, deleted with the pod."""
    spec = {"metadata": {"labels": labels_of(a)}, "spec": {"devices": {"requests": requests}}}
    return obj(DRA_API, "ResourceClaimTemplate", own(a, claim_template_name(a)), spec=spec)


def claim_fields(a: AllocationShape, whole_gpus: int) -> tuple[list[Obj], Obj]:
    """The pod's ``resourceClaims`` (the template's claim) and the worker's ``resources`` consuming it."""
    resources = {**pod_resources(a, whole_gpus), "claims": [{"name": CLAIM}]}
    return [{"name": CLAIM, "resourceClaimTemplateName": claim_template_name(a)}], resources


def share_claim_name(gpu_uuid: str) -> str:
    return f"ladder-share-{gpu_uuid.lower()}"


def gpu_config(performance: str) -> Obj:
    """The NVIDIA DRA driver's opaque ``GpuConfig`` for a soft-shared GPU: time-slicing, or one MPS control daemon
    (``mps``; ``fractional`` is MPS with per-client limits). The per-client limits are set in each client's
    environment (``_share_env``): the daemon serves all of the tenant's clients on the GPU, each with its own
    share, and a claim's configuration cannot change once it exists."""
    if performance == "time_slicing":
        sharing: Obj = {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Default"}}
    elif performance in ("mps", "fractional"):
        sharing = {"strategy": "MPS", "mpsConfig": {}}
    else:
        raise ValueError(f"{performance} is not a soft-sharing mode")
    return {"apiVersion": NVIDIA_API, "kind": "GpuConfig", "sharing": sharing}


def share_claims(a: AllocationShape) -> list[Obj]:
    """One ``ResourceClaim`` per (tenant, GPU) for soft sharing, in the tenant's namespace: every soft-share pod of
    the tenant on that GPU names it, so they all share the one device it holds, and no claim of another namespace
    can be given that device while it is allocated here. Not the allocation's: it outlives each allocation on the
    GPU (the driver applies it with the tenant's objects and never deletes it with an allocation), and once no pod
    uses it the claim is deallocated and the GPU is free for the next claim the engine's placement names."""
    if a.performance not in SOFT_SHARING:
        return []
    claims = []
    for d in gpus_of(a):
        request = device_request(CLAIM, GPU_CLASS, [uuid_selector([d.gpu_uuid])])
        config = {"requests": [CLAIM], "opaque": {"driver": DRA_DOMAIN, "parameters": gpu_config(a.performance)}}
        spec = {"devices": {"requests": [request], "config": [config]}}
        claims.append(
            obj(
                DRA_API,
                "ResourceClaim",
                meta(share_claim_name(d.gpu_uuid), a.namespace, {LABEL_TENANT: a.tenant}),
                spec=spec,
            )
        )
    return claims


def share_env(a: AllocationShape) -> list[Obj]:
    """A soft share's per-client limits, from the share: MPS's active-thread percentage (compute) and pinned device
    memory limit (device 0 is the pod's one GPU); time-slicing has neither, so only the share is told."""
    share = a.devices[0].share_milli if a.devices else None
    if not share:
        return []
    env = [{"name": "LADDER_GPU_SHARE_MILLI", "value": str(share)}]
    if a.performance in ("mps", "fractional"):
        memory_mb = (CATALOG[a.gpu_model].memory_gb if a.gpu_model in CATALOG else 80) * 1024 * share // 1000
        env += [
            {"name": "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "value": str(-(-share // 10))},
            {"name": "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "value": f"0={memory_mb}MB"},
        ]
    return env


def share_fields(a: AllocationShape) -> tuple[list[Obj], Obj]:
    gpus = gpus_of(a)
    if len(gpus) != 1:
        raise ValueError(f"allocation {a.id}: a soft share is on one GPU, placed on {len(gpus)}")
    gpu = gpus[0]
    resources = {**pod_resources(a, 0), "claims": [{"name": CLAIM}]}
    return [{"name": CLAIM, "resourceClaimName": share_claim_name(gpu.gpu_uuid)}], resources
