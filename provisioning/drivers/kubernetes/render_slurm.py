"""A Slurm cluster on the job rung, rendered for Slinky's slurm-operator (``slinky.slurm.net/v1beta1``): its
compute nodes are exactly the gang the engine placed. Pure functions returning plain dicts (no Django, no I/O).

What one allocation gets, in the tenant's ``ladder-<slug>-slurm`` namespace (docs/jobs.md):

- ``ldr-<id>-slurm-auth``: the Secret holding the cluster's ``auth/slurm`` key (slurmctld, slurmd and the login
  node's sackd authenticate each other with it) and its ``auth/jwt`` key; ``ldr-<id>-sssd``: the login node's
  ``sssd.conf`` (local users only); the ConfigMap ``ldr-<id>-slurm-conf`` with ``gres.conf``, which slurmctld
  serves to every node (configless).
- a ``Controller`` (slurmctld; CPU only, on any node) with its state on a small volume;
- a ``NodeSet`` of ``gang_size`` slurmd pods, one per member (``slurmd_template``): pinned to the gang's hosts,
  inside its NVLink clique, each claiming ``per_member`` GPUs among exactly the placed UUIDs, declared to Slurm as
  ``gpu`` GRES, and queued in Kueue as one pod group, admitted all or nothing;
- a ``LoginSet`` of one login pod (sshd as root, the tenant's SSH keys, sackd), which the SSH gateway reaches;
- on a multi-node NVLink model, a ``ComputeDomain`` and an IMEX channel per member, as for torchrun gangs.

No ``RestApi`` (slurmrestd) and no ``Accounting`` (slurmdbd): the cluster is one tenant's, sized once, and Ladder
meters it (docs/jobs.md says what that costs: ``sacct`` history and fair share between the tenant's users).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from provisioning.domain.rungs import Framework
from provisioning.drivers.kubernetes.manifest import (
    CLIQUE,
    Obj,
    hosts,
    labels_of,
    obj,
    own,
    pinned_to,
    queued_labels,
    secret,
)
from provisioning.drivers.kubernetes.render_jobs import (
    REQUIRED_TOPOLOGY,
    gang_of,
    member_devices,
    member_node_selector,
    side_pod,
    side_resources,
)
from provisioning.drivers.kubernetes.render_workload import PodParts, pod_parts
from provisioning.drivers.kubernetes.shapes import DEFAULT_IMAGE, AllocationShape

SLINKY_API = "slinky.slurm.net/v1beta1"
SLURM_VERSION = "25.05"
SLURMD_IMAGE = f"ghcr.io/slinkyproject/slurmd:{SLURM_VERSION}-ubuntu24.04"
SLURMCTLD_IMAGE = f"ghcr.io/slinkyproject/slurmctld:{SLURM_VERSION}-ubuntu24.04"
LOGIN_IMAGE = f"ghcr.io/slinkyproject/login:{SLURM_VERSION}-ubuntu24.04"
LABEL_SLURM_ROLE = "ladder.io/slurm-role"  # on each pod: slurmctld, slurmd or login (the driver reads them)
ROLES = ("slurmctld", "slurmd", "login")
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"
# Kueue's integration that admits the slurmd pods (made by Slinky's NodeSet) as one plain-pod group.
SLURM_KUEUE_FRAMEWORK = "pod"
SLURM_KEY = "slurm.key"
JWT_KEY = "jwt.key"
SSSD_KEY = "sssd.conf"
LOGIN_USER = "root"  # Slinky's login node authorizes keys for root only (``rootSshAuthorizedKeys``)
LOGIN_PORT = 22  # the login container's sshd (Slinky's fixed port)
# Local users only: the login node has no directory; the tenant logs in as root and submits as root.
SSSD_CONF = """[sssd]
config_file_version = 2
services = nss, pam
domains = local

