"""Bare metal on Kubernetes: the tenant holds whole nodes. Ladder taints and labels them for the tenant, has
Metal3 write the tenant's operating system to them with its SSH keys, and on release wipes them before they return
to the pool. Pure functions returning plain dicts (no Django, no I/O).

``bare_metal_host_objects`` assumes each held node's Metal3 ``BareMetalHost`` has the node's name, in the namespace
``METAL3_NAMESPACE``; docs/kubernetes.md says what an operator sets up for it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping

from provisioning.domain.os_images import OsImage
from provisioning.drivers.kubernetes.manifest import (
    HOSTNAME,
    MANAGED_BY_LABEL,
    SYSTEM_NAMESPACE,
    Obj,
    hosts,
    labels_of,
    meta,
    obj,
    secret,
)
from provisioning.drivers.kubernetes.render_access import ssh_objects
from provisioning.drivers.kubernetes.render_fabric import host_fabric
from provisioning.drivers.kubernetes.render_workload import os_image_of, user_data, userdata_name
from provisioning.drivers.kubernetes.shapes import (
    DEFAULT_IMAGE,
    LABEL_DEDICATED,
    LABEL_TENANT,
    MANAGED_BY,
    TAINT_DEDICATED,
    AllocationShape,
)

METAL3_API = "metal3.io/v1alpha1"
METAL3_NAMESPACE = "metal3"
SCRATCH = "/var/lib/ladder/scratch"
SANITIZE_SCRIPT = """set -eu
# Reset every GPU (clears the memory and state the tenant left), then empty the node's scratch directory.
nvidia-smi --query-gpu=index --format=csv,noheader | while read -r gpu; do nvidia-smi --gpu-reset -i "$gpu"; done
find /host-scratch -mindepth 1 -xdev -delete
"""


def _without_ours(taints: Iterable[Obj]) -> list[Obj]:
    return [t for t in taints if t.get("key") != TAINT_DEDICATED]


def bare_metal_node_patches(a: AllocationShape, current_taints: Mapping[str, list[Obj]] | None = None) -> list[Obj]:
    """A server-side-apply Node object per held node: label and NoSchedule taint ``ladder.io/dedicated=<tenant>``.

    ``spec.taints`` is an atomic list: whoever applies it owns all of it. Pass each node's current taints
    (``current_taints[hostname]``) so the others (GPU operator, cordon) are kept; without them only Ladder's taint
    is rendered, which would replace the node's other taints."""
    ours = {"key": TAINT_DEDICATED, "value": a.tenant, "effect": "NoSchedule"}
    return [
        obj(
            "v1",
            "Node",
            meta(host, labels={LABEL_DEDICATED: a.tenant}),
            spec={"taints": [*_without_ours((current_taints or {}).get(host, [])), ours]},
        )
        for host in hosts(a)
    ]


def node_release(hostname: str, current_taints: Iterable[Obj] = ()) -> Obj:
    """The Node object to apply once sanitized: Ladder's label and taint gone, the node's other taints kept.
    (Applying a bare ``{"metadata": {"name": ...}}`` drops the whole atomic taint list Ladder owns.)"""
    return obj("v1", "Node", {"name": hostname}, spec={"taints": _without_ours(current_taints)})


# --- the tenant's operating system, through Metal3 ----------------------------------------------------------------


def _metal_image(image: OsImage) -> Obj:
    """``spec.image`` of a BareMetalHost. The catalog's checksum is ``sha256:<hex>`` or the URL of a checksum file,
    which Ironic reads itself (``auto`` finds the algorithm)."""
    algorithm, _, digest = image.metal_checksum.partition(":")
    if algorithm == "sha256" and re.fullmatch(r"[0-9a-f]{64}", digest):
        checksum, checksum_type = digest, "sha256"
    else:
        checksum, checksum_type = image.metal_checksum, "auto"
    path = image.metal_url.split("?")[0].lower()
    # Cloud images ending .img are qcow2 (Ubuntu's are); an ISO is live-booted, not written to disk.
    fmt = "live-iso" if path.endswith(".iso") else "raw" if path.endswith(".raw") else "qcow2"
    return {"url": image.metal_url, "checksum": checksum, "checksumType": checksum_type, "format": fmt}


