"""Cold starts of a large model, downloaded vs read from a model cache volume with the image pulled in advance:
``python -m bench.cold_start_cache [--wakes 200] [--model-gb 20] [--hosts 16] [--kept 0.5] [--seed 1] [--json]``.

On its own SQLite database (a temporary file, migrated) with the simulated provisioner, a hall of ``--hosts`` 8-GPU
H100 hosts, and two 1-GPU serverless endpoints of one tenant serving a ``--model-gb`` model from the same image:

- ``downloaded``: the workload names the model alone (its weights come from the hub at each start), and nothing is
  pulled in advance (``LADDER_SERVERLESS_PREPULL`` off);
- ``cached``: the model is read from a model cache volume the workload mounts read-only, and the image is pulled in
  advance when the endpoint goes idle (``LADDER_SERVERLESS_PREPULL`` on: the hosts it ran on and the engine's choice).

Each of ``--wakes`` wakes runs through the product as on ``make run``, the clock moved instead of waited for: the
endpoint goes idle through the reconcile loop (idle window 0; its image pulled in advance when that is on); another
tenant's work comes and goes (each of its containers stops with even odds, then new ones of 1, 2, 4 or 8 GPUs fill
the hall to between 60 and 90 per cent), so the endpoint's next replica is not always placed where it ran; a host
that ran the endpoint before it went idle still holds the image with odds ``--kept`` (the kubelet's image garbage
collection under other tenants' images), while a host it was pulled onto in advance keeps it (the pre-pull pod uses
it); the endpoint is woken (``endpoint_wake``) and provisioned, and the reconcile loop moves it to ``running`` once
its modelled cold start is over (``provisioning.domain.cold_start``), which writes the wake's ``EndpointColdStart``.

Per wake, the conditions the simulated fleet's settings stand for are drawn (seeded): the device wait is 2 s plus an
exponential wait of mean 1 s (the scheduler, the device claim); the registry's and the hub's bandwidth are 0.5 and
0.25 GB/s times a log-normal factor (sigma 0.3: links shared with other traffic), the volume's 2 GB/s times one of
sigma 0.15; the init is 1 s; the image 8 GB. The figures are the product's own: P50/P90/P99 by nearest rank of the
rows the wakes wrote, as ``GET /api/v1/allocations/{id}/cold-starts`` gives them (``cold_start_figures``), with the
share of wakes that found the image on their host. The target: the cached endpoint's P90 at most a third of the
downloaded one's. Prints a table (``--json``: one JSON object); exits 1 when a wake fails or the target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.sandbox import django_setup

HALL = "bench-1a"
IMAGE = "ghcr.io/bench/llm-server:1.0"
TARGET = 3.0  # the downloaded P90 over the cached one, at least
BASE = {"device": 2.0, "registry": 0.5, "hub": 0.25, "volume": 2.0, "init": 1.0, "image_gb": 8.0}


class WakeFailed(Exception):
    pass


def hall(hosts: int) -> None:
    """One hall of ``hosts`` 8-GPU H100 hosts, every shape it offers priced, its storage too."""
    from core.actor import Actor
    from provisioning.models import GpuModel, Region
    from provisioning.services.fleet import fleet_load
    from tests.support.billing import price_pool, price_storage

    versions = {"driver": "580.65", "cuda": "13.0", "nccl": "2.27", "firmware": "96.00"}
    nodes = [
        {
            "hostname": f"h{i:03d}",
            "gpu_model": "H100-SXM-80GB",
            "gpu_count": 8,
            "nvlink_domain": f"{HALL}/nvl-{i // 8}",
            "cc_capable": False,
            "versions": versions,
        }
        for i in range(hosts)
    ]
    halls = [{"code": HALL, "fenced_for": None, "nodes": nodes}]
    document = {"regions": [{"code": "bench", "name": "Bench", "jurisdiction": "EU", "halls": halls}]}
    fleet_load(document=document, actor=Actor.system("bench"))
    region = Region.objects.get(code="bench")
    price_pool(GpuModel.objects.get(name="H100-SXM-80GB"), region)
    price_storage(region)


class Bench:
    def __init__(self, args: argparse.Namespace, clock: Any) -> None:
        from core.actor import Actor
        from lifecycle.services.customers import tenant_signup

        self.args = args
        self.clock = clock
        self.rng = random.Random(args.seed)
        self.actor = Actor.system("bench")
        self.tenant = tenant_signup(
            slug="bench", name="Bench", username="bench", email="b@bench.example", password=None, actor=self.actor
        )
        self.others = tenant_signup(
            slug="others", name="Others", username="others", email="o@others.example", password=None, actor=self.actor
        )
        self.busy: list[Any] = []

    def now(self) -> datetime:
        from django.utils import timezone

        return timezone.now()

    def later(self, seconds: float) -> None:
        self.clock.move_to(self.now() + timedelta(seconds=seconds), tick=False)

    def reconcile(self) -> None:
        from provisioning.drivers.base import allocations_reconcile

        allocations_reconcile()

    def volume(self) -> int:
        from lifecycle.services.volumes import volume_create
        from provisioning.models import Region

        region = Region.objects.get(code="bench")
        made = volume_create(
            tenant=self.tenant, name="models", region=region, kind="filesystem", size_gb=100, actor=self.actor
        )
        made.refresh_from_db()
        if made.state != "available":
            raise WakeFailed(f"the model cache volume is {made.state}")
        return int(made.pk)

    def endpoint(self, name: str, model: dict[str, Any], volume: int | None) -> Any:
        from lifecycle.services.customers import allocation_request
        from provisioning.domain.workloads import Workload
        from provisioning.services.placing import AllocationSpec

        data: dict[str, Any] = {"image": IMAGE, "model": model}
        if volume is not None:
            data["volumes"] = [{"volume": volume, "mount_path": "/models", "read_only": True}]
        spec = AllocationSpec(rung="serverless", gpu_models=("H100-SXM-80GB",), gpus=1)
        made = allocation_request(
            tenant=self.tenant, name=name, spec=spec, actor=self.actor, workload=Workload.from_json(data)
        )
        self.later(60)  # past its first start
        self.reconcile()
        made.refresh_from_db()
        if made.state != "running":
            raise WakeFailed(f"{name} did not start: {made.state}")
        return made

    def churn(self) -> None:
        """The other tenant's work: each container stops with even odds, then new ones fill the hall again."""
        from django.db.models import Sum

        from lifecycle.services.customers import allocation_request
        from provisioning.domain.states import HOLDS_DEVICES
        from provisioning.models import Allocation, Node
        from provisioning.services.placing import AllocationSpec, PlacementRefused
        from provisioning.services.stopping import allocation_stop

        for allocation in list(self.busy):
            if self.rng.random() < self.args.churn:
                allocation_stop(allocation=allocation, actor=self.actor)
                self.busy.remove(allocation)
        self.reconcile()  # the stopped ones release their GPUs
        gpus = Node.objects.aggregate(total=Sum("gpu_count"))["total"] or 0
        target = gpus * self.rng.uniform(0.7, 0.85)
        for _ in range(4 * gpus):
            held = Allocation.objects.filter(state__in=HOLDS_DEVICES).aggregate(milli=Sum("quota_milli"))["milli"]
            if (held or 0) / 1000 >= target:
                break
            spec = AllocationSpec(rung="container", gpu_models=("H100-SXM-80GB",), gpus=self.rng.choice((1, 2, 4, 8)))
            try:
                placed = allocation_request(tenant=self.others, name="work", spec=spec, actor=self.actor)
            except PlacementRefused:
                continue
            self.busy.append(placed)

    def forget(self, endpoint: Any, ran_on: Sequence[str], pulled_ahead: set[str]) -> None:
        """While it is idle, a host it ran on loses its image with odds 1 - ``--kept``; one it was pulled onto in
        advance keeps it."""
        from provisioning.models import NodeImage

        for row in NodeImage.objects.filter(image=IMAGE).select_related("node"):
            if row.node.hostname not in pulled_ahead and self.rng.random() >= self.args.kept:
                row.delete()

    def conditions(self) -> None:
        """This wake's device wait and bandwidths, as the simulated fleet's settings."""
        from django.conf import settings

        def shared(sigma: float) -> float:
            return self.rng.lognormvariate(0, sigma)

        settings.LADDER_SIM_PROVISION_SECONDS = BASE["device"] + self.rng.expovariate(1.0)
        settings.LADDER_SIM_REGISTRY_GB_PER_SECOND = BASE["registry"] * shared(0.3)
        settings.LADDER_SIM_HUB_GB_PER_SECOND = BASE["hub"] * shared(0.3)
        settings.LADDER_SIM_VOLUME_GB_PER_SECOND = BASE["volume"] * shared(0.15)
        settings.LADDER_SIM_INIT_SECONDS = BASE["init"]
        settings.LADDER_SIM_IMAGE_GB = BASE["image_gb"]

    def wake(self, endpoint: Any, prepull: bool) -> None:
        from django.conf import settings

        from provisioning.drivers.base import provisioner
        from provisioning.models import EndpointColdStart
        from provisioning.services.cold_starts import active_hosts, prepull_hosts
        from provisioning.services.endpoints import endpoint_wake

        settings.LADDER_SERVERLESS_PREPULL = prepull
        ran_on = active_hosts(endpoint)
        settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
        self.reconcile()
        settings.LADDER_SERVERLESS_IDLE_SECONDS = 300
        endpoint.refresh_from_db()
        if endpoint.state != "idle":
            raise WakeFailed(f"{endpoint.name} did not go idle: {endpoint.state}")
        ahead = set(prepull_hosts(allocation=endpoint, last_hosts=ran_on)) if prepull else set()
        self.forget(endpoint, ran_on, ahead)
        self.churn()
        self.later(600)  # ten minutes asleep
        self.conditions()
        before = EndpointColdStart.objects.filter(allocation=endpoint).count()
        if not endpoint_wake(allocation=endpoint, actor=self.actor):
            raise WakeFailed(f"{endpoint.name} was not woken")
        provisioner().provision(endpoint.pk)  # what its queued task does (inline, it did already)
        self.later(3600)  # past any modelled start
        self.reconcile()
        endpoint.refresh_from_db()
        if endpoint.state != "running" or EndpointColdStart.objects.filter(allocation=endpoint).count() != before + 1:
            raise WakeFailed(f"{endpoint.name} did not run after its wake: {endpoint.state}")
        self.later(60)


