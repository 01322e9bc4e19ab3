"""The usage page says what each line counts: compute in GPU-hours, a volume in GB-hours (with its price per GB-month
beside its price per GB-hour on the upcoming invoice), on the page as in the CSV download, whose first columns keep
their places."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from django.test import Client
from time_machine import TimeMachineFixture

from lifecycle.services.volumes import volume_create
from provisioning.models import Region
from tests.support import SYSTEM
from tests.support.billing import at, load_fleet, place, price, run, stop, storage_price

SKU = "storage/filesystem/eu-west"


def line(page: str, marker: str, sku: str) -> list[str]:
    """The cells of the row ``data-<marker>="<sku>"``, tags dropped."""
    found = re.search(rf'<tr data-{marker}="{re.escape(sku)}">(.*?)</tr>', page, re.DOTALL)
    assert found, f"no {marker} row for {sku}"
    return [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in re.findall(r"<td>(.*?)</td>", found[1])]


def test_the_usage_page_shows_each_lines_unit(
    alice: Any, acme: Any, django_capture_on_commit_callbacks: Any, time_machine: TimeMachineFixture
) -> None:
    load_fleet()
    storage_price("73.00")  # 0.10 per GB-hour
    gpu = price("2.50")
    time_machine.move_to(at(0), tick=False)
    with django_capture_on_commit_callbacks(execute=True):
        volume_create(
            tenant=acme, name="datasets", region=Region.objects.get(code="eu-west"), kind="filesystem", size_gb=100,
            actor=SYSTEM,
        )  # fmt: skip
    stop(run(place(acme, gpus=2), at(0)), at(30))  # 1 GPU-hour
    time_machine.move_to(at(120), tick=False)
    client = Client()
    client.force_login(alice)

    page = client.get("/portal/usage").content.decode()
    assert line(page, "line", SKU) == [SKU, "200.000000 GB-hours", "0.100000 (73.000000 per GB-month)", "20.00"]
    assert line(page, "line", gpu.sku.code) == [gpu.sku.code, "1.000000 GPU-hours", "2.500000", "2.50"]
    assert line(page, "usage", SKU) == ["2026-11-02", SKU, "200.000000 GB-hours", "20.00 USD"]
    assert line(page, "usage", gpu.sku.code) == ["2026-11-02", gpu.sku.code, "1.000000 GPU-hours", "2.50 USD"]

    rows = list(csv.reader(io.StringIO(client.get("/portal/usage?format=csv").content.decode())))
    assert rows[0] == ["day", "sku", "gpu_seconds", "amount", "currency", "unit", "quantity"]
    assert ["2026-11-02", SKU, "720000.000", "20.00", "usd", "GB-hours", "200.000000"] in rows
