"""What a tenant runs on its allocation, checked without Django: the workload spec, its rules per rung, OCI image
references, the operating-system catalog, and the access details each rung gives.

A workload is optional on every rung. ``workload_check`` refuses anything the rung cannot run, naming the field
(``WorkloadInvalid.field`` is a path such as ``ports.1.expose``); the API turns it into 422 ``validation_error``.
What the workload names outside itself (secrets, SSH keys, datasets) is resolved by the services, not here.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import yaml

from provisioning.placement.rungs import (
    DEFAULT_FRAMEWORK,
    FRAMEWORK_RUNG,
    FRAMEWORKS,
    RUNGS,
    Framework,
    Rung,
    RungFacts,
    rung_facts,
)

# Registries Ladder pulls from unless the operator says otherwise (LADDER_IMAGE_REGISTRIES).
DEFAULT_REGISTRIES = ("docker.io", "ghcr.io", "nvcr.io", "quay.io", "registry.k8s.io", "public.ecr.aws")
IMPLICIT_REGISTRY = "docker.io"  # "pytorch/pytorch" means docker.io/pytorch/pytorch, as the container runtimes read it

SECRET_FILES = "/var/run/secrets/ladder"  # noqa: S105 - a directory, not a password; a secret "as": "file" is the file <SECRET_FILES>/<NAME>
OS_SECRET_FILES = "/etc/ladder/secrets"  # noqa: S105 - a directory: where a VM's or host's secrets are files
CHECKPOINTS = "/checkpoints"  # a job's checkpoint volume, unless ``checkpoint.path`` moves it
RESERVED_ENV = "LADDER_"  # Ladder's own variables (checkpoint dir, restart code, GPU share) start with it
SERVE_PORT = 8000  # a serverless endpoint's port when the workload names none
SSH_PORT = 22
MAX_CLOUD_INIT_BYTES = 64 * 1024  # KubeVirt's NoCloud user data and Metal3's user-data Secret both fit this
MAX_ENV_BYTES = 64 * 1024
MAX_ARGV = 256
MAX_ARG_BYTES = 4096


@dataclass(frozen=True)
class OsImage:
    """An operating system an operator offers on the VM and bare-metal rungs."""

    name: str
    title: str
    user: str  # the login user cloud-init creates and SSH reaches
    vm_disk: str  # a KubeVirt containerDisk image
    metal_url: str  # a disk image Metal3's Ironic writes to the host
    metal_checksum: str  # "sha256:<hex>" of metal_url


# The default catalog; LADDER_OS_IMAGES (JSON: a list of these objects) replaces it.
OS_IMAGES: tuple[OsImage, ...] = (
    OsImage(
        name="ubuntu-24.04",
        title="Ubuntu 24.04 LTS",
        user="ubuntu",
        vm_disk="quay.io/containerdisks/ubuntu:24.04",
        metal_url="https://cloud-images.ubuntu.com/noble/current/noble-server-cloudimg-amd64.img",
        metal_checksum="https://cloud-images.ubuntu.com/noble/current/SHA256SUMS",
    ),
    OsImage(
        name="ubuntu-22.04",
        title="Ubuntu 22.04 LTS",
        user="ubuntu",
        vm_disk="quay.io/containerdisks/ubuntu:22.04",
        metal_url="https://cloud-images.ubuntu.com/jammy/current/jammy-server-cloudimg-amd64.img",
        metal_checksum="https://cloud-images.ubuntu.com/jammy/current/SHA256SUMS",
    ),
    OsImage(
        name="rocky-9",
        title="Rocky Linux 9",
        user="rocky",
        vm_disk="quay.io/containerdisks/rocky:9",
        metal_url="https://dl.rockylinux.org/pub/rocky/9/images/x86_64/Rocky-9-GenericCloud-Base.latest.x86_64.qcow2",
        metal_checksum="https://dl.rockylinux.org/pub/rocky/9/images/x86_64/CHECKSUM",
    ),
)
DEFAULT_OS_IMAGE = "ubuntu-24.04"


def os_catalog(configured: Iterable[Mapping[str, str]] | None = None) -> dict[str, OsImage]:
    """The catalog by name: the operator's (each entry the fields of ``OsImage``) or the default."""
    entries = [OsImage(**dict(e)) for e in configured] if configured else list(OS_IMAGES)
    return {e.name: e for e in entries}


