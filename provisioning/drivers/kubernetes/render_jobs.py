"""The job rung's gang, by the workload's framework (``Workload.framework``): torchrun in an Indexed Job, an MPIJob
of the Kubeflow mpi-operator whose launcher runs ``mpirun`` over the members, or a KubeRay RayJob whose entrypoint
runs on a Ray cluster made of the members. Pure functions returning plain dicts (no Django, no I/O).

Whatever the framework, the members are the placement engine's gang, and every member pod template is made by
``member_template``: node affinity to the placed hosts, the NVLink clique's node selector and Kueue's topology
request, a DRA claim per member naming exactly the placed GPUs (and the IMEX channel of a ``ComputeDomain`` on
multi-node NVLink), the checkpoint volume. Each framework's object is created suspended with the LocalQueue's
label, so Kueue admits it whole (launcher or head included) or not at all. The pods that hold no GPU (an MPI
launcher, a Ray head, the Ray job's submitter) come from ``cpu_template``.

Every pod template carries the allocation's labels (``ladder.io/allocation`` finds the pods for logs) and
``ladder.io/role``: worker, launcher, head or submitter (the log's source).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.rungs import FRAMEWORKS, Framework, SidePod
from provisioning.domain.workloads import Checkpoint
from provisioning.drivers.kubernetes.manifest import (
    CLIQUE,
    GPU_PRODUCT,
    Obj,
    from_namespace,
    hosts,
    labels_of,
    meta,
    obj,
    own,
    pinned_to,
    queued_labels,
    restricted,
    selector,
)
from provisioning.drivers.kubernetes.render_devices import (
    CLAIM,
    GPU_CLASS,
    NVIDIA_API,
    claim_fields,
    claim_template,
    cpu_quantity,
    device_request,
    gpus_of,
    memory_quantity,
    uuid_selector,
)
from provisioning.drivers.kubernetes.render_fabric import FabricParts, fabric_parts
from provisioning.drivers.kubernetes.render_workload import PodParts, pod_parts, pod_spec, worker_container
from provisioning.drivers.kubernetes.shapes import GPU_PRODUCTS, AllocationShape

REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
ROLE_LABEL = "ladder.io/role"  # worker | launcher | head | submitter

RESTART_FROM_CHECKPOINT = 75  # exit code of a gang member that lost a peer: restart the gang, not a failure
CHECKPOINT_MARKER = "ladder-checkpoint.json"  # in the checkpoint volume: the last complete checkpoint
CHECKPOINT_REPORT = "LADDER_CHECKPOINT"  # printed on stdout once a checkpoint is complete, read by the driver
MEMBER_GRACE_SECONDS = 300  # members checkpoint on SIGTERM

# mpi-operator (kubeflow.org/v2beta1). Its non-root layout, as in its base images (mpioperator/openmpi): the user
# mpiuser (UID 1000) runs sshd on port 2222 from its home's .sshd_config; the operator mounts the job's SSH keys
# at sshAuthMountPath, which must be that user's ~/.ssh.
MPI_API = "kubeflow.org/v2beta1"
MPI_HOME = "/home/mpiuser"
MPI_SSH_DIR = f"{MPI_HOME}/.ssh"
MPI_SSHD = ["/usr/sbin/sshd", "-De", "-f", f"{MPI_HOME}/.sshd_config"]

# KubeRay (ray.io/v1). The operator polls the head's dashboard for the job's status, from its own namespace.
RAY_API = "ray.io/v1"
RAY_DASHBOARD_PORT = 8265
RAY_WORKER_GROUP = "gpus"
KUBERAY_NAMESPACE = "kuberay-system"
KUBERAY_OPERATOR = {"app.kubernetes.io/name": "kuberay-operator"}  # the KubeRay Helm chart's label on its pod


# --- the gang -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gang:
    """What every framework's members share: how many, how many GPUs each, where, and the checkpoint contract."""

    size: int
    per_member: int
    clique: str  # the NVLink clique all members are in ("" when the nodes name none)
    compute_domain: bool  # multi-node NVLink: a ComputeDomain spans the members' nodes
    checkpoint: Checkpoint

    @property
    def gpus(self) -> int:
        return self.size * self.per_member


