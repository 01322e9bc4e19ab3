"""What a tenant runs on its allocation, typed, without Django: the workload (an image and command, or an OS image
and cloud-init; env, secrets, ports, volumes, a checkpoint, SSH keys, the job rung's framework, a serverless
endpoint's autoscaling), its stored form, and ``WorkloadSpec``, the one place modules ask an allocation's workload
what it is (its framework, SSH, dirty hosts, namespace).

A workload is optional on every rung. Its rules per rung are ``provisioning.domain.workload_rules``; what it names
outside
itself (secrets, SSH keys, datasets) is resolved by the services into ``Materials``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from typing import Any

from provisioning.domain.os_images import OsImage
from provisioning.domain.rungs import DEFAULT_FRAMEWORK, Framework, Rung, RungFacts, rung_facts
from provisioning.domain.volumes import Attach, VolumeKind

SECRET_FILES = "/var/run/secrets/ladder"  # noqa: S105 - a directory, not a password; a secret "as": "file" is the file <SECRET_FILES>/<NAME>
CHECKPOINTS = "/checkpoints"  # a job's checkpoint volume, unless ``checkpoint.path`` moves it
STOCK_IMAGE = "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu24.04"  # what runs when a workload names no image
MODEL_DIR_ENV = "LADDER_MODEL_DIR"  # where a serverless replica finds its model cache volume
SERVE_PORT = 8000  # a serverless endpoint's port when the workload names none
SSH_PORT = 22


@dataclass(frozen=True)
class Port:
    port: int
    protocol: str = "http"  # http | tcp | udp
    expose: str = "none"  # none | tenant | public


@dataclass(frozen=True)
class SecretRef:
    name: str
    as_: str = "env"  # env (a variable of the same name) | file (SECRET_FILES/<name>)


@dataclass(frozen=True)
class Volume:
    """One entry of a workload's ``volumes``: exactly one of a persistent volume of the tenant (``volume``, its id;
    docs/volumes.md), a data asset mounted read-only (``dataset``) or an empty scratch volume gone with the
    allocation (``scratch_gb``)."""

    mount_path: str
    dataset: int | None = None  # a data asset of the tenant, mounted read-only
    scratch_gb: int | None = None  # an empty volume of this size, gone with the allocation
    volume: int | None = None  # a volume of the tenant, which outlives the allocation
    read_only: bool = False  # a volume mounted read-only (always, on a rung whose mounts are all read-only)


@dataclass(frozen=True)
class Checkpoint:
    path: str = CHECKPOINTS
    interval_s: int = 600


# A serverless endpoint's autoscaling (docs/serverless.md, "Autoscaling"): the defaults, and the signals it scales on.
DEFAULT_TARGET_IN_FLIGHT = 4  # requests waiting and in flight per replica
DEFAULT_SCALE_UP_WINDOW_S = 0  # the HPA's own defaults
DEFAULT_SCALE_DOWN_WINDOW_S = 300
DEFAULT_KV_CACHE_TARGET = Decimal("0.8")
QUEUE_DEPTH = "queue_depth"
KV_CACHE = "kv_cache"  # vLLM's vllm:kv_cache_usage_perc, with the queue depth alongside
SIGNALS = (QUEUE_DEPTH, KV_CACHE)


def serving_replicas(devices: int) -> int:
    """The most replicas an endpoint placed on ``devices`` devices serves with: all but one, kept for a rollout's
    surge replica (one device: one replica, rolled only from zero)."""
    return max(devices - 1, 1)


@dataclass(frozen=True)
class Autoscaling:
    """How a serverless endpoint scales. As asked, ``max_replicas``, ``idle_seconds`` and ``kv_cache_target`` may be
    None: they then take what the placed devices allow, the operator's ``LADDER_SERVERLESS_IDLE_SECONDS`` and 0.8
    (with the ``kv_cache`` signal); ``applied`` fills them in as they are applied."""

    min_replicas: int = 0  # 0: scales to zero once idle; 1 or more: never goes to zero
    max_replicas: int | None = None
    target_in_flight: int = DEFAULT_TARGET_IN_FLIGHT
    scale_up_window_s: int = DEFAULT_SCALE_UP_WINDOW_S
    scale_down_window_s: int = DEFAULT_SCALE_DOWN_WINDOW_S
    idle_seconds: int | None = None  # an empty queue this long sends it to zero (only with min_replicas 0)
    buffer_replicas: int = 0  # replicas kept warm beyond demand while the endpoint is active
    signal: str = QUEUE_DEPTH
    kv_cache_target: Decimal | None = None  # the KV cache's use per replica, a fraction (only with kv_cache)

    @property
    def scales_to_zero(self) -> bool:
        return self.min_replicas == 0

    @property
    def floor(self) -> int:
        """The fewest replicas while it runs (an HPA never goes below one)."""
        return max(1, self.min_replicas)

    def applied(self, *, devices: int, idle_seconds: int) -> Autoscaling:
        """Every value as applied to an endpoint placed on ``devices`` devices, with the operator's idle window:
        ``idle_seconds`` is None when it never goes to zero, ``kv_cache_target`` when it does not scale on it."""
        return replace(
            self,
            max_replicas=self.max_replicas if self.max_replicas is not None else serving_replicas(devices),
            idle_seconds=(self.idle_seconds if self.idle_seconds is not None else idle_seconds)
            if self.scales_to_zero
            else None,
            kv_cache_target=(self.kv_cache_target if self.kv_cache_target is not None else DEFAULT_KV_CACHE_TARGET)
            if self.signal == KV_CACHE
            else None,
        )

    def to_json(self) -> dict[str, Any]:
        """The stored form (and what reads show): the fraction a decimal string, as amounts are everywhere."""
        data = asdict(self)
        data["kv_cache_target"] = None if self.kv_cache_target is None else str(self.kv_cache_target.normalize())
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Autoscaling:
        target = data.get("kv_cache_target")
        return cls(**{**data, "kv_cache_target": None if target is None else Decimal(str(target))})

    def warm_replicas(self, depth: float) -> int:
        """The replicas kept warm while the endpoint is active with ``depth`` requests waiting and in flight (as
        applied): its demand (``depth`` over ``target_in_flight``) and ``buffer_replicas`` more, within its floor
        and ``max_replicas``."""
        ceiling = self.max_replicas if self.max_replicas is not None else self.floor
        return min(ceiling, max(self.floor, math.ceil(depth / self.target_in_flight) + self.buffer_replicas))


def autoscaling_applied(asked: Autoscaling | None, *, devices: int, idle_seconds: float) -> Autoscaling:
    """An endpoint's autoscaling as applied: what it asked (the defaults, when nothing), on ``devices`` devices, with
    the operator's idle window in seconds (``LADDER_SERVERLESS_IDLE_SECONDS``, rounded up to a whole second)."""
    return (asked or Autoscaling()).applied(devices=devices, idle_seconds=math.ceil(idle_seconds))