@dataclass(frozen=True)
class Materials:
    """What a workload names outside itself, resolved by the services for rendering into the tenant's own
    namespace only. Values never reach a log or a repr."""

    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)  # secret name -> value
    pull: tuple[str, str, str] | None = field(default=None, repr=False)  # (registry, user, token) for the image
    ssh_keys: tuple[str, ...] = ()  # public key lines of the keys the workload names
    datasets: Mapping[int, str] = field(default_factory=dict, repr=False)  # asset id -> signed download URL
    os_image: OsImage | None = None  # the catalog entry of the workload's os_image (VM and bare metal)


class WorkloadInvalid(ValueError):
    """A workload the rung cannot run; ``field`` names where (``image``, ``ports.0.expose``, ...)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


# --- image references -------------------------------------------------------------------------------------------

# The grammar of github.com/distribution/reference, in short: [host[:port]/]path[:tag][@digest].
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_PATH_RE = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
_HOST_RE = re.compile(r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9-]+)*(?::[0-9]{1,5})?$")
_TAG_RE = re.compile(r"^[\w][\w.-]{0,127}$")
_DIGEST_RE = re.compile(r"^sha256:[a-f0-9]{64}$")


@dataclass(frozen=True)
class ImageRef:
    registry: str
    repository: str
    tag: str | None
    digest: str | None

    def __str__(self) -> str:
        ref = f"{self.registry}/{self.repository}"
        if self.tag:
            ref += f":{self.tag}"
        if self.digest:
            ref += f"@{self.digest}"
        return ref


def image_parse(text: str) -> ImageRef:
    """An OCI image reference; a reference without a registry host is Docker Hub's (``library/`` for one name)."""
    if not text or len(text) > 512 or text != text.strip():
        raise WorkloadInvalid("image", "An image is an OCI reference such as nvcr.io/nvidia/pytorch:25.01-py3.")
    rest, _, digest_text = text.partition("@")
    digest = digest_text if "@" in text else None
    if digest is not None and not _DIGEST_RE.match(digest):
        raise WorkloadInvalid("image", f"{digest!r} is not a sha256 digest (sha256: and 64 hex digits).")
    host, path = IMPLICIT_REGISTRY, rest
    first, _, remainder = rest.partition("/")
    if remainder and ("." in first or ":" in first or first == "localhost"):
        host, path = first, remainder
    tag = None
    if ":" in path.rsplit("/", 1)[-1]:
        path, tag = path.rsplit(":", 1)
        if not _TAG_RE.match(tag):
            raise WorkloadInvalid("image", f"{tag!r} is not a valid tag.")
    if not _HOST_RE.match(host) or not _PATH_RE.match(path):
        raise WorkloadInvalid(
            "image", f"{text!r} is not an OCI image reference (lower-case path, e.g. ghcr.io/org/app:1.0)."
        )
    if host == IMPLICIT_REGISTRY and "/" not in path:
        path = f"library/{path}"
    return ImageRef(registry=host.lower(), repository=path, tag=tag if tag or digest else "latest", digest=digest)


# --- the spec ---------------------------------------------------------------------------------------------------


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
    mount_path: str
    dataset: int | None = None  # a data asset of the tenant, mounted read-only
    scratch_gb: int | None = None  # an empty volume of this size, gone with the allocation


@dataclass(frozen=True)
class Checkpoint:
    path: str = CHECKPOINTS
    interval_s: int = 600


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

    @property
    def datasets(self) -> tuple[int, ...]:
        return tuple(v.dataset for v in self.volumes if v.dataset is not None)

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
        data["secrets"] = [{"name": s.name, "as": s.as_} for s in self.secrets]
        data["volumes"] = [{k: v for k, v in asdict(vol).items() if v is not None} for vol in self.volumes]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Workload:
        checkpoint = data.get("checkpoint")
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


def workload_spec(rung: str, stored: Mapping[str, Any] | None) -> WorkloadSpec:
    """The typed workload of an allocation from its stored form (``Workload.to_json``; None: no workload)."""
    return WorkloadSpec.of(rung, Workload.from_json(stored) if stored else None)


