"""The fault run: ``python -m bench.faults [--window 60] [--down 5] [--users 10]`` (``make faults``).

Brings Ladder up as the load run does (``bench/load/stack.py``) and, under locust's customer API mix, injects in
turn, each with usage waiting to be pushed to Stripe (rollups of past hours, pending):

- ``postgres``: the machine's PostgreSQL cluster stopped (``pg_ctlcluster --skip-systemctl-redirect 15 main stop``),
  held down ``--down`` seconds, and started again: a restart long enough to see;
- ``redis``: Redis shut down (``redis-cli shutdown nosave``), held down ``--down`` seconds, started again as the
  machine runs it;
- ``worker``: the Celery worker killed (SIGKILL) while it pushes to Stripe (once Stripe has taken a third of the
  queued events, at most 20), a new one started ``--down`` seconds later;
- ``stripe``: the local Stripe server answering 500s for half of ``--window`` seconds, then holding requests and
  dropping them unanswered (timeouts) for the other half.

After each: ``/readyz`` (polled throughout) went 503 during the fault and 200 after, for what it checks (database,
broker), and stayed 200 otherwise; no 5xx outside the fault (the clients' journal); no allocation lost or
double-booked (the database against what the clients were told); once the pusher has caught up, Stripe's meters
equal the ledger (``bench/faults/checks.py``); the audit chain verifies (``manage.py audit_verify``). Prints a
table; exits 1 on a failed check. Whatever it stops is running again when it ends, even on error; it waits until
PostgreSQL and Redis accept connections. ``--only`` picks faults.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.faults.checks import Check, allocations, errors_outside, journal, readiness, stripe_matches_ledger
from bench.load.__main__ import locust_wait, swarm
from bench.load.stack import Stack

PG_VERSION, PG_CLUSTER = "15", "main"
REDIS_START = [
    "redis-server",
    "--daemonize",
    "yes",
    "--bind",
    "127.0.0.1",
    "-::1",
    "--port",
    "6379",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    "/var/lib/redis",
    "--logfile",
    "/var/log/redis/ci.log",
]
FAULTS = ("postgres", "redis", "worker", "stripe")

# The outbox and what Stripe should hold, read in the scratch database (``manage.py shell``), as JSON.
LEDGER = """
import json
from collections import Counter
from billing.models import BillingAccount, PushState, UsageRollup
customers = dict(BillingAccount.objects.values_list("tenant_id", "stripe_customer_id"))
states, sent, ids = Counter(), Counter(), []
for r in UsageRollup.objects.select_related("price__sku"):
    states[r.push_state] += 1
    if r.push_state == PushState.SENT:
        sent[f"{customers[r.tenant_id]}|{r.price.event_name}"] += r.meter_value
        ids.append(r.identifier)
