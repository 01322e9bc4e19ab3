"""The retention sweep benchmark (``python -m bench.compliance --part sweep``; the parts: ``__main__.py``).

``--part sweep [--assets 1000000] [--holds 1000] [--tenants 200]``: ``--assets`` live data assets (COPY) over
``--tenants`` tenants and the seven categories, created over the last three years, and ``--holds`` legal holds
placed with ``legal_hold_create``. Then ``retention_sweep`` (``compliance/services/sweep.py``) at T (schedules what
expired), a dry run at T (schedules nothing more) and the sweep at T + the waiting period (shreds), each with its
wall time, client CPU and peak RSS growth (VmHWM, reset first), and the ``tracemalloc`` peak of the same sweeps in
a second, untimed run on a copy of the database made before the first (``--no-trace``: not). Checked against the
hold scopes and
retention in SQL: what each pass scheduled, shredded and held (per hold), every asset's state, the audit events,
the chain.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import random
import subprocess
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlparse

from bench.compliance.measure import Row, rate, table, timed
from bench.metering import peak_rss_mib
from bench.scratch import setup_scratch_django, sql

# Assets per category, in percent: logs and inference payloads are most of what a GPU cloud stores for a tenant,
# finance records a steady trickle that never expires within the three years loaded.
CATEGORY_SHARE = {
    "dataset": 10,
    "checkpoint": 15,
    "job_log": 25,
    "inference_payload": 25,
    "export": 5,
    "usage_record": 15,
    "invoice": 5,
}
HISTORY = timedelta(days=3 * 365)
ASSET_COLUMNS = (
    "tenant_id",
    "name",
    "category",
    "region_id",
    "size_bytes",
    "created_at",
    "location",
    "key_id",
    "wrapped_key",
    "state",
    "shred_reason",
)
# The first active hold (lowest id, the one ``retention.Holds.first`` names) whose scope covers asset ``a``,
# written from the hold scopes in SQL rather than asked of ``compliance.domain.retention``.
COVERING = (
    "SELECT min(h.id) FROM compliance_legalhold h WHERE h.state = 'active' AND h.tenant_id = a.tenant_id"
    " AND (jsonb_array_length(h.categories) = 0 OR h.categories ? a.category)"
    " AND (h.created_from IS NULL OR a.created_at >= h.created_from)"
    " AND (h.created_to IS NULL OR a.created_at <= h.created_to)"
)
Classes = Counter[tuple[int | None, str, str]]  # (first covering hold, expiry, state) -> assets


def asset_rows(count: int, tenants: Sequence[int], region_id: int, now: datetime) -> Iterator[tuple[Any, ...]]:
    """``count`` live assets, oldest first (ids follow creation), created evenly over the three years before
    ``now``; the k-th tenant's share goes as 1 / (k + 10): a few large tenants and a long tail."""
    rng = random.Random(7)
    by_tenant = list(itertools.accumulate(1 / (k + 10) for k in range(len(tenants))))
    categories, by_category = list(CATEGORY_SHARE), list(itertools.accumulate(CATEGORY_SHARE.values()))
    start, step = now - HISTORY, HISTORY / count
    for i in range(count):
        [tenant] = rng.choices(tenants, cum_weights=by_tenant)
        [category] = rng.choices(categories, cum_weights=by_category)
        created = start + step * (i + rng.random())
        yield (
            tenant,
            f"{category}-{i}",
            category,
            region_id,
            rng.randrange(2**20, 2**36),
            created,
            "",
            rng.randbytes(8).hex(),
            rng.randbytes(61),
            "live",
            "",
        )


def load_assets(count: int, tenants: Sequence[int], now: datetime) -> None:
    from django.db import connection

    from provisioning.models import Region

    region = Region.objects.create(code="bench", name="Bench", jurisdiction="EU")
    connection.ensure_connection()
    raw: Any = connection.connection
    columns = ", ".join(ASSET_COLUMNS)
    with raw.cursor() as cursor, cursor.copy(f"COPY compliance_dataasset ({columns}) FROM STDIN") as copy:
        for row in asset_rows(count, tenants, region.pk, now):
            copy.write_row(row)
    sql("VACUUM ANALYZE compliance_dataasset")  # as autovacuum would have


