"""The finance export benchmark: ``python -m bench.finance_export [--rows 1000000] [--database sqlite|postgres]``.

Loads ``--rows`` usage rollups (tenant x SKU x hour: 50 tenants x 4 SKUs, as many hours as it takes) and as many
counted usage pieces (one per allocation x hour, for the detail export) with set-based SQL (not measured), into a
scratch database: a new SQLite file, or ``--name`` on the PostgreSQL ``--server`` (dropped and recreated). Then
writes the signed FOCUS exports (``lifecycle.services.exports.export_write``: rows read through the chunked
iterator, CSV or Parquet, SHA-256 and signature) of a tenth of the hours and of all of them, summary and detail,
CSV and Parquet, and reports for each: rows, seconds, rows/s, peak RSS growth (VmHWM reset first). A second,
untimed run of a tenth and a quarter under ``tracemalloc`` reports the peak of Python allocations: memory
that does not grow with the rows.

Exits 1 when a check fails (row counts, the signature); the 200,000 rows/s target is only reported.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.scratch import setup_scratch_django, sql

HOUR_MS = 3_600_000
TENANTS, SKUS = 50, 4
START = datetime(2026, 1, 1, tzinfo=UTC)
TARGET = 200_000


def setup_django(database: str, server: str, name: str, folder: Path) -> None:
    if database == "postgres":
        setup_scratch_django("bench.finance_export", server, name, LADDER_EXPORT_DIR=str(folder))
        return
    os.environ.update(
        DATABASE_URL=f"sqlite:///{folder / 'bench.sqlite3'}",
        DEBUG="0",
        LOG_LEVEL="WARNING",
        LADDER_EXPORT_DIR=str(folder),
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def load(rows: int) -> int:
    """Tenants, SKUs (a price each), one allocation per tenant x SKU, then ``rows`` rollups and pieces; returns the
    hours loaded."""
    from billing.models import Sku, SkuPrice
    from provisioning.models import Allocation, GpuModel, Hall, Region
    from tenancy.models import Tenant

    region = Region.objects.create(code="bench", name="Bench", jurisdiction="EU")
    hall = Hall.objects.create(code="bench-1a", region=region)
    skus = []
    for k in range(SKUS):
        model = GpuModel.objects.create(name=f"BENCH-{k}", memory_gb=80, cc_capable=False)
        sku = Sku(rung="container", gpu_model=model, unit="gpu", mig_profile="", region=region)
        sku.save()
        SkuPrice.objects.create(sku=sku, effective_from=START - timedelta(days=60), unit_price_per_hour="2.490000")
        skus.append(sku)
    tenants = Tenant.objects.bulk_create(Tenant(slug=f"bench-{i}", name=f"Bench {i}") for i in range(TENANTS))
    Allocation.objects.bulk_create(
        Allocation(
            tenant=tenant,
            name=f"run-{tenant.slug}-{sku.pk}",
            rung="container",
            performance="whole_gpu",
            security="container",
            gpu_model=sku.gpu_model,
            hall=hall,
            state="running",
            spec={},
            quota_milli=1000,
            provisioner="simulated",
        )
        for tenant in tenants
        for sku in skus
    )
    hours = -(-rows // (TENANTS * SKUS))
    first_ms = int(START.timestamp()) * 1000
    hours_cte = "WITH RECURSIVE h(i) AS (SELECT CAST(0 AS BIGINT) UNION ALL SELECT i + 1 FROM h WHERE i < %(last)s) "
    source = (
        "FROM h, provisioning_allocation a JOIN billing_sku s ON s.gpu_model_id = a.gpu_model_id "
        "JOIN billing_skuprice p ON p.sku_id = s.id"
    )
    units = "(1000 * (1 + (a.id + h.i) %% 4))"
    params = {"last": hours - 1, "first": first_ms, "hour": HOUR_MS, "at": START, "limit": rows}
    sql(
        hours_cte + "INSERT INTO billing_usagerollup (tenant_id, sku_id, price_id, window_ms, seq, batch, "
        "quantity_milli, amount, currency, closed_at, meter_value, push_state, push_attempts, next_attempt_at, "
        "lease_token, push_error) "
        f"SELECT a.tenant_id, s.id, p.id, %(first)s + h.i * %(hour)s, 0, 1, {units} * 3600, 0, 'usd', %(at)s, 0, "
        f"'sent', 0, %(at)s, '', '' {source} ORDER BY h.i, a.id LIMIT %(limit)s",
        params,
    )
    sql(
        hours_cte + "INSERT INTO billing_usageinterval (tenant_id, allocation_id, sku_id, price_id, units_milli, "
        "start_ms, end_ms, window_ms, quantity_milli, batch) "
        f"SELECT a.tenant_id, a.id, s.id, p.id, {units}, %(first)s + h.i * %(hour)s, %(first)s + (h.i + 1) * "
        f"%(hour)s, %(first)s + h.i * %(hour)s, {units} * 3600, 1 {source} ORDER BY h.i, a.id LIMIT %(limit)s",
        params,
    )
    from django.db import connection

    # As autovacuum would have on PostgreSQL (statistics, and the visibility map an index-only scan needs);
    # SQLite's planner reads the statistics too.
    sql("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
    return hours


def peak_rss_mib(reset: bool = False) -> float:
    if reset:
        Path("/proc/self/clear_refs").write_text("5")
    return int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]) / 1024


def rss_mib() -> float:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def export(folder: Path, last_day: date, detail: bool, file_format: str, workers: int) -> dict[str, Any]:
    from lifecycle.services.exports import ExportSpec, export_write

    spec = ExportSpec(START.date(), last_day, None, detail, file_format)
    return export_write(spec=spec, path=folder / spec.file_name, workers=workers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--name", default="ladder_bench_finance_export")
    parser.add_argument("--workers", type=int, help="processes per export (default: LADDER_EXPORT_WORKERS, per CPU)")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="ladder-bench-export-"))
    setup_django(args.database, args.server, args.name, folder)
    from billing.selectors.exports import PARALLEL_MIN_ROWS
    from compliance.domain.verify_export import verify_export
    from compliance.signing import audit_signer
    from lifecycle.services.exports import export_workers

    workers = args.workers or export_workers()

    started = time.perf_counter()
    hours = load(args.rows)
    print(f"loaded {args.rows:,} rollups and pieces ({hours:,} hours x {TENANTS * SKUS} tenant x SKU) on "
          f"{args.database} in {time.perf_counter() - started:.1f} s")  # fmt: skip
    failures = []
    per_hour = TENANTS * SKUS
    sizes = {"1/10": max(hours // 10 // 24, 1), "all": -(-hours // 24)}
    print(f"{workers} worker process(es) per export of {PARALLEL_MIN_ROWS:,} rows or more; RSS growth of this "
          "process, and the peak RSS of the largest worker")  # fmt: skip
    print(f"{'export':<18} {'hours':>6} {'rows':>10} {'seconds':>8} {'rows/s':>10} {'RSS growth MiB':>15} "
          f"{'worker MiB':>11}")  # fmt: skip
    for detail in (False, True):
        for file_format in ("csv", "parquet"):
            kind = f"{'detail' if detail else 'summary'} {file_format}"
            for label, days in sizes.items():
                expected = min(days * 24, hours) * per_hour
                expected = min(expected, args.rows)
                base = rss_mib()
                peak_rss_mib(reset=True)
                begin = time.perf_counter()
                signature = export(folder, START.date() + timedelta(days=days - 1), detail, file_format, workers)
                seconds = time.perf_counter() - begin
                growth = peak_rss_mib() - base
                rate = signature["rows"] / seconds
                child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
                print(f"{kind:<18} {label:>6} {signature['rows']:>10,} {seconds:>8.2f} {rate:>10,.0f} {growth:>15.1f} "
                      f"{child:>11.1f}")  # fmt: skip
                if signature["rows"] != expected:
                    failures.append(f"{kind} {label}: {signature['rows']} rows, expected {expected}")
                path = folder / signature["file"]
                verify_export(path, signature, audit_signer().public_key)
                path.unlink()
    # Python allocations are bounded by one chunk (billing.selectors.exports.CHUNK rows): shown at a tenth and a
    # quarter of
    # the hours (both a chunk or more from 200,000 rows on).
    print("tracemalloc peak (untimed runs, one process):")
    for detail in (False, True):
        for file_format in ("csv", "parquet"):
            peaks = []
            for days in (sizes["1/10"], max(hours // 4 // 24, 1)):
                tracemalloc.start()
                signature = export(folder, START.date() + timedelta(days=days - 1), detail, file_format, 1)
                peaks.append(f"{signature['rows']:,} rows: {tracemalloc.get_traced_memory()[1] / 2**20:.1f} MiB")
                tracemalloc.stop()
                (folder / signature["file"]).unlink()
            print(f"  {'detail' if detail else 'summary'} {file_format}: {'; '.join(peaks)}")
    print(f"target: {TARGET:,} rows/s")
    if failures:
        print("checks: FAILED\n  " + "\n  ".join(failures))
        return 1
    print("checks: OK (row counts, signatures)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
