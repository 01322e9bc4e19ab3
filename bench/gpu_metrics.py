"""An allocation's GPU metrics read for a tenant with 1,000 GPUs over 24 hours:
``python -m bench.gpu_metrics [--gpus 1000] [--hours 24] [--scrape 15] [--reads 10] [--json]``.

Sets up its own SQLite database (a temporary file, migrated) with the simulated fleet: ``--gpus / 8`` nodes of
eight H100s in one hall, and one tenant whose job holds every GPU (a gang of ``--gpus / 8`` members of eight,
placed by the engine), held since before the window. Its clock is fixed (``AT``), so what Prometheus holds can be
kept between runs.

**The data.** What dcgm-exporter on those nodes would have reported for ``--hours`` before ``AT``, scraped every
``--scrape`` seconds (the scrape interval docs/telemetry.md gives operators), the exporter collecting every 30 s
as it ships: every field the exporter publishes, with the simulated exporter's own labels (``node_readings``), and
values that move per device (busy, idling, memory filling). It is written as OpenMetrics, one file per two hours,
and turned into TSDB blocks by ``promtool tsdb create-blocks-from openmetrics``; Debian's Prometheus is started on
them (no scraping) and left to compact them before anything is timed. The blocks are kept under
``var/bench/gpu-metrics/`` for the next run with the same figures.

**Timed** (server-side: Django's test client in this process, Prometheus over HTTP on 127.0.0.1):
- ``api``: ``GET /api/v1/allocations/{id}/metrics?from=&to=`` over the whole window at the default step (the span
  over 240); ``--reads`` reads, the first untimed;
- ``portal``: the allocation page's "What the GPUs do" over its last 24 hours
  (``portal.gpu_metrics.allocation_gpu_metrics``: 120 points, every 12 minutes);
- ``portal_hour``: the same over its default last hour (every 30 s: the raw series, aggregated by Prometheus).
Prints the median, P90 and maximum of each, the API answer's size, and whether the target holds (API and 24-hour
portal medians under 300 ms); ``--json`` prints one JSON object. Exits 1 when a read fails or answers without
series, or the target is missed.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.sandbox import django_setup
from provisioning.domain.cold_start import nearest_rank

AT = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # the benchmark's "now": fixed, so the blocks can be kept
COLLECT_SECONDS = 30  # dcgm-exporter's default collection interval: a scrape in between repeats the last values
BLOCK_SECONDS = 2 * 3600  # promtool's block range: one OpenMetrics file per block
TARGET_MS = 300.0
DATA_VERSION = 2  # bump when what is generated changes
DATA_ROOT = Path("var/bench/gpu-metrics")
HALL = "bench-1a"
RULES = Path(__file__).resolve().parent.parent / "deploy" / "observability" / "gpu-rollups.rules.yml"


def fleet(gpus: int) -> Any:
    """``gpus / 8`` nodes of eight H100s, priced; a tenant whose job holds all their GPUs since before the window.
    Returns the allocation."""
    from core.actor import Actor
    from lifecycle.services.customers import tenant_signup
    from provisioning.models import AllocationDevice, Region
    from provisioning.services.fleet import fleet_load
    from provisioning.services.placing import AllocationSpec, allocation_request
    from tests.support.billing import price_pool
    from tests.support.fleet_documents import node

    actor = Actor.system("bench")
    nodes = [node(f"g{i:04d}", f"{HALL}/nvl-{i // 8}") for i in range(gpus // 8)]
    hall = {"code": HALL, "fenced_for": None, "nodes": nodes}
    fleet_load(
        document={"regions": [{"code": "bench", "name": "Bench", "jurisdiction": "EU", "halls": [hall]}]}, actor=actor
    )
    from provisioning.models import GpuModel

    price_pool(GpuModel.objects.get(name="H100-SXM-80GB"), Region.objects.get(code="bench"))
    tenant = tenant_signup(
        slug="bench", name="Bench", username="bench", email="b@bench.example", password=None, actor=actor
    )
    spec = AllocationSpec(rung="job", gpu_models=("H100-SXM-80GB",), gpus=8, gang_size=gpus // 8)
    allocation = allocation_request(tenant=tenant, name="train", spec=spec, actor=actor)
    AllocationDevice.objects.filter(allocation=allocation).update(held_since=AT - timedelta(days=2))
    return allocation


def api_key(allocation: Any) -> str:
    from core.actor import Actor
    from tenancy.services import api_key_create

    user = allocation.tenant.memberships.get().user
    return api_key_create(user=user, name="bench", scopes=["read"], expires_at=None, actor=Actor.system("bench")).token


# --- the data ---------------------------------------------------------------------------------------------------


INFO = "ladder_allocation_device_info"
HELP = {INFO: "A device an allocation holds now (1)."}


def series_prefixes(allocation: Any) -> list[tuple[int, str, str]]:
    """(device number, metric name, ``name{labels} ``) for every series the allocation's nodes' exporters publish,
    and for Ladder's ``ladder_allocation_device_info`` of each device (what its ``/metrics`` serves, scraped with
    the exporters: ``held_device_series``)."""
    from provisioning.domain.gpu_metrics import FIELDS
    from provisioning.models import Node
    from provisioning.simulated_exporter import node_readings
    from provisioning.telemetry import held_device_series

    found = []
    nodes = Node.objects.filter(gpus__allocation_devices__allocation=allocation).distinct().order_by("hostname")
    for n, node in enumerate(nodes.select_related("gpu_model")):
        for labels, _ in node_readings(node, now=AT):
            device = n * 8 + labels.gpu
            found += [(device, f.name, f"{f.name}{{{labels.render()}}} ") for f in FIELDS]
    info = 'allocation="{}",UUID="{}",GPU_I_ID="{}",instance="ladder:8000",job="ladder"'
    for device, held in enumerate(held_device_series()):
        found.append((device, INFO, f"{INFO}{{{info.format(*held)}}} "))
    return found


def reading(field: str, device: int, t: int) -> str:
    """What the exporter reported for ``field`` of ``device`` at ``t`` (unix seconds, on a collection instant): a
    job that works in bursts with idle stretches, memory filling over the day; every device its own phase."""
    hour = (t // 3600 + device) % 24
    idle = hour in (3, 4) or (device % 50 == 0 and hour > 20)  # the night's stall, and a few stragglers
    wave = 0.5 + 0.5 * math.sin((t / 600.0) + device * 0.7)
    sm = 0.004 * wave if idle else 0.55 + 0.4 * wave
    used = 2048 + (t % 86400) * 60_000 // 86400 + device * 13 % 4096
    values = {
        "DCGM_FI_PROF_SM_ACTIVE": f"{sm:.6f}",
        "DCGM_FI_PROF_SM_OCCUPANCY": f"{sm * 0.6:.6f}",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": f"{sm * 0.45:.6f}",
        "DCGM_FI_PROF_DRAM_ACTIVE": f"{sm * 0.3:.6f}",
        "DCGM_FI_DEV_GPU_UTIL": str(round(min(1.0, sm * 1.15) * 100)),
        "DCGM_FI_DEV_FB_USED": str(used),
        "DCGM_FI_DEV_FB_FREE": str(81559 - used),
        "DCGM_FI_DEV_POWER_USAGE": f"{70 + 630 * sm:.3f}",
        "DCGM_FI_DEV_GPU_TEMP": str(round(31 + 45 * sm)),
        "DCGM_FI_DEV_XID_ERRORS": "0",
        INFO: "1",
    }
    return values[field]


def openmetrics(path: Path, prefixes: list[tuple[int, str, str]], begin: int, end: int, scrape: int) -> None:
    """Every series' samples from ``begin`` (inclusive) to ``end`` (exclusive), a scrape every ``scrape`` s, in
    OpenMetrics (families not interleaved, each series' samples in time order, timestamps in seconds)."""
    from provisioning.domain.gpu_metrics import FIELDS

    help_of = {**{f.name: f.help for f in FIELDS}, **HELP}
    instants = range(begin, end, scrape)
    with path.open("w") as out:
        family = None
        for device, name, prefix in sorted(prefixes, key=lambda p: (p[1], p[0])):
            if name != family:
                family = name
                out.write(f"# HELP {name} {help_of[name]}\n# TYPE {name} gauge\n")
            last_collect, value = -1, ""
            lines = []
            for t in instants:
                collect = t - t % COLLECT_SECONDS
                if collect != last_collect:
                    last_collect, value = collect, reading(name, device, collect)
                lines.append(f"{prefix}{value} {t}\n")
            out.write("".join(lines))
        out.write("# EOF\n")


def blocks(allocation: Any, *, gpus: int, hours: int, scrape: int) -> Path:
    """TSDB blocks of the window (made once, then kept): returns the data directory."""
    home = DATA_ROOT / f"v{DATA_VERSION}-{gpus}gpus-{hours}h-{scrape}s"
    data = home / "data"
    if (home / "complete").exists():
        return data
    shutil.rmtree(home, ignore_errors=True)
    data.mkdir(parents=True)
    prefixes = series_prefixes(allocation)
    end = int(AT.timestamp())
    begin = end - hours * 3600
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        first = begin - begin % BLOCK_SECONDS
        for window in range(first, end, BLOCK_SECONDS):
            text = Path(scratch) / "window.om"
            openmetrics(text, prefixes, max(begin, window), min(end + 1, window + BLOCK_SECONDS), scrape)
            subprocess.run(
                ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--quiet", str(text), str(data)],
                check=True,
            )
    rollups(data, begin=begin, end=end)
    took = time.perf_counter() - began
    print(f"made {len(prefixes)} series' blocks and their rollups in {took:.0f} s", file=sys.stderr)
    (home / "complete").touch()
    return data


def rollups(data: Path, *, begin: int, end: int) -> None:
    """The rollup rules (``deploy/observability/gpu-rollups.rules.yml``) evaluated over the window by
    ``promtool tsdb create-blocks-from rules`` against a Prometheus on the raw blocks, as an operator backfills new
    rules; their blocks are added to ``data``."""
    process, url = prometheus(data)
    try:
        with tempfile.TemporaryDirectory() as out:
            subprocess.run(
                [
                    "promtool", "tsdb", "create-blocks-from", "rules", "--quiet", f"--url={url}", f"--start={begin}",
                    f"--end={end}", f"--output-dir={out}", str(RULES),
                ],
                check=True,
                capture_output=True,
            )  # fmt: skip
            process.terminate()
            process.wait(timeout=60)
            for block in Path(out).iterdir():
                shutil.move(str(block), data / block.name)
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=60)