def place_holds(count: int, tenants: Sequence[int], now: datetime) -> Counter[str]:
    """``count`` holds through ``legal_hold_create`` (each audited) on random tenants: 2% over a whole tenant, 8%
    broad (1-3 categories over 3-12 months), the rest narrow (1-2 categories over 1-30 days)."""
    from compliance.services.assets import AssetScope
    from compliance.services.holds import legal_hold_create
    from core.actor import Actor
    from tenancy.models import Tenant

    rng = random.Random(11)
    actor = Actor.system("bench-legal")
    by_id = Tenant.objects.in_bulk(list(tenants))
    categories = list(CATEGORY_SHARE)
    kinds: Counter[str] = Counter()
    for k in range(count):
        draw, start = rng.random(), now - HISTORY * rng.random()
        if draw < 0.02:
            kind, scope = "whole tenant", AssetScope()
        elif draw < 0.10:
            kind = "broad"
            span = timedelta(days=rng.uniform(90, 365))
            scope = AssetScope(
                categories=rng.sample(categories, rng.randint(1, 3)), created_from=start, created_to=start + span
            )
        else:
            kind = "narrow"
            span = timedelta(days=rng.uniform(1, 30))
            scope = AssetScope(
                categories=rng.sample(categories, rng.randint(1, 2)), created_from=start, created_to=start + span
            )
        tenant = by_id[rng.choice(tenants)]
        legal_hold_create(
            tenant=tenant, matter=f"matter {k}", reason="bench", scope=scope, lock_until=None, actor=actor
        )
        kinds[kind] += 1
    return kinds


def asset_classes(first: datetime, later: datetime) -> Classes:
    """Every asset by its first covering active hold (None: none), whether it expired by ``first`` ("expired"), by
    ``later`` ("expiring") or neither ("kept") under the effective retention, and its state."""
    from compliance.services.assets import retention_defaults

    rows = sql(
        f"SELECT ({COVERING}), CASE WHEN a.created_at <= %(first)s - k.days * interval '86400 seconds' THEN 'expired'"  # noqa: S608
        " WHEN a.created_at <= %(later)s - k.days * interval '86400 seconds' THEN 'expiring' ELSE 'kept' END,"
        " a.state, count(*) FROM compliance_dataasset a"
        " JOIN (SELECT key AS category, value::int AS days FROM jsonb_each_text(%(days)s::jsonb)) k USING (category)"
        " GROUP BY 1, 2, 3",
        {"first": first, "later": later, "days": json.dumps(retention_defaults())},
    )
    return Counter({(hold, expiry, state): n for hold, expiry, state, n in rows})


def expected_state(hold: int | None, expiry: str, passes: int) -> str:
    """What an asset's state must be after the first sweep (``passes`` 1) or the one a waiting period later (3)."""
    if hold is not None or expiry == "kept" or (expiry == "expiring" and passes == 1):
        return "live"
    if expiry == "expired" and passes == 3:
        return "shredded"
    return "shredding"


def held_by(classes: Classes, expiries: set[str]) -> Counter[int]:
    held: Counter[int] = Counter()
    for (hold, expiry, _), n in classes.items():
        if hold is not None and expiry in expiries:
            held[hold] += n
    return held


def head_seq() -> int:
    return int(sql("SELECT coalesce(max(seq), 0) FROM compliance_auditchainhead")[0][0])


def sweep_pass(name: str, now: datetime, dry_run: bool, assets: int, traced: bool) -> tuple[Any, Row]:
    """One ``retention_sweep``: timed (wall, client CPU, peak RSS growth), or ``traced`` (tracemalloc peak only)."""
    from compliance.services.sweep import retention_sweep

    before = head_seq()
    gc.collect()
    rss = peak_rss_mib(reset=True)
    if traced:
        tracemalloc.start()
    cpu, began = time.process_time(), time.perf_counter()
    report = retention_sweep(now=now, dry_run=dry_run)
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    if traced:
        figures: Row = {"tracemalloc_peak_mib": round(tracemalloc.get_traced_memory()[1] / 2**20, 1)}
        tracemalloc.stop()
        return report, figures
    scheduled, shredded, held = (sum(c.values()) for c in (report.scheduled, report.shredded, report.held))
    decided = scheduled + shredded + held + sum(report.suspended.values())
    return report, {
        "pass": name,
        "seconds": round(seconds, 1),
        "assets/s": rate(assets, seconds),
        "decided": decided,
        "decided/s": rate(decided, seconds),
        "scheduled": scheduled,
        "shredded": shredded,
        "held": held,
        "holds_holding": len(report.held),
        "suspended": sum(report.suspended.values()),
        "audit_events": head_seq() - before,
        "client_cpu_s": round(cpu, 1),
        "rss_growth_mib": round(peak_rss_mib() - rss, 1),
    }


