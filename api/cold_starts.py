"""A serverless endpoint's cold starts at the API: ``GET /api/v1/allocations/{id}/cold-starts`` (mixed into
``AllocationViewSet``: the same tenant scoping, so another tenant's id answers 404). How many wakes, P50/P90/P99
(nearest rank) of their totals and of each phase, of its requests' queue delay and execution time, and its latest
wakes; read from ``provisioning.selectors.cold_start_figures`` and the driver's ``request_times`` (on Kubernetes, the
gateway's histograms in Prometheus), never written by the read."""

from __future__ import annotations

from typing import Any, ClassVar

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from core.errors import Conflict
from provisioning.domain.cold_start import ModelSource, Percentiles
from provisioning.domain.rungs import rung_facts
from provisioning.drivers.base import provisioner
from provisioning.models import EndpointColdStart
from provisioning.selectors import COLD_STARTS_COUNTED, COLD_STARTS_RECENT, cold_start_figures


class PercentilesSerializer(serializers.Serializer[Any]):
    count = serializers.IntegerField(help_text="Samples the percentiles are of.")
    p50_ms = serializers.IntegerField(allow_null=True, help_text="Nearest-rank P50, ms; null: no sample.")
    p90_ms = serializers.IntegerField(allow_null=True)
    p99_ms = serializers.IntegerField(allow_null=True)


class ColdStartPhasesSerializer(serializers.Serializer[Any]):
    device_wait = PercentilesSerializer(help_text="From the wake until a device is placed and the replica scheduled.")
    image_pull = PercentilesSerializer(help_text="The image coming down; 0 when it was on the node already.")
    model_load = PercentilesSerializer(help_text="From the container's start until warm: the init and the weights.")


class ColdStartSerializer(serializers.ModelSerializer[EndpointColdStart]):
    model_source = serializers.ChoiceField(
        choices=[s.value for s in ModelSource],
        help_text="hub: downloaded at start; volume: read from the model cache; none: the workload names no model.",
    )

    class Meta:
        model = EndpointColdStart
        fields = [
            "woke_at",
            "ready_at",
            "total_ms",
            "device_wait_ms",
            "image_pull_ms",
            "model_load_ms",
            "image_cached",
            "model_source",
        ]
        read_only_fields = fields


class ColdStartsSerializer(serializers.Serializer[Any]):
    allocation = serializers.IntegerField()
    count = serializers.IntegerField(help_text="Wakes from zero replicas so far.")
    total = PercentilesSerializer(help_text=f"Wake to warm, of the last {COLD_STARTS_COUNTED} wakes at most.")
    phases = ColdStartPhasesSerializer(
        help_text="Each phase; a phase the backend did not report for a wake is left out of its percentiles."
    )
    queue_delay = PercentilesSerializer(
        help_text="How long a request waited before a replica took it: held by a wake, else 0 (docs/serverless.md)."
    )
    execution = PercentilesSerializer(help_text="How long a request took once a replica had it.")
    requests_window = serializers.CharField(
        help_text="What the request figures cover: the simulated fleet's last requests, or on Kubernetes the last "
        "24 hours of the gateway's request histograms in Prometheus."
    )
    requests_unavailable = serializers.CharField(
        allow_null=True, help_text="Why the request figures count nothing now (Prometheus did not answer), or null."
    )
    recent = ColdStartSerializer(many=True, help_text=f"The last {COLD_STARTS_RECENT} wakes, newest first.")


def _percentiles(found: Percentiles) -> dict[str, int | None]:
    return {"count": found.count, "p50_ms": found.p50, "p90_ms": found.p90, "p99_ms": found.p99}


class AllocationColdStartActions:
    """An endpoint's cold starts (mixed into ``AllocationViewSet``: same tenant scoping, same 404)."""

    role_actions: ClassVar[dict[str, Any]]
    get_object: Any

    @extend_schema(
        responses={200: ColdStartsSerializer, 409: OpenApiResponse(description="Not a serverless endpoint.")},
        filters=False,
    )
    @action(
        detail=True, methods=["get"], url_path="cold-starts", pagination_class=None, filterset_class=None
    )  # one endpoint's, whole
    def cold_starts(self, request: Request, pk: str) -> Response:
        """A serverless endpoint's cold starts (each wake from zero replicas until a replica was warm) and its
        requests: P50/P90/P99 of the wakes' totals and of each phase (device wait, image pull, model load), of the
        requests' queue delay and execution time, and the latest wakes with their phases."""
        allocation = self.get_object()
        if not rung_facts(allocation.rung).endpoint:
            raise Conflict(
                "not_an_endpoint", f"Allocation {allocation.pk} is not a serverless endpoint: it has no cold starts."
            )
        figures = cold_start_figures(allocation)
        requests = provisioner().request_times([allocation.pk], now=timezone.now())[allocation.pk]
        body = {
            "allocation": allocation.pk,
            "count": figures["count"],
            "total": _percentiles(figures["total"]),
            "phases": {phase: _percentiles(found) for phase, found in figures["phases"].items()},
            "queue_delay": _percentiles(requests.queue_delay),
            "execution": _percentiles(requests.execution),
            "requests_window": requests.window,
            "requests_unavailable": requests.unavailable,
            "recent": ColdStartSerializer(figures["recent"], many=True).data,
        }
        return Response(ColdStartsSerializer(body).data)
