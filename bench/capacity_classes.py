"""What capacity classes are worth, on the engine alone: ``python -m bench.capacity_classes [--gpus 1024]
[--hours 168] [--seeds 3] [--json]``.

A discrete-event replay of a synthetic week on a synthetic fleet (``bench.scale.synthetic_fleet``: 8-GPU H100
nodes over four halls), pure Python over ``provisioning.domain.placement``: no Django, no database.

**The demand** (seeded; every job whole GPUs on one node, 1, 2, 4 or 8 with weights 3:2:1:1, running an
exponential time of mean ``--mean-hours``):
- four tenants each hold a reservation of ``--reserved`` / 4 of the fleet's GPUs (in whole 8-GPU nodes) in one
  hall, and use about
  ``--reserved-use`` of it on average: reserved work (beyond its room, the same job asks again on demand);
- other tenants' on-demand work, arriving for a mean demand of ``--on-demand`` of the fleet;
- spot work for a mean demand of ``--spot`` of the fleet: jobs that checkpoint every ``--checkpoint-minutes``,
  wait in a queue when they do not fit (retried, oldest first, whenever something leaves) and, when preempted, lose
  the work since their last checkpoint and go back to the queue (``on_preemption: requeue``).

**With ``--trace POD_CSV``** (the public Alibaba GPU trace, ``bench/trace.py``; ``make bench-data`` fetches it), the
on-demand and spot jobs are the trace's whole-GPU pods: each job's GPU count is drawn from the pods of its class,
best-effort pods (qos ``BE``) as spot and the rest (``LS``, ``Burstable``, ``Guaranteed``) as on-demand. Its times
are not replayed: the trace is a snapshot whose pods mostly live side by side until its end (at most 58 whole GPUs
at once on its 6,212, lives from a minute to 150 days), which loads no fleet and reaches no steady state in a week;
the jobs arrive and run as the synthetic ones do, at the same shares of the fleet. The reserved streams stay
synthetic (the trace has no reservations).

**With classes**: reserved and on-demand work is placed by ``place_preempting`` with every running spot job as a
candidate (its cost: the work since its last checkpoint); spot work by ``place``. **On-demand only**, the same
arrivals: no reservations (their tenants' work is on-demand), no spot sold.

**Revenue** per hour of a fleet GPU, in units of the on-demand price of a GPU-hour: on-demand 1, spot ``--spot-price``
(0.4), a reservation ``--reserved-price`` (0.6) for each of its GPUs for every hour whether used or not. Billing
stops at the notice, which is ignored here (30 s against hours).

Prints, per run, the mean over the seeds: reserved work refused for capacity while its reservation had room (the
violations: target 0), reserved and on-demand work served, spot jobs completed, preemptions and the goodput each
lost (mean and most: target at most the checkpoint interval), the fleet's utilisation and the revenue per GPU-hour
(target: both above the on-demand-only run). ``--json`` prints one JSON object. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import csv
import heapq
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from bench.scale import synthetic_fleet
from provisioning.domain.capacity_classes import CapacityClass
from provisioning.domain.cold_start import nearest_rank
from provisioning.domain.placement.decision import Placement, Refused, Request
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.isolation import Reason, TenantPolicy
from provisioning.domain.placement.preemption import Preempting, Victim
from provisioning.domain.placement.state import Reservation
from provisioning.domain.rungs import Rung

H100 = "H100-SXM-80GB"
SIZES = (1, 1, 1, 2, 2, 4, 8)
OWNERS = (1, 2, 3, 4)  # the tenants holding reservations, one per hall
OTHERS = range(10, 60)
ON_DEMAND, SPOT, RESERVED = CapacityClass.ON_DEMAND, CapacityClass.SPOT, CapacityClass.RESERVED


@dataclass
class Job:
    id: int
    tenant: int
    klass: CapacityClass
    gpus: int
    work: float  # seconds of work left
    arrived: float
    reservation: int | None = None
    started: float = 0.0  # when it last started running
    checkpointed: float = 0.0  # the work done at its last checkpoint, counted from ``started``
    placement: Placement | None = None
    generation: int = 0  # bumped when it stops early, so its planned end is ignored


@dataclass
class Tally:
    reserved_asked: int = 0
    reserved_served: int = 0
    reserved_beyond: int = 0  # beyond the reservation's room, served on demand instead
    violations: int = 0
    on_demand_asked: int = 0
    on_demand_served: int = 0
    spot_asked: int = 0
    spot_done: int = 0
    preemptions: int = 0
    lost: list[float] = field(default_factory=list)  # goodput lost per preemption, seconds
    preempting_ms: list[float] = field(default_factory=list)  # how long each decision that preempted took
    gpu_seconds: dict[str, float] = field(default_factory=dict)  # held, by what it is billed as


def trace_mix(path: str) -> dict[CapacityClass, list[int]]:
    """The GPU counts of an Alibaba trace file's whole-GPU pods, by class: best-effort (``BE``) pods as spot, the
    rest as on-demand (fractional pods share a GPU softly, which is never sold as spot: left out)."""
    mix: dict[CapacityClass, list[int]] = {ON_DEMAND: [], SPOT: []}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            gpus, milli = int(row["num_gpu"]), int(row["gpu_milli"])
            if gpus >= 1 and milli >= 1000:
                mix[SPOT if row["qos"] == "BE" else ON_DEMAND].append(min(gpus, 8))
    return mix


def arrivals(rng: random.Random, args: argparse.Namespace, gpus: int, classes: bool) -> list[Job]:
    """Every job of the week, in arrival order (the same for both runs of a seed: ``classes`` only renames)."""
    horizon = args.hours * 3600
    mean_s = args.mean_hours * 3600
    jobs: list[Job] = []
    mix = trace_mix(args.trace) if args.trace else None

    def stream(rate_gpus: float, make: Any, sizes: list[int] | None = None) -> None:
        sizes = sizes or list(SIZES)
        rate = rate_gpus / (statistics.mean(sizes) * mean_s)  # arrivals per second for that mean concurrent demand
        t = rng.expovariate(rate) if rate else horizon
        while t < horizon:
            jobs.append(make(t, rng.choice(sizes), rng.expovariate(1 / mean_s)))
            t += rng.expovariate(rate)

    per_owner = gpus * args.reserved / len(OWNERS)
    for n, owner in enumerate(OWNERS):
        stream(
            per_owner * args.reserved_use,
            lambda t, size, work, owner=owner, n=n: Job(
                0, owner, RESERVED if classes else ON_DEMAND, size, work, t, n + 1 if classes else None
            ),
        )
    stream(
        gpus * args.on_demand,
        lambda t, size, work: Job(0, rng.choice(OTHERS), ON_DEMAND, size, work, t),
        mix[ON_DEMAND] if mix else None,
    )
    stream(
        gpus * args.spot,
        lambda t, size, work: Job(0, rng.choice(OTHERS), SPOT, size, work, t),
        mix[SPOT] if mix else None,
    )
    jobs.sort(key=lambda j: j.arrived)
    for i, job in enumerate(jobs):
        job.id = i
    return jobs


def reservation_gpus(gpus: int, args: argparse.Namespace) -> int:
    """Each owner's reservation: its share of the fleet in whole 8-GPU nodes, as clouds reserve them."""
    return max(1, round(gpus * args.reserved / len(OWNERS) / 8)) * 8


