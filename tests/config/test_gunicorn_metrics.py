"""gunicorn with several worker processes: /metrics adds up every worker's counters (prometheus-client's
multiprocess mode), whichever worker answers the scrape, and a worker that dies leaves its counts in the sum. A
Celery worker's own metrics endpoint serves what its tasks count."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import Counter
from prometheus_client.parser import text_string_to_metric_families

from core.metrics import worker_metrics_serve
from tests.support import ROOT
from tests.support.clock import python_module
from tests.support.worker import database_url


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _count(text: str, route: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "ladder_http_requests_total" and sample.labels.get("route") == route:
                return sample.value
    return 0.0


@pytest.fixture
def gunicorn(transactional_db: None, tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    port = _free_port()
    multiproc = tmp_path / "prometheus"
    multiproc.mkdir()
    (multiproc / "counter_999999.db").write_bytes(b"left over from an earlier run")
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": database_url(),
        "LADDER_BIND": f"127.0.0.1:{port}",
        "LADDER_WEB_WORKERS": "2",
        "PROMETHEUS_MULTIPROC_DIR": str(multiproc),
    }
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            python_module("gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi"),
            cwd=ROOT,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _get(f"{url}/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                pytest.fail(f"gunicorn did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        yield url, server, multiproc
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _worker_pids(server: subprocess.Popen[bytes]) -> list[int]:
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children")
    return [int(pid) for pid in children.read_text().split()] if children.exists() else []


@pytest.mark.postgres  # the server's processes read the test database, which SQLite keeps in memory
def test_metrics_add_up_every_worker_and_survive_a_dead_one(gunicorn: Any) -> None:
    url, server, multiproc = gunicorn
    assert not (multiproc / "counter_999999.db").exists()  # a previous run's files are gone at start
    baseline = _count(_get(f"{url}/metrics")[1], "healthz")  # the start-up probes above
    # Requests four at a time, so that both workers take some (one at a time, an idle worker may take them all);
    # more rounds until both have counted.
    sent = 0
    with ThreadPoolExecutor(4) as pool:
        for _ in range(20):
            assert set(pool.map(lambda _: _get(f"{url}/healthz")[0], range(40))) == {200}
            sent += 40
            writers = {path.name.rsplit("_", 1)[1] for path in multiproc.glob("counter_*.db")}
            if len(writers) >= 2:
                break
    assert len(writers) >= 2, f"only {writers} counted: the requests all went to one worker"
    counted = {_count(_get(f"{url}/metrics")[1], "healthz") for _ in range(6)}
    assert counted == {baseline + sent}  # the same sum whichever worker answered

    pids = _worker_pids(server)
    assert len(pids) == 2
    os.kill(pids[0], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (set(_worker_pids(server)) & {pids[0]} or len(_worker_pids(server)) < 2):
        time.sleep(0.2)
    status, text = _get(f"{url}/metrics")
    assert status == 200
    assert _count(text, "healthz") >= baseline + sent  # the dead worker's requests still count
    assert _count(text, "metrics") >= 7


def test_a_celery_worker_serves_its_own_metrics() -> None:
    counter = Counter("ladder_test_worker_counted", "A counter of this test.")
    counter.inc(3)
    port = _free_port()
    worker_metrics_serve(port, addr="127.0.0.1")
    status, text = _get(f"http://127.0.0.1:{port}/metrics")
    assert status == 200
    assert "ladder_test_worker_counted_total 3.0" in text
