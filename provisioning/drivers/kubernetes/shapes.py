"""What the renderers need to know, free of the ORM: a tenant, an allocation with its placed devices, and nodes.

``provisioning.drivers.kubernetes.desired`` builds these from the database; tests and ``k8s_render`` build them
too, so a
person can review exactly what would be applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from provisioning.domain.capacity_classes import DEFAULT_CLASS
from provisioning.domain.fabric import FABRIC_RESOURCE_PREFIX
from provisioning.domain.fleet_document import Rdma
from provisioning.domain.node_host import member_host
from provisioning.domain.rungs import FRAMEWORKS, Framework, Rung
from provisioning.domain.workloads import STOCK_IMAGE, Materials, Workload, WorkloadSpec

MANAGED_BY = "ladder"
LABEL_TENANT = "ladder.io/tenant"
LABEL_ALLOCATION = "ladder.io/allocation"
LABEL_CAPACITY_CLASS = "ladder.io/capacity-class"  # on spot work's objects and pods; spot nodes may be tainted with it
LABEL_JURISDICTION = "ladder.io/jurisdiction"
LABEL_DEDICATED = "ladder.io/dedicated"
TAINT_DEDICATED = "ladder.io/dedicated"
DEFAULT_IMAGE = STOCK_IMAGE
SLURM_NAMESPACE_SUFFIX = FRAMEWORKS[Framework.SLURM].namespace_suffix  # the namespace_set(slurm=True) renders
HPA = "hpa"  # what scales serverless endpoints (LADDER_SERVERLESS_AUTOSCALER): a HorizontalPodAutoscaler
KEDA = "keda"  # or a KEDA ScaledObject
AUTOSCALERS = (HPA, KEDA)
DEFAULT_PROMETHEUS_URL = "http://prometheus-operated.monitoring.svc:9090"
DEFAULT_IDLE_SECONDS = 300.0


# The catalog's GPU models and the ``nvidia.com/gpu.product`` values GPU feature discovery reports for them
# (the first is what Ladder's ResourceFlavors select; fleet_sync accepts any of them).
GPU_PRODUCTS: dict[str, tuple[str, ...]] = {
    "A100-40GB": ("NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB"),
    "A100-80GB": ("NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe"),
    "H100-SXM-80GB": ("NVIDIA-H100-80GB-HBM3",),
    "H100-NVL-94GB": ("NVIDIA-H100-NVL",),
    "H200-141GB": ("NVIDIA-H200",),
    "B200": ("NVIDIA-B200",),
    "GB200": ("NVIDIA-GB200",),
}


def model_of_product(product: str) -> str | None:
    """The catalog model of a ``nvidia.com/gpu.product`` label value (a ``-MIG-<profile>`` suffix is ignored)."""
    base = product.split("-MIG-")[0]
    return next((model for model, names in GPU_PRODUCTS.items() if base in names), None)


def namespace_of(tenant_slug: str) -> str:
    return f"ladder-{tenant_slug}"


def namespace_for(tenant_slug: str, spec: WorkloadSpec) -> str:
    """Where an allocation's objects live: the tenant's namespace with its rung's suffix (the table of rungs); for
    a Slurm cluster the tenant's ``ladder-<slug>-slurm``, the one namespace whose Pod Security level admits what
    Slinky's slurmd and login pods need (docs/jobs.md, "Pod Security")."""
    return namespace_of(tenant_slug) + spec.namespace_suffix


def object_name(allocation_id: int) -> str:
    return f"ldr-{allocation_id}"


@dataclass(frozen=True)
class TenantShape:
    slug: str
    jurisdiction: str | None = None  # the single jurisdiction a sovereign tenant is fenced to, else None
    gpu_quota_milli: int | None = None  # the tenant's GPU quota (1000 per GPU); None: no quota
    volume_quota_gb: int | None = None  # the tenant's storage quota for its volumes; None: no quota


@dataclass(frozen=True)
class NodeShape:
    hostname: str
    nvlink_domain: str  # the NVLink clique (label nvidia.com/gpu.clique)
    cc_tee: str | None = None  # "snp" or "tdx" on a confidential-computing host in CC mode, else None
    rdma: Rdma | None = None  # its RDMA NICs and their fabric (None: none; a gang then meets over the pod network)


