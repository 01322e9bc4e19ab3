"""The fleet (Region -> Hall -> Node -> Gpu, and the GPU models the catalog knows) and the allocations on it.

The inventory is written by ``provisioning.services.fleet.fleet_load`` (upserts from a fleet document) and node states
change only through the node services, by compare-and-swap against ``NODE_TRANSITIONS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from provisioning.domain.capacity_classes import DEFAULT_CLASS, CapacityClass
from provisioning.domain.fleet_document import JURISDICTION_RE, MAX_GPUS_PER_NODE
from provisioning.domain.node_host import Host, bundle_model, host_extra, member_host
from provisioning.domain.placement.decision import members_on
from provisioning.domain.rungs import RUNGS, Performance, Rung, Security
from provisioning.domain.states import AllocationState
from provisioning.domain.workloads import WorkloadSpec, workload_spec
from tenancy.models import TenantOwned

# A jurisdiction is a short upper-case name: "EU", "US", "UK", "CH", "APAC"...
jurisdiction_validator = RegexValidator(JURISDICTION_RE.pattern, "A jurisdiction is 2 to 8 upper-case letters.")


class Region(models.Model):
    code = models.SlugField(max_length=40, unique=True)
    name = models.CharField(max_length=200)
    jurisdiction = models.CharField(max_length=8, validators=[jurisdiction_validator])

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.code


class Hall(models.Model):
    """A data hall. ``fenced_for`` set: only sovereign tenants of that jurisdiction may use it, and no one else."""

    region = models.ForeignKey(Region, on_delete=models.PROTECT, related_name="halls")
    code = models.SlugField(max_length=40, unique=True)
    # null, not "": the fleet document says null for an unfenced hall, and "" is no jurisdiction at all.
    fenced_for = models.CharField(  # noqa: DJ001
        max_length=8, null=True, blank=True, validators=[jurisdiction_validator]
    )

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.code


class GpuModel(models.Model):
    """A row per entry of ``provisioning.domain.placement.catalog.CATALOG``, kept in step by ``gpu_models_sync``."""

    name = models.CharField(max_length=64, unique=True)
    memory_gb = models.PositiveIntegerField()
    cc_capable = models.BooleanField()
    mig_profiles = models.JSONField(default=dict, blank=True)  # profile name -> MIG kind ("1g.10gb": "1g")

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name


class VersionTarget(models.Model):
    """The versions an operator wants every node of one GPU model to run; nodes that differ are drift
    (``selectors.fleet_drift``) and a rolling upgrade drains them (``provisioning.domain.upgrades``).

    One row per GPU model, not one for the fleet: firmware (the VBIOS) is built per GPU model, and a new model often
    needs a newer driver and CUDA than an old one supports (a B200 needs a driver an H100 fleet may not run yet),
    so one fleet-wide tuple would call half the fleet drifting for ever. A model without a row has no target: its
    nodes never drift. Set with ``services.fleet.version_target_set`` (audited ``fleet.target_set``)."""

    gpu_model = models.OneToOneField(GpuModel, on_delete=models.CASCADE, related_name="version_target")
    driver = models.CharField(max_length=32)
    cuda = models.CharField(max_length=32)
    nccl = models.CharField(max_length=32)
    firmware = models.CharField(max_length=32)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["gpu_model__name"]

    def __str__(self) -> str:
        return f"{self.gpu_model.name}: {self.driver}/{self.cuda}/{self.nccl}/{self.firmware}"


class ClusterHealth(models.TextChoices):
    UNKNOWN = "unknown"
    HEALTHY = "healthy"
    UNREACHABLE = "unreachable"
    UNAUTHORIZED = "unauthorized"


class Cluster(models.Model):
    """The Kubernetes cluster of one hall. ``credentials`` is sealed (``provisioning.drivers.kubernetes.credentials``):
    ``{"kubeconfig": "..."}`` or ``{"token": "...", "ca_cert": "..."}``."""

    hall = models.OneToOneField(Hall, on_delete=models.PROTECT, related_name="cluster")
    name = models.SlugField(max_length=63, unique=True)
    api_server = models.URLField(max_length=300)
    credentials = models.TextField()
    health = models.CharField(max_length=16, choices=ClusterHealth.choices, default=ClusterHealth.UNKNOWN)
    health_detail = models.CharField(max_length=500, blank=True)
    server_version = models.CharField(max_length=64, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    reconciled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class NodeState(models.TextChoices):
    REGISTERING = "registering"
    READY = "ready"
    DRAINING = "draining"
    QUARANTINED = "quarantined"
    SANITIZING = "sanitizing"
    MAINTENANCE = "maintenance"
    FAILED = "failed"


class NodeTransition(NamedTuple):
    sources: frozenset[NodeState]
    target: NodeState


# What each operator action may do to a node: the states it applies to and the state it leaves. Services change
# state only by compare-and-swap on the state they read, so two racing changes never both apply.
# - ``undrain`` returns a node to service: from draining, maintenance or quarantine.
# - No action applies to a sanitizing node except ``fail``: draining or quarantining it and then undraining it
#   would hand it out as ``ready`` without the wipe between bare-metal tenants. The sanitizer finishes it.
# - A failed node comes back only through quarantine, so it is looked at before it takes work again.
NODE_TRANSITIONS: dict[str, NodeTransition] = {
    "drain": NodeTransition(frozenset({NodeState.READY}), NodeState.DRAINING),
    "undrain": NodeTransition(
        frozenset({NodeState.DRAINING, NodeState.MAINTENANCE, NodeState.QUARANTINED}), NodeState.READY
    ),
    "quarantine": NodeTransition(
        frozenset(
            {NodeState.REGISTERING, NodeState.READY, NodeState.DRAINING, NodeState.MAINTENANCE, NodeState.FAILED}
        ),
        NodeState.QUARANTINED,
    ),
    "fail": NodeTransition(frozenset(NodeState) - {NodeState.FAILED}, NodeState.FAILED),
}


class Node(models.Model):
    hostname = models.CharField(max_length=253, unique=True)
    hall = models.ForeignKey(Hall, on_delete=models.PROTECT, related_name="nodes")
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, related_name="nodes")
    gpu_count = models.PositiveSmallIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(MAX_GPUS_PER_NODE)]
    )
    nvlink_domain = models.CharField(max_length=100)
    cc_capable = models.BooleanField(default=False)
    cc_mode = models.BooleanField(default=False)
    # The CPU's trusted execution environment on a confidential host ("snp" or "tdx"; "" unknown), which picks
    # the Kata runtime class and which attestation evidence must claim. Declared by the fleet document (fleet_sync
    # writes it from the node's feature labels); a host in CC mode whose TEE is unknown takes no confidential VM.
    cpu_tee = models.CharField(
        max_length=8, blank=True, choices=[("", "unknown"), ("snp", "AMD SEV-SNP"), ("tdx", "Intel TDX")]
    )
    # The public half (base64, raw 32-byte Ed25519) of the key the host's attestation agent signs evidence with,
    # registered by an operator; "": none, so no evidence from this host can be verified by the node-key verifier.
    attestation_key = models.CharField(max_length=64, blank=True)
    driver_version = models.CharField(max_length=32)
    cuda_version = models.CharField(max_length=32)
    nccl_version = models.CharField(max_length=32)
    firmware_version = models.CharField(max_length=32)
    # The node's RDMA NICs as the fleet document describes them (``fleet_document.Rdma.as_json``; {}: none) and
    # the fabric they are cabled to ("": none), which placement keeps a multi-node gang inside.
    rdma = models.JSONField(default=dict, blank=True)
    fabric = models.CharField(max_length=100, blank=True)
    # The host beside the GPUs as the fleet document states it (``node_host.Host``; 0 cores: not stated, so its
    # CPU and memory are not tracked): what placement sells with the GPUs is the cores and memory less the reserve.
    cpu_cores = models.PositiveIntegerField(default=0)
    memory_gib = models.PositiveIntegerField(default=0)
    reserved_cpu_cores = models.PositiveIntegerField(default=0)
    reserved_memory_gib = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=16, choices=NodeState.choices, default=NodeState.REGISTERING)
    state_changed_at = models.DateTimeField(default=timezone.now)
    # Set when a bare-metal tenant leaves; cleared only by a finished wipe, so no path returns the host unwiped.
    sanitize_required = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["state"]),
            models.Index(fields=["nvlink_domain"]),
            models.Index(fields=["fabric"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(gpu_count__gte=1, gpu_count__lte=MAX_GPUS_PER_NODE),
                name="node_gpu_count_1_to_8",
            ),
            models.CheckConstraint(
                condition=models.Q(cc_mode=False) | models.Q(cc_capable=True),
                name="node_cc_mode_needs_cc_capable",
            ),
        ]

    def __str__(self) -> str:
        return self.hostname

    @property
    def host(self) -> Host | None:
        """The host as the fleet document stated it; None: not stated."""
        if not self.cpu_cores:
            return None
        return Host(self.cpu_cores, self.memory_gib, self.reserved_cpu_cores, self.reserved_memory_gib)


class GpuMode(models.TextChoices):
    WHOLE = "whole"
    MIG = "mig"
    SHARED = "shared"


class Gpu(models.Model):
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField()
    uuid = models.CharField(max_length=64, unique=True)
    mode = models.CharField(max_length=8, choices=GpuMode.choices, default=GpuMode.WHOLE)
    # The simulated fleet only: the XID an operator injected, which its exporter reports as the GPU's last
    # (``POST /api/v1/ops/nodes/{id}/xid``); a real GPU's come from DCGM.
    simulated_xid = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["node_id", "index"]
        constraints = [models.UniqueConstraint(fields=["node", "index"], name="gpu_node_index_unique")]

    def __str__(self) -> str:
        return f"{self.node_id}/{self.index}"


# --- allocations --------------------------------------------------------------------------------------------------


class Allocation(TenantOwned):
    """Capacity a tenant holds: the shape it asked for, both isolation axes it was granted, and where it runs."""

    name = models.CharField(max_length=100)
    rung = models.CharField(max_length=16, choices=[(r.value, r.value) for r in Rung])
    performance = models.CharField(max_length=16, choices=[(p.value, p.value) for p in Performance])
    security = models.CharField(max_length=16, choices=[(s.value, s.value) for s in Security])
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, related_name="allocations")
    hall = models.ForeignKey(Hall, on_delete=models.PROTECT, related_name="allocations")
    side_node = models.ForeignKey(  # RungFacts' side pods: a launcher, a Ray head, a Slurm controller
        "Node",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="side_allocations",
        help_text="The node its pods without a GPU were placed on, together, beside its members.",
    )
    state = models.CharField(
        max_length=16, choices=[(s.value, s.value) for s in AllocationState], default=AllocationState.PLACED
    )
    spec = models.JSONField(help_text="The request as asked for; a job is placed again from it after a failure.")
    workload = models.JSONField(
        null=True,
        blank=True,
        help_text="What runs on it (provisioning.domain.workloads.Workload.to_json); null: nothing.",
    )
    quota_milli = models.PositiveIntegerField(help_text="What the allocation counts against the GPU quota.")
    # How it was bought (docs/capacity.md): on demand, spot (preemptible) or drawn on the tenant's reservation.
    capacity_class = models.CharField(
        max_length=16,
        choices=[(c.value, c.value) for c in CapacityClass],
        default=DEFAULT_CLASS.value,
        db_default=DEFAULT_CLASS.value,  # rows written by plain SQL (bulk loads, benchmarks) are on demand too
    )
    reservation = models.ForeignKey(
        "provisioning.Reservation", on_delete=models.PROTECT, null=True, blank=True, related_name="allocations"
    )
    # Preempted spot work: when its last notice was given (it gave its devices up then; each is in ``preemptions``).
    preempted_at = models.DateTimeField(null=True, blank=True)
    provisioner = models.CharField(max_length=32)
    dedicated = models.BooleanField(default=False, help_text="Placed for a tenant that demands dedicated hardware.")
    failure_reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    state_changed_at = models.DateTimeField(default=timezone.now)
    running_since = models.DateTimeField(null=True, blank=True)
    # A job asked to stop (its tenant's budget ran out) stops after its next checkpoint, so no work is lost.
    stop_at_checkpoint_since = models.DateTimeField(null=True, blank=True)
    # When reconciliation last asked the driver about it: reads show the state as last observed, and when.
    observed_at = models.DateTimeField(null=True, blank=True)
    # Serverless: the ready replicas metered now (usage is replica-seconds); when the endpoint last woke from zero
    # and how long that cold start took (wake to running); when it was last called (its idle clock on the
    # simulated fleet).
    replicas = models.PositiveSmallIntegerField(null=True, blank=True)
    woke_at = models.DateTimeField(null=True, blank=True)
    cold_start_ms = models.PositiveIntegerField(null=True, blank=True)
    last_called_at = models.DateTimeField(null=True, blank=True)
    # The last checkpoint the workload reported (a job's log line, learnt while its nodes were alive): a node
    # fault bills up to it and the gang resumes from it. docs/kubernetes.md, "Fault recovery".
    checkpoint_at = models.DateTimeField(null=True, blank=True)
    checkpoint_step = models.CharField(max_length=100, blank=True)
    # How often a provider fault restarted it, and the work those faults threw away (fault time less the
    # checkpoint resumed from, summed): goodput not billed. One ``AllocationFault`` row per fault.
    restarts = models.PositiveIntegerField(default=0)
    goodput_lost_ms = models.BigIntegerField(default=0)
    # When its tenant was told it will stop for idle GPUs (``idle_stop_after``); cleared when the GPUs work again.
    idle_notice_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["tenant", "state"]), models.Index(fields=["state", "state_changed_at"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.state})"

    @property
    def workload_spec(self) -> WorkloadSpec:
        """The workload typed, with the facts of its rung and framework
        (``provisioning.domain.workloads.WorkloadSpec``):
        what every module asks of an allocation's workload, instead of reading the stored form."""
        return workload_spec(self.rung, self.workload)

    @property
    def host(self) -> tuple[int, int] | None:
        """The CPU (milli-cores) and memory (MiB) it holds of its nodes' hosts beside its GPUs, all members
        together (a member: ``gpus`` of its active devices, or one slice or share; none active: as asked): what its
        spec took when placed, else (placed before hosts were placed) the rung's bundle its pods request. None on
        bare metal: it holds whole hosts. Reads its devices (prefetch them for a list)."""
        return self._held(member_host, self.gpu_model.name)

    @property
    def host_beyond(self) -> tuple[int, int] | None:
        """What of ``host`` is beyond its rung's bundle, all members together: billed per vCPU-hour and GiB-hour
        beside the GPUs' price (``node_host.host_extra``, as the meters count it); (0, 0) within the bundle."""
        return self._held(host_extra, bundle_model(self.spec["gpu_models"]))

    def _held(
        self, per_member: Callable[[Rung, str, int, int, int], tuple[int, int]], model: str
    ) -> tuple[int, int] | None:
        if RUNGS[Rung(self.rung)].whole_nodes:
            return None
        spec = self.spec
        gpus = int(spec.get("gpus") or 0)
        active = sum(1 for d in self.devices.all() if d.active)
        members = members_on(active, gpus) if active else int(spec.get("gang_size") or 1)
        stated = int(spec.get("cpu_milli") or 0), int(spec.get("memory_mib") or 0)
        cpu, memory = per_member(Rung(self.rung), model, gpus, *stated)
        return cpu * members, memory * members


