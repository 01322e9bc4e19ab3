"""Serverless calls at the gateway: ``python -m bench.gateway [--seconds 8] [--rounds 3] [--burst 1000] [--json]``.

Runs Ladder as production does (PostgreSQL, a Redis cache shared by the web processes, gunicorn with
``config/gunicorn.conf.py``: two sync workers) on a database of its own (``ladder_bench_gateway`` on the server
``DATABASE_URL`` names; default the local one), with the simulated fleet and one tenant with two serverless
endpoints, one running and one idle. Then:

1. **The per-request check against Django's floor**: wrk (2 threads, 8 connections, ``--seconds`` each) on
   ``/healthz``, then on ``/api/v1/gateway/authorize`` for the running endpoint with an API key and with an
   endpoint token, ``--rounds`` times in turn; medians of requests/s and p50. Target: the check at 80% or more of
   ``/healthz``'s rate.
2. **Calls to Ladder per request with endpoint tokens**: the running endpoint's route and token policy, rendered as
   the Kubernetes driver renders them, are served by the in-process fake API server; the gateway double
   (``tests.fakes.envoy_gateway.py``, which enforces Envoy Gateway's policies as documented) admits ``--calls``
   requests with a token. Ladder's own request counter (``/metrics``) says how many reached it. Target: zero per
   request (the JWKS is fetched once per cache duration).
3. **A burst at the idle endpoint**: ``--burst`` concurrent requests to the check, each with the token. Target:
   exactly one wake (one placement, read from the audit log), none lost, each answered 200 or 503 with
   ``Retry-After``.

Needs ``wrk`` (Debian's package) on the PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
DATABASE = "ladder_bench_gateway"
PORT = 8741
CACHE = "redis://127.0.0.1:6379/7"
COLD_START_SECONDS = 2.0

SETUP = """
import json
from core.actor import Actor
from lifecycle.services.customers import tenant_signup
from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import allocations_reconcile, provisioner
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.desired import allocation_shape
from provisioning.models import Allocation, GpuModel, Region
from provisioning.services.endpoints import endpoint_sleep
from provisioning.services.fleet import fleet_load
from provisioning.services.placing import AllocationSpec, allocation_request
from tenancy.services import api_key_create
from tests.support.billing import price_pool
actor = Actor.system("bench")
nodes = [{"hostname": f"g{i:03d}", "gpu_model": "H100-SXM-80GB", "gpu_count": 8, "nvlink_domain": f"b/nvl-{i}",
          "cc_capable": False, "versions": {"driver": "580.65", "cuda": "13.0", "nccl": "2.27", "firmware": "96.00"}}
         for i in range(4)]
fleet_load(document={"regions": [{"code": "bench", "name": "Bench", "jurisdiction": "EU", "halls": [
    {"code": "bench-1a", "fenced_for": None, "nodes": nodes}]}]}, actor=actor)
price_pool(GpuModel.objects.get(name="H100-SXM-80GB"), Region.objects.get(code="bench"))
tenant = tenant_signup(slug="bench", name="Bench", username="bench", email="b@bench.example", password=None,
                       actor=actor)
user = tenant.memberships.get().user
key = api_key_create(user=user, name="bench", scopes=["read", "write"], expires_at=None, actor=actor).token
ids = []
for name in ("serving", "sleeping"):
    spec = AllocationSpec(rung="serverless", gpu_models=("H100-SXM-80GB",), gpus=1)
    ids.append(allocation_request(tenant=tenant, name=name, spec=spec, actor=actor).pk)
for pk in ids:
    provisioner().provision(pk)
allocations_reconcile()
endpoint_sleep(allocation=Allocation.objects.get(pk=ids[1]), actor=actor)
serving = Allocation.objects.get(pk=ids[0])
assert serving.state == S.RUNNING, serving.state
shape = allocation_shape(serving)
objects = [o for o in render.allocation_objects(shape) if o["kind"] in ("HTTPRoute", "BackendTrafficPolicy")]
print(json.dumps({"key": key, "running": ids[0], "idle": ids[1],
                  "objects": objects + [render.endpoint_token_policy(shape)]}))
