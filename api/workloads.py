"""Workloads at the API: the ``workload`` object of ``POST /api/v1/allocations``, an allocation's logs and events,
and the simulated fleet's serverless endpoints themselves (the gateway's side is ``api/gateway.py``).

The serializers check shapes and types; the rules per rung are
``provisioning.domain.workload_rules.workload_check``'s (run
by the lifecycle service), so the API and every other caller refuse the same things with the same words.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

from django.conf import settings
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import LadderView
from api.gateway import bearer
from api.serializers import IdField, StrictSerializer
from core.models import AuditEvent
from lifecycle.services.workloads import endpoint_call
from provisioning.domain.cold_start import MAX_MODEL_GB
from provisioning.domain.rungs import DEFAULT_FRAMEWORK, Framework
from provisioning.domain.states import WORKING
from provisioning.domain.workload_output import LogLine
from provisioning.domain.workload_rules import (
    MAX_ARG_BYTES,
    MAX_ARGV,
    MAX_CLOUD_INIT_BYTES,
    MAX_IDLE_SECONDS,
    MAX_TARGET_IN_FLIGHT,
    MAX_WINDOW_S,
    MIN_IDLE_SECONDS,
)
from provisioning.domain.workloads import (
    CHECKPOINTS,
    DEFAULT_SCALE_DOWN_WINDOW_S,
    DEFAULT_SCALE_UP_WINDOW_S,
    DEFAULT_TARGET_IN_FLIGHT,
    QUEUE_DEPTH,
    SIGNALS,
    Workload,
)
from provisioning.drivers.base import provisioner
from provisioning.drivers.simulated import MAX_LINES
from provisioning.models import Allocation
from provisioning.services.cold_starts import endpoint_request_observe

# --- the workload object -------------------------------------------------------------------------------------


class PortSerializer(StrictSerializer):
    port = serializers.IntegerField(min_value=1, max_value=65535)
    protocol = serializers.ChoiceField(choices=["http", "tcp", "udp"], default="http")
    expose = serializers.ChoiceField(
        choices=["none", "tenant", "public"],
        default="none",
        help_text="none: inside the pod; tenant: your other allocations; public: HTTPS under the base domain.",
    )


class EnvSerializer(StrictSerializer):
    name = serializers.CharField(max_length=128)
    value = serializers.CharField(max_length=32_768, allow_blank=True, trim_whitespace=False)


class SecretRefSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        # "as" is a Python keyword, so it cannot be declared as a class attribute.
        fields["as"] = serializers.ChoiceField(
            choices=["env", "file"],
            default="env",
            help_text="env: a variable of that name; file: a file in /var/run/secrets/ladder (on vm and bare_metal "
            "every secret is a file in /etc/ladder/secrets).",
        )
        return fields


class VolumeSerializer(StrictSerializer):
    mount_path = serializers.CharField(max_length=256)
    dataset = serializers.IntegerField(min_value=1, required=False, help_text="A data asset of yours, read-only.")
    scratch_gb = serializers.IntegerField(min_value=1, max_value=4096, required=False, help_text="An empty volume.")
    volume = IdField(required=False, help_text="A volume of yours (/api/v1/volumes): it outlives the allocation.")
    # Declared fields leave the class namespace (DRF's metaclass), so this shadows nothing at run time.
    read_only = serializers.BooleanField(  # type: ignore[assignment]
        required=False, help_text="Mount the volume read-only (always on serverless: many replicas read it at once)."
    )


class CheckpointSerializer(StrictSerializer):
    path = serializers.CharField(max_length=256, default=CHECKPOINTS)
    interval_s = serializers.IntegerField(min_value=30, max_value=86_400, default=600)


class AutoscalingSerializer(StrictSerializer):
    """How a serverless endpoint scales (docs/serverless.md, "Autoscaling"). A value left out takes its default;
    reads show every value as applied."""

    # The bounds here shape the schema; the rules between values (min <= max, what the devices allow) are
    # provisioning.domain.workload_rules.autoscaling_check's, which every caller runs.
    min_replicas = serializers.IntegerField(
        min_value=0, default=0, help_text="Replicas always running: 0 scales to zero once idle; 1 or more never does."
    )
    max_replicas = serializers.IntegerField(
        min_value=1,
        required=False,
        help_text="The most replicas; default: all placed devices but one, kept for a rollout (one device: 1).",
    )
    target_in_flight = serializers.IntegerField(
        min_value=1,
        max_value=MAX_TARGET_IN_FLIGHT,
        default=DEFAULT_TARGET_IN_FLIGHT,
        help_text="Requests waiting and in flight per replica that the replicas are scaled to.",
    )
    scale_up_window_s = serializers.IntegerField(
        min_value=0,
        max_value=MAX_WINDOW_S,
        default=DEFAULT_SCALE_UP_WINDOW_S,
        help_text="Seconds of demand considered before scaling up (0: at once).",
    )
    scale_down_window_s = serializers.IntegerField(
        min_value=0,
        max_value=MAX_WINDOW_S,
        default=DEFAULT_SCALE_DOWN_WINDOW_S,
        help_text="Seconds of lower demand before scaling down.",
    )
    idle_seconds = serializers.IntegerField(
        min_value=MIN_IDLE_SECONDS,
        max_value=MAX_IDLE_SECONDS,
        required=False,
        help_text="With min_replicas 0: seconds of an empty queue before it goes to zero; default: the operator's.",
    )
    buffer_replicas = serializers.IntegerField(
        min_value=0, default=0, help_text="Replicas kept warm beyond demand while the endpoint is active."
    )
    signal = serializers.ChoiceField(
        choices=list(SIGNALS),
        default=QUEUE_DEPTH,
        help_text="queue_depth: requests waiting and in flight; kv_cache: also vLLM's KV cache use.",
    )
    kv_cache_target = serializers.DecimalField(
        max_digits=4,
        decimal_places=3,
        min_value=Decimal(0),
        max_value=Decimal(1),
        required=False,
        help_text='With "signal": "kv_cache": the KV cache use per replica scaled to, a fraction above 0 and at most '
        "1 (default 0.8); answered as a decimal string.",
    )


class WorkloadModelSerializer(StrictSerializer):
    size_gb = serializers.FloatField(
        min_value=0, max_value=MAX_MODEL_GB, help_text="The weights' size in GB (an 8B model in fp16: 16)."
    )
    volume = IdField(
        required=False,
        help_text="One of this workload's volumes (in volumes, read-only): the model cache the weights are read "
        "from, its mount path in LADDER_MODEL_DIR. Without it the weights are downloaded at start.",
    )


_ARG = serializers.CharField(max_length=MAX_ARG_BYTES, trim_whitespace=False, allow_blank=True)


class WorkloadSerializer(StrictSerializer):
    image = serializers.CharField(
        max_length=512, required=False, help_text="An OCI reference from an allowed registry."
    )
    command = serializers.ListField(
        child=serializers.CharField(max_length=MAX_ARG_BYTES, trim_whitespace=False),
        max_length=MAX_ARGV,
        required=False,
    )
    args = serializers.ListField(
        child=serializers.CharField(max_length=MAX_ARG_BYTES, trim_whitespace=False),
        max_length=MAX_ARGV,
        required=False,
    )
    env = EnvSerializer(many=True, required=False, help_text="Plain values; use secrets for anything sensitive.")
    secrets = SecretRefSerializer(many=True, required=False, help_text="Names of your secrets (/api/v1/secrets).")
    ports = PortSerializer(many=True, required=False)
    volumes = VolumeSerializer(many=True, required=False)
    checkpoint = CheckpointSerializer(required=False, help_text="Jobs: where and how often they save.")
    os_image = serializers.CharField(max_length=64, required=False, help_text="vm and bare_metal: from the catalog.")
    cloud_init = serializers.CharField(max_length=MAX_CLOUD_INIT_BYTES, required=False, trim_whitespace=False)
    ssh_keys = serializers.ListField(
        child=serializers.IntegerField(min_value=1), max_length=32, required=False, help_text="Ids of your SSH keys."
    )
    pull_secret = serializers.CharField(
        max_length=100, required=False, help_text='A secret of yours holding "user:token" for the image\'s registry.'
    )
    framework = serializers.ChoiceField(
        choices=[f.value for f in Framework],
        default=DEFAULT_FRAMEWORK.value,
        help_text="Jobs: torchrun (an Indexed Job), mpi (an MPIJob), ray (a RayJob) or slurm (a Slurm cluster "
        "reached over SSH); docs/jobs.md.",
    )
    autoscaling = AutoscalingSerializer(required=False, help_text="Serverless: how the endpoint scales.")
    model = WorkloadModelSerializer(
        required=False,
        help_text="Serverless: what a replica loads before it is warm, for its cold start (docs/serverless.md).",
    )
    idle_stop_after = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Containers, VMs and jobs: stop it after this many minutes with its GPUs idle (SM active under "
        "1%), with notice five minutes before (docs/telemetry.md).",
    )

    @staticmethod
    def build(data: dict[str, Any]) -> Workload:
        """The workload of validated data, which has the shape of its stored form."""
        return Workload.from_json(data)


# --- logs and events ----------------------------------------------------------------------------------------


class LogLineSerializer(serializers.Serializer[Any]):
    at = serializers.DateTimeField()
    # Declared fields leave the class namespace (DRF's metaclass), so this shadows nothing at run time.
    source = serializers.CharField()  # type: ignore[assignment]
    text = serializers.CharField()


class LogsSerializer(serializers.Serializer[Any]):
    lines = LogLineSerializer(many=True)
    next_since = serializers.DateTimeField(allow_null=True, help_text="Pass as since= to read only newer lines.")


class EventSerializer(serializers.Serializer[Any]):
    at = serializers.DateTimeField()
    source = serializers.CharField(  # type: ignore[assignment]
        help_text='"ladder" for the allocation\'s own changes, else what reported it.'
    )
    type = serializers.CharField()
    reason = serializers.CharField()
    message = serializers.CharField()


class LogsQuerySerializer(StrictSerializer):
    since = serializers.DateTimeField(required=False, help_text="Only lines after this moment (ISO 8601).")
    tail = serializers.IntegerField(min_value=1, max_value=MAX_LINES, required=False, help_text="The last N lines.")
    follow = serializers.BooleanField(default=False, help_text="Keep the answer open and stream new lines (NDJSON).")


def _line(line: LogLine) -> dict[str, Any]:
    return {"at": line.at, "source": line.source, "text": line.text}


def _ndjson(line: LogLine) -> bytes:
    return (json.dumps({"at": line.at.isoformat(), "source": line.source, "text": line.text}) + "\n").encode()


def _follow(allocation_id: int, since: datetime | None, tail: int | None) -> Iterator[bytes]:
    """New lines as they are written, until the allocation ends or LADDER_LOG_FOLLOW_SECONDS pass."""
    driver = provisioner()
    deadline = time.monotonic() + settings.LADDER_LOG_FOLLOW_SECONDS
    first = True
    while True:
        allocation = Allocation.objects.select_related("tenant", "hall", "gpu_model").get(pk=allocation_id)
        lines = driver.logs(allocation, since=since, tail=tail if first else None)
        first = False
        for line in lines:
            yield _ndjson(line)
        if lines:
            since = lines[-1].at
        if allocation.state not in WORKING or time.monotonic() >= deadline:
            return
        time.sleep(settings.LADDER_LOG_FOLLOW_POLL_SECONDS)


def _said(event: AuditEvent) -> str:
    """One of Ladder's own allocation events in words."""
    if event.data.get("reason"):
        return str(event.data["reason"])
    if event.action == "allocation.placed":
        return f"Placed on {', '.join(event.data.get('hosts') or [])} by {event.actor_label}"
    return f"The allocation is {event.action.removeprefix('allocation.')} ({event.actor_label})"


