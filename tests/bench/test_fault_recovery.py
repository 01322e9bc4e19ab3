"""The fault-recovery benchmark still runs end to end (tiny sizes, its own SQLite database): every trial recovers."""

import json
import subprocess
import sys

from tests.support import ROOT


def test_the_fault_recovery_benchmark_runs_and_every_trial_recovers():
    result = subprocess.run(
        [sys.executable, "-m", "bench.fault_recovery", "--nodes", "4", "--busy", "2", "--trials", "2", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["trials"] == 2
    assert summary["detected"]["reconciles"] == 1  # found by the first reconcile after the condition
    assert summary["detected"]["median_ms"] <= summary["applied"]["median_ms"] <= summary["running"]["median_ms"]
