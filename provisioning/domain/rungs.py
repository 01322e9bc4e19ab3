"""The ladder in one table: every fact about a rung, and about each framework of the job rung, is written here and
nowhere else.

A rung's row says what it offers (its performance and security isolation, docs/design.md §2 and §3), how it is
billed, what its workload is (an operating system it boots, or a container image), what the workload may name
(SSH keys, ports), whether it spans nodes, restarts from a checkpoint, is served as an endpoint or leaves its hosts
dirty, where its objects live, and the names finance's FOCUS export and the portal give it. A framework's row says
what a job launched by that framework does differently. ``rung_facts(rung, framework)`` is the one lookup: the
rung's row, with the framework's row laid over it on the job rung.

Adding a rung or a framework is a row here and its renderer (``provisioning.drivers.kubernetes.render``); every other
module reads the table. ``tests/test_one_place.py`` keeps rung names out of the application code elsewhere. Pure
Python: no Django.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from provisioning.domain.volumes import Attach, VolumeKind


class Rung(StrEnum):
    BARE_METAL = "bare_metal"
    VM = "vm"
    CONFIDENTIAL_VM = "confidential_vm"
    CONTAINER = "container"
    JOB = "job"
    SERVERLESS = "serverless"


class Framework(StrEnum):
    """How a job's gang is launched (docs/jobs.md): torchrun in an Indexed Job, an MPIJob's launcher, a RayJob's
    entrypoint on its Ray cluster, or a Slurm cluster of the tenant's own that takes sbatch through its login node."""

    TORCHRUN = "torchrun"
    MPI = "mpi"
    RAY = "ray"
    SLURM = "slurm"


DEFAULT_FRAMEWORK = Framework.TORCHRUN
FRAMEWORK_RUNG = Rung.JOB  # the one rung whose allocations are launched by a framework


class Performance(StrEnum):
    WHOLE_GPU = "whole_gpu"
    MIG = "mig"
    MPS = "mps"
    TIME_SLICING = "time_slicing"
    FRACTIONAL = "fractional"


class Security(StrEnum):
    PROCESS = "process"
    CONTAINER = "container"
    VM = "vm"
    CONFIDENTIAL_VM = "confidential_vm"
    BARE_METAL = "bare_metal"


SOFT_SHARING = frozenset({Performance.MPS, Performance.TIME_SLICING, Performance.FRACTIONAL})


class BillingUnit(StrEnum):
    NODE_SECONDS = "node-seconds"
    GPU_SECONDS = "gpu-seconds"


@dataclass(frozen=True)
class FocusNames:
    """How finance's FOCUS export names the rung: one service per rung (a ServiceName has one ServiceSubcategory)
    and the detail export's ResourceType."""

    service: str
    subcategory: str
    resource_type: str


@dataclass(frozen=True)
class PortalWords:
    """What the portal says of the rung before anything is bought."""

    title: str
    what: str
    unit: str  # the billing unit, in words
    item: str  # one unit of the capacity it offers: "node" or "GPU"


@dataclass(frozen=True)
class HostBundle:
    """What the rung sells of a node's host with each GPU unless the request says otherwise
    (``node_host.bundled``): cores and GiB per whole GPU (``gib_per_gpu`` None: twice the GPU's memory, which a VM
    stages data through), and for a MIG slice or a soft share. The GPU's price includes it; a request may ask from
    one vCPU and one GiB up to ``most_times`` the bundle (``node_host.host_asked``), and what it asks beyond the
    bundle is billed per vCPU-hour and GiB-hour (``node_host.host_extra``, docs/billing.md "CPU and memory")."""

    cores_per_gpu: int = 8
    gib_per_gpu: int | None = 64
    slice_cores: int = 2
    slice_gib: int = 16
    most_times: int = 4


@dataclass(frozen=True)
class SidePod:
    """A pod of a framework's job that holds no GPU (an MPI launcher, a Ray head, a Slurm controller): what it
    requests of a host. Placement takes the side pods of a job together on one node beside its members
    (``Placement.side``), and the renderer pins them there with exactly these requests."""

    role: str  # its ``ladder.io/role`` label, and the log's source
    cpu_milli: int
    memory_mib: int


