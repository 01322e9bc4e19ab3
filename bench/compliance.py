"""The compliance benchmarks: ``python -m bench.compliance [--part all|chain|sweep]`` (all: chain, then sweep).

PostgreSQL only: each part drops and recreates its own database (``--database`` on ``--server``) and migrates it;
loading is not measured.

``--part chain [--events 1000000]``: 1,000 tenants and ``--events`` chained audit events (hashed in Python with
``core.chain``, written with COPY) and one signed checkpoint. Then it times:

a. ``audit_chain_verify()``: the walk of the whole chain in the database (events/s); and, for comparison, the
   walk as it was first written (``chain.verify`` over the ORM's ``.values()`` iterator);
b. ``core.chain.verify`` over the same events already in memory (events/s);
c. ``audit_export`` of everything and of one tenant (records/s; the ``tracemalloc`` peak in a second, untimed
   run; and ``manage.py audit_export`` in a process of its own, for its peak RSS next to ``manage.py check``'s);
d. ``python -m compliance.verify`` on each bundle, as a subprocess without Django settings (records/s, its peak
   RSS), and once more on a copy of the tenant bundle with one event's data changed (must exit 1 naming it).

``--part sweep [--assets 1000000] [--holds 1000] [--tenants 200]``: ``--assets`` live data assets (COPY) over
``--tenants`` tenants and the seven categories, created over the last three years, and ``--holds`` legal holds
placed with ``legal_hold_create``. Then ``retention_sweep`` (``compliance/services/sweep.py``) at T (schedules what
expired), a dry run at T (schedules nothing more) and the sweep at T + the waiting period (shreds), each with its
wall time, client CPU and peak RSS growth (VmHWM, reset first), and the ``tracemalloc`` peak of the same sweeps in
a second, untimed run on a copy of the database made before the first (``--no-trace``: not). Checked against the
hold scopes and
retention in SQL: what each pass scheduled, shredded and held (per hold), every asset's state, the audit events,
the chain.

Exits 1 when a correctness check fails; the chain's target (verification >= 100,000 events/s) is only reported.
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
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from bench.metering import peak_rss_mib
from bench.scratch import setup_scratch_django, sql

ROOT = Path(__file__).resolve().parent.parent
TENANTS = 1000
TARGET = 100_000
Row = dict[str, object]


def make_events(count: int, first_tenant: int) -> list[dict[str, Any]]:
    """``count`` chained events of four kinds, linked exactly as ``audit_record`` links them."""
    from core.chain import GENESIS_HASH, event_hash

    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=30)
    events: list[dict[str, Any]] = []
    prev_hash = GENESIS_HASH
    for seq in range(1, count + 1):
        tenant = first_tenant + seq % TENANTS
        kind = seq % 4
        fields: dict[str, Any] = {
            "seq": seq,
            "at": start + timedelta(microseconds=seq * 2_500_123),
            "actor_type": "api_key" if kind == 2 else "system",
            "actor_id": str(seq % 5000) if kind == 2 else "system",
            "actor_label": f"user-{seq % 5000}" if kind == 2 else "reconciler",
            "api_key_prefix": f"ldr_{seq % 9973:05d}" if kind == 2 else "",
            "tenant_id": None if kind == 3 else tenant,
            "target_id": str(seq // 4),
            "prev_hash": prev_hash,
        }
        if kind == 0:
            fields.update(action="allocation.running", target_type="allocation")
            fields["data"] = {"from": "provisioning", "to": "running"}
        elif kind == 1:
            fields.update(action="allocation.created", target_type="allocation")
            spec = {"rung": "container", "gpu_model": "H100-SXM-80GB", "gpus": 1 + seq % 8, "regions": ["eu-west"]}
            fields["data"] = {"name": f"train-{seq}", "spec": spec, "devices": 1 + seq % 8}
        elif kind == 2:
            fields.update(action="tenant.updated", target_type="tenant")
            fields["data"] = {"name": {"old": f"Tenant {tenant}", "new": f"Tenant {tenant}, Zürich"}}
        else:
            fields.update(action="node.drained", target_type="node")
            fields["data"] = {"hostname": f"n{seq % 1200}", "from": "ready", "to": "draining", "reason": "NCCL"}
        fields["hash"] = prev_hash = event_hash(fields)
        events.append(fields)
    return events


def load_events(events: list[dict[str, Any]]) -> None:
    from django.db import connection
    from psycopg.types.json import Jsonb

    from core.chain import HASHED_FIELDS

    columns = ", ".join("tenant_id" if f == "tenant_id" else f for f in (*HASHED_FIELDS, "hash"))
    connection.ensure_connection()
    raw: Any = connection.connection
    with raw.cursor() as cursor, cursor.copy(f"COPY compliance_auditevent ({columns}) FROM STDIN") as copy:
        for event in events:
            copy.write_row([Jsonb(event[f]) if f == "data" else event[f] for f in (*HASHED_FIELDS, "hash")])
    last = events[-1]
    sql(
        "INSERT INTO compliance_auditchainhead (id, seq, hash) VALUES (1, %s, %s) "
        "ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash",
        [last["seq"], last["hash"]],
    )
    sql("VACUUM ANALYZE compliance_auditevent")  # as autovacuum would have


def timed(run: Callable[[], Any]) -> tuple[Any, float]:
    gc.collect()
    began = time.perf_counter()
    result = run()
    return result, time.perf_counter() - began


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}"


def run_verifications(events: list[dict[str, Any]], failed: list[str]) -> list[Row]:
    from compliance.selectors import audit_chain_verify
    from core.chain import HASHED_FIELDS, verify
    from core.models import AuditChainHead, AuditEvent

    total = AuditEvent.objects.count()
    rows: list[Row] = []
    result, seconds = timed(audit_chain_verify)
    if not (result.ok and result.count == total):
        failed.append(f"audit_chain_verify: {result.describe()} (expected {total} events)")
    rows.append(
        {
            "what": "audit_chain_verify() (database walk)",
            "events": total,
            "seconds": round(seconds, 2),
            "events/s": rate(total, seconds),
        }
    )
    head = AuditChainHead.objects.values_list("seq", "hash").get(id=1)

    def first_version() -> Any:
        walked = AuditEvent.objects.order_by("seq").values(*HASHED_FIELDS, "hash").iterator(chunk_size=2000)
        return verify(walked, head=head)

    result, seconds = timed(first_version)
    if not result.ok:
        failed.append(f"chain.verify over the ORM: {result.describe()}")
    rows.append(
        {
            "what": "before: chain.verify over ORM .values()",
            "events": total,
            "seconds": round(seconds, 2),
            "events/s": rate(total, seconds),
        }
    )
    result, seconds = timed(lambda: verify(events))
    if not (result.ok and result.count == len(events)):
        failed.append(f"chain.verify in memory: {result.describe()}")
    rows.append(
        {
            "what": "chain.verify() over events in memory",
            "events": len(events),
            "seconds": round(seconds, 2),
            "events/s": rate(len(events), seconds),
        }
    )
    return rows


def run_export(path: Path, tenant: Any, traced: bool) -> tuple[Any, Row]:
    """``audit_export`` in this process: timed, or ``traced`` (tracemalloc peak only)."""
    from compliance.services.audit import audit_export

    if traced:
        tracemalloc.start()
    began = time.perf_counter()
    with path.open("wb") as out:
        report = audit_export(out, tenant=tenant)
    seconds = time.perf_counter() - began
    if traced:
        figures: Row = {"tracemalloc_peak_kib": round(tracemalloc.get_traced_memory()[1] / 2**10)}
        tracemalloc.stop()
        return report, figures
    records = report.events + report.links
    return report, {
        "export": f"tenant {tenant.slug}" if tenant else "everything",
        "events": report.events,
        "links": report.links,
        "checkpoints": report.checkpoints,
        "seconds": round(seconds, 2),
        "records/s": rate(records, seconds),
        "MiB": round(path.stat().st_size / 2**20, 1),
    }


# Runs a module (``python -m``) or a script, then writes the process's own peak RSS (VmHWM, KiB) to the file that
# BENCH_PEAK_FILE names: ``ru_maxrss`` from wait4 would include this (large) process's RSS at fork time.
PEAK_REPORTING = """
import os, runpy, sys
target = sys.argv.pop(1)
sys.argv[0] = target
try:
    if target.endswith(".py"):
        runpy.run_path(target, run_name="__main__")
    else:
        runpy.run_module(target, run_name="__main__", alter_sys=True)
