"""``GET /api/v1/allocations/{id}/metrics`` against a real Prometheus scraping the simulated fleet's dcgm-exporter
(one target per node, as the exporter's DaemonSet is scraped): a tenant reads its whole GPU, its MIG slice and its
soft share, each as the exporter reports it, and never a series of another tenant's device, even when an exporter
labels those series with the tenant's own pod."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from provisioning.domain.gpu_metrics import POWER, SM_ACTIVE, DeviceLabels, exposition
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, AllocationDevice
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