# --- the rules --------------------------------------------------------------------------------------------------

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def _path_check(where: str, path: str) -> str:
    normal = posixpath.normpath(path)
    if not path.startswith("/") or normal != path.rstrip("/") or len(path) > 256 or "\x00" in path:
        raise WorkloadInvalid(where, f"{path!r} is not an absolute, normalised path (e.g. /data/imagenet).")
    if normal == "/" or normal.startswith(("/proc", "/sys", "/dev", "/etc", SECRET_FILES)):
        raise WorkloadInvalid(where, f"{path} is reserved; mount under /data, /workspace or another path of yours.")
    return normal


def _only_on(offers: Callable[[RungFacts], bool], facts: RungFacts, name: str, what: str) -> None:
    """Refuse ``name`` unless the allocation's rung (and framework) ``offers`` it, naming the rungs that do."""
    if not offers(facts):
        offered = ", ".join(r for r, row in RUNGS.items() if offers(row))
        raise WorkloadInvalid(name, f"The {facts.rung} rung does not take {what}; it is offered on {offered}.")


def _framework_check(w: Workload, rung: str) -> None:
    """A framework other than the default is the job rung's, and each takes what its launcher can run."""
    if w.framework not in FRAMEWORKS:
        raise WorkloadInvalid("framework", f"A framework is one of {', '.join(FRAMEWORKS)}.")
    if w.framework == DEFAULT_FRAMEWORK:
        return
    if rung != FRAMEWORK_RUNG:
        raise WorkloadInvalid(
            "framework", f"The {w.framework} framework runs on the {FRAMEWORK_RUNG} rung, not {rung}."
        )
    launcher = FRAMEWORKS[Framework(w.framework)]
    for field_name, why in launcher.refuses:
        if getattr(w, field_name):
            raise WorkloadInvalid(field_name, why)
    for field_name, why in launcher.needs:
        if not getattr(w, field_name):
            raise WorkloadInvalid(field_name, why)


