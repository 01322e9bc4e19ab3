"""The finance export benchmark still runs end to end and its checks pass (tiny sizes), on SQLite and on the local
PostgreSQL."""

import socket
import subprocess
import sys

import pytest

from tests.support import ROOT, require


def _run(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "bench.finance_export", "--rows", "4800", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_export_benchmark_runs_on_sqlite_and_its_checks_pass():
    out = _run("--database", "sqlite")
    assert "checks: OK" in out
    assert "summary csv" in out
    assert "detail parquet" in out
    assert "tracemalloc peak" in out


@pytest.mark.postgres
def test_the_export_benchmark_runs_on_postgresql():
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
        reachable = True
    except OSError:
        reachable = False
    require(reachable, "PostgreSQL at 127.0.0.1:5432")
    out = _run("--database", "postgres", "--name", "ladder_bench_finance_export_smoke")
    assert "checks: OK" in out
