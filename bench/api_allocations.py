"""Allocations through the real API on PostgreSQL: ``python -m bench.api_allocations [--clients 4]``.

Sets up its own database (``ladder_bench`` on the server ``DATABASE_URL`` names; default the local one), loads
a synthetic fleet, starts two gunicorn web processes (so decisions cross processes through the placement lock and
the journal), and has ``--clients`` threads POST allocations over keep-alive HTTP connections, alternating between
the two processes, until ``--requests`` are done. Provisioning tasks go to the Redis broker (no worker runs; the
queue is purged afterwards), as in production, where the web process only enqueues them.

Prints allocations/s, p50/p99 latency and the CPU each allocation cost the web processes, the database's
backends and the clients (over the timed requests); ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent


def _env(database_url: str, broker: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        CELERY_BROKER_URL=broker,
        SECRET_KEY="bench-only-secret",
        DEBUG="0",
        LADDER_TASKS_INLINE="0",
        LADDER_API_RATE="1000000/min",
        # As deployed: TLS ends at the ingress in front (plain HTTP here is not redirected to HTTPS).
        LADDER_TLS_TERMINATED_BY_PROXY="1",
        LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    return env


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


SETUP = """
import json, sys
from core.actor import Actor
from provisioning.services.fleet import fleet_load
from tenancy.models import Tenant
from tenancy.services import api_key_create
from lifecycle.services.customers import tenant_signup
nodes = int(sys.argv[1])
actor = Actor.system("bench")
doc = {"regions": [{"code": "bench", "name": "Bench", "jurisdiction": "EU", "halls": [
    {"code": "bench-1a", "fenced_for": None, "nodes": [
        {"hostname": f"b{i:05d}", "gpu_model": "H100-SXM-80GB", "gpu_count": 8,
         "nvlink_domain": f"bench-1a/nvl-{i // 16}", "cc_capable": False,
         "versions": {"driver": "580.65", "cuda": "13.0", "nccl": "2.27", "firmware": "96.00"}}
        for i in range(nodes)]}]}]}
fleet_load(document=doc, actor=actor)
from provisioning.models import GpuModel, Region
from tests.support.billing import price_pool
price_pool(GpuModel.objects.get(name="H100-SXM-80GB"), Region.objects.get(code="bench"))  # nothing runs unpriced
tenant = Tenant.objects.filter(slug="bench").first() or tenant_signup(
    slug="bench", name="Bench", username="bench", email="b@bench.example", password=None, actor=actor)
