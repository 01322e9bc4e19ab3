"""The placement benchmark still runs and keeps its output contract (on a slice of the trace, to stay quick)."""

import json
import math
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


def test_gpu_spec_names_trace_models_and_the_request_gets_their_catalog_models():
    from bench.trace import MODEL_ORDER, models_of

    assert models_of("") == MODEL_ORDER
    assert models_of("T4") == ("A100-40GB",)
    assert models_of("V100M16|V100M32") == ("A100-40GB", "A100-80GB")
    assert models_of("G2|P100") == ("A100-40GB", "H100-SXM-80GB")


def test_fgd_measures_a_node_as_the_paper_does():
    from bench.fgd import FGDEngine, Task
    from provisioning.domain.placement.isolation import HallInfo
    from provisioning.domain.placement.state import FleetState

    state = FleetState()
    state.add_hall(HallInfo("h", "r", "EU", None))
    state.add_node(
        id=1, hostname="n", hall="h", model="H100-SXM-80GB", gpu_uuids=[f"g{i}" for i in range(8)], nvlink_domain="d"
    )
    engine = FGDEngine(state)
    h100 = frozenset({"H100-SXM-80GB"})
    engine.expect(Task(1, 0, None, h100))
    engine.expect(Task(0, 500, None, h100))
    for _ in range(2):
        engine.expect(Task(1, 0, None, frozenset({"A100-40GB"})))  # the 4th pod doubles what was seen: rebuilt
    # 7 free GPUs and a soft GPU with 300 milli left: the A100-only task (half the pods) can use none of it
    # (7,300), the 1-GPU task cannot use the partly used GPU (300), the half share fits in no partly used GPU (300)
    sig = ("H100-SXM-80GB", 7, (300,), (), -1)
    assert abs(engine.fragmentation(sig) - (7300 / 2 + 300 / 4 + 300 / 4)) < 1e-9
    # with no free GPU, neither can run here: all 300 are fragmented for every task
    assert abs(engine.fragmentation(("H100-SXM-80GB", 0, (300,), (), -1)) - 300) < 1e-9


def test_fgds_whole_model_counts_a_node_short_of_cpu_and_cpu_only_work_as_the_paper_does():
    from collections import Counter

    from bench.fgd import FGDEngine, Task
    from provisioning.domain.placement.isolation import HallInfo
    from provisioning.domain.placement.state import FleetState

    state = FleetState()
    state.add_hall(HallInfo("h", "r", "EU", None))
    state.add_node(
        id=1,
        hostname="n",
        hall="h",
        model="H100-SXM-80GB",
        gpu_uuids=[f"g{i}" for i in range(8)],
        nvlink_domain="d",
        cpu_milli=64_000,
        memory_mib=1 << 20,
    )
    engine = FGDEngine(state, whole=True)
    h100 = frozenset({"H100-SXM-80GB"})
    engine.prior(
        Counter({Task(1, 0, None, h100, 8_000): 2, Task(1, 0, None, h100, 32_000): 1, Task(0, 0, None, h100, 4_000): 1})
    )
    engine.expect(Task(8, 0, None, h100, 0))  # the prior is fixed: nothing learned
    # 4 free GPUs with 16 cores left: the 32-core task cannot run (all 4,000 fragmented for it), nor can CPU-only work
    # use a GPU (all of them); the 8-core task can use every free GPU.
    assert abs(engine.fragmentation(("H100-SXM-80GB", 4, (), (), 16_000)) - 4000 * (1 / 4 + 1 / 4)) < 1e-9
    # the plugin's score: an integer 0..100, sigmoid of the fragmentation it removes (in GPUs), as a cost
    before, after = ("H100-SXM-80GB", 4, (), (), 40_000), ("H100-SXM-80GB", 3, (), (), 8_000)
    delta = engine.fragmentation(after) - engine.fragmentation(before)
    assert engine._delta(before, after) == -int(100 / (1 + math.exp(delta / 1000)))