@dataclass(frozen=True)
class DeviceShape:
    hostname: str
    gpu_index: int
    gpu_uuid: str
    mig_profile: str | None = None  # a MIG slice of this profile on the GPU gpu_uuid
    mig_start: int | None = None  # the slice's placement start (its first memory slice, 0-7)
    share_milli: int | None = None  # a soft share (time-slicing, MPS) of the GPU, within the tenant


@dataclass(frozen=True)
class AllocationShape:
    id: int
    name: str
    tenant: str  # slug
    rung: str  # bare_metal | vm | confidential_vm | container | job | serverless
    performance: str  # whole_gpu | mig | mps | time_slicing | fractional
    security: str
    gpu_model: str
    devices: tuple[DeviceShape, ...]
    nodes: tuple[NodeShape, ...]  # the nodes the devices are on
    gang_size: int = 1
    # What each member takes of its node's host beside its GPUs (placed with them): CPU in milli-cores, memory in MiB,
    # a member being ``member_gpus`` whole GPUs (0: a MIG slice or a soft share). Its pods and VMs request exactly it.
    cpu_milli: int = 0
    memory_mib: int = 0
    member_gpus: int = 0
    # The node its pods without a GPU (a launcher, a Ray head, a Slurm controller) were placed on, together; None:
    # placed before they were placed, so the cluster's scheduler chooses.
    side_host: str | None = None
    # How it was bought (docs/capacity.md), and, for preemptible work, the notice it gets: its pods' grace period.
    capacity_class: str = DEFAULT_CLASS.value
    notice_seconds: int | None = None
    image: str = DEFAULT_IMAGE
    extra_labels: dict[str, str] = field(default_factory=dict)
    workload: Workload | None = None  # what the tenant runs (None: the stock image, kept up for interactive use)
    materials: Materials = field(default_factory=Materials)
    hall: str = ""  # the hall's code: the SSH gateway is per hall
    base_domain: str = "ladder.localhost"  # public hostnames are <name>.<base_domain>
    # The gateway's side: Ladder's public URL (the tokens' issuer, the JWKS's home), how often the gateway
    # refreshes a JWKS, and the calls a minute each route takes.
    ladder_url: str = "http://127.0.0.1:8000"
    keys_seconds: int = 30
    calls_per_minute: int = 1200
    # A confidential VM's way to Ladder's attestation API: (its URL, the allocation's attestation credential).
    attestation: tuple[str, str] | None = None
    # A Slurm cluster's auth/slurm key (its daemons and login node authenticate each other with it); None elsewhere.
    slurm_key: str | None = field(default=None, repr=False)

    # The tenant's number on an RDMA fabric (its primary key): its InfiniBand partition key or RoCE VLAN derive
    # from it (``provisioning.domain.fabric``); None: not known, and a gang on RDMA nodes is refused.
    fabric_partition: int | None = None
    fabric_resource_prefix: str = FABRIC_RESOURCE_PREFIX  # the SR-IOV device plugin's pools: <prefix>/rail<r>
    # A serverless endpoint's autoscaler (``HPA`` or ``KEDA``), the Prometheus KEDA queries, and the operator's idle
    # window (an endpoint's autoscaling takes it unless it names its own).
    autoscaler: str = HPA
    prometheus_url: str = DEFAULT_PROMETHEUS_URL
    idle_seconds: float = DEFAULT_IDLE_SECONDS

    def host_for(self, whole_gpus: int) -> tuple[int, int]:
        """CPU (milli-cores) and memory (MiB) for a pod or VM holding ``whole_gpus`` of a member's GPUs (0: its
        slice or share): its part of what the member took when it was placed. An allocation placed before hosts
        were placed took none: the rung's bundle for those GPUs, as its pods always requested."""
        if not (self.cpu_milli or self.memory_mib):
            return member_host(Rung(self.rung), self.gpu_model, whole_gpus, 0, 0)
        if whole_gpus and self.member_gpus:
            return self.cpu_milli * whole_gpus // self.member_gpus, self.memory_mib * whole_gpus // self.member_gpus
        return self.cpu_milli, self.memory_mib

    @property
    def spec(self) -> WorkloadSpec:
        """Its rung and workload, typed, with the facts of the table of rungs."""
        return WorkloadSpec.of(self.rung, self.workload)

    @property
    def namespace(self) -> str:
        return namespace_for(self.tenant, self.spec)

    @property
    def object_name(self) -> str:
        return object_name(self.id)
