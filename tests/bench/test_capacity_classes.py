"""The capacity classes' benchmark still runs end to end, small (256 GPUs, two days, one seed): reserved work is
never refused while its reservation has room, a preemption loses at most the work since the last checkpoint, spot
work fills what the on-demand-only fleet leaves idle, and each target reported is its figures'."""

import json
import subprocess
import sys

from tests.support import ROOT


def test_the_capacity_classes_benchmark_runs_and_keeps_its_promises() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench.capacity_classes", "--gpus", "256", "--hours", "48", "--seeds", "1", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = json.loads(result.stdout.strip().splitlines()[-1])
    with_classes, baseline, targets = found["classes"], found["on_demand_only"], found["targets"]
    assert with_classes["violations"] == 0
    assert with_classes["reserved_served"] > 0
    assert with_classes["spot_done"] > 0
    assert with_classes["preemptions"] > 0
    assert 0 < with_classes["lost_max_min"] <= 30  # the checkpoint interval
    assert with_classes["utilisation"] > baseline["utilisation"]
    assert baseline["spot_asked"] == baseline["preemptions"] == 0  # the on-demand-only fleet sells no spot
    assert targets["revenue_above"] is (with_classes["revenue_per_gpu_hour"] > baseline["revenue_per_gpu_hour"])
    assert result.returncode == (0 if all(targets.values()) else 1), result.stderr


def test_the_benchmark_draws_on_demand_and_spot_jobs_from_a_trace_pod_list() -> None:
    sample = str(ROOT / "tests" / "data" / "alibaba_pods_sample.csv")  # 800 pods of the public trace's pod list
    command = [sys.executable, "-m", "bench.capacity_classes", "--gpus", "128", "--hours", "24", "--seeds", "1"]
    result = subprocess.run(
        [*command, "--trace", sample, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["trace"] == sample
    assert found["classes"]["violations"] == 0
    assert found["classes"]["spot_asked"] > 0  # the trace's best-effort pods, sold as spot
    assert found["classes"]["lost_max_min"] <= 30


def test_a_trace_mix_is_the_trace_s_whole_gpu_pods_by_class() -> None:
    from bench.capacity_classes import ON_DEMAND, SPOT, trace_mix

    mix = trace_mix(str(ROOT / "tests" / "data" / "alibaba_pods_sample.csv"))
    assert mix[SPOT]
    assert mix[ON_DEMAND]
    assert set(mix[SPOT]) | set(mix[ON_DEMAND]) <= {1, 2, 4, 8}