class AllocationFault(TenantOwned):
    """A provider fault under a running allocation (a node failed or was found failing): when, why, the checkpoint
    the work went back to, the work lost (not billed), and when the allocation ran again. Kept per tenant so the
    goodput lost to provider faults is summed by a query (finance's exports)."""

    allocation = models.ForeignKey(Allocation, on_delete=models.CASCADE, related_name="faults")
    hostname = models.CharField(max_length=253)
    cause = models.CharField(max_length=300, blank=True, help_text="The node condition, or the operator's reason.")
    fault_at = models.DateTimeField(help_text="When the node went bad (the condition's transition, else detection).")
    detected_at = models.DateTimeField()
    checkpoint_at = models.DateTimeField(null=True, blank=True, help_text="What the work went back to (billed to).")
    lost_ms = models.BigIntegerField(default=0, help_text="fault_at less checkpoint_at: work done again, not billed.")
    outcome = models.CharField(max_length=16, help_text="restarted (placed again) or failed (no room, or not a job).")
    running_at = models.DateTimeField(null=True, blank=True, help_text="When the restarted gang ran again.")

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["tenant", "fault_at"])]

    def __str__(self) -> str:
        return f"{self.allocation_id}: {self.hostname} at {self.fault_at:%Y-%m-%dT%H:%M:%S}"


