"""Operators' Kubernetes clusters (``/api/v1/ops/clusters``): register one per hall (credentials sealed at rest,
never shown again), test it, import its nodes; and a node's diagnosis (``/api/v1/ops/nodes/{id}/diagnosis``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from kubernetes.client.exceptions import ApiException
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import StaffViewSet
from api.problems import Problem
from api.serializers import StrictSerializer, refuse_body
from provisioning import services
from provisioning.kubernetes.client import ClusterUnavailable
from provisioning.kubernetes.diagnosis import diagnose_node
from provisioning.kubernetes.driver import cluster_check, kube_for_cluster
from provisioning.kubernetes.sync import fleet_sync
from provisioning.models import Cluster, Hall, Node


class ClusterSerializer(serializers.ModelSerializer[Cluster]):
    hall: serializers.SlugRelatedField[Hall] = serializers.SlugRelatedField(slug_field="code", read_only=True)

    class Meta:
        model = Cluster
        fields = [
            "name",
            "hall",
            "api_server",
            "health",
            "health_detail",
            "server_version",
            "checked_at",
            "reconciled_at",
            "created_at",
        ]
        read_only_fields = fields


class ClusterRegisterSerializer(StrictSerializer):
    name = serializers.SlugField(max_length=63)
    hall = serializers.SlugRelatedField(slug_field="code", queryset=Hall.objects.all())
    api_server = serializers.URLField(max_length=300)
    kubeconfig = serializers.CharField(required=False, write_only=True, help_text="A kubeconfig (YAML).")
    token = serializers.CharField(required=False, write_only=True, help_text="A service account token.")
    ca_cert = serializers.CharField(required=False, write_only=True, help_text="The API server's CA (PEM).")


class SyncSerializer(serializers.Serializer[Any]):
    nodes = serializers.IntegerField(help_text="GPU nodes imported.")
    skipped = serializers.ListField(child=serializers.CharField(), help_text="Node objects not imported, and why.")


def _unavailable(error: Exception) -> Problem:
    return Problem(503, "cluster_unavailable", f"The cluster did not answer: {error}")


class ClusterViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, StaffViewSet):
    queryset = Cluster.objects.select_related("hall")
    serializer_class = ClusterSerializer
    lookup_field = "name"
    required_permission = "provisioning.view_cluster"
    action_permissions = {
        "create": "provisioning.add_cluster",
        "test": "provisioning.change_cluster",
        "sync": "provisioning.add_node",
    }

    @extend_schema(request=ClusterRegisterSerializer, responses={201: ClusterSerializer})
    def create(self, request: Request) -> Response:
        """Register (or re-register) a hall's cluster with a kubeconfig, or a token and CA."""
        body = ClusterRegisterSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        credentials = {k: data[k] for k in ("kubeconfig", "token", "ca_cert") if data.get(k)}
        cluster = services.cluster_register(
            name=data["name"],
            hall=data["hall"],
            api_server=data["api_server"],
            credentials=credentials,
            actor=self.caller.actor,
        )
        return Response(ClusterSerializer(cluster).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=ClusterSerializer)
    @action(detail=True, methods=["post"])
    def test(self, request: Request, name: str) -> Response:
        """Reach the cluster with its credentials and record its health."""
        refuse_body(request)
        return Response(ClusterSerializer(cluster_check(self.get_object())).data)

    @extend_schema(request=None, responses=SyncSerializer)
    @action(detail=True, methods=["post"])
    def sync(self, request: Request, name: str) -> Response:
        """Import the cluster's GPU nodes into its hall (as ``manage.py fleet_sync``)."""
        refuse_body(request)
        cluster = self.get_object()
        try:
            objects = kube_for_cluster(cluster).list("v1", "Node")
        except ClusterUnavailable as error:
            raise _unavailable(error) from None
        _, imported = fleet_sync(cluster=cluster, objects=objects, actor=self.caller.actor)
        return Response(SyncSerializer({"nodes": len(imported.nodes), "skipped": imported.skipped}).data)


def node_diagnosis(node: Node) -> dict[str, Any]:
    """Diagnose a fleet node from its Kubernetes Node object, layer by layer."""
    cluster = Cluster.objects.filter(hall_id=node.hall_id).first()
    if cluster is None:
        raise Problem(409, "no_cluster", f"Hall {node.hall.code} has no Kubernetes cluster registered.")
    try:
        found = kube_for_cluster(cluster).get("v1", "Node", node.hostname)
    except (ClusterUnavailable, ApiException) as error:
        raise _unavailable(error) from None
    if found is None:
        return {
            "ok": False,
            "layer": "node",
            "node": node.hostname,
            "evidence": {},
            "summary": f"cluster {cluster.name} has no Node named {node.hostname}",
            "checks": [],
        }
    return diagnose_node(found, expected_gpus=node.gpu_count).as_dict()
