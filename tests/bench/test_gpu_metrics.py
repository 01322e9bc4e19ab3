"""The GPU metrics benchmarks still run end to end, small: the 1,000-GPU read's on 16 GPUs over 24 hours (its own
SQLite database, its blocks made by promtool and its rollups backfilled by the product's rules, Debian's
Prometheus on them), and the exporter scrape's on four nodes."""

import json
import subprocess
import sys

from tests.support import ROOT, require
from tests.support.prometheus import prometheus_path


def run(*args: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", *args, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_metrics_read_benchmark_reads_the_rollups_of_a_day() -> None:
    require(prometheus_path() is not None, "Prometheus (`make prometheus` installs Debian's prometheus)")
    found = run("bench.gpu_metrics", "--gpus", "24", "--hours", "24", "--scrape", "60", "--reads", "2")
    assert (found["gpus"], found["points"], found["step_seconds"]) == (24, 240, 360)
    assert (found["resolution"], found["per_device"]) == ("5m", False)  # more than 16 devices: combined only
    for kind in ("api", "portal", "portal_hour"):
        assert 0 < found[kind]["median_ms"] <= found[kind]["p90_ms"] <= found[kind]["max_ms"]
    assert found["target_met"] is True


def test_the_exporter_benchmark_scrapes_every_node() -> None:
    found = run("bench.dcgm_exporter", "--nodes", "4", "--rounds", "2")
    assert (found["nodes"], found["gpus"]) == (4, 32)
    assert found["series_per_node"] >= 80  # ten fields for each of eight GPUs, and MIG instances' own
    assert 0 < found["node_median_ms"] <= found["node_p90_ms"] <= found["node_max_ms"]
    assert found["target_met"] is True