def gang_of(a: AllocationShape) -> Gang:
    gang, total = a.gang_size, len(a.devices)
    if gang < 1 or total % gang:
        raise ValueError(f"allocation {a.id}: {total} GPUs do not split into {gang} equal members")
    cliques = sorted({n.nvlink_domain for n in a.nodes})
    if len(cliques) > 1:
        raise ValueError(f"allocation {a.id}: a gang stays inside one NVLink domain, placed across {cliques}")
    domain = a.gpu_model in CATALOG and CATALOG[a.gpu_model].multi_node_nvlink and len(hosts(a)) > 1
    return Gang(
        size=gang,
        per_member=total // gang,
        clique=cliques[0] if cliques else "",
        compute_domain=domain,
        checkpoint=(a.workload.checkpoint if a.workload else None) or Checkpoint(),
    )


def checkpoints_name(a: AllocationShape) -> str:
    return f"{a.object_name}-checkpoints"


def channel_name(a: AllocationShape) -> str:
    return f"{a.object_name}-channel"


def member_devices(a: AllocationShape, gang: Gang) -> tuple[list[Obj], list[Obj], Obj, FabricParts]:
    """What every member holds, for every framework (Slurm's slurmd included): the objects (the ComputeDomain on
    multi-node NVLink, the fabric's NetworkAttachmentDefinitions, the members' claim template), the pod's
    ``resourceClaims``, the container's ``resources`` and the fabric's parts for the pod.

    Each member's claim takes ``per_member`` GPUs among exactly the gang's placed UUIDs (a pod's devices are on its
    node), so together the members hold the gang's own GPUs, each once; with a ComputeDomain each also claims its
    IMEX channel; on RDMA nodes each takes a VF per rail (requests equal limits, as for any extended resource)."""
    claims, resources = claim_fields(a, gang.per_member)
    objects = []
    if gang.compute_domain:
        claims.append({"name": "channel", "resourceClaimTemplateName": channel_name(a)})
        resources["claims"].append({"name": "channel"})
        # numNodes 0: the driver's default with IMEX daemons found by DNS name; the workload waits for its peers.
        channel = {"resourceClaimTemplate": {"name": channel_name(a)}, "allocationMode": "Single"}
        objects.append(obj(NVIDIA_API, "ComputeDomain", own(a), spec={"numNodes": 0, "channel": channel}))
    fabric = fabric_parts(a, gang.per_member)
    for kind in ("requests", "limits"):
        resources[kind] = {**resources.get(kind, {}), **fabric.resources}
    uuids = [d.gpu_uuid for d in gpus_of(a)]
    devices = claim_template(a, [device_request(CLAIM, GPU_CLASS, [uuid_selector(uuids)], gang.per_member)])
    return [*objects, *fabric.objects, devices], claims, resources, fabric


def member_node_selector(a: AllocationShape, gang: Gang) -> dict[str, str]:
    """The GPU product label lets Kueue pick the model's ResourceFlavor (hostnames alone do not); the clique keeps
    the member inside the gang's NVLink domain."""
    return {
        **({GPU_PRODUCT: GPU_PRODUCTS[a.gpu_model][0]} if a.gpu_model in GPU_PRODUCTS else {}),
        **({CLIQUE: gang.clique} if gang.clique else {}),
    }


def gang_objects(a: AllocationShape, gang: Gang) -> list[Obj]:
    """The checkpoint volume and what the members hold (``member_devices``)."""
    # Every member writes its shards from its own node: ReadWriteMany, from the cluster's default class.
    pvc = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": f"{64 * gang.gpus}Gi"}}}
    held, _, _, _ = member_devices(a, gang)
    return [obj("v1", "PersistentVolumeClaim", own(a, checkpoints_name(a)), spec=pvc), *held]


def checkpoint_env(gang: Gang) -> list[Obj]:
    """The checkpoint contract (docs/kubernetes.md, "Fault recovery"): where to save and how often, the marker
    naming the last complete checkpoint to resume from, the report line that tells Ladder, which bills a fault up
    to it, and the exit code of a member that lost a peer."""
    path = gang.checkpoint.path
    env = {
        "LADDER_CHECKPOINT_DIR": path,
        "LADDER_CHECKPOINT_INTERVAL_S": str(gang.checkpoint.interval_s),
        "LADDER_CHECKPOINT_MARKER": f"{path.rstrip('/')}/{CHECKPOINT_MARKER}",
        "LADDER_CHECKPOINT_REPORT": CHECKPOINT_REPORT,
        "LADDER_RESTART_EXIT_CODE": str(RESTART_FROM_CHECKPOINT),
    }
    return [{"name": k, "value": v} for k, v in env.items()]


