"""The placement benchmark still runs and keeps its output contract (on a slice of the trace, to stay quick)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "alibaba-gpu-v2023"


@pytest.mark.parametrize(("policy", "sharing"), [("ladder", "tenant"), ("best-fit", "mig"), ("first-fit", "unsafe")])
def test_the_benchmark_prints_one_json_object(tmp_path, policy, sharing):
    if not DATA.exists():
        pytest.skip("the shared trace data is not beside the project")  # it is on every machine of the project
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text("".join((DATA / "openb_node_list_gpu_node.csv").open().readlines()[:121]))
    pods.write_text("".join((DATA / "openb_pod_list_default.csv").open().readlines()[:801]))
    result = subprocess.run(
        [sys.executable, "-m", "bench.placement", "--nodes", str(nodes), "--pods", str(pods),
         "--policy", policy, "--sharing", sharing, "--seeds", "1", "--json"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    figures = json.loads(result.stdout)
    assert {"policy", "sharing", "served_ratio", "unallocated_gpus", "stranded_mig_slices", "decisions_per_s",
            "p50_ms", "p99_ms"} <= set(figures)  # fmt: skip
    assert (figures["policy"], figures["sharing"]) == (policy, sharing)
    assert 0.5 < figures["served_ratio"] <= 1.0
    assert figures["decisions_per_s"] > 0