@dataclass(frozen=True)
class Model:
    """What a serverless replica loads before it is warm: ``size_gb`` of weights, read from ``volume`` (one of the
    workload's own volumes, mounted read-only by every replica: the model cache; Ladder sets ``MODEL_DIR_ENV`` to
    its mount path) or, without one, downloaded at start. docs/serverless.md, "Cold starts"."""

    size_gb: float
    volume: int | None = None  # a volume the workload's ``volumes`` names


@dataclass(frozen=True)
class Workload:
    image: str | None = None
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    secrets: tuple[SecretRef, ...] = ()
    ports: tuple[Port, ...] = ()
    volumes: tuple[Volume, ...] = ()
    checkpoint: Checkpoint | None = None
    os_image: str | None = None
    cloud_init: str | None = None
    ssh_keys: tuple[int, ...] = ()
    pull_secret: str | None = None  # a tenant secret holding "user:token" for the image's registry
    framework: str = DEFAULT_FRAMEWORK.value  # the job rung's launcher: a ``Framework``
    autoscaling: Autoscaling | None = None  # a serverless endpoint's (None: the defaults)
    model: Model | None = None  # serverless: the weights a replica loads (from its model cache, or downloaded)
    idle_stop_after: int | None = None  # minutes of idle GPUs after which it is stopped (docs/telemetry.md)

    @property
    def datasets(self) -> tuple[int, ...]:
        return tuple(v.dataset for v in self.volumes if v.dataset is not None)

    @property
    def volume_ids(self) -> tuple[int, ...]:
        """The tenant's volumes it mounts (``volumes`` entries that name one)."""
        return tuple(v.volume for v in self.volumes if v.volume is not None)

    @property
    def secret_names(self) -> tuple[str, ...]:
        names = [s.name for s in self.secrets] + ([self.pull_secret] if self.pull_secret else [])
        return tuple(dict.fromkeys(names))

    def public_ports(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.expose == "public")

    def to_json(self) -> dict[str, Any]:
        """The stored form (and what reads show): secrets by name only, never a value."""
        data = asdict(self)
        data["env"] = [{"name": k, "value": v} for k, v in self.env]
        data["autoscaling"] = self.autoscaling.to_json() if self.autoscaling is not None else None
        data["secrets"] = [{"name": s.name, "as": s.as_} for s in self.secrets]
        data["volumes"] = [
            {k: v for k, v in asdict(vol).items() if v is not None and (k != "read_only" or vol.volume is not None)}
            for vol in self.volumes
        ]
        if self.idle_stop_after is None:
            del data["idle_stop_after"]  # left out, as every workload before idle stop was stored
        if self.model is None:
            del data["model"]  # left out, as every workload before models were named was stored
        else:
            data["model"] = {k: v for k, v in asdict(self.model).items() if v is not None}
        return data

    def model_mount(self) -> str | None:
        """Where the model cache volume is mounted (``model.volume``'s entry in ``volumes``); None: no cache."""
        if self.model is None or self.model.volume is None:
            return None
        return next((v.mount_path for v in self.volumes if v.volume == self.model.volume), None)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Workload:
        checkpoint = data.get("checkpoint")
        autoscaling = data.get("autoscaling")
        model = data.get("model")
        return cls(
            image=data.get("image"),
            command=tuple(data.get("command") or ()),
            args=tuple(data.get("args") or ()),
            env=tuple((e["name"], e["value"]) for e in data.get("env") or ()),
            secrets=tuple(SecretRef(s["name"], s.get("as", "env")) for s in data.get("secrets") or ()),
            ports=tuple(Port(**p) for p in data.get("ports") or ()),
            volumes=tuple(Volume(**v) for v in data.get("volumes") or ()),
            checkpoint=Checkpoint(**checkpoint) if checkpoint else None,
            os_image=data.get("os_image"),
            cloud_init=data.get("cloud_init"),
            ssh_keys=tuple(data.get("ssh_keys") or ()),
            pull_secret=data.get("pull_secret"),
            framework=data.get("framework") or DEFAULT_FRAMEWORK.value,
            autoscaling=Autoscaling.from_json(autoscaling) if autoscaling else None,
            model=Model(**model) if model else None,
            idle_stop_after=data.get("idle_stop_after"),
        )


