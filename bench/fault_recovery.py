"""Detection-to-restart on the fake Kubernetes API server: ``python -m bench.fault_recovery [--nodes 64]``.

Sets up its own SQLite database (a temporary file, migrated), a fleet of ``--nodes`` 8-GPU H100 hosts in one hall
whose cluster is the fake API server (``tests/fakes/kubernetes.py``, spoken to over HTTP through the official
client), every node Ready, and ``--busy`` single-GPU containers running across it (reconciliation looks at each).
Each trial places a 2x4-GPU gang, runs it, then writes a fatal GPU health condition (``GpuNvlinkWatch``) onto one
of its hosts and drives reconciliation back to back, as the beat task would with no wait between runs, doing
what the cluster's controllers do between two of them (``tick``: foreground deletion; the Job controller and
Kueue starting the new gang at once). Measured from the moment the condition is written:

- ``detected``: the node quarantined and the gang placed again (``restarting``);
- ``applied``: the new Job applied on the new nodes;
- ``running``: the allocation ``running`` again.

Also how many reconciles each milestone took: on a deployment, each reconcile but the first waits for the next
beat (``LADDER_RECONCILE_EVERY_SECONDS``, 5 s), which dominates. Prints medians and maxima; ``--json`` prints one
JSON object. Exits 1 when a trial does not recover.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bench.sandbox import HALL, TOKEN, django_setup, hall_load

MILESTONES = ("detected", "applied", "running")


def fleet(server: Any, nodes: int) -> Any:
    """``nodes`` 8-GPU H100 hosts in NVLink domains of 16, every host a Ready Node; the tenant."""
    from core.actor import Actor
    from lifecycle.services.customers import tenant_signup

    actor = Actor.system("bench")
    versions = {"driver": "580.65", "cuda": "13.0", "nccl": "2.27", "firmware": "96.00"}
    entries = [
        {
            "hostname": f"b{i:04d}",
            "gpu_model": "H100-SXM-80GB",
            "gpu_count": 8,
            "nvlink_domain": f"{HALL}/nvl-{i // 16}",
            "cc_capable": False,
            "versions": versions,
        }
        for i in range(nodes)
    ]
    hall_load(server, entries, actor)
    return tenant_signup(
        slug="bench", name="Bench", username="bench", email="b@bench.example", password=None, actor=actor
    )


def busy(server: Any, tenant: Any, count: int) -> None:
    """Single-GPU containers running beside the gangs: work reconciliation reads on every run."""
    from provisioning.drivers.kubernetes.driver import KubernetesProvisioner
    from tests.support.kubernetes import place

    driver = KubernetesProvisioner()
    for _ in range(count):
        allocation = place(tenant, rung="container", gpus=1)
        driver.provision(allocation.pk)
        ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        server.set_status("v1", "pods", f"ldr-{allocation.pk}", "ladder-bench", ready)
        driver.status(allocation.pk)


def trial(server: Any, tenant: Any) -> dict[str, Any]:
    from core.actor import Actor
    from provisioning.domain.states import AllocationState as S
    from provisioning.drivers.base import allocations_reconcile
    from provisioning.drivers.kubernetes.driver import KubernetesProvisioner
    from provisioning.models import Allocation, Node
    from provisioning.services.fleet import node_undrain
    from provisioning.services.stopping import allocation_stop
    from tests.support.kubernetes import condition, gang_up, hosts_of, pinned, place

    actor = Actor.system("bench")

    gang = place(tenant, rung="job", gpus=8, gang_size=2, topology="nvlink")
    KubernetesProvisioner().provision(gang.pk)
    gang_up(server, gang)
    allocations_reconcile()
    gang.refresh_from_db()
    assert gang.state == S.RUNNING, gang.state
    failed = sorted(hosts_of(gang))[0]
    bad = {"type": "GpuNvlinkWatch", "status": "True", "reason": "bench", "message": "NVLink down"}
    condition(server, failed, {**bad, "lastTransitionTime": datetime.now(UTC).isoformat()})
    start = time.perf_counter()
    seen: dict[str, float] = {}
    runs: dict[str, int] = {}
    for run in range(1, 20):
        allocations_reconcile()
        gang = Allocation.objects.get(pk=gang.pk)
        now = time.perf_counter() - start
        if "detected" not in seen and gang.state in (S.RESTARTING, S.RUNNING) and failed not in hosts_of(gang):
            seen["detected"], runs["detected"] = now, run
        live = server.get_object("batch/v1", "Job", f"ldr-{gang.pk}", "ladder-bench")
        fresh = live is not None and not live["metadata"].get("deletionTimestamp") and failed not in pinned(live)
        if "detected" in seen and "applied" not in seen and fresh:
            seen["applied"], runs["applied"] = now, run
            gang_up(server, gang)  # the Job controller and Kueue, at once
        if gang.state == S.RUNNING and "applied" in seen:
            seen["running"], runs["running"] = now, run
            break
        server.tick()  # the garbage collector finishes the old Job's foreground deletion
    if "running" not in seen:
        raise SystemExit(f"allocation {gang.pk} did not recover: {gang.state}, {sorted(seen)}")
    # Leave the fleet as it was: the gang stops, the node is returned.
    allocation_stop(allocation=gang, actor=actor)
    KubernetesProvisioner().release(gang.pk)
    server.tick()
    allocations_reconcile()
    condition(server, failed, {**bad, "status": "False"})
    node_undrain(node=Node.objects.get(hostname=failed), actor=actor, reason="bench")
    return {"seconds": seen, "reconciles": runs}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=64, help="8-GPU hosts in the cluster (default 64)")
    parser.add_argument("--busy", type=int, default=64, help="running single-GPU containers beside (default 64)")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        django_setup(os.path.join(scratch, "bench.sqlite3"), provisioner="kubernetes")
        from tests.fakes.kubernetes import K8sServer

        server = K8sServer(token=TOKEN).start()
        try:
            tenant = fleet(server, args.nodes)
            busy(server, tenant, args.busy)
            results = [trial(server, tenant) for _ in range(args.trials)]
        finally:
            server.stop()

    summary: dict[str, Any] = {"nodes": args.nodes, "busy": args.busy, "trials": args.trials}
    for milestone in MILESTONES:
        values = [r["seconds"][milestone] * 1000 for r in results]
        summary[milestone] = {
            "median_ms": round(statistics.median(values), 1),
            "max_ms": round(max(values), 1),
            "reconciles": max(r["reconciles"][milestone] for r in results),
        }
    if args.json:
        print(json.dumps(summary))
        return
    print(
        f"fault recovery on the fake API server: {args.nodes} nodes, {args.busy} busy containers, {args.trials} trials"
    )
    for milestone in MILESTONES:
        row = summary[milestone]
        print(
            f"  condition -> {milestone:<8} median {row['median_ms']:8.1f} ms   max {row['max_ms']:8.1f} ms"
            f"   reconciles {row['reconciles']}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