def workload_check(w: Workload, *, rung: str, registries: Iterable[str], os_images: Mapping[str, OsImage]) -> None:
    """Refuse what the rung cannot run, naming the first field at fault."""
    _framework_check(w, rung)
    facts = rung_facts(rung, w.framework)
    if w.image is not None:
        _only_on(lambda f: f.runs_image, facts, "image", "a container image (it boots os_image)")
        ref = image_parse(w.image)
        allowed = sorted(set(registries))
        if ref.registry not in allowed:
            raise WorkloadInvalid(
                "image", f"Images come from {', '.join(allowed)}; {ref.registry} is not on the operator's list."
            )
    elif facts.needs_image:  # a Slurm cluster's nodes default to Slinky's slurmd
        raise WorkloadInvalid("image", f"A {rung} workload needs an image (an OCI reference).")
    if w.pull_secret is not None and w.image is None:
        raise WorkloadInvalid("pull_secret", "pull_secret goes with an image.")
    if (w.command or w.args) and not facts.runs_image:
        field_name = "command" if w.command else "args"
        raise WorkloadInvalid(field_name, f"The {rung} rung runs what cloud_init starts, not a command.")
    for name, argv in (("command", w.command), ("args", w.args)):
        if len(argv) > MAX_ARGV:
            raise WorkloadInvalid(name, f"At most {MAX_ARGV} items.")
        for i, arg in enumerate(argv):
            if len(arg.encode()) > MAX_ARG_BYTES or "\x00" in arg:
                raise WorkloadInvalid(f"{name}.{i}", f"Each item is at most {MAX_ARG_BYTES} bytes, without NUL.")

    names: set[str] = set()
    for i, (name, value) in enumerate(w.env):
        if not ENV_NAME_RE.match(name):
            raise WorkloadInvalid(f"env.{i}.name", f"{name!r} is not an environment variable name.")
        if name.startswith(RESERVED_ENV):
            raise WorkloadInvalid(f"env.{i}.name", f"Names starting {RESERVED_ENV} are Ladder's own.")
        if name in names:
            raise WorkloadInvalid(f"env.{i}.name", f"{name} is set twice.")
        if "\x00" in value:
            raise WorkloadInvalid(f"env.{i}.value", "A value may not contain NUL.")
        names.add(name)
    if sum(len(k) + len(v) for k, v in w.env) > MAX_ENV_BYTES:
        raise WorkloadInvalid("env", f"The environment is at most {MAX_ENV_BYTES} bytes.")

    for i, secret in enumerate(w.secrets):
        if secret.as_ not in ("env", "file"):
            raise WorkloadInvalid(f"secrets.{i}.as", 'A secret goes in as "env" or "file".')
        if secret.as_ == "env" and secret.name in names:
            raise WorkloadInvalid(f"secrets.{i}.name", f"{secret.name} is already a variable (env or secrets).")
        if secret.as_ == "env" and secret.name.startswith(RESERVED_ENV):
            raise WorkloadInvalid(f"secrets.{i}.name", f"Names starting {RESERVED_ENV} are Ladder's own.")
        names.add(secret.name)

    if w.ports:
        _only_on(lambda f: f.takes_ports, facts, "ports", "ports (a bare-metal host is reached over SSH)")
    seen_ports: set[tuple[int, str]] = set()
    for i, port in enumerate(w.ports):
        if not 1 <= port.port <= 65535:
            raise WorkloadInvalid(f"ports.{i}.port", "A port is 1 to 65535.")
        if port.protocol not in ("http", "tcp", "udp"):
            raise WorkloadInvalid(f"ports.{i}.protocol", 'A protocol is "http", "tcp" or "udp".')
        if port.expose not in ("none", "tenant", "public"):
            raise WorkloadInvalid(f"ports.{i}.expose", 'expose is "none", "tenant" or "public".')
        if port.expose == "public" and port.protocol != "http":
            raise WorkloadInvalid(
                f"ports.{i}.expose", "Only http ports are public (through the HTTPS gateway); use ssh for the rest."
            )
        if port.port == SSH_PORT and w.ssh_keys:
            raise WorkloadInvalid(f"ports.{i}.port", "Port 22 is the SSH access Ladder gives with ssh_keys.")
        key = (port.port, "udp" if port.protocol == "udp" else "tcp")
        if key in seen_ports:
            raise WorkloadInvalid(f"ports.{i}.port", f"Port {port.port} is named twice.")
        seen_ports.add(key)
    if facts.endpoint and len(w.public_ports()) > 1:
        raise WorkloadInvalid("ports", "A serverless endpoint serves one public http port.")

    if w.volumes:
        _only_on(lambda f: f.runs_image, facts, "volumes", "volumes (datasets reach VMs and hosts through cloud_init)")
    mounts: set[str] = set()
    for i, volume in enumerate(w.volumes):
        path = _path_check(f"volumes.{i}.mount_path", volume.mount_path)
        if (volume.dataset is None) == (volume.scratch_gb is None):
            raise WorkloadInvalid(f"volumes.{i}", "A volume is a dataset (its asset id) or scratch_gb, not both.")
        if volume.scratch_gb is not None and not 1 <= volume.scratch_gb <= 4096:
            raise WorkloadInvalid(f"volumes.{i}.scratch_gb", "Scratch is 1 to 4096 GB.")
        if any(path == m or path.startswith(m + "/") or m.startswith(path + "/") for m in mounts):
            raise WorkloadInvalid(f"volumes.{i}.mount_path", f"{path} overlaps another mount.")
        mounts.add(path)

    if w.checkpoint is not None:
        _only_on(lambda f: f.restarts_from_checkpoint, facts, "checkpoint", "a checkpoint (only jobs restart from one)")
        path = _path_check("checkpoint.path", w.checkpoint.path)
        if any(path == m or path.startswith(m + "/") or m.startswith(path + "/") for m in mounts):
            raise WorkloadInvalid("checkpoint.path", f"{path} overlaps a volume's mount.")
        if not 30 <= w.checkpoint.interval_s <= 86_400:
            raise WorkloadInvalid("checkpoint.interval_s", "A checkpoint interval is 30 to 86400 seconds.")

    if w.os_image is not None:
        _only_on(lambda f: f.boots_os, facts, "os_image", "an os_image (it runs a container image)")
        if w.os_image not in os_images:
            raise WorkloadInvalid("os_image", f"The catalog offers {', '.join(sorted(os_images))}.")
    if w.cloud_init is not None:
        _only_on(lambda f: f.boots_os, facts, "cloud_init", "cloud_init user data")
        cloud_init_check(w.cloud_init)
    if w.ssh_keys:
        _only_on(
            lambda f: f.takes_ssh_keys,
            facts,
            "ssh_keys",
            "SSH keys (on the job rung, a Slurm cluster's login node does)",
        )
        if len(set(w.ssh_keys)) != len(w.ssh_keys):
            raise WorkloadInvalid("ssh_keys", "A key is named twice.")


