"""Gang decision latency on synthetic fleets with RDMA fabrics and a rolling upgrade half done.

Run from the repository root (pure Python over ``provisioning.domain.placement``, no Django)::

    python -m bench.gangs [--gpus 10000 50000] [--requests 400] [--seed 0] [--json]

Fleet: ``gpus / 8`` nodes of ``H100-SXM-80GB`` in the four halls of ``bench.trace.HALLS`` (node ``i`` in hall
``i % 4``), NVLink domains of 8 nodes; with ``mixed`` (the default rows show both), each domain is cabled to one of
four RDMA fabrics and one node in ten (seeded) still runs the previous driver, so gangs have many (fabric, version
set) groups to choose from. Stream (seeded): gangs of 2, 4 or 8 members of 2, 4 or 8 GPUs, half of them with
``topology="nvlink"``, from a uniform tenant among 50, placed and never removed. Latency is ``perf_counter``
around ``PlacementEngine.place`` alone; refusals count (a full fleet refuses in the same time it places).
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from time import perf_counter

from bench.trace import HALLS, NODES_PER_DOMAIN, VERSIONS
from provisioning.domain.placement.decision import Placement, Request
from provisioning.domain.placement.engine import POLICIES, PlacementEngine
from provisioning.domain.placement.isolation import TenantPolicy
from provisioning.domain.placement.state import FleetState
from provisioning.domain.rungs import Rung

H100 = "H100-SXM-80GB"
PREVIOUS = ("570.172.08", *VERSIONS[1:])  # the driver before the upgrade
FABRICS = 4


def gang_fleet(gpus: int, *, mixed: bool, seed: int = 1) -> FleetState:
    state = FleetState()
    for info in HALLS:
        state.add_hall(info)
    rng = random.Random(seed)
    for i in range(gpus // 8):
        hall = HALLS[i % len(HALLS)].code
        domain = i // len(HALLS) // NODES_PER_DOMAIN
        behind = mixed and rng.random() < 0.1
        state.add_node(
            id=i + 1,
            hostname=f"{hall}-h100-{i}",
            hall=hall,
            model=H100,
            gpu_uuids=[f"GPU-{i + 1}-{g}" for g in range(8)],
            nvlink_domain=f"{hall}/nvl-{domain}",
            versions=PREVIOUS if behind else VERSIONS,
            fabric=f"{hall}/ib-{domain % FABRICS}" if mixed else "",
        )
    return state


@dataclass
class Row:
    gpus: int
    policy: str
    mixed: bool
    topology: str
    decisions: int
    placed: int
    p50_ms: float
    p99_ms: float


def gang_run(gpus: int, *, policy: str, mixed: bool, requests: int, seed: int = 0) -> list[Row]:
    engine = PlacementEngine(gang_fleet(gpus, mixed=mixed), policy=policy)
    rng = random.Random(seed)
    times: dict[str, list[float]] = {"none": [], "nvlink": []}
    placed = {"none": 0, "nvlink": 0}
    for _ in range(requests):
        topology = rng.choice([None, "nvlink"])
        request = Request(
            rung=Rung.JOB,
            models=(H100,),
            gpus=rng.choice([2, 4, 8]),
            gang_size=rng.choice([2, 4, 8]),
            topology=topology,
        )
        tenant = TenantPolicy(tenant_id=rng.randint(1, 50))
        start = perf_counter()
        result = engine.place(request, tenant)
        key = topology or "none"
        times[key].append(perf_counter() - start)
        placed[key] += isinstance(result, Placement)
    rows = []
    for key, spent in times.items():
        spent.sort()
        if spent:
            p50, p99 = spent[len(spent) // 2], spent[min(len(spent) - 1, int(len(spent) * 0.99))]
            rows.append(Row(gpus, policy, mixed, key, len(spent), placed[key], p50 * 1e3, p99 * 1e3))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [
        row
        for gpus in args.gpus
        for policy in POLICIES
        for mixed in (False, True)
        for row in gang_run(gpus, policy=policy, mixed=mixed, requests=args.requests, seed=args.seed)
    ]
    if args.json:
        print(json.dumps({"gangs": [vars(r) for r in rows]}))
        return
    print("| GPUs | policy | fabrics and versions | topology | decisions | placed | p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        kind = "4 fabrics, 10% behind" if r.mixed else "one group"
        print(
            f"| {r.gpus:,} | {r.policy} | {kind} | {r.topology} | {r.decisions} | {r.placed} "
            f"| {r.p50_ms:.2f} | {r.p99_ms:.2f} |"
        )


if __name__ == "__main__":
    main()
