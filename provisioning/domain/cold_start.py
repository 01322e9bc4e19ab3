"""A serverless replica's cold start, phase by phase, and the percentiles Ladder publishes of them (no Django).

A wake from zero replicas (``provisioning.services.endpoints.endpoint_wake``) lasts until a replica is warm. It is
three phases, one after the other:

- ``device_wait``: from the wake until a device is placed and the replica is scheduled on its node;
- ``image_pull``: the image coming down from its registry, 0 when it is on the node already (a replica ran there
  before, or it was pulled in advance: docs/serverless.md, "Cold starts");
- ``model_load``: from the container's start until it answers its readiness probe: a fixed init (the process, the
  CUDA context) and the model's weights, downloaded from a hub at the hub's bandwidth or read from a model cache
  volume at the volume's bandwidth.

``cold_start`` is the model the simulated fleet runs a wake by; ``observed`` splits one the Kubernetes driver read
from the cluster's own signals. ``percentiles`` gives the nearest-rank P50, P90 and P99 of a list of samples.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from provisioning.domain.workloads import Workload

MAX_MODEL_GB = 10_000  # the largest model a workload may name (GB): past every model served today, weights in fp16


class ModelSource(StrEnum):
    """Where a replica's weights come from."""

    NONE = "none"  # the workload names no model: nothing to load beyond the init
    HUB = "hub"  # downloaded at start (a model hub, an object store)
    VOLUME = "volume"  # read from the model cache: a read-only volume every replica mounts


def model_source(workload: Workload | None) -> ModelSource:
    """Where the workload's replicas take their weights from."""
    if workload is None or workload.model is None:
        return ModelSource.NONE
    return ModelSource.VOLUME if workload.model.volume is not None else ModelSource.HUB


@dataclass(frozen=True)
class Bandwidths:
    """GB a second: an image from its registry, weights from a hub, weights from a model cache volume."""

    registry: float
    hub: float
    volume: float

    def __post_init__(self) -> None:
        for name in ("registry", "hub", "volume"):
            if not getattr(self, name) > 0:
                raise ValueError(f"a {name} bandwidth is more than 0 GB a second")


@dataclass(frozen=True)
class ColdStart:
    """One cold start's phases in milliseconds; ``None``: the backend did not say (a phase the cluster's signals
    did not cover). ``image_cached``: the image was on the node already (``None``: not known)."""

    device_wait_ms: int | None
    image_pull_ms: int | None
    model_load_ms: int | None
    total_ms: int
    image_cached: bool | None
    model_source: ModelSource

    @property
    def phases(self) -> dict[str, int | None]:
        return {
            "device_wait": self.device_wait_ms,
            "image_pull": self.image_pull_ms,
            "model_load": self.model_load_ms,
        }


PHASES = ("device_wait", "image_pull", "model_load")


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


def cold_start(
    *,
    device_wait_s: float,
    image_gb: float,
    image_cached: bool,
    model_gb: float,
    model_source: ModelSource,
    init_s: float,
    bandwidths: Bandwidths,
) -> ColdStart:
    """The modelled cold start: the device wait as given, the image at the registry's bandwidth unless cached, and
    the init plus the weights at their source's bandwidth. The total is the sum of the phases."""
    if min(device_wait_s, image_gb, model_gb, init_s) < 0:
        raise ValueError("a cold start's times and sizes are 0 or more")
    if model_source is ModelSource.NONE and model_gb:
        raise ValueError("weights to load need a source: the hub or a volume")
    pull = 0 if image_cached else _ms(image_gb / bandwidths.registry)
    rate = bandwidths.volume if model_source is ModelSource.VOLUME else bandwidths.hub
    load = _ms(init_s + model_gb / rate)
    wait = _ms(device_wait_s)
    return ColdStart(
        device_wait_ms=wait,
        image_pull_ms=pull,
        model_load_ms=load,
        total_ms=wait + pull + load,
        image_cached=image_cached,
        model_source=model_source,
    )