print(json.dumps({"states": states, "sent": sent, "identifiers": ids}))
"""

ALLOCATIONS = (
    "SELECT a.id, a.state, coalesce(json_agg(json_build_array(d.hostname, d.gpu_index)) "
    "FILTER (WHERE d.id IS NOT NULL), '[]') FROM provisioning_allocation a "
    "LEFT JOIN provisioning_allocationdevice d ON d.allocation_id = a.id GROUP BY a.id, a.state"
)
WAITING = "SELECT count(*) FROM billing_usagerollup WHERE push_state IN ('pending', 'sending')"
DOUBLY_HELD = (
    "SELECT d.hostname || '/' || d.gpu_index FROM provisioning_allocationdevice d "
    "JOIN provisioning_allocation a ON a.id = d.allocation_id "
    "WHERE d.active AND d.share_milli IS NULL AND d.mig_profile = '' AND a.state NOT IN ('stopped', 'failed') "
    "GROUP BY d.hostname, d.gpu_index HAVING count(*) > 1"
)


# --- the machine's services ----------------------------------------------------------------------------------


def _run(command: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def postgres_up() -> bool:
    return _run(["pg_isready", "-h", "127.0.0.1", "-p", "5432", "-t", "2"]).returncode == 0


def redis_up() -> bool:
    done = _run(["redis-cli", "-h", "127.0.0.1", "-p", "6379", "ping"], timeout=5)
    return done.returncode == 0 and done.stdout.strip() == "PONG"


def wait_until(up: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if up():
            return
        time.sleep(0.2)
    raise SystemExit(f"{what} did not accept connections within {timeout:.0f} s")


def postgres_stop() -> None:
    _run(["pg_ctlcluster", "--skip-systemctl-redirect", PG_VERSION, PG_CLUSTER, "stop", "-m", "fast"], timeout=120)


def postgres_start() -> None:
    if not postgres_up():
        _run(["pg_ctlcluster", "--skip-systemctl-redirect", PG_VERSION, PG_CLUSTER, "start"], timeout=120)
    wait_until(postgres_up, "PostgreSQL")


def redis_stop() -> None:
    _run(["redis-cli", "-h", "127.0.0.1", "-p", "6379", "shutdown", "nosave"], timeout=30)


def redis_start() -> None:
    if not redis_up():
        _run(REDIS_START, timeout=30)
    wait_until(redis_up, "Redis")


def services_ensure() -> None:
    """PostgreSQL and Redis running and accepting connections, whatever happened."""
    postgres_start()
    redis_start()


# --- one fault -----------------------------------------------------------------------------------------------


@dataclass
class Fault:
    name: str
    what: str
    api_depends: bool  # /readyz checks it, and the API may fail while it is away
    inject: Callable[[], None]
    restore: Callable[[], None]
    hold: float  # seconds between inject and restore


class Poller(threading.Thread):
    """Polls ``/readyz`` every 0.1 s until stopped."""

    def __init__(self, stack: Stack) -> None:
        super().__init__(daemon=True)
        self.stack, self.polls, self.running = stack, list[tuple[float, int]](), True

    def run(self) -> None:
        while self.running:
            self.polls.append((time.time(), self.stack.ready()))
            time.sleep(0.1)

    def stop(self) -> list[tuple[float, int]]:
        self.running = False
        self.join()
        return self.polls


def ledger_check(stack: Stack, timeout: float) -> tuple[bool, str]:
    """Waits (up to ``timeout``) for the pusher to catch up, then compares Stripe with the ledger."""
    assert stack.stripe is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and stack.psql(WAITING)[0][0] != "0":
        time.sleep(1)
    read = json.loads(stack.script(LEDGER))
    meters = {
        key: stack.stripe.meter_total(event_name=key.split("|")[1], customer=key.split("|")[0]) for key in read["sent"]
    }
    events = [e["identifier"] for e in stack.stripe.events()]
    return stripe_matches_ledger(read["states"], read["sent"], meters, read["identifiers"], events)


def audit_check(stack: Stack) -> tuple[bool, str]:
    """``manage.py audit_verify`` on the scratch database: the chain is whole after the fault (exit 0), or the first
    bad event is named."""
    try:
        said = stack.manage("audit_verify").strip().splitlines()
    except SystemExit as failed:  # the command's exit 1 and what it said
        return False, str(failed).strip().splitlines()[-1]
    return True, said[-1] if said else "intact"


def allocation_check(stack: Stack, path: Path) -> tuple[bool, str]:
    placed, stopped, _ = journal(path.read_text().splitlines() if path.exists() else [])
    found = {int(i): (state, json.loads(devices)) for i, state, devices in stack.psql(ALLOCATIONS)}
    doubly = [row[0] for row in stack.psql(DOUBLY_HELD)]
    return allocations(placed, stopped, found, doubly)


@dataclass(frozen=True)
class Plan:
    users: int
    rollups: int  # per tenant, queued before each fault
    drain: float  # seconds allowed for the pusher to catch up
    lead: float  # seconds of load before a fault
    tail: float  # seconds of load after the service is back


def run_fault(stack: Stack, fault: Fault, plan: Plan, offset: int) -> list[Check]:
    started = time.monotonic()
    added = stack.rollups_add(plan.rollups, offset)
    path = stack.scratch / f"journal-{fault.name}.jsonl"
    run_time = plan.lead + fault.hold + plan.tail + 60  # stopped earlier: once the service is back, plus the tail
    prefix = swarm(stack, users=plan.users, spawn_rate=plan.users, run_time=run_time, journal=path)
    poller = Poller(stack)
    restarts_before = sum(stack.restarts.values())
    poller.start()
    back: float | None = None
    try:
        time.sleep(plan.lead)
        began = time.time()
        fault.inject()
        time.sleep(fault.hold)
        fault.restore()
        try:
            stack.wait_ready(90)
            back = time.time()
        except SystemExit:
            back = None
        time.sleep(plan.tail)
    finally:
        polls = poller.stop()
        if stack.locust is not None:
            stack.locust.terminate()  # locust writes its CSV files as it stops
    rows, _ = locust_wait(stack, prefix, timeout=60)
    total = rows[-1] if rows else None
    _, _, errors = journal(path.read_text().splitlines() if path.exists() else [])
    results = [
        Check(fault.name, "readyz", *readiness(polls, began, back, expect_unready=fault.api_depends)),
        Check(fault.name, "no 5xx outside", *errors_outside(errors, began, back, api_depends=fault.api_depends)),
        Check(fault.name, "allocations", *allocation_check(stack, path)),
        Check(fault.name, "stripe = ledger", *ledger_check(stack, plan.drain)),
        Check(fault.name, "audit chain", *audit_check(stack)),
    ]
    served = f"{total.requests} requests, {total.failures} failed" if total else "no requests"
    restarted = sum(stack.restarts.values()) - restarts_before
    if restarted:
        served += f"; Celery processes that exited and were restarted: {restarted}"
    took = time.monotonic() - started
    print(f"  {fault.name}: {fault.what}; {served}; {added} rollups queued for Stripe; {took:.0f} s", flush=True)
    return results


def faults(stack: Stack, window: float, down: float) -> dict[str, Fault]:
    def worker_kill_mid_push() -> None:
        assert stack.stripe is not None
        before = len(stack.stripe.events())
        stack.push()
        deadline = time.monotonic() + 30
        into = max(1, min(20, stack.queued // 3))  # events Stripe has taken when the worker dies
        while time.monotonic() < deadline and len(stack.stripe.events()) < before + into:
            time.sleep(0.02)
        stack.worker_kill()

    def stripe_errors_then_timeouts() -> None:
        assert stack.stripe is not None
        stack.stripe.fault = "error"
        time.sleep(window / 2)
        stack.stripe.fault = "timeout"

    def stripe_clear() -> None:
        assert stack.stripe is not None
        stack.stripe.fault = None

    return {
        "postgres": Fault(
            "postgres", f"PostgreSQL stopped {down:g} s, started", True, postgres_stop, postgres_start, down
        ),
        "redis": Fault("redis", f"Redis shut down {down:g} s, started", True, redis_stop, redis_start, down),
        "worker": Fault(
            "worker",
            f"worker SIGKILLed during a push, a new one {down:g} s later",
            False,
            worker_kill_mid_push,
            stack.worker_start,
            down,
        ),
        "stripe": Fault(
            "stripe",
            f"Stripe 500s {window / 2:g} s then timeouts {window / 2:g} s",
            False,
            stripe_errors_then_timeouts,
            stripe_clear,
            window / 2,
        ),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=60, help="seconds Stripe fails (default 60)")
    parser.add_argument("--down", type=float, default=5, help="seconds PostgreSQL and Redis stay down (default 5)")
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--rollups", type=int, default=100, help="rollups per tenant queued before each fault")
    parser.add_argument("--meter-rate", type=int, default=200, help="the pusher's meter events a second")
    parser.add_argument("--drain", type=float, default=300, help="seconds allowed for the pusher to catch up")
    parser.add_argument("--lead", type=float, default=5, help="seconds of load before each fault (default 5)")
    parser.add_argument("--tail", type=float, default=10, help="seconds of load once it is back (default 10)")
    parser.add_argument("--only", nargs="+", choices=FAULTS, default=list(FAULTS))
    parser.add_argument("--nodes", type=int, default=32)
    parser.add_argument("--tenants", type=int, default=6)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--database", default="ladder_load_faults")
    parser.add_argument("--port", type=int, default=8792)
    args = parser.parse_args(argv)

    stack = Stack(
        database=args.database,
        server=args.server,
        port=args.port,
        nodes=args.nodes,
        tenants=args.tenants,
        meter_rate=args.meter_rate,
    )
    results: list[Check] = []
    began = time.monotonic()
    try:
        services_ensure()
        stack.start()
        chosen = faults(stack, args.window, args.down)
        plan = Plan(args.users, args.rollups, args.drain, args.lead, args.tail)
        for offset, name in enumerate(args.only):
            results += run_fault(stack, chosen[name], plan, offset * args.rollups)
    finally:
        try:
            if stack.stripe is not None:
                stack.stripe.fault = None
            services_ensure()
        finally:
            stack.close()

    width = max(len(r.fault) for r in results)
    print(f"faults: {len(args.only)} in {time.monotonic() - began:.0f} s")
    print(f"{'fault':<{width}}  {'check':<15}  result")
    for r in results:
        print(f"{r.fault:<{width}}  {r.name:<15}  {'ok  ' if r.ok else 'FAIL'}  {r.detail}")
    failed = [r for r in results if not r.ok]
    if failed:
        raise SystemExit(f"faults: {len(failed)} of {len(results)} checks failed")


if __name__ == "__main__":
    main(sys.argv[1:])
