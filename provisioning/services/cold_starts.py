"""What makes a serverless endpoint's cold start shorter, and what its requests wait: where its image is pulled in
advance when it goes idle, the simulated fleet's record of which host holds which image and the cold start it
models from it, and the per-request samples of queue delay and execution time.

- ``prepull_hosts``: the hosts an idle endpoint's next replica is likely to take: the ones it last ran on, and
  where the placement engine would put it now (``PlacementEngine.preview``: nothing placed, nothing counted).
- ``images_pulled`` / ``simulated_cold_start``: the simulated fleet's hosts hold the images their replicas ran or
  were pulled in advance (``NodeImage``); a woken replica's cold start follows ``provisioning.domain.cold_start``.
- ``endpoint_request_observe``: one request's queue delay (how long a wake held it) and execution time, kept in a
  bounded window per endpoint in the default cache: no database write per request. Read by
  ``provisioning.selectors.endpoint_request_samples``.
- ``endpoint_hold_observe``: how long the gateway's check held a request while its endpoint woke, whatever the
  driver: on Kubernetes the gateway's own histograms give the execution time and the number of requests, and these
  holds are the queue delay among them (``provisioning.drivers.kubernetes.gateway_stats``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.cache import samples_append
from provisioning.domain.cold_start import Bandwidths, ColdStart, cold_start, model_source
from provisioning.domain.placement.decision import Placement
from provisioning.domain.workloads import STOCK_IMAGE
from provisioning.fleet_cache import fleet_read
from provisioning.models import Allocation, Node, NodeImage
from provisioning.selectors import hold_samples_key, request_samples_key, tenant_policy
from provisioning.services.placing import AllocationSpec, priced_request

log = logging.getLogger(__name__)

REQUEST_SAMPLES_KEPT = 512  # the last requests of each endpoint whose queue delay and execution time are kept
REQUEST_SAMPLES_SECONDS = 7 * 86_400  # an endpoint nobody called for a week keeps no samples


def endpoint_image(allocation: Allocation) -> str:
    """The image an endpoint's replicas run (the stock image when its workload names none)."""
    workload = allocation.workload_spec.workload
    return (workload.image if workload is not None else None) or STOCK_IMAGE


def active_hosts(allocation: Allocation) -> tuple[str, ...]:
    """The hosts of the devices the allocation holds now."""
    return tuple(sorted(set(allocation.devices.filter(active=True).values_list("hostname", flat=True))))


# --- pre-pull --------------------------------------------------------------------------------------------------


def prepull_hosts(*, allocation: Allocation, last_hosts: Iterable[str]) -> tuple[str, ...]:
    """Where an endpoint that just went idle is likely to run next: the hosts it ran on (its devices went back to
    the engine, and are the likeliest to be free again) and the hosts the engine would give it now. Nothing is
    placed or counted in asking (``PlacementEngine.preview``); a shape with no price now, or no room, adds none."""
    hosts = set(last_hosts)
    tenant = allocation.tenant
    try:
        request = priced_request(AllocationSpec.from_json(allocation.spec), at=timezone.now())
    except LookupError:  # no price source installed: nothing to ask the engine
        return tuple(sorted(hosts))
    with fleet_read() as fleet:
        assert fleet.engine is not None  # noqa: S101 - fleet_read synced it
        found = fleet.engine.preview(request, tenant_policy(tenant), quota_milli=tenant.gpu_quota_milli)
    if isinstance(found, Placement):
        hosts |= {device.hostname for device in found.devices}
    return tuple(sorted(hosts))


# --- the simulated fleet's images ---------------------------------------------------------------------------------


def images_pulled(*, hostnames: Iterable[str], image: str, at: datetime | None = None) -> int:
    """The simulated hosts now hold ``image`` (a replica ran it there, or it was pulled in advance); how many did
    not before. A host that holds it already keeps its first pull's time."""
    nodes = list(Node.objects.filter(hostname__in=set(hostnames)).values_list("pk", flat=True))
    held = set(NodeImage.objects.filter(node_id__in=nodes, image=image).values_list("node_id", flat=True))
    added = 0
    for node_id in sorted(set(nodes) - held):
        try:
            with transaction.atomic():  # a pull another process recorded meanwhile is the same fact
                NodeImage.objects.create(node_id=node_id, image=image, pulled_at=at or timezone.now())
        except IntegrityError:
            continue
        added += 1
    return added


def images_held(hostnames: Iterable[str], image: str) -> bool:
    """Every one of the hosts holds the image (so no replica placed there pulls it)."""
    wanted = set(hostnames)
    if not wanted:
        return False
    holding = NodeImage.objects.filter(node__hostname__in=wanted, image=image).values_list("node__hostname", flat=True)
    return set(holding) >= wanted


def simulated_cold_start(allocation: Allocation) -> ColdStart:
    """A woken endpoint's cold start on the simulated fleet (``provisioning.domain.cold_start``): the device wait
    is ``LADDER_SIM_PROVISION_SECONDS``; the image (``LADDER_SIM_IMAGE_GB``) comes down at the registry's
    bandwidth unless every host the replica was placed on holds it; then the fixed init and the workload's model
    at the hub's or the model cache volume's bandwidth."""
    workload = allocation.workload_spec.workload
    model = workload.model if workload is not None else None
    return cold_start(
        device_wait_s=settings.LADDER_SIM_PROVISION_SECONDS,
        image_gb=settings.LADDER_SIM_IMAGE_GB,
        image_cached=images_held(active_hosts(allocation), endpoint_image(allocation)),
        model_gb=float(model.size_gb) if model is not None else 0.0,
        model_source=model_source(workload),
        init_s=settings.LADDER_SIM_INIT_SECONDS,
        bandwidths=Bandwidths(
            registry=settings.LADDER_SIM_REGISTRY_GB_PER_SECOND,
            hub=settings.LADDER_SIM_HUB_GB_PER_SECOND,
            volume=settings.LADDER_SIM_VOLUME_GB_PER_SECOND,
        ),
    )


# --- queue delay and execution time per request ----------------------------------------------------------------


def endpoint_request_observe(*, allocation_id: int, received_at: datetime, answered_at: datetime) -> None:
    """One request to an endpoint, answered: how long it waited before a replica took it (the time a wake held it:
    from its arrival until the endpoint ran, or 0 when it was running already) and how long it then took. Kept as
    the endpoint's last ``REQUEST_SAMPLES_KEPT`` samples in the default cache (one read of the endpoint's row, no
    write to the database)."""
    running_since = Allocation.objects.filter(pk=allocation_id).values_list("running_since", flat=True).first()
    began = max(received_at, running_since) if running_since is not None else received_at
    queue_ms = max(0, round((began - received_at).total_seconds() * 1000))
    execution_ms = max(0, round((answered_at - began).total_seconds() * 1000))
    samples_append(
        request_samples_key(allocation_id),
        [queue_ms, execution_ms],
        keep=REQUEST_SAMPLES_KEPT,
        timeout=REQUEST_SAMPLES_SECONDS,
    )


def endpoint_hold_observe(*, allocation_id: int, held_ms: int, at: datetime) -> None:
    """The gateway's check held one request ``held_ms`` while its endpoint woke, answering at ``at``; the
    endpoint's last ``REQUEST_SAMPLES_KEPT`` holds are kept in the default cache as (unix seconds, ms)."""
    samples_append(
        hold_samples_key(allocation_id),
        [round(at.timestamp(), 3), max(0, held_ms)],
        keep=REQUEST_SAMPLES_KEPT,
        timeout=REQUEST_SAMPLES_SECONDS,
    )
