"""A hall's Kubernetes cluster: register it (credentials sealed at rest), connect to it, check it, import its
nodes, diagnose one of them."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from kubernetes.client.exceptions import ApiException

from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, Invalid, ServiceError
from provisioning.domain.fleet_document import Rdma
from provisioning.drivers.kubernetes.client import ClusterUnavailable, Kube
from provisioning.drivers.kubernetes.credentials import CredentialsError, seal, unseal
from provisioning.drivers.kubernetes.diagnosis import diagnose_node
from provisioning.drivers.kubernetes.node_reading import DRA_DRIVER, NIC_DRA_DRIVER
from provisioning.drivers.kubernetes.sync import NodeImport, fleet_sync
from provisioning.models import Cluster, ClusterHealth, Hall, Node
from provisioning.services.fleet import FleetLoadResult


@transaction.atomic
def cluster_register(*, name: str, hall: Hall, api_server: str, credentials: dict[str, Any], actor: Actor) -> Cluster:
    """Register (or re-register) the Kubernetes cluster of a hall; its credentials are sealed at rest and never
    audited or shown again."""

    if not credentials.get("kubeconfig") and not credentials.get("token"):
        raise Invalid("credentials_required", "Give a kubeconfig, or a token (and the CA certificate).")
    other = Cluster.objects.filter(hall=hall).exclude(name=name).first()
    if other is not None:
        raise Conflict("hall_has_cluster", f"Hall {hall.code} already has cluster {other.name}.", field="hall")
    if Cluster.objects.filter(name=name).exclude(hall=hall).exists():
        raise Conflict("cluster_name_taken", f"A cluster named {name} serves another hall.", field="name")
    cluster, created = Cluster.objects.update_or_create(
        name=name,
        defaults={
            "hall": hall,
            "api_server": api_server,
            "credentials": seal(credentials, cluster=name),
            "health": ClusterHealth.UNKNOWN,
            "health_detail": "",
        },
    )
    audit_record(
        actor=actor,
        action="cluster.registered" if created else "cluster.updated",
        target_type="cluster",
        target_id=cluster.pk,
        data={"name": name, "hall": hall.code, "api_server": api_server, "credentials": sorted(credentials)},
    )
    return cluster


def kube_for(hall: Hall) -> Kube:
    return kube_for_cluster(Cluster.objects.get(hall=hall))


def kube_for_cluster(cluster: Cluster) -> Kube:
    return Kube.connect(api_server=cluster.api_server, credentials=unseal(cluster.credentials, cluster=cluster.name))


def cluster_check(cluster: Cluster) -> Cluster:
    """Ask the cluster its version and its nodes; record health (reachable, authorized) and when."""
    try:
        kube = kube_for_cluster(cluster)
        cluster.server_version = kube.version()
        kube.list("v1", "Node")
        cluster.health, cluster.health_detail = ClusterHealth.HEALTHY, ""
    except ClusterUnavailable as error:
        cluster.health, cluster.health_detail = ClusterHealth.UNREACHABLE, str(error)[:500]
    except ApiException as error:
        health = ClusterHealth.UNAUTHORIZED if error.status in (401, 403) else ClusterHealth.UNREACHABLE
        cluster.health, cluster.health_detail = health, f"{error.status} {error.reason}"[:500]
    cluster.checked_at = timezone.now()
    Cluster.objects.filter(pk=cluster.pk).update(
        health=cluster.health,
        health_detail=cluster.health_detail,
        server_version=cluster.server_version,
        checked_at=cluster.checked_at,
    )
    return cluster


def cluster_sync(*, cluster: Cluster, actor: Actor) -> tuple[FleetLoadResult, NodeImport]:
    """Import the cluster's GPU nodes into its hall (the API's ``sync`` and ``manage.py fleet_sync``)."""
    try:
        objects = kube_for_cluster(cluster).list("v1", "Node")
    except (ClusterUnavailable, ApiException, CredentialsError) as error:
        raise ServiceError("cluster_unavailable", f"The cluster did not answer: {error}", status=503) from None
    return fleet_sync(cluster=cluster, objects=objects, actor=actor)


def node_diagnosis(node: Node) -> dict[str, Any]:
    """Diagnose a fleet node from its Kubernetes Node object, layer by layer."""
    cluster = Cluster.objects.filter(hall_id=node.hall_id).first()
    if cluster is None:
        raise Conflict("no_cluster", f"Hall {node.hall.code} has no Kubernetes cluster registered.")
    try:
        kube = kube_for_cluster(cluster)
        found = kube.get("v1", "Node", node.hostname)
        rdma = Rdma.from_json(node.rdma)
        # The NVIDIA DRA driver's devices for the node, when it serves the node instead of the device plugin, and
        # DraNet's RDMA NICs when the fleet says the node has some.
        drivers = (DRA_DRIVER, NIC_DRA_DRIVER) if rdma is not None else (DRA_DRIVER,)
        slices = [
            found_slice
            for driver in (drivers if found is not None else ())
            for found_slice in kube.list(
                "resource.k8s.io/v1", "ResourceSlice", fields={"spec.nodeName": node.hostname, "spec.driver": driver}
            )
        ]
    except (ClusterUnavailable, ApiException) as error:
        raise ServiceError("cluster_unavailable", f"The cluster did not answer: {error}", status=503) from None
    if found is None:
        return {
            "ok": False,
            "layer": "node",
            "node": node.hostname,
            "evidence": {},
            "summary": f"cluster {cluster.name} has no Node named {node.hostname}",
            "checks": [],
        }
    return diagnose_node(found, expected_gpus=node.gpu_count, resource_slices=slices, rdma=rdma).as_dict()
