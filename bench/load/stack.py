"""Ladder as production runs it, on loopback, for the load and fault runs: a scratch PostgreSQL database (dropped,
created, migrated, seeded), gunicorn, a Celery worker and beat on Redis, and the local Stripe server
(``tests/fakes/stripe.py``) in this process, which the product reaches through the official ``stripe`` client.

Every process is started here and stopped by ``close`` (the runners call it in ``finally``); none listens beyond
127.0.0.1. The Celery processes use a queue of their own on their Redis database, which ``close`` empties. As a
deployment's supervisor does (Kubernetes restarts a container whose process exits), a Celery worker or beat that
exits on its own is started again, and counted (``restarts``): Celery exits when it cannot reconnect to a broker
that went away ("Unrecoverable error"), so a deployment relies on that restart.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tests.fakes.stripe import StripeServer

ROOT = Path(__file__).resolve().parents[2]
STRIPE_KEY = "sk_test_ladder_load"
GPU_MODEL = "H100-SXM-80GB"
QUEUE = "ladder-load"

# Run by ``manage.py shell`` in the scratch database: the fleet, a price, the catalog in Stripe, tenants with an
# API key each (read and write) and a Stripe customer and subscription, printed as JSON.
SEED = """
import json, sys
from datetime import timedelta
from decimal import Decimal
from django.utils import timezone
from billing.models import Sku, SkuPrice
from billing.services.stripe_sync import stripe_account_sync, stripe_enabled, stripe_sync_catalog
from core.actor import Actor
from lifecycle.services.customers import tenant_signup
from provisioning.models import GpuModel, Region
from provisioning.services.fleet import fleet_load
from tenancy.services import api_key_create
nodes, tenants, model = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
actor = Actor.system("load")
fleet_load(document={"regions": [{"code": "load", "name": "Load", "jurisdiction": "EU", "halls": [
    {"code": "load-1a", "fenced_for": None, "nodes": [
        {"hostname": f"l{i:04d}", "gpu_model": model, "gpu_count": 8, "nvlink_domain": f"load-1a/nvl-{i // 16}",
         "cc_capable": False,
         "versions": {"driver": "580.65", "cuda": "13.0", "nccl": "2.27", "firmware": "96.00"}}
        for i in range(nodes)]}]}]}, actor=actor)
sku = Sku(rung="container", gpu_model=GpuModel.objects.get(name=model), unit="gpu", mig_profile="",
          region=Region.objects.get(code="load"))
sku.save()
SkuPrice.objects.create(sku=sku, effective_from=timezone.now() - timedelta(days=60),
                        unit_price_per_hour=Decimal("2.50"))
if stripe_enabled():
    stripe_sync_catalog()
keys = []
for t in range(tenants):
    tenant = tenant_signup(slug=f"load-{t}", name=f"Load {t}", username=f"load{t}", email=f"l{t}@load.example",
                           password=None, actor=actor)
    if stripe_enabled():
        stripe_account_sync(tenant=tenant)
    user = tenant.memberships.get().user
    keys.append(api_key_create(user=user, name="load", scopes=["read", "write"], expires_at=None, actor=actor).token)