class Replay:
    def __init__(self, args: argparse.Namespace, gpus: int, seed: int, classes: bool) -> None:
        self.args, self.classes = args, classes
        state = synthetic_fleet(gpus)
        if classes:
            halls = sorted({n.hall.code for n in state.nodes.values()})
            for n, owner in enumerate(OWNERS):
                state.reservations[n + 1] = Reservation(n + 1, owner, H100, halls[n % len(halls)],
                                                        reservation_gpus(gpus, args))  # fmt: skip
        self.engine = PlacementEngine(state, args.policy)
        self.gpus = gpus
        self.jobs = arrivals(random.Random(seed), args, gpus, classes)
        if not classes:
            self.jobs = [j for j in self.jobs if j.klass is not SPOT]  # spot is not sold
        self.events: list[tuple[float, int, str, int, int]] = []
        self.queue: list[Job] = []  # spot jobs waiting, oldest first
        self.running: dict[int, Job] = {}
        self.tally = Tally()
        self.now = 0.0
        self.checkpoint = args.checkpoint_minutes * 60

    def run(self) -> Tally:
        for job in self.jobs:
            heapq.heappush(self.events, (job.arrived, job.id, "arrive", job.id, 0))
        horizon = self.args.hours * 3600
        by_id = {j.id: j for j in self.jobs}
        while self.events and self.events[0][0] < horizon:
            t, _, kind, job_id, generation = heapq.heappop(self.events)
            self._advance(t)
            job = by_id[job_id]
            if kind == "arrive":
                self._arrive(job)
            elif generation == job.generation and job.id in self.running:
                self._finish(job)
        self._advance(horizon)
        return self.tally

    def _advance(self, t: float) -> None:
        for job in self.running.values():
            billed = "reserved" if job.reservation is not None else job.klass.value
            self.tally.gpu_seconds[billed] = self.tally.gpu_seconds.get(billed, 0.0) + job.gpus * (t - self.now)
        self.now = t

    def _request(self, job: Job, klass: CapacityClass, reservation: int | None) -> Request:
        rung = Rung.JOB if klass is SPOT else Rung.CONTAINER
        return Request(rung=rung, models=(H100,), gpus=job.gpus, capacity_class=klass, reservation=reservation)

    def _victims(self) -> list[Victim]:
        found = []
        for job in self.running.values():
            if job.klass is SPOT and job.placement is not None:
                ran = self.now - job.started
                cost = ran - (ran // self.checkpoint) * self.checkpoint  # the work since its last checkpoint
                found.append(Victim(job.id, job.placement, SPOT, round(cost * 1000)))
        return found

    def _arrive(self, job: Job) -> None:
        t = self.tally
        policy = TenantPolicy(tenant_id=job.tenant)
        if job.klass is SPOT:
            t.spot_asked += 1
            if not self._start(job, self.engine.place(self._request(job, SPOT, None), policy)):
                self.queue.append(job)
            return
        if job.klass is RESERVED:
            t.reserved_asked += 1
            found = self._preempting(self._request(job, RESERVED, job.reservation), policy, RESERVED)
            if isinstance(found, Refused) and found.reasons[0].code is Reason.RESERVATION:
                t.reserved_beyond += 1
                job.reservation = None  # beyond its room: on demand
            elif isinstance(found, Refused):
                t.violations += 1  # its reservation had room, and it was refused
                return
            else:
                t.reserved_served += 1
                self._start(job, found)
                return
        t.on_demand_asked += 1
        found = self._preempting(self._request(job, ON_DEMAND, None), policy, ON_DEMAND)
        if self._start(job, found):
            t.on_demand_served += 1

    def _preempting(
        self, request: Request, policy: TenantPolicy, klass: CapacityClass
    ) -> Placement | Preempting | Refused:
        """``place_preempting`` with every running spot job as a candidate, timed when it preempts (the candidates'
        list included: the service builds it too)."""
        began = time.perf_counter()
        found = self.engine.place_preempting(request, policy, capacity_class=klass, candidates=self._victims())
        if isinstance(found, Preempting):
            self.tally.preempting_ms.append((time.perf_counter() - began) * 1000)
        return found

    def _start(self, job: Job, found: Placement | Preempting | Refused) -> bool:
        if isinstance(found, Refused):
            return False
        if isinstance(found, Preempting):
            for victim in found.victims:
                self._preempted(self.running[victim.allocation_id])
            found = found.placement
        job.placement, job.started = found, self.now
        job.generation += 1
        self.running[job.id] = job
        heapq.heappush(self.events, (self.now + job.work, job.id, "end", job.id, job.generation))
        return True

    def _preempted(self, job: Job) -> None:
        ran = self.now - job.started
        kept = (ran // self.checkpoint) * self.checkpoint
        self.tally.preemptions += 1
        self.tally.lost.append(ran - kept)
        job.work -= kept
        job.placement, job.generation = None, job.generation + 1
        del self.running[job.id]
        self.queue.append(job)  # requeued: restarts from its checkpoint when capacity returns

    def _finish(self, job: Job) -> None:
        assert job.placement is not None
        self.engine.release(job.placement)
        del self.running[job.id]
        if job.klass is SPOT:
            self.tally.spot_done += 1
        waiting, self.queue = self.queue, []
        for queued in waiting:
            policy = TenantPolicy(tenant_id=queued.tenant)
            if not self._start(queued, self.engine.place(self._request(queued, SPOT, None), policy)):
                self.queue.append(queued)


def revenue_per_gpu_hour(tally: Tally, args: argparse.Namespace, gpus: int, classes: bool) -> float:
    hours = args.hours
    used = tally.gpu_seconds
    revenue = used.get("on_demand", 0.0) / 3600 + args.spot_price * used.get("spot", 0.0) / 3600
    if classes:
        revenue += args.reserved_price * reservation_gpus(gpus, args) * len(OWNERS) * hours  # the term, used or not
    return revenue / (gpus * hours)


def run(args: argparse.Namespace) -> dict[str, Any]:
    rows: dict[str, list[dict[str, float]]] = {"classes": [], "on_demand_only": []}
    for seed in range(args.seeds):
        for name, classes in (("classes", True), ("on_demand_only", False)):
            tally = Replay(args, args.gpus, seed, classes).run()
            held = sum(tally.gpu_seconds.values()) / 3600
            rows[name].append(
                {
                    "violations": tally.violations,
                    "reserved_served": tally.reserved_served,
                    "reserved_beyond": tally.reserved_beyond,
                    "on_demand_served_ratio": tally.on_demand_served / max(1, tally.on_demand_asked),
                    "spot_done": tally.spot_done,
                    "spot_asked": tally.spot_asked,
                    "preemptions": tally.preemptions,
                    "lost_mean_min": statistics.mean(tally.lost) / 60 if tally.lost else 0.0,
                    "lost_max_min": max(tally.lost) / 60 if tally.lost else 0.0,
                    "preempting_p50_ms": nearest_rank(sorted(tally.preempting_ms), 50) if tally.preempting_ms else 0.0,
                    "preempting_p99_ms": nearest_rank(sorted(tally.preempting_ms), 99) if tally.preempting_ms else 0.0,
                    "utilisation": held / (args.gpus * args.hours),
                    "revenue_per_gpu_hour": revenue_per_gpu_hour(tally, args, args.gpus, classes),
                }
            )
    found: dict[str, Any] = {
        name: {k: round(statistics.mean(r[k] for r in runs), 4) for k in runs[0]} for name, runs in rows.items()
    }
    found["classes"]["lost_max_min"] = round(max(r["lost_max_min"] for r in rows["classes"]), 2)
    with_classes, baseline = found["classes"], found["on_demand_only"]
    found["targets"] = {
        "no_violations": all(r["violations"] == 0 for r in rows["classes"]),
        "utilisation_above": with_classes["utilisation"] > baseline["utilisation"],
        "revenue_above": with_classes["revenue_per_gpu_hour"] > baseline["revenue_per_gpu_hour"],
        "lost_within_checkpoint": with_classes["lost_max_min"] <= args.checkpoint_minutes,
    }
    found["seeds"], found["gpus"], found["hours"] = args.seeds, args.gpus, args.hours
    found["trace"] = args.trace or None
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=1024, help="fleet GPUs (a multiple of 32)")
    parser.add_argument("--hours", type=float, default=168.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--mean-hours", type=float, default=4.0, help="a job's mean running time")
    parser.add_argument("--reserved", type=float, default=0.3, help="share of the fleet reserved")
    parser.add_argument("--reserved-use", type=float, default=0.7, help="share of its reservation a tenant uses")
    parser.add_argument("--on-demand", type=float, default=0.45, help="on-demand demand, share of the fleet")
    parser.add_argument("--spot", type=float, default=0.4, help="spot demand, share of the fleet")
    parser.add_argument("--checkpoint-minutes", type=float, default=30.0)
    parser.add_argument("--spot-price", type=float, default=0.4)
    parser.add_argument("--reserved-price", type=float, default=0.6)
    parser.add_argument("--policy", default="fragmentation", help="the engine's packing policy")
    parser.add_argument(
        "--trace", default="", metavar="POD_CSV", help="draw on-demand and spot jobs from an Alibaba trace pod list"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.gpus % 32:
        parser.error("--gpus must be a multiple of 32 (8-GPU nodes over four halls)")
    found = run(args)
    if args.json:
        print(json.dumps(found))
    else:
        mix = f", on-demand and spot jobs from {found['trace']}" if found["trace"] else ""
        print(f"{found['gpus']} GPUs, {found['hours']:g} h, {found['seeds']} seeds (means){mix}")
        keys = list(found["classes"])
        print(f"  {'':<24}{'with classes':>16}{'on-demand only':>16}")
        for key in keys:
            print(f"  {key:<24}{found['classes'][key]:>16g}{found['on_demand_only'][key]:>16g}")
        for name, met in found["targets"].items():
            print(f"  target {name}: {'met' if met else 'MISSED'}")
    return 0 if all(found["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
