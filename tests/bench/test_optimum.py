"""The optimum of the placement benchmark is the best packing on fleets small enough to pack by hand, obeys the
sharing rules of each mode, and is never beaten by a policy of the replay on the same stream of the real trace."""

import json
import subprocess
import sys

import pytest

from bench.optimum import gap_closed, mig_patterns, offered, optimum
from bench.replay import SHARINGS, replay
from bench.trace import MODEL_ORDER, Pod, TraceNode, load_nodes, load_pods
from provisioning.domain.placement.mig import MigKind
from tests.support import DATA, ROOT

NODES, PODS = DATA / "alibaba_nodes_sample.csv", DATA / "alibaba_pods_sample.csv"  # the trace's first lines


def whole(*gpus: int) -> list[Pod]:
    return [Pod(f"whole-{i}", n, 1000, MODEL_ORDER, 1) for i, n in enumerate(gpus)]


def shares(*asks: tuple[int, int]) -> list[Pod]:
    """Fractional pods of (tenant, milli)."""
    return [Pod(f"share-{i}", 1, milli, MODEL_ORDER, tenant) for i, (tenant, milli) in enumerate(asks)]


def test_two_8_gpu_nodes_serve_12_of_pods_of_4_2_5_5_where_first_fit_serves_11() -> None:
    nodes = [TraceNode("a", 8, "G2"), TraceNode("b", 8, "G2")]
    stream = whole(4, 2, 5, 5)
    bound = optimum(nodes, stream, "tenant")
    assert (bound.served.bound, bound.unallocated_gpus, bound.served.status) == (12.0, 4.0, "optimal")  # {5,2} {5}
    assert offered(nodes, stream, seed=0, in_file_order=True) == stream  # 16 GPUs offered: all of them
    online = replay(nodes, stream, policy="first-fit", sharing="tenant", seed=0, in_file_order=True)
    assert (online.served_milli, online.unallocated_gpus) == (11_000, 5.0)  # {4,2} {5}: the last 5 finds no room


def test_a_pod_takes_whole_gpus_of_one_node_and_only_of_a_model_it_accepts() -> None:
    nodes = [TraceNode("a", 2, "T4"), TraceNode("b", 2, "T4"), TraceNode("c", 4, "V100M32")]
    stream = [*whole(3, 3), Pod("t4-only", 2, 1000, ("A100-40GB",), 1)]
    # one 3 on the 4-GPU node (the other 3 fits no node: 2 + 2 GPUs are two nodes), the 2 on an A100-40GB node
    assert optimum(nodes, stream, "tenant").served.bound == 5.0
    stream = [*whole(3), Pod("a100-80-only", 2, 1000, ("A100-80GB",), 1)]
    assert optimum(nodes, stream, "tenant").served.bound == 3.0  # the 2 needs the 4-GPU node the 3 holds


def test_soft_shares_stay_within_a_tenant_in_tenant_mode_and_mix_in_unsafe_mode() -> None:
    nodes = [TraceNode("a", 2, "T4")]
    stream = shares((1, 700), (2, 300), (3, 500), (3, 500))
    tenant = optimum(nodes, stream, "tenant")  # tenant 3's two halves fill a GPU; tenant 2's 300 cannot join the 700
    assert (tenant.served.bound, tenant.unallocated_gpus) == (1.7, 0.3)
    unsafe = optimum(nodes, stream, "unsafe")  # {700, 300} {500, 500}
    assert (unsafe.served.bound, unsafe.unallocated_gpus) == (2.0, 0.0)


def test_mig_mode_packs_kinds_at_legal_starts_and_counts_a_slice_as_allocated() -> None:
    nodes = [TraceNode("a", 1, "T4")]
    stream = shares((1, 500), (2, 400), (3, 400))  # slices 4g, 3g, 3g
    bound = optimum(nodes, stream, "mig")
    # 4g + 3g fill the 7 compute slices (allocated 1 GPU) and serve 0.9; 3g + 3g would serve 0.8
    assert (bound.served.bound, bound.unallocated_gpus) == (0.9, 0.0)
    assert bound.served is not bound.allocated  # slices round up: two objectives, two solves
    g3, g4 = MigKind.G3, MigKind.G4  # the largest layouts of these: 4g + 3g, and 3g + 3g (7th compute stranded)
    assert {frozenset(p) for p in mig_patterns([g3, g4])} == {frozenset({(g4, 1), (g3, 1)}), frozenset({(g3, 2)})}