print(json.dumps({"keys": keys}))
"""

# Closed usage waiting for the pusher (rollups of past hours, pending), as the window closer leaves it: ``n`` per
# tenant, in the hours before ``top`` (epoch ms, fixed for the run) that no earlier call used (``offset``).
ROLLUPS = """
import sys
from billing.models import PushState, SkuPrice, UsageRollup
from tenancy.models import Tenant
n, offset, top_ms = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
price = SkuPrice.objects.select_related("sku").get()
HOUR_MS = 3_600_000
rows = [
    UsageRollup(tenant=tenant, sku=price.sku, price=price, window_ms=top_ms - (offset + h) * HOUR_MS, batch=1,
                quantity_milli=(1 + (t + h) % 4) * 3_600_000, amount=price.unit_price_per_hour * (1 + (t + h) % 4),
                currency="usd", meter_value=(1 + (t + h) % 4) * 3_600, push_state=PushState.PENDING)
    for t, tenant in enumerate(Tenant.objects.order_by("pk")) for h in range(n)
]
UsageRollup.objects.bulk_create(rows)
print(len(rows))
"""


@dataclass
class Stack:
    """The processes of one run; ``start`` brings them up, ``close`` takes them down."""

    database: str
    server: str = "postgres://postgres@127.0.0.1:5432/postgres"
    broker: str = "redis://127.0.0.1:6379/14"
    port: int = 8791
    nodes: int = 32
    tenants: int = 8
    workers: int = 2
    meter_rate: int = 200  # the pusher's meter events a second (Stripe's test-mode limit is far lower)
    lease_seconds: int = 5  # a dead pusher's rows are sent again this soon after
    scratch: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ladder-load-")))
    stripe: StripeServer | None = None
    web: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None
    beat: subprocess.Popen[bytes] | None = None
    locust: subprocess.Popen[bytes] | None = None
    keys_file: Path | None = None
    queued: int = 0  # rollups the last ``rollups_add`` queued
    restarts: Counter[str] = field(default_factory=Counter)  # Celery processes that exited on their own, restarted
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _supervisor: threading.Thread | None = None
    _closing: bool = False
    # The hour the queued usage counts back from: two before the run began (closed, within Stripe's 35 days).
    top_ms: int = field(default_factory=lambda: (int(time.time()) // 3600 - 2) * 3_600_000)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def database_url(self) -> str:
        return urlparse(self.server)._replace(path=f"/{self.database}").geturl()

    def env(self) -> dict[str, str]:
        assert self.stripe is not None
        env = dict(os.environ)
        for name in ("DJANGO_SETTINGS_MODULE", "LADDER_TEST_CLOCK", "CACHE_URL"):
            env.pop(name, None)
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DATABASE_URL=self.database_url,
            CELERY_BROKER_URL=self.broker,
            CELERY_TASK_DEFAULT_QUEUE=QUEUE,
            SECRET_KEY="load-run-secret-not-for-production",
            DEBUG="0",
            ALLOWED_HOSTS="127.0.0.1,localhost",
            LADDER_TASKS_INLINE="0",
            LADDER_API_RATE="1000000/min",
            LADDER_SIM_PROVISION_SECONDS="1",
            LADDER_RECONCILE_EVERY_SECONDS="2",
            LADDER_BILLING_PUSH_EVERY_SECONDS="5",
            LADDER_BILLING_PUSH_LEASE_SECONDS=str(self.lease_seconds),
            STRIPE_API_KEY=STRIPE_KEY,
            STRIPE_API_BASE=self.stripe.url,
            STRIPE_METER_EVENTS_PER_SECOND=str(self.meter_rate),
            LADDER_STORAGE_URL=f"file://{self.scratch}/storage/{{region}}",
            LADDER_EXPORT_DIR=str(self.scratch / "exports"),
            LOG_LEVEL="WARNING",
        )
        return env

    def manage(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode:
            raise SystemExit(f"manage.py {args[0]} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    def script(self, code: str, *argv: object) -> str:
        """``code`` run by ``manage.py shell`` in the scratch database; its last line of output."""
        prelude = f"import sys; sys.argv = ['', {', '.join(repr(str(a)) for a in argv)}]\n"
        return self.manage("shell", "-c", prelude + code).strip().splitlines()[-1]

    def psql(self, statement: str) -> list[list[str]]:
        done = subprocess.run(
            ["psql", self.database_url, "-AtF", "\t", "-c", statement], capture_output=True, text=True, timeout=60
        )
        if done.returncode:
            raise RuntimeError(done.stderr.strip())
        return [line.split("\t") for line in done.stdout.splitlines() if line]

    # --- bringing it up --------------------------------------------------------------------------------------

    def start(self) -> None:
        self.stripe = StripeServer(api_key=STRIPE_KEY).start()
        admin = urlparse(self.server)._replace(path="/postgres").geturl()
        for statement in (f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)", f"CREATE DATABASE {self.database}"):
            done = subprocess.run(["psql", admin, "-qc", statement], capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"cannot use PostgreSQL at {admin}: {done.stderr.strip()}")
        self.queue_forget()
        self.manage("migrate", "--noinput", "-v0")
        seeded = json.loads(self.script(SEED, self.nodes, self.tenants, GPU_MODEL))
        self.keys_file = self.scratch / "keys.json"
        self.keys_file.write_text(json.dumps(seeded))
        self.web_start()
        self.worker_start()
        self.beat_start()
        self._supervisor = threading.Thread(target=self._supervise, name="supervisor", daemon=True)
        self._supervisor.start()

    def _supervise(self) -> None:
        while not self._closing:
            with self._lock:
                for name in ("worker", "beat"):
                    process = getattr(self, name)
                    if process is not None and process.poll() is not None and not self._closing:
                        self.restarts[name] += 1
                        getattr(self, f"{name}_start")()
            time.sleep(0.5)

    def _spawn(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        log = (self.scratch / f"{name}.log").open("ab")
        return subprocess.Popen(command, cwd=ROOT, env=self.env(), stdout=log, stderr=subprocess.STDOUT)

    def web_start(self) -> None:
        gunicorn = str(Path(sys.executable).with_name("gunicorn"))
        command = [gunicorn, "config.wsgi:application", "--workers", str(self.workers), "--threads", "1"]
        if not (ROOT / "config" / "gunicorn.conf.py").exists():  # its own settings, once the repository has them
            command += ["--worker-class", "sync", "--timeout", "30", "--log-level", "warning"]
        self.web = self._spawn("gunicorn", [*command, "--bind", f"127.0.0.1:{self.port}"])
        self.wait_ready(60)

    def worker_start(self) -> None:
        celery = str(Path(sys.executable).with_name("celery"))
        self.worker = self._spawn(
            "worker",
            [
                celery,
                "-A",
                "config",
                "worker",
                "--pool",
                "solo",
                "-Q",
                QUEUE,
                "--loglevel",
                "warning",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
        )

    def beat_start(self) -> None:
        celery = str(Path(sys.executable).with_name("celery"))
        schedule = str(self.scratch / "beat-schedule")
        self.beat = self._spawn("beat", [celery, "-A", "config", "beat", "-s", schedule, "--loglevel", "warning"])

    def worker_kill(self) -> None:
        """SIGKILL: no chance to finish, acknowledge or release anything."""
        with self._lock:  # not the supervisor's to restart: the fault's restore starts the next one
            worker, self.worker = self.worker, None
        if worker is not None:
            worker.send_signal(signal.SIGKILL)
            worker.wait()

    # --- looking at it ---------------------------------------------------------------------------------------

    def ready(self) -> int:
        """``/readyz``'s status (0: no answer)."""
        try:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            connection.request("GET", "/readyz")
            status = connection.getresponse().status
            connection.close()
            return status
        except OSError:
            return 0

    def wait_ready(self, timeout: float) -> float:
        """Seconds until ``/readyz`` answers 200."""
        began = time.monotonic()
        while time.monotonic() - began < timeout:
            if self.ready() == 200:
                return time.monotonic() - began
            if self.web is not None and self.web.poll() is not None:
                raise SystemExit(f"gunicorn exited: {self.log_tail('gunicorn')}")
            time.sleep(0.2)
        raise SystemExit(f"/readyz did not answer 200 within {timeout:.0f} s: {self.log_tail('gunicorn')}")

    def log_tail(self, name: str) -> str:
        path = self.scratch / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def rollups_add(self, per_tenant: int, offset: int) -> int:
        self.queued = int(self.script(ROLLUPS, per_tenant, offset, self.top_ms))
        return self.queued

    def push(self) -> None:
        """Queue a push to Stripe now, as the beat entry does."""
        celery = str(Path(sys.executable).with_name("celery"))
        subprocess.run(
            [celery, "-A", "config", "call", "billing.tasks.billing_push", "--queue", QUEUE],
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            check=True,
            timeout=60,
        )

    def queue_forget(self) -> None:
        """Nothing of the run's queue left in Redis (a killed worker's unacknowledged message included)."""
        import redis

        try:
            client: Any = redis.Redis.from_url(self.broker, socket_timeout=5)
            client.delete(QUEUE, "unacked", "unacked_index", f"_kombu.binding.{QUEUE}")
        except redis.RedisError:
            pass

    # --- taking it down --------------------------------------------------------------------------------------

    def close(self) -> None:
        self._closing = True
        if self._supervisor is not None:
            self._supervisor.join()
        for process in (self.locust, self.beat, self.worker, self.web):
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.locust = self.beat = self.worker = self.web = None
        self.queue_forget()
        if self.stripe is not None:
            self.stripe.stop()
            self.stripe = None