def cloud_init_check(text: str) -> None:
    """User data cloud-init accepts: a ``#cloud-config`` YAML mapping or a script (``#!``)."""
    if len(text.encode()) > MAX_CLOUD_INIT_BYTES:
        raise WorkloadInvalid("cloud_init", f"User data is at most {MAX_CLOUD_INIT_BYTES} bytes.")
    if text.startswith("#!"):
        return
    if not text.startswith("#cloud-config"):
        raise WorkloadInvalid("cloud_init", "User data starts with #cloud-config (YAML) or #! (a script).")
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise WorkloadInvalid("cloud_init", f"The #cloud-config is not YAML: {error}".splitlines()[0]) from None
    if parsed is not None and not isinstance(parsed, dict):
        raise WorkloadInvalid("cloud_init", "A #cloud-config is a YAML mapping.")


def cloud_config(
    user_data: str | None,
    *,
    user: str,
    ssh_keys: Iterable[str],
    env: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
    facts: Mapping[str, str] | None = None,
) -> str:
    """The user data a VM or host boots with: the tenant's, with its SSH keys given to ``user``, its variables in
    ``/etc/environment``, its secret files written readable by ``user`` only and Ladder's ``facts`` about the
    machine (files anyone on it may read, such as its RDMA fabric). A script is kept as it is and Ladder's part
    goes beside it as a ``#cloud-config`` (MIME multipart)."""
    keys = sorted(set(ssh_keys))
    ours: dict[str, Any] = {}
    if keys:
        ours["users"] = ["default", {"name": user, "ssh_authorized_keys": keys}]
    writes = []
    if env:
        lines = "".join(f"{name}={_env_quote(value)}\n" for name, value in sorted(env.items()))
        writes.append({"path": "/etc/environment", "append": True, "content": lines})
    for path, content in sorted((files or {}).items()):
        writes.append({"path": path, "content": content, "permissions": "0400", "owner": f"{user}:{user}"})
    for path, content in sorted((facts or {}).items()):
        writes.append({"path": path, "content": content, "permissions": "0444"})
    if writes:
        ours["write_files"] = writes
    if user_data and user_data.startswith("#!"):
        if not ours:
            return user_data
        part = "#cloud-config\n" + yaml.safe_dump(ours, sort_keys=True)
        return _multipart([("text/cloud-config", part), ("text/x-shellscript", user_data)])
    config: dict[str, Any] = (yaml.safe_load(user_data) if user_data else None) or {}
    if keys:
        theirs = config.get("users") or ["default"]
        others = [u for u in theirs if not (isinstance(u, dict) and u.get("name") == user)]
        mine = next((u for u in theirs if isinstance(u, dict) and u.get("name") == user), {})
        merged = sorted({*(mine.get("ssh_authorized_keys") or []), *keys})
        config["users"] = [*others, {**mine, "name": user, "ssh_authorized_keys": merged}]
    if writes:
        config["write_files"] = [*(config.get("write_files") or []), *writes]
    return "#cloud-config\n" + yaml.safe_dump(config, sort_keys=True)


def os_user_data(
    workload: Workload | None,
    materials: Materials,
    *,
    env: Mapping[str, str] | None = None,
    facts: Mapping[str, str] | None = None,
) -> str:
    """The whole user data of a VM or bare-metal host: the tenant's cloud_init with its SSH keys, variables and
    secrets (files in ``OS_SECRET_FILES``: a VM has no secret volume; every secret is a file there), after
    Ladder's own variables ``env`` (the tenant's win: a workload may set its own NCCL_*) and ``facts`` files."""
    w = workload or Workload()
    image = materials.os_image or next(i for i in OS_IMAGES if i.name == DEFAULT_OS_IMAGE)
    files = {f"{OS_SECRET_FILES}/{name}": value for name, value in materials.secrets.items()}
    variables = {**(env or {}), **dict(w.env)}
    return cloud_config(
        w.cloud_init, user=image.user, ssh_keys=materials.ssh_keys, env=variables, files=files, facts=facts
    )


