"""The cold-start cache benchmark still runs end to end (five wakes of each endpoint, its own SQLite database): every
wake is recorded with its phases, the model cache cuts the model load, and the ratio it reports is its figures'."""

import json
import subprocess
import sys

from tests.support import ROOT


def test_the_cold_start_cache_benchmark_runs_and_the_cache_cuts_the_model_load():
    result = subprocess.run(
        [sys.executable, "-m", "bench.cold_start_cache", "--wakes", "5", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr  # seeded: the same wakes, the target met
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    downloaded, cached = summary["downloaded"], summary["cached"]
    for figures in (downloaded, cached):
        assert figures["wakes"] == figures["total"]["count"] == 5
        assert all(figures[phase]["count"] == 5 for phase in ("device_wait", "image_pull", "model_load"))
        assert figures["total"]["p50_ms"] <= figures["total"]["p90_ms"] <= figures["total"]["p99_ms"]
        assert figures["device_wait"]["p50_ms"] >= 2000  # the device wait is 2 s at least
    assert cached["model_load"]["p99_ms"] < downloaded["model_load"]["p50_ms"]
    assert summary["p90_ratio"] == round(downloaded["total"]["p90_ms"] / cached["total"]["p90_ms"], 2)
    assert summary["target"] == 3
    assert summary["met"] is (summary["p90_ratio"] >= 3)
