"""The metering benchmark: ``python -m bench.metering [--rows 1000000] [--push 5000] [--rate 1000]``.

PostgreSQL only: it drops and recreates its own database (``--database`` on ``--server``), migrates it and loads
1,000 tenants, 4 SKUs (a price each) and ``--rows`` allocations with set-based SQL (not measured). Then:

1. Pipeline, at ``--rows / 10`` and ``--rows``: N open intervals inside one hourly window W (MeteringLock cut
   through W, the steady state); ``windows_close(now=W + 1h + grace + 1 min)`` cuts them at W + 1h and rolls the
   pieces up. Its steps are timed by wrapping them (billing code unchanged), the COMMIT (deferred FK checks) apart.
2. Physical bound: the same N rows, rendered as binary COPY data beforehand, written by psycopg's ``cursor.copy()``
   into ``CREATE TABLE ... (LIKE billing_usageinterval INCLUDING ALL)``, without and with its 4 deferred FKs.
3. Memory: peak RSS growth (VmHWM, reset first) in the timed run; ``tracemalloc`` peak in a second, untimed run.
4. Push: ``tests.fakes.stripe --rate R`` in its own process; ``--push`` pending rollups (recent windows) sent by
   ``billing_push`` at ``STRIPE_METER_EVENTS_PER_SECOND = R``; Stripe's totals checked against the ledger's.

Exits 1 when a correctness check fails; targets (pipeline >= 20% of COPY, push >= 90% of R) are only reported.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.scratch import setup_scratch_django, sql

ROOT = Path(__file__).resolve().parent.parent
HOUR_MS = 3_600_000
TENANTS, SKUS = 1000, 4
COLUMNS = "tenant_id, allocation_id, sku_id, price_id, units_milli, start_ms, end_ms, window_ms, quantity_milli, batch"
Row = dict[str, object]


def load_catalog(rows: int, window_ms: int) -> None:
    """Tenants, SKUs priced since 30 days before W, and ``rows`` allocations (tenant i % 1000, SKU i / 1000 % 4)."""
    from billing.domain.metering import from_ms
    from billing.models import Sku, SkuPrice
    from provisioning.models import GpuModel, Hall, Region

    region = Region.objects.create(code="bench", name="Bench", jurisdiction="EU")
    hall = Hall.objects.create(code="bench-1a", region=region)
    for k in range(SKUS):
        model = GpuModel.objects.create(name=f"BENCH-{k}", memory_gb=80, cc_capable=False)
        sku = Sku(rung="container", gpu_model=model, unit="gpu", mig_profile="", region=region)
        sku.save()
        SkuPrice.objects.create(sku=sku, effective_from=from_ms(window_ms - 30 * 24 * HOUR_MS), unit_price_per_hour=2)
    sql(
        "INSERT INTO tenancy_tenant (slug, name, state, created_at, allow_soft_sharing, dedicated_hardware, sovereign)"
        " SELECT 'bench-' || i, 'Bench ' || i, 'active', now(), true, false, false FROM generate_series(1, %s) i",
        [TENANTS],
    )
    sql(
        "INSERT INTO provisioning_allocation (name, rung, performance, security, state, spec, quota_milli, "
        "provisioner, dedicated, failure_reason, checkpoint_step, restarts, goodput_lost_ms, created_at, "
        "state_changed_at, gpu_model_id, hall_id, tenant_id) "
        "SELECT 'a' || i, 'container', 'whole_gpu', 'container', 'running', '{}', 1000, 'sim', false, '', '', 0, 0, "
        "now(), now(), m.ids[1 + i / %(tenants)s %% %(skus)s], %(hall)s, t.first + i %% %(tenants)s "
        "FROM generate_series(0, %(n)s) i, (SELECT array_agg(id ORDER BY id) ids FROM provisioning_gpumodel) m, "
        "(SELECT min(id) first FROM tenancy_tenant) t",
        {"skus": SKUS, "hall": hall.pk, "tenants": TENANTS, "n": rows - 1},
    )


def load_intervals(rows: int, window_ms: int) -> None:
    """Empty the ledger and open ``rows`` intervals inside window W (1-8 GPUs, starts spread over the hour)."""
    sql("TRUNCATE billing_usageinterval, billing_usagerollup, billing_metertotal, billing_meteringlock")
    sql("INSERT INTO billing_meteringlock (id, cut_through_ms, last_batch) VALUES (1, %s, 0)", [window_ms])
    sql(
        "INSERT INTO billing_usageinterval (tenant_id, allocation_id, sku_id, price_id, units_milli, start_ms, "
        "window_ms) SELECT a.tenant_id, a.id, s.id, p.id, 1000 * (1 + a.id %% 8), %(w)s + a.id * 7919 %% %(h)s, %(w)s "
        "FROM (SELECT * FROM provisioning_allocation ORDER BY id LIMIT %(n)s) a "
        "JOIN billing_sku s ON s.gpu_model_id = a.gpu_model_id JOIN billing_skuprice p ON p.sku_id = s.id",
        {"w": window_ms, "h": HOUR_MS, "n": rows},
    )
    sql("VACUUM ANALYZE billing_usageinterval")  # as autovacuum would have; COPY's target starts empty


def peak_rss_mib(reset: bool = False) -> float:
    """The process's peak resident set (VmHWM); ``reset`` first sets it back to the current RSS (Linux)."""
    if reset:
        Path("/proc/self/clear_refs").write_text("5")
    return int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]) / 1024


