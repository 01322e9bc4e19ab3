"""FOCUS exports from the ledger (manage.py billing_export): the rows reconcile with the invoice to the cent, the
detail export holds what the summary holds, lost goodput lands on the hour billing stopped, Parquet comes in row
groups, and bad arguments get readable errors and exit codes."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from decimal import Decimal
from io import StringIO
from unittest import mock

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from billing.domain.focus_files import SCHEMA, write_parquet
from billing.domain.metering import to_ms
from billing.domain.pricing import round_money
from billing.models import UsageInterval, UsageRollup
from billing.selectors import invoice_for
from billing.selectors.exports import export_batches
from billing.services.ledger import windows_close
from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import SimulatedProvisioner
from provisioning.models import Node, Volume, VolumeSnapshot
from provisioning.services.faults import node_failed
from provisioning.services.transitions import allocation_transition
from tests.support import SYSTEM
from tests.support.billing import BASE, at, load_fleet, place, price, run, stop
from tests.support.exports import MONTH, MONTH_END, cost, generated_month, read_csv


def export(tmp_path, *args: str, name: str = "out.csv") -> tuple[list[dict[str, str]], str]:
    out = StringIO()
    path = tmp_path / name
    file_format = "parquet" if name.endswith(".parquet") else "csv"
    call_command("billing_export", *args, "--format", file_format, "--out", str(path), stdout=out)
    return (read_csv(path) if file_format == "csv" else []), out.getvalue()


def test_it_reconciles_every_invoice_line_to_the_cent(acme, globex, tmp_path):
    month = generated_month([acme, globex], days=3)
    rows, printed = export(tmp_path, "--from", "2026-10-01", "--to", "2026-10-31")
    assert f"{len(rows)} rows in" in printed
    assert "rows/s" in printed
    assert "sha256" in printed
    assert {r["x_TenantSlug"] for r in rows} == {"acme", "globex"}
    assert sum(int(r["x_UsageQuantityMilli"]) for r in rows) == sum(
        UsageRollup.objects.values_list("quantity_milli", flat=True)
    )
    assert len(rows) == UsageRollup.objects.count()  # one row per rollup: prices and late adjustments stay apart
    for tenant in (acme, globex):
        invoice = invoice_for(tenant=tenant, start=MONTH, end=MONTH_END, now=MONTH_END + timedelta(days=1))
        lines: dict[tuple[str, Decimal], list[dict[str, str]]] = defaultdict(list)
        for r in rows:
            if r["x_TenantSlug"] == tenant.slug:
                lines[(r["SkuId"], Decimal(r["ListUnitPrice"]))].append(r)
        exported = {key: round_money(cost(group), "usd") for key, group in lines.items()}
        assert exported == {(line["sku"], line["unit_price"]): line["amount"] for line in invoice.lines}
        assert sum(exported.values()) == invoice.total
    # The price changed inside an hour mid-month: that hour has two rows, one per price.
    hour = month.price_change.replace(minute=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    change = [r for r in rows if r["ChargePeriodStart"] == hour and r["SkuId"] == "container/H100-SXM-80GB/gpu/eu-west"]
    assert len({r["SkuPriceId"] for r in change}) == 2
    assert {r["x_LateAdjustment"] for r in rows} == {"0", "1"}
    spot = {r["PricingCategory"] for r in rows if r["SkuId"].endswith("/spot")}
    assert spot == {"Dynamic"}  # spot is priced by the provider; the rest from the public price book
    assert {r["PricingCategory"] for r in rows if not r["SkuId"].endswith("/spot")} == {"Standard"}


def test_the_detail_export_holds_what_the_summary_holds(acme, globex, tmp_path):
    generated_month([acme, globex], days=2)
    summary, _ = export(tmp_path, "--from", "2026-10-01", "--to", "2026-10-02", name="s.csv")
    detail, _ = export(tmp_path, "--from", "2026-10-01", "--to", "2026-10-02", "--detail", name="d.csv")

    def per(rows, key):
        sums: dict[tuple[str, ...], tuple[int, Decimal]] = defaultdict(lambda: (0, Decimal(0)))
        for r in rows:
            k = tuple(r[c] for c in key)
            q, c = sums[k]
            sums[k] = (q + int(r["x_UsageQuantityMilli"]), c + Decimal(r["BilledCost"]))
        return sums

    hourly = ("x_TenantSlug", "SkuPriceId", "ChargePeriodStart")
    assert {k: v[0] for k, v in per(detail, hourly).items()} == {k: v[0] for k, v in per(summary, hourly).items()}
    # A late adjustment's pieces are marked as its rollup is (and a Correction after its month), hour by hour.
    late = ("x_TenantSlug", "SkuPriceId", "ChargePeriodStart", "x_LateAdjustment", "ChargeClass")
    assert {r["x_LateAdjustment"] for r in summary} == {"0", "1"}
    assert {k: v[0] for k, v in per(detail, late).items()} == {k: v[0] for k, v in per(summary, late).items()}
    lines = ("x_TenantSlug", "SkuPriceId", "BillingPeriodStart")
    assert per(detail, lines) == per(summary, lines)  # costs too, exactly, per invoice line
    assert all(r["Tags"].startswith('{"ladder/') for r in detail)
    assert {r["ResourceId"].split("/")[0] for r in detail} == {"allocation", "volume", "snapshot"}
    assert all(r["ResourceId"] == "" and r["Tags"] == "{}" for r in summary)
    compute = [r for r in detail if r["ServiceCategory"] == "Compute"]
    assert {r["x_PerformanceIsolation"] for r in compute} == {"whole_gpu", "mig", "fractional"}
    only_acme, _ = export(tmp_path, "--from", "2026-10-01", "--to", "2026-10-02", "--tenant", "acme", name="a.csv")
    assert only_acme == [r for r in summary if r["x_TenantSlug"] == "acme"]


def test_storage_is_exported_in_gb_hours_per_volume_and_snapshot(acme, globex, tmp_path):
    generated_month([acme, globex], days=1)
    summary, _ = export(tmp_path, "--from", "2026-10-01", "--to", "2026-10-01", name="s.csv")
    detail, _ = export(tmp_path, "--from", "2026-10-01", "--to", "2026-10-01", "--detail", name="d.csv")
    stored = [r for r in detail if r["ServiceCategory"] == "Storage"]
    volume = Volume.objects.get(tenant=acme)
    snapshot = VolumeSnapshot.objects.get(tenant=acme)
    mine = {r["ResourceId"]: r for r in stored if r["x_TenantSlug"] == "acme"}
    assert set(mine) == {f"volume/{volume.pk}", f"snapshot/{snapshot.pk}"}
    row = mine[f"volume/{volume.pk}"]
    assert (row["ResourceName"], row["ResourceType"], row["ServiceName"], row["ServiceSubcategory"]) == (
        "datasets-0",
        "Filesystem Volume",
        "Ladder Filesystem Volumes",
        "File Storage",
    )
    assert (row["ConsumedUnit"], row["PricingUnit"], row["x_StorageKind"], row["SkuId"]) == (
        "GB-Hours",
        "GB-Hours",
        "filesystem",
        "storage/filesystem/eu-west",
    )
    assert (row["x_Rung"], row["x_GpuModel"], row["AvailabilityZone"]) == ("", "", "")
    assert row["ListUnitPrice"] == "0.0000958904"
    assert '"x_PricePerGbMonth":"0.070000"' in row["SkuPriceDetails"]
    assert mine[f"snapshot/{snapshot.pk}"]["ServiceSubcategory"] == "Backup Storage"
    # The 11:00 hour of the 800 GB volume: 800 GB-hours, in the summary as in the detail.
    hour = [
        r for r in stored if r["ResourceId"] == f"volume/{volume.pk}" and r["ChargePeriodStart"].endswith("T11:00:00Z")
    ]
    assert [(r["ConsumedQuantity"], r["x_UsageQuantityMilli"]) for r in hour] == [
        ("800.000000000000", str(800 * 3_600_000))
    ]
    summed = [
        r
        for r in summary
        if r["SkuId"] == "storage/filesystem/eu-west" and r["ChargePeriodStart"] == "2026-10-01T11:00:00Z"
    ]
    assert sorted(r["ConsumedQuantity"] for r in summed) == ["800.000000000000"] * 2  # acme's and globex's


@override_settings(LADDER_SIM_CHECKPOINT_SECONDS=60)
def test_goodput_lost_to_a_fault_is_on_the_row_of_the_hour_billing_stopped(acme, tmp_path):
    load_fleet()
    price("3.10", rung="job")
    job = run(place(acme, rung="job", gpus=2), at(0))
    node = Node.objects.filter(gpus__allocation_devices__allocation=job).distinct().get()
    with mock.patch("provisioning.services.faults.timezone.now", return_value=at(0, seconds=100)):
        node_failed(node=node, actor=SYSTEM, last_checkpoint=SimulatedProvisioner().last_checkpoint)
    job.refresh_from_db()
    allocation_transition(allocation=job, to=S.PROVISIONING, actor=SYSTEM, at=at(70))
    allocation_transition(allocation=job, to=S.RUNNING, actor=SYSTEM, at=at(75))
    stop(job, at(80))
    windows_close(now=at(200))
    day = BASE.date().isoformat()
    for flag in ((), ("--detail",)):
        rows, _ = export(tmp_path, "--from", day, "--to", day, *flag, name=f"g{len(flag)}.csv")
        lost = {r["ChargePeriodStart"]: r["x_GoodputSecondsLost"] for r in rows}
        # 100 s of work, checkpoint at 60 s: 40 s lost, in the 10:00 hour where metering stopped at the checkpoint.
        assert lost == {"2026-11-02T10:00:00Z": "40.000", "2026-11-02T11:00:00Z": "0.000"}
    assert UsageInterval.objects.filter(window_ms=to_ms(BASE)).count() == 1


def test_parquet_is_written_in_row_groups_with_the_csv_values(acme, globex, tmp_path):
    generated_month([acme, globex], days=2)
    rows, _ = export(tmp_path, "--from", "2026-10-01", "--to", "2026-10-02", "--detail", name="d.csv")
    path = tmp_path / "d.parquet"
    first, stop_ms = to_ms(MONTH), to_ms(MONTH + timedelta(days=2))
    count = write_parquet(
        str(path), export_batches(first_ms=first, stop_ms=stop_ms, tenant_id=None, detail=True), row_group=50
    )
    assert count == len(rows)
    parquet = pq.ParquetFile(path)
    assert parquet.metadata.num_row_groups == -(-count // 50)
    # Written from dictionary-encoded batches, read as the plain columns FOCUS names, with the version said.
    assert parquet.schema_arrow.remove_metadata().equals(SCHEMA.remove_metadata(), check_metadata=True)
    assert parquet.metadata.metadata[b"focus_version"] == b"1.2"
    table = parquet.read().to_pylist()
    assert [r["BilledCost"] for r in table] == [Decimal(r["BilledCost"]) for r in rows]
    assert [r["Tags"] for r in table] == [r["Tags"] for r in rows]
    assert [r["ChargeClass"] for r in table] == [r["ChargeClass"] or None for r in rows]


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("--from", "2026-13-01", "--to", "2026-10-02"), 2, "--from: '2026-13-01' is not a date"),
        (("--from", "2026-10-03", "--to", "2026-10-02"), 2, "--to: from (2026-10-03) is after to"),
        (("--from", "2026-10-01", "--to", "2026-10-02", "--tenant", "nobody"), 2, "--tenant: No tenant"),
        (("--from", "2026-10-01", "--to", "2026-10-02", "--workers", "0"), 2, "--workers: at least 1"),
    ],
)
def test_bad_arguments_are_refused_readably(acme, tmp_path, args, code, says):
    with pytest.raises(CommandError) as refused:
        call_command("billing_export", *args, "--format", "csv", "--out", str(tmp_path / "x.csv"))
    assert refused.value.returncode == code
    assert says in str(refused.value)
    assert not (tmp_path / "x.csv").exists()


def test_an_unwritable_output_is_refused_with_exit_3(acme, tmp_path):
    for out in (tmp_path / "missing" / "x.csv", tmp_path):
        with pytest.raises(CommandError) as refused:
            call_command(
                "billing_export", "--from", "2026-10-01", "--to", "2026-10-01", "--format", "csv", "--out", str(out)
            )
        assert refused.value.returncode == 3
        assert "--out: cannot write" in str(refused.value)
