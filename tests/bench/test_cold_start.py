"""The cold-start benchmark still runs end to end (two trials, a short start, its own SQLite database): every first
request to an idle endpoint is answered once it runs, both on the simulated fleet and on Kubernetes, and the
figures hang together (the request held at least the backend's start; the recorded cold start within it)."""

import json
import subprocess
import sys

from tests.support import ROOT


def test_the_cold_start_benchmark_runs_and_every_first_request_is_answered_after_the_start():
    result = subprocess.run(
        [sys.executable, "-m", "bench.cold_start", "--trials", "2", "--delay", "0.3", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert (summary["trials"], summary["delay_ms"]) == (2, 300)
    for backend in ("simulated", "kubernetes"):
        figures = {name: row["median_ms"] for name, row in summary[backend].items()}
        assert 300 <= figures["cold_start"] <= figures["held"] + 1, (backend, figures)
        assert figures["overhead"] >= 0  # never answered before the backend started
        assert abs(figures["overhead"] - (figures["held"] - 300)) <= 0.1
        assert 0 < figures["warm"] < figures["held"]
    kubernetes = {name: row["median_ms"] for name, row in summary["kubernetes"].items()}
    assert 0 < kubernetes["applied"] < kubernetes["held"] - 300
