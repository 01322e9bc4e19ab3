"""Capacity classes through the API (docs/capacity.md): spot work is priced as spot, preempted with notice when
on-demand work needs its GPUs (billing stopped at the notice, the tenant told), and a requeued job is placed again
from its checkpoint when room returns. On-demand work is never a victim."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import override_settings
from django.utils import timezone

from billing.domain.metering import to_ms
from billing.models import Notification, UsageInterval
from core.models import AuditEvent
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation, AllocationPreemption, GpuClaim
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM, assert_problem
from tests.support.fleet_documents import node

URL = "/api/v1/allocations"
H100 = "H100-SXM-80GB"

pytestmark = pytest.mark.usefixtures("instant")


@pytest.fixture
def instant(settings):
    settings.LADDER_SIM_PROVISION_SECONDS = 0  # placed work runs as soon as its provisioning task does


@pytest.fixture
def one_node(db):
    """One hall with one node of eight H100s: two asks of eight GPUs cannot both fit."""
    document = {
        "regions": [
            {
                "code": "eu-west",
                "name": "EU West",
                "jurisdiction": "EU",
                "halls": [{"code": "eu-west-1a", "fenced_for": None, "nodes": [node("euw1a-01", "eu-west-1a/nvl-0")]}],
            }
        ]
    }
    return fleet_load(document=document, actor=SYSTEM)


def ask(client, **body):
    body.setdefault("name", "work")
    body.setdefault("rung", "container")
    body.setdefault("gpu_model", H100)
    return client.post(URL, body, format="json")


def running(client, capture, **body):
    with capture(execute=True):
        made = ask(client, **body)
    assert made.status_code == 201, made.content
    found = client.get(f"{URL}/{made.json()['id']}").json()
    assert found["state"] == "running"
    return found


def test_spot_work_is_sold_and_metered_as_spot(api, alice, one_node, django_capture_on_commit_callbacks):
    spot = running(api(alice), django_capture_on_commit_callbacks, gpus=2, capacity_class="spot")
    assert (spot["capacity_class"], spot["on_preemption"], spot["preemptions"]) == ("spot", "stop", [])
    usage = UsageInterval.objects.get(allocation_id=spot["id"])
    assert usage.sku.code == "container/H100-SXM-80GB/gpu/eu-west/spot"
    assert usage.price is not None
    assert usage.price.unit_price_per_hour == Decimal("0.40")  # the suite's spot price: 60% off 1.00
    on_demand = running(api(alice), django_capture_on_commit_callbacks, gpus=2)
    assert on_demand["capacity_class"] == "on_demand"
    assert UsageInterval.objects.get(allocation_id=on_demand["id"]).sku.code == "container/H100-SXM-80GB/gpu/eu-west"


def test_offerings_show_each_class_with_its_price_and_promise(client, one_node):
    rows = client.get("/api/v1/offerings").json()
    container = next(r for r in rows if r["rung"] == "container")
    classes = {c["capacity_class"]: c for c in container["classes"]}
    assert set(classes) == {"on_demand", "spot", "reserved"}
    assert classes["on_demand"]["prices"]["gpu"] == container["prices"]["gpu"] == "1.000000"
    assert classes["spot"]["prices"]["gpu"] == "0.400000"
    assert classes["spot"]["discount_pct"] == "60.00"
    assert classes["spot"]["preemptible"] is True
    assert "preempted with notice" in classes["spot"]["promise"]
    assert classes["on_demand"]["preemptible"] is False
    # Reserved: its work costs nothing (the term pays); a reservation costs, per GPU-hour, on demand less its term's
    # discount, whichever rung's work draws on it.
    reserved = classes["reserved"]
    assert reserved["prices"] == {}
    assert [(t["days"], t["discount_pct"], t["price_per_gpu_hour"]) for t in reserved["terms"]] == [
        (7, 10, "0.900000"),
        (30, 20, "0.800000"),
        (90, 30, "0.700000"),
        (365, 40, "0.600000"),
    ]
    assert "reservation" in reserved["promise"]


def test_on_demand_work_preempts_spot_with_notice_and_billing_stops_at_it(
    api, alice, charlie, one_node, django_capture_on_commit_callbacks
):
    victim = running(api(charlie), django_capture_on_commit_callbacks, gpus=8, capacity_class="spot")
    with django_capture_on_commit_callbacks(execute=True):
        made = ask(api(alice), gpus=8)
    assert made.status_code == 201, made.content
    taken = {(d["node"], d["gpu_index"]) for d in made.json()["devices"]}
    assert taken == {(d["node"], d["gpu_index"]) for d in victim["devices"]}

    seen = api(charlie).get(f"{URL}/{victim['id']}").json()
    assert seen["state"] == "stopped"  # torn down once its notice was given (the simulated fleet at once)
    assert seen["preempted_at"] is not None
    assert "preempted" in seen["failure_reason"]
    (preemption,) = seen["preemptions"]
    assert preemption["requeued"] is False
    row = AllocationPreemption.objects.get(allocation_id=victim["id"])
    assert row.deadline - row.noticed_at == timedelta(seconds=30)  # the spot class's notice
    assert row.by_allocation_id == made.json()["id"]
    # Billing stopped at the notice: the spot usage ends there; the new work's devices are claimed by it alone.
    usage = UsageInterval.objects.filter(allocation_id=victim["id"]).order_by("-start_ms")[0]
    assert usage.end_ms == to_ms(row.noticed_at)
    assert set(GpuClaim.objects.values_list("allocation_id", flat=True)) == {made.json()["id"]}
    notice = Notification.objects.get(tenant__slug="globex", kind="preemption")
    assert "30 s to save" in notice.subject
    assert AuditEvent.objects.filter(action="allocation.preempted", target_id=str(victim["id"])).exists()


def test_preemption_takes_the_cheapest_victim_and_never_on_demand_work(
    api, alice, charlie, one_node, django_capture_on_commit_callbacks
):
    ondemand = running(api(charlie), django_capture_on_commit_callbacks, gpus=4)
    old = running(api(charlie), django_capture_on_commit_callbacks, gpus=2, capacity_class="spot", name="old")
    running(api(charlie), django_capture_on_commit_callbacks, gpus=2, capacity_class="spot", name="new")
    # The old spot work has run ten minutes without a checkpoint; the new one just began: it loses the least.
    Allocation.objects.filter(pk=old["id"]).update(running_since=timezone.now() - timedelta(minutes=10))
    with django_capture_on_commit_callbacks(execute=True):
        assert ask(api(alice), gpus=2).status_code == 201
    states = dict(Allocation.objects.values_list("name", "state"))
    assert Allocation.objects.get(pk=ondemand["id"]).state == "running"
    assert (states["old"], states["new"]) == ("running", "stopped")
    # Everything left is on demand or more than the fleet: refused for capacity, nothing preempted.
    assert_problem(ask(api(alice), gpus=4), 409, "no_capacity")
    assert Allocation.objects.get(pk=old["id"]).state == "running"


def test_spot_never_preempts(api, alice, charlie, one_node, django_capture_on_commit_callbacks):
    running(api(charlie), django_capture_on_commit_callbacks, gpus=8, capacity_class="spot")
    assert_problem(ask(api(alice), gpus=1, capacity_class="spot"), 409, "no_capacity")


@override_settings(LADDER_SIM_CHECKPOINT_SECONDS=60)
def test_a_requeued_job_waits_in_the_queue_and_resumes_from_its_checkpoint(
    api, alice, charlie, one_node, django_capture_on_commit_callbacks
):
    job = running(
        api(charlie), django_capture_on_commit_callbacks, rung="job", gpus=8, capacity_class="spot",
        on_preemption="requeue",
    )  # fmt: skip
    began = timezone.now() - timedelta(seconds=150)  # checkpoints at +60 s and +120 s: 30 s at stake
    Allocation.objects.filter(pk=job["id"]).update(running_since=began)
    with django_capture_on_commit_callbacks(execute=True):
        urgent = ask(api(alice), gpus=8).json()
    queued = api(charlie).get(f"{URL}/{job['id']}").json()
    assert queued["state"] == "queued"
    assert queued["devices"][0]["node"] == "euw1a-01"  # what it last held
    row = AllocationPreemption.objects.get(allocation_id=job["id"])
    assert row.requeued
    assert row.resumed_at is None
    assert row.checkpoint_at == began + timedelta(seconds=120)
    assert 29_000 <= row.lost_ms <= 40_000
    assert Decimal(queued["goodput_lost_seconds"]) == Decimal(row.lost_ms) / 1000
    assert Allocation.objects.get(pk=job["id"]).checkpoint_at == row.checkpoint_at  # what it resumes from

    with django_capture_on_commit_callbacks(execute=True):
        allocations_reconcile()
    assert api(charlie).get(f"{URL}/{job['id']}").json()["state"] == "queued"  # no room yet

    with django_capture_on_commit_callbacks(execute=True):
        api(alice).delete(f"{URL}/{urgent['id']}")
    with django_capture_on_commit_callbacks(execute=True):
        allocations_reconcile()
    resumed = api(charlie).get(f"{URL}/{job['id']}").json()
    assert resumed["state"] == "running"
    assert resumed["preemptions"][0]["resumed_at"] is not None
    assert AuditEvent.objects.filter(action="allocation.requeued", target_id=str(job["id"])).exists()
    # Two runs, two usage intervals; nothing metered while it waited.
    last = UsageInterval.objects.filter(allocation_id=job["id"]).order_by("-start_ms")[0]
    assert last.start_ms >= to_ms(row.noticed_at)


def test_queued_work_stops_at_once(api, alice, charlie, one_node, django_capture_on_commit_callbacks):
    job = running(
        api(charlie), django_capture_on_commit_callbacks, rung="job", gpus=8, capacity_class="spot",
        on_preemption="requeue",
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        ask(api(alice), gpus=8)
    assert Allocation.objects.get(pk=job["id"]).state == "queued"
    stopped = api(charlie).delete(f"{URL}/{job['id']}")
    assert stopped.json()["state"] == "stopped"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"rung": "serverless", "gpus": 1, "capacity_class": "spot"}, "capacity_class", "scales itself"),
        ({"rung": "bare_metal", "nodes": 1, "capacity_class": "spot"}, "capacity_class", "wiped"),
        ({"gpus": 1, "capacity_class": "spot", "on_preemption": "requeue"}, "on_preemption", "Only a job"),
        ({"rung": "job", "gpus": 1, "on_preemption": "requeue"}, "on_preemption", "never preempted"),
        ({"gpus": 1, "capacity_class": "reserved"}, "reservation", "names the reservation"),
        ({"gpus": 1, "reservation": 4}, "reservation", "Only reserved work"),
        ({"gpus": 1, "capacity_class": "cheap"}, "capacity_class", "not a valid choice"),
    ],
)
def test_class_terms_that_do_not_go_together_are_refused(api, alice, one_node, body, field, words):
    refused = assert_problem(ask(api(alice), **body), 422, "validation_error")
    assert any(words in message for message in refused["errors"][field]), refused