"""


def _env(database_url: str, metrics: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        CACHE_URL=CACHE,
        SECRET_KEY="bench-only-secret",
        DEBUG="0",
        LADDER_TLS_TERMINATED_BY_PROXY="1",  # as deployed: TLS ends at the proxy in front
        DJANGO_SETTINGS_MODULE="config.settings",
        LADDER_TASKS_INLINE="1",
        LADDER_PROVISIONER="simulated",
        LADDER_SIM_PROVISION_SECONDS="0",
        LADDER_ENDPOINT_CALLS_PER_MINUTE="1000000000",
        LADDER_API_RATE="1000000000/min",
        LADDER_PUBLIC_URL=f"http://127.0.0.1:{PORT}",
        LADDER_BIND=f"127.0.0.1:{PORT}",
        LADDER_WEB_WORKERS="2",
        PROMETHEUS_MULTIPROC_DIR=metrics,
        LOG_LEVEL="ERROR",
    )
    return env


def _psql(url: str, statement: str) -> str:
    done = subprocess.run(["psql", url, "-Atqc", statement], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr.strip())
    return done.stdout.strip()


def _manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout


def _wait_up(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):  # noqa: S310 - the bench's own server
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("gunicorn did not come up")


def _wrk(url: str, seconds: int, headers: dict[str, str]) -> tuple[float, float]:
    """(requests/s, p50 ms) of one wrk run; a run with any non-2xx answer is refused."""
    flags = [item for name, value in headers.items() for item in ("-H", f"{name}: {value}")]
    out = subprocess.run(
        ["wrk", "-t2", "-c8", f"-d{seconds}s", "--latency", *flags, url], capture_output=True, text=True, check=True
    ).stdout
    if "Non-2xx" in out:
        raise SystemExit(f"wrk saw refusals:\n{out}")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]
    p50, unit = re.search(r"50%\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
    return rate, float(p50) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def _ladder_requests(url: str) -> Counter[str]:
    """Requests Ladder answered, by route, from its own /metrics."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:  # noqa: S310
        text = response.read().decode()
    seen: Counter[str] = Counter()
    for match in re.finditer(r"^ladder_http_requests_total\{([^}]*)\} ([\d.e+]+)$", text, re.MULTILINE):
        route = re.search(r'route="([^"]*)"', match[1])
        seen[route[1] if route else "?"] += int(float(match[2]))
    return seen


def _call(url: str, host: str, token: str) -> tuple[int, str | None]:
    request = urllib.request.Request(f"{url}/api/v1/gateway/authorize")  # noqa: S310 - the bench's own server
    request.add_header("X-Forwarded-Host", host)
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310
            return response.status, None
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Retry-After")
    except OSError as error:
        return 0, str(error)


