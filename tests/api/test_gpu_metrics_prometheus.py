"""``GET /api/v1/allocations/{id}/metrics`` against a real Prometheus scraping the simulated fleet's dcgm-exporter
(one target per node, as the exporter's DaemonSet is scraped): a tenant reads its whole GPU, its MIG slice and its
soft share, each as the exporter reports it, and never a series of another tenant's device, even when an exporter
labels those series with the tenant's own pod."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from provisioning.domain.gpu_metrics import POWER, SM_ACTIVE, DeviceLabels, exposition
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, AllocationDevice
from provisioning.telemetry import allocation_metrics
from tests.support.billing import load_fleet, place
from tests.support.dcgm import Exposition
from tests.support.prometheus import Prometheus

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def rogue() -> Iterator[dict[str, str]]:
    """An exporter whose text the test sets (``rogue["text"]``), served on a free port (``rogue["url"]``)."""
    state = {"text": ""}
    server = Exposition(lambda: state["text"])
    state["url"] = server.url
    yield state
    server.close()


def device(allocation: Allocation) -> AllocationDevice:
    return allocation.devices.get()


def read(api: Any, user: Any, allocation: Allocation) -> Any:
    now = timezone.now()
    query = {"from": (now - timedelta(seconds=20)).isoformat(), "to": now.isoformat(), "step": 1}
    return api(user).get(f"/api/v1/allocations/{allocation.pk}/metrics", query)


def values(body: dict[str, Any], metric: str) -> list[float]:
    return [v for points in body["metrics"][metric]["devices"].values() for _, v in points]


def test_a_tenant_reads_its_own_devices_as_the_exporter_reports_them_and_never_another_tenants(
    prometheus_clock: Prometheus, live_server: Any, rogue: dict[str, str], api: Any, acme: Any, alice: Any,
    globex: Any, charlie: Any, settings: Any,
) -> None:  # fmt: skip
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    load_fleet()
    job = place(acme, rung="job", gpus=1)  # trains: busy
    slice_ = place(acme, mig_profile="1g.10gb")  # a container with no command: idle
    share = place(acme, rung="serverless", share_mode="mps", share_milli=500)  # holds its model in memory
    theirs = place(globex, rung="job", gpus=1)
    allocations_reconcile()
    for allocation in (job, slice_, share, theirs):
        allocation.refresh_from_db()
        assert allocation.state == "running"
    mine = device(slice_)

    # An exporter that says acme's pod runs on globex's GPU, on the slice's sibling instance and on its GPU.
    pod = {"pod": f"ldr-{slice_.pk}-0", "namespace": "ladder-acme", "container": "worker"}
    lie = {SM_ACTIVE.name: 0.99, POWER.name: 650.0}
    sibling = 7 + ((mine.mig_start or 0) + 1) % 7  # another 1g instance's id on the same GPU
    other = device(theirs)
    rogue["text"] = exposition(
        [
            (DeviceLabels(other.gpu_index, other.gpu_uuid, "x", "NVIDIA H100 80GB HBM3", other.hostname, pod=pod), lie),
            (
                DeviceLabels(mine.gpu_index, mine.gpu_uuid, "x", "NVIDIA H100 80GB HBM3", mine.hostname,
                             mig_profile="1g.10gb", gpu_instance=sibling, pod=pod),
                lie,
            ),
            (DeviceLabels(mine.gpu_index, mine.gpu_uuid, "x", "NVIDIA H100 80GB HBM3", mine.hostname, pod=pod), lie),
        ]
    )  # fmt: skip
    hosts = sorted({d.hostname for a in (job, slice_, share, theirs) for d in a.devices.all()})
    instances = [prometheus_clock.scrape(h, f"{live_server.url}/simulated/dcgm/{h}/metrics") for h in hosts]
    instances.append(prometheus_clock.scrape("rogue", rogue["url"]))
    for instance in instances:
        prometheus_clock.scraped(instance)

    body = read(api, alice, job).json()
    assert body["unavailable"] is None
    ((key, sm),) = body["metrics"]["sm_active"]["devices"].items()
    assert key == device(job).gpu_uuid
    assert body["devices"][0]["scope"] == "device"
    assert sm
    assert all(0.8 <= v <= 0.92 for _, v in sm)
    assert set(values(body, "memory_used")) == {61440}  # three quarters of 80 GB, in MiB
    assert set(values(body, "memory_total")) == {81920}
    assert all(v > 500 for v in values(body, "power"))
    assert "uses 60 GB of 80 GB" in body["findings"]

    body = read(api, alice, slice_).json()
    (described,) = body["devices"]
    assert (described["mig_profile"], described["gpu_instance"]) == ("1g.10gb", 7 + (mine.mig_start or 0))
    assert list(body["metrics"]["sm_active"]["devices"]) == [f"{mine.gpu_uuid}/{described['gpu_instance']}"]
    assert all(v < 0.01 for v in values(body, "sm_active"))  # its own instance: idle, whatever the rogue says
    assert set(values(body, "memory_total")) == {10240}
    assert body["metrics"]["power"]["devices"] == {}  # the GPU's power is shared with its other instances
    assert body["metrics"]["temperature"]["devices"] == {}
    assert body["findings"][0].startswith("idle for ")

    body = read(api, alice, share).json()
    assert body["devices"][0]["scope"] == "gpu"  # the GPU's totals, labelled as the GPU's
    assert set(values(body, "memory_used")) == {round(0.6 * 40 * 1024)}  # its model: 60% of its half

    assert read(api, alice, theirs).status_code == 404
    theirs_body = read(api, charlie, theirs).json()
    assert all(v >= 0.8 for v in values(theirs_body, "sm_active"))

    # Read aggregated by Prometheus (as an allocation of more devices is), the same figures: the exact selectors
    # take neither the sibling instance nor the other tenant's GPU the rogue labels with acme's pod.
    now = timezone.now()
    for allocation in (job, slice_, share):
        combined = [
            allocation_metrics(
                allocation, start=now - timedelta(seconds=20), end=now, step_seconds=1, per_device_max=most
            ).combined
            for most in (1, 0)
        ]
        assert combined[1]["sm_active"]
        for metric in ("sm_active", "memory_used", "memory_peak", "memory_total", "power"):
            per_device, aggregated = (dict(c[metric]) for c in combined)
            assert per_device.keys() == aggregated.keys(), (allocation.rung, metric)
            assert list(aggregated.values()) == pytest.approx(list(per_device.values())), (allocation.rung, metric)

    # The five-minute rollups Prometheus records from the exporter joined with Ladder's own /metrics: a read at a
    # step of five minutes reads them, and they hold the same figures.
    prometheus_clock.scraped(prometheus_clock.scrape("ladder", f"{live_server.url}/metrics"))
    for allocation in (job, slice_, share, theirs):
        rolled_up(prometheus_clock, allocation)
    now = timezone.now()
    five = {"from": (now - timedelta(seconds=300)).isoformat(), "to": now.isoformat(), "step": 300}
    rolled = api(alice).get(f"/api/v1/allocations/{slice_.pk}/metrics", five).json()
    assert (rolled["resolution"], rolled["per_device"]) == ("5m", True)
    ((_, sm),) = rolled["metrics"]["sm_active"]["all"]
    assert sm < 0.01  # its own instance, never the sibling's 0.99 that the rogue labels with its pod
    assert [v for _, v in rolled["metrics"]["memory_total"]["all"]] == [10240]
    assert rolled["metrics"]["power"]["all"] == []  # a MIG instance has no power of its own
    rolled = api(alice).get(f"/api/v1/allocations/{job.pk}/metrics", five).json()
    ((_, sm),) = rolled["metrics"]["sm_active"]["all"]
    assert rolled["resolution"] == "5m"
    assert 0.8 <= sm <= 0.92
    assert [v for _, v in rolled["metrics"]["memory_peak"]["all"]] == [61440]


def rolled_up(prometheus: Prometheus, allocation: Allocation, timeout: float = 30) -> None:
    """Wait until Prometheus has recorded the allocation's rollups (its rules run every second here)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if prometheus.query(f'allocation:gpu_sm_active:avg5m{{allocation="{allocation.pk}"}}'):
            return
        time.sleep(0.2)
    raise AssertionError(f"no rollups of allocation {allocation.pk} within {timeout} s")
