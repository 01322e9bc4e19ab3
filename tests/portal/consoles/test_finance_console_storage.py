"""Storage on the finance console's margin page: a row per month, region and kind (GB-hours, revenue, cost, margin),
the month's totals with storage's revenue and cost in the margin, and GB-hours no storage cost basis covers named,
with where operators enter one."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from billing.services.accounts import cost_basis_add, storage_cost_basis_add
from billing.services.ledger import windows_close
from lifecycle.services.volumes import volume_create
from provisioning.domain.volumes import VolumeState
from provisioning.models import CapacitySample, GpuModel, Hall, Region
from provisioning.services.volumes import volume_transition
from tests.support import SYSTEM
from tests.support.billing import BASE, H100, at, load_fleet, place, price, run, stop, storage_price
from tests.support.consoles import signed_in


def _volume(tenant: Any, name: str, kind: str, size_gb: int, minutes: int) -> None:
    """A volume billed from ``at(0)`` (available) until its deletion begins ``minutes`` later."""
    region = Region.objects.get(code="eu-west")
    volume = volume_create(tenant=tenant, name=name, region=region, kind=kind, size_gb=size_gb, actor=SYSTEM, now=at(0))
    volume_transition(volume=volume, to=VolumeState.AVAILABLE, actor=SYSTEM, at=at(0))
    volume_transition(volume=volume, to=VolumeState.DELETING, actor=SYSTEM, at=at(minutes))


def test_the_margin_page_shows_storage_per_region_and_kind_and_in_the_totals(finance: Any, acme: Any) -> None:
    load_fleet()
    hall, model = Hall.objects.get(code="eu-west-1a"), GpuModel.objects.get(name=H100)
    parts = {"capex": Decimal("1.00"), "power": Decimal("0.20"), "space": Decimal("0.10"), "network": Decimal("0.05")}
    cost_basis_add(gpu_model=model, hall=hall, effective_from=BASE, parts=parts, currency="usd", actor=SYSTEM)
    storage_cost_basis_add(
        region=Region.objects.get(code="eu-west"),
        storage_kind="filesystem",
        effective_from=BASE - timedelta(days=1),
        cost_per_gb_month=Decimal("29.20"),  # 0.04 a GB-hour
        currency="usd",
        actor=SYSTEM,
    )
    price("2.40")
    storage_price("73.00")  # filesystems at 0.10 a GB-hour
    storage_price("73.00", kind="block")  # block volumes sold too, but no cost basis for them
    stop(run(place(acme, gpus=2), at(0)), at(30))
    _volume(acme, "datasets", "filesystem", 100, 90)  # 150 GB-hours
    _volume(acme, "scratch", "block", 10, 60)  # 10 GB-hours
    windows_close(now=at(180))
    CapacitySample.objects.create(
        at=at(60), seconds=3600, hall=hall, gpu_model=model, gpus=16, idle_milli=14_000, stranded_milli=0
    )

    page = signed_in(finance).get("/console/finance/", {"since": "2026-11", "until": "2026-11"})
    assert page.status_code == 200
    text = page.content.decode()
    assert "<h2>Storage</h2>" in text
    assert (
        "<td>2026-11</td><td>eu-west</td><td>filesystem</td>\n    <td>150.000</td>\n    <td>15.00 USD</td>\n"
        "    <td>6.00</td>\n    <td>9.00</td>\n    <td>60.0%</td>"
    ) in text
    assert (
        "<td>2026-11</td><td>eu-west</td><td>block</td>\n"
        '    <td>10.000 <small class="error">(10.000 without a cost basis)</small></td>\n    <td>1.00 USD</td>\n'
        "    <td>0.00</td>\n    <td>1.00</td>\n    <td>100.0%</td>"
    ) in text
    assert "<code>/api/v1/ops/storage-cost-basis</code>" in text
    assert "<dt>Revenue</dt><dd>2.40</dd>" in text  # compute's, as before
    assert "<dt>The fleet's cost</dt><dd>21.60</dd>" in text
    assert "<dt>Storage revenue</dt><dd>16.00</dd>" in text
    assert "<dt>Storage cost</dt><dd>6.00</dd>" in text
    # 2.40 + 16.00 earned, less the fleet's 21.60 and storage's 6.00
    assert "<dt>Gross margin of the fleet and storage</dt><dd>-9.20</dd>" in text


def test_a_month_of_storage_alone_has_its_totals_and_no_compute_tables(finance: Any, acme: Any) -> None:
    load_fleet()
    storage_price("73.00")
    _volume(acme, "datasets", "filesystem", 100, 60)
    windows_close(now=at(180))
    text = signed_in(finance).get("/console/finance/", {"since": "2026-11"}).content.decode()
    assert "<h2>2026-11 (USD)</h2>" in text
    assert "<dt>Storage revenue</dt><dd>10.00</dd>" in text
    assert "<dt>Gross margin of the fleet and storage</dt><dd>10.00</dd>" in text  # no cost basis: uncosted
    assert "100.000 without a cost basis" in text
    assert 'class="margin-table"' not in text
    assert 'class="capacity-table"' not in text


def test_without_storage_the_page_shows_no_storage_table(finance: Any) -> None:
    text = signed_in(finance).get("/console/finance/", {"since": "2026-11"}).content.decode()
    assert "No usage, no storage and no capacity samples in these months." in text
    assert 'class="storage-table"' not in text