def observed(
    *,
    woke_at: datetime,
    ready_at: datetime,
    scheduled_at: datetime | None,
    pull_s: float | None,
    model_source: ModelSource,
) -> ColdStart:
    """A cold start as a cluster reported it: scheduled at ``scheduled_at`` (the pod's ``PodScheduled``), the image
    pulled in ``pull_s`` seconds (0: already on the node; None: no word of it), warm at ``ready_at`` (its
    ``Ready``). The device wait ends at the scheduling, the pull follows it, and the model load is what is left up
    to ready; a phase its signal is missing for is ``None``, and so is the model load then. Times the cluster
    reports out of order (clocks a little apart) count as 0, never below."""
    total = _ms((ready_at - woke_at).total_seconds())
    wait = None if scheduled_at is None else min(total, _ms((scheduled_at - woke_at).total_seconds()))
    pull = None if pull_s is None else _ms(pull_s)
    load = None
    if wait is not None and pull is not None:
        pull = min(pull, total - wait)
        load = total - wait - pull
    return ColdStart(
        device_wait_ms=wait,
        image_pull_ms=pull,
        model_load_ms=load,
        total_ms=total,
        image_cached=None if pull_s is None else pull_s == 0,
        model_source=model_source,
    )


@dataclass(frozen=True)
class Percentiles:
    """Nearest-rank percentiles of ``count`` samples (all ``None`` when there are none)."""

    count: int
    p50: int | None
    p90: int | None
    p99: int | None

    def as_dict(self) -> dict[str, int | None]:
        return {"count": self.count, "p50": self.p50, "p90": self.p90, "p99": self.p99}


N = TypeVar("N", int, float)


def nearest_rank(ordered: Sequence[N], p: float) -> N:
    """The ``p``-th percentile (0 < p <= 100) of samples sorted ascending, by the nearest-rank method: the
    smallest sample with at least ``p`` per cent of the samples at or below it. Always one of the samples."""
    if not ordered:
        raise ValueError("no samples")
    if not 0 < p <= 100:
        raise ValueError("a percentile is more than 0 and at most 100")
    rank = math.ceil(p / 100 * len(ordered))
    return ordered[max(rank, 1) - 1]


def percentiles(samples: Iterable[int | None]) -> Percentiles:
    """P50, P90 and P99 of the samples, leaving out the ``None`` ones (a phase a backend did not report)."""
    ordered = sorted(s for s in samples if s is not None)
    if not ordered:
        return Percentiles(0, None, None, None)
    return Percentiles(
        count=len(ordered),
        p50=nearest_rank(ordered, 50),
        p90=nearest_rank(ordered, 90),
        p99=nearest_rank(ordered, 99),
    )


def percentiles_among(held: Iterable[int], requests: int) -> Percentiles:
    """P50, P90 and P99 of a wait over ``requests`` requests of which only ``held`` waited (in any order): the
    others waited 0. Nearest rank, without building a list of the zeros (a day of a busy endpoint is millions)."""
    ordered = sorted(held)
    total = max(requests, len(ordered))
    if total == 0:
        return Percentiles(0, None, None, None)
    zeros = total - len(ordered)

    def rank(p: float) -> int:
        at = max(math.ceil(p / 100 * total), 1)
        return 0 if at <= zeros else ordered[at - zeros - 1]

    return Percentiles(count=total, p50=rank(50), p90=rank(90), p99=rank(99))


@dataclass(frozen=True)
class RequestTimes:
    """An endpoint's requests as its driver reports them: the queue delay (how long a request waited before a
    replica took it) and the execution time (how long the replica then took), over ``window`` (said in words),
    or, when the source could not be read, ``unavailable`` saying why (the percentiles then count nothing)."""

    queue_delay: Percentiles
    execution: Percentiles
    window: str
    unavailable: str | None = None


NO_REQUESTS = Percentiles(0, None, None, None)