finally:
    with open(os.environ["BENCH_PEAK_FILE"], "w") as report:
        report.write(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
"""


def run_peak(target: str, args: Sequence[str], env: dict[str, str]) -> tuple[int, str, float, float]:
    """Run ``target`` (a module, or a script ending in .py) in a subprocess: exit code, output, seconds, peak MiB."""
    with tempfile.NamedTemporaryFile() as peak:
        command = [sys.executable, "-c", PEAK_REPORTING, target, *args]
        began = time.perf_counter()
        done = subprocess.run(
            command, cwd=ROOT, env=env | {"BENCH_PEAK_FILE": peak.name}, capture_output=True, text=True
        )
        seconds = time.perf_counter() - began
        peak_kib = int(Path(peak.name).read_text() or 0)
    return done.returncode, (done.stdout + done.stderr).strip(), seconds, peak_kib / 1024


def run_offline(path: Path, key: Path) -> tuple[int, str, float, float]:
    """``python -m compliance.verify`` without Django settings, database or secret."""
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "SECRET_KEY"}}
    return run_peak("compliance.verify", [str(path), "--public-key", str(key)], env)


def tamper(source: Path, target: Path) -> int:
    """Copy the bundle, changing the data of its middle event; returns that event's seq."""
    events = sum(1 for line in source.open("rb") if line.startswith(b'{"type":"event"'))
    seen, changed = 0, 0
    with source.open("rb") as lines, target.open("wb") as out:
        for line in lines:
            if line.startswith(b'{"type":"event"'):
                seen += 1
                if seen == events // 2:
                    record = json.loads(line)
                    record["data"]["tampered"] = True
                    changed = record["seq"]
                    line = json.dumps(record).encode() + b"\n"
            out.write(line)
    return changed


def table(rows: Sequence[Row]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    return "\n".join(lines + ["| " + " | ".join(str(v) for v in r.values()) + " |" for r in rows])


def chain_part(args: argparse.Namespace) -> int:
    """The audit chain: load ``--events`` chained events, then time verification, export and offline checks."""
    started = time.perf_counter()
    setup_scratch_django("bench.compliance", args.server, args.database)

    from compliance.services.audit import audit_checkpoint_take
    from compliance.signing import audit_signer
    from tenancy.models import Tenant

    [(version,)] = sql("SHOW server_version")
    print(f"machine: {os.cpu_count()} CPUs, PostgreSQL {version}, Python {sys.version.split()[0]}")
    sql(
        "INSERT INTO tenancy_tenant (slug, name, state, created_at, allow_soft_sharing, dedicated_hardware, sovereign)"
        " SELECT 'bench-' || i, 'Bench ' || i, 'active', now(), true, false, false FROM generate_series(1, %s) i",
        [TENANTS],
    )
    [(first_tenant,)] = sql("SELECT min(id) FROM tenancy_tenant")
    began = time.perf_counter()
    events = make_events(args.events, first_tenant)
    load_events(events)
    checkpoint = audit_checkpoint_take()  # appends one event (audit.checkpoint) and signs the head
    assert checkpoint is not None
    print(
        f"loaded {args.events:,} events and signed checkpoint #{checkpoint.seq} in {time.perf_counter() - began:.0f}s\n"
    )

    failed: list[str] = []
    verifications = run_verifications(events, failed)
    del events
    gc.collect()

    workdir = Path(tempfile.mkdtemp(prefix="bench-compliance-"))
    key = workdir / "audit-key.pem"
    key.write_text(audit_signer().public_key_pem)
    tenant = Tenant.objects.get(slug="bench-7")
    exports, offline = [], []
    for name, chosen in (("everything", None), ("tenant", tenant)):
        path = workdir / f"{name}.jsonl"
        report, figures = run_export(path, chosen, traced=False)
        _, memory = run_export(workdir / f"{name}-traced.jsonl", chosen, traced=True)
        # The command in a process of its own, for its peak RSS (Django and the venv's imports included).
        command = ["audit_export", "--out", str(workdir / f"{name}-command.jsonl")]
        code, output, seconds, rss = run_peak(
            "manage.py", command + (["--tenant", tenant.slug] if chosen else []), dict(os.environ)
        )
        if code != 0:
            failed.append(f"manage.py audit_export ({name}): exit {code}: {output}")
        exports.append(figures | memory | {"command_s": round(seconds, 2), "command_peak_rss_mib": round(rss, 1)})
        code, output, seconds, rss = run_offline(path, key)
        expected = f"{report.events} events, {report.links} links, {report.checkpoints} checkpoints verified"
        if code != 0 or not output.startswith(expected):
            failed.append(f"offline verification of the {name} bundle: exit {code}: {output}")
        records = report.events + report.links
        offline.append(
            {
                "bundle": figures["export"],
                "records": records,
                "seconds": round(seconds, 2),
                "records/s": rate(records, seconds),
                "events/s": rate(report.events, seconds),
                "peak_rss_mib": round(rss, 1),
                "exit": code,
            }
        )
    code, output, seconds, rss = run_peak("compliance.verify", ["--help"], dict(os.environ))
    offline.append(
        {
            "bundle": "(none: --help, for the imports)",
            "records": "-",
            "seconds": round(seconds, 2),
            "records/s": "-",
            "events/s": "-",
            "peak_rss_mib": round(rss, 1),
            "exit": code,
        }
    )
    code, output, seconds, rss = run_peak("manage.py", ["check"], dict(os.environ))
    exports.append(
        {
            "export": "(none: manage.py check, for Django's own RSS)",
            "events": "-",
            "links": "-",
            "checkpoints": "-",
            "seconds": "-",
            "records/s": "-",
            "MiB": "-",
            "tracemalloc_peak_kib": "-",
            "command_s": round(seconds, 2),
            "command_peak_rss_mib": round(rss, 1),
        }
    )
    tampered = workdir / "tenant-tampered.jsonl"
    seq = tamper(workdir / "tenant.jsonl", tampered)
    code, output, seconds, rss = run_offline(tampered, key)
    if code != 1 or f"at seq {seq}: tampered body" not in output:
        failed.append(f"the tampered bundle (seq {seq}) was not refused as expected: exit {code}: {output}")
    offline.append(
        {
            "bundle": f"tenant, seq {seq} tampered",
            "records": "-",
            "seconds": round(seconds, 2),
            "records/s": "-",
            "events/s": "-",
            "peak_rss_mib": round(rss, 1),
            "exit": code,
        }
    )

    print("Chain verification (the whole chain; the database walk holds one COPY chunk at a time)\n")
    print(table(verifications))
    walk = float(str(verifications[0]["events/s"]).replace(",", ""))
    verdict = "met" if walk >= TARGET else "missed"
    print(f"\naudit_chain_verify: {walk:,.0f} events/s (target >= {TARGET:,}: target {verdict})")
    print("\nExport (manage.py audit_export's service; the database walk checks every hash on the way)\n")
    print(table(exports))
    print("\nOffline verification (python -m compliance.verify, a subprocess without Django)\n")
    print(table(offline))
    print(f"\ntampered bundle: {output}")
    for path in workdir.iterdir():
        path.unlink()
    workdir.rmdir()
    for problem in failed:
        print(f"CHECK FAILED: {problem}")
    print(f"\nchecks: {'FAILED' if failed else 'OK'} (total {time.perf_counter() - started:.0f}s)")
    return 1 if failed else 0


# --- the retention sweep (``--part sweep``) ----------------------------------------------------------------------

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
# written from the hold scopes in SQL rather than asked of ``compliance.retention``.
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


PARTS = {"chain": chain_part, "sweep": sweep_part}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.compliance", description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", *PARTS), default="all", help="all: chain, then sweep")
    parser.add_argument("--events", type=int, default=1_000_000, help="chain: chained audit events loaded")
    parser.add_argument("--assets", type=int, default=1_000_000, help="sweep: data assets loaded")
    parser.add_argument("--holds", type=int, default=1000, help="sweep: active legal holds placed")
    parser.add_argument("--tenants", type=int, default=200, help="sweep: tenants owning the assets")
    parser.add_argument(
        "--trace",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="sweep: the tracemalloc run on a copy (about 8x the timed sweeps)",
    )
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432/")
    parser.add_argument("--database", default="ladder_bench_compliance", help="dropped and recreated")
    args = parser.parse_args(argv)
    if args.part in ("all", "chain") and args.events < TENANTS:
        parser.error(f"--events must be at least {TENANTS}")
    if args.part in ("all", "sweep") and not (args.assets >= 1 and args.holds >= 0 and args.tenants >= 1):
        parser.error("--assets and --tenants must be at least 1, --holds at least 0")
    if args.part != "all":
        sys.exit(PARTS[args.part](args))
    # Each part in a process of its own: Django is set up once per process, on the part's fresh database.
    codes = []
    for part in PARTS:
        options = [
            "--events",
            args.events,
            "--assets",
            args.assets,
            "--holds",
            args.holds,
            "--tenants",
            args.tenants,
            "--server",
            args.server,
            "--database",
            args.database,
        ]
        trace = "--trace" if args.trace else "--no-trace"
        command = [sys.executable, "-m", "bench.compliance", "--part", part, trace, *map(str, options)]
        print(f"== part {part} ==", flush=True)
        codes.append(subprocess.run(command, cwd=ROOT).returncode)
        print(flush=True)
    sys.exit(max(codes))


if __name__ == "__main__":
    main()