def _checkpoint_volume(a: AllocationShape, gang: Gang) -> tuple[Obj, Obj]:
    volume = {"name": "checkpoints", "persistentVolumeClaim": {"claimName": checkpoints_name(a)}}
    return volume, {"name": "checkpoints", "mountPath": gang.checkpoint.path}


def _parts(a: AllocationShape, run: list[str] | None) -> PodParts:
    """The workload's pod parts; with ``run``, the container runs that instead of the workload's command and args
    (an empty list: the image's own entrypoint, which the framework's operator fills in)."""
    parts = pod_parts(a)
    if run is None:
        return parts
    return replace(parts, command=list(run) or None, args=None)


def member_template(
    a: AllocationShape,
    gang: Gang,
    *,
    env: list[Obj] | None = None,
    run: list[str] | None = None,
    restart: str = "Never",
    **pod_extra: Any,
) -> Obj:
    """A gang member's pod template, for every framework: the one place a member's placement, devices, network
    and environment are set. Node affinity pins it to the gang's hosts; the GPU product label lets Kueue pick this
    model's ResourceFlavor (hostnames alone do not); the clique's node selector and Kueue's required topology keep
    the gang inside its NVLink clique. It claims ``per_member`` of the placed GPUs through the claim template,
    and the IMEX channel where a ComputeDomain spans the gang. On RDMA nodes it takes a VF per rail, its
    interfaces and NCCL's environment (``render_fabric.fabric_parts``). ``env`` comes after the checkpoint
    contract and before the fabric's and the workload's own variables; ``run`` replaces the workload's command
    (``_parts``)."""
    _, claims, resources, fabric = member_devices(a, gang)
    parts = _parts(a, run)
    volume, mount = _checkpoint_volume(a, gang)
    env = [*checkpoint_env(gang), *(env or []), *fabric.env]
    container = worker_container(a, parts, resources, env=env, mounts=[mount])
    spec = pod_spec(
        parts,
        [container],
        restart,
        volumes=[volume],
        affinity=pinned_to(hosts(a)),
        nodeSelector=member_node_selector(a, gang) or None,
        terminationGracePeriodSeconds=MEMBER_GRACE_SECONDS,
        resourceClaims=claims,
        **pod_extra,
    )
    annotations = {REQUIRED_TOPOLOGY: CLIQUE, **fabric.annotations}
    metadata = {"labels": {**labels_of(a), ROLE_LABEL: "worker"}, "annotations": annotations}
    return {"metadata": metadata, "spec": spec}


def cpu_template(
    a: AllocationShape,
    pod: SidePod,
    container: Obj,
    restart: str,
    *,
    volumes: list[Obj] | None = None,
) -> Obj:
    """A pod of the gang that holds no GPU (an MPI launcher, a Ray head, the Ray job's submitter): the workload's
    image and pull credentials, at Pod Security "restricted", counted by Kueue in the same admission as the
    members, requesting what the table of rungs says of it (``SidePod``) and pinned to the node placement took
    that for (``AllocationShape.side_host``; a job placed before its side pods were placed: where Kueue puts it,
    on a node of the model's ResourceFlavor). It needs no NVLink clique."""
    parts = pod_parts(a)
    base = PodParts(image=parts.image, pull_secrets=parts.pull_secrets)
    full = {"securityContext": restricted(), "image": base.image, **container, "resources": side_resources(pod)}
    spec = pod_spec(base, [full], restart, volumes=volumes)
    if a.side_host is not None:
        spec["affinity"] = pinned_to([a.side_host])
    return {"metadata": {"labels": {**labels_of(a), ROLE_LABEL: pod.role}}, "spec": spec}


def side_pod(framework: Framework, role: str) -> SidePod:
    return FRAMEWORKS[framework].side_pod(role)


def side_resources(pod: SidePod) -> Obj:
    """Exactly what placement took for the pod; its memory is its limit too."""
    memory = memory_quantity(pod.memory_mib)
    return {"requests": {"cpu": cpu_quantity(pod.cpu_milli), "memory": memory}, "limits": {"memory": memory}}


def _queued(a: AllocationShape) -> Obj:
    """The framework object's metadata: the allocation's labels, the LocalQueue Kueue admits it from and its
    class's priority."""
    return meta(a.object_name, a.namespace, {**labels_of(a), **queued_labels(a)})


def _command(a: AllocationShape, framework: str) -> list[str]:
    w = a.workload
    if w is None or not w.command:
        raise ValueError(f"allocation {a.id}: an {framework} job needs the workload's command")
    return [*w.command, *w.args]


# --- torchrun: an Indexed Job ---------------------------------------------------------------------------------