def pass_checks(name: str, report: Any, figures: Row, want: dict[str, Any]) -> list[str]:
    got = {
        "scheduled": sum(report.scheduled.values()),
        "shredded": sum(report.shredded.values()),
        "held": report.held,
        "suspended": sum(report.suspended.values()),
        "audit events": figures["audit_events"],
    }
    return [f"{name}: {what} {got[what]!r} != expected {value!r}" for what, value in want.items() if got[what] != value]


def state_checks(name: str, classes: Classes, passes: int) -> list[str]:
    covered = sum(n for (hold, _, state), n in classes.items() if hold is not None and state != "live")
    wrong: Counter[tuple[bool, str, str]] = Counter()
    for (hold, expiry, state), n in classes.items():
        if state != expected_state(hold, expiry, passes):
            wrong[hold is not None, expiry, state] += n
    problems = [f"{name}: {covered} assets covered by an active hold are shredding or shredded"] if covered else []
    return problems + [
        f"{name}: {n} assets (held, expiry, state) = {key} are not as expected" for key, n in wrong.items()
    ]


def use_database(name: str) -> None:
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = name


def psql(server: str, statement: str) -> None:
    admin = urlparse(server)._replace(path="/postgres").geturl()
    subprocess.run(["psql", admin, "-qc", statement], check=True, capture_output=True, text=True)


