"""The exports pass the FinOps FOCUS validator (focus-validator 2.2.1, FOCUS 1.2), run in its own environment
(``make focus-venv``: Python 3.12, numpy < 2, pyarrow < 16) from its package folder, offline: exports of the demo
data (``seed_demo`` and three hours of its workloads) and of a generated month (several tenants, whole GPUs, MIG
slices and fractional shares, a price change mid-month, late adjustments, faults), summary and detail, CSV and
Parquet.

The validator reports every rule; a run passes when nothing fails but ``InvoiceId-C-004-C``: that rule ("null when
not invoiced") and ``InvoiceId-C-005-C`` ("not null when invoiced") are the two branches of ``InvoiceId-C-003-C``,
and one of them fails on any data; the parent, which is the requirement, must pass."""

from __future__ import annotations

import re
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from billing.models import UsageRollup
from billing.services.ledger import windows_close
from tenancy.models import Tenant
from tests.api.test_default_path import demo  # noqa: F401 - the demo database, as make run seeds it
from tests.support import ROOT, require
from tests.support.exports import generated_month

VENV = ROOT / ".focus-venv"
# What Ladder does, as the validator's applicability criteria: the rules that follow from them run too.
CRITERIA = (
    "ACCOUNT_NAMING_SUPPORTED,AVAILABILITY_ZONE_SUPPORTED,PUBLIC_PRICE_LIST_SUPPORTED,USAGE_MEASUREMENT_SUPPORTED,"
    "UNIT_PRICING_SUPPORTED,SUB_ACCOUNT_SUPPORTED,BILLING_BASED_ON_PROVISIONED_RESOURCES_SUPPORTED,"
    "RESOURCE_TYPE_ASSIGNMENT_SUPPORTED,REGION_SUPPORTED,TAGGING_SUPPORTED"
)
ALLOWED_FAILURES = {"InvoiceId-C-004-C"}
MUST_PASS = (
    "InvoiceId-C-003-C",
    "BilledCost-C-000-M",
    "ChargePeriodStart-C-000-M",
    "ListUnitPrice-C-010-C",  # ListUnitPrice x PricingQuantity = ListCost
    "SkuPriceId-C-008-M",
    "Tags-C-001-M",
    "ResourceId-C-000-C",
    "ConsumedQuantity-C-000-C",
)


def validator() -> tuple[Path, Path]:
    executable = VENV / "bin" / "focus-validator"
    packages = sorted(VENV.glob("lib/python3.12/site-packages/focus_validator"))
    require(executable.exists() and bool(packages), "the FOCUS validator (.focus-venv: run `make focus-venv`)")
    return executable, packages[0].parent


def validate(path: Path) -> str:
    executable, folder = validator()
    result = subprocess.run(
        [
            str(executable),
            "--data-file",
            str(path),
            "--rule-set-path",
            "focus_validator/rules",
            "--validate-version",
            "1.2",
            "--block-download",
            "--applicability-criteria",
            CRITERIA,
        ],
        cwd=folder,  # it reads focus_validator/rules relative to the working directory
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report[-3000:]
    totals = re.search(r"Total: (\d+) \| Pass: (\d+) \| Fail: (\d+)", report)
    assert totals, report[-3000:]
    failed = set(re.findall(r"^❌ (\S+): FAIL", report, flags=re.MULTILINE))
    assert failed <= ALLOWED_FAILURES, [line for line in report.splitlines() if line.startswith("❌")]
    assert int(totals[2]) >= 250  # the rules that apply ran
    for rule in MUST_PASS:
        assert re.search(rf"^✅ {rule}: PASS", report, flags=re.MULTILINE), rule
    for dataset in ("CostAndUsage-D-001-M", "CostAndUsage-D-002-M"):
        assert re.search(rf"{dataset}: .*AND passed", report), dataset
    return report


def export_all(tmp_path: Path, first: str, last: str, kinds: list[tuple[bool, str]]) -> list[Path]:
    paths = []
    for detail, file_format in kinds:
        path = tmp_path / f"{'detail' if detail else 'summary'}.{file_format}"
        args = ["--from", first, "--to", last, "--format", file_format, "--out", str(path)]
        call_command("billing_export", *args, *(["--detail"] if detail else []))
        paths.append(path)
    return paths


def test_the_exports_of_a_generated_month_validate(acme: Any, globex: Any, tmp_path: Path) -> None:
    validator()
    initech = Tenant.objects.create(slug="initech", name="Initech")
    generated_month([acme, globex, initech])
    assert UsageRollup.objects.filter(seq__gt=0).exists()
    kinds = [(False, "csv"), (False, "parquet"), (True, "csv"), (True, "parquet")]
    for path in export_all(tmp_path, "2026-10-01", "2026-10-31", kinds):
        validate(path)


@pytest.mark.django_db(transaction=True)  # the demo fixture seeds with real commits, as make run does
def test_the_exports_of_the_demo_data_validate(demo: Any, time_machine: Any, tmp_path: Path) -> None:  # noqa: F811
    validator()
    seeded = timezone.now()
    time_machine.move_to(seeded + timedelta(hours=3))  # the demo's workloads run three hours
    windows_close(now=timezone.now())
    assert UsageRollup.objects.exists()
    first, last = seeded.date().isoformat(), timezone.now().date().isoformat()
    for path in export_all(tmp_path, first, last, [(False, "csv"), (True, "parquet")]):
        validate(path)