def torchrun_job(a: AllocationShape) -> list[Obj]:
    """A checkpoint PVC, a headless Service for rank discovery, and an Indexed Job of ``gang_size`` pods queued in
    Kueue (admitted all together, inside one NVLink clique).

    A pod lost to a node failure or a drain (condition DisruptionTarget) does not count against ``backoffLimit``
    and is recreated; its peers, having lost the NCCL world, exit with ``RESTART_FROM_CHECKPOINT`` and are
    recreated too (also not counted). The gang resumes from ``$LADDER_CHECKPOINT_DIR`` (the workload's
    ``checkpoint.path``, else /checkpoints) and saves every ``$LADDER_CHECKPOINT_INTERVAL_S`` seconds; only other
    failures count. Devices and placement: ``member_template``.
    """
    gang, name = gang_of(a), a.object_name
    env = {
        "MASTER_ADDR": f"{name}-0.{name}",  # index 0's hostname under the headless Service (spec.subdomain)
        "WORLD_SIZE": str(gang.size),
        "NPROC_PER_NODE": str(gang.per_member),
    }
    # restartPolicy Never: podFailurePolicy requires it.
    template = member_template(a, gang, env=[{"name": k, "value": v} for k, v in env.items()], subdomain=name)
    restart = {"containerName": "worker", "operator": "In", "values": [RESTART_FROM_CHECKPOINT]}
    failure_policy = [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "Ignore", "onExitCodes": restart},
    ]
    job = {
        "parallelism": gang.size,
        "completions": gang.size,
        "completionMode": "Indexed",
        "suspend": True,  # Kueue unsuspends it on admission
        "backoffLimit": gang.size,
        "podFailurePolicy": {"rules": failure_policy},
        "template": template,
    }
    # publishNotReadyAddresses: members rendezvous before any of them is ready.
    ranks = {"clusterIP": "None", "selector": selector(a), "publishNotReadyAddresses": True}
    pvc, *rest = gang_objects(a, gang)
    return [pvc, obj("v1", "Service", own(a), spec=ranks), *rest, obj("batch/v1", "Job", _queued(a), spec=job)]


# --- MPI: an MPIJob (Kubeflow mpi-operator) -------------------------------------------------------------------


def mpi_job(a: AllocationShape) -> list[Obj]:
    """An MPIJob: ``gang_size`` workers (the members, each running sshd as the image's non-root user) and one
    launcher, which runs ``mpirun -np <all the gang's GPUs>`` with the workload's command and args, one rank per
    GPU (``slotsPerWorker`` = GPUs per member, in the hostfile the operator writes).

    mpirun starts the ranks through sshd, so they do not inherit the worker container's environment: the launcher
    has the same variables as a member (the checkpoint contract, the workload's variables and secrets) and
    forwards each by name (OpenMPI's ``-x``), whatever ``member_template`` puts there. The operator makes the
    SSH keys and mounts them at ``sshAuthMountPath``, the image user's ~/.ssh (Pod Security "restricted"
    forbids root). The launcher is made once the workers are ready; a failed launcher is retried up to
    ``backoffLimit`` times; once it completes, the workers still running are deleted. Kueue admits the whole
    MPIJob (``runPolicy.suspend``), launcher and workers together."""
    gang = gang_of(a)
    program = _command(a, Framework.MPI)
    worker = member_template(a, gang, run=MPI_SSHD)
    env = worker["spec"]["containers"][0].get("env") or []
    forwarded = [arg for name in dict.fromkeys(e["name"] for e in env) for arg in ("-x", name)]
    launcher = {
        "name": "launcher",
        "command": ["mpirun"],
        "args": ["-np", str(gang.gpus), "--bind-to", "none", *forwarded, *program],
        "env": env,
    }
    spec = {
        "slotsPerWorker": gang.per_member,
        "sshAuthMountPath": MPI_SSH_DIR,
        "mpiImplementation": "OpenMPI",
        "launcherCreationPolicy": "WaitForWorkersReady",
        "runPolicy": {"suspend": True, "cleanPodPolicy": "Running", "backoffLimit": gang.size},
        "mpiReplicaSpecs": {
            "Launcher": {
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": cpu_template(a, side_pod(Framework.MPI, "launcher"), launcher, "OnFailure"),
            },
            "Worker": {"replicas": gang.size, "restartPolicy": "Never", "template": worker},
        },
    }
    return [*gang_objects(a, gang), obj(MPI_API, "MPIJob", _queued(a), spec=spec)]


