"""The metering benchmark still runs end to end and its checks pass (tiny sizes; needs the local PostgreSQL)."""

import socket
import subprocess
import sys

from tests.support import ROOT, require


def test_the_metering_benchmark_runs_and_its_checks_pass():
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
        reachable = True
    except OSError:
        reachable = False
    require(reachable, "PostgreSQL at 127.0.0.1:5432")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.metering",
            "--rows",
            "2000",
            "--push",
            "50",
            "--rate",
            "500",
            "--database",
            "ladder_bench_metering_smoke",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checks: OK" in result.stdout
    assert "OK (50 customer x meter totals)" in result.stdout
    assert "pipeline / COPY" in result.stdout