user = tenant.memberships.get().user
print(api_key_create(user=user, name="bench", scopes=["read", "write"], expires_at=None, actor=actor).token)
"""


def _wait_up(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"the web process on port {port} did not come up")


def _cpu_seconds(pids: list[int]) -> float:
    """User and system CPU of ``pids`` so far (processes gone since count nothing)."""
    ticks = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def _descendants(roots: list[int]) -> list[int]:
    """``roots`` and their children (gunicorn's arbiter and its workers)."""
    found = list(roots)
    for pid in roots:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            continue
        found += [int(c) for c in children]
    return found


def _backends(url: str) -> list[int]:
    done = subprocess.run(
        [
            "psql",
            url,
            "-Atc",
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return [int(line) for line in done.stdout.split()]


def _drive(
    ports: tuple[int, ...],
    clients: int,
    counter: Iterator[int],
    token: str,
    latencies: list[float],
    outcomes: dict[int, int],
    lock: threading.Lock,
) -> None:
    """``clients`` threads, each on its own keep-alive connection, POST until ``counter`` runs out."""

    def client(number: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", ports[number % len(ports)], timeout=30)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        for i in counter:
            body = json.dumps({"name": f"a{i}", "rung": "container", "gpu_model": "H100-SXM-80GB", "gpus": 1})
            start = time.perf_counter()
            conn.request("POST", "/api/v1/allocations", body, headers)
            response = conn.getresponse()
            response.read()
            elapsed = time.perf_counter() - start
            with lock:
                latencies.append(elapsed)
                outcomes[response.status] = outcomes.get(response.status, 0) + 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run(
    clients: int,
    requests: int,
    nodes: int,
    database_url: str,
    broker: str,
    warmup: int = 500,
    workers: int = 2,
    threads: int = 1,
    database: str = "ladder_bench",
    port: int = 8731,
) -> dict[str, float | int | str]:
    parsed = urlparse(database_url)
    if not parsed.scheme.startswith("postgres"):
        raise SystemExit("this benchmark runs on PostgreSQL: set DATABASE_URL=postgres://...")
    ports = (port, port + 1)
    bench_url = parsed._replace(path=f"/{database}").geturl()
    admin = subprocess.run(
        ["psql", parsed._replace(path="/postgres").geturl(), "-qc", f"DROP DATABASE IF EXISTS {database}"],
        capture_output=True,
        text=True,
    )
    if admin.returncode:
        raise SystemExit(admin.stderr)
    subprocess.run(
        ["psql", parsed._replace(path="/postgres").geturl(), "-qc", f"CREATE DATABASE {database}"], check=True
    )
    env = _env(bench_url, broker)
    _manage(env, "migrate", "--noinput", "-v0")
    token = _manage(env, "shell", "-c", f"import sys; sys.argv=['', '{nodes}']\n{SETUP}").strip().splitlines()[-1]
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    servers = [
        subprocess.Popen(
            [
                gunicorn,
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
                "--worker-class",
                "gthread",
                "--threads",
                str(threads),
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for port in ports
    ]
    try:
        for each in ports:
            _wait_up(each)
        latencies: list[float] = []
        outcomes: dict[int, int] = {}
        lock = threading.Lock()
        # Warm up, then ANALYZE as autovacuum would on a live database: a freshly created one plans its foreign
        # key checks for empty tables and then scans them sequentially as they grow.
        counter = iter(range(requests, requests + warmup))
        _drive(ports, clients, counter, token, latencies, outcomes, lock)
        subprocess.run(["psql", bench_url, "-qc", "ANALYZE"], check=True)
        latencies.clear()
        outcomes.clear()
        counter = iter(range(requests))

        # Who spends the CPU (measured over the timed requests only): the web processes, this database's
        # PostgreSQL backends (kept open by DB_CONN_MAX_AGE) and these clients. On a shared machine these are
        # the figures that repeat; the rate depends on what else runs.
        web = _descendants([s.pid for s in servers])
        backends = _backends(bench_url)
        cpu_before = (_cpu_seconds(web), _cpu_seconds(backends), _own_cpu_seconds())
        began = time.perf_counter()
        _drive(ports, clients, counter, token, latencies, outcomes, lock)
        wall = time.perf_counter() - began
        cpu = [
            after - before
            for after, before in zip(
                (_cpu_seconds(web), _cpu_seconds(backends), _own_cpu_seconds()), cpu_before, strict=True
            )
        ]
    finally:
        for server in servers:
            server.terminate()
            server.wait()
    latencies.sort()
    granted = outcomes.get(201, 0)
    subprocess.run(["redis-cli", "-u", broker, "FLUSHDB"], capture_output=True)
    return {
        "clients": clients,
        "requests": len(latencies),
        "granted": granted,
        "statuses": json.dumps(outcomes),
        "allocations_per_s": round(granted / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
        "cpu_ms_per_allocation_web": round(cpu[0] * 1000 / max(granted, 1), 2),
        "cpu_ms_per_allocation_postgres": round(cpu[1] * 1000 / max(granted, 1), 2),
        "cpu_ms_per_allocation_clients": round(cpu[2] * 1000 / max(granted, 1), 2),
        "fleet_gpus": nodes * 8,
        "server_processes": len(ports) * workers,
        "threads_per_process": threads,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--nodes", type=int, default=512, help="8-GPU nodes in the synthetic fleet")
    parser.add_argument("--warmup", type=int, default=500, help="requests before the measured ones")
    parser.add_argument(
        "--database-url", default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes per server (two servers)")
    parser.add_argument("--threads", type=int, default=1, help="threads per gunicorn worker")
    parser.add_argument("--database", default="ladder_bench", help="the database it drops and creates")
    parser.add_argument("--port", type=int, default=8731, help="the first of the two web processes' ports")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(
        args.clients,
        args.requests,
        args.nodes,
        args.database_url,
        args.broker,
        args.warmup,
        args.workers,
        args.threads,
        args.database,
        args.port,
    )
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>18}: {value}")


if __name__ == "__main__":
    main()