# --- Ray: a RayJob (KubeRay) ----------------------------------------------------------------------------------


def ray_job(a: AllocationShape) -> list[Obj]:
    """A RayJob: a Ray cluster of a CPU-only head and one worker group of ``gang_size`` members (min = max =
    replicas: a Ray placement group over the gang needs all of them, and Kueue admits no autoscaling), and the
    workload's command and args, shell-quoted, as the entrypoint. KubeRay's submitter pod runs ``ray job submit``
    against the head once the cluster is up, and follows the job's output (so its log is the job's). Ray runs the
    entrypoint's driver on the head, so the head has the workload's variables, the checkpoint volume and the
    tenant's volumes too (Ray Train's storage path must be reachable from the driver and every worker).

    Kueue admits the RayJob whole (``suspend``): head, workers and submitter together. ``shutdownAfterJobFinishes``
    deletes the Ray cluster once the job ends. The head, the workers and the submitter talk inside the namespace
    (GCS 6379, the dashboard 8265, the object and node managers' ports), which the namespace's own NetworkPolicy
    allows; the KubeRay operator reads the job's status from the head's dashboard, which
    ``ldr-<id>-ray-dashboard`` lets in from the operator's namespace only."""
    gang, name = gang_of(a), a.object_name
    entrypoint = shlex.join(_command(a, Framework.RAY))
    worker = member_template(a, gang, run=[], restart="Never")
    member = worker["spec"]["containers"][0]
    volume, mount = _checkpoint_volume(a, gang)
    parts = pod_parts(a)
    # The driver runs on the head: its secret files and the tenant's volumes too (a dataset the job reads).
    shared = {v["name"] for v in parts.volumes if v["name"] == "secret-files" or "persistentVolumeClaim" in v}
    head_container = {
        "name": "ray-head",
        "env": member.get("env") or [],
        "volumeMounts": [mount, *(m for m in parts.mounts if m["name"] in shared)],
    }
    head_volumes = [volume, *(v for v in parts.volumes if v["name"] in shared)]
    head = cpu_template(a, side_pod(Framework.RAY, "head"), head_container, "Always", volumes=head_volumes)
    # The dashboard on the pod's own interfaces: the submitter and the operator reach it through the head Service.
    head_params = {"dashboard-host": "0.0.0.0", "num-gpus": "0"}  # noqa: S104
    submitter = {"name": "ray-job-submitter"}
    cluster = {
        "enableInTreeAutoscaling": False,
        "headGroupSpec": {"rayStartParams": head_params, "template": head},
        "workerGroupSpecs": [
            {
                "groupName": RAY_WORKER_GROUP,
                "replicas": gang.size,
                "minReplicas": gang.size,
                "maxReplicas": gang.size,
                "rayStartParams": {"num-gpus": str(gang.per_member)},
                "template": worker,
            }
        ],
    }
    spec = {
        "entrypoint": entrypoint,
        "suspend": True,  # Kueue unsuspends it on admission
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": 0,  # the GPUs go back as soon as the job ends
        "submissionMode": "K8sJobMode",
        "submitterPodTemplate": cpu_template(a, side_pod(Framework.RAY, "submitter"), submitter, "Never"),
        "rayClusterSpec": cluster,
    }
    dashboard = {
        "podSelector": {"matchLabels": {**selector(a), ROLE_LABEL: "head"}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [{**from_namespace(KUBERAY_NAMESPACE), "podSelector": {"matchLabels": KUBERAY_OPERATOR}}],
                "ports": [{"protocol": "TCP", "port": RAY_DASHBOARD_PORT}],
            }
        ],
    }
    return [
        *gang_objects(a, gang),
        obj("networking.k8s.io/v1", "NetworkPolicy", own(a, f"{name}-ray-dashboard"), spec=dashboard),
        obj(RAY_API, "RayJob", _queued(a), spec=spec),
    ]


# --- by framework ---------------------------------------------------------------------------------------------

JOB_RENDERERS: dict[Framework, Callable[[AllocationShape], list[Obj]]] = {
    Framework.TORCHRUN: torchrun_job,
    Framework.MPI: mpi_job,
    Framework.RAY: ray_job,
}  # and Framework.SLURM: render_slurm.slurm_cluster, which builds on this module (render.GANGS adds it)
# What Kueue's Configuration enables (``integrations.frameworks``) for the objects above.
KUEUE_FRAMEWORKS = ("batch/job", "kubeflow.org/mpijob", "ray.io/rayjob")
