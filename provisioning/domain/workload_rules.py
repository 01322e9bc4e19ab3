"""The rules a workload must meet on its rung, checked without Django: what each rung (and the job rung's
framework) takes, the limits on its command, environment, ports, volumes and checkpoint, a serverless endpoint's
autoscaling, the grammar of OCI image references and the registries they may come from, and the shape of
cloud-init user data.

``workload_check`` refuses anything the rung cannot run, naming the field (``WorkloadInvalid.field`` is a path
such as ``ports.1.expose``); the API turns it into 422 ``validation_error``. What the workload names outside
itself (secrets, SSH keys, datasets) is resolved by the services, not here.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import yaml

from provisioning.domain.cold_start import MAX_MODEL_GB
from provisioning.domain.os_images import OsImage
from provisioning.domain.rungs import (
    DEFAULT_FRAMEWORK,
    FRAMEWORK_RUNG,
    FRAMEWORKS,
    RUNGS,
    Framework,
    RungFacts,
    rung_facts,
)
from provisioning.domain.workloads import (
    KV_CACHE,
    SECRET_FILES,
    SIGNALS,
    SSH_PORT,
    Autoscaling,
    Model,
    Workload,
    serving_replicas,
)

# Registries Ladder pulls from unless the operator says otherwise (LADDER_IMAGE_REGISTRIES).
DEFAULT_REGISTRIES = ("docker.io", "ghcr.io", "nvcr.io", "quay.io", "registry.k8s.io", "public.ecr.aws")
IMPLICIT_REGISTRY = "docker.io"  # "pytorch/pytorch" means docker.io/pytorch/pytorch, as the container runtimes read it

RESERVED_ENV = "LADDER_"  # Ladder's own variables (checkpoint dir, restart code, GPU share) start with it
MAX_CLOUD_INIT_BYTES = 64 * 1024  # KubeVirt's NoCloud user data and Metal3's user-data Secret both fit this
MAX_ENV_BYTES = 64 * 1024
MAX_ARGV = 256
MAX_ARG_BYTES = 4096
MAX_TARGET_IN_FLIGHT = 1000
MAX_WINDOW_S = 3600  # the HPA's stabilizationWindowSeconds goes up to an hour
MIN_IDLE_SECONDS = 30  # below a few reconcile passes, an endpoint would go to zero between two calls
MAX_IDLE_SECONDS = 86_400


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


IDLE_STOP_MINUTES = (10, 10_080)  # an idle stop waits ten minutes at least (the notice needs five), a week at most


def workload_check(
    w: Workload, *, rung: str, registries: Iterable[str], os_images: Mapping[str, OsImage], devices: int = 1
) -> None:
    """Refuse what the rung cannot run, naming the first field at fault. ``devices``: how many devices the
    allocation is placed on (a serverless endpoint's replicas are bounded by them)."""
    _framework_check(w, rung)
    facts = rung_facts(rung, w.framework)
    if w.autoscaling is not None:
        _only_on(lambda f: f.endpoint, facts, "autoscaling", "autoscaling (only an endpoint scales on demand)")
        autoscaling_check(w.autoscaling, devices=devices)
    if w.idle_stop_after is not None:
        _only_on(lambda f: f.idle_stop, facts, "idle_stop_after", "idle_stop_after (an idle stop)")
        if not IDLE_STOP_MINUTES[0] <= w.idle_stop_after <= IDLE_STOP_MINUTES[1]:
            low, high = IDLE_STOP_MINUTES
            raise WorkloadInvalid("idle_stop_after", f"idle_stop_after is minutes, from {low} to {high}.")
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

    mounts: set[str] = set()
    named_volumes: set[int] = set()
    for i, volume in enumerate(w.volumes):
        path = _path_check(f"volumes.{i}.mount_path", volume.mount_path)
        named = [k for k in ("volume", "dataset", "scratch_gb") if getattr(volume, k) is not None]
        if len(named) != 1:
            raise WorkloadInvalid(
                f"volumes.{i}",
                "A volume entry names one of volume (a volume's id), dataset (an asset id) or scratch_gb.",
            )
        if volume.volume is not None:
            if not facts.volumes:
                raise WorkloadInvalid(f"volumes.{i}.volume", facts.volumes_refused)
            if facts.volumes_read_only and not volume.read_only:
                raise WorkloadInvalid(
                    f"volumes.{i}.read_only",
                    f"The {facts.rung} rung mounts volumes read-only (many replicas read one at once): say "
                    '"read_only": true.',
                )
            if volume.volume in named_volumes:
                raise WorkloadInvalid(f"volumes.{i}.volume", f"Volume {volume.volume} is named twice.")
            named_volumes.add(volume.volume)
        else:
            _only_on(
                lambda f: f.runs_image,
                facts,
                f"volumes.{i}",
                "datasets or scratch volumes (datasets reach VMs and hosts through cloud_init)",
            )
        if volume.scratch_gb is not None and not 1 <= volume.scratch_gb <= 4096:
            raise WorkloadInvalid(f"volumes.{i}.scratch_gb", "Scratch is 1 to 4096 GB.")
        if any(path == m or path.startswith(m + "/") or m.startswith(path + "/") for m in mounts):
            raise WorkloadInvalid(f"volumes.{i}.mount_path", f"{path} overlaps another mount.")
        mounts.add(path)

    if w.model is not None:
        _model_check(w.model, w.volume_ids, facts)

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


def autoscaling_check(a: Autoscaling, *, devices: int) -> None:
    """A serverless endpoint's autoscaling: each value in its bounds, and the values that must agree with each
    other (``autoscaling.<name>`` names the field at fault)."""

    def bound(name: str, value: float | None, low: float, high: float, what: str) -> None:
        if value is not None and not low <= value <= high:
            raise WorkloadInvalid(f"autoscaling.{name}", f"{name} is {what}, from {low:g} to {high:g}.")

    limit = serving_replicas(devices)
    if a.min_replicas < 0:
        raise WorkloadInvalid("autoscaling.min_replicas", "min_replicas is 0 (scale to zero) or more.")
    if a.max_replicas is not None and not 1 <= a.max_replicas <= limit:
        why = (
            f"it is placed on {devices} devices, one replica on each, and keeps one device free for a rollout's "
            "surge replica, so a rollout never takes a serving replica down first"
            if devices > 1
            else "it is placed on one device, so it serves one replica (rolled only from zero)"
        )
        raise WorkloadInvalid(
            "autoscaling.max_replicas",
            f"This endpoint serves at most {limit} replicas: {why}. More replicas need more GPUs.",
        )
    most = a.max_replicas if a.max_replicas is not None else limit
    if a.min_replicas > most:
        raise WorkloadInvalid(
            "autoscaling.min_replicas", f"min_replicas ({a.min_replicas}) is above max_replicas ({most})."
        )
    if a.buffer_replicas < 0:
        raise WorkloadInvalid("autoscaling.buffer_replicas", "buffer_replicas is 0 or more.")
    if a.min_replicas + a.buffer_replicas > most:
        raise WorkloadInvalid(
            "autoscaling.buffer_replicas",
            f"min_replicas + buffer_replicas ({a.min_replicas + a.buffer_replicas}) is above max_replicas ({most}): "
            "the buffer is kept warm within the maximum.",
        )
    bound(
        "target_in_flight",
        a.target_in_flight,
        1,
        MAX_TARGET_IN_FLIGHT,
        "the requests waiting and in flight per replica",
    )
    bound("scale_up_window_s", a.scale_up_window_s, 0, MAX_WINDOW_S, "a window in seconds")
    bound("scale_down_window_s", a.scale_down_window_s, 0, MAX_WINDOW_S, "a window in seconds")
    if a.idle_seconds is not None:
        if not a.scales_to_zero:
            raise WorkloadInvalid(
                "autoscaling.idle_seconds",
                f"An endpoint with min_replicas {a.min_replicas} never goes to zero: idle_seconds goes with "
                "min_replicas 0.",
            )
        bound(
            "idle_seconds",
            a.idle_seconds,
            MIN_IDLE_SECONDS,
            MAX_IDLE_SECONDS,
            "the seconds of an empty queue before zero",
        )
    if a.signal not in SIGNALS:
        raise WorkloadInvalid("autoscaling.signal", f"A signal is one of {', '.join(SIGNALS)}.")
    if a.kv_cache_target is not None:
        if a.signal != KV_CACHE:
            raise WorkloadInvalid("autoscaling.kv_cache_target", f'kv_cache_target goes with "signal": "{KV_CACHE}".')
        if not 0 < a.kv_cache_target <= 1:
            raise WorkloadInvalid(
                "autoscaling.kv_cache_target", "kv_cache_target is a fraction of the KV cache, above 0 and at most 1."
            )


def _model_check(model: Model, volume_ids: tuple[int, ...], facts: RungFacts) -> None:
    """A serverless replica's model: its size, and the model cache it is read from, which is one of the workload's
    own volumes (mounted read-only by every replica, as the rung mounts them all)."""
    _only_on(lambda f: f.endpoint, facts, "model", "a model to load (only serverless replicas start from zero)")
    size = model.size_gb
    if isinstance(size, bool) or not isinstance(size, int | float) or not math.isfinite(size):
        raise WorkloadInvalid("model.size_gb", "A model's size is a number of GB, e.g. 16 for an 8B model in fp16.")
    if not 0 < size <= MAX_MODEL_GB:
        raise WorkloadInvalid("model.size_gb", f"A model's size is more than 0 and at most {MAX_MODEL_GB} GB.")
    if model.volume is not None and model.volume not in volume_ids:
        raise WorkloadInvalid(
            "model.volume",
            f"Volume {model.volume} is not one of the workload's volumes: name it in volumes with a mount_path "
            '(and "read_only": true) to read the model from it.',
        )


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