def bare_metal_host_objects(a: AllocationShape) -> list[Obj]:
    """With a workload: the user data Secret ``ldr-<id>-userdata`` in ``METAL3_NAMESPACE`` (user data may hold the
    tenant's secrets), per held node a server-side-apply patch of its BareMetalHost (the catalog image, the user
    data, powered on: Metal3 then provisions the host), and the SSH route ``ldr-<id>-ssh`` when the workload names
    keys. Without a workload, nothing: the host stays a node. Hosts on an RDMA fabric boot with its facts
    (``render_fabric.host_fabric``: ``/etc/ladder/fabric.json`` and NCCL's variables in ``/etc/environment``)."""
    if a.workload is None:
        return []
    env, facts = host_fabric(a)
    userdata = secret(
        meta(userdata_name(a), METAL3_NAMESPACE, labels_of(a)), {"userData": user_data(a, env=env, facts=facts)}
    )
    machines = [
        obj(
            METAL3_API,
            "BareMetalHost",
            meta(host, METAL3_NAMESPACE, labels_of(a)),
            spec={
                "image": _metal_image(os_image_of(a)),
                "userData": {"name": userdata_name(a), "namespace": METAL3_NAMESPACE},
                "online": True,
            },
        )
        for host in hosts(a)
    ]
    return [userdata, *machines, *ssh_objects(a)]


def bare_metal_host_release(hostname: str) -> Obj:
    """The BareMetalHost patch to apply on release. Server-side apply drops the fields Ladder stops declaring:
    without ``spec.image`` and ``spec.userData`` Metal3 deprovisions the host (Ironic's automated cleaning), and the
    tenant's labels go. The host stays powered on for the cleaning."""
    return obj(METAL3_API, "BareMetalHost", meta(hostname, METAL3_NAMESPACE), spec={"online": True})


# --- the wipe between tenants ---------------------------------------------------------------------------------


def sanitize_job_name(hostname: str) -> str:
    """``sanitize-<host>``: DNS-1123, short enough for the job-name label (a hash keeps long names unique)."""
    name = "sanitize-" + re.sub(r"[^a-z0-9-]+", "-", hostname.lower()).strip("-")
    if len(name) > 52:
        name = f"{name[:43].rstrip('-')}-{hashlib.sha256(hostname.encode()).hexdigest()[:8]}"
    return name


def sanitize_job(hostname: str, tenant: str) -> Obj:
    """The wipe of a bare-metal host between tenants: a privileged Job in ``ladder-system`` (Ladder's own namespace
    at the privileged Pod Security level; tenant namespaces stay restricted), pinned to the host and tolerating
    the tenant's taint and a cordon. Its name depends on the host only, so the driver finds it without the
    tenant. No TTL: the driver reads its completion, then deletes it."""
    labels = {"ladder.io/sanitize": "true", **({LABEL_TENANT: tenant} if tenant else {})}
    tolerations = [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
        {"key": TAINT_DEDICATED, "operator": "Exists", "effect": "NoSchedule"},
    ]
    container = {
        "name": "sanitize",
        "image": DEFAULT_IMAGE,
        "command": ["/bin/sh", "-c", SANITIZE_SCRIPT],
        "env": [  # the NVIDIA container runtime injects nvidia-smi and every GPU of the host
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"},
        ],
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "scratch", "mountPath": "/host-scratch"}],
    }
    pod = {
        "restartPolicy": "Never",
        "nodeSelector": {HOSTNAME: hostname},
        "tolerations": tolerations,
        "automountServiceAccountToken": False,
        "containers": [container],
        "volumes": [{"name": "scratch", "hostPath": {"path": SCRATCH, "type": "DirectoryOrCreate"}}],
    }
    template = {"metadata": {"labels": {MANAGED_BY_LABEL: MANAGED_BY, **labels}}, "spec": pod}
    spec = {"backoffLimit": 2, "activeDeadlineSeconds": 3600, "template": template}
    return obj("batch/v1", "Job", meta(sanitize_job_name(hostname), SYSTEM_NAMESPACE, labels), spec=spec)
