"""What an allocation should be in its hall's cluster, read from the database: the shapes the renderer takes (the
tenant's, the allocation's as placed, with its workload and what the workload names) and the objects it needs, in
apply order. The driver applies them and reads their status back (``status.py``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.crypto import salted_hmac

from provisioning.domain.capacity_classes import CLASSES, CapacityClass
from provisioning.domain.fleet_document import Rdma
from provisioning.domain.rungs import Rung
from provisioning.domain.workloads import Materials, Workload
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.client import Kube
from provisioning.drivers.kubernetes.recovery import placement_marked
from provisioning.drivers.kubernetes.shapes import AllocationShape, DeviceShape, NodeShape, TenantShape, namespace_for
from provisioning.models import Allocation
from provisioning.services.attestation import attestation_credential
from provisioning.services.preempting import notice_seconds
from provisioning.services.workloads import mounted_volumes, workload_materials
from tenancy.models import Tenant
from tenancy.selectors import endpoint_calls_per_minute


def tenant_shape(tenant: Tenant) -> TenantShape:
    jurisdictions = tenant.residency_jurisdictions or []
    return TenantShape(
        slug=tenant.slug,
        jurisdiction=jurisdictions[0] if tenant.sovereign and len(jurisdictions) == 1 else None,
        gpu_quota_milli=tenant.gpu_quota_milli,
        volume_quota_gb=tenant.volume_quota_gb,
    )


def allocation_shape(allocation: Allocation, materials: Materials | None = None) -> AllocationShape:
    """The allocation as placed now; once released (no active device), as it was last placed. With its workload
    and what the workload names (``materials``: resolved by the services unless given)."""
    devices = list(allocation.devices.filter(active=True).select_related("gpu__node").order_by("pk"))
    if not devices:
        devices = list(allocation.devices.select_related("gpu__node").order_by("pk"))
    nodes: dict[str, NodeShape] = {}
    for device in devices:
        node = device.gpu.node if device.gpu else None
        if node is not None and node.hostname not in nodes:
            nodes[node.hostname] = NodeShape(
                hostname=node.hostname,
                nvlink_domain=node.nvlink_domain,
                cc_tee=(node.cpu_tee or None) if node.cc_mode else None,
                rdma=Rdma.from_json(node.rdma),
            )
    cpu_milli, memory_mib, member_gpus = _host(allocation)
    return AllocationShape(
        id=allocation.pk,
        name=allocation.name,
        tenant=allocation.tenant.slug,
        rung=allocation.rung,
        performance=allocation.performance,
        security=allocation.security,
        gpu_model=allocation.gpu_model.name,
        devices=tuple(
            DeviceShape(
                hostname=d.hostname,
                gpu_index=d.gpu_index,
                gpu_uuid=d.gpu_uuid,
                mig_profile=d.mig_profile or None,
                mig_start=d.mig_start,
                share_milli=d.share_milli,
            )
            for d in devices
        ),
        nodes=tuple(nodes.values()),
        gang_size=int(allocation.spec.get("gang_size") or 1),
        cpu_milli=cpu_milli,
        memory_mib=memory_mib,
        member_gpus=member_gpus,
        side_host=allocation.side_node.hostname if allocation.side_node is not None else None,
        capacity_class=allocation.capacity_class,
        notice_seconds=_notice(allocation),
        workload=Workload.from_json(allocation.workload) if allocation.workload else None,
        materials=materials if materials is not None else workload_materials(allocation),
        hall=allocation.hall.code,
        base_domain=settings.LADDER_BASE_DOMAIN,
        ladder_url=settings.LADDER_PUBLIC_URL,
        keys_seconds=settings.LADDER_GATEWAY_KEYS_SECONDS,
        calls_per_minute=endpoint_calls_per_minute(allocation.tenant),
        attestation=(
            (f"{settings.LADDER_PUBLIC_URL}/api/v1/attestation/{allocation.pk}", attestation_credential(allocation.pk))
            if allocation.rung == Rung.CONFIDENTIAL_VM
            else None
        ),
        slurm_key=_slurm_key(allocation) if allocation.workload_spec.is_slurm else None,
        fabric_partition=allocation.tenant_id,  # its partition key or VLAN derive from it (provisioning.domain.fabric)
        fabric_resource_prefix=settings.LADDER_FABRIC_RESOURCE_PREFIX,
        autoscaler=settings.LADDER_SERVERLESS_AUTOSCALER,
        prometheus_url=settings.LADDER_PROMETHEUS_URL,
        idle_seconds=settings.LADDER_SERVERLESS_IDLE_SECONDS,
    )


def _host(allocation: Allocation) -> tuple[int, int, int]:
    """What each member took of its node's host as its spec keeps it (0 and 0: placed before hosts were placed),
    and a member's whole GPUs (``AllocationShape.host_for``)."""
    spec = allocation.spec
    return int(spec.get("cpu_milli") or 0), int(spec.get("memory_mib") or 0), int(spec.get("gpus") or 0)


def _notice(allocation: Allocation) -> int | None:
    """A preemptible allocation's notice (its pods' grace period); None for the classes never preempted."""
    klass = CapacityClass(allocation.capacity_class)
    return notice_seconds(klass) if CLASSES[klass].preemptible else None


def _slurm_key(allocation: Allocation) -> str:
    """The Slurm cluster's auth/slurm key: derived from the deployment's secret key and the allocation, so every
    render of the cluster carries the same key without storing one (a new SECRET_KEY re-keys running clusters)."""
    return salted_hmac("ladder.slurm-auth-key", str(allocation.pk), algorithm="sha512").hexdigest()


def allocation_namespace(allocation: Allocation) -> str:
    """The namespace holding the allocation's objects (``shapes.namespace_for``)."""
    return namespace_for(allocation.tenant.slug, allocation.workload_spec)


def teardown_shape(allocation: Allocation) -> AllocationShape:
    """The allocation's shape with placeholders for what its workload names: enough to find and delete its
    objects, without reading a secret (which may be gone by then). Its volumes hold no secret: they are as
    mounted."""
    workload = Workload.from_json(allocation.workload) if allocation.workload else None
    volumes = mounted_volumes(allocation, workload)
    return allocation_shape(allocation, materials=render.placeholder_materials(workload, volumes=volumes))


def desired_objects(allocation: Allocation, kube: Kube) -> list[dict[str, Any]]:
    """Everything the allocation needs in its cluster, in apply order: the tenant's namespace set first. Bare
    metal patches the held nodes, keeping the taints others put there (a node's taint list is applied whole), then
    has Metal3 boot the tenant's OS on them (with a workload)."""
    shape = allocation_shape(allocation)
    objects = render.namespace_set(tenant_shape(allocation.tenant))
    if allocation.workload_spec.is_slurm:
        objects += render.namespace_set(tenant_shape(allocation.tenant), slurm=True)
    if allocation.rung == Rung.BARE_METAL:
        taints = {n.hostname: node_taints(kube, n.hostname) for n in shape.nodes}
        return objects + render.bare_metal_node_patches(shape, taints) + render.bare_metal_host_objects(shape)
    # A soft share's claim is the tenant's for its GPU, not the allocation's: applied here, never deleted with it.
    return (
        objects
        + render.share_claims(shape)
        + [placement_marked(obj, shape) for obj in render.allocation_objects(shape)]
    )


def node_taints(kube: Kube, hostname: str) -> list[dict[str, Any]]:
    """The taints a node carries now: a patch of its taint list replaces the whole list, so it keeps these."""
    node = kube.get("v1", "Node", hostname) or {}
    taints: list[dict[str, Any]] = (node.get("spec") or {}).get("taints") or []
    return taints
