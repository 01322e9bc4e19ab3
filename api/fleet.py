"""The fleet: operators load fleet documents, drain, undrain, quarantine or fail nodes, and set each GPU model's
target versions, read the drift from them and plan the rolling upgrade under ``/api/v1/ops/``; every authenticated
caller reads the regions and halls at ``/api/v1/regions``."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import django_filters
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import LadderView, StaffViewSet
from api.permissions import HasStaffPermission
from api.serializers import StrictSerializer
from core.errors import Conflict, Invalid
from core.prometheus import PrometheusUnavailable
from provisioning.domain.fleet_document import MAX_GPUS_PER_NODE
from provisioning.domain.placement.catalog import GPU_MODEL_NAMES
from provisioning.domain.upgrades import PlanLimitError
from provisioning.drivers.base import SimulatedProvisioner, provisioner
from provisioning.drivers.kubernetes.clusters import node_diagnosis
from provisioning.gpu_faults import gpu_errors
from provisioning.models import Gpu, Hall, Node, NodeState, Region, VersionTarget
from provisioning.selectors import fleet_drift, fleet_upgrade_plan, version_skew
from provisioning.services import fleet as services
from tenancy.domain.roles import StaffPermission

# --- the fleet document -----------------------------------------------------------------------------------
# These serializers describe the document in the OpenAPI schema only. The document is checked, whole, by
# provisioning.domain.fleet_document (the same rules as manage.py fleet_load), which names every problem's JSON path.


class FleetVersionsSerializer(StrictSerializer):
    driver = serializers.CharField(max_length=32)
    cuda = serializers.CharField(max_length=32)
    nccl = serializers.CharField(max_length=32)
    firmware = serializers.CharField(max_length=32)


class FleetNodeSerializer(StrictSerializer):
    hostname = serializers.CharField(max_length=253, help_text="Lower-case DNS name; unique in the fleet.")
    gpu_model = serializers.ChoiceField(choices=GPU_MODEL_NAMES)
    gpu_count = serializers.IntegerField(min_value=1, max_value=MAX_GPUS_PER_NODE)
    nvlink_domain = serializers.CharField(max_length=100, help_text="Within one hall, one GPU model.")
    cc_capable = serializers.BooleanField()
    cc_mode = serializers.BooleanField(
        required=False, default=False, help_text="Needs cc_capable and a GPU model that supports CC."
    )
    cpu_tee = serializers.ChoiceField(
        choices=["snp", "tdx"],
        required=False,
        allow_null=True,
        default=None,
        help_text="The CPU TEE of a cc_capable host: snp (AMD SEV-SNP) or tdx (Intel TDX). Required with cc_mode.",
    )
    versions = FleetVersionsSerializer()


class FleetHallSerializer(StrictSerializer):
    code = serializers.SlugField(max_length=40)
    fenced_for = serializers.CharField(
        max_length=8,
        allow_null=True,
        help_text="null, or the jurisdiction whose sovereign tenants alone may use the hall.",
    )
    nodes = FleetNodeSerializer(many=True)


class FleetRegionSerializer(StrictSerializer):
    code = serializers.SlugField(max_length=40)
    name = serializers.CharField(max_length=200)
    jurisdiction = serializers.RegexField(r"^[A-Z]{2,8}$", help_text="2 to 8 upper-case letters, e.g. EU, US.")
    halls = FleetHallSerializer(many=True)


class FleetDocumentSerializer(StrictSerializer):
    regions = FleetRegionSerializer(many=True)


class CountsSerializer(serializers.Serializer[Any]):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class GpuCountsSerializer(serializers.Serializer[Any]):
    created = serializers.IntegerField()
    deleted = serializers.IntegerField(help_text="GPUs of nodes whose gpu_count shrank.")
    unchanged = serializers.IntegerField()


class FleetLoadResultSerializer(serializers.Serializer[Any]):
    gpu_models = CountsSerializer(help_text="Rows mirrored from the GPU catalog.")
    regions = CountsSerializer()
    halls = CountsSerializer()
    nodes = CountsSerializer()
    gpus = GpuCountsSerializer()


# --- nodes ------------------------------------------------------------------------------------------------


class GpuSerializer(serializers.ModelSerializer[Gpu]):
    class Meta:
        model = Gpu
        fields = ["index", "uuid", "mode"]
        read_only_fields = fields


class NodeVersionsSerializer(serializers.Serializer[Any]):
    driver = serializers.CharField(source="driver_version")
    cuda = serializers.CharField(source="cuda_version")
    nccl = serializers.CharField(source="nccl_version")
    firmware = serializers.CharField(source="firmware_version")


class NodeSerializer(serializers.ModelSerializer[Node]):
    region = serializers.CharField(source="hall.region.code", read_only=True)
    hall = serializers.CharField(source="hall.code", read_only=True)
    gpu_model = serializers.CharField(source="gpu_model.name", read_only=True)
    versions = NodeVersionsSerializer(source="*", read_only=True)
    rdma = serializers.SerializerMethodField()
    gpus = GpuSerializer(many=True, read_only=True)

    def get_rdma(self, node: Node) -> dict[str, Any] | None:
        """The node's RDMA NICs as the fleet document gave them; null without any."""
        return node.rdma or None

    class Meta:
        model = Node
        fields = [
            "id",
            "hostname",
            "region",
            "hall",
            "gpu_model",
            "gpu_count",
            "nvlink_domain",
            "cc_capable",
            "cc_mode",
            "cpu_tee",
            "attestation_key",
            "versions",
            "rdma",
            "state",
            "state_changed_at",
            "created_at",
            "gpus",
        ]
        read_only_fields = fields