def test_the_gang_benchmark_places_gangs_inside_one_group_and_prints_one_json_object():
    from bench.gangs import gang_fleet, gang_run
    from provisioning.domain.placement.decision import Placement, Request
    from provisioning.domain.placement.engine import PlacementEngine
    from provisioning.domain.placement.isolation import TenantPolicy
    from provisioning.domain.rungs import Rung

    state = gang_fleet(2_048, mixed=True)
    assert len({n.gang_group for n in state.nodes.values()}) > 4  # fabrics x version sets: gangs have a choice
    engine = PlacementEngine(state)
    placed = engine.place(Request(rung=Rung.JOB, models=("H100-SXM-80GB",), gpus=8, gang_size=8), TenantPolicy(1))
    assert isinstance(placed, Placement)
    assert len({state.nodes[d.node_id].gang_group for d in placed.devices}) == 1
    rows = gang_run(1_024, policy="best-fit", mixed=True, requests=40)
    assert sum(r.decisions for r in rows) == 40
    assert all(0 <= r.placed <= r.decisions and r.p50_ms <= r.p99_ms for r in rows)
    result = subprocess.run(
        [sys.executable, "-m", "bench.gangs", "--gpus", "512", "--requests", "10", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    rows_out = json.loads(result.stdout)["gangs"]
    assert {(r["policy"], r["mixed"]) for r in rows_out} == {
        (p, m) for p in ("fragmentation", "best-fit") for m in (0, 1)
    }


def test_with_the_optimum_each_row_says_how_much_of_the_gap_it_closes():
    """``--optimum``: the policy's row carries the optimum of the same seeds and the share of the gap between the
    better of first-fit and best-fit and that optimum which the policy closes; ``targets`` reads it in tenant
    mode."""
    from bench.placement import beside_optimum, run_config, targets

    nodes, pods = SAMPLE / "alibaba_nodes_sample.csv", SAMPLE / "alibaba_pods_sample.csv"
    rows = [run_config(nodes, pods, p, s, 1) for p in ("ladder", "first-fit", "best-fit", "fgd") for s in ("tenant",)]
    beside_optimum(nodes, pods, 1, rows, ("tenant",))
    ladder = next(r for r in rows if r["policy"] == "ladder")
    assert isinstance(ladder["optimum_unallocated"], float)
    assert ladder["optimum_unallocated"] <= min(float(str(r["unallocated_gpus"])) for r in rows)
    assert ladder["closed"] == "n/a" or str(ladder["closed"]).endswith("%")
    (check,) = [c for c in targets([*rows, *(dict(r, sharing=m) for r in rows for m in ("mig", "unsafe"))])
                if c["sharing"] == "tenant"]  # fmt: skip
    assert check["gap_closed"] == ladder["closed"]
    assert check["gap_target"] in ("met", "MISSED")
    command = [sys.executable, "-m", "bench.placement", "--nodes", str(nodes), "--pods", str(pods), "--seeds", "1"]
    result = subprocess.run(
        [*command, "--optimum", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert {"optimum_unallocated", "closed", "optimum_served", "closed_served"} <= set(json.loads(result.stdout))


def test_keep_whole_reaches_the_engine_and_is_checked():
    nodes, pods = SAMPLE / "alibaba_nodes_sample.csv", SAMPLE / "alibaba_pods_sample.csv"
    command = [sys.executable, "-m", "bench.placement", "--nodes", str(nodes), "--pods", str(pods), "--seeds", "1"]
    result = subprocess.run([*command, "--keep-whole", "0.4", "--json"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["keep_whole"] == 0.4
    wrong = subprocess.run([*command, "--keep-whole", "1.5"], cwd=ROOT, capture_output=True, text=True)
    assert wrong.returncode == 2
    assert "--keep-whole is a share" in wrong.stderr


def test_the_whole_node_benchmark_reads_its_curve_and_targets_and_prints_one_json_object():
    """``bench.whole_node``: CPU and memory placed, CPU-only pods among the pods, the unallocated GPUs, fragmentation
    rate and served GPUs read at each load up to 130%, the targets from 100% on; nothing placed beyond a node's CPU
    or memory."""
    from bench.replay import replay
    from bench.trace import load_nodes, load_pods

    nodes_csv, pods_csv = SAMPLE / "alibaba_nodes_sample.csv", SAMPLE / "alibaba_pods_sample.csv"
    nodes = load_nodes(nodes_csv)
    pods, _ = load_pods(pods_csv, cpu_only=True)
    assert sum(p.cpu_only for p in pods) == 62
    run = replay(
        nodes, pods, policy="ladder", sharing="tenant", seed=0, in_file_order=False, host=True, curve=(50, 100, 130)
    )
    assert sorted(run.curve) == [50, 100, 130]
    assert run.routes["cpu"] > 0
    unallocated = [run.curve[load][0] for load in (50, 100, 130)]
    assert unallocated == sorted(unallocated, reverse=True)
    assert all(0.0 <= run.curve[load][1] <= 1.0 for load in run.curve)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.whole_node",
            "--nodes",
            str(nodes_csv),
            "--pods",
            str(pods_csv),
            "--seeds",
            "1",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(result.stdout)
    (entry,) = report["runs"]
    assert set(entry["curves"]) == {"ladder", "first-fit", "best-fit", "fgd"}
    assert [t["load"] for t in entry["targets"]] == ["100%", "105%", "110%", "115%", "120%", "125%", "130%"]
    assert {t["unallocated_target"] for t in entry["targets"]} <= {"met", "MISSED"}


def test_the_whole_node_targets_need_a_rival_to_read_against():
    """``--policies ladder`` alone prints the curve without targets, rather than failing on them."""
    from bench.whole_node import targets

    point = {100: (300.0, 0.9, 5900.0)}
    assert targets({"ladder": point}) == []
    assert targets({"first-fit": point}) == []
    (row,) = targets({"ladder": point, "first-fit": {100: (400.0, 0.9, 5800.0)}})
    assert (row["served_target"], row["fewer_unallocated"], row["unallocated_target"]) == ("met", "25.0%", "met")


def test_the_whole_node_benchmark_puts_the_optimum_and_the_gap_closed_beside_the_curve():
    nodes_csv, pods_csv = SAMPLE / "alibaba_nodes_sample.csv", SAMPLE / "alibaba_pods_sample.csv"
    command = [sys.executable, "-m", "bench.whole_node", "--nodes", str(nodes_csv), "--pods", str(pods_csv)]
    result = subprocess.run(
        [*command, "--seeds", "1", "--optimum", "--optimum-seeds", "1", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    (entry,) = json.loads(result.stdout)["runs"]
    assert [row["load"] for row in entry["optimum"]] == ["100%", "130%"]
    for row in entry["optimum"]:
        assert row["optimum_unallocated"] == "-"  # tenant shares may fall back to slices: only served is bounded
        assert row["optimum_served"] >= row["ladder_served"]
        assert row["closed"] == "-" or row["closed"].endswith("%")
    wrong = subprocess.run(
        [*command, "--seeds", "1", "--optimum", "--optimum-seeds", "2"], cwd=ROOT, capture_output=True, text=True
    )
    assert wrong.returncode == 2
    assert "--optimum-seeds must be 1 to --seeds" in wrong.stderr