def run_pipeline(rows: int, window_ms: int, grace_ms: int, traced: bool) -> tuple[Row, list[str]]:
    """One ``windows_close`` over ``rows`` open intervals: timed, or ``traced`` (tracemalloc peak only)."""
    from django.db import transaction

    from billing.domain.metering import from_ms
    from billing.services import ledger

    load_intervals(rows, window_ms)
    cut_at = window_ms + HOUR_MS
    [(groups, expected)] = sql(
        "SELECT count(DISTINCT (tenant_id, sku_id, price_id)), sum(units_milli::bigint * (%s - start_ms) / 1000) "
        "FROM billing_usageinterval WHERE end_ms IS NULL",
        [cut_at],
    )
    steps: dict[str, float] = {}
    originals = {name: getattr(ledger, name) for name in ("_cut_stragglers", "_cut_through", "_mark", "_roll_up")}
    for name, step in originals.items():

        def timed(*args: Any, _name: str = name, _step: Callable[..., Any] = step) -> Any:
            began = time.perf_counter()
            try:
                return _step(*args)
            finally:
                steps[_name] = time.perf_counter() - began

        setattr(ledger, name, timed)
    rss = peak_rss_mib(reset=True)
    if traced:
        tracemalloc.start()
    cpu, began = time.process_time(), time.perf_counter()
    try:
        with transaction.atomic():  # windows_close's own block becomes a savepoint: COMMIT is timed apart
            report = ledger.windows_close(now=from_ms(cut_at + grace_ms + 60_000))
            done = time.perf_counter()
        committed = time.perf_counter()
    finally:
        for name, step in originals.items():
            setattr(ledger, name, step)
    cpu = time.process_time() - cpu
    if traced:
        figures: Row = {"tracemalloc_peak_mib": round(tracemalloc.get_traced_memory()[1] / 2**20, 1)}
        tracemalloc.stop()
    else:
        figures = {
            "rows": rows,
            "seconds": round(committed - began, 2),
            "rows_per_s": round(rows / (committed - began)),
            "stragglers_s": round(steps["_cut_stragglers"], 2),
            "cut_s": round(steps["_cut_through"], 2),
            "mark_s": round(steps["_mark"], 2),
            "roll_up_s": round(steps["_roll_up"], 2),
            "commit_s": round(committed - done, 2),
            "client_cpu_s": round(cpu, 2),
            "rollups": report.rollups,
            "rss_growth_mib": round(peak_rss_mib() - rss, 1),
        }
    [(closed, successors, rolled, unbatched)] = sql(
        "SELECT count(*) FILTER (WHERE end_ms = %(at)s), count(*) FILTER (WHERE end_ms IS NULL AND start_ms = %(at)s),"
        " (SELECT sum(quantity_milli) FROM billing_usagerollup), count(*) FILTER (WHERE end_ms = %(at)s AND batch IS "
        "NULL) FROM billing_usageinterval",
        {"at": cut_at},
    )
    checks = (
        ("cut", report.cut, rows),
        ("pieces", report.pieces, rows),
        ("rollups", report.rollups, groups),
        ("closed rows", closed, rows),
        ("open successors", successors, rows),
        ("unrolled pieces", unbatched, 0),
        ("rolled-up quantity", rolled, expected),
    )
    return figures, [f"{what} at {rows} rows: {got} != {want}" for what, got, want in checks if got != want]