def stop(bench: Bench, endpoint: Any) -> None:
    """The first endpoint stops once its wakes are done; the other tenant's work stays as it was."""
    from provisioning.services.stopping import allocation_stop

    allocation_stop(allocation=endpoint, actor=bench.actor)
    bench.reconcile()


def in_ms(found: Any) -> dict[str, int | None]:
    return {"count": found.count, "p50_ms": found.p50, "p90_ms": found.p90, "p99_ms": found.p99}


def figures(endpoint: Any) -> dict[str, Any]:
    """What the product publishes of the endpoint's wakes, and how many found the image on their host."""
    from provisioning.models import EndpointColdStart
    from provisioning.selectors import cold_start_figures

    found = cold_start_figures(endpoint)
    rows = EndpointColdStart.objects.filter(allocation=endpoint)
    cached = rows.filter(image_cached=True).count()
    return {
        "wakes": found["count"],
        "total": in_ms(found["total"]),
        **{phase: in_ms(value) for phase, value in found["phases"].items()},
        "image_cached_share": round(cached / max(rows.count(), 1), 3),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["LADDER_SIM_VOLUME_DIR"] = os.path.join(scratch, "volumes")
        django_setup(os.path.join(scratch, "bench.sqlite3"), provisioner="simulated")
        import time_machine

        with time_machine.travel(datetime(2030, 1, 7, 9, 0, tzinfo=UTC), tick=False) as clock:
            hall(args.hosts)
            bench = Bench(args, clock)
            # One after the other: the reconcile that puts one to sleep (idle window 0) would put both.
            downloaded = bench.endpoint("downloaded", {"size_gb": args.model_gb}, None)
            for _ in range(args.wakes):
                bench.wake(downloaded, prepull=False)
            stop(bench, downloaded)
            cache = bench.volume()
            cached = bench.endpoint("cached", {"size_gb": args.model_gb, "volume": cache}, cache)
            for _ in range(args.wakes):
                bench.wake(cached, prepull=True)
            result = {"downloaded": figures(downloaded), "cached": figures(cached)}
    slow, fast = result["downloaded"]["total"]["p90_ms"], result["cached"]["total"]["p90_ms"]
    ratio = round(slow / fast, 2) if slow and fast else None
    return {
        "wakes": args.wakes,
        "model_gb": args.model_gb,
        "hosts": args.hosts,
        "kept": args.kept,
        "churn": args.churn,
        "seed": args.seed,
        **result,
        "p90_ratio": ratio,
        "target": TARGET,
        "met": ratio is not None and ratio >= TARGET,
    }


def seconds(ms: int | None) -> str:
    return "—" if ms is None else f"{ms / 1000:.1f} s"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wakes", type=int, default=200, help="wakes of each endpoint (default 200)")
    parser.add_argument("--model-gb", type=float, default=20.0, help="the model's size (default 20 GB)")
    parser.add_argument("--hosts", type=int, default=16, help="8-GPU hosts in the hall (default 16)")
    parser.add_argument("--kept", type=float, default=0.5, help="odds a host it ran on still holds the image")
    parser.add_argument(
        "--churn", type=float, default=0.25, help="odds each of the other tenant's containers stops during a sleep"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        summary = run(args)
    except WakeFailed as failure:
        raise SystemExit(f"cold start cache benchmark failed: {failure}") from None
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"cold starts of a {args.model_gb:g} GB model, {args.wakes} wakes each, {args.hosts} hosts, "
            f"a host keeps an image it ran with odds {args.kept:g}, churn {args.churn:g} (seed {args.seed})"
        )
        print(f"  {'':<11} {'P50':>8} {'P90':>8} {'P99':>8}   image on the host")
        for name in ("downloaded", "cached"):
            row = summary[name]
            total = row["total"]
            cells = "".join(f"{seconds(total[p]):>9}" for p in ("p50_ms", "p90_ms", "p99_ms"))
            print(f"  {name:<11}{cells}   {row['image_cached_share']:.0%}")
            for phase in ("device_wait", "image_pull", "model_load"):
                cells = "".join(f"{seconds(row[phase][p]):>9}" for p in ("p50_ms", "p90_ms", "p99_ms"))
                print(f"    {phase:<9}{cells}")
        verdict = "met" if summary["met"] else "MISSED"
        print(f"  P90 downloaded / cached: {summary['p90_ratio']}x (target {TARGET:g}x: {verdict})")
    if not summary["met"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
