"""The placement benchmark: replay the public Alibaba GPU trace through the engine and its baselines.

Run from the repository root (pure Python over ``provisioning.domain.placement``, no Django)::

    python -m bench.placement [--nodes NODES.csv] [--pods PODS.csv] [--policy ladder|first-fit|best-fit|fgd|random]
                              [--sharing mig|tenant|unsafe] [--seeds 5] [--no-share-ratio 0.0] [--json]
    python -m bench.placement [...] --optimum      # with first-fit, best-fit and the optimum (bench/optimum.py)
    python -m bench.placement --all [--seeds 5]     # every policy x sharing mode on every pods file, the optimum beside
    python -m bench.placement --scale [--seeds 3] [--tenants 50]  # decision latency, 1k/10k/50k-GPU fleets

Defaults: ``bench/data/alibaba-gpu-v2023/`` (node list and ``openb_pod_list_default.csv``), fetched and checked
by ``make bench-data``. Results and the reasoning behind them: ``docs/benchmarks.md``.

Mapping (``bench/trace.py``): a trace node becomes a node of a MIG-capable catalog model with the same GPU count,
by memory class -- P100, T4, V100M16 (16 GB) and A10 (24 GB) -> A100-40GB; V100M32 (32 GB) -> A100-80GB; G2, G3
(anonymised newest models, 8-GPU servers) -> H100-SXM-80GB. Nodes go round-robin into four halls in two regions,
NVLink domains of 8 nodes per (hall, model). ``gpu_spec`` names trace models; each stands for its catalog model,
and the request's ``models`` are those, in catalog order (empty: all three). ``num_gpu == 0`` pods are skipped;
``num_gpu == 1, gpu_milli < 1000`` is fractional; the rest ask ``num_gpu`` whole GPUs on one node
(``Request(rung=CONTAINER, gpus=n)``). Tenant: ``crc32(name) % 50 + 1``.

Sharing modes and policies: ``bench/replay.py`` (``mig``, ``tenant`` = Ladder's, ``unsafe`` = comparison only),
``bench/baselines.py`` (``first-fit``, ``best-fit``, ``random``; ``ladder`` is the engine as is, ``ladder-best-fit``
the engine under its best-fit policy, outside ``--all``) and ``bench/fgd.py`` (``fgd``, the FGD paper's score).

Protocol (FGD, USENIX ATC'23): pods drawn with replacement (``random.Random(seed)``), placed and never removed,
until the offered GPU demand (whole pods count ``num_gpu``, fractional ones ``gpu_milli / 1000``) reaches 100% of
the cluster's GPUs; seeds 0..N-1, averaged. A pods file without times (multigpu30) is placed in file order.

Metrics: ``served_ratio`` = served demand / offered demand; ``unallocated_gpus`` = sum over GPUs of 1 - allocated
fraction (whole 1, MIG compute_used/7, soft soft_used/1000) at the end; ``stranded_mig_slices`` = sum of
``mig.stranded_compute``; ``decisions_per_s``, ``p50_ms``, ``p99_ms`` from ``time.perf_counter`` around each
decision (all engine calls of one pod, the MIG fallback included) and nothing else.

Cost of one ``ladder`` decision (P = acceptable models x allowed halls, G = GPUs per node <= 8): counting the
request in the workload histogram O(P); whole GPUs 9 P scores + O(32) bucket reads for the tie-break + O(G) to take
and reindex; MIG O(P x S) with S the distinct MIG states in a pool (bounded by the 4,096 possible states, a few
dozen in practice) + GPUs skipped for isolation, + a fresh GPU as for whole GPUs; soft share a bisect per pool of
the tenant + a fresh GPU as for whole GPUs; plus O(halls) to filter halls; every 64 requests the workload snapshot
is rebuilt in O(pools x shapes). Nothing grows with the fleet (docs/benchmarks.md, ``--scale``). ``fgd`` scores
every feasible node (O(nodes) per decision, its node fragmentation cached per node state).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from time import perf_counter

from bench.baselines import EXTRA_POLICIES, POLICIES
from bench.optimum import gap_closed, seed_bounds
from bench.replay import SHARINGS, Run, replay, summary
from bench.scale import SIZES, scale_run
from bench.trace import NODES_CSV, PODS_CSVS, load_nodes, load_pods

Row = dict[str, object]
COLUMNS = ("policy", "sharing", "served_ratio", "unallocated_gpus", "stranded_mig_slices", "rounding_gpus")
SERVED_RIVALS = ("first-fit", "best-fit", "fgd")  # ladder must serve at least as much as the best of these
UNALLOCATED_RIVALS = ("first-fit", "best-fit")  # ... and leave UNALLOCATED_CUT fewer GPUs than the best of these
UNALLOCATED_CUT = 0.2
GAP_CLOSED = 0.1  # ... and, in tenant mode, close this share of the gap between the best of those and the optimum
OPTIMUM_COLUMNS = ("optimum_unallocated", "closed", "optimum_served", "closed_served")


def run_config(
    nodes_csv: Path,
    pods_csv: Path,
    policy: str,
    sharing: str,
    seeds: int,
    order: str = "auto",
    no_share_ratio: float = 0.0,
    keep_whole: float = 0.0,
) -> Row:
    nodes = load_nodes(nodes_csv)
    pods, timed = load_pods(pods_csv)
    in_file_order = order == "file" or (order == "auto" and not timed)
    runs = [
        replay(
            nodes,
            pods,
            policy=policy,
            sharing=sharing,
            seed=seed,
            in_file_order=in_file_order,
            no_share_ratio=no_share_ratio,
            keep_whole=keep_whole,
        )
        for seed in range(seeds)
    ]
    row = summary(policy, sharing, runs)
    if keep_whole:
        row["keep_whole"] = keep_whole
    row["pods_file"] = pods_csv.name
    row["order"] = "file" if in_file_order else "sampled"
    return row


def beside_optimum(
    nodes_csv: Path,
    pods_csv: Path,
    seeds: int,
    rows: Sequence[Row],
    sharings: Sequence[str] = SHARINGS,
    order: str = "auto",
) -> None:
    """Beside every row, the optimum over the same seeds (``bench/optimum.py``: bounds, not packings) and the share
    of the gap between the best of first-fit and best-fit and the optimum that the row's policy closes, on
    unallocated GPUs and on served GPUs (in ``mig`` mode the unallocated bound is 0: read the served one)."""
    for sharing in sharings:
        bounds, _ = seed_bounds(nodes_csv, pods_csv, sharing, seeds, order=order)
        unallocated = round(statistics.fmean(b.unallocated_gpus for b in bounds), 1)
        served = round(statistics.fmean(b.served.bound for b in bounds), 1)
        mode = [r for r in rows if r["sharing"] == sharing]
        for row in mode:
            policy = str(row["policy"])
            closed = gap_closed(mode, unallocated, policy, UNALLOCATED_RIVALS)
            closed_served = gap_closed(mode, served, policy, UNALLOCATED_RIVALS, metric="served_gpus")
            row["optimum_unallocated"], row["optimum_served"] = unallocated, served
            row["closed"] = "n/a" if closed is None else f"{100 * closed:.1f}%"
            row["closed_served"] = "n/a" if closed_served is None else f"{100 * closed_served:.1f}%"


def table(rows: Sequence[Row], columns: Sequence[str]) -> str:
    """A Markdown table, readable as text and pasteable into docs/benchmarks.md."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def _get(rows: Sequence[Row], policy: str, sharing: str, key: str) -> float:
    value = next(r[key] for r in rows if r["policy"] == policy and r["sharing"] == sharing)
    assert isinstance(value, int | float)
    return float(value)