class AllocationWorkloadActions:
    """The logs and events of an allocation (mixed into ``AllocationViewSet``: same tenant scoping, same 404)."""

    role_actions: ClassVar[dict[str, Any]]
    get_object: Any

    @extend_schema(
        parameters=[LogsQuerySerializer],
        responses={(200, "application/json"): LogsSerializer, (200, "application/x-ndjson"): OpenApiTypes.STR},
    )
    @action(detail=True, methods=["get"])
    def logs(self, request: Request, pk: str) -> Any:
        """The workload's output in time order (a VM's serial console; a job's members, merged). ``follow=1``
        streams new lines as NDJSON until the allocation ends."""
        query = LogsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        allocation = self.get_object()
        since, tail = query.validated_data.get("since"), query.validated_data.get("tail")
        if query.validated_data["follow"]:
            response = StreamingHttpResponse(_follow(allocation.pk, since, tail), content_type="application/x-ndjson")
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"  # proxies pass lines on as they come
            return response
        lines = provisioner().logs(allocation, since=since, tail=tail)
        body = {"lines": [_line(x) for x in lines], "next_since": lines[-1].at if lines else since}
        return Response(LogsSerializer(body).data)

    @extend_schema(responses=EventSerializer(many=True), filters=False)
    @action(detail=True, methods=["get"], pagination_class=None, filterset_class=None)  # one allocation's, whole
    def events(self, request: Request, pk: str) -> Response:
        """What happened to the allocation, in time order: Ladder's own changes (placed, provisioning, running,
        stopped...) and what the backend reports (scheduling, pulls, starts, restarts, faults, checkpoints)."""
        allocation = self.get_object()
        ours = AuditEvent.objects.filter(
            tenant=allocation.tenant_id, target_type="allocation", target_id=str(allocation.pk)
        ).order_by("seq")
        events = [
            {
                "at": e.at,
                "source": "ladder",
                "type": "Warning" if e.action in ("allocation.failed",) else "Normal",
                "reason": e.action.removeprefix("allocation."),
                "message": _said(e),
            }
            for e in ours
        ]
        events += [
            {"at": e.at, "source": e.source or "workload", "type": e.type, "reason": e.reason, "message": e.message}
            for e in provisioner().events(allocation)
        ]
        events.sort(key=lambda e: e["at"])
        return Response(EventSerializer(events, many=True).data)