@dataclass(frozen=True)
class FrameworkFacts:
    """What a job launched by this framework does differently. The fields that a rung's row has too (SSH keys,
    ports, image, dirty hosts, namespace) replace the job rung's; the others are the launcher's own."""

    framework: Framework
    takes_ssh_keys: bool  # its login node is reached over SSH
    takes_ports: bool
    needs_image: bool  # False: its nodes run the operator's default image unless the workload names one
    leaves_host_dirty: bool
    namespace_suffix: str
    whole_hosts: bool = False  # each member takes every GPU of its node (it runs with host capabilities)
    # Workload fields the launcher cannot run with, and fields it cannot run without: (field, why), in the order
    # they are checked. The field is the ``Workload`` attribute (and the refusal's ``field``).
    refuses: tuple[tuple[str, str], ...] = ()
    needs: tuple[tuple[str, str], ...] = ()
    side_pods: tuple[SidePod, ...] = ()  # its pods without a GPU, placed together beside the members

    @property
    def side_host(self) -> tuple[int, int]:
        """The CPU (milli-cores) and memory (MiB) its side pods take together: what placement takes beside."""
        return sum(p.cpu_milli for p in self.side_pods), sum(p.memory_mib for p in self.side_pods)

    def side_pod(self, role: str) -> SidePod:
        return next(p for p in self.side_pods if p.role == role)


@dataclass(frozen=True)
class RungFacts:
    """A rung's row of the table; from ``rung_facts`` on the job rung, with its framework's row laid over it."""

    rung: Rung
    performance: frozenset[Performance]  # the performance isolation it can give
    security: Security  # the security isolation it gives
    unit: BillingUnit
    boots_os: bool  # boots an operating system from the catalog (os_image, cloud_init); else runs an image
    takes_ssh_keys: bool  # reached over SSH through the hall's gateway when the workload names keys
    takes_ports: bool  # its workload may expose ports (else it is reached over SSH only)
    needs_image: bool  # its workload names a container image
    spans_nodes: bool  # one allocation may hold several nodes (they meet on the RDMA fabric)
    restarts_from_checkpoint: bool  # placed again after a fault or a move, resuming from its last checkpoint
    endpoint: bool  # served as an endpoint: replicas behind the gateway, scaled on demand, re-created on a move
    leaves_host_dirty: bool  # the tenant had host-level access: its nodes are wiped before the next tenant
    idle_stop: bool  # its workload may ask to be stopped after minutes of idle GPUs (``idle_stop_after``)
    whole_nodes: bool  # sold by the node: every GPU of each host it takes
    attested: bool  # runs only on confidential-computing hosts, and runs only once its guest's attestation passed
    serial_console: bool  # the tenant reaches its serial console through Ladder
    namespace_suffix: str  # its objects live in the tenant's namespace, ``ladder-<slug>`` + this
    focus: FocusNames
    words: PortalWords
    # How its workload takes each kind of volume (a kind missing: refused, ``volumes_refused`` says why), and
    # whether every mount is read-only (serverless replicas: a model cache many replicas read at once).
    volumes: Mapping[VolumeKind, Attach]
    volumes_read_only: bool = False
    volumes_refused: str = ""
    launcher: FrameworkFacts | None = None  # on the job rung, the framework these facts are for
    host: HostBundle = HostBundle()  # CPU and memory sold with its GPUs (bare metal: the whole host, unused)

    @property
    def runs_image(self) -> bool:
        """Its work is a container image (command, args, volumes); the other rungs boot an operating system."""
        return not self.boots_os

    @property
    def soft_sharing(self) -> bool:
        """It sells soft shares of a GPU (MPS, time-slicing, fractional), within the tenant only."""
        return bool(self.performance & SOFT_SHARING)

    @property
    def movable(self) -> bool:
        """A running allocation survives a move: a job restarts from its checkpoint, an endpoint's replicas are
        re-created."""
        return self.restarts_from_checkpoint or self.endpoint


_WHOLE = frozenset({Performance.WHOLE_GPU})

