"""What a tenant's workload adds to its allocation's pod: the image and its command, the environment with secrets
by reference, ports, scratch and dataset volumes and the tenant's own volumes (their claims, ``render_volumes``),
pull credentials and the SSH sidecar; the Secrets that carry the values; and the cloud-init user data a VM or a
host boots with. Pure functions returning plain dicts (no Django, no I/O).

Secret values travel only in Secrets' ``data``: a pod spec names a Secret key (``secretKeyRef``, a secret volume's
``items``), never a value. Dataset download URLs are signed credentials, so they go the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from provisioning.domain.os_images import DEFAULT_OS_IMAGE, OsImage, os_catalog
from provisioning.domain.rungs import Rung
from provisioning.domain.user_data import OsMount, os_user_data
from provisioning.domain.volumes import Attach, VolumeKind, volume_backend_name
from provisioning.domain.workload_rules import image_parse
from provisioning.domain.workloads import (
    MODEL_DIR_ENV,
    SECRET_FILES,
    Materials,
    MountedVolume,
    Port,
    Volume,
    Workload,
)
from provisioning.drivers.kubernetes.manifest import (
    UID,
    Obj,
    b64,
    own,
    preemptible_env,
    preemptible_pod_fields,
    restricted,
    secret,
)
from provisioning.drivers.kubernetes.render_volumes import claim_volume, mounted
from provisioning.drivers.kubernetes.shapes import DEFAULT_IMAGE, AllocationShape

SSH_IMAGE = "ghcr.io/ladder-cloud/ssh-sidecar:1.0.0"  # sshd as UID 1000 on SSH_SIDECAR_PORT: docs/kubernetes.md §7
SSH_SIDECAR_USER = "ladder"  # the sidecar image's user 1000, home /workspace
SSH_SIDECAR_PORT = 2222  # not 22: a non-root sshd cannot bind below 1024 without NET_BIND_SERVICE
SSH_KEYS_DIR = "/etc/ladder/ssh"  # the sidecar reads <SSH_KEYS_DIR>/authorized_keys
SSH_STATE_DIR = "/var/run/ladder-ssh"  # the sidecar's host keys and pid file (its root filesystem is read-only)
WORKSPACE = "/workspace"  # shared by the workload and the SSH sidecar
DATASET_IMAGE = "docker.io/curlimages/curl:8.11.1"  # non-root, and curl >= 8.3 reads the URL from the environment
DATASET_URL_ENV = "LADDER_DATASET_URL"
DOCKER_HUB = "https://index.docker.io/v1/"  # the key kubelet and docker look Docker Hub's credentials up by


def helper_resources() -> Obj:
    """A small container beside the worker (the SSH sidecar, a dataset download); a fresh dict each time, so no
    two containers share a mutable part."""
    return {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}


def secrets_name(a: AllocationShape) -> str:
    return f"{a.object_name}-secrets"


def pull_name(a: AllocationShape) -> str:
    return f"{a.object_name}-pull"


def ssh_name(a: AllocationShape) -> str:
    return f"{a.object_name}-ssh"


def dataset_key(asset: int) -> str:
    # Tenant secret names are [A-Za-z_][A-Za-z0-9_]*: a key with a hyphen never collides with one.
    return f"dataset-{asset}"


def dataset_file(asset: int) -> str:
    """The file a dataset's content is written to, under its volume's mount path."""
    return f"asset-{asset}"


def port_name(port: Port) -> str:
    return f"{port.protocol}-{port.port}"


def gets_ssh(a: AllocationShape) -> bool:
    """Whether the allocation is rendered with SSH access (``WorkloadSpec.takes_ssh``), whose keys must then have
    been resolved into its materials."""
    if not a.spec.takes_ssh:
        return False
    if not a.materials.ssh_keys:
        raise ValueError(f"allocation {a.id}: the workload names SSH keys, and none was resolved")
    return True


def placeholder_materials(
    workload: Workload | None,
    os_images: Mapping[str, OsImage] | None = None,
    volumes: Mapping[int, MountedVolume] | None = None,
) -> Materials:
    """Materials that name what the workload names without a single value: each secret is ``<secret NAME>``, each
    dataset URL ``<dataset ID>``, each SSH key ``<ssh key ID>``. What ``k8s_render`` prints for review, and enough
    to find an allocation's objects by name (deleting them needs no secret). Its volumes, which hold no secret, are
    ``volumes`` when the caller resolved them, else each a filesystem mounted under its backend name."""
    w = workload or Workload()
    if volumes is None:
        volumes = {
            v.volume: MountedVolume(
                v.volume, VolumeKind.FILESYSTEM, Attach.MOUNT, v.read_only, volume_backend_name(v.volume), 0
            )
            for v in w.volumes
            if v.volume is not None
        }
    pull = None
    if w.pull_secret and w.image:
        hidden = f"<secret {w.pull_secret}>"
        pull = (image_parse(w.image).registry, hidden, hidden)
    return Materials(
        secrets={name: f"<secret {name}>" for name in w.secret_names},
        pull=pull,
        ssh_keys=tuple(f"<ssh key {key}>" for key in w.ssh_keys),
        datasets={asset: f"<dataset {asset}>" for asset in w.datasets},
        os_image=(os_images or os_catalog()).get(w.os_image or DEFAULT_OS_IMAGE),
        volumes=volumes,
    )


# --- the Secrets ----------------------------------------------------------------------------------------------


def secret_values(a: AllocationShape) -> dict[str, str]:
    """The ``ldr-<id>-secrets`` data: the workload's secrets by name and its datasets' signed download URLs."""
    w = a.workload or Workload()
    values: dict[str, str] = {}
    for ref in w.secrets:
        if ref.name not in a.materials.secrets:
            raise ValueError(f"allocation {a.id}: secret {ref.name} is not resolved")
        values[ref.name] = a.materials.secrets[ref.name]
    for asset in w.datasets:
        if asset not in a.materials.datasets:
            raise ValueError(f"allocation {a.id}: dataset {asset} has no download URL")
        values[dataset_key(asset)] = a.materials.datasets[asset]
    return values


def _docker_config(a: AllocationShape) -> str:
    if a.materials.pull is None:
        raise ValueError(f"allocation {a.id}: the image's pull secret is not resolved")
    registry, user, token = a.materials.pull
    key = DOCKER_HUB if registry == "docker.io" else registry
    auth = {"username": user, "password": token, "auth": b64(f"{user}:{token}")}
    return json.dumps({"auths": {key: auth}}, sort_keys=True)


def workload_secrets(a: AllocationShape) -> list[Obj]:
    """``ldr-<id>-secrets`` (Opaque), ``ldr-<id>-pull`` (the image's registry credentials) and ``ldr-<id>-ssh``
    (the SSH sidecar's ``authorized_keys``), each only when the workload needs it."""
    w = a.workload
    if w is None:
        return []
    objs = []
    values = secret_values(a)
    if values:
        objs.append(secret(own(a, secrets_name(a)), values))
    if w.pull_secret:
        docker = {".dockerconfigjson": _docker_config(a)}
        objs.append(secret(own(a, pull_name(a)), docker, "kubernetes.io/dockerconfigjson"))
    if a.rung == Rung.CONTAINER and gets_ssh(a):
        objs.append(secret(own(a, ssh_name(a)), {"authorized_keys": "\n".join(a.materials.ssh_keys) + "\n"}))
    return objs


# --- an operating system's first boot (VM, bare metal) -------------------------------------------------------


def userdata_name(a: AllocationShape) -> str:
    return f"{a.object_name}-userdata"


def os_image_of(a: AllocationShape) -> OsImage:
    """The catalog entry the services resolved, else the default catalog's default."""
    return a.materials.os_image or os_catalog()[DEFAULT_OS_IMAGE]


def user_data(
    a: AllocationShape,
    env: Mapping[str, str] | None = None,
    facts: Mapping[str, str] | None = None,
    mounts: list[OsMount] | None = None,
) -> str:
    """The cloud-init user data a VM or host boots with: the tenant's, with its SSH keys for the image's user,
    its variables and its secrets as files (``provisioning.domain.user_data.os_user_data``), after Ladder's ``env`` and
    ``facts`` (a bare-metal host's fabric), and the ``mounts`` of its volumes (a VM's)."""
    return os_user_data(a.workload, a.materials, env=env, facts=facts, mounts=mounts or ())


# --- the pod --------------------------------------------------------------------------------------------------


@dataclass
class PodParts:
    """What the workload adds to the worker container and its pod."""

    image: str
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[Obj] = field(default_factory=list)
    ports: list[Obj] = field(default_factory=list)
    mounts: list[Obj] = field(default_factory=list)
    volumes: list[Obj] = field(default_factory=list)
    init_containers: list[Obj] = field(default_factory=list)
    sidecars: list[Obj] = field(default_factory=list)
    pull_secrets: list[Obj] = field(default_factory=list)
    share_processes: bool = False
    # Fields the pod takes over the rung's own: a preemptible allocation's toleration and grace period.
    pod_fields: Obj = field(default_factory=dict)


def _volume_name(i: int) -> str:
    return f"vol-{i}"


def _fetch(a: AllocationShape, i: int, asset: int) -> Obj:
    """An init container that downloads a dataset into its volume. The signed URL comes from the Secret, and curl
    reads it from its environment (``--variable``), so it shows in neither the pod spec nor a process list."""
    command = [
        *("curl", "--fail", "--silent", "--show-error", "--location", "--retry", "5"),
        *("--proto", "=https", "--proto-redir", "=https"),
        *("--variable", f"%{DATASET_URL_ENV}", "--expand-url", f"{{{{{DATASET_URL_ENV}}}}}"),
        *("--output", f"/dataset/{dataset_file(asset)}"),
    ]
    url = {"secretKeyRef": {"name": secrets_name(a), "key": dataset_key(asset)}}
    return {
        "name": f"fetch-{i}",
        "image": DATASET_IMAGE,
        "command": command,
        "env": [{"name": DATASET_URL_ENV, "valueFrom": url}],
        "resources": helper_resources(),
        "securityContext": {**restricted(), "readOnlyRootFilesystem": True},
        "volumeMounts": [{"name": _volume_name(i), "mountPath": "/dataset"}],
    }


def _volume(i: int, volume: Volume) -> Obj:
    if volume.scratch_gb is not None:
        return {"name": _volume_name(i), "emptyDir": {"sizeLimit": f"{volume.scratch_gb}Gi"}}
    return {"name": _volume_name(i), "emptyDir": {}}  # filled by its init container before the worker starts


def _ssh_sidecar(workspace: Obj, volumes: list[Obj]) -> Obj:
    return {
        "name": "ssh",
        "image": SSH_IMAGE,
        "ports": [{"name": "ssh", "containerPort": SSH_SIDECAR_PORT, "protocol": "TCP"}],
        "readinessProbe": {"tcpSocket": {"port": "ssh"}, "periodSeconds": 10},
        "resources": helper_resources(),
        "securityContext": {**restricted(), "readOnlyRootFilesystem": True},
        "volumeMounts": [
            {"name": "ssh-keys", "mountPath": SSH_KEYS_DIR, "readOnly": True},
            {"name": "ssh-state", "mountPath": SSH_STATE_DIR},
            {**workspace, "mountPath": WORKSPACE},
            *volumes,  # the tenant's volumes: who logs in sees the data the workload sees
        ],
    }


def container_ports(a: AllocationShape, serve_port: int | None = None) -> list[Obj]:
    """The worker's ``ports``: the workload's, with the serving port (serverless) named ``http``."""
    w = a.workload or Workload()
    ports = []
    for p in w.ports:
        name = "http" if p.port == serve_port and p.protocol != "udp" else port_name(p)
        ports.append({"name": name, "containerPort": p.port, "protocol": "UDP" if p.protocol == "udp" else "TCP"})
    if serve_port is not None and not any(p["name"] == "http" for p in ports):
        ports.insert(0, {"name": "http", "containerPort": serve_port, "protocol": "TCP"})
    return ports


def pod_parts(a: AllocationShape, serve_port: int | None = None) -> PodParts:
    """The workload's part of the pod; without a workload, the shape's stock image only."""
    w = a.workload
    if w is None:
        ports = container_ports(a, serve_port) if serve_port is not None else []
        return PodParts(image=a.image, ports=ports, env=preemptible_env(a), pod_fields=preemptible_pod_fields(a))
    parts = PodParts(
        image=w.image or a.image,
        command=list(w.command) or None,
        args=list(w.args) or None,
        env=[*preemptible_env(a), *({"name": name, "value": value} for name, value in w.env)],
        ports=container_ports(a, serve_port),
        pod_fields=preemptible_pod_fields(a),
    )
    files = []
    for ref in w.secrets:
        if ref.as_ == "env":
            key = {"secretKeyRef": {"name": secrets_name(a), "key": ref.name}}
            parts.env.append({"name": ref.name, "valueFrom": key})
        else:
            files.append({"key": ref.name, "path": ref.name})
    if files:
        # 0440 with the pod's fsGroup: readable by the workload's user, and by nothing else in the pod.
        source = {"secretName": secrets_name(a), "items": files, "defaultMode": 0o440}
        parts.volumes.append({"name": "secret-files", "secret": source})
        parts.mounts.append({"name": "secret-files", "mountPath": SECRET_FILES, "readOnly": True})
    claimed: list[Obj] = []
    for i, volume in enumerate(w.volumes):
        mount: Obj = {"name": _volume_name(i), "mountPath": volume.mount_path}
        if volume.volume is not None:
            # The tenant's volume: its claim, mounted by every container of every pod (every member of a gang).
            claim = mounted(a, volume.volume, frozenset({Attach.MOUNT}))
            parts.volumes.append(claim_volume(_volume_name(i), claim))
            claimed.append({**mount, **({"readOnly": True} if claim.read_only else {})})
            parts.mounts.append(claimed[-1])
            continue
        parts.volumes.append(_volume(i, volume))
        if volume.dataset is not None:
            mount["readOnly"] = True
            parts.init_containers.append(_fetch(a, i, volume.dataset))
        parts.mounts.append(mount)
    cache = w.model_mount()
    if cache is not None:
        # The model cache: where every replica reads its weights from (docs/serverless.md, "Cold starts").
        parts.env.insert(0, {"name": MODEL_DIR_ENV, "value": cache})
    if w.pull_secret:
        parts.pull_secrets = [{"name": pull_name(a)}]
    if a.rung == Rung.CONTAINER and gets_ssh(a):
        # The tenant logs in beside the workload: same files under /workspace, same processes (ps, kill, py-spy).
        shared = next((m for m in parts.mounts if m["mountPath"] == WORKSPACE), None)
        if shared is None:
            parts.volumes.append({"name": "workspace", "emptyDir": {}})
            shared = {"name": "workspace", "mountPath": WORKSPACE}
            parts.mounts.append(shared)
        workspace = {k: v for k, v in shared.items() if k != "mountPath"}
        keys = {"secretName": ssh_name(a), "defaultMode": 0o440}
        parts.volumes += [
            {"name": "ssh-keys", "secret": keys},
            {"name": "ssh-state", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}},
        ]
        parts.sidecars.append(_ssh_sidecar(workspace, [m for m in claimed if m["mountPath"] != WORKSPACE]))
        parts.share_processes = True
    return parts


# --- the worker container and its pod spec -------------------------------------------------------------------


def worker_container(
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


def pod_spec(
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
        **parts.pod_fields,
    }
    return {**spec, **{k: v for k, v in fields.items() if v is not None}}