# --- Prometheus on the blocks -------------------------------------------------------------------------------------


def prometheus(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Debian's Prometheus on ``data``, scraping nothing, once it has compacted what it found."""
    from tests.support.prometheus import _free_port, prometheus_path

    binary = prometheus_path()
    if binary is None:
        sys.exit("Prometheus is not installed (make prometheus)")
    port = _free_port()
    config = data.parent / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\n")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(data.parent / "prometheus.log").open("wb"),
    )
    url = f"http://127.0.0.1:{port}"
    settled(url, process)
    return process, url


def _value(url: str, query: str) -> float:
    with urllib.request.urlopen(f"{url}/api/v1/query?query={query}", timeout=10) as answer:  # noqa: S310 - local
        result = json.loads(answer.read())["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def settled(url: str, process: subprocess.Popen[bytes], timeout: float = 600) -> None:
    """Ready, and no compaction for five seconds (the backfilled blocks are compacted at start)."""
    deadline = time.monotonic() + timeout
    last, quiet_since = -1.0, time.monotonic()
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit("Prometheus exited: see its log beside the blocks")
        try:
            done = _value(url, "prometheus_tsdb_compactions_total") + _value(url, "prometheus_tsdb_blocks_loaded")
        except OSError:
            time.sleep(0.2)
            continue
        if done != last:
            last, quiet_since = done, time.monotonic()
        elif time.monotonic() - quiet_since > 5:
            return
        time.sleep(0.5)
    sys.exit("Prometheus did not settle")


# --- the reads ----------------------------------------------------------------------------------------------------


def timed(reads: int, read: Any) -> list[float]:
    read()  # the first read warms Django's and Prometheus's caches: not timed
    found = []
    for _ in range(reads):
        began = time.perf_counter()
        read()
        found.append((time.perf_counter() - began) * 1000)
    return found


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered), 1),
        "p90_ms": round(nearest_rank(ordered, 90), 1),
        "max_ms": round(ordered[-1], 1),
    }


