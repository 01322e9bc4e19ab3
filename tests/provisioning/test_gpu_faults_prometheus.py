"""XID errors from DCGM, end to end against a real Prometheus scraping the simulated fleet's exporters: an operator
makes a GPU report XID 79 (fallen off the bus) and another XID 31 (an application's page fault); the next
reconcile quarantines the first node with the XID as evidence and restarts its job elsewhere from its checkpoint,
with the goodput lost recorded, and leaves the second node in service; the node's XID layer (API, and the operators'
node page) says what each means."""

from __future__ import annotations

import re
from typing import Any

import pytest

from core.models import AuditEvent
from provisioning.domain.workloads import Checkpoint, Workload
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, AllocationFault, Node
from provisioning.services.placing import AllocationSpec, allocation_request
from tests.support import SYSTEM
from tests.support.billing import H100, load_fleet, place
from tests.support.consoles import signed_in
from tests.support.prometheus import Prometheus

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_fatal_xid_quarantines_its_node_and_restarts_the_job_elsewhere_and_an_application_one_does_not(
    prometheus_clock: Prometheus, live_server: Any, api: Any, operator: Any, acme: Any, settings: Any
) -> None:
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    load_fleet()
    workload = Workload(image="nvcr.io/nvidia/pytorch:25.01-py3", command=("torchrun", "train.py"),
                        checkpoint=Checkpoint("/checkpoints", 60))  # fmt: skip
    spec = AllocationSpec(rung="job", gpu_models=(H100,), gpus=2)
    job = allocation_request(tenant=acme, name="train", spec=spec, actor=SYSTEM, workload=workload)
    other = place(acme, gpus=1)
    allocations_reconcile()
    job.refresh_from_db()
    assert job.state == "running"
    broken = Node.objects.get(
        hostname=job.devices.get(gpu_index=job.devices.order_by("gpu_index")[0].gpu_index).hostname
    )
    elsewhere = Node.objects.exclude(pk=broken.pk).get(hostname=other.devices.get().hostname)
    instances = {
        node.pk: prometheus_clock.scrape(node.hostname, f"{live_server.url}/simulated/dcgm/{node.hostname}/metrics")
        for node in (broken, elsewhere)
    }
    client = api(operator)
    gpu = job.devices.order_by("gpu_index")[0].gpu_index
    answer = client.post(f"/api/v1/ops/nodes/{broken.pk}/xid", {"gpu_index": gpu, "xid": 79}, format="json")
    assert answer.status_code == 200, answer.content
    noted = client.post(
        f"/api/v1/ops/nodes/{elsewhere.pk}/xid", {"gpu_index": 0, "xid": 31, "reason": "test"}, format="json"
    )
    assert noted.status_code == 200, noted.content
    for name in instances.values():
        prometheus_clock.scraped(name)

    allocations_reconcile()
    broken.refresh_from_db()
    assert broken.state == "quarantined"
    quarantine = AuditEvent.objects.get(action="node.quarantined", target_id=str(broken.pk))
    assert quarantine.data["evidence"]["xid"] == 79
    assert quarantine.data["evidence"]["fatal"] is True
    assert "fallen off the bus" in quarantine.data["reason"]
    fault = AllocationFault.objects.get(allocation=job)
    assert fault.cause.startswith(f"XID 79 on GPU {gpu}")
    assert fault.outcome == "restarted"
    job = Allocation.objects.get(pk=job.pk)
    assert broken.hostname not in {d.hostname for d in job.devices.filter(active=True)}
    elsewhere.refresh_from_db()
    assert elsewhere.state == "ready"  # an application's fault says nothing of the GPU

    allocations_reconcile()  # the same XID again: nothing more
    assert AllocationFault.objects.filter(allocation=job).count() == 1

    layer = client.get(f"/api/v1/ops/nodes/{elsewhere.pk}/gpu-errors").json()
    assert layer["unavailable"] is None
    (reported,) = layer["gpus"]
    assert (reported["xid"], reported["class"], reported["fatal"], reported["gpu_index"]) == (
        31,
        "application",
        False,
        0,
    )
    assert "page fault" in reported["meaning"]
    page = signed_in(operator).get(f"/console/operators/nodes/{elsewhere.pk}?diagnose=1").content.decode()
    assert re.search(r"<tr><td>0</td><td>31</td><td>application</td><td>GPU memory page fault[^<]*</td>", page)
    refused = client.post(f"/api/v1/ops/nodes/{broken.pk}/xid", {"gpu_index": 9, "xid": 79}, format="json")
    assert refused.status_code == 422
