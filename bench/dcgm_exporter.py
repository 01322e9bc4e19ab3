"""The simulated fleet's dcgm-exporter scraped as Prometheus scrapes it:
``python -m bench.dcgm_exporter [--nodes 64] [--rounds 5] [--json]``.

Sets up its own SQLite database (a temporary file, migrated) with ``--nodes`` nodes of eight H100s in one hall,
every GPU held by running work of several tenants, in the mix the exporter reports differently:
- a quarter of the nodes: 8-GPU jobs (whole GPUs, training);
- a quarter: MIG, each GPU cut in two ``3g.40gb`` slices of containers (per instance series, the board's apart);
- a quarter: soft shares, two MPS halves of one tenant's endpoints on each GPU (the shares' work added up);
- the rest: single-GPU containers with a command (busy).

**Timed** (server-side: Django's test client in this process, as ``make run`` serves the exporter): ``--rounds``
scrape rounds, each ``GET /simulated/dcgm/<host>/metrics`` for every node in turn as Prometheus's scrape of the
DaemonSet does, after one untimed round. Prints a node's scrape time (median, P90, maximum), a round's (every
node once: the exporter's cost per scrape interval), and a node's exposition (bytes, series); ``--json`` prints
one JSON object. Target: a round under a second, a tenth of ``make run``'s 10 s scrape interval. Exits 1 when a
scrape fails, a node reports a GPU short, or the target is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from typing import Any

from bench.sandbox import django_setup
from provisioning.domain.cold_start import nearest_rank

HALL = "bench-1a"
H100 = "H100-SXM-80GB"
TARGET_ROUND_MS = 1000.0


def fleet(nodes: int) -> list[str]:
    """The nodes, every GPU held by running work as the module says; returns the hostnames."""
    from django.test.utils import override_settings

    from core.actor import Actor
    from lifecycle.services.customers import tenant_signup
    from provisioning.drivers.base import allocations_reconcile
    from provisioning.models import GpuModel, Region
    from provisioning.services.fleet import fleet_load
    from provisioning.services.placing import AllocationSpec, allocation_request
    from tests.support.billing import price_pool
    from tests.support.fleet_documents import node

    actor = Actor.system("bench")
    hosts = [f"d{i:03d}" for i in range(nodes)]
    hall = {"code": HALL, "fenced_for": None, "nodes": [node(h, f"{HALL}/nvl-{i // 8}") for i, h in enumerate(hosts)]}
    fleet_load(
        document={"regions": [{"code": "bench", "name": "Bench", "jurisdiction": "EU", "halls": [hall]}]}, actor=actor
    )
    price_pool(GpuModel.objects.get(name=H100), Region.objects.get(code="bench"))
    tenants = [
        tenant_signup(slug=f"t{i}", name=f"T{i}", username=f"u{i}", email=f"u{i}@bench.example", password=None,
                      actor=actor)
        for i in range(4)
    ]  # fmt: skip
    quarter = nodes // 4
    share = AllocationSpec(rung="serverless", gpu_models=(H100,), share_mode="mps", share_milli=500)
    asks = (
        [(tenants[0], AllocationSpec(rung="job", gpu_models=(H100,), gpus=8))] * quarter
        + [(tenants[1], AllocationSpec(rung="container", gpu_models=(H100,), mig_profile="3g.40gb"))] * quarter * 16
        + [(tenants[2], share)] * quarter * 16
        + [(tenants[3], AllocationSpec(rung="container", gpu_models=(H100,), gpus=1))] * (nodes - 3 * quarter) * 8
    )
    for n, (tenant, spec) in enumerate(asks):
        allocation_request(tenant=tenant, name=f"w{n}", spec=spec, actor=actor)
    with override_settings(LADDER_SIM_PROVISION_SECONDS=0):
        allocations_reconcile()
    return hosts


def scrape_rounds(hosts: list[str], rounds: int) -> dict[str, Any]:
    from django.test import Client

    from provisioning.models import Gpu

    client = Client(HTTP_HOST="127.0.0.1")
    gpus = Gpu.objects.count()
    node_ms: list[float] = []
    round_ms: list[float] = []
    sizes: list[int] = []
    series = 0
    for r in range(rounds + 1):
        began_round = time.perf_counter()
        for host in hosts:
            began = time.perf_counter()
            answer = client.get(f"/simulated/dcgm/{host}/metrics")
            took = (time.perf_counter() - began) * 1000
            if answer.status_code != 200:
                sys.exit(f"{host}'s exporter answered {answer.status_code}")
            text = answer.content.decode()
            if r:
                node_ms.append(took)
                sizes.append(len(answer.content))
            if r == 0:
                series += sum(1 for line in text.splitlines() if line and not line.startswith("#"))
                if text.count("DCGM_FI_DEV_GPU_TEMP{") != 8:
                    sys.exit(f"{host}'s exporter does not report its eight GPUs")
        if r:
            round_ms.append((time.perf_counter() - began_round) * 1000)
    ordered = sorted(node_ms)
    return {
        "nodes": len(hosts),
        "gpus": gpus,
        "rounds": rounds,
        "node_median_ms": round(statistics.median(ordered), 2),
        "node_p90_ms": round(nearest_rank(ordered, 90), 2),
        "node_max_ms": round(ordered[-1], 2),
        "round_median_ms": round(statistics.median(round_ms), 1),
        "round_max_ms": round(max(round_ms), 1),
        "bytes_per_node": round(statistics.median(sizes)),
        "series_per_node": round(series / len(hosts)),
        "target_round_ms": TARGET_ROUND_MS,
        "target_met": statistics.median(round_ms) < TARGET_ROUND_MS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=64, help="8-GPU nodes (at least 4)")
    parser.add_argument("--rounds", type=int, default=5, help="timed scrape rounds")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.nodes < 4:
        parser.error("--nodes must be at least 4")
    with tempfile.TemporaryDirectory() as scratch:
        django_setup(f"{scratch}/bench.sqlite3", provisioner="simulated")
        hosts = fleet(args.nodes)
        found = scrape_rounds(hosts, args.rounds)
    if args.json:
        print(json.dumps(found))
    else:
        print(f"{found['nodes']} nodes, {found['gpus']} GPUs, {found['rounds']} rounds")
        print(
            f"  a node's scrape: median {found['node_median_ms']} ms, p90 {found['node_p90_ms']} ms, "
            f"max {found['node_max_ms']} ms ({found['bytes_per_node']} bytes, {found['series_per_node']} series)"
        )
        print(f"  a round of every node: median {found['round_median_ms']} ms, max {found['round_max_ms']} ms")
        print(f"  target (a round < {TARGET_ROUND_MS:.0f} ms): {'met' if found['target_met'] else 'MISSED'}")
    return 0 if found["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