def targets(rows: Sequence[Row]) -> list[Row]:
    """Per sharing mode, the targets: ``ladder`` serves at least as much as the best of first-fit, best-fit and
    fgd; it leaves at least 20% fewer GPUs unallocated than the best of first-fit and best-fit; and, in ``tenant``
    mode with the optimum beside the rows (``beside_optimum``), it closes at least 10% of the gap between that best
    and the optimum."""
    out: list[Row] = []
    for sharing in SHARINGS:
        # compared in served GPUs (0.1 GPU), finer than the ratio's four decimals (0.6 GPU on this cluster)
        served = _get(rows, "ladder", sharing, "served_gpus")
        unalloc = _get(rows, "ladder", sharing, "unallocated_gpus")
        best_served = max(_get(rows, p, sharing, "served_gpus") for p in SERVED_RIVALS)
        best_unalloc = min(_get(rows, p, sharing, "unallocated_gpus") for p in UNALLOCATED_RIVALS)
        fewer = 1 - unalloc / best_unalloc if best_unalloc else 0.0
        ladder = next(r for r in rows if r["policy"] == "ladder" and r["sharing"] == sharing)
        gap: Row = {}
        if sharing == "tenant" and "closed" in ladder:
            closed = str(ladder["closed"])
            met = closed != "n/a" and float(closed.rstrip("%")) >= 100 * GAP_CLOSED
            gap = {"gap_closed": closed, "gap_target": "met" if met else "MISSED"}
        out.append(
            {
                "sharing": sharing,
                "ladder_served_gpus": served,
                "best_served_gpus": best_served,
                "served_target": "met" if served >= best_served else f"MISSED by {best_served - served:.1f}",
                "ladder_unallocated": unalloc,
                "best_ff_bf_unallocated": best_unalloc,
                "fewer_unallocated": f"{100 * fewer:.1f}%",
                "unallocated_target": "met" if fewer >= UNALLOCATED_CUT else "MISSED",
                **gap,
            }
        )
    return out


