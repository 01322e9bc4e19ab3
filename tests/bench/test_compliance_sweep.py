"""The retention-sweep benchmark still runs end to end and its checks pass (tiny sizes; needs PostgreSQL)."""

import subprocess
import sys

import pytest
from django.db import connection

from tests.support import ROOT


@pytest.mark.postgres
def test_the_retention_sweep_benchmark_runs_and_its_checks_pass():
    where = connection.settings_dict
    user = f"{where['USER']}:{where['PASSWORD']}@" if where["PASSWORD"] else f"{where['USER']}@"
    server = f"postgres://{user}{where['HOST'] or '127.0.0.1'}:{where['PORT'] or 5432}/"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.compliance",
            "--part",
            "sweep",
            "--assets",
            "3000",
            "--holds",
            "8",
            "--tenants",
            "6",
            "--server",
            server,
            "--database",
            "ladder_bench_sweep_smoke",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checks: OK" in result.stdout
    assert "| 3. sweep at T + wait (shreds) |" in result.stdout
    assert "audit_chain_verify(): " in result.stdout
