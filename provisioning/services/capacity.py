"""Sampling the fleet's capacity for finance: per GPU model and hall, how many GPUs there are and how much of them
is idle or stranded at a moment (the engine's fragmentation figures), written by the beat task
``capacity-sample``. Finance prices the samples with the cost basis (``billing.selectors.margin_report``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from provisioning.domain.placement.fragmentation import fragmentation
from provisioning.domain.placement.mig import COMPUTE_SLICES
from provisioning.fleet_cache import fleet_read
from provisioning.models import CapacitySample, GpuModel, Hall


def capacity_sample(*, now: datetime) -> int:
    """Write one sample per (GPU model, hall) of the fleet at ``now``; returns how many. A sample stands for the
    time since the previous one, at most twice the sampling period (a beat that stopped for a day does not bill
    the day to the next sample), and one period for the first. A second call at the same moment writes nothing."""
    period = int(settings.LADDER_CAPACITY_SAMPLE_EVERY_SECONDS)
    with fleet_read() as fleet:
        figures = fragmentation(fleet.state)
    halls = dict(Hall.objects.values_list("code", "id"))
    models = dict(GpuModel.objects.values_list("name", "id"))
    with transaction.atomic():
        last = CapacitySample.objects.filter(at__lte=now).order_by("-at").values_list("at", flat=True).first()
        if last == now:
            return 0
        seconds = period if last is None else min(int((now - last) / timedelta(seconds=1)), 2 * period)
        rows = []
        for pool in figures:
            stranded_milli = round(pool.stranded_mig_slices * 1000 / COMPUTE_SLICES)
            unallocated_milli = round(pool.unallocated_gpus * 1000)
            rows.append(
                CapacitySample(
                    at=now,
                    seconds=max(seconds, 0),
                    hall_id=halls[pool.hall],
                    gpu_model_id=models[pool.model],
                    gpus=pool.gpus,
                    idle_milli=max(unallocated_milli - stranded_milli, 0),
                    stranded_milli=min(stranded_milli, unallocated_milli),
                )
            )
        CapacitySample.objects.bulk_create(rows)
    return len(rows)
