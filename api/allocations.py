"""Allocations (``/api/v1/allocations``) and the tenant's quota."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar

import django_filters
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import LadderView, TenantScopedViewSet
from api.cold_starts import AllocationColdStartActions
from api.gpu_metrics import AllocationMetricsActions
from api.permissions import HasStaffPermission
from api.serializers import StrictSerializer
from api.workloads import AllocationWorkloadActions, WorkloadSerializer
from lifecycle.services.customers import allocation_request
from provisioning.domain.capacity_classes import DEFAULT_CLASS, CapacityClass, OnPreemption
from provisioning.domain.node_host import MAX_CPU_CORES, MAX_MEMORY_GIB
from provisioning.domain.placement.catalog import GPU_MODEL_NAMES
from provisioning.domain.rungs import SOFT_SHARING, Rung
from provisioning.domain.states import AllocationState
from provisioning.drivers.base import provisioner
from provisioning.models import (
    Allocation,
    AllocationDevice,
    AllocationFault,
    AllocationPreemption,
)
from provisioning.selectors import allocation_fabric
from provisioning.services.placing import AllocationSpec
from provisioning.services.stopping import allocation_stop
from provisioning.services.workloads import workload_shown
from tenancy.domain.roles import Action, StaffPermission
from tenancy.models import Tenant
from tenancy.selectors import endpoint_calls_per_minute
from tenancy.services import UNCHANGED, tenant_set_quota

# --- serializers ----------------------------------------------------------------------------------------------


class ShareSerializer(StrictSerializer):
    mode = serializers.ChoiceField(choices=sorted(m.value for m in SOFT_SHARING))
    fraction = serializers.DecimalField(
        max_digits=4,
        decimal_places=3,
        min_value=Decimal("0.001"),
        max_value=Decimal("0.999"),
        help_text="Share of one GPU, 0.001 to 0.999 (soft sharing stays inside the tenant).",
    )


class GangSerializer(StrictSerializer):
    size = serializers.IntegerField(min_value=2, max_value=512)
    topology = serializers.ChoiceField(choices=["nvlink"], required=False, allow_null=True, default=None)


class AllocationRequestSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)
    rung = serializers.ChoiceField(choices=[r.value for r in Rung])
    gpu_model = serializers.ChoiceField(choices=GPU_MODEL_NAMES, required=False)
    gpu_models = serializers.ListField(
        child=serializers.ChoiceField(choices=GPU_MODEL_NAMES),
        required=False,
        min_length=1,
        max_length=7,
        help_text="Acceptable models, most preferred first (instead of gpu_model).",
    )
    gpus = serializers.IntegerField(min_value=1, max_value=8, required=False, help_text="Whole GPUs on one node.")
    mig_profile = serializers.CharField(max_length=32, required=False, help_text="e.g. 3g.40gb")
    share = ShareSerializer(required=False)
    nodes = serializers.IntegerField(min_value=1, max_value=64, required=False, help_text="Bare-metal nodes.")
    regions = serializers.ListField(child=serializers.SlugField(), required=False, min_length=1)
    gang = GangSerializer(required=False, help_text="N members of the `gpus` shape, all or nothing.")
    workload = WorkloadSerializer(
        required=False,
        help_text="What runs on it: image and command, or os_image and cloud_init; see docs/workloads.md.",
    )
    capacity_class = serializers.ChoiceField(
        choices=[c.value for c in CapacityClass],
        default=DEFAULT_CLASS.value,
        help_text="on_demand (never preempted), spot (cheaper, preempted with notice when the GPUs are needed) or "
        "reserved (drawn on your reservation); see docs/capacity.md.",
    )
    reservation = serializers.IntegerField(
        required=False, min_value=1, help_text="Reserved: the id of the reservation it draws on."
    )
    on_preemption = serializers.ChoiceField(
        choices=[p.value for p in OnPreemption],
        default=OnPreemption.STOP.value,
        help_text="Spot: stop when preempted, or (a job) requeue: placed again from its checkpoint when room returns.",
    )

    cpu = serializers.IntegerField(
        min_value=1,
        max_value=MAX_CPU_CORES,
        required=False,
        help_text="vCPUs per member (default: the rung's bundle, 8 per GPU). Up to 4 times the bundle; those beyond "
        "it are billed per vCPU-hour.",
    )
    memory_gib = serializers.IntegerField(
        min_value=1,
        max_value=MAX_MEMORY_GIB,
        required=False,
        help_text="Memory per member in GiB (default: the rung's bundle). Up to 4 times the bundle; GiB beyond it "
        "are billed per GiB-hour.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "gpu_model" in attrs and "gpu_models" in attrs:
            raise serializers.ValidationError({"gpu_models": ["Give gpu_model or gpu_models, not both."]})
        if "gpu_model" not in attrs and "gpu_models" not in attrs:
            raise serializers.ValidationError({"gpu_model": ["Name the GPU model (or gpu_models)."]})
        shapes = [k for k in ("gpus", "mig_profile", "share", "nodes") if k in attrs]
        if len(shapes) != 1:
            raise serializers.ValidationError({"gpus": ["Give exactly one of gpus, mig_profile, share, nodes."]})
        return attrs

    def spec(self) -> AllocationSpec:
        data = self.validated_data
        share = data.get("share")
        gang = data.get("gang") or {}
        regions = data.get("regions")
        return AllocationSpec(
            rung=data["rung"],
            gpu_models=tuple(data.get("gpu_models") or [data["gpu_model"]]),
            gpus=data.get("gpus", 0),
            mig_profile=data.get("mig_profile"),
            share_mode=share["mode"] if share else None,
            share_milli=int(share["fraction"] * 1000) if share else None,
            nodes=data.get("nodes", 0),
            gang_size=gang.get("size", 1),
            topology=gang.get("topology"),
            regions=tuple(regions) if regions else None,
            capacity_class=data["capacity_class"],
            reservation=data.get("reservation"),
            on_preemption=data["on_preemption"],
            cpu_milli=data.get("cpu", 0) * 1000,
            memory_mib=data.get("memory_gib", 0) * 1024,
        )


class DeviceSerializer(serializers.ModelSerializer[AllocationDevice]):
    node = serializers.CharField(source="hostname")
    mig_profile = serializers.CharField(allow_null=True)
    share = serializers.SerializerMethodField(help_text="Share of the GPU for soft sharing, as a decimal string.")

    class Meta:
        model = AllocationDevice
        fields = ["node", "gpu_index", "gpu_uuid", "mig_profile", "mig_start", "share"]

    def to_representation(self, instance: AllocationDevice) -> dict[str, Any]:
        data = super().to_representation(instance)
        data["mig_profile"] = instance.mig_profile or None
        return data

    def get_share(self, device: AllocationDevice) -> str | None:
        return None if device.share_milli is None else str(Decimal(device.share_milli) / 1000)


HOST_FIELDS = ("cpu", "memory_gib", "cpu_beyond_bundle", "memory_gib_beyond_bundle")


def host_shown(allocation: Allocation) -> dict[str, str | None]:
    """The vCPUs and GiB an allocation holds beside its GPUs, and the part of them beyond its rung's bundle (billed),
    as the API shows them (``Allocation.host``, ``host_beyond``)."""
    shown: list[str | None] = []
    for taken in (allocation.host, allocation.host_beyond):
        shown += (None, None) if taken is None else (str(Decimal(taken[0]) / 1000), str(Decimal(taken[1]) / 1024))
    return dict(zip(HOST_FIELDS, shown, strict=True))


def _seconds(ms: int) -> str:
    return f"{Decimal(ms) / 1000:.3f}"


class FaultSerializer(serializers.ModelSerializer[AllocationFault]):
    """A provider fault under the allocation and the work it cost (goodput lost: not billed)."""

    node = serializers.CharField(source="hostname")
    lost_seconds = serializers.SerializerMethodField(help_text="fault_at less checkpoint_at, as a decimal string.")

    class Meta:
        model = AllocationFault
        fields = ["node", "cause", "fault_at", "detected_at", "checkpoint_at", "lost_seconds", "outcome", "running_at"]

    def get_lost_seconds(self, fault: AllocationFault) -> str:
        return _seconds(fault.lost_ms)


class PreemptionSerializer(serializers.ModelSerializer[AllocationPreemption]):
    """Spot work taken back for on-demand or reserved work: the notice (usage stopped there), the deadline to save by,
    the checkpoint it went back to and the work lost since, and whether it was requeued and placed again."""

    lost_seconds = serializers.SerializerMethodField(help_text="noticed_at less checkpoint_at, as a decimal string.")

    class Meta:
        model = AllocationPreemption
        fields = ["noticed_at", "deadline", "checkpoint_at", "lost_seconds", "requeued", "resumed_at"]

    def get_lost_seconds(self, preemption: AllocationPreemption) -> str:
        return _seconds(preemption.lost_ms)


class SshAccessSerializer(serializers.Serializer[Any]):
    host = serializers.CharField()
    port = serializers.IntegerField()
    user = serializers.CharField()
    command = serializers.CharField(help_text="Paste it into a terminal.")


class AccessSerializer(serializers.Serializer[Any]):
    ssh = SshAccessSerializer(allow_null=True, help_text="Through the hall's SSH gateway, with your keys.")
    endpoint = serializers.URLField(allow_null=True, help_text="A serverless endpoint; call it with your API key.")
    urls = serializers.DictField(child=serializers.URLField(), help_text="Port -> HTTPS URL of each public port.")
    console = serializers.URLField(allow_null=True, help_text="A VM's serial console, followed as NDJSON.")


class FabricIsolationSerializer(serializers.Serializer[Any]):
    kind = serializers.CharField(help_text="partition_key (InfiniBand) or vlan (RoCE).")
    value = serializers.CharField(help_text="The InfiniBand P_Key in hex (0x8005) or the RoCE VLAN ID.")


class FabricNicSerializer(serializers.Serializer[Any]):
    device = serializers.CharField(help_text="The host's RDMA device (a pod sees a VF of it under another name).")
    rail = serializers.IntegerField()
    gpus = serializers.ListField(child=serializers.IntegerField(), help_text="GPU indexes under its PCIe switch.")


class FabricNodeSerializer(serializers.Serializer[Any]):
    hostname = serializers.CharField()
    nics = FabricNicSerializer(many=True)


class FabricSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    link_layer = serializers.ChoiceField(choices=["infiniband", "roce"])
    isolation = FabricIsolationSerializer()
    rails = serializers.ListField(child=serializers.IntegerField(), help_text="The rails every node has a NIC on.")
    nodes = FabricNodeSerializer(many=True)


WORKLOAD_SHOWN = serializers.JSONField(
    allow_null=True,
    help_text="As submitted (secrets by name only), with a serverless endpoint's autoscaling filled in as applied; "
    "null: none.",
)


class AllocationSerializer(serializers.ModelSerializer[Allocation]):
    performance_isolation = serializers.CharField(source="performance")
    security_isolation = serializers.CharField(source="security")
    gpu_model = serializers.CharField(source="gpu_model.name")
    region = serializers.CharField(source="hall.region.code")
    hall = serializers.CharField(source="hall.code")
    created = serializers.DateTimeField(source="created_at")
    devices = serializers.SerializerMethodField()
    cpu = serializers.SerializerMethodField(
        help_text="The vCPUs it holds beside its GPUs, all members together, as a decimal string (its rung's bundle "
        "per GPU); null on bare metal, which holds whole hosts."
    )
    memory_gib = serializers.SerializerMethodField(
        help_text="The memory it holds beside its GPUs in GiB, all members together, as a decimal string; null on "
        "bare metal."
    )
    cpu_beyond_bundle = serializers.SerializerMethodField(
        help_text="The part of cpu beyond its rung's bundle, billed per vCPU-hour beside the GPUs' price "
        '("0": none); null on bare metal.'
    )
    memory_gib_beyond_bundle = serializers.SerializerMethodField(
        help_text='The part of memory_gib beyond its rung\'s bundle, billed per GiB-hour ("0": none); null on bare '
        "metal."
    )
    workload = serializers.SerializerMethodField(help_text=WORKLOAD_SHOWN.help_text)
    access = serializers.SerializerMethodField()
    replicas = serializers.IntegerField(
        allow_null=True, help_text="Serverless: ready replicas, what is billed now (0 while idle); null: other rungs."
    )
    cold_start_ms = serializers.IntegerField(
        allow_null=True, help_text="Serverless: how long its last wake from zero took until it ran; null: none yet."
    )
    checkpoint_at = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="The last checkpoint the workload reported (a job); a fault bills up to it; null: none yet.",
    )
    goodput_lost_seconds = serializers.SerializerMethodField(
        help_text="Work lost to provider faults (each fault's time less its checkpoint), not billed; decimal string."
    )
    faults = FaultSerializer(many=True, read_only=True)
    on_preemption = serializers.SerializerMethodField(help_text="Spot: stop or requeue when preempted.")
    preemptions = PreemptionSerializer(many=True, read_only=True)
    fabric = serializers.SerializerMethodField(
        help_text="A multi-node job's or bare-metal allocation's RDMA fabric: its name, link layer, your isolation on "
        "it (InfiniBand partition key or RoCE VLAN, yours alone) and the NICs of each node; null: none."
    )

    class Meta:
        model = Allocation
        fields = [
            "id",
            "name",
            "state",
            "rung",
            "performance_isolation",
            "security_isolation",
            "gpu_model",
            "region",
            "hall",
            "devices",
            "cpu",
            "memory_gib",
            "cpu_beyond_bundle",
            "memory_gib_beyond_bundle",
            "created",
            "state_changed_at",
            "observed_at",
            "failure_reason",
            "replicas",
            "cold_start_ms",
            "workload",
            "access",
            "checkpoint_at",
            "restarts",
            "goodput_lost_seconds",
            "faults",
            "capacity_class",
            "reservation",
            "on_preemption",
            "preempted_at",
            "preemptions",
            "fabric",
        ]
        read_only_fields = fields

    def get_on_preemption(self, allocation: Allocation) -> str:
        return str(allocation.spec.get("on_preemption", OnPreemption.STOP))

    def get_goodput_lost_seconds(self, allocation: Allocation) -> str:
        return _seconds(allocation.goodput_lost_ms)

    @extend_schema_field(WORKLOAD_SHOWN)
    def get_workload(self, allocation: Allocation) -> Any:
        return workload_shown(allocation)

    @extend_schema_field(AccessSerializer)
    def get_access(self, allocation: Allocation) -> Any:
        return provisioner().access(allocation).as_dict()

    @extend_schema_field(FabricSerializer(allow_null=True))
    def get_fabric(self, allocation: Allocation) -> Any:
        return allocation_fabric(allocation)

    def _host(self, allocation: Allocation) -> dict[str, str | None]:
        """``host_shown``, once per allocation: four fields read it."""
        cached: dict[int, dict[str, str | None]] = self.__dict__.setdefault("_host_shown", {})
        if allocation.pk not in cached:
            cached[allocation.pk] = host_shown(allocation)
        return cached[allocation.pk]

    def get_cpu(self, allocation: Allocation) -> str | None:
        return self._host(allocation)["cpu"]

    def get_memory_gib(self, allocation: Allocation) -> str | None:
        return self._host(allocation)["memory_gib"]

    def get_cpu_beyond_bundle(self, allocation: Allocation) -> str | None:
        return self._host(allocation)["cpu_beyond_bundle"]

    def get_memory_gib_beyond_bundle(self, allocation: Allocation) -> str | None:
        return self._host(allocation)["memory_gib_beyond_bundle"]

    @extend_schema_field(DeviceSerializer(many=True))
    def get_devices(self, allocation: Allocation) -> Any:
        """What it holds now (an idle endpoint: nothing); once stopped or failed, what it last held."""
        if allocation.state == AllocationState.IDLE:
            return []
        devices = list(allocation.devices.all())
        return DeviceSerializer([d for d in devices if d.active] or devices, many=True).data


_TIME = serializers.DateTimeField()  # one instance: the answer below spells times exactly as the serializer does


def _time(value: Any) -> str | None:
    return None if value is None else _TIME.to_representation(value)


def placed_answer(allocation: Allocation) -> dict[str, Any]:
    """``AllocationSerializer(allocation).data`` for an allocation just placed, built from the rows written. The
    create path answers every POST: DRF's generic field machinery spent more CPU on it than the placement did.
    A new allocation holds exactly the devices it was given (all active) and has no faults yet, so neither is read
    back. Kept equal to the serializer's answer by tests (test_the_answer_to_a_placement_is_what_reading_it_gives)."""
    hall = allocation.hall
    devices = allocation.devices.all()  # the rows written (provisioning.services.devices.devices_remember)
    return {
        "id": allocation.pk,
        "name": allocation.name,
        "state": str(allocation.state),
        "rung": str(allocation.rung),
        "performance_isolation": str(allocation.performance),
        "security_isolation": str(allocation.security),
        "gpu_model": allocation.gpu_model.name,
        "region": hall.region.code,
        "hall": hall.code,
        "devices": [
            {
                "node": d.hostname,
                "gpu_index": d.gpu_index,
                "gpu_uuid": d.gpu_uuid,
                "mig_profile": d.mig_profile or None,
                "mig_start": d.mig_start,
                "share": None if d.share_milli is None else str(Decimal(d.share_milli) / 1000),
            }
            for d in devices
        ],
        **host_shown(allocation),
        "created": _time(allocation.created_at),
        "state_changed_at": _time(allocation.state_changed_at),
        "observed_at": _time(allocation.observed_at),
        "failure_reason": allocation.failure_reason,
        "replicas": allocation.replicas,
        "cold_start_ms": allocation.cold_start_ms,
        "workload": workload_shown(allocation),
        "access": provisioner().access(allocation).as_dict(),
        "checkpoint_at": _time(allocation.checkpoint_at),
        "restarts": allocation.restarts,
        "goodput_lost_seconds": _seconds(allocation.goodput_lost_ms),
        "faults": [],
        "capacity_class": str(allocation.capacity_class),
        "reservation": allocation.reservation_id,
        "on_preemption": str(allocation.spec.get("on_preemption", OnPreemption.STOP)),
        "preempted_at": None,
        "preemptions": [],
        "fabric": allocation_fabric(allocation),
    }