# docs/design.md §2: the ladder. A request outside its rung's row is refused (rule 5).
RUNGS: Mapping[Rung, RungFacts] = {
    row.rung: row
    for row in (
        RungFacts(
            rung=Rung.BARE_METAL,
            performance=_WHOLE,
            security=Security.BARE_METAL,
            unit=BillingUnit.NODE_SECONDS,
            boots_os=True,
            takes_ssh_keys=True,
            takes_ports=False,
            needs_image=False,
            spans_nodes=True,
            restarts_from_checkpoint=False,
            endpoint=False,
            leaves_host_dirty=True,
            idle_stop=False,
            whole_nodes=True,
            attested=False,
            serial_console=False,
            namespace_suffix="",
            focus=FocusNames("Ladder Bare Metal", "Other (Compute)", "Bare Metal Server"),
            words=PortalWords(
                title="Bare metal",
                what="Whole nodes with all their GPUs, your OS image, reached over SSH.",
                unit="node-hours",
                item="node",
            ),
            # The host runs the tenant's own OS outside the cluster: no CSI driver attaches storage to it, and a
            # mount of its own would need storage credentials that reach beyond the tenant's volume.
            volumes={},
            volumes_refused="A bare-metal host mounts no volume: it runs your own operating system outside the "
            "cluster, where storage could only be reached with credentials that reach other tenants' data. Copy "
            "data over the network instead (a dataset, or from a container or VM that mounts the volume).",
        ),
        RungFacts(
            rung=Rung.VM,
            performance=_WHOLE,
            security=Security.VM,
            unit=BillingUnit.GPU_SECONDS,
            boots_os=True,
            takes_ssh_keys=True,
            takes_ports=True,
            needs_image=False,
            spans_nodes=False,
            restarts_from_checkpoint=False,
            endpoint=False,
            leaves_host_dirty=False,
            idle_stop=True,
            whole_nodes=False,
            attested=False,
            serial_console=True,
            namespace_suffix="",
            focus=FocusNames("Ladder Virtual Machines", "Virtual Machines", "Virtual Machine"),
            words=PortalWords(
                title="Virtual machine",
                what="1 to 8 whole GPUs passed through to a VM you boot with cloud-init.",
                unit="GPU-hours",
                item="GPU",
            ),
            host=HostBundle(gib_per_gpu=None),
            volumes={VolumeKind.BLOCK: Attach.DISK, VolumeKind.FILESYSTEM: Attach.NETWORK_MOUNT},
        ),
        RungFacts(
            rung=Rung.CONFIDENTIAL_VM,
            performance=_WHOLE,
            security=Security.CONFIDENTIAL_VM,
            unit=BillingUnit.GPU_SECONDS,
            boots_os=False,
            takes_ports=True,
            needs_image=True,
            takes_ssh_keys=False,
            spans_nodes=False,
            restarts_from_checkpoint=False,
            endpoint=False,
            leaves_host_dirty=False,
            idle_stop=True,
            whole_nodes=False,
            attested=True,
            serial_console=False,
            namespace_suffix="",
            focus=FocusNames(
                "Ladder Confidential Virtual Machines", "Virtual Machines", "Confidential Virtual Machine"
            ),
            words=PortalWords(
                title="Confidential VM",
                what="Whole GPUs in confidential-computing mode, attested before use.",
                unit="GPU-hours",
                item="GPU",
            ),
            host=HostBundle(gib_per_gpu=None),
            volumes={},
            volumes_refused="A confidential VM mounts no volume: the storage is served by the host, outside the "
            "guest's trust boundary. Fetch data inside the guest with a secret released after attestation.",
        ),
        RungFacts(
            rung=Rung.CONTAINER,
            performance=frozenset({Performance.WHOLE_GPU, Performance.MIG}),
            security=Security.CONTAINER,
            unit=BillingUnit.GPU_SECONDS,
            boots_os=False,
            takes_ports=True,
            needs_image=True,
            takes_ssh_keys=True,
            spans_nodes=False,
            restarts_from_checkpoint=False,
            endpoint=False,
            leaves_host_dirty=False,
            idle_stop=True,
            whole_nodes=False,
            attested=False,
            serial_console=False,
            namespace_suffix="",
            focus=FocusNames("Ladder Containers", "Containers", "Container"),
            words=PortalWords(
                title="Container",
                what="A whole GPU or a MIG slice running your image.",
                unit="GPU-hours (a slice weighs its share)",
                item="GPU",
            ),
            volumes={VolumeKind.FILESYSTEM: Attach.MOUNT},
            volumes_refused="A container mounts filesystem volumes; a block volume is a VM's disk.",
        ),
        RungFacts(
            rung=Rung.JOB,
            performance=_WHOLE,
            security=Security.CONTAINER,
            unit=BillingUnit.GPU_SECONDS,
            boots_os=False,
            takes_ports=True,
            needs_image=True,
            takes_ssh_keys=False,
            spans_nodes=True,
            restarts_from_checkpoint=True,
            endpoint=False,
            leaves_host_dirty=False,
            idle_stop=True,
            whole_nodes=False,
            attested=False,
            serial_console=False,
            namespace_suffix="",
            focus=FocusNames("Ladder Jobs", "Containers", "Job"),
            words=PortalWords(
                title="Job",
                what="A gang of members that start together, restarted from the last checkpoint after a fault.",
                unit="GPU-hours of goodput",
                item="GPU",
            ),
            volumes={VolumeKind.FILESYSTEM: Attach.MOUNT},
            volumes_refused="A job's members mount filesystem volumes (every member the same one); a block volume "
            "takes one attachment.",
        ),
        RungFacts(
            rung=Rung.SERVERLESS,
            performance=frozenset({Performance.WHOLE_GPU, Performance.MIG, *SOFT_SHARING}),
            security=Security.CONTAINER,
            unit=BillingUnit.GPU_SECONDS,
            boots_os=False,
            takes_ports=True,
            needs_image=True,
            takes_ssh_keys=False,
            spans_nodes=False,
            restarts_from_checkpoint=False,
            endpoint=True,
            leaves_host_dirty=False,
            idle_stop=False,
            whole_nodes=False,
            attested=False,
            serial_console=False,
            namespace_suffix="",
            focus=FocusNames("Ladder Serverless Endpoints", "Serverless Compute", "Serverless Endpoint"),
            words=PortalWords(
                title="Serverless",
                what="An endpoint called with your API key; replicas on whole GPUs, MIG slices or soft shares. Idle, "
                "it scales to zero: it keeps its address and settings, holds no GPU and costs nothing; the next "
                "request wakes it after a cold start.",
                unit="GPU-seconds of ready replicas only (nothing while idle at zero)",
                item="GPU",
            ),
            volumes={VolumeKind.FILESYSTEM: Attach.MOUNT},
            volumes_read_only=True,
            volumes_refused="Serverless replicas mount filesystem volumes, read-only (a model cache).",
        ),
    )
}

