"""A volume's GB-hours as the tenant sees them: usage and the upcoming invoice show storage lines in GB-hours, the
budget's month spend counts them, and a budget's hard stop refuses new volumes and growth (402 ``budget_exceeded``)
but never touches the volumes there are: they stay, and go on being billed."""

from __future__ import annotations

from typing import Any

import pytest
from time_machine import TimeMachineFixture

from billing.models import Notification, UsageInterval
from lifecycle.services.customers import budget_enforce
from provisioning.models import Volume
from tests.support import assert_problem
from tests.support.billing import at, load_fleet, storage_price

VOLUMES = "/api/v1/volumes"
SKU = "storage/filesystem/eu-west"


@pytest.fixture
def stored(db: None, api: Any, alice: Any, django_capture_on_commit_callbacks: Any, time_machine: TimeMachineFixture):
    """acme's 100 GB filesystem in eu-west, made (and so billed) from ``at(0)``; filesystems at 73.00 per GB-month,
    0.10 per GB-hour (dear, so the money is round)."""
    load_fleet()
    storage_price("73.00")
    time_machine.move_to(at(0), tick=False)
    body = {"name": "datasets", "region": "eu-west", "kind": "filesystem", "size_gb": 100}
    with django_capture_on_commit_callbacks(execute=True):
        made = api(alice).post(VOLUMES, body, format="json")
    assert made.status_code == 201, made.content
    assert Volume.objects.get(pk=made.json()["id"]).state == "available"
    return made.json()


def test_usage_and_the_upcoming_invoice_show_storage_in_gb_hours(
    api: Any, alice: Any, charlie: Any, stored: dict[str, Any], time_machine: TimeMachineFixture
) -> None:
    time_machine.move_to(at(90), tick=False)
    client = api(alice)
    rows = client.get("/api/v1/usage", {"from": at(0).isoformat(), "granularity": "hour"}).json()["rows"]
    assert [(r["sku"], r["unit"], r["quantity"], r["gpu_seconds"], r["amount"]) for r in rows] == [
        (SKU, "GB-hours", "100.000000", "360000.000", "10.00"),  # the closed hour
        (SKU, "GB-hours", "50.000000", "180000.000", "5.00"),  # the open one, so far
    ]
    invoice = client.get("/api/v1/invoices/upcoming").json()
    assert invoice["lines"] == [
        {
            "sku": SKU,
            "unit": "GB-hours",
            "quantity": "150.000000",
            "unit_price": "0.100000",
            "unit_price_per_month": "73.000000",
            "amount": "15.00",
        }
    ]
    assert invoice["total"] == "15.00"
    # Another tenant sees none of it.
    assert api(charlie).get("/api/v1/usage", {"from": at(0).isoformat()}).json()["rows"] == []
    assert api(charlie).get("/api/v1/invoices/upcoming").json()["lines"] == []


def test_a_hard_stop_refuses_new_volumes_and_growth_and_keeps_the_volumes_there_are(
    api: Any,
    alice: Any,
    acme: Any,
    stored: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
    time_machine: TimeMachineFixture,
) -> None:
    client, capture = api(alice), django_capture_on_commit_callbacks
    budget = client.put("/api/v1/budget", {"monthly": "8.00", "hard_stop": True}, format="json")
    assert budget.status_code == 200, budget.content
    time_machine.move_to(at(60), tick=False)
    assert client.get("/api/v1/budget").json()["spend"] == "10.00"  # storage alone spent it

    assert budget_enforce(tenant=acme, now=at(60)) == [50, 80, 100]  # what runs stops; what is stored stays
    told = Notification.objects.get(tenant=acme, kind="budget", subject__contains="100%")
    assert "your volumes and their data are kept" in told.body
    url = f"{VOLUMES}/{stored['id']}"
    body = {"name": "more", "region": "eu-west", "kind": "filesystem", "size_gb": 10}
    with capture(execute=True):
        refused = assert_problem(client.post(VOLUMES, body, format="json"), 402, "budget_exceeded")
    assert "your volumes and their data are kept" in refused["detail"]
    assert refused["budget"] == "8.00"
    assert_problem(client.patch(url, {"size_gb": 200}, format="json"), 402, "budget_exceeded")
    with capture(execute=True):
        assert_problem(client.post(f"{url}/snapshots", {"name": "s1"}, format="json"), 402, "budget_exceeded")
    assert client.patch(url, {"name": "corpus"}, format="json").status_code == 200  # a rename buys nothing

    shown = client.get(url).json()
    assert (shown["state"], shown["size_gb"]) == ("available", 100)
    assert Volume.objects.filter(tenant=acme).count() == 1
    meter = UsageInterval.objects.get(volume_id=stored["id"], end_ms=None)  # still metered, at its size
    assert meter.units_milli == 100_000
    time_machine.move_to(at(120), tick=False)
    assert client.get("/api/v1/budget").json()["spend"] == "20.00"  # and still billed
