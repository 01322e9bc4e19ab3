"""CPU per allocation through the API, in one process: ``python -m bench.api_cpu [--requests 500]``.

Where ``bench/api_allocations.py`` measures throughput (and so the machine's load as much as the code), this
counts what one allocation costs the web process: CPU time (``time.process_time``: other processes move it far
less than the rate, though a busy machine still slows a process's own CPU) and the SQL statements it sends. It
sets up its own database on PostgreSQL (``--database``, dropped and created; the server ``DATABASE_URL`` names,
default the local one) with the same fleet, tenant and key as the throughput benchmark, then POSTs 1-GPU
container allocations through Django's full request path (test client: middleware, authentication, throttling,
the view, the service, the response) with the production settings, tasks queued on the Redis broker. Requests
take turns among ``--processes`` fleets in memory, as requests spread over web processes do: each decision first
applies the others' journal entries. ``--profile N`` prints cProfile's top N functions by cumulative CPU time.

Prints CPU ms and statements per allocation; ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from bench.api_allocations import SETUP, _env

ROUNDS = 5
BODY = {"rung": "container", "gpu_model": "H100-SXM-80GB", "gpus": 1}


def _database(database_url: str, database: str) -> str:
    parsed = urlparse(database_url)
    if not parsed.scheme.startswith("postgres"):
        raise SystemExit("this benchmark runs on PostgreSQL: set DATABASE_URL=postgres://...")
    admin = parsed._replace(path="/postgres").geturl()
    for sql in (f"DROP DATABASE IF EXISTS {database}", f"CREATE DATABASE {database}"):
        done = subprocess.run(["psql", admin, "-qc", sql], capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(done.stderr)
    return parsed._replace(path=f"/{database}").geturl()


def run(
    requests: int,
    nodes: int,
    warmup: int,
    database_url: str,
    database: str,
    broker: str,
    profile: int,
    show_sql: int = 0,
    processes: int = 4,
) -> dict[str, Any]:
    os.environ.update(_env(_database(database_url, database), broker))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    call_command("migrate", "--noinput", verbosity=0)
    setup: dict[str, Any] = {}
    sys.argv = ["", str(nodes)]
    out = io.StringIO()
    stdout, sys.stdout = sys.stdout, out
    try:
        exec(SETUP, setup)  # noqa: S102 - the throughput benchmark's own set-up, run here instead of in a shell
    finally:
        sys.stdout = stdout
    token = out.getvalue().strip().splitlines()[-1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_HOST="127.0.0.1")
    statements = 0
    shown: list[str] = []

    def count(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        nonlocal statements
        statements += 1
        if len(shown) < show_sql:
            shown.append(sql[:160])
        return execute(sql, params, many, context)

    from provisioning import fleet_cache

    # Web processes, each with its fleet in memory: requests take turns, so each decision first applies the
    # journal entries of the others' decisions, as in a deployment (and in the throughput benchmark).
    caches = [fleet_cache.FleetCache() for _ in range(processes)]

    def post(i: int) -> None:
        fleet_cache.FLEET = caches[i % processes]
        response = client.post("/api/v1/allocations", {**BODY, "name": f"a{i}"}, content_type="application/json")
        if response.status_code != 201:
            raise SystemExit(f"request {i}: {response.status_code} {response.content[:300]!r}")

    for i in range(warmup):
        post(requests + i)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    # CPU time, not wall time: waiting for PostgreSQL is not what this measures.
    profiler = cProfile.Profile(time.process_time) if profile else None
    with connection.execute_wrapper(count):
        if profiler is not None:
            profiler.enable()
        # In rounds: a busy machine slows a process's own CPU too (caches, clock), so the least round is the
        # figure that repeats; the median is printed beside it.
        rounds: list[float] = []
        wall = time.perf_counter()
        size = max(1, requests // ROUNDS)
        for first in range(0, requests, size):
            cpu = time.process_time()
            for i in range(first, min(first + size, requests)):
                post(i)
            rounds.append((time.process_time() - cpu) / (min(first + size, requests) - first))
        wall = time.perf_counter() - wall
        if profiler is not None:
            profiler.disable()
    if profiler is not None:
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(profile)
    for sql in shown:
        print(sql, file=sys.stderr)
    subprocess.run(["redis-cli", "-u", broker, "FLUSHDB"], capture_output=True)
    return {
        "requests": requests,
        "cpu_ms_per_allocation": round(min(rounds) * 1000, 2),
        "cpu_ms_median_round": round(statistics.median(rounds) * 1000, 2),
        "wall_ms_per_allocation": round(wall * 1000 / requests, 2),
        "statements_per_allocation": round(statements / requests, 2),
        "processes": processes,
        "profiled": bool(profiler),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--nodes", type=int, default=512, help="8-GPU nodes in the synthetic fleet")
    parser.add_argument("--warmup", type=int, default=200, help="requests before the measured ones")
    parser.add_argument(
        "--database-url", default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--database", default="ladder_bench_cpu", help="the database it drops and creates")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--profile", type=int, default=0, help="print cProfile's top N functions (slows it down)")
    parser.add_argument("--processes", type=int, default=4, help="web processes simulated (each its own fleet)")
    parser.add_argument("--show-sql", type=int, default=0, help="print the first N statements measured")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.requests + args.warmup > args.nodes * 8:
        raise SystemExit("more requests than GPUs: raise --nodes")
    result = run(
        args.requests,
        args.nodes,
        args.warmup,
        args.database_url,
        args.database,
        args.broker,
        args.profile,
        args.show_sql,
        args.processes,
    )
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>26}: {value}")


if __name__ == "__main__":
    main()