[domain/local]
id_provider = proxy
proxy_lib_name = files
auth_provider = none
"""
GRES_CONF = "AutoDetect=nvml\n"  # slurmd finds the GPUs its pod holds (the claim's devices only) through NVML


def auth_name(a: AllocationShape) -> str:
    return f"{a.object_name}-slurm-auth"


def sssd_name(a: AllocationShape) -> str:
    return f"{a.object_name}-sssd"


def conf_name(a: AllocationShape) -> str:
    return f"{a.object_name}-slurm-conf"


def role_labels(a: AllocationShape, role: str) -> dict[str, str]:
    return {**labels_of(a), LABEL_SLURM_ROLE: role}


@dataclass
class SlurmdPod:
    """The slurmd member's pod as the NodeSet takes it: the ``slurmd`` container's fields (merged by the operator
    into its own slurmd container), the pod template's metadata and spec, and the objects it needs. What another
    part adds to every gang member (a fabric's networks, its env and device resources) goes in here, once."""

    container: Obj
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: Obj
    objects: list[Obj] = field(default_factory=list)


def _workload_parts(a: AllocationShape) -> PodParts:
    """What the tenant's workload adds to a slurmd pod (its variables, secrets, volumes, pull credentials). The
    image defaults to Slinky's slurmd, not the stock CUDA image, which has no slurmd."""
    parts = pod_parts(a)
    if parts.image == DEFAULT_IMAGE:
        parts.image = SLURMD_IMAGE
    return parts


def slurmd_template(a: AllocationShape) -> SlurmdPod:
    """One gang member: a slurmd pod on one of the gang's hosts with ``per_member`` of its placed GPUs.

    Devices, as for a torchrun gang: the template names the claim template, so each member gets a claim of its own
    for ``per_member`` GPUs among the gang's placed UUIDs; on multi-node NVLink, also the IMEX channel of the
    gang's ComputeDomain. The pods stay on the gang's hosts (node affinity) inside its NVLink clique (node selector
    and Kueue's required topology). slurmd is told its GRES (``Gres=gpu:<n>``) and finds the devices by NVML.

    Security: Slinky builds slurmd privileged with BPF, NET_ADMIN, SYS_ADMIN and SYS_NICE (cgroup and device
    containment of Slurm's jobs). Ladder turns ``privileged`` off: a privileged container sees every GPU of its
    host, not the ones its claim holds. The capabilities stay (the operator adds them; docs/jobs.md)."""
    gang = gang_of(a)
    objects, claims, resources, fabric = member_devices(a, gang)
    parts = _workload_parts(a)
    container: Obj = {
        "image": parts.image,
        "resources": resources,
        "securityContext": {"privileged": False, "seccompProfile": {"type": "RuntimeDefault"}},
    }
    if parts.env or fabric.env:
        container["env"] = [*fabric.env, *parts.env]
    if parts.mounts:
        container["volumeMounts"] = parts.mounts
    node_selector = member_node_selector(a, gang)
    spec: Obj = {
        "affinity": pinned_to(hosts(a)),
        "resourceClaims": claims,
        "automountServiceAccountToken": False,
        # Slurm drains a node on SIGTERM; a job step gets this long to be requeued before the pod goes.
        "terminationGracePeriodSeconds": 300,
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    if parts.volumes:
        spec["volumes"] = parts.volumes
    if parts.init_containers:
        spec["initContainers"] = parts.init_containers
    if parts.pull_secrets:
        spec["imagePullSecrets"] = parts.pull_secrets
    # Kueue's pod integration: the members form one pod group, admitted once all of them exist and fit.
    labels = {**role_labels(a, "slurmd"), **queued_labels(a), POD_GROUP_LABEL: a.object_name}
    annotations = {POD_GROUP_COUNT: str(gang.size), REQUIRED_TOPOLOGY: CLIQUE, **fabric.annotations}
    return SlurmdPod(container=container, labels=labels, annotations=annotations, spec=spec, objects=objects)


def _keys(a: AllocationShape) -> dict[str, str]:
    if not a.slurm_key:
        raise ValueError(f"allocation {a.id}: a Slurm cluster needs its auth key, and none was given")
    # Two keys from the one secret: auth/slurm's and auth/jwt's must differ.
    jwt = hashlib.sha256(f"jwt:{a.slurm_key}".encode()).hexdigest()
    return {SLURM_KEY: a.slurm_key, JWT_KEY: jwt}


def slurm_cluster(a: AllocationShape) -> list[Obj]:
    """The Slurm cluster's objects in apply order: Secrets and configuration first, then the Controller, the gang's
    NodeSet (with its claim template and ComputeDomain) and the LoginSet."""
    name = a.object_name
    gang = gang_of(a)
    member = slurmd_template(a)
    keys = [k for k in a.materials.ssh_keys if not k.startswith("cert-authority")]
    pinned = {"affinity": pinned_to([a.side_host])} if a.side_host is not None else {}
    controller = {
        "clusterName": name.replace("-", "_"),
        "slurmKeyRef": {"name": auth_name(a), "key": SLURM_KEY},
        "jwtKeyRef": {"name": auth_name(a), "key": JWT_KEY},
        "configFileRefs": [{"name": conf_name(a)}],
        "extraConf": "GresTypes=gpu",
        "persistence": {
            "enabled": True,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "4Gi"}},
        },
        "slurmctld": {"image": SLURMCTLD_IMAGE, "resources": side_resources(side_pod(Framework.SLURM, "slurmctld"))},
        "template": {
            "metadata": {"labels": role_labels(a, "slurmctld")},
            "spec": {"automountServiceAccountToken": False, **pinned},
        },
    }
    nodeset = {
        "controllerRef": {"name": name},
        "replicas": gang.size,  # exactly the gang: Ladder never scales it
        "scalingMode": "StatefulSet",
        "extraConf": f"Gres=gpu:{gang.per_member}",
        "partition": {"enabled": True, "config": "Default=YES MaxTime=UNLIMITED State=UP"},
        "slurmd": member.container,
        "template": {"metadata": {"labels": member.labels, "annotations": member.annotations}, "spec": member.spec},
    }
    # The tenant's volumes on the login node too: its users prepare and read the data their jobs use there.
    claims = [v for v in member.spec.get("volumes") or [] if "persistentVolumeClaim" in v]
    mounts = [m for m in member.container.get("volumeMounts") or [] if m["name"] in {v["name"] for v in claims}]
    login = {
        "controllerRef": {"name": name},
        "replicas": 1,
        "rootSshAuthorizedKeys": "".join(f"{k}\n" for k in keys),
        "sssdConfRef": {"name": sssd_name(a), "key": SSSD_KEY},
        "login": {
            "image": LOGIN_IMAGE,
            "resources": side_resources(side_pod(Framework.SLURM, "login")),
            **({"volumeMounts": mounts} if mounts else {}),
        },
        "template": {
            "metadata": {"labels": role_labels(a, "login")},
            "spec": {"automountServiceAccountToken": False, **pinned, **({"volumes": claims} if claims else {})},
        },
    }
    return [
        secret(own(a, auth_name(a)), _keys(a)),
        secret(own(a, sssd_name(a)), {SSSD_KEY: SSSD_CONF}),
        obj("v1", "ConfigMap", own(a, conf_name(a)), data={"gres.conf": GRES_CONF}),
        obj(SLINKY_API, "Controller", own(a), spec=controller),
        *member.objects,
        obj(SLINKY_API, "NodeSet", own(a), spec=nodeset),
        obj(SLINKY_API, "LoginSet", own(a), spec=login),
    ]
