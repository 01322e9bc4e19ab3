"""An allocation's GPU metrics at the API: ``GET /api/v1/allocations/{id}/metrics?from=&to=&step=`` (mixed into
``AllocationViewSet``: the same tenant scoping, so another tenant's id answers 404). SM active, tensor active,
DRAM active, memory used and total, power and temperature, per device and combined, with findings in plain words;
read from the operator's Prometheus by ``provisioning.telemetry`` (docs/telemetry.md), never written by the read."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.serializers import StrictSerializer
from billing.selectors import pool_hourly_prices
from core.errors import Invalid
from provisioning.telemetry import MAX_POINTS, METRICS, PER_DEVICE_MAX, allocation_metrics, devices_described

DEFAULT_SPAN = timedelta(hours=1)
DEFAULT_POINTS = 240  # a chart's width: the step a read without one gets is the span over this


class MetricsQuerySerializer(StrictSerializer):
    step = serializers.IntegerField(
        min_value=1, required=False, help_text="Seconds between points (default: the span over 240)."
    )

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()  # "from" is a keyword in Python: declared here
        fields["from"] = serializers.DateTimeField(required=False, help_text="From (ISO 8601; default: an hour ago).")
        fields["to"] = serializers.DateTimeField(required=False, help_text="To (ISO 8601; default: now).")
        return fields


class MetricsDeviceSerializer(serializers.Serializer[Any]):
    key = serializers.CharField(help_text="The device's name in `metrics`: its UUID, and /<GPU instance> for MIG.")
    scope = serializers.ChoiceField(
        choices=["device", "gpu"],
        help_text="device: the allocation's own; gpu: the whole GPU's totals (a soft share), not the process's own.",
    )
    hostname = serializers.CharField()
    gpu_index = serializers.IntegerField()
    uuid = serializers.CharField()
    mig_profile = serializers.CharField(allow_null=True)
    gpu_instance = serializers.IntegerField(allow_null=True)
    share_milli = serializers.IntegerField(allow_null=True)
    held_since = serializers.DateTimeField()
    released_at = serializers.DateTimeField(allow_null=True)


class MetricSerializer(serializers.Serializer[Any]):
    unit = serializers.CharField(help_text="ratio (0..1 of cycles), MiB, W or C.")
    combined = serializers.CharField(help_text="How the devices' values make `all`: mean, sum or max.")
    all = serializers.ListField(child=serializers.ListField(), help_text="[unix seconds, value] pairs.")
    devices = serializers.DictField(
        child=serializers.ListField(child=serializers.ListField()),
        help_text="Per device key, [unix seconds, value]; empty when `per_device` is false, and for `memory_peak` "
        "(per device, it is `memory_used`).",
    )


class MetricsSerializer(serializers.Serializer[Any]):
    allocation = serializers.IntegerField()
    step_seconds = serializers.IntegerField()
    devices = MetricsDeviceSerializer(many=True)
    metrics = serializers.DictField(child=MetricSerializer())
    findings = serializers.ListField(child=serializers.CharField(), help_text="What the series say, in words.")
    unavailable = serializers.CharField(allow_null=True, help_text="Why there are no series (Prometheus), or null.")
    resolution = serializers.ChoiceField(
        choices=["raw", "5m"],
        help_text="raw: each point the exporter's sample at that instant; 5m: each point the mean (the most, for "
        "a metric combined by max) of the allocation's five-minute rollups over the step before it.",
    )
    per_device = serializers.BooleanField(
        help_text=f"Whether `devices` of each metric holds per-device series: up to {PER_DEVICE_MAX} devices; above "
        "that only the combined series are read."
    )

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField()
        fields["to"] = serializers.DateTimeField()
        return fields


class AllocationMetricsActions:
    """An allocation's GPU metrics (mixed into ``AllocationViewSet``)."""

    role_actions: ClassVar[dict[str, Any]]
    get_object: Any

    @extend_schema(parameters=[MetricsQuerySerializer], responses={200: MetricsSerializer}, filters=False)
    @action(detail=True, methods=["get"], pagination_class=None, filterset_class=None)
    def metrics(self, request: Request, pk: str) -> Response:
        """What the allocation's GPUs did: SM active, tensor active and DRAM active (ratios of cycles), memory used,
        the most one device used, and total (MiB), power (W) and temperature (C), combined and, up to 16 devices,
        per device, from NVIDIA's dcgm-exporter through Prometheus, with findings in words ("idle for 47 of the last
        60 minutes"). Only the devices the allocation held, while it held them. At a step of five minutes or more
        the points are the allocation's five-minute rollups where Prometheus records them (`resolution`). A MIG
        slice has no power or temperature of its own (its GPU's are shared with the other instances); a soft share
        reads its GPU's totals (scope `gpu`)."""
        query = MetricsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        allocation = self.get_object()
        end = query.validated_data.get("to") or timezone.now()
        start = query.validated_data.get("from") or end - DEFAULT_SPAN
        if start >= end:
            raise Invalid("metrics_bad_range", "`from` must be before `to`.")
        span = (end - start).total_seconds()
        step = query.validated_data.get("step") or max(1, round(span / DEFAULT_POINTS))
        if span / step > MAX_POINTS:
            raise Invalid(
                "metrics_too_many_points",
                f"{span:.0f} s every {step} s is {span / step:.0f} points; at most {MAX_POINTS}: a longer step.",
            )
        prices = pool_hourly_prices(allocation=allocation, now=end)
        found = allocation_metrics(allocation, start=start, end=end, step_seconds=step, prices=prices)
        metrics = {
            m.name: {
                "unit": m.unit,
                "combined": m.combine,
                "all": [[t, v] for t, v in found.combined.get(m.name, [])],
                "devices": {k: [[t, v] for t, v in pts] for k, pts in found.series.get(m.name, {}).items()},
            }
            for m in METRICS
        }
        body = {
            "allocation": allocation.pk,
            "from": start,
            "to": end,
            "step_seconds": step,
            "devices": devices_described(found),
            "metrics": metrics,
            "findings": found.findings,
            "unavailable": found.unavailable,
            "resolution": found.resolution,
            "per_device": found.per_device,
        }
        return Response(MetricsSerializer(body).data)
