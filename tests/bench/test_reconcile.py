"""The reconciliation benchmark still runs end to end and its month is clean (tiny sizes; needs the local
PostgreSQL)."""

import socket
import subprocess
import sys

from tests.support import ROOT, require


def test_the_reconciliation_benchmark_runs_and_its_month_is_clean():
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
        reachable = True
    except OSError:
        reachable = False
    require(reachable, "PostgreSQL at 127.0.0.1:5432")
    command = [sys.executable, "-m", "bench.reconcile", "--tenants", "3", "--skus", "2", "--hours", "2"]
    result = subprocess.run(
        [*command, "--database", "ladder_bench_reconcile_smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "reconciliation of 12 rollups, 6 tenant x SKU x price lines" in result.stdout
    assert "0 unexplained, mode stripe" in result.stdout