_SLURM_ARGV = "A Slurm cluster runs what you submit with sbatch on its login node."

FRAMEWORKS: Mapping[Framework, FrameworkFacts] = {
    row.framework: row
    for row in (
        FrameworkFacts(
            framework=Framework.TORCHRUN,
            takes_ssh_keys=False,
            takes_ports=True,
            needs_image=True,
            leaves_host_dirty=False,
            namespace_suffix="",
        ),
        FrameworkFacts(
            framework=Framework.MPI,
            takes_ssh_keys=False,
            takes_ports=True,
            needs_image=True,
            leaves_host_dirty=False,
            namespace_suffix="",
            needs=(("command", "An mpi job needs a command: the program mpirun starts on every rank."),),
            side_pods=(SidePod("launcher", 1000, 2048),),
        ),
        FrameworkFacts(
            framework=Framework.RAY,
            takes_ssh_keys=False,
            takes_ports=True,
            needs_image=True,
            leaves_host_dirty=False,
            namespace_suffix="",
            needs=(("command", "An ray job needs a command: the program the Ray job's entrypoint runs."),),
            side_pods=(SidePod("head", 2000, 8192), SidePod("submitter", 500, 1024)),
        ),
        # slurmd runs as root with host capabilities (docs/jobs.md, "Pod Security"): whole hosts, wiped after, in
        # the tenant's one namespace whose Pod Security admits it; the tenant submits work on the login node.
        FrameworkFacts(
            framework=Framework.SLURM,
            takes_ssh_keys=True,
            takes_ports=False,
            needs_image=False,
            leaves_host_dirty=True,
            namespace_suffix="-slurm",
            whole_hosts=True,
            refuses=(
                ("command", _SLURM_ARGV),
                ("args", _SLURM_ARGV),
                ("checkpoint", "Slurm requeues its own jobs; write checkpoints to a volume."),
                ("ports", "A Slurm cluster is reached through its login node over SSH."),
            ),
            needs=(("ssh_keys", "A Slurm cluster is used through its login node: name your SSH keys."),),
            side_pods=(SidePod("slurmctld", 1000, 2048), SidePod("login", 1000, 2048)),
        ),
    )
}

# Every framework's pods without a GPU, by their ``ladder.io/role``: each is its own source in the job's logs.
SIDE_ROLES = frozenset(pod.role for facts in FRAMEWORKS.values() for pod in facts.side_pods)

_LAUNCHED: Mapping[Framework, RungFacts] = {
    f.framework: replace(
        RUNGS[FRAMEWORK_RUNG],
        launcher=f,
        takes_ssh_keys=f.takes_ssh_keys,
        takes_ports=f.takes_ports,
        needs_image=f.needs_image,
        leaves_host_dirty=f.leaves_host_dirty,
        namespace_suffix=f.namespace_suffix,
    )
    for f in FRAMEWORKS.values()
}


def rungs_where(fact: Callable[[RungFacts], bool]) -> tuple[Rung, ...]:
    """The rungs whose row has ``fact``, e.g. ``rungs_where(lambda f: f.endpoint)``: what a query filters on."""
    return tuple(rung for rung, row in RUNGS.items() if fact(row))


# The rungs whose running work survives a move (what the defragmenter may move), by name: the API's schema names
# this set of choices.
MOVABLE_RUNGS: tuple[str, ...] = tuple(r.value for r in rungs_where(lambda f: f.movable))


def rung_facts(rung: str, framework: str | None = None) -> RungFacts:
    """The facts of ``rung``; on the job rung, of a job launched by ``framework`` (None: the default one). Other
    rungs have no framework and ignore it (a stored workload names the default on every rung). An unknown rung or
    job framework raises ``ValueError``."""
    row = RUNGS[Rung(rung)]
    if row.rung is not FRAMEWORK_RUNG:
        return row
    return _LAUNCHED[Framework(framework or DEFAULT_FRAMEWORK)]