@pytest.mark.parametrize("sharing", SHARINGS)
def test_no_policy_of_the_replay_beats_the_optimum_of_its_own_stream(sharing: str) -> None:
    nodes = load_nodes(NODES)
    pods, _ = load_pods(PODS)
    stream = offered(nodes, pods, seed=0, in_file_order=False)
    bound = optimum(nodes, stream, sharing)
    assert bound.allocated is not None  # the GPU-only model solves both objectives
    assert bound.served.status == bound.allocated.status == "optimal"
    for policy in ("ladder", "first-fit", "best-fit", "fgd", "random"):
        run = replay(nodes, pods, policy=policy, sharing=sharing, seed=0, in_file_order=False)
        assert (run.offered_milli, len(run.times)) == (round(bound.offered_gpus * 1000), len(stream))  # same pods
        assert bound.unallocated_gpus <= run.unallocated_gpus + 1e-9
        assert bound.served.bound >= run.served_milli / 1000


def test_gap_closed_is_the_share_of_the_gap_from_the_best_baseline_to_the_optimum() -> None:
    rows: list[dict[str, object]] = [
        {"policy": "ladder", "sharing": "tenant", "unallocated_gpus": 250.0, "served_gpus": 5950.0},
        {"policy": "first-fit", "sharing": "tenant", "unallocated_gpus": 310.0, "served_gpus": 5890.0},
        {"policy": "best-fit", "sharing": "tenant", "unallocated_gpus": 300.0, "served_gpus": 5900.0},
    ]
    assert gap_closed(rows, 200.0) == pytest.approx(0.5)  # (300 - 250) / (300 - 200)
    assert gap_closed(rows, 6000.0, metric="served_gpus") == pytest.approx(0.5)
    assert gap_closed(rows, 300.0) is None  # best-fit already meets the bound
    with pytest.raises(ValueError, match="fgd"):
        gap_closed(rows, 200.0, policy="fgd")


def test_the_command_prints_one_json_object_per_run() -> None:
    command = [sys.executable, "-m", "bench.optimum", "--nodes", str(NODES), "--pods", str(PODS), "--seeds", "2"]
    result = subprocess.run([*command, "--json"], cwd=ROOT, capture_output=True, text=True, check=True)
    report = json.loads(result.stdout)  # HiGHS's banner goes to stderr
    assert (report["pods_file"], report["sharing"], report["order"]) == (PODS.name, "tenant", "sampled")
    assert [r["seed"] for r in report["seeds"]] == [0, 1]
    assert {"offered_gpus", "served_gpus", "unallocated_gpus", "status", "gap_gpus", "seconds"} <= set(report["mean"])


def test_on_the_whole_node_a_hosts_cpu_limits_what_its_gpus_serve() -> None:
    nodes = [TraceNode("a", 8, "G2", cpu_milli=16_000, memory_mib=65_536)]
    stream = [Pod(f"p{i}", 1, 1000, MODEL_ORDER, 1, cpu_milli=8000, memory_mib=1024) for i in range(4)]
    assert optimum(nodes, stream, "tenant").served.bound == 4.0  # GPUs only: all four
    bound = optimum(nodes, stream, "tenant", host=True)
    assert (bound.served.bound, bound.unallocated_gpus) == (2.0, 6.0)  # 16 cores hold two
    cpu_only = Pod("head", 0, 0, MODEL_ORDER, 1, cpu_milli=16_000, memory_mib=1024)
    assert optimum(nodes, [cpu_only, *stream], "tenant", host=True).served.bound == 2.0  # refused where in the way


def test_the_whole_node_bound_relaxes_cpu_across_the_nodes_of_a_type() -> None:
    """Two 12-core nodes hold one 8-core pod each; the bound counts their 24 cores together and serves three: an
    upper bound, not a packing."""
    nodes = [TraceNode(n, 8, "G2", cpu_milli=12_000, memory_mib=65_536) for n in "ab"]
    stream = [Pod(f"p{i}", 1, 1000, MODEL_ORDER, 1, cpu_milli=8000, memory_mib=1024) for i in range(3)]
    assert optimum(nodes, stream, "tenant", host=True).served.bound == 3.0
    online = replay(nodes, stream, policy="first-fit", sharing="tenant", seed=0, in_file_order=True, host=True)
    assert online.served_milli == 2000


@pytest.mark.parametrize("sharing", SHARINGS)
def test_no_policy_of_the_whole_node_replay_beats_its_bound(sharing: str) -> None:
    nodes = load_nodes(NODES)
    pods, _ = load_pods(PODS, cpu_only=True)
    for load in (100, 130):
        stream = offered(nodes, pods, seed=0, in_file_order=False, load=load)
        bound = optimum(nodes, stream, sharing, host=True)
        for policy in ("ladder", "first-fit", "best-fit", "fgd"):
            run = replay(
                nodes, pods, policy=policy, sharing=sharing, seed=0, in_file_order=False, host=True, curve=(load,)
            )
            unallocated, _, served = run.curve[load]
            assert bound.unallocated_gpus <= unallocated + 1e-9, (policy, load)  # 0 where shares may be slices
            assert bound.served.bound >= served - 1e-9, (policy, load)