def isolation_cost(rows: Sequence[Row]) -> list[Row]:
    """Per policy: served GPUs under ``mig`` (safe hard slices), ``tenant`` (Ladder) and ``unsafe`` (cross-tenant
    soft sharing), and the share of the mig -> unsafe gap that ``tenant`` recovers. Unallocated GPUs are shown
    too, with the GPUs MIG gives beyond the demand it serves: a 0.6-GPU pod holds a 7g slice, which counts as
    allocated, so ``mig`` looks tidy on unallocated GPUs while serving the least."""
    out: list[Row] = []
    for policy in POLICIES:
        mig, tenant, unsafe = (_get(rows, policy, s, "served_gpus") for s in SHARINGS)
        gap = unsafe - mig
        out.append(
            {
                "policy": policy,
                "served_mig": mig,
                "served_tenant": tenant,
                "served_unsafe": unsafe,
                "gap_gpus": round(gap, 1),
                "recovered": f"{100 * (tenant - mig) / gap:.0f}%" if abs(gap) > 1e-9 else "n/a",
                "unalloc_mig": _get(rows, policy, "mig", "unallocated_gpus"),
                "unalloc_tenant": _get(rows, policy, "tenant", "unallocated_gpus"),
                "unalloc_unsafe": _get(rows, policy, "unsafe", "unallocated_gpus"),
                "mig_rounding": _get(rows, policy, "mig", "rounding_gpus"),
            }
        )
    return out


def run_all(nodes_csv: Path, seeds: int, no_share_ratio: float, as_json: bool) -> None:
    report: dict[str, object] = {"seeds": seeds, "files": {}}
    started = perf_counter()
    for pods_csv in PODS_CSVS:
        rows = []
        for policy in POLICIES:
            for sharing in SHARINGS:
                rows.append(run_config(nodes_csv, pods_csv, policy, sharing, seeds, no_share_ratio=no_share_ratio))
                print(f"  {pods_csv.name} {policy} {sharing}: {perf_counter() - started:.0f}s", file=sys.stderr)
        optimum = OPTIMUM_COLUMNS if not no_share_ratio else ()  # the optimum lets every tenant share softly
        if optimum:
            beside_optimum(nodes_csv, pods_csv, seeds, rows)
        checks, cost = targets(rows), isolation_cost(rows)
        report["files"][pods_csv.name] = {"rows": rows, "targets": checks, "isolation_cost": cost}  # type: ignore[index]
        if not as_json:
            print(f"\n## {pods_csv.name} ({rows[0]['order']}, {seeds} seeds, {rows[0]['cluster_gpus']} GPUs)\n")
            print(table(rows, (*COLUMNS, *optimum, "decisions_per_s", "p50_ms", "p99_ms")))
            print("\nTargets (served: ladder vs the best of first-fit, best-fit, fgd; unallocated: 20% fewer than the")
            print("best of first-fit and best-fit):\n")
            print(table(checks, tuple(checks[0])))
            print("\nIsolation cost (served GPUs; share of the mig -> unsafe gap that tenant recovers):\n")
            print(table(cost, tuple(cost[0])))
    if as_json:
        print(json.dumps(report))
    else:
        print(f"\n(total {perf_counter() - started:.0f}s)")


