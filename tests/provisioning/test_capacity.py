"""Capacity samples: GPUs, idle and stranded capacity per GPU model and hall, for finance's margin."""

from __future__ import annotations

from datetime import timedelta

from provisioning.models import CapacitySample, Hall, Node
from provisioning.services.capacity import capacity_sample
from tests.support.billing import BASE, load_fleet, place


def samples():
    return {s.hall.code: s for s in CapacitySample.objects.select_related("hall")}


def test_a_sample_counts_the_gpus_and_what_is_idle_and_stranded(acme, settings):
    settings.LADDER_CAPACITY_SAMPLE_EVERY_SECONDS = 300
    load_fleet()
    place(acme, gpus=2)
    place(acme, mig_profile="3g.40gb")
    place(acme, mig_profile="3g.40gb")  # two 3g slices on one GPU: its seventh compute slice is stranded
    assert capacity_sample(now=BASE) > 0
    sample = samples()["eu-west-1a"]
    gpus = sum(Node.objects.filter(hall=Hall.objects.get(code="eu-west-1a")).values_list("gpu_count", flat=True))
    assert sample.gpus == gpus
    assert sample.seconds == 300  # the first sample stands for one period
    assert sample.stranded_milli == 143  # 1/7 of a GPU
    assert sample.idle_milli == 1000 * (gpus - 3)  # two whole GPUs and the MIG GPU are not idle


def test_a_sample_stands_for_the_time_since_the_last_at_most_two_periods(acme, settings):
    settings.LADDER_CAPACITY_SAMPLE_EVERY_SECONDS = 300
    load_fleet()
    capacity_sample(now=BASE)
    capacity_sample(now=BASE + timedelta(seconds=290))
    capacity_sample(now=BASE + timedelta(hours=5))  # the beat stopped: the gap is not billed to one sample
    seconds = sorted(set(CapacitySample.objects.values_list("at", "seconds")))
    assert [s for _, s in seconds] == [300, 290, 600]
    assert capacity_sample(now=BASE + timedelta(hours=5)) == 0  # the same moment twice writes nothing