def sweep_part(args: argparse.Namespace) -> int:
    """The retention sweep: ``--assets`` assets and ``--holds`` holds, then three sweeps timed and checked."""
    started = time.perf_counter()
    setup_scratch_django("bench.compliance", args.server, args.database)

    from django.db.models import Count

    from compliance.selectors import audit_chain_verify
    from compliance.services.sweep import shred_wait
    from core.models import AuditEvent

    [(version,)] = sql("SHOW server_version")
    print(
        f"machine: {os.cpu_count()} CPUs, PostgreSQL {version}, Python {sys.version.split()[0]}, "
        f"load average {os.getloadavg()[0]:.1f} (other work on the machine moves the timings)"
    )
    sql(
        "INSERT INTO tenancy_tenant (slug, name, state, created_at, allow_soft_sharing, dedicated_hardware, sovereign)"
        " SELECT 'bench-' || i, 'Bench ' || i, 'active', now(), true, false, false FROM generate_series(1, %s) i",
        [args.tenants],
    )
    tenants = [row[0] for row in sql("SELECT id FROM tenancy_tenant ORDER BY id")]
    first = datetime.now(UTC).replace(microsecond=0)
    later = first + shred_wait()
    began = time.perf_counter()
    load_assets(args.assets, tenants, first)
    kinds = place_holds(args.holds, tenants, first)
    classes = asset_classes(first, later)
    loaded = time.perf_counter() - began
    expired = {
        held: sum(n for (h, e, _), n in classes.items() if (h is not None) == held and e == "expired")
        for held in (False, True)
    }
    expiring = sum(n for (h, e, _), n in classes.items() if h is None and e == "expiring")
    covered = sum(n for (h, _, _), n in classes.items() if h is not None)
    print(
        f"loaded {args.assets:,} assets over {len(tenants)} tenants and placed {args.holds:,} holds "
        f"({', '.join(f'{n} {k}' for k, n in kinds.most_common())}) in {loaded:.0f}s\n"
        f"at the first sweep: {expired[False]:,} expired and unheld, {expired[True]:,} expired and held "
        f"({covered:,} assets covered by a hold in all); {expiring:,} more expire within the waiting period"
    )
    sql("VACUUM ANALYZE")  # as autovacuum would have (the holds, the audit events of placing them)
    traced_db = f"{args.database}_traced"
    if args.trace:  # a copy for the traced run, made before anything is swept (nobody may use the template)
        use_database("postgres")
        psql(args.server, f"DROP DATABASE IF EXISTS {traced_db}")
        psql(args.server, f"CREATE DATABASE {traced_db} TEMPLATE {args.database}")
        use_database(args.database)

    sweeps = (
        (
            "1. sweep at T (schedules)",
            first,
            False,
            {
                "scheduled": expired[False],
                "shredded": 0,
                "held": held_by(classes, {"expired"}),
                "suspended": 0,
                "audit events": expired[False],
            },
        ),
        (
            "2. dry run at T",
            first,
            True,
            {"scheduled": 0, "shredded": 0, "held": held_by(classes, {"expired"}), "suspended": 0, "audit events": 0},
        ),
        (
            "3. sweep at T + wait (shreds)",
            later,
            False,
            {
                "scheduled": expiring,
                "shredded": expired[False],
                "held": held_by(classes, {"expired", "expiring"}),
                "suspended": 0,
                "audit events": expired[False] + expiring,
            },
        ),
    )
    failed: list[str] = []
    rows, reports = [], []
    for name, now, dry_run, want in sweeps:
        if now == later:
            sql("VACUUM ANALYZE compliance_dataasset")  # as autovacuum would have during the waiting period
        report, figures = sweep_pass(name, now, dry_run, args.assets, traced=False)
        failed += pass_checks(name, report, figures, want)
        failed += state_checks(name, asset_classes(first, later), passes=1 if now == first else 3)
        rows.append(figures)
        reports.append(report)
        print(f"{name}: {figures['seconds']}s", flush=True)
    [(bad_keys,)] = sql(
        "SELECT count(*) FROM compliance_dataasset WHERE (state = 'shredded') = (wrapped_key IS NOT NULL)"
        " OR (state = 'shredded' AND shredded_at <> %(later)s) OR (state = 'shredding' AND shred_after <> %(after)s)",
        {"later": later, "after": later + shred_wait()},
    )
    if bad_keys:
        failed.append(f"{bad_keys} assets whose data key, shredded_at or shred_after do not match their state")
    actions = dict(AuditEvent.objects.values_list("action").annotate(n=Count("seq")).order_by())
    written = {
        "legal_hold.created": args.holds,
        "data_asset.shred_scheduled": expired[False] + expiring,
        "data_asset.shredded": expired[False],
    }
    if actions != written:
        failed.append(f"audit events by action {actions} != expected {written}")
    verified, seconds = timed(audit_chain_verify)
    total = sum(actions.values())
    if not (verified.ok and verified.count == total):
        failed.append(f"audit_chain_verify: {verified.describe()} (expected {total} events)")
    swept_assets = dict(sql("SELECT state, count(*) FROM compliance_dataasset GROUP BY state"))

    if args.trace:  # the same three sweeps on the copy, under tracemalloc: Python's own peak, without timing
        use_database(traced_db)
        began = time.perf_counter()
        for row, (name, now, dry_run, _), timed_report in zip(rows, sweeps, reports, strict=True):
            if now == later:
                sql("VACUUM ANALYZE compliance_dataasset")
            report, memory = sweep_pass(name, now, dry_run, args.assets, traced=True)
            row.update(memory)
            if report.as_dict() != timed_report.as_dict():
                failed.append(f"{name}: the traced run decided differently from the timed one")
        print(f"the same sweeps under tracemalloc, on a copy made before the first: {time.perf_counter() - began:.0f}s")
        use_database("postgres")
        psql(args.server, f"DROP DATABASE {traced_db}")

    print("\nRetention sweep (retention_sweep(now=...), every tenant x category in locked batches of 1,000)\n")
    print(table(rows))
    print(
        f"\nassets/s: all {args.assets:,} assets over the pass's wall time; decided: the assets retention.decide ruled"
        " on (scheduled + shredded + held); audit_events: chain events the pass wrote"
    )
    print(f"\nassets after the sweeps: {', '.join(f'{n:,} {s}' for s, n in sorted(swept_assets.items()))}")
    print(f"audit events: {', '.join(f'{n:,} {a}' for a, n in sorted(actions.items()))}")
    print(
        f"audit_chain_verify(): {verified.count:,} events in {seconds:.1f}s "
        f"({'ok' if verified.ok else verified.describe()})"
    )
    for problem in failed:
        print(f"CHECK FAILED: {problem}")
    print(f"\nchecks: {'FAILED' if failed else 'OK'} (total {time.perf_counter() - started:.0f}s)")
    return 1 if failed else 0
