"""A real Prometheus for the tests: Debian's ``prometheus`` (``make prometheus`` installs it; ``LADDER_PROMETHEUS``
names another binary), started once per test process on a free port with an empty database, scraping every second
the targets a test hands it (``scrape``): the gateway double's Envoy statistics, the simulated fleet's GPU exporter.
Nothing of what Ladder asks it is mocked: Ladder reads it through its HTTP API at ``LADDER_PROMETHEUS_URL``.

Prometheus stamps every sample with its own clock, which the suite cannot move (a Go binary reads the kernel's). A
test that reads it moves the suite's clock to Prometheus's first (:meth:`Prometheus.clock`), so Ladder asks for the
instants Prometheus holds whatever ``--clock`` the run was given.

Without the binary a test that needs it skips, except under ``CI=true``, where it fails (:func:`require`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import time_machine

from tests.support import ROOT, require

DEBIAN_PROMETHEUS = "/usr/bin/prometheus"
ROLLUP_RULES = ROOT / "deploy" / "observability" / "gpu-rollups.rules.yml"
SCRAPE_SECONDS = 1
# Out-of-order ingestion takes samples up to a day old (tests/support/dcgm.py replays hours of history).
# The product's GPU rollup rules (deploy/observability/gpu-rollups.rules.yml) are loaded too, evaluated every scrape
# instead of every five minutes, so a test sees their series within seconds.
CONFIG = """\
global:
  scrape_interval: {interval}s
  scrape_timeout: {interval}s
  evaluation_interval: {interval}s
rule_files: ["{rules}"]
storage:
  tsdb:
    out_of_order_time_window: 1d
scrape_configs:
  - job_name: ladder-tests
    file_sd_configs:
      - files: ["{targets}/*.json"]
        refresh_interval: 1s
"""


def prometheus_path() -> str | None:
    """The Prometheus binary: ``$LADDER_PROMETHEUS`` if set, else ``prometheus`` on the PATH or Debian's."""
    named = os.environ.get("LADDER_PROMETHEUS")
    if named:
        return named if os.access(named, os.X_OK) else None
    return shutil.which("prometheus") or (DEBIAN_PROMETHEUS if os.access(DEBIAN_PROMETHEUS, os.X_OK) else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    """One Prometheus server and the targets it scrapes."""

    def __init__(self, binary: str) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="ladder-prometheus-"))
        self.targets = self.home / "targets"
        self.targets.mkdir()
        rules = self.home / "gpu-rollups.rules.yml"
        rules.write_text(ROLLUP_RULES.read_text().replace("interval: 5m", f"interval: {SCRAPE_SECONDS}s"))
        config = self.home / "prometheus.yml"
        config.write_text(CONFIG.format(interval=SCRAPE_SECONDS, targets=self.targets, rules=rules))
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (self.home / "prometheus.log").open("wb")
        self.process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={self.home / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-admin-api",  # to forget every series between tests (forget_all)
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Prometheus exited: {(self.home / 'prometheus.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as answer:
                if answer.status == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError("Prometheus did not become ready within 30 s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        shutil.rmtree(self.home, ignore_errors=True)

    # --- reading -------------------------------------------------------------------------------------------

    def _data(self, promql: str) -> dict[str, Any]:
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.loads(answer.read())
        assert body["status"] == "success", body
        return dict(body["data"])

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The query's series now, as Prometheus's HTTP API gives them (``metric`` and ``value`` of each)."""
        return list(self._data(promql)["result"])

    def now(self) -> float:
        """Prometheus's clock (unix seconds)."""
        return float(self._data("time()")["result"][1])

    @contextlib.contextmanager
    def clock(self) -> Iterator[None]:
        """The suite's clock moved to Prometheus's, ticking, for the duration."""
        with time_machine.travel(self.now(), tick=True):
            yield

    # --- scraping ------------------------------------------------------------------------------------------

    def scrape(self, name: str, url: str) -> str:
        """Scrape ``url`` (``http://host:port/path``) every second, its series labelled ``target=name``; returns
        ``name`` once Prometheus has scraped it successfully."""
        parsed = urllib.parse.urlsplit(url)
        target = [{"targets": [parsed.netloc], "labels": {"__metrics_path__": parsed.path or "/", "target": name}}]
        written = self.targets / f"{name}.json.tmp"
        written.write_text(json.dumps(target))
        written.rename(self.targets / f"{name}.json")  # atomically: Prometheus never reads half a file
        self.scraped(name, after=0)
        return name

    def scraped(self, name: str, *, after: float | None = None, timeout: float = 30) -> None:
        """Wait until Prometheus has scraped the target ``name`` successfully after ``after`` (its clock; default
        now), so what the target shows now is what Prometheus holds."""
        since = self.now() if after is None else after
        deadline = time.monotonic() + timeout
        up = f'up{{target="{name}"}}'
        while time.monotonic() < deadline:
            found = self.query(f"timestamp({up}) and {up} == 1")  # the last scrape's own time, if it succeeded
            if found and float(found[0]["value"][1]) > since:
                return
            time.sleep(0.2)
        raise AssertionError(f"Prometheus did not scrape {name} within {timeout} s")

    def unscrape_all(self, timeout: float = 10) -> None:
        """Stop scraping every target, and wait until Prometheus has let them go (a scrape after the test ended
        would reach a server the test no longer holds a database for)."""
        for target in self.targets.iterdir():
            target.unlink()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"{self.url}/api/v1/targets?state=active", timeout=10) as answer:
                if not json.loads(answer.read())["data"]["activeTargets"]:
                    # A scrape already under way is cancelled on Prometheus's side, not on the server's: let the
                    # server finish answering it before the test's database goes.
                    time.sleep(SCRAPE_SECONDS + 0.5)
                    return
            time.sleep(0.1)
        raise AssertionError(f"Prometheus still scrapes its targets {timeout} s after they were removed")

    def forget_all(self) -> None:
        """Delete every series Prometheus holds, so the next test reads only what it had scraped (the simulated
        fleet's GPUs have the same UUIDs in every test: one test's samples must not be another's)."""
        query = urllib.parse.urlencode({"match[]": '{__name__=~".+"}'})
        request = urllib.request.Request(f"{self.url}/api/v1/admin/tsdb/delete_series?{query}", method="POST")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 204, answer.status


_server: Prometheus | None = None


def prometheus_server() -> Prometheus:
    """This test process's Prometheus, started on first use (the test skips without a binary, fails under CI)."""
    global _server
    if _server is None:
        binary = prometheus_path()
        require(binary is not None, "Prometheus (`make prometheus` installs Debian's prometheus)")
        assert binary is not None
        _server = Prometheus(binary)
    return _server


def prometheus_stop() -> None:
    global _server
    if _server is not None:
        _server.stop()
        _server = None