# --- views ------------------------------------------------------------------------------------------------------


class AllocationFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(field_name="name", help_text="Only those with this name (names may repeat).")


class AllocationViewSet(
    AllocationWorkloadActions,
    AllocationColdStartActions,
    AllocationMetricsActions,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    TenantScopedViewSet,
):
    """A tenant's allocations. Refusals are 409 problem+json whose ``code`` names the rule (``no_capacity``,
    ``residency``, ``isolation_policy``, ``quota``, ``version_skew``, ``fabric_split``, ``not_priced`` with the
    ``sku`` that has no price) with every ``reasons`` entry;
    a combination the rung does not offer is 422 ``invalid_isolation``."""

    queryset = Allocation.objects.select_related("tenant", "gpu_model", "hall__region").prefetch_related(
        "devices", "faults", "preemptions"
    )
    serializer_class = AllocationSerializer
    filterset_class = AllocationFilter
    http_method_names = ["get", "post", "delete", "head", "options"]
    role_actions: ClassVar[dict[str, Action]] = {
        "list": Action.ALLOCATION_VIEW,
        "retrieve": Action.ALLOCATION_VIEW,
        "create": Action.ALLOCATION_MANAGE,
        "destroy": Action.ALLOCATION_MANAGE,
        "logs": Action.ALLOCATION_VIEW,
        "events": Action.ALLOCATION_VIEW,
        "cold_starts": Action.ALLOCATION_VIEW,
        "metrics": Action.ALLOCATION_VIEW,
    }
    cursor_ordering = "-pk"

    @extend_schema(
        request=AllocationRequestSerializer,
        responses={201: AllocationSerializer, 409: OpenApiResponse(description="Refused; see `code` and `reasons`.")},
    )
    def create(self, request: Request) -> Response:
        data = AllocationRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        body = data.validated_data.get("workload")
        allocation = allocation_request(
            tenant=self.membership.tenant,
            name=data.validated_data["name"],
            spec=data.spec(),
            actor=self.caller.actor,
            workload=WorkloadSerializer.build(body) if body is not None else None,
        )
        return Response(placed_answer(allocation), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: AllocationSerializer})
    def destroy(self, request: Request, pk: str) -> Response:
        """Stop the allocation (stopping twice is harmless); the answer shows where it got to."""
        allocation_stop(allocation=self.get_object(), actor=self.caller.actor)
        return Response(AllocationSerializer(self.get_queryset().get(pk=pk)).data)