def run_scale(policy: str, seeds: int, tenants: int, as_json: bool) -> None:
    rows: list[Row] = []
    for gpus in SIZES:
        runs: list[Run] = [scale_run(gpus, policy=policy, seed=seed, tenants=tenants) for seed in range(seeds)]
        row = summary(policy, "tenant", runs)
        row["gpus"] = gpus
        row["tenants"] = tenants
        rows.append(row)
    if as_json:
        print(json.dumps({"scale": rows}))
        return
    columns = ("gpus", "policy", "decisions", "decisions_per_s", "p50_ms", "p99_ms", "served_ratio", "unallocated_gpus")
    print(table(rows, columns))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.placement", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=Path, default=NODES_CSV)
    parser.add_argument("--pods", type=Path, default=PODS_CSVS[0])
    parser.add_argument("--policy", choices=POLICIES + EXTRA_POLICIES, default="ladder")
    parser.add_argument("--sharing", choices=SHARINGS, default="tenant")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--order",
        choices=("auto", "sampled", "file"),
        default="auto",
        help="auto: sampled with replacement, file order when the pods file has no times",
    )
    parser.add_argument(
        "--no-share-ratio",
        type=float,
        default=0.0,
        help="fraction of the 50 tenants whose policy forbids soft sharing (tenants 1..k)",
    )
    parser.add_argument("--tenants", type=int, default=50, help="tenants in the --scale stream")
    parser.add_argument(
        "--keep-whole",
        type=float,
        default=0.0,
        help="ladder: the share of each pool's GPUs kept wholly free for whole-GPU work (0: none)",
    )
    parser.add_argument(
        "--optimum",
        action="store_true",
        help="also first-fit and best-fit, the optimum (bench/optimum.py) and the share of the gap each closes",
    )
    parser.add_argument("--json", action="store_true")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--all", action="store_true", help="every policy x sharing mode on every pods file")
    mode.add_argument("--scale", action="store_true", help="decision latency on 1k, 10k and 50k-GPU fleets")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    if args.all:
        run_all(args.nodes, args.seeds, args.no_share_ratio, args.json)
    elif args.scale:
        run_scale(args.policy, args.seeds, args.tenants, args.json)
    else:
        if not 0.0 <= args.keep_whole < 1.0:
            parser.error("--keep-whole is a share of a pool's GPUs, from 0 up to 1")
        row = run_config(
            args.nodes,
            args.pods,
            args.policy,
            args.sharing,
            args.seeds,
            args.order,
            args.no_share_ratio,
            args.keep_whole,
        )
        optimum = OPTIMUM_COLUMNS if args.optimum and not args.no_share_ratio else ()
        if optimum:
            rivals = [
                run_config(args.nodes, args.pods, p, args.sharing, args.seeds, args.order)
                for p in UNALLOCATED_RIVALS
                if p != args.policy
            ]
            beside_optimum(args.nodes, args.pods, args.seeds, [row, *rivals], (args.sharing,), args.order)
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{row['pods_file']} ({row['order']}, {row['seeds']} seeds, {row['cluster_gpus']} GPUs)\n")
            print(table([row], (*COLUMNS, *optimum, "decisions_per_s", "p50_ms", "p99_ms")))
            print(f"\nroutes per run: {row['routes']}")


if __name__ == "__main__":
    main()
