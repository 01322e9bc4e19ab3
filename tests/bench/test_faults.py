"""The fault run still runs end to end with short windows (3 s each; its own scratch database; three customers):
PostgreSQL stopped and started, Redis shut down and started, a worker killed during a Stripe push, Stripe failing,
and every check passes. It restarts the machine's PostgreSQL and Redis (the suite runs serially), and the test
returns only once both accept connections again. The checks themselves are tested on recorded data first."""

import socket
import subprocess
import sys

from django.db import connections

from bench.faults.__main__ import FAULTS
from bench.faults.checks import allocations, errors_outside, readiness, stripe_matches_ledger
from tests.support import ROOT, redis_reachable, require


def test_readiness_must_drop_for_what_it_checks_and_hold_for_the_rest():
    polls = [(0.0, 200), (1.0, 503), (2.0, 503), (3.0, 200), (4.0, 200)]
    assert readiness(polls, 0.5, 3.0, expect_unready=True)[0]
    assert not readiness([(t, 200) for t, _ in polls], 0.5, 3.0, expect_unready=True)[0]
    assert not readiness(polls, 0.5, None, expect_unready=True)[0]  # never back
    assert readiness([(t, 200) for t, _ in polls], 0.5, 3.0, expect_unready=False)[0]
    assert not readiness(polls, 0.5, 3.0, expect_unready=False)[0]


def test_server_errors_count_only_outside_the_fault():
    during = {"t": 2.0, "ms": 500, "name": "GET /tenant", "status": 500}
    after = {"t": 9.0, "ms": 100, "name": "GET /tenant", "status": 500}
    began_during = {"t": 6.0, "ms": 2000, "name": "POST /allocations", "status": 502}  # started at 4, back at 5
    assert errors_outside([during, began_during], 1.0, 5.0, api_depends=True) == (
        True,
        "none outside (2 during the fault)",
    )
    ok, detail = errors_outside([during, after], 1.0, 5.0, api_depends=True)
    assert not ok
    assert "GET /tenant 500 x1" in detail
    assert not errors_outside([during], 1.0, 5.0, api_depends=False)[0]  # the API does not depend on it


def test_allocations_are_compared_with_what_the_clients_were_told():
    placed = {1: [["n1", 0]], 2: [["n1", 1]]}
    found = {1: ("running", [["n1", 0]]), 2: ("stopping", [["n1", 1]])}
    assert allocations(placed, [2], found, [])[0]
    assert "1 lost" in allocations(placed, [], {2: found[2]}, [])[1]
    assert "not on the devices named" in allocations(placed, [], {**found, 1: ("running", [["n1", 5]])}, [])[1]
    assert "told stopping but running" in allocations(placed, [1], found, [])[1]
    assert "GPUs held twice: n1/0" in allocations(placed, [], found, ["n1/0"])[1]


def test_stripe_is_compared_with_the_outbox_as_reconciliation_does():
    states, sent = {"sent": 2}, {"cus_1|m": 7200}
    assert stripe_matches_ledger(states, sent, {"cus_1|m": 7200}, ["a", "b"], ["a", "b"])[0]
    assert "meters differ" in stripe_matches_ledger(states, sent, {"cus_1|m": 3600}, ["a", "b"], ["a", "b"])[1]
    assert "more than once" in stripe_matches_ledger(states, sent, sent, ["a", "b"], ["a", "b", "b"])[1]
    assert "missing in Stripe" in stripe_matches_ledger(states, sent, sent, ["a", "b"], ["a"])[1]
    assert "not sent" in stripe_matches_ledger({"sent": 2, "failed": 1}, sent, sent, ["a", "b"], ["a", "b"])[1]


def _accepting(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_the_fault_run_passes_every_check_with_short_windows():
    require(_accepting(5432) and redis_reachable("redis://127.0.0.1:6379/14"), "PostgreSQL and Redis")
    command = [sys.executable, "-m", "bench.faults", "--window", "3", "--down", "3", "--lead", "1", "--tail", "2"]
    command += ["--users", "3", "--rollups", "30", "--meter-rate", "50", "--nodes", "2", "--tenants", "2"]
    command += ["--database", "ladder_load_faults_smoke", "--port", "8794", "--drain", "120"]
    try:
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=420)
    finally:
        connections.close_all()  # this process's connections did not survive the restart
    # The runner waits for both before it returns, whatever happened.
    assert _accepting(5432)
    assert redis_reachable("redis://127.0.0.1:6379/14")
    assert result.returncode == 0, result.stdout + result.stderr
    table = [line.split() for line in result.stdout.splitlines()]
    checks = [row for row in table if row and row[0] in FAULTS]  # "<fault>  <check>  ok|FAIL  <detail>"
    assert len(checks) == 5 * len(FAULTS), result.stdout
    assert all("ok" in row and "FAIL" not in row for row in checks), result.stdout
    assert sum(1 for row in checks if row[1:3] == ["audit", "chain"]) == len(FAULTS), result.stdout