# --- serverless endpoints -------------------------------------------------------------------------------------


@extend_schema(exclude=True)  # the tenant's own service, not Ladder's API
class SimulatedEndpointView(LadderView):
    """A serverless endpoint on the simulated fleet, served by Ladder itself so ``make run`` can call it: the
    same key check as the gateway's, then an answer in the shape a model server gives. Payloads are kept as
    ``inference_payload`` assets only when the tenant's capture policy asks. Limited as the gateway's check is."""

    base_permissions: ClassVar[list[type]] = [AllowAny]
    authentication_classes = ()
    throttle_classes = ()  # counted per tenant and endpoint by the service, as behind the gateway

    def _call(self, request: Request, allocation_id: int, path: str) -> Response:
        received = timezone.now()
        answer = endpoint_call(
            allocation_id=allocation_id,
            api_key=bearer(request),
            request_body=request.body,
            path=path,
        )
        # Its queue delay (held by a wake) and execution time, kept without a database write (docs/serverless.md).
        endpoint_request_observe(allocation_id=allocation_id, received_at=received, answered_at=timezone.now())
        return Response(answer)

    @extend_schema(request=OpenApiTypes.BINARY, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, allocation_id: int, path: str = "") -> Response:
        return self._call(request, allocation_id, path)

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, allocation_id: int, path: str = "") -> Response:
        return self._call(request, allocation_id, path)