class NodeActionSerializer(StrictSerializer):
    reason = serializers.CharField(
        max_length=500, required=False, allow_blank=True, default="", help_text="Why; kept in the audit log."
    )


class XidInjectSerializer(NodeActionSerializer):
    gpu_index = serializers.IntegerField(
        min_value=0, max_value=MAX_GPUS_PER_NODE - 1, help_text="Which of the node's GPUs."
    )
    xid = serializers.IntegerField(min_value=0, max_value=999, help_text="The XID it reports as its last; 0 clears.")


class AttestationKeySerializer(StrictSerializer):
    public_key = serializers.CharField(
        max_length=64,
        allow_blank=True,
        help_text='Base64 of the raw 32-byte Ed25519 public key the host agent signs evidence with; "" removes it.',
    )
    reason = serializers.CharField(
        max_length=500, required=False, allow_blank=True, default="", help_text="Why; kept in the audit log."
    )


class NodeFilter(django_filters.FilterSet):
    region = django_filters.CharFilter(field_name="hall__region__code", help_text="Region code.")
    hall = django_filters.CharFilter(field_name="hall__code", help_text="Hall code.")
    gpu_model = django_filters.CharFilter(field_name="gpu_model__name", help_text="GPU model name.")
    state = django_filters.ChoiceFilter(choices=NodeState.choices)
    nvlink_domain = django_filters.CharFilter()

    class Meta:
        model = Node
        fields: list[str] = []


# --- regions ----------------------------------------------------------------------------------------------


class HallSerializer(serializers.ModelSerializer[Hall]):
    class Meta:
        model = Hall
        fields = ["code", "fenced_for"]
        read_only_fields = fields


class RegionSerializer(serializers.ModelSerializer[Region]):
    halls = HallSerializer(many=True, read_only=True)

    class Meta:
        model = Region
        fields = ["code", "name", "jurisdiction", "halls"]
        read_only_fields = fields


# --- views ------------------------------------------------------------------------------------------------


class FleetViewSet(StaffViewSet):
    """Load a fleet document: regions and halls are upserted by code, nodes by hostname."""

    required_permission = StaffPermission.FLEET_LOAD
    serializer_class = FleetDocumentSerializer

    @extend_schema(request=FleetDocumentSerializer, responses={200: FleetLoadResultSerializer})
    def create(self, request: Request) -> Response:
        """Check the whole document, then load it. A document with any problem is refused whole (422, with
        ``errors`` keyed by JSON path, e.g. ``regions[0].halls[1].nodes[3].gpu_model``); nothing is written."""
        result = services.fleet_load(document=request.data, actor=self.caller.actor)
        return Response(FleetLoadResultSerializer(result.as_dict()).data)


_CHANGE_NODE = StaffPermission.NODE_CHANGE
NodeService = Callable[..., Node]


class NodeViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, StaffViewSet):
    queryset = Node.objects.select_related("hall__region", "gpu_model").prefetch_related("gpus")
    serializer_class = NodeSerializer
    filterset_class = NodeFilter
    required_permission = StaffPermission.NODE_VIEW
    action_permissions = {
        name: _CHANGE_NODE for name in ("drain", "undrain", "quarantine", "fail", "attestation_key", "xid")
    }

    def _change(self, request: Request, service: NodeService) -> Response:
        data = NodeActionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        node = service(node=self.get_object(), actor=self.caller.actor, reason=data.validated_data["reason"])
        return Response(NodeSerializer(self.get_queryset().get(pk=node.pk)).data)

    @extend_schema(request=NodeActionSerializer, responses=NodeSerializer)
    @action(detail=True, methods=["post"])
    def drain(self, request: Request, pk: str) -> Response:
        """Stop placing work on a ready node (409 ``invalid_transition`` from any other state)."""
        return self._change(request, services.node_drain)

    @extend_schema(request=NodeActionSerializer, responses=NodeSerializer)
    @action(detail=True, methods=["post"])
    def undrain(self, request: Request, pk: str) -> Response:
        """Return a draining, maintenance or quarantined node to service."""
        return self._change(request, services.node_undrain)

    @extend_schema(request=NodeActionSerializer, responses=NodeSerializer)
    @action(detail=True, methods=["post"])
    def quarantine(self, request: Request, pk: str) -> Response:
        """Take a suspect node out of placement (not a sanitizing one: the wipe must finish)."""
        return self._change(request, services.node_quarantine)

    @extend_schema(request=NodeActionSerializer, responses=NodeSerializer)
    @action(detail=True, methods=["post"])
    def fail(self, request: Request, pk: str) -> Response:
        """Record that a node has failed; it comes back only through quarantine."""
        return self._change(request, partial(services.node_fail, last_checkpoint=provisioner().last_checkpoint))

    @extend_schema(request=AttestationKeySerializer, responses=NodeSerializer)
    @action(detail=True, methods=["post"], url_path="attestation-key")
    def attestation_key(self, request: Request, pk: str) -> Response:
        """Register the public key a confidential host's attestation agent signs its evidence with (audited
        ``node.attestation_key_set``); evidence from the host verifies only against it."""
        data = AttestationKeySerializer(data=request.data)
        data.is_valid(raise_exception=True)
        node = services.node_attestation_key_set(
            node=self.get_object(),
            public_key=data.validated_data["public_key"],
            actor=self.caller.actor,
            reason=data.validated_data["reason"],
        )
        return Response(NodeSerializer(self.get_queryset().get(pk=node.pk)).data)

    @extend_schema(request=XidInjectSerializer, responses=NodeSerializer)
    @action(detail=True, methods=["post"])
    def xid(self, request: Request, pk: str) -> Response:
        """The simulated fleet: one of the node's GPUs reports this XID as its last (as DCGM would once the driver
        logged it); a fatal one quarantines the node at the next reconcile and its work is placed elsewhere
        (docs/telemetry.md, "XID errors"). 409 ``not_simulated`` on Kubernetes, whose GPUs report their own."""
        if not isinstance(provisioner(), SimulatedProvisioner):
            raise Conflict("not_simulated", "XIDs are injected into the simulated fleet only; real GPUs report theirs.")
        data = XidInjectSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        node = self.get_object()
        services.gpu_xid_inject(
            node=node,
            gpu_index=data.validated_data["gpu_index"],
            xid=data.validated_data["xid"],
            actor=self.caller.actor,
            reason=data.validated_data["reason"],
        )
        return Response(NodeSerializer(self.get_queryset().get(pk=node.pk)).data)

    @extend_schema(responses={200: dict[str, Any]})
    @action(detail=True, methods=["get"], url_path="gpu-errors")
    def gpu_errors(self, request: Request, pk: str) -> Response:
        """The node's GPUs' last XID as DCGM reports it through Prometheus, with NVIDIA's meaning, its class
        (application, informational, fatal) and whether it is recent (a fatal recent one quarantines the node):
        the node diagnosis's XID layer. ``unavailable`` says why when Prometheus does not answer."""
        node = self.get_object()
        try:
            errors = [e.as_dict() for e in gpu_errors(now=timezone.now(), nodes=[node])]
        except PrometheusUnavailable as error:
            return Response({"node": node.hostname, "gpus": [], "unavailable": str(error)})
        return Response({"node": node.hostname, "gpus": errors, "unavailable": None})

    @extend_schema(
        responses={
            200: dict[str, Any],
            409: OpenApiResponse(description="`no_cluster`: the node's hall has no Kubernetes cluster registered."),
        }
    )
    @action(detail=True, methods=["get"])
    def diagnosis(self, request: Request, pk: str) -> Response:
        """Why Kubernetes may not offer this node's GPUs: the first broken layer (node, driver, toolkit, device
        plugin, allocatable, and rdma for a node the fleet gives RDMA NICs) with its evidence, read from the node's
        cluster."""
        return Response(node_diagnosis(self.get_object()))


class RegionViewSet(mixins.ListModelMixin, LadderView, viewsets.GenericViewSet):
    """Regions and their halls, for every authenticated caller: where capacity can live, and which halls are
    fenced for one jurisdiction's sovereign tenants."""

    queryset = Region.objects.prefetch_related("halls")
    serializer_class = RegionSerializer


