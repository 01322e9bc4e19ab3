"""The operators' console from DCGM through a real Prometheus (three hours of the simulated fleet's exporters
replayed into it): the fleet map coloured by SM active, a held idle GPU marked; "Billed but idle": each tenant's
GPU-hours per rung, the idle ones (under 5% SM active) and the unreported ones (a node whose exporter said nothing);
the metering check listing the allocation billed for a device that reported nothing."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from provisioning.domain.workloads import Workload
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, AllocationDevice
from provisioning.services.placing import AllocationSpec, allocation_request
from tests.support import SYSTEM
from tests.support.billing import H100, load_fleet
from tests.support.consoles import signed_in
from tests.support.dcgm import Replay, replay_hosts
from tests.support.prometheus import Prometheus

pytestmark = pytest.mark.django_db(transaction=True)


def launch(tenant: Any, rung: str, model: str = H100, regions: tuple[str, ...] | None = None) -> Allocation:
    spec = AllocationSpec(rung=rung, gpu_models=(model,), gpus=1, regions=regions)
    workload = Workload(image="nvcr.io/nvidia/pytorch:25.01-py3", command=("torchrun", "x.py") if rung == "job" else ())
    return allocation_request(tenant=tenant, name=rung, spec=spec, actor=SYSTEM, workload=workload)


def cells(text: str, row: str) -> list[str]:
    found = re.search(rf'<tr data-idle="{row}">(.*?)</tr>', text, re.DOTALL)
    assert found, row
    return [c.strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", found[1], re.DOTALL)]


def test_the_map_by_sm_active_and_billed_but_idle_read_dcgm(
    prometheus_clock: Prometheus, replays: list[Replay], operator: Any, acme: Any, globex: Any, settings: Any
) -> None:
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    load_fleet()
    job = launch(acme, "job")
    notebook = launch(acme, "container")  # no command: idle
    lost = launch(globex, "container", "H200-141GB", ("us-east",))  # its node's exporter is never scraped
    allocations_reconcile()
    now = datetime.fromtimestamp(prometheus_clock.now(), tz=UTC).replace(microsecond=0)
    began = now - timedelta(hours=3)
    ours = [job.pk, notebook.pk, lost.pk]
    Allocation.objects.filter(pk__in=ours).update(running_since=began)
    AllocationDevice.objects.filter(allocation__in=ours).update(held_since=began)
    hosts = sorted({d.hostname for d in AllocationDevice.objects.filter(allocation__in=[job.pk, notebook.pk])})
    assert lost.devices.get().hostname not in hosts
    replay_hosts(prometheus_clock, replays, hosts, [began + timedelta(minutes=10 * i) for i in range(19)])

    client = signed_in(operator)
    text = client.get("/console/operators/idle-gpus?days=1").content.decode()
    assert cells(text, "acme/container")[1:] == ["container", "3.00", "3.00", "100%", "0.00"]
    assert cells(text, "acme/job")[1:] == ["job", "3.00", "0.00", "0%", "0.00"]
    assert cells(text, "globex/container")[1:] == ["container", "3.00", "0.00", "0%", "3.00"]
    assert text.index('data-idle="acme/container"') < text.index('data-idle="acme/job"')  # the idlest first

    page = client.get("/console/operators/?colour=activity").content.decode()
    busy = job.devices.get()
    idle = notebook.devices.get()
    busy_box = rf"GPU {busy.gpu_index}: whole for acme \(allocation {job.pk}\); SM active (8|9)\d%"
    idle_box = rf"GPU {idle.gpu_index}: whole for acme \(allocation {notebook.pk}\); SM active 0%"
    assert re.search(rf'<li class="gpu u-full a4" title="{busy_box}"', page)
    assert re.search(rf'<li class="gpu u-full a0" title="{idle_box}"', page)  # held and idle: marked
    assert "Colour by SM active" in page

    # The metering check: the H200 billed this hour while its node's exporter reported nothing; the others did.
    check = client.get("/console/operators/metering-check").content.decode()
    assert f'data-unreported="{lost.pk}"' in check
    assert f'data-unreported="{job.pk}"' not in check
    assert f'data-unreported="{notebook.pk}"' not in check
    assert lost.devices.get().hostname in check