def run_copy(window_ms: int) -> list[Row]:
    """COPY the pipeline's N input rows into a scratch copy of the table, without and then with foreign keys."""
    from django.db import connection

    source = (
        "SELECT tenant_id, allocation_id, sku_id, price_id, units_milli, start_ms, NULL::bigint, window_ms, "  # noqa: S608
        f"NULL::bigint, NULL::bigint FROM billing_usageinterval WHERE end_ms = {int(window_ms + HOUR_MS)}"
    )
    keys = sql(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = 'billing_usageinterval'::regclass AND contype = 'f'"
    )
    connection.ensure_connection()
    raw: Any = connection.connection  # psycopg 3 in autocommit: each COPY commits, and checks the keys, by itself
    with raw.cursor() as cursor, cursor.copy(f"COPY ({source}) TO STDOUT (FORMAT BINARY)") as copy:
        rendered = b"".join(bytes(data) for data in copy)
    figures: list[Row] = []
    for with_keys in (False, True):
        sql("DROP TABLE IF EXISTS bench_copy")
        sql("CREATE TABLE bench_copy (LIKE billing_usageinterval INCLUDING ALL)")
        for name, definition in keys if with_keys else ():
            sql(f"ALTER TABLE bench_copy ADD CONSTRAINT bench_{name[:50]} {definition}")
        began = time.perf_counter()
        with raw.cursor() as cursor, cursor.copy(f"COPY bench_copy ({COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(rendered)  # psycopg sends it in chunks
        elapsed = time.perf_counter() - began
        [(copied,)] = sql("SELECT count(*) FROM bench_copy")
        into = f"LIKE ... INCLUDING ALL + {len(keys)} deferred FKs" if with_keys else "LIKE ... INCLUDING ALL"
        figures.append(
            {"into": into, "rows": copied, "seconds": round(elapsed, 2), "rows_per_s": round(copied / elapsed)}
        )
    sql("DROP TABLE bench_copy")
    return figures


def start_stripe(port: int, rate: float) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tests.fakes.stripe", "--port", str(port), "--rate", str(rate)]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if server.stdout is None or not server.stdout.readline():  # it prints a line once its socket listens
        raise SystemExit("the Stripe test server did not start")
    return server


def run_push(count: int, rate: float) -> tuple[Row, list[str]]:
    """Set up Stripe for the bench tenants, make ``count`` pending rollups and time ``billing_push``."""
    from django.db.models import Sum
    from django.utils import timezone

    from billing.domain.metering import to_ms, window_of
    from billing.models import BillingAccount, SkuPrice, UsageRollup
    from billing.services.stripe_push import billing_push
    from billing.services.stripe_sync import stripe_account_sync, stripe_client, stripe_sync_catalog
    from tenancy.models import Tenant

    stripe_sync_catalog()
    tenants = list(Tenant.objects.order_by("id"))
    for tenant in tenants:
        stripe_account_sync(tenant=tenant)
    pairs = [(t, p) for t in tenants for p in SkuPrice.objects.order_by("id")]  # one price, one meter, per SKU
    sql("TRUNCATE billing_usagerollup")
    latest = window_of(to_ms(timezone.now())) - HOUR_MS
    rollups = []
    for i in range(count):
        (tenant, price), value = pairs[i % len(pairs)], 1 + i * 7919 % 14_400
        rollups.append(
            UsageRollup(
                tenant=tenant,
                sku_id=price.sku_id,
                price=price,
                window_ms=latest - i // len(pairs) * HOUR_MS,
                batch=1,
                quantity_milli=value * 1000,
                amount=0,
                currency="usd",
                meter_value=value,
            )
        )
    UsageRollup.objects.bulk_create(rollups, batch_size=2000)
    began = time.perf_counter()
    report = billing_push(now=timezone.now())
    elapsed = time.perf_counter() - began
    failed = [] if report.sent == count else [f"push: {report} (expected {count} sent)"]
    client, customers = stripe_client(), dict(BillingAccount.objects.values_list("tenant_id", "stripe_customer_id"))
    meters = dict(SkuPrice.objects.values_list("id", "stripe_meter_id"))
    start, end = latest // 1000 - count // len(pairs) * 3600, to_ms(timezone.now()) // 60_000 * 60 + 60
    ledger = UsageRollup.objects.values_list("tenant_id", "price_id").annotate(total=Sum("meter_value"))
    mismatches = 0
    for tenant_id, price_id, total in ledger:
        params: Any = {"customer": customers[tenant_id], "start_time": start, "end_time": end, "limit": 1}
        [summary] = client.v1.billing.meters.event_summaries.list(meters[price_id], params=params).data
        mismatches += int(summary.aggregated_value) != total
    if mismatches:
        failed.append(f"push: {mismatches} customer x meter totals differ between Stripe and the ledger")
    totals = "MISMATCH" if mismatches else f"OK ({len(ledger)} customer x meter totals)"
    per_s = report.sent / elapsed
    figures: Row = {"events": report.sent, "seconds": round(elapsed, 2), "events_per_s": round(per_s, 1)}
    return figures | {"configured_rate": rate, "share_of_rate": f"{100 * per_s / rate:.1f}%", "totals": totals}, failed


def table(rows: Sequence[Row]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    return "\n".join(lines + ["| " + " | ".join(str(v) for v in r.values()) + " |" for r in rows])


def verdict(share: float, target: float) -> str:
    return f"{100 * share:.1f}% (target >= {100 * target:.0f}%: target {'met' if share >= target else 'missed'})"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.metering", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="open intervals cut and rolled up (and /10)")
    parser.add_argument("--push", type=int, default=5000, help="pending rollups pushed to the Stripe server")
    parser.add_argument("--rate", type=float, default=1000.0, help="meter events per second, server and pusher")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432/")
    parser.add_argument("--database", default="ladder_bench_metering", help="dropped and recreated")
    args = parser.parse_args(argv)
    if args.rows < 10 or args.push < 1 or args.rate <= 0:
        parser.error("--rows must be at least 10, --push at least 1 and --rate positive")
    started = time.perf_counter()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    setup_scratch_django(
        "bench.metering",
        args.server,
        args.database,
        STRIPE_API_KEY="sk_test_ladder",
        STRIPE_API_BASE=f"http://127.0.0.1:{port}",
        STRIPE_METER_EVENTS_PER_SECOND=str(args.rate),
    )
    from django.conf import settings

    [(version,)] = sql("SHOW server_version")
    print(f"machine: {os.cpu_count()} CPUs, PostgreSQL {version}, Python {sys.version.split()[0]}\n")
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    window_ms = int((hour - timedelta(hours=3)).timestamp()) * 1000  # W: three hours ago, well inside 35 days
    grace_ms = int(settings.LADDER_BILLING_GRACE_MINUTES * 60_000)
    load_catalog(args.rows, window_ms)
    failed: list[str] = []
    pipeline = []
    for rows in (args.rows // 10, args.rows):
        figures, problems = run_pipeline(rows, window_ms, grace_ms, traced=False)
        memory, more = run_pipeline(rows, window_ms, grace_ms, traced=True)
        pipeline.append(figures | memory)
        failed += problems + more
    copies = run_copy(window_ms)
    server = start_stripe(port, args.rate)
    try:
        push, problems = run_push(args.push, args.rate)
        failed += problems
    finally:
        server.terminate()
        server.wait()
    print("Pipeline (one windows_close): reads N open rows, writes 2N row versions into the table's 4 indexes")
    print("(N pieces closed and counted in place, N successors inserted), checks 4 FKs for the N inserted at")
    print("commit, sums N pieces into rollups.\n")
    print(table(pipeline))
    print("\nCOPY of the same N rows: N row versions, the same indexes and checks (+ the 4 FKs), commit included.\n")
    print(table(copies))
    for copy in copies:
        share = float(pipeline[-1]["rows_per_s"]) / float(copy["rows_per_s"])  # type: ignore[arg-type]
        print(f"\npipeline / COPY {copy['into']} at {args.rows} rows: {verdict(share, 0.2)}", end="")
    print("\n\nPush: billing_push (batches of up to 1,000, 8 threads) to tests.fakes.stripe in its own process\n")
    print(table([push]))
    print(f"\npush rate / configured rate: {verdict(float(push['events_per_s']) / args.rate, 0.9)}")  # type: ignore[arg-type]
    for problem in failed:
        print(f"CHECK FAILED: {problem}")
    print(f"\nchecks: {'FAILED' if failed else 'OK'} (total {time.perf_counter() - started:.0f}s)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