class QuotaSerializer(StrictSerializer):
    gpus = serializers.DecimalField(
        max_digits=9,
        decimal_places=3,
        min_value=Decimal(0),
        allow_null=True,
        help_text="GPUs the tenant may hold at once (a MIG slice counts its compute share); null lifts the quota.",
    )
    endpoint_calls_per_minute = serializers.IntegerField(
        min_value=1,
        allow_null=True,
        required=False,
        help_text="Calls a minute each of the tenant's endpoints and public ports takes (the gateway's check, the "
        "endpoint's URL), counted per endpoint; null: the default (LADDER_ENDPOINT_CALLS_PER_MINUTE); left out: "
        "unchanged. Answered with the limit in force.",
    )
    volume_gb = serializers.IntegerField(
        min_value=0,
        allow_null=True,
        required=False,
        help_text="GB the tenant's volumes may hold (provisioned size); null lifts the quota; left out: unchanged.",
    )


class TenantQuotaView(LadderView):
    """Operators set a tenant's limits: its GPU quota and the calls a minute each of its endpoints takes."""

    extra_permissions: ClassVar[list[type]] = [HasStaffPermission]
    required_permission = StaffPermission.TENANT_QUOTA_SET

    def get_required_permission(self) -> StaffPermission:
        return self.required_permission

    @extend_schema(request=QuotaSerializer, responses=QuotaSerializer)
    def put(self, request: Request, slug: str) -> Response:
        data = QuotaSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise NotFound()
        gpus = data.validated_data["gpus"]
        tenant = tenant_set_quota(
            tenant=tenant,
            gpu_quota_milli=None if gpus is None else int(gpus * 1000),
            endpoint_calls_per_minute=data.validated_data.get(
                "endpoint_calls_per_minute", tenant.endpoint_calls_per_minute
            ),
            volume_quota_gb=data.validated_data.get("volume_gb", UNCHANGED),
            actor=self.caller.actor,
        )
        quota = tenant.gpu_quota_milli
        return Response(
            {
                "gpus": None if quota is None else str(Decimal(quota) / 1000),
                "endpoint_calls_per_minute": endpoint_calls_per_minute(tenant),
                "volume_gb": tenant.volume_quota_gb,
            }
        )
