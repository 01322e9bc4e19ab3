"""Nothing runs without a price: a shape whose SKU has no price in effect at the time of the request is refused
409 ``not_priced`` (naming the SKU), a price that starts later does not count yet, a request for several models goes
only where one is priced, and a job restarted after a fault is placed again only where its shape has a price."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from time_machine import TimeMachineFixture

from billing.models import Unit
from billing.services.accounts import price_set
from provisioning.drivers.base import SimulatedProvisioner
from provisioning.models import Allocation, GpuClaim, Node
from provisioning.services.fleet import fleet_load, node_fail
from tests.support import SYSTEM, assert_problem
from tests.support.billing import price, sku
from tests.support.fleet_documents import small_fleet

pytestmark = pytest.mark.own_price_book  # each test prices exactly what it means to sell

SIMULATED = SimulatedProvisioner().last_checkpoint
URL = "/api/v1/allocations"
H100, H200 = "H100-SXM-80GB", "H200-141GB"
INFERENCE = {"name": "inference", "rung": "serverless", "gpu_model": H100, "mig_profile": "3g.40gb"}
INFERENCE_SKU = "serverless/H100-SXM-80GB/mig-3g.40gb/eu-west"


@pytest.fixture
def fleet(db: None) -> None:
    """The small fleet (H100s in eu-west, H200s in us-east and the fenced EU hall); H100 containers priced."""
    fleet_load(document=small_fleet(), actor=SYSTEM)
    price("2.40", since=timezone.now() - timedelta(days=30))


def test_a_shape_without_a_price_is_refused_and_names_its_sku(api, alice, fleet):
    client = api(alice)
    body = assert_problem(client.post(URL, INFERENCE, format="json"), 409, "not_priced")
    assert body["sku"] == INFERENCE_SKU
    assert INFERENCE_SKU in body["detail"]
    assert [r["code"] for r in body["reasons"]] == ["not_priced"]
    assert not Allocation.objects.exists()
    assert not GpuClaim.objects.exists()

    whole = client.post(URL, {"name": "train", "rung": "container", "gpu_model": H100, "gpus": 1}, format="json")
    assert whole.status_code == 201, whole.content  # the priced shape on the same GPUs is sold

    price("0.75", since=timezone.now() - timedelta(minutes=5), rung="serverless", unit=Unit.MIG, mig_profile="3g.40gb")
    placed = client.post(URL, INFERENCE, format="json")
    assert placed.status_code == 201, placed.content


def test_a_price_that_starts_later_does_not_count_yet(api, alice, fleet, time_machine: TimeMachineFixture):
    starts = timezone.now() + timedelta(hours=1)
    scheduled = sku(rung="serverless", unit=Unit.MIG, mig_profile="3g.40gb")
    price_set(sku=scheduled, unit_price_per_hour=Decimal("0.75"), effective_from=starts, actor=SYSTEM)
    client = api(alice)
    body = assert_problem(client.post(URL, INFERENCE, format="json"), 409, "not_priced")
    assert body["sku"] == INFERENCE_SKU
    listed = {row["sku"]: row for row in client.get("/api/v1/prices").json()}
    assert listed[INFERENCE_SKU]["effective_from"] == starts.isoformat().replace("+00:00", "Z")  # listed, ahead

    time_machine.move_to(starts + timedelta(seconds=1))
    placed = client.post(URL, INFERENCE, format="json")
    assert placed.status_code == 201, placed.content
    assert placed.json()["region"] == "eu-west"


def test_a_request_for_several_models_goes_where_a_price_is(api, alice, fleet):
    client = api(alice)
    either = {"rung": "container", "gpu_models": [H200, H100], "gpus": 1}
    first = client.post(URL, {"name": "a", **either}, format="json")
    assert first.status_code == 201, first.content
    assert (first.json()["gpu_model"], first.json()["region"]) == (H100, "eu-west")  # H200s have no price

    price("3.20", since=timezone.now() - timedelta(days=1), model=H200, region="us-east")
    second = client.post(URL, {"name": "b", **either}, format="json")
    assert (second.json()["gpu_model"], second.json()["region"]) == (H200, "us-east")  # the customer's first choice


@pytest.mark.parametrize("h200_priced", [False, True], ids=["h200-unpriced", "h200-priced"])
def test_a_job_restarts_only_where_its_shape_has_a_price(
    api, alice, fleet, h200_priced, django_capture_on_commit_callbacks
):
    since = timezone.now() - timedelta(days=1)
    price("2.40", since=since, rung="job")
    if h200_priced:
        price("3.20", since=since, rung="job", model=H200, region="us-east")
    client = api(alice)
    job = client.post(URL, {"name": "train", "rung": "job", "gpu_models": [H100, H200], "gpus": 8}, format="json")
    assert job.status_code == 201, job.content
    assert job.json()["gpu_model"] == H100
    failed_host = job.json()["devices"][0]["node"]
    other_h100 = Node.objects.filter(gpu_model__name=H100, gpu_count=8).exclude(hostname=failed_host).get()
    filler = client.post(URL, {"name": "fill", "rung": "container", "gpu_model": H100, "gpus": 8}, format="json")
    assert {d["node"] for d in filler.json()["devices"]} == {other_h100.hostname}  # no H100 room left for 8 GPUs

    with django_capture_on_commit_callbacks(execute=True):
        node_fail(node=Node.objects.get(hostname=failed_host), actor=SYSTEM, last_checkpoint=SIMULATED)
    after = client.get(f"{URL}/{job.json()['id']}").json()
    if h200_priced:
        assert after["state"] in ("restarting", "running"), after
        assert {d["node"] for d in after["devices"]} == {"use1a-01"}  # the free H200 node, priced for jobs
    else:
        assert after["state"] == "failed", after  # the only room left is unpriced: never run there
        assert "no room to restart" in after["failure_reason"]
        assert not GpuClaim.objects.filter(allocation_id=after["id"]).exists()