def run(*, gpus: int, hours: int, scrape: int, reads: int) -> dict[str, Any]:
    import time_machine

    with tempfile.TemporaryDirectory() as scratch:
        django_setup(f"{scratch}/bench.sqlite3", provisioner="simulated")
        with time_machine.travel(AT - timedelta(days=3), tick=False):
            allocation = fleet(gpus)
            key = api_key(allocation)
        data = blocks(allocation, gpus=gpus, hours=hours, scrape=scrape)
        process, url = prometheus(data)
        try:
            return measure(allocation, key, url=url, hours=hours, reads=reads)
        finally:
            process.terminate()
            process.wait(timeout=30)


def measure(allocation: Any, key: str, *, url: str, hours: int, reads: int) -> dict[str, Any]:
    import time_machine
    from django.test import Client
    from django.test.utils import override_settings

    from portal.gpu_metrics import allocation_gpu_metrics

    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_HOST="127.0.0.1")
    start = AT - timedelta(hours=hours)
    path = f"/api/v1/allocations/{allocation.pk}/metrics"
    params = {"from": start.isoformat(), "to": AT.isoformat()}
    answers: list[Any] = []

    def api() -> None:
        answer = client.get(path, params)
        if answer.status_code != 200:
            sys.exit(f"the read answered {answer.status_code}: {answer.content[:500]!r}")
        answers.append(answer)

    def portal(window: str) -> Any:
        def read() -> None:
            found = allocation_gpu_metrics(allocation, window)
            if found is None or found["unavailable"] or not found["chart"]["sm"]:
                sys.exit(f"the portal's read found nothing: {found and found['unavailable']}")

        return read

    with override_settings(LADDER_PROMETHEUS_URL=url), time_machine.travel(AT, tick=False):
        api_ms = timed(reads, api)
        portal_ms = timed(reads, portal("24h"))
        portal_hour_ms = timed(reads, portal("1h"))
    body = answers[-1].json()
    if body["unavailable"] or not body["metrics"]["sm_active"]["all"]:
        sys.exit(f"the read answered without series: {body['unavailable']}")
    return {
        "gpus": allocation.devices.count(),
        "hours": hours,
        "step_seconds": body["step_seconds"],
        "points": len(body["metrics"]["sm_active"]["all"]),
        "resolution": body["resolution"],
        "per_device": body["per_device"],
        "api": summary(api_ms),
        "api_bytes": len(answers[-1].content),
        "portal": summary(portal_ms),
        "portal_hour": summary(portal_hour_ms),
        "findings": body["findings"],
        "target_ms": TARGET_MS,
        "target_met": max(statistics.median(api_ms), statistics.median(portal_ms)) < TARGET_MS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=1000, help="GPUs the tenant's job holds (a multiple of 8)")
    parser.add_argument("--hours", type=int, default=24, help="the window read")
    parser.add_argument("--scrape", type=int, default=15, help="Prometheus's scrape interval (s)")
    parser.add_argument("--reads", type=int, default=10, help="timed reads of each kind")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.gpus % 8 or args.gpus < 8:
        parser.error("--gpus must be a positive multiple of 8")
    found = run(gpus=args.gpus, hours=args.hours, scrape=args.scrape, reads=args.reads)
    if args.json:
        print(json.dumps(found))
    else:
        print(
            f"{found['gpus']} GPUs over {found['hours']} h, {found['points']} points every {found['step_seconds']} s"
            f" ({found['resolution']}, per device: {found['per_device']})"
        )
        for kind in ("api", "portal", "portal_hour"):
            s = found[kind]
            figures = f"median {s['median_ms']:>8.1f} ms  p90 {s['p90_ms']:>8.1f} ms  max {s['max_ms']:>8.1f} ms"
            print(f"  {kind:<11} {figures}")
        print(f"  the API's answer: {found['api_bytes'] / 1e6:.2f} MB")
        print(f"  findings: {'; '.join(found['findings']) or 'none'}")
        print(f"  target (API and portal medians < {TARGET_MS:.0f} ms): {'met' if found['target_met'] else 'MISSED'}")
    return 0 if found["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