@dataclass(frozen=True)
class WorkloadSpec:
    """An allocation's workload, typed: its rung, what it runs (None: nothing named, the stock image) and the facts
    of the table of rungs for that rung and the workload's framework. Every question modules ask of an
    allocation's workload (its framework, SSH, dirty hosts, namespace) is answered here, never by reading the
    stored form. ``Allocation.workload_spec`` gives it for an allocation; ``workload_spec`` builds it from the
    stored form, ``WorkloadSpec.of`` from a parsed workload."""

    rung: Rung
    workload: Workload | None
    facts: RungFacts

    @classmethod
    def of(cls, rung: str, workload: Workload | None) -> WorkloadSpec:
        return cls(Rung(rung), workload, rung_facts(rung, workload.framework if workload is not None else None))

    @property
    def framework(self) -> Framework | None:
        """The job's launcher (the default one when nothing is named); None on the other rungs."""
        return self.facts.launcher.framework if self.facts.launcher is not None else None

    @property
    def is_slurm(self) -> bool:
        """A Slurm cluster of the tenant's own (docs/jobs.md)."""
        return self.framework is Framework.SLURM

    @property
    def takes_ssh(self) -> bool:
        """Whether the allocation is reached over SSH: a rung that offers it (or a Slurm cluster's login node) and
        a workload that names keys."""
        return self.facts.takes_ssh_keys and self.workload is not None and bool(self.workload.ssh_keys)

    @property
    def leaves_host_dirty(self) -> bool:
        """Whether the tenant had host-level access to the nodes it ran on, so they are wiped (GPUs reset, scratch
        emptied) before the next tenant: bare metal (the tenant's own OS) and a Slurm cluster (slurmd as root with
        host capabilities; docs/jobs.md, "Pod Security")."""
        return self.facts.leaves_host_dirty

    @property
    def boots_os(self) -> bool:
        return self.facts.boots_os

    @property
    def restarts_from_checkpoint(self) -> bool:
        return self.facts.restarts_from_checkpoint

    @property
    def namespace_suffix(self) -> str:
        """Its objects live in the tenant's namespace with this suffix (a Slurm cluster's: ``-slurm``)."""
        return self.facts.namespace_suffix

    @property
    def whole_hosts(self) -> bool:
        """Whether each member must take every GPU of its node (a launcher with host capabilities)."""
        return self.facts.launcher is not None and self.facts.launcher.whole_hosts

    @property
    def checkpoint(self) -> Checkpoint | None:
        return self.workload.checkpoint if self.workload is not None else None

    @property
    def volume_ids(self) -> tuple[int, ...]:
        """The tenant's volumes it mounts."""
        return self.workload.volume_ids if self.workload is not None else ()


def workload_spec(rung: str, stored: Mapping[str, Any] | None) -> WorkloadSpec:
    """The typed workload of an allocation from its stored form (``Workload.to_json``; None: no workload)."""
    return WorkloadSpec.of(rung, Workload.from_json(stored) if stored else None)


@dataclass(frozen=True)
class MountedVolume:
    """A volume a workload names, as a driver mounts it: its kind, how the rung takes it (the table of rungs),
    read-only or not, and the backend's name for it (a PersistentVolumeClaim's, or the simulated fleet's
    directory)."""

    volume_id: int
    kind: VolumeKind
    attach: Attach
    read_only: bool
    backend_name: str
    size_gb: int


@dataclass(frozen=True)
class Materials:
    """What a workload names outside itself, resolved by the services for rendering into the tenant's own
    namespace only. Values never reach a log or a repr."""

    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)  # secret name -> value
    pull: tuple[str, str, str] | None = field(default=None, repr=False)  # (registry, user, token) for the image
    ssh_keys: tuple[str, ...] = ()  # public key lines of the keys the workload names
    datasets: Mapping[int, str] = field(default_factory=dict, repr=False)  # asset id -> signed download URL
    os_image: OsImage | None = None  # the catalog entry of the workload's os_image (VM and bare metal)
    volumes: Mapping[int, MountedVolume] = field(default_factory=dict)  # volume id -> what the driver mounts