class AllocationDevice(models.Model):
    """A device an allocation holds or held: a whole GPU, a MIG instance or a soft share of one GPU."""

    allocation = models.ForeignKey(Allocation, on_delete=models.CASCADE, related_name="devices")
    # Where it ran is kept as text too: a GPU retired from the fleet later must not erase the record.
    gpu = models.ForeignKey(Gpu, on_delete=models.SET_NULL, null=True, related_name="allocation_devices")
    hostname = models.CharField(max_length=253)
    gpu_index = models.PositiveSmallIntegerField()
    gpu_uuid = models.CharField(max_length=64)
    mig_profile = models.CharField(max_length=32, blank=True)
    mig_start = models.PositiveSmallIntegerField(null=True, blank=True)
    share_milli = models.PositiveSmallIntegerField(null=True, blank=True)
    active = models.BooleanField(default=True)
    # While the allocation held it: its GPU metrics are read for this interval only, so a device that went on to
    # another tenant never shows that tenant's work (docs/telemetry.md).
    held_since = models.DateTimeField(default=timezone.now)
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["gpu", "active"])]

    def __str__(self) -> str:
        return f"{self.allocation_id}@{self.gpu_id}"


class GpuClaim(models.Model):
    """The database's own guard against double booking: a row per memory slice (0-7) of a GPU in use.

    A whole GPU claims all eight slices, a MIG instance its run, a tenant's soft-shared GPU all eight on behalf of
    the tenant. ``(gpu, slice)`` is unique, so no bug above can hand one slice to two holders. Rows exist only
    while the slice is held.
    """

    gpu = models.ForeignKey(Gpu, on_delete=models.PROTECT, related_name="claims")
    slice = models.PositiveSmallIntegerField()
    allocation = models.ForeignKey(Allocation, on_delete=models.CASCADE, null=True, blank=True, related_name="claims")
    soft_tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["gpu", "slice"], name="gpu_claim_one_holder_per_slice"),
            models.CheckConstraint(condition=models.Q(slice__lte=7), name="gpu_claim_slice_0_to_7"),
            models.CheckConstraint(
                condition=models.Q(allocation__isnull=False, soft_tenant__isnull=True)
                | models.Q(allocation__isnull=True, soft_tenant__isnull=False),
                name="gpu_claim_one_kind_of_holder",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.gpu_id}:{self.slice}"


