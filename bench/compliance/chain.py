"""The audit chain benchmark (``python -m bench.compliance --part chain``; the parts: ``__main__.py``).

``--part chain [--events 1000000]``: 1,000 tenants and ``--events`` chained audit events (hashed in Python with
``core.domain.chain``, written with COPY) and one signed checkpoint. Then it times:

a. ``audit_chain_verify()``: the walk of the whole chain in the database (events/s); and, for comparison, the
   walk as it was first written (``chain.verify`` over the ORM's ``.values()`` iterator);
b. ``core.domain.chain.verify`` over the same events already in memory (events/s);
c. ``audit_export`` of everything and of one tenant (records/s; the ``tracemalloc`` peak in a second, untimed
   run; and ``manage.py audit_export`` in a process of its own, for its peak RSS next to ``manage.py check``'s);
d. ``python -m compliance.domain.verify`` on each bundle, as a subprocess without Django settings (records/s, its peak
   RSS), and once more on a copy of the tenant bundle with one event's data changed (must exit 1 naming it).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.compliance.measure import Row, rate, table, timed
from bench.scratch import setup_scratch_django, sql

ROOT = Path(__file__).resolve().parents[2]
TENANTS = 1000
TARGET = 100_000


def make_events(count: int, first_tenant: int) -> list[dict[str, Any]]:
    """``count`` chained events of four kinds, linked exactly as ``audit_record`` links them."""
    from core.domain.chain import GENESIS_HASH, event_hash

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

    from core.domain.chain import HASHED_FIELDS

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


def run_verifications(events: list[dict[str, Any]], failed: list[str]) -> list[Row]:
    from compliance.selectors import audit_chain_verify
    from core.domain.chain import HASHED_FIELDS, verify
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
    """``python -m compliance.domain.verify`` without Django settings, database or secret."""
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "SECRET_KEY"}}
    return run_peak("compliance.domain.verify", [str(path), "--public-key", str(key)], env)


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
    code, output, seconds, rss = run_peak("compliance.domain.verify", ["--help"], dict(os.environ))
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
    print("\nOffline verification (python -m compliance.domain.verify, a subprocess without Django)\n")
    print(table(offline))
    print(f"\ntampered bundle: {output}")
    for path in workdir.iterdir():
        path.unlink()
    workdir.rmdir()
    for problem in failed:
        print(f"CHECK FAILED: {problem}")
    print(f"\nchecks: {'FAILED' if failed else 'OK'} (total {time.perf_counter() - started:.0f}s)")
    return 1 if failed else 0