def _env_quote(value: str) -> str:
    """A value as /etc/environment (pam_env) reads it: double-quoted, with quotes and backslashes escaped."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _multipart(parts: list[tuple[str, str]]) -> str:
    boundary = "==LADDER-USER-DATA=="
    body = [f'Content-Type: multipart/mixed; boundary="{boundary}"', "MIME-Version: 1.0", ""]
    for ctype, text in parts:
        body += [f"--{boundary}", f'Content-Type: {ctype}; charset="utf-8"', "", text.rstrip("\n")]
    return "\n".join([*body, f"--{boundary}--", ""])


@dataclass(frozen=True)
class LogLine:
    at: datetime
    text: str
    source: str = "worker"  # the container, "console" for a VM's serial console, or a member "worker-<n>"


@dataclass(frozen=True)
class WorkloadEvent:
    """Something the backend reports about the workload: scheduling, pulls, starts, restarts, faults."""

    at: datetime
    reason: str  # Scheduled, Pulling, Pulled, Started, BackOff, Killing, NodeFailed...
    message: str
    type: str = "Normal"  # Normal | Warning, as Kubernetes reports them
    source: str = ""


def log_text(lines: Iterable[LogLine]) -> str:
    """Log lines as the text kept when a workload ends: one line each, "<time> [<source>] <text>"."""
    return "".join(f"{line.at.isoformat()} [{line.source}] {line.text}\n" for line in lines)


# --- access -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ssh:
    host: str
    port: int
    user: str
    command: str


@dataclass(frozen=True)
class Access:
    """How the tenant reaches its allocation: ``ssh`` through the hall's SSH gateway, ``endpoint`` for serverless,
    ``urls`` per public port, ``console`` to follow a VM's serial console."""

    ssh: Ssh | None = None
    endpoint: str | None = None
    urls: dict[int, str] = field(default_factory=dict)
    console: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ssh": asdict(self.ssh) if self.ssh else None,
            "endpoint": self.endpoint,
            "urls": {str(port): url for port, url in sorted(self.urls.items())},
            "console": self.console,
        }


def route_host(allocation_id: int, base_domain: str, port: int | None = None) -> str:
    """The public hostname of an allocation's endpoint (or of one of its ports) under the base domain."""
    label = f"ldr-{allocation_id}" if port is None else f"ldr-{allocation_id}-{port}"
    return f"{label}.{base_domain}"  # one label under the base domain: a single wildcard certificate covers all


def ssh_host(hall: str, base_domain: str) -> str:
    return f"ssh.{hall}.{base_domain}"


def ssh_user(allocation_id: int) -> str:
    """The gateway routes by user: ``ldr-<id>`` reaches allocation <id>'s SSH, as the image's own user."""
    return f"ldr-{allocation_id}"


def access(
    *,
    allocation_id: int,
    tenant: str,
    rung: str,
    hall: str,
    workload: Workload | None,
    base_domain: str,
    ssh_port: int,
    endpoint_url: str | None,
    console_url: str | None,
) -> Access:
    """The access details of one allocation. ``endpoint_url`` is where the driver serves a serverless endpoint
    (None: the gateway's hostname); ``console_url`` where a VM's console is followed."""
    w = workload or Workload()
    spec = WorkloadSpec.of(rung, workload)
    ssh = None
    if spec.takes_ssh:
        host, user = ssh_host(hall, base_domain), ssh_user(allocation_id)
        command = f"ssh {user}@{host}" if ssh_port == SSH_PORT else f"ssh -p {ssh_port} {user}@{host}"
        ssh = Ssh(host=host, port=ssh_port, user=user, command=command)
    urls = {p.port: f"https://{route_host(allocation_id, base_domain, p.port)}/" for p in w.public_ports()}
    endpoint = None
    if spec.facts.endpoint:
        endpoint = endpoint_url or f"https://{route_host(allocation_id, base_domain)}/"
        urls = {}  # the endpoint is the serverless rung's one public port
    return Access(ssh=ssh, endpoint=endpoint, urls=urls, console=console_url if spec.rung is Rung.VM else None)