class NodeHold(models.Model):
    """A whole host held by one tenant: bare metal (with its allocation) or a confidential-VM host."""

    node = models.OneToOneField(Node, on_delete=models.PROTECT, related_name="hold")
    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.PROTECT, related_name="+")
    allocation = models.ForeignKey(Allocation, on_delete=models.CASCADE, null=True, blank=True, related_name="+")

    def __str__(self) -> str:
        return f"{self.node_id} held by {self.tenant_id}"


class PlacementJournal(models.Model):
    """Every change the placement engine must see, in order. Each process keeps the fleet in memory and applies
    the entries it has not seen, instead of rebuilding its index for every decision."""

    seq = models.BigAutoField(primary_key=True)
    op = models.CharField(max_length=16)  # placed | released | node | fleet
    allocation = models.ForeignKey(Allocation, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    node = models.ForeignKey(Node, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # For "placed": the placement itself, so other processes apply it without reading the allocation back.
    placement = models.JSONField(null=True, blank=True)
    at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"#{self.seq} {self.op}"


class PlacementLock(models.Model):
    """One row, locked by every placement decision so decisions are serialized across processes.

    ``pruned_through``: journal entries up to this seq were deleted; a process that has not seen them rebuilds.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    pruned_through = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return "placement lock"


class DefragmentRun(models.Model):
    """An operator's order to carry out a defragmentation plan, one move at a time (provisioning/services/
    defragment.py). ``steps`` holds each planned move and how it went: pending, moving, done, skipped (no longer
    sound when its turn came, with why) or failed (the moved allocation did not come back up)."""

    class State(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    state = models.CharField(max_length=16, choices=State.choices, default=State.RUNNING)
    steps = models.JSONField(default=list)
    ordered_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # One run at a time: two would plan over each other's moves.
            models.UniqueConstraint(fields=["state"], condition=models.Q(state="running"), name="one_running_defrag")
        ]

    def __str__(self) -> str:
        return f"defragment #{self.pk} ({self.state})"


class CapacitySample(models.Model):
    """The fleet's capacity of one GPU model in one hall at a moment, and how much of it was allocated, idle or
    stranded (the placement engine's figures, ``provisioning.domain.placement.fragmentation``). A sample stands for the
    ``seconds`` before it, so summing ``gpus x seconds`` over a month gives the GPU-hours the hall had; finance
    prices them with the cost basis to find the cost of idle and stranded capacity (docs/finance.md)."""

    at = models.DateTimeField()
    seconds = models.PositiveIntegerField(help_text="How long this sample stands for (since the previous one).")
    hall = models.ForeignKey(Hall, on_delete=models.PROTECT, related_name="+")
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, related_name="+")
    gpus = models.PositiveIntegerField()
    idle_milli = models.PositiveIntegerField(help_text="Whole-GPU equivalents not allocated and usable, x 1000.")
    stranded_milli = models.PositiveIntegerField(
        help_text="Free MIG compute on partly used GPUs that no profile can use, in GPU equivalents x 1000."
    )

    class Meta:
        ordering = ["at", "hall", "gpu_model"]
        constraints = [models.UniqueConstraint(fields=["at", "hall", "gpu_model"], name="capacity_sample_unique")]
        indexes = [models.Index(fields=["hall", "gpu_model", "at"])]

    def __str__(self) -> str:
        return f"{self.hall_id}/{self.gpu_model_id} at {self.at:%Y-%m-%dT%H:%M}"


# Attestations, volumes and cold starts live in their own modules; the app's models are all reached as
# ``provisioning.models.X``.
from provisioning.models.attestation import Attestation, AttestationChallenge, AttestationOutcome  # noqa: E402
from provisioning.models.capacity import AllocationPreemption, Reservation  # noqa: E402
from provisioning.models.cold_starts import EndpointColdStart, NodeImage  # noqa: E402
from provisioning.models.volumes import Volume, VolumeAttachment, VolumeSnapshot  # noqa: E402

__all__ = [
    "NODE_TRANSITIONS",
    "Allocation",
    "AllocationDevice",
    "AllocationFault",
    "AllocationPreemption",
    "Attestation",
    "AttestationChallenge",
    "AttestationOutcome",
    "CapacitySample",
    "Cluster",
    "ClusterHealth",
    "DefragmentRun",
    "EndpointColdStart",
    "Gpu",
    "GpuClaim",
    "GpuMode",
    "GpuModel",
    "Hall",
    "Node",
    "NodeHold",
    "NodeImage",
    "NodeState",
    "NodeTransition",
    "PlacementJournal",
    "PlacementLock",
    "Region",
    "Reservation",
    "VersionTarget",
    "Volume",
    "VolumeAttachment",
    "VolumeSnapshot",
    "jurisdiction_validator",
]
