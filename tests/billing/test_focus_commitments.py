"""A reservation's term in the FOCUS exports (billing.domain.focus_commitments): each month of it a purchase row,
billed in advance as the invoice line, and its used and unused GPU-hours, whose effective cost is the purchase's to
the last digit; the reserved work's own rows are Committed at nothing. The exports still reconcile with the invoice
to the cent and pass the FOCUS validator."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from django.core.management import call_command
from django.utils import timezone

from billing.domain import focus_files
from billing.domain.focus import COLUMN_NAMES, Tenant
from billing.domain.focus_commitments import CommitmentMonth, commitment_rows
from billing.domain.pricing import round_money
from billing.selectors import invoice_for
from billing.services.ledger import windows_close
from provisioning.models import GpuModel, Hall, Reservation
from tests.billing.test_focus_validator import validate, validator
from tests.support.billing import H100, load_fleet, place, price, run, stop
from tests.support.exports import MONTH, MONTH_END, cost, read_csv

HOUR = 3_600_000
TERM_START = MONTH + timedelta(days=5)  # 6 October: 26 of October's 31 days


def month_of_term(**change: Any) -> CommitmentMonth:
    values: dict[str, Any] = {
        "tenant": Tenant(1, "acme", "Acme"),
        "reservation": 7,
        "gpus": 8,
        "gpu_model": H100,
        "hall": "eu-west-1a",
        "region_code": "eu-west",
        "region_name": "EU West",
        "currency": "usd",
        "price_per_hour": Decimal("1.80"),
        "term_start_ms": 0,
        "term_end_ms": 90 * 24 * HOUR,
        "start_ms": 0,
        "end_ms": 31 * 24 * HOUR,
        "billed_milli": 8 * 730 * HOUR,
        "committed_milli": 8 * 31 * 24 * HOUR,
        "used_milli": 1_000 * HOUR,
    }
    return CommitmentMonth(**{**values, **change})


def test_a_month_of_a_term_is_a_purchase_and_its_used_and_unused_parts():
    purchase, used, unused = (dict(zip(COLUMN_NAMES, row, strict=True)) for row in commitment_rows(month_of_term()))
    assert (purchase["ChargeCategory"], purchase["ChargeFrequency"]) == ("Purchase", "Recurring")
    assert purchase["BilledCost"] == Decimal("10512")  # 8 GPUs x 730 hours x 1.80, in advance
    assert purchase["EffectiveCost"] == 0  # the month's reserved work carries it
    assert purchase["CommitmentDiscountQuantity"] == 8 * 31 * 24  # GPU-hours eligible: the real time covered
    assert purchase["CommitmentDiscountStatus"] is None
    assert [r["CommitmentDiscountStatus"] for r in (used, unused)] == ["Used", "Unused"]
    assert used["CommitmentDiscountQuantity"] == 1_000
    assert unused["CommitmentDiscountQuantity"] == 8 * 31 * 24 - 1_000
    assert used["ConsumedQuantity"] == 1_000
    assert unused["ConsumedQuantity"] is None
    assert used["BilledCost"] == unused["BilledCost"] == 0
    assert used["EffectiveCost"] + unused["EffectiveCost"] == purchase["BilledCost"]  # exactly
    assert used["EffectiveCost"] == (Decimal(10512) * 1_000 / (8 * 31 * 24)).quantize(Decimal("1e-16"), "ROUND_DOWN")
    for row in (purchase, used, unused):
        assert row["CommitmentDiscountId"] == "reservation/7"
        assert (row["CommitmentDiscountType"], row["CommitmentDiscountCategory"]) == ("Reservation", "Usage")
        assert row["CommitmentDiscountUnit"] == "GPU-Hours"
    nothing = dict(zip(COLUMN_NAMES, commitment_rows(month_of_term(used_milli=0))[2], strict=True))
    assert nothing["EffectiveCost"] == purchase["BilledCost"]  # nothing used: the whole month unused


def reserved_october(tenant: Any) -> Reservation:
    """acme holds 8 H100s from 6 October (in force still), runs 4 of them for ten hours and on-demand work beside."""
    load_fleet()
    price("2.40", since=MONTH - timedelta(days=30))
    price("0", since=MONTH - timedelta(days=30), capacity_class="reserved")
    reservation = Reservation.objects.create(
        tenant=tenant,
        gpu_model=GpuModel.objects.get(name=H100),
        hall=Hall.objects.get(code="eu-west-1a"),
        gpus=8,
        starts_at=TERM_START,
        ends_at=timezone.now() + timedelta(days=400),
        price_per_gpu_hour=Decimal("1.80"),
    )
    work = run(
        place(tenant, gpus=4, capacity_class="reserved", reservation=reservation.pk), TERM_START + timedelta(days=1)
    )
    stop(work, TERM_START + timedelta(days=1, hours=10))
    other = run(place(tenant, gpus=1), MONTH + timedelta(hours=2))
    stop(other, MONTH + timedelta(hours=5))
    windows_close(now=MONTH_END + timedelta(hours=2))
    return reservation


def export(tmp_path: Path, name: str, *args: str) -> Path:
    path = tmp_path / name
    file_format = "parquet" if name.endswith(".parquet") else "csv"
    call_command(
        "billing_export",
        "--from",
        "2026-10-01",
        "--to",
        "2026-10-31",
        "--format",
        file_format,
        *args,
        "--out",
        str(path),
    )
    return path


def test_the_export_carries_the_term_and_reconciles_with_the_invoice(acme, tmp_path):
    reservation = reserved_october(acme)
    rows = read_csv(export(tmp_path, "out.csv"))
    term = [r for r in rows if r["CommitmentDiscountId"] == f"reservation/{reservation.pk}"]
    assert [(r["ChargeCategory"], r["CommitmentDiscountStatus"]) for r in term] == [
        ("Purchase", ""),
        ("Usage", "Used"),
        ("Usage", "Unused"),
    ]
    purchase, used, unused = term
    assert Decimal(used["CommitmentDiscountQuantity"]) == 40  # 4 GPUs for ten hours
    assert Decimal(used["EffectiveCost"]) + Decimal(unused["EffectiveCost"]) == Decimal(purchase["BilledCost"])
    assert purchase["ChargePeriodStart"] == "2026-10-06T00:00:00Z"
    reserved = [r for r in rows if r["SkuId"].endswith("/reserved")]
    assert reserved
    assert {r["PricingCategory"] for r in reserved} == {"Committed"}
    assert sum(Decimal(r["BilledCost"]) for r in reserved) == 0
    # Every invoice line, the term's included, is its rows' cost rounded once.
    invoice = invoice_for(tenant=acme, start=MONTH, end=MONTH_END, now=MONTH_END + timedelta(days=1))
    lines: dict[tuple[str, Decimal], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        lines[(r["SkuId"], Decimal(r["ListUnitPrice"]))].append(r)
    exported = {key: round_money(cost(group), "usd") for key, group in lines.items()}
    assert exported == {(line["sku"], line["unit_price"]): line["amount"] for line in invoice.lines}
    # 8 GPUs x 730 hours x 1.80 x 26/31 of October: 8,816.516... billed on 6 October, in advance.
    assert exported[(f"reservation/{reservation.pk}", Decimal("1.80"))] == Decimal("8816.52")


def test_the_exports_with_a_term_validate(acme, tmp_path):
    validator()
    reserved_october(acme)
    for name, args in (("summary.csv", ()), ("detail.parquet", ("--detail",))):
        path = export(tmp_path, name, *args)
        validate(path)
    table = pq.read_table(tmp_path / "detail.parquet")
    assert sorted(v for v in table.column("CommitmentDiscountStatus").to_pylist() if v) == ["Unused", "Used"]


def test_a_file_joined_from_parts_ends_with_the_term_rows_as_one_writer_writes_them(tmp_path):
    rows = commitment_rows(month_of_term())
    for file_format in focus_files.FORMATS:
        whole = focus_files.write(file_format, str(tmp_path / f"whole.{file_format}"), [], extra=rows)
        part = str(tmp_path / f"part.{file_format}")
        focus_files.write_part(file_format, part, [])
        joined = focus_files.join(file_format, str(tmp_path / f"joined.{file_format}"), [part], lambda: 0, extra=rows)
        assert whole.rows == joined.rows == 3
        assert whole.sha256 == joined.sha256, file_format
