"""The placement benchmark still runs and keeps its output contract (on a slice of the trace, to stay quick)."""

import json
import subprocess
import sys

import pytest

from tests.support import DATA, ROOT

SAMPLE = DATA  # the first lines of the public trace


@pytest.mark.parametrize(
    ("policy", "sharing"),
    [("ladder", "tenant"), ("best-fit", "mig"), ("first-fit", "unsafe"), ("fgd", "tenant"), ("ladder-best-fit", "mig")],
)
def test_the_benchmark_prints_one_json_object(policy, sharing):
    nodes, pods = SAMPLE / "alibaba_nodes_sample.csv", SAMPLE / "alibaba_pods_sample.csv"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.placement",
            "--nodes",
            str(nodes),
            "--pods",
            str(pods),
            "--policy",
            policy,
            "--sharing",
            sharing,
            "--seeds",
            "1",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    figures = json.loads(result.stdout)
    assert {
        "policy",
        "sharing",
        "served_ratio",
        "unallocated_gpus",
        "stranded_mig_slices",
        "decisions_per_s",
        "p50_ms",
        "p99_ms",
    } <= set(figures)
    assert (figures["policy"], figures["sharing"]) == (policy, sharing)
    assert 0.5 < figures["served_ratio"] <= 1.0
    assert figures["decisions_per_s"] > 0
