"""Decision latency on synthetic fleets: 8-GPU H100 nodes, a mixed stream of whole, MIG and fractional requests.

Fleet: ``gpus / 8`` nodes of ``H100-SXM-80GB``, spread over the four halls of ``bench.trace.HALLS`` (node ``i`` in
hall ``i % 4``), NVLink domains of 8 nodes. Stream (seeded): 40% whole-GPU requests of 1, 2, 4 or 8 GPUs
(weights 4:2:1:1), 30% MIG slices (1g, 2g, 3g, 4g, 7g, weights 3:2:2:1:1), 30% fractional shares of 100..990
milli served as in the ``tenant`` sharing mode; each request from a uniform tenant among ``tenants``. Requests
are placed, never removed, until the offered demand reaches ``fill`` (90%) of the fleet's GPUs.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from bench.baselines import make_engine
from bench.replay import Plan, Planner, Run, apply, measure
from bench.trace import HALLS, NODES_PER_DOMAIN, VERSIONS
from provisioning.domain.placement.mig import MigKind
from provisioning.domain.placement.state import FULL_SHARE, FleetState

H100 = "H100-SXM-80GB"
SIZES = (1_000, 10_000, 50_000)
WHOLE = (1, 1, 1, 1, 2, 2, 4, 8)
SLICES = (MigKind.G1, MigKind.G1, MigKind.G1, MigKind.G2, MigKind.G2, MigKind.G3, MigKind.G3, MigKind.G4, MigKind.G7)


def synthetic_fleet(gpus: int) -> FleetState:
    state = FleetState()
    for info in HALLS:
        state.add_hall(info)
    for i in range(gpus // 8):
        hall = HALLS[i % len(HALLS)].code
        state.add_node(
            id=i + 1,
            hostname=f"{hall}-h100-{i}",
            hall=hall,
            model=H100,
            gpu_uuids=[f"GPU-{i + 1}-{g}" for g in range(8)],
            nvlink_domain=f"{hall}/nvl-{i // len(HALLS) // NODES_PER_DOMAIN}",
            versions=VERSIONS,
        )
    return state


def stream(planner: Planner, rng: random.Random, tenants: int) -> Iterator[Plan]:
    models = (H100,)
    while True:
        tenant = rng.randint(1, tenants)
        roll = rng.random()
        if roll < 0.4:
            yield planner.whole(models, rng.choice(WHOLE), tenant)
        elif roll < 0.7:
            yield planner.mig(H100, rng.choice(SLICES), tenant)
        else:
            yield planner.fractional(models, rng.randrange(100, 1000, 10), tenant)


def scale_run(gpus: int, *, policy: str = "ladder", seed: int = 0, tenants: int = 50, fill: float = 0.9) -> Run:
    state = synthetic_fleet(gpus)
    engine = make_engine(policy, state, seed)
    planner = Planner("tenant", tenants=tenants)
    run = Run(cluster_gpus=gpus)
    target = fill * gpus * FULL_SHARE
    for plan in stream(planner, random.Random(seed), tenants):
        if run.offered_milli >= target:
            break
        apply(engine, plan, run)
    measure(state, run)
    return run
