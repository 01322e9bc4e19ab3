"""The operators' views of packing: the fleet's fragmentation, defragmentation (planned, or carried out as a run),
and reconciling every allocation with its driver now."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import StaffViewSet
from api.permissions import staff_permission_require
from api.serializers import StrictSerializer, refuse_body
from provisioning.domain.rungs import MOVABLE_RUNGS
from provisioning.drivers.base import allocations_reconcile
from provisioning.fleet_cache import fleet_read
from provisioning.models import Allocation, DefragmentRun, Node
from provisioning.selectors import fragmentation_figures
from provisioning.services.defragment import defragment_plan, defragment_start, plan_moves
from tenancy.domain.roles import StaffPermission


class FragmentationSerializer(serializers.Serializer[Any]):
    gpu_model = serializers.CharField()
    hall = serializers.CharField()
    gpus = serializers.IntegerField()
    free_gpus = serializers.IntegerField()
    unallocated_gpus = serializers.FloatField()
    stranded_mig_slices = serializers.IntegerField()
    largest_gang_gpus = serializers.DictField(child=serializers.IntegerField())


class DefragmentRequestSerializer(StrictSerializer):
    dry_run = serializers.BooleanField(
        help_text="true: only the plan; false: carry it out, one move at a time (needs provisioning.change_node)."
    )


class MoveSerializer(serializers.Serializer[Any]):
    allocation = serializers.IntegerField()
    tenant = serializers.CharField()
    kind = serializers.ChoiceField(
        choices=list(MOVABLE_RUNGS),
        help_text="job: restarts from its last checkpoint on the new devices; serverless: its replicas are re-created.",
    )
    from_nodes = serializers.ListField(child=serializers.CharField())
    to_nodes = serializers.ListField(child=serializers.CharField())
    gpus = serializers.IntegerField(help_text="Devices moved: whole GPUs, MIG slices or soft shares.")


class DefragmentPlanSerializer(serializers.Serializer[Any]):
    moves = MoveSerializer(many=True)
    before = FragmentationSerializer(many=True)
    after = FragmentationSerializer(many=True)


class DefragmentStepSerializer(MoveSerializer):
    status = serializers.ChoiceField(choices=["pending", "moving", "done", "skipped", "failed"])
    detail = serializers.CharField(help_text="Why a step was skipped or failed.")
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class DefragmentRunSerializer(serializers.ModelSerializer[DefragmentRun]):
    steps = DefragmentStepSerializer(many=True)

    class Meta:
        model = DefragmentRun
        fields = ["id", "state", "ordered_by", "created_at", "updated_at", "finished_at", "steps"]


class FragmentationViewSet(StaffViewSet):
    queryset = Node.objects.none()  # figures come from the engine's fleet, not a queryset
    required_permission = StaffPermission.NODE_VIEW
    pagination_class = None

    @extend_schema(responses=FragmentationSerializer(many=True))
    def list(self, request: Request) -> Response:
        with fleet_read() as fleet:
            return Response(fragmentation_figures(fleet.state))


class ReconcileResultSerializer(serializers.Serializer[Any]):
    looked_at = serializers.IntegerField(help_text="Allocations in flight whose driver was asked.")
    observed_at = serializers.DateTimeField()


class ReconcileViewSet(StaffViewSet):
    """Reconcile now: ask the driver about every allocation in flight (the beat task does it every
    ``LADDER_RECONCILE_EVERY_SECONDS``). Reads never do this; they show the state last observed."""

    queryset = Allocation.objects.none()
    required_permission = StaffPermission.NODE_CHANGE

    @extend_schema(request=None, responses=ReconcileResultSerializer)
    def create(self, request: Request) -> Response:
        refuse_body(request)
        observed = timezone.now()
        looked_at = allocations_reconcile(now=observed)  # the answer names the moment the rows record
        return Response({"looked_at": looked_at, "observed_at": observed})


class DefragmentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, StaffViewSet):
    """Plan a defragmentation (``dry_run: true``) or carry one out (``dry_run: false``: 202 with the run; follow it
    at ``/api/v1/ops/defragment/{id}``). Moves only running jobs and serverless endpoints: see
    provisioning/services/defragment.py."""

    queryset = DefragmentRun.objects.all()
    serializer_class = DefragmentRunSerializer
    required_permission = StaffPermission.NODE_VIEW
    executing_permission = StaffPermission.NODE_CHANGE

    @extend_schema(
        request=DefragmentRequestSerializer,
        responses={200: DefragmentPlanSerializer, 202: DefragmentRunSerializer},
    )
    def create(self, request: Request) -> Response:
        body = DefragmentRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if not body.validated_data["dry_run"]:
            staff_permission_require(request, self.executing_permission, "Carrying out a plan")
            run = defragment_start(actor=self.caller.actor)
            headers = {"Location": f"/api/v1/ops/defragment/{run.pk}"}
            return Response(DefragmentRunSerializer(run).data, status=status.HTTP_202_ACCEPTED, headers=headers)
        plan, tenants = defragment_plan()
        moves = plan_moves(plan, tenants)
        before, after = fragmentation_figures(plan.before), fragmentation_figures(plan.after)
        return Response({"moves": moves, "before": before, "after": after})