def run(seconds: int, rounds: int, calls: int, burst: int, server: str) -> dict[str, Any]:
    if rounds and shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk")
    parsed = urlparse(server)
    if not parsed.scheme.startswith("postgres"):
        raise SystemExit("this benchmark runs on PostgreSQL: set DATABASE_URL=postgres://...")
    admin = parsed._replace(path="/postgres").geturl()
    _psql(admin, f"DROP DATABASE IF EXISTS {DATABASE}")
    _psql(admin, f"CREATE DATABASE {DATABASE}")
    database_url = parsed._replace(path=f"/{DATABASE}").geturl()
    subprocess.run(["redis-cli", "-u", CACHE, "FLUSHDB"], capture_output=True, check=True)
    metrics = tempfile.mkdtemp(prefix="ladder-bench-metrics-")
    env = _env(database_url, metrics)
    _manage(env, "migrate", "--noinput", "-v0")
    made = json.loads(_manage(env, "shell", "-c", SETUP).strip().splitlines()[-1])
    env["LADDER_SIM_PROVISION_SECONDS"] = str(COLD_START_SECONDS)
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    web = subprocess.Popen(
        [gunicorn, "-c", "config/gunicorn.conf.py", "config.wsgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{PORT}"
    base = "ladder.localhost"
    try:
        _wait_up(url)
        request = urllib.request.Request(f"{url}/api/v1/endpoint-tokens", data=b"{}", method="POST")  # noqa: S310
        request.add_header("Authorization", f"Bearer {made['key']}")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            token = json.loads(response.read())["token"]

        # 1. The check against /healthz, in turn.
        running_host = f"ldr-{made['running']}.{base}"
        figures: dict[str, list[tuple[float, float]]] = {"healthz": [], "check_key": [], "check_token": []}
        check = f"{url}/api/v1/gateway/authorize"
        for _ in range(rounds):
            figures["healthz"].append(_wrk(f"{url}/healthz", seconds, {}))
            key_headers = {"X-Forwarded-Host": running_host, "Authorization": f"Bearer {made['key']}"}
            figures["check_key"].append(_wrk(check, seconds, key_headers))
            token_headers = {"X-Forwarded-Host": running_host, "Authorization": f"Bearer {token}"}
            figures["check_token"].append(_wrk(check, seconds, token_headers))
        medians = {
            name: (statistics.median(r for r, _ in runs), statistics.median(p for _, p in runs))
            for name, runs in figures.items()
            if runs
        }

        # 2. Through the gateway with tokens: what reaches Ladder.
        from kubernetes import client

        from tests.fakes.envoy_gateway import EnvoyGatewayDouble
        from tests.fakes.kubernetes import K8sServer

        cluster = K8sServer(token="bench").start()
        try:
            for obj in made["objects"]:
                cluster.put_object(obj)
            config = client.Configuration()
            config.host = cluster.url
            config.api_key = {"BearerToken": "bench"}
            config.api_key_prefix = {"BearerToken": "Bearer"}
            gateway = EnvoyGatewayDouble(client.ApiClient(config), services={}, now=time.time)
            before = _ladder_requests(url)
            statuses = Counter(gateway.request(running_host, f"Bearer {token}").status for _ in range(calls))
            after = _ladder_requests(url)
        finally:
            cluster.stop()
        reached = after - before
        reached.pop("metrics", None)

        # 3. A burst at the idle endpoint.
        idle_host = f"ldr-{made['idle']}.{base}"
        began = time.monotonic()
        with ThreadPoolExecutor(max_workers=burst) as pool:
            answers = list(pool.map(lambda _: _call(url, idle_host, token), range(burst)))
        burst_seconds = time.monotonic() - began
        wakes = int(
            _psql(
                database_url,
                "SELECT count(*) FROM compliance_auditevent WHERE action = 'allocation.placed' "  # noqa: S608 - an id
                f"AND target_id = '{int(made['idle'])}' AND data->>'wake' = 'true'",
            )
        )
    finally:
        web.terminate()
        web.wait()
        shutil.rmtree(metrics, ignore_errors=True)
    outcome = Counter(status for status, _ in answers)
    told = sum(1 for status, retry in answers if status == 503 and retry)
    rates: dict[str, Any] = {}
    if medians:
        rates = {
            "healthz_rps": round(medians["healthz"][0]),
            "healthz_p50_ms": round(medians["healthz"][1], 2),
            "check_key_rps": round(medians["check_key"][0]),
            "check_key_p50_ms": round(medians["check_key"][1], 2),
            "check_token_rps": round(medians["check_token"][0]),
            "check_token_p50_ms": round(medians["check_token"][1], 2),
            "check_key_of_healthz": round(medians["check_key"][0] / medians["healthz"][0], 3),
            "check_token_of_healthz": round(medians["check_token"][0] / medians["healthz"][0], 3),
        }
    return {
        **rates,
        "gateway_calls": calls,
        "gateway_statuses": dict(statuses),
        "ladder_requests_during_calls": dict(reached),
        "ladder_requests_per_call": round(sum(reached.values()) / calls, 5),
        "burst": burst,
        "burst_wakes": wakes,
        "burst_answered_200": outcome.get(200, 0),
        "burst_told_to_retry": told,
        "burst_lost": burst - outcome.get(200, 0) - told,
        "burst_seconds": round(burst_seconds, 2),
        "cold_start_seconds": COLD_START_SECONDS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=8, help="each wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="0: no wrk runs (the other two parts only)")
    parser.add_argument("--calls", type=int, default=5000, help="requests through the gateway with a token")
    parser.add_argument("--burst", type=int, default=1000, help="concurrent requests at the idle endpoint")
    parser.add_argument("--server", default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/ladder"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = run(args.seconds, args.rounds, args.calls, args.burst, args.server)
    if args.json:
        print(json.dumps(figures))
    else:
        width = max(map(len, figures))
        for name, value in figures.items():
            print(f"{name:<{width}}  {value}")
    failed = (
        figures.get("check_key_of_healthz", 1.0) < 0.8
        or figures["ladder_requests_per_call"] > 0.01
        or figures["burst_wakes"] != 1
        or figures["burst_lost"] != 0
    )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
