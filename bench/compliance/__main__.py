"""The compliance benchmarks: ``python -m bench.compliance [--part all|chain|sweep]`` (all: chain, then sweep).

PostgreSQL only: each part drops and recreates its own database (``--database`` on ``--server``) and migrates it;
loading is not measured.

The audit chain is ``chain.py`` (``--part chain``), the retention sweep ``sweep.py`` (``--part sweep``); with
``--part all`` each part runs in a process of its own.

Exits 1 when a correctness check fails; the chain's target (verification >= 100,000 events/s) is only reported.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence

from bench.compliance.chain import ROOT, TENANTS, chain_part
from bench.compliance.sweep import sweep_part

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
