"""Serverless cold start from zero replicas: ``python -m bench.cold_start [--trials 10] [--delay 2.0] [--json]``.

Sets up its own SQLite database (a temporary file, migrated), a hall of two 8-GPU H100 hosts whose cluster is the fake
API server (``tests/fakes/kubernetes.py``, spoken to over HTTP through the official client), and Ladder served
in-process over real HTTP (Django's threaded WSGI server, as under ``runserver``; tasks inline as under ``make
run``). Each trial puts a 2-GPU serverless endpoint to sleep the way a deployment does (the reconcile loop, idle
window 0), checks that while ``idle`` it holds no GPU claim, no device, nothing in the engine, and that no usage
interval covers the time it slept, then sends it one request and times it:

- ``simulated``: ``make run``'s provisioner (``LADDER_SIM_PROVISION_SECONDS`` set to ``--delay`` and no fixed init,
  so the modelled cold start of the endpoint, which names no model and whose hosts hold its image, is ``--delay``),
  the request a ``POST /endpoints/{id}/v1/predict`` to the simulated endpoint;
- ``kubernetes``: the Kubernetes provisioner on the fake API server, the request the gateway's key check ``GET
  /api/v1/gateway/authorize`` (``X-Forwarded-Host: ldr-<id>.<base domain>``); a thread acts as the Deployment
  controller, making the replica ready ``--delay`` seconds after the Deployment asks for it.

Per trial: ``held`` (how long the first request took), ``cold_start`` (the ``cold_start_ms`` recorded on the
allocation: wake to ``running``), ``overhead`` (``held`` minus ``--delay``: what Ladder adds to the start itself),
``warm`` (a second request right after: the HTTP round trip alone); on Kubernetes also ``applied`` (request to the
Deployment asking for one replica: placement, render, apply) and ``after_ready`` (the replica ready to the answer:
the held request's next look, every ``WAKE_POLL_SECONDS``). Prints medians and maxima; ``--json`` prints one JSON
object. Exits 1 when a trial fails (no answer, a wrong figure, a claim or usage while idle).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from bench.sandbox import HALL, TOKEN, django_setup, hall_load

NAMESPACE = "ladder-bench"
GPUS = 2
IDLE_PAUSE_SECONDS = 0.2  # how long each trial leaves the endpoint asleep before it checks nothing accrued
FIGURES = {
    "simulated": ("held", "cold_start", "overhead", "warm"),
    "kubernetes": ("held", "cold_start", "overhead", "applied", "after_ready", "warm"),
}


class TrialFailed(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise TrialFailed(message)


def serve() -> tuple[Any, str]:
    """Ladder over real HTTP in this process (a thread per request, as ``runserver`` and Django's live server)."""
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadedWSGIServer(("127.0.0.1", 0), Quiet, allow_reuse_address=False)
    httpd.set_app(get_wsgi_application())
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


def fleet(server: Any) -> tuple[Any, str]:
    """One hall of two 8-GPU H100 hosts, its cluster the fake API server (every host a Ready Node); the tenant and
    an API key of it."""
    from core.actor import Actor
    from lifecycle.services.customers import tenant_signup
    from tenancy.services import api_key_create
    from tests.support.fleet_documents import node

    actor = Actor.system("bench")
    hall_load(server, [node(h, f"{HALL}/nvl-0") for h in ("c0000", "c0001")], actor)
    tenant = tenant_signup(
        slug="bench", name="Bench", username="bench", email="b@bench.example", password=None, actor=actor
    )
    user = tenant.memberships.get().user
    key = api_key_create(user=user, name="bench", scopes=["read"], expires_at=None, actor=actor).token
    return tenant, key


def call(url: str, key: str, *, method: str = "GET", host: str | None = None) -> tuple[int, float]:
    """The status and how long the request took, in ms."""
    body = json.dumps({"prompt": "hello"}).encode() if method == "POST" else None
    request = urllib.request.Request(url, method=method, data=body)  # noqa: S310 - our own local server
    request.add_header("Authorization", f"Bearer {key}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    if host is not None:
        request.add_header("X-Forwarded-Host", host)
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    return status, (time.perf_counter() - began) * 1000


def held_in_engine(allocation_id: int) -> int:
    """Devices the in-memory fleet (what the engine places against) holds for the allocation."""
    from provisioning.fleet_cache import fleet_read

    with fleet_read() as cache:
        placement = cache.placements.get(allocation_id)
        return len(placement.devices) if placement is not None else 0


def asleep(allocation: Any) -> int:
    """Checks the endpoint holds nothing while idle; returns the moment it went idle (epoch ms)."""
    from billing.domain.metering import to_ms
    from billing.models import UsageInterval
    from provisioning.domain.states import AllocationState as S
    from provisioning.models import AllocationDevice, GpuClaim

    allocation.refresh_from_db()
    check(allocation.state == S.IDLE, f"endpoint {allocation.pk} did not go idle: {allocation.state}")
    check(not allocation.replicas, f"an idle endpoint reports {allocation.replicas} replicas")
    check(not GpuClaim.objects.filter(allocation=allocation).exists(), "an idle endpoint holds a GPU claim")
    check(not AllocationDevice.objects.filter(allocation=allocation, active=True).exists(), "idle, with a device")
    check(held_in_engine(allocation.pk) == 0, "the engine still holds devices for the idle endpoint")
    check(not UsageInterval.objects.filter(allocation=allocation, end_ms=None).exists(), "idle, usage still open")
    return to_ms(allocation.state_changed_at)


def woken(allocation: Any, idle_ms: int, held_ms: float) -> int:
    """Checks the endpoint runs again, holding its devices, its cold start recorded and audited, and no usage
    between the moment it went idle and the moment it ran again; returns ``cold_start_ms``."""
    from billing.domain.metering import to_ms
    from billing.models import UsageInterval
    from core.models import AuditEvent
    from provisioning.domain.states import AllocationState as S
    from provisioning.models import GpuClaim

    allocation.refresh_from_db()
    check(allocation.state == S.RUNNING, f"endpoint {allocation.pk} is {allocation.state} after its first request")
    check(allocation.replicas == 1, f"woken with {allocation.replicas} replicas")
    claimed = GpuClaim.objects.filter(allocation=allocation).values("gpu").distinct().count()
    check(claimed == GPUS, f"woken holding claims on {claimed} GPUs, not {GPUS}")
    check(held_in_engine(allocation.pk) == GPUS, "woken, and the engine does not hold its devices")
    cold = allocation.cold_start_ms
    check(cold is not None and 0 < cold <= held_ms + 50, f"cold start {cold} ms for a request held {held_ms:.0f} ms")
    running = AuditEvent.objects.filter(action="allocation.running", target_id=str(allocation.pk)).order_by("seq")
    last = running.last()
    check(last is not None and last.data.get("cold_start_ms") == cold, "the cold start is not audited")
    ran_ms = to_ms(allocation.running_since)
    accrued = 0
    for start, end in UsageInterval.objects.filter(allocation=allocation).values_list("start_ms", "end_ms"):
        accrued += max(0, min(end if end is not None else ran_ms, ran_ms) - max(start, idle_ms))
    check(accrued == 0, f"{accrued} ms of usage accrued while idle or cold-starting")
    return int(cold)


def simulated(url: str, tenant: Any, key: str, trials: int, delay: float) -> list[dict[str, float]]:
    from django.conf import settings

    from provisioning.domain.states import AllocationState as S
    from provisioning.drivers.base import allocations_reconcile
    from tests.support.kubernetes import place

    settings.LADDER_PROVISIONER = "simulated"
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    settings.LADDER_SIM_INIT_SECONDS = 0  # the start is --delay alone (bench/cold_start_cache.py models the rest)
    endpoint = place(tenant, rung="serverless", gpus=GPUS)
    allocations_reconcile()
    endpoint.refresh_from_db()
    check(endpoint.state == S.RUNNING, f"the simulated endpoint did not start: {endpoint.state}")
    target = f"{url}/endpoints/{endpoint.pk}/v1/predict"
    results = []
    for _ in range(trials):
        settings.LADDER_SERVERLESS_IDLE_SECONDS = 0  # not called since it ran: to zero at the next reconcile
        allocations_reconcile()
        settings.LADDER_SERVERLESS_IDLE_SECONDS = 300
        idle_ms = asleep(endpoint)
        time.sleep(IDLE_PAUSE_SECONDS)
        settings.LADDER_SIM_PROVISION_SECONDS = delay
        status, held = call(target, key, method="POST")
        check(status == 200, f"the first request answered {status}")
        cold = woken(endpoint, idle_ms, held)
        status, warm = call(target, key, method="POST")
        check(status == 200, f"a warm request answered {status}")
        results.append({"held": held, "cold_start": cold, "overhead": held - delay * 1000, "warm": warm})
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    # Left asleep: it holds nothing, and the Kubernetes driver that reconciles from here on does not look at it.
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
    allocations_reconcile()
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 300
    asleep(endpoint)
    return results


def deployment(server: Any, allocation: Any) -> dict[str, Any]:
    found: dict[str, Any] | None = server.get_object("apps/v1", "Deployment", f"ldr-{allocation.pk}", NAMESPACE)
    check(found is not None, f"no Deployment for endpoint {allocation.pk}")
    assert found is not None
    return found


def ready(server: Any, allocation: Any, replicas: int) -> None:
    """What the Deployment controller reports once ``replicas`` pods are up and warm."""
    status = {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas}
    server.set_status("apps/v1", "deployments", f"ldr-{allocation.pk}", NAMESPACE, status)


def controller(server: Any, allocation: Any, delay: float, seen: dict[str, float]) -> None:
    """The cluster's side of a wake: once the Deployment asks for a replica, it is ready ``delay`` seconds later
    (scheduling, image pull, model load). Notes when it saw the ask."""
    deadline = time.perf_counter() + 60
    while time.perf_counter() < deadline:
        found = server.get_object("apps/v1", "Deployment", f"ldr-{allocation.pk}", NAMESPACE)
        if found and found["spec"].get("replicas") == 1:
            seen["applied"] = time.perf_counter()
            time.sleep(delay)
            ready(server, allocation, 1)
            return
        time.sleep(0.005)


def kubernetes(server: Any, url: str, tenant: Any, key: str, trials: int, delay: float) -> list[dict[str, float]]:
    from django.conf import settings

    from provisioning.domain.states import AllocationState as S
    from provisioning.drivers.base import allocations_reconcile
    from provisioning.drivers.kubernetes.driver import KubernetesProvisioner
    from tests.support.kubernetes import place

    settings.LADDER_PROVISIONER = "kubernetes"
    endpoint = place(tenant, rung="serverless", gpus=GPUS)
    KubernetesProvisioner().provision(endpoint.pk)
    ready(server, endpoint, 1)
    allocations_reconcile()
    endpoint.refresh_from_db()
    check(endpoint.state == S.RUNNING, f"the Kubernetes endpoint did not start: {endpoint.state}")
    # The gateway's queue gauge through the metrics adapter: nothing waiting, ever (the bench calls it directly).
    server.put_object(
        {
            "apiVersion": "external.metrics.k8s.io/v1beta1",
            "kind": "ladder_queue_depth",
            "metadata": {
                "name": f"depth-{endpoint.pk}",
                "namespace": NAMESPACE,
                "labels": {"ladder.io/allocation": str(endpoint.pk)},
            },
            "value": "0",
        }
    )
    target = f"{url}/api/v1/gateway/authorize"
    host = f"ldr-{endpoint.pk}.{settings.LADDER_BASE_DOMAIN}"
    results = []
    for _ in range(trials):
        settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
        allocations_reconcile()  # the empty queue noted
        allocations_reconcile()  # empty past the window: set to zero replicas
        check(deployment(server, endpoint)["spec"]["replicas"] == 0, "the endpoint was not scaled to zero")
        ready(server, endpoint, 0)  # its last pod has gone
        allocations_reconcile()  # no pod left: idle
        settings.LADDER_SERVERLESS_IDLE_SECONDS = 300
        idle_ms = asleep(endpoint)
        time.sleep(IDLE_PAUSE_SECONDS)
        seen: dict[str, float] = {}
        cluster = threading.Thread(target=controller, args=(server, endpoint, delay, seen))
        cluster.start()
        began = time.perf_counter()
        status, held = call(target, key, host=host)
        cluster.join()
        check(status == 200, f"the gateway's check of the first request answered {status}")
        check("applied" in seen, "the Deployment never asked for a replica")
        cold = woken(endpoint, idle_ms, held)
        status, warm = call(target, key, host=host)
        check(status == 200, f"a warm check answered {status}")
        applied = (seen["applied"] - began) * 1000
        results.append(
            {
                "held": held,
                "cold_start": cold,
                "overhead": held - delay * 1000,
                "applied": applied,
                "after_ready": held - applied - delay * 1000,
                "warm": warm,
            }
        )
    return results


def summarise(results: list[dict[str, float]], figures: Sequence[str]) -> dict[str, dict[str, float]]:
    return {
        figure: {
            "median_ms": round(statistics.median(r[figure] for r in results), 1),
            "max_ms": round(max(r[figure] for r in results), 1),
        }
        for figure in figures
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument(
        "--delay",
        type=float,
        default=2.0,
        help="seconds the backend takes to start a replica (default 2.0, as make run)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        django_setup(os.path.join(scratch, "bench.sqlite3"), provisioner="simulated")
        from tests.fakes.kubernetes import K8sServer

        server = K8sServer(token=TOKEN).start()
        httpd, url = serve()
        try:
            tenant, key = fleet(server)
            runs = {
                "simulated": simulated(url, tenant, key, args.trials, args.delay),
                "kubernetes": kubernetes(server, url, tenant, key, args.trials, args.delay),
            }
        except TrialFailed as failure:
            raise SystemExit(f"cold start benchmark failed: {failure}") from None
        finally:
            httpd.shutdown()
            httpd.server_close()
            server.stop()

    summary: dict[str, Any] = {"trials": args.trials, "delay_ms": round(args.delay * 1000)}
    for backend, figures in FIGURES.items():
        summary[backend] = summarise(runs[backend], figures)
    if args.json:
        print(json.dumps(summary))
        return
    print(f"cold start from zero replicas: {args.trials} trials, the backend starting a replica in {args.delay:g} s")
    for backend, figures in FIGURES.items():
        print(f"  {backend}")
        for figure in figures:
            row = summary[backend][figure]
            print(f"    {figure:<11} median {row['median_ms']:8.1f} ms   max {row['max_ms']:8.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
