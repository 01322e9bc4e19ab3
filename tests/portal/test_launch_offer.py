"""The launch page offers what the public ``/api/v1/offerings`` offers, at its prices: both read the offerings joined
with the price book through one selector (billing.selectors.offerings_priced)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from billing.models import Unit
from tests.support.billing import H100, load_fleet, price

ROW = re.compile(r"<tr><td>([^<]+)</td><td>([^<]+)</td><td>(\d+) [^<]+</td>\s*<td>(.*?)</td></tr>", re.DOTALL)


def launch_rows(client: Client, rung: str) -> list[tuple[str, str, int, dict[str, Decimal]]]:
    page = client.get("/portal/launch", {"rung": rung})
    assert page.status_code == 200
    rows = []
    for model, region, available, cell in ROW.findall(page.content.decode()):
        prices = {} if cell == "not priced yet" else dict(pair.split(": ") for pair in cell.split("<br>"))
        rows.append((model, region, int(available), {unit: Decimal(p) for unit, p in prices.items()}))
    return rows


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