# --- target versions, drift and the rolling upgrade ----------------------------------------------------------


class VersionTargetSerializer(StrictSerializer):
    gpu_model = serializers.ChoiceField(choices=GPU_MODEL_NAMES)
    driver = serializers.CharField(max_length=32)
    cuda = serializers.CharField(max_length=32)
    nccl = serializers.CharField(max_length=32)
    firmware = serializers.CharField(max_length=32)
    updated_at = serializers.DateTimeField(read_only=True)
    reason = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        write_only=True,
        help_text="Kept in the audit log.",
    )


def _target_json(target: VersionTarget) -> dict[str, Any]:
    return {
        "gpu_model": target.gpu_model.name,
        **{name: getattr(target, name) for name in services.VERSION_TARGET_FIELDS},
        "updated_at": target.updated_at,
    }


class UpgradePlanQuerySerializer(StrictSerializer):
    max_share = serializers.FloatField(
        required=False, min_value=0.0, max_value=1.0, help_text="Share of the fleet's GPUs one wave may take out."
    )
    max_domains = serializers.IntegerField(required=False, min_value=1, help_text="NVLink domains one wave may take.")


class StaffView(LadderView):
    """An operator view whose reads need ``read_permission`` and whose writes ``write_permission``."""

    extra_permissions: ClassVar[list[type]] = [HasStaffPermission]
    read_permission: ClassVar[StaffPermission] = StaffPermission.NODE_VIEW
    write_permission: ClassVar[StaffPermission] = _CHANGE_NODE

    def get_required_permission(self) -> StaffPermission:
        return self.read_permission if self.request.method in ("GET", "HEAD", "OPTIONS") else self.write_permission


class FleetTargetView(StaffView):
    """Each GPU model's target versions (driver, CUDA, NCCL, firmware): one per model, since firmware and often the
    driver differ between models. A model without a target has no drift."""

    @extend_schema(responses=VersionTargetSerializer(many=True))
    def get(self, request: Request) -> Response:
        targets = VersionTarget.objects.select_related("gpu_model")
        return Response([_target_json(t) for t in targets])

    @extend_schema(request=VersionTargetSerializer, responses=VersionTargetSerializer)
    def put(self, request: Request) -> Response:
        """Set one model's target, replacing its earlier one (audited ``fleet.target_set``); "unknown" is refused."""
        data = VersionTargetSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        target = services.version_target_set(
            gpu_model=fields["gpu_model"],
            versions={name: fields[name] for name in services.VERSION_TARGET_FIELDS},
            actor=self.caller.actor,
            reason=fields["reason"],
        )
        return Response(_target_json(target))


class FleetDriftView(StaffView):
    """Nodes that differ from their model's target (which fields, the node's value and the target's), and nodes
    that read ``unknown`` for any version (never published: docs/kubernetes.md), failed nodes aside."""

    @extend_schema(responses=dict[str, Any])
    def get(self, request: Request) -> Response:
        drift = fleet_drift()
        return Response(
            {
                "drifting": sum(1 for d in drift if d.differs),
                "unknown": sum(1 for d in drift if d.unknown),
                "nodes": [d.as_dict() for d in drift],
            }
        )


class FleetSkewView(StaffView):
    """Version skew within each NVLink domain (by hall): every version its nodes do not all run, how many nodes run
    each value, the majority's value (on a tie, the first node's by hostname) and the nodes off it; the domains with
    skew first. The operators' console shows the same (``provisioning.selectors.version_skew``)."""

    @extend_schema(responses=dict[str, Any])
    def get(self, request: Request) -> Response:
        domains = version_skew()
        return Response({"skewed": sum(1 for d in domains if d.fields), "domains": [d.as_dict() for d in domains]})


class FleetUpgradePlanView(StaffView):
    """The rolling upgrade: waves of whole NVLink domains with drifting nodes, emptiest first, each within
    ``max_share`` of the fleet's GPUs (0.1 when neither limit is given) and ``max_domains`` domains, with the
    allocations to move or checkpoint first. Only a plan: nothing is drained."""

    @extend_schema(parameters=[UpgradePlanQuerySerializer], responses=dict[str, Any])
    def get(self, request: Request) -> Response:
        query = UpgradePlanQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        try:
            plan = fleet_upgrade_plan(
                max_share=query.validated_data.get("max_share"), max_domains=query.validated_data.get("max_domains")
            )
        except PlanLimitError as error:
            raise Invalid("wave_limit", str(error), field="max_share") from None
        return Response(plan)
