"""The load run: ``python -m bench.load [--run-time 60] [--users 20] [--max-error-rate 0.01]`` (``make load``).

Brings Ladder up on loopback as production runs it (``bench/load/stack.py``: a scratch PostgreSQL database
``--database``, migrated and seeded with ``--nodes`` 8-GPU hosts and ``--tenants`` tenants; gunicorn with two
workers of one thread; a Celery worker and beat on Redis db 14; the local Stripe server), then runs locust headless
in a subprocess for ``--run-time`` seconds with ``--users`` simulated customers (``bench/load/locustfile.py``: the
customer API mix) and reads its ``--csv`` output. Prints throughput, p50/p99 and errors per endpoint and the
failures seen; ``--json`` prints one JSON object instead. Exits 1 when the share of requests that failed is above
``--max-error-rate``, or when nothing was answered. Everything it started is stopped at the end, even on error.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.load.report import Endpoint, endpoints, failures, table
from bench.load.stack import GPU_MODEL, ROOT, Stack

LOCUSTFILE = Path(__file__).with_name("locustfile.py")


def swarm(stack: Stack, *, users: int, spawn_rate: float, run_time: float, journal: Path | None = None) -> Path:
    """Start locust headless against the stack (in a subprocess: locust patches its process with gevent); returns
    the ``--csv`` prefix once it is running. ``locust_wait`` waits for it."""
    assert stack.keys_file is not None
    prefix = stack.scratch / "locust"
    env = {
        **stack.env(),
        "LADDER_LOAD_KEYS": str(stack.keys_file),
        "LADDER_LOAD_GPU_MODEL": GPU_MODEL,
        **({"LADDER_LOAD_JOURNAL": str(journal)} if journal else {}),
    }
    locust = str(Path(sys.executable).with_name("locust"))
    command = [
        locust,
        "-f",
        str(LOCUSTFILE),
        "--headless",
        "--host",
        stack.url,
        "--users",
        str(users),
        "--spawn-rate",
        str(spawn_rate),
        "--run-time",
        f"{max(1, round(run_time))}s",
        "--stop-timeout",
        "10",
        "--csv",
        str(prefix),
        "--only-summary",
        "--exit-code-on-error",
        "0",
        "--loglevel",
        "WARNING",
    ]
    log = (stack.scratch / "locust.log").open("ab")
    stack.locust = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    return prefix


def locust_wait(stack: Stack, prefix: Path, timeout: float) -> tuple[list[Endpoint], list[tuple[str, str, int]]]:
    process = stack.locust
    assert process is not None
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise SystemExit(f"locust did not finish within {timeout:.0f} s: {stack.log_tail('locust')}") from None
    stack.locust = None
    stats = Path(f"{prefix}_stats.csv")
    if process.returncode or not stats.exists():
        raise SystemExit(f"locust failed (exit {process.returncode}): {stack.log_tail('locust')}")
    found = Path(f"{prefix}_failures.csv")
    return endpoints(stats.read_text()), failures(found.read_text() if found.exists() else "")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.splitlines()[0])
    parser.add_argument("--run-time", type=float, default=60, help="seconds of load (default 60)")
    parser.add_argument("--users", type=int, default=20, help="simulated customers (default 20)")
    parser.add_argument("--spawn-rate", type=float, default=10, help="customers started a second (default 10)")
    parser.add_argument("--max-error-rate", type=float, default=0.01, help="failed share allowed (default 0.01)")
    parser.add_argument("--nodes", type=int, default=32, help="8-GPU hosts in the fleet (default 32)")
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--database", default="ladder_load_run", help="dropped and created (default ladder_load_run)")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    stack = Stack(
        database=args.database,
        server=args.server,
        broker=args.broker,
        port=args.port,
        nodes=args.nodes,
        tenants=args.tenants,
    )
    try:
        stack.start()
        prefix = swarm(stack, users=args.users, spawn_rate=args.spawn_rate, run_time=args.run_time)
        rows, failed = locust_wait(stack, prefix, timeout=args.run_time + 120)
    finally:
        stack.close()

    total = rows[-1] if rows and rows[-1].name == "Aggregated" else None
    error_rate = total.error_rate if total else 1.0
    summary: dict[str, Any] = {
        "run_time_s": args.run_time,
        "users": args.users,
        "requests": total.requests if total else 0,
        "requests_per_s": round(total.per_second, 1) if total else 0.0,
        "errors": total.failures if total else 0,
        "error_rate": round(error_rate, 4),
        "endpoints": [asdict(r) for r in rows],
        "failures": [{"endpoint": n, "error": e, "count": c} for n, e, c in failed],
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"load: {args.users} customers for {args.run_time:g} s on gunicorn ({stack.workers} workers x 1 thread), "
            f"{args.nodes * 8} GPUs, {args.tenants} tenants"
        )
        print(table(rows))
        for name, error, count in failed[:10]:
            print(f"  failed: {name}: {error} x{count}")
    if total is None or total.requests == 0:
        raise SystemExit("load: nothing was answered")
    if error_rate > args.max_error_rate:
        raise SystemExit(f"load: {error_rate:.2%} of requests failed, above {args.max_error_rate:.2%}")


if __name__ == "__main__":
    main()
