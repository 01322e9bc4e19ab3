"""The simulated fleet's dcgm-exporter over HTTP (``provisioning.simulated_exporter``): each simulated node's
exposition at ``/simulated/dcgm/<hostname>/metrics``, and the nodes for Prometheus's HTTP service discovery at
``/simulated/dcgm/targets``. Served only while the simulated fleet is the provisioner (else 404): on Kubernetes
the nodes' own exporters are scraped. Plain Django views: what Prometheus reads is no API of Ladder's."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from provisioning.simulated_exporter import exporter_targets, node_exposition, served

EXPOSITION = "text/plain; version=0.0.4; charset=utf-8"


@require_GET
def targets(request: HttpRequest) -> JsonResponse:
    if not served():
        raise Http404("The simulated fleet is not the provisioner.")
    return JsonResponse(exporter_targets(request.build_absolute_uri("/")), safe=False)


@require_GET
def node_metrics(request: HttpRequest, hostname: str) -> HttpResponse:
    if not served():
        raise Http404("The simulated fleet is not the provisioner.")
    text = node_exposition(hostname, now=timezone.now())
    if text is None:
        raise Http404(f"No simulated node {hostname}.")
    return HttpResponse(text, content_type=EXPOSITION)
