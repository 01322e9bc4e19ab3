"""Operators' Kubernetes clusters (``/api/v1/ops/clusters``): register one per hall (credentials sealed at rest,
never shown again), test it, import its nodes; and a node's diagnosis (``/api/v1/ops/nodes/{id}/diagnosis``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import StaffViewSet
from api.serializers import StrictSerializer, refuse_body
from provisioning.drivers.kubernetes.clusters import cluster_check, cluster_register, cluster_sync
from provisioning.models import Cluster, Hall
from tenancy.domain.roles import StaffPermission


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
    notes = serializers.ListField(
        child=serializers.CharField(), help_text="What imported nodes were imported without (their RDMA NICs), and why."
    )


class ClusterViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, StaffViewSet):
    queryset = Cluster.objects.select_related("hall")
    serializer_class = ClusterSerializer
    lookup_field = "name"
    required_permission = StaffPermission.CLUSTER_VIEW
    action_permissions = {
        "create": StaffPermission.CLUSTER_ADD,
        "test": StaffPermission.CLUSTER_CHANGE,
        "sync": StaffPermission.FLEET_LOAD,
    }

    @extend_schema(request=ClusterRegisterSerializer, responses={201: ClusterSerializer})
    def create(self, request: Request) -> Response:
        """Register (or re-register) a hall's cluster with a kubeconfig, or a token and CA."""
        body = ClusterRegisterSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        credentials = {k: data[k] for k in ("kubeconfig", "token", "ca_cert") if data.get(k)}
        cluster = cluster_register(
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
        _, imported = cluster_sync(cluster=self.get_object(), actor=self.caller.actor)
        found = {"nodes": len(imported.nodes), "skipped": imported.skipped, "notes": imported.notes}
        return Response(SyncSerializer(found).data)
