"""The placement benchmark on the whole node, by the FGD paper's protocol: GPUs, CPUs and memory placed together.

Run from the repository root (pure Python, no Django)::

    python -m bench.whole_node [--pods PODS.csv] [--sharing tenant] [--seeds 10] [--json]
    python -m bench.whole_node --all [--seeds 10] [--sharings tenant,mig,unsafe]   # every pods file, both orders
    python -m bench.whole_node [...] --gpu-only       # the same protocol on today's GPU-only model
    python -m bench.whole_node [...] --optimum [--optimum-seeds 3]   # the bound beside, and the gap closed

What differs from ``bench/placement.py`` (docs/benchmarks.md, "The whole node"):

- every node has the trace's ``cpu_milli`` and ``memory_mib`` and every pod asks its own beside its GPUs
  (``bench/trace.py``; the engine places the three together, docs/placement.md "The whole node");
- the trace's CPU-only pods (1,088 per file) are among the pods, placed as CPU-only work;
- the pods are drawn until the offered GPU demand reaches 130% of the cluster's GPUs, and the unallocated GPUs,
  the fragmentation rate (the paper's: GPUs fragmented for the workload offered so far, over unallocated GPUs,
  ``bench.fgd.fragmentation_rate``) and the served GPUs are read at each of ``LOADS`` on the way;
- the ``multigpu`` files, which have no times and are replayed in file order by ``bench/placement.py`` (only ~95
  of their multi-GPU pods come before 100%), are also sampled, as the paper samples every file;
- ``fgd`` is the paper's whole model (``bench.fgd.FGDEngine(whole=True)``): the pods file's typical pods as a
  fixed prior, CPU in its measure, the plugin's 0-100 score with random tie-breaks.

``--optimum`` computes, per seed, the most a clairvoyant packer could serve of the same stream at 100% and 130%
(``bench.optimum.optimum(host=...)``: exact on GPUs, CPU and memory relaxed per node type, so an upper bound) and
reads "ladder closed X% of the gap between the best of first-fit, best-fit and fgd and the optimum", for the served
GPUs and the unallocated ones.

Targets (issue "Placement on the whole node"), per pods file and sharing mode, at every load from 100% to 130%:
``ladder`` serves at least the best of first-fit, best-fit and fgd (within 0.5 GPU), and leaves at least 20% fewer
GPUs unallocated than the better of first-fit and best-fit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from time import perf_counter

from bench.optimum import offered, optimum
from bench.placement import table
from bench.replay import SHARINGS, replay
from bench.trace import NODES_CSV, PODS_CSVS, load_nodes, load_pods

POLICIES = ("ladder", "first-fit", "best-fit", "fgd")
RIVALS = ("first-fit", "best-fit", "fgd")
OPTIMUM_LOADS = (100, 130)
LOADS = (50, 60, 70, 80, 90, 100, 105, 110, 115, 120, 125, 130)
TARGET_LOADS = tuple(load for load in LOADS if load >= 100)
SERVED_SLACK = 0.5  # GPUs
UNALLOCATED_CUT = 0.2

Row = dict[str, object]
Curve = dict[int, tuple[float, float, float]]  # load -> (unallocated GPUs, fragmentation rate, served GPUs)
Curves = dict[str, Curve]  # by policy


def seed_curves(
    nodes_csv: Path, pods_csv: Path, policy: str, sharing: str, seeds: int, *, in_file_order: bool, host: bool
) -> list[dict[int, tuple[float, float, float]]]:
    """Per seed, per load: (unallocated GPUs, fragmentation rate, served GPUs)."""
    nodes = load_nodes(nodes_csv)
    pods, _ = load_pods(pods_csv, cpu_only=host)
    return [
        replay(
            nodes,
            pods,
            policy=policy,
            sharing=sharing,
            seed=seed,
            in_file_order=in_file_order,
            host=host,
            curve=LOADS,
        ).curve
        for seed in range(seeds)
    ]


def mean_curve(runs: Sequence[dict[int, tuple[float, float, float]]]) -> Curve:
    """Per load every run reached, the mean over the runs."""
    reached = [load for load in LOADS if all(load in run for run in runs)]
    return {
        load: (
            round(statistics.fmean(run[load][0] for run in runs), 1),
            round(statistics.fmean(run[load][1] for run in runs), 4),
            round(statistics.fmean(run[load][2] for run in runs), 1),
        )
        for load in reached
    }


def bounds(
    nodes_csv: Path,
    pods_csv: Path,
    sharing: str,
    seeds: int,
    *,
    in_file_order: bool,
    host: bool,
    time_limit: float,
) -> dict[int, tuple[float | None, float, str]]:
    """Per load of ``OPTIMUM_LOADS``, the mean over the seeds of the optimum's (unallocated GPUs, served GPUs) for
    the stream the replay offers up to that load, and the solves' statuses. Unallocated is None where it was not
    solved (soft shares may fall back to slices, which round up: ``bench.optimum.optimum``)."""
    nodes = load_nodes(nodes_csv)
    pods, _ = load_pods(pods_csv, cpu_only=host)
    out: dict[int, tuple[float | None, float, str]] = {}
    for load in OPTIMUM_LOADS:
        found = [
            optimum(
                nodes,
                offered(nodes, pods, seed=seed, in_file_order=in_file_order, load=load),
                sharing,
                time_limit,
                host=host,
            )
            for seed in range(seeds)
        ]
        solved = all(b.allocated is not None for b in found)
        out[load] = (
            round(statistics.fmean(b.unallocated_gpus for b in found), 1) if solved else None,
            round(statistics.fmean(b.served.bound for b in found), 1),
            "/".join(dict.fromkeys(b.status for b in found)),
        )
    return out


def closed(curves: Curves, bound: dict[int, tuple[float | None, float, str]]) -> list[Row]:
    """Per load the bound was computed at: the optimum beside ``ladder`` and the best rival, and the share of the
    gap between that rival and the optimum that ``ladder`` closes, for unallocated and served GPUs (None: the rival
    already meets the bound)."""
    out: list[Row] = []
    for load, (opt_unalloc, opt_served, status) in sorted(bound.items()):
        if not all(load in c for c in curves.values()) or "ladder" not in curves:
            continue
        unalloc, _, served = curves["ladder"][load]
        rivals = [curves[p][load] for p in RIVALS if p in curves]
        best_unalloc, best_served = min(r[0] for r in rivals), max(r[2] for r in rivals)
        gap_unalloc = best_unalloc - opt_unalloc if opt_unalloc is not None else 0.0
        gap_served = opt_served - best_served
        out.append(
            {
                "load": f"{load}%",
                "optimum_unallocated": "-" if opt_unalloc is None else opt_unalloc,
                "ladder_unallocated": unalloc,
                "best_rival_unallocated": best_unalloc,
                "closed": f"{100 * (best_unalloc - unalloc) / gap_unalloc:.1f}%" if gap_unalloc > 0 else "-",
                "optimum_served": opt_served,
                "ladder_served": served,
                "best_rival_served": best_served,
                "closed_served": f"{100 * (served - best_served) / gap_served:.1f}%" if gap_served > 0 else "-",
                "status": status,
            }
        )
    return out


def targets(curves: Curves) -> list[Row]:
    """Per load from 100% on, the issue's two targets for ``ladder`` against the other policies' curves; none
    without ``ladder`` and first-fit or best-fit among the policies run (``--policies ladder`` alone)."""
    out: list[Row] = []
    if "ladder" not in curves or not {"first-fit", "best-fit"} & curves.keys():
        return out
    for load in TARGET_LOADS:
        if not all(load in c for c in curves.values()):
            continue
        unalloc, _, served = curves["ladder"][load]
        best_served = max(curves[p][load][2] for p in ("first-fit", "best-fit", "fgd") if p in curves)
        best_unalloc = min(curves[p][load][0] for p in ("first-fit", "best-fit") if p in curves)
        fewer = 1 - unalloc / best_unalloc if best_unalloc else 0.0
        out.append(
            {
                "load": f"{load}%",
                "ladder_served": served,
                "best_served": best_served,
                "served_target": "met"
                if served >= best_served - SERVED_SLACK
                else f"MISSED by {best_served - served:.1f}",
                "ladder_unallocated": unalloc,
                "best_ff_bf_unallocated": best_unalloc,
                "fewer_unallocated": f"{100 * fewer:.1f}%",
                "unallocated_target": "met" if fewer >= UNALLOCATED_CUT else "MISSED",
            }
        )
    return out


def run(
    nodes_csv: Path,
    pods_files: Sequence[Path],
    sharings: Sequence[str],
    seeds: int,
    policies: Sequence[str],
    *,
    host: bool,
    as_json: bool,
    optimum_seeds: int = 0,
    time_limit: float = 120.0,
) -> dict[str, object]:
    runs: list[Row] = []
    report: dict[str, object] = {"seeds": seeds, "host": host, "loads": list(LOADS), "runs": runs}
    started = perf_counter()
    for pods_csv in pods_files:
        _, timed = load_pods(pods_csv)
        for in_file_order in (False, True) if not timed else (False,):
            order = "file" if in_file_order else "sampled"
            for sharing in sharings:
                runs_by = {
                    policy: seed_curves(
                        nodes_csv, pods_csv, policy, sharing, seeds, in_file_order=in_file_order, host=host
                    )
                    for policy in policies
                }
                curves = {policy: mean_curve(found) for policy, found in runs_by.items()}
                checks = targets(curves)
                gaps: list[Row] = []
                if optimum_seeds:
                    bound = bounds(
                        nodes_csv,
                        pods_csv,
                        sharing,
                        optimum_seeds,
                        in_file_order=in_file_order,
                        host=host,
                        time_limit=time_limit,
                    )
                    # on the seeds the bound was computed for
                    gaps = closed({p: mean_curve(found[:optimum_seeds]) for p, found in runs_by.items()}, bound)
                entry: Row = {
                    "pods_file": pods_csv.name,
                    "order": order,
                    "sharing": sharing,
                    "curves": curves,
                    "targets": checks,
                    "optimum": gaps,
                }
                runs.append(entry)
                print(f"  {pods_csv.name} {order} {sharing}: {perf_counter() - started:.0f}s", file=sys.stderr)
                if not as_json:
                    _print(entry, curves, checks, seeds, host)
                    if gaps:
                        seeds_said = f"{optimum_seeds} seed{'s' if optimum_seeds > 1 else ''}"
                        print(f"\nThe optimum ({seeds_said}) and the gap closed:\n")
                        print(table(gaps, tuple(gaps[0])))
    if as_json:
        print(json.dumps(report))
    return report


def _print(
    entry: Row, curves: dict[str, dict[int, tuple[float, float, float]]], checks: list[Row], seeds: int, host: bool
) -> None:
    model = "whole node" if host else "GPU only"
    print(f"\n## {entry['pods_file']} ({entry['order']}, {entry['sharing']}, {model}, {seeds} seeds)\n")
    loads = sorted(set.intersection(*(set(c) for c in curves.values())))
    rows: list[Row] = [
        {"load": f"{load}%", **{p: f"{c[load][0]} / {100 * c[load][1]:.1f}%" for p, c in curves.items()}}
        for load in loads
    ]
    print("Unallocated GPUs / fragmentation rate, by arrived GPU demand:\n")
    print(table(rows, ("load", *curves)))
    if checks:
        print("\nTargets:\n")
        print(table(checks, tuple(checks[0])))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.whole_node", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=Path, default=NODES_CSV)
    parser.add_argument("--pods", type=Path, default=PODS_CSVS[0])
    parser.add_argument("--sharing", choices=SHARINGS, default="tenant")
    parser.add_argument("--sharings", default=None, help="with --all: comma-separated modes (default: all three)")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--gpu-only", action="store_true", help="today's GPU-only model on the same protocol")
    parser.add_argument("--all", action="store_true", help="every pods file; multigpu files sampled and in file order")
    parser.add_argument("--optimum", action="store_true", help="the bound (bench/optimum.py) and the gap closed")
    parser.add_argument("--optimum-seeds", type=int, default=3, help="seeds of the bound (the first of --seeds)")
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per solve; then the dual bound")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    if args.optimum and not 1 <= args.optimum_seeds <= args.seeds:
        parser.error("--optimum-seeds must be 1 to --seeds")
    policies = [p for p in args.policies.split(",") if p]
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        parser.error(f"unknown policy {unknown[0]!r}; one of {', '.join(POLICIES)}")
    sharings = (args.sharings or ",".join(SHARINGS)).split(",") if args.all else [args.sharing]
    if any(s not in SHARINGS for s in sharings):
        parser.error(f"--sharings: one or more of {', '.join(SHARINGS)}")
    files = PODS_CSVS if args.all else (args.pods,)
    run(
        args.nodes,
        files,
        sharings,
        args.seeds,
        policies,
        host=not args.gpu_only,
        as_json=args.json,
        optimum_seeds=args.optimum_seeds if args.optimum else 0,
        time_limit=args.time_limit,
    )


if __name__ == "__main__":
    main()
