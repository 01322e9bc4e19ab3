"""vCPUs and memory beyond the bundle each GPU is sold with (docs/billing.md, "CPU and memory"): metered per member
on the region's host SKUs beside the GPUs, rolled up, invoiced and exported like compute, counted in the margin of
the allocation's rung; placed only where they are priced; priced by operators with ``host_price_set``."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from billing.models import SkuPrice, Unit, UsageInterval
from billing.selectors import host_priced_regions, invoice_for, usage_rows
from billing.selectors.margin import margin_report
from billing.services.ledger import host_sku, windows_close
from billing.services.stripe_sync import _product
from provisioning.domain.node_host import bundled, host_extra, host_problems
from provisioning.domain.rungs import Rung
from provisioning.models import Region
from provisioning.services.placing import AllocationSpec, PlacementRefused, allocation_request
from tests.support import SYSTEM
from tests.support.billing import BASE, H100, at, host_price, load_fleet, place, price, run, stop
from tests.support.exports import read_csv

pytestmark = pytest.mark.django_db

VCPU, MEMORY = "host/vcpu/eu-west", "host/memory/eu-west"
H200 = "H200-141GB"


def priced_host(region: str = "eu-west") -> None:
    host_price("0.02", unit=Unit.VCPU, region=region)
    host_price("0.004", unit=Unit.MEMORY, region=region)


def hourly(tenant, now=None):
    rows = usage_rows(tenant=tenant, start=BASE, end=at(240), granularity="hour", now=now or at(240))
    return {(r.sku, r.unit): (r.gpu_seconds, r.amount) for r in rows}


def test_what_a_member_asks_beyond_the_bundle_is_what_is_billed():
    assert bundled(Rung.CONTAINER, H100, 2) == (16_000, 128 * 1024)
    assert host_extra(Rung.CONTAINER, H100, 2, 24_000, 192 * 1024) == (8_000, 64 * 1024)
    assert host_extra(Rung.CONTAINER, H100, 2, 4_000, 0) == (0, 0)  # less than the bundle: no credit, the GPU's price
    assert host_extra(Rung.CONTAINER, H100, 0, 6_000, 0) == (4_000, 0)  # a slice's bundle is 2 vCPUs and 16 GiB
    assert host_extra(Rung.VM, H100, 1, 0, 200 * 1024) == (0, 40 * 1024)  # a VM's is twice its GPU's memory
    assert host_extra(Rung.BARE_METAL, H100, 0, 0, 0) == (0, 0)


def test_what_a_member_may_ask_is_one_to_four_times_the_bundle():
    assert host_problems(Rung.CONTAINER, H100, 2, 64, 512) == {}
    assert host_problems(Rung.CONTAINER, H100, 2, None, None) == {}
    problems = host_problems(Rung.CONTAINER, H100, 2, 65, 513)
    assert problems["cpu"] == "A member here takes 1 to 64 vCPUs (4 times the 16 sold with it), not 65."
    assert problems["memory_gib"].startswith("A member here takes 1 to 512 GiB of memory")
    assert host_problems(Rung.CONTAINER, H100, 0, 9, None) == {
        "cpu": "A member here takes 1 to 8 vCPUs (4 times the 2 sold with it), not 9."
    }
    assert "takes whole hosts" in host_problems(Rung.BARE_METAL, H100, 0, 8, None)["cpu"]


def test_vcpus_and_memory_beyond_the_bundle_are_metered_invoiced_and_counted_in_the_margin(acme):
    load_fleet()
    priced_host()
    price("2.40")
    allocation = place(acme, gpus=2, cpu_milli=24_000, memory_mib=192 * 1024)  # 8 vCPUs and 64 GiB beyond
    stop(run(allocation, at(0)), at(60))
    assert sorted(UsageInterval.objects.values_list("sku__code", "units_milli")) == [
        ("container/H100-SXM-80GB/gpu/eu-west", 2000),
        (MEMORY, 64_000),
        (VCPU, 8000),
    ]
    rows = hourly(acme)
    assert rows[("container/H100-SXM-80GB/gpu/eu-west", "GPU-hours")] == (Decimal("7200.000"), Decimal("4.80"))
    assert rows[(VCPU, "vCPU-hours")] == (Decimal("28800.000"), Decimal("0.16"))  # 8 vCPU-hours at 0.02
    assert rows[(MEMORY, "GiB-hours")] == (Decimal("230400.000"), Decimal("0.26"))  # 64 GiB-hours at 0.004
    windows_close(now=at(120))
    invoice = invoice_for(tenant=acme, start=BASE, end=at(24 * 60), now=at(120))
    assert {line["sku"]: (line["unit"], line["amount"]) for line in invoice.lines} == {
        "container/H100-SXM-80GB/gpu/eu-west": ("GPU-hours", Decimal("4.80")),
        VCPU: ("vCPU-hours", Decimal("0.16")),
        MEMORY: ("GiB-hours", Decimal("0.26")),
    }
    [row] = margin_report(start=BASE, end=at(24 * 60), now=at(120)).rungs
    assert (row.rung, row.model, row.region) == ("container", H100, "eu-west")
    assert row.revenue == Decimal("4.80") + Decimal("0.16") + Decimal("0.256")
    assert row.allocated_gpu_hours == 2  # the host's share holds no GPU


def test_asking_within_the_bundle_pays_only_for_the_gpus(acme):
    load_fleet()
    priced_host()
    stop(run(place(acme, gpus=1, cpu_milli=4000, memory_mib=64 * 1024), at(0)), at(10))
    assert list(UsageInterval.objects.values_list("sku__code", flat=True)) == ["container/H100-SXM-80GB/gpu/eu-west"]


def test_a_gang_pays_beyond_the_bundle_for_every_member(acme):
    load_fleet()
    priced_host()
    job = place(acme, rung="job", gpus=1, gang_size=2, cpu_milli=10_000)  # 2 vCPUs beyond, per member
    stop(run(job, at(0)), at(60))
    assert UsageInterval.objects.get(sku__code=VCPU).units_milli == 4000
    assert not UsageInterval.objects.filter(sku__code=MEMORY).exists()


def test_beyond_the_bundle_is_placed_only_where_the_region_prices_it(acme):
    load_fleet()
    with pytest.raises(PlacementRefused) as refused:
        place(acme, gpus=1, cpu_milli=12_000)
    assert refused.value.code == "not_priced"
    assert "host/vcpu/" in refused.value.detail
    host_price("0.02", unit=Unit.VCPU, region="us-east")
    assert host_priced_regions(units=["vcpu"], at=at(0)) == {"us-east"}
    assert host_priced_regions(units=["vcpu", "memory"], at=at(0)) == set()
    either = AllocationSpec(rung="container", gpu_models=(H100, H200), gpus=1, cpu_milli=12_000)
    placed = allocation_request(tenant=acme, name="either", spec=either, actor=SYSTEM)
    assert (placed.hall.region.code, placed.gpu_model.name) == ("us-east", H200)  # H100s are all in eu-west
    assert place(acme, gpus=1).hall.region.code == "eu-west"  # within the bundle: wherever the GPU is priced


def test_the_export_names_the_rungs_service_and_the_unit(acme, tmp_path):
    load_fleet()
    priced_host()
    stop(run(place(acme, gpus=2, cpu_milli=20_000), at(0)), at(60))
    windows_close(now=at(120))
    path = tmp_path / "d.csv"
    day = BASE.date().isoformat()
    command = ("billing_export", "--from", day, "--to", day, "--detail", "--format", "csv", "--out", str(path))
    call_command(*command, stdout=StringIO())
    [row] = [r for r in read_csv(path) if r["SkuId"] == VCPU]
    assert (row["PricingUnit"], row["SkuMeter"]) == ("vCPU-Hours", "vCPU time beyond the bundle")
    assert row["ServiceName"] == "Ladder Containers"
    assert (Decimal(row["ConsumedQuantity"]), Decimal(row["BilledCost"])) == (4, Decimal("0.08"))  # 4 vCPU-hours
    assert row["ResourceId"].startswith("allocation/")


def test_stripe_names_the_product_by_its_unit():
    load_fleet()
    product = _product(host_sku(unit=Unit.VCPU, region=Region.objects.get(code="eu-west")))
    assert (product["name"], product["unit_label"]) == (
        "vCPUs beyond the bundle, eu-west (vCPU-seconds)",
        "vCPU-second",
    )
    assert product["metadata"] == {"ladder_sku": VCPU}


def test_operators_price_a_vcpu_hour_with_a_command(acme):
    load_fleet()
    out = StringIO()
    call_command("host_price_set", "--region", "eu-west", "--unit", "vcpu", "--per-hour", "0.025", stdout=out)
    assert out.getvalue().startswith(f"{VCPU}: 0.025000 usd per vCPU-hour from ")
    assert SkuPrice.objects.get(sku__code=VCPU).unit_price_per_hour == Decimal("0.025")
    with pytest.raises(CommandError, match="--per-hour: A price cannot be negative"):
        call_command("host_price_set", "--region", "eu-west", "--unit", "memory", "--per-hour", "-1")
    with pytest.raises(CommandError, match="--region: there is no region 'mars'"):
        call_command("host_price_set", "--region", "mars", "--unit", "memory", "--per-hour", "1")
    with pytest.raises(CommandError, match="--from: 'soon' is not an ISO-8601 time"):
        call_command("host_price_set", "--region", "eu-west", "--unit", "vcpu", "--per-hour", "1", "--from", "soon")
