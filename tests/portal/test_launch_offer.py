"""The launch page offers what the public ``/api/v1/offerings`` offers, at its prices: both read the offerings joined
with the price book through one selector (billing.selectors.offerings_priced)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from billing.models import Unit
from tests.support.billing import H100, host_price, load_fleet, price

ROW = re.compile(
    r"<tr><td>([^<]+)</td><td>([^<]+)</td><td>(\d+) [^<]+</td>\s*<td>(.*?)</td>\s*<td class=\"host\">.*?</td></tr>",
    re.DOTALL,
)
HOST = re.compile(r'<td class="host">(.*?)</td>', re.DOTALL)
CLASS = re.compile(r'<div class="class-price" data-class="([a-z_]+)">[^:]+: ([^<]*)</div>')


def class_prices(cell: str) -> dict[str, dict[str, Decimal]]:
    """A price cell's prices by capacity class, then by unit."""
    return {
        klass: {unit: Decimal(p) for unit, p in (pair.split(" ") for pair in prices.split(", "))}
        for klass, prices in CLASS.findall(cell)
    }


def launch_rows(
    client: Client, rung: str, capacity_class: str = "on_demand"
) -> list[tuple[str, str, int, dict[str, Decimal]]]:
    page = client.get("/portal/launch", {"rung": rung})
    assert page.status_code == 200
    return [
        (model, region, int(available), class_prices(cell).get(capacity_class, {}))
        for model, region, available, cell in ROW.findall(page.content.decode())
    ]


def api_rows(client: Any, rung: str) -> list[tuple[str, str, int, dict[str, Decimal]]]:
    return [
        (
            r["gpu_model"],
            r["region"],
            r["available"],
            {unit: Decimal(p).quantize(Decimal("0.01")) for unit, p in r["prices"].items()},
        )
        for r in client.get("/api/v1/offerings").json()
        if r["rung"] == rung
    ]


@pytest.mark.own_price_book  # it prices some shapes and leaves the vm rung unpriced
def test_the_launch_page_shows_the_offerings_and_prices_the_api_gives(api: Any, alice: Any) -> None:
    load_fleet()
    price("2.40")
    price("0.60", unit=Unit.MIG, mig_profile="3g.40gb")
    price("3.10", rung="job")
    client = Client()
    client.force_login(alice)
    for rung in ("container", "job", "vm"):
        shown = launch_rows(client, rung)
        assert shown == api_rows(api(), rung)
        assert shown  # every region is open to acme: nothing is filtered away
    container = dict(((m, r), p) for m, r, _, p in launch_rows(client, "container"))
    assert container[(H100, "eu-west")] == {"gpu": Decimal("2.40"), "mig:3g.40gb": Decimal("0.60")}
    assert all(not p for m, r, _, p in launch_rows(client, "vm"))  # not priced yet


def test_the_launch_page_shows_spot_beside_on_demand_where_it_is_sold(alice: Any) -> None:
    load_fleet()  # the suite's price book: every shape on demand, and spot 60% off
    client = Client()
    client.force_login(alice)
    spot = dict(((m, r), p) for m, r, _, p in launch_rows(client, "container", "spot"))
    assert spot[(H100, "eu-west")]["gpu"] == Decimal("0.40")
    page = client.get("/portal/launch", {"rung": "container"}).content.decode()
    assert "Spot (60% off)" in page
    assert "<dt>Spot</dt><dd>Cheaper; may be preempted with notice" in page  # what spot promises
    serverless = client.get("/portal/launch", {"rung": "serverless"}).content.decode()
    assert "<dt>On-demand</dt>" in serverless
    assert "<dt>Spot</dt>" not in serverless  # not sold as spot: an endpoint scales itself


def test_the_launch_page_says_what_each_gpu_comes_with_and_the_price_of_more(alice: Any) -> None:
    load_fleet()
    host_price("0.02", unit=Unit.VCPU)
    client = Client()
    client.force_login(alice)
    page = client.get("/portal/launch", {"rung": "container"}).content.decode()
    cells = HOST.findall(page)
    assert "8 vCPUs, 64 GiB (a slice or share: 2, 16 GiB); up to 4 times, beyond: vCPU 0.020 an hour" in cells
    assert any(c.endswith("at no more (only the bundle is sold here)") for c in cells)  # us-east prices none
    metal = HOST.findall(client.get("/portal/launch", {"rung": "bare_metal"}).content.decode())
    assert metal
    assert set(metal) == {"the whole host"}
