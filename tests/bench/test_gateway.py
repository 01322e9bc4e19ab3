"""The gateway benchmark still runs end to end and its checks pass: calls through the gateway double with a token
reach Ladder once (the JWKS), a burst at an idle endpoint wakes it once and none is lost (tiny sizes, no wrk runs;
needs the local PostgreSQL and Redis)."""

import json
import socket
import subprocess
import sys

from tests.support import ROOT, require


def _reachable(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def test_the_gateway_benchmark_runs_and_its_checks_pass() -> None:
    require(_reachable(5432), "PostgreSQL at 127.0.0.1:5432")
    require(_reachable(6379), "Redis at 127.0.0.1:6379")
    result = subprocess.run(
        [sys.executable, "-m", "bench.gateway", "--rounds", "0", "--calls", "200", "--burst", "40", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["gateway_statuses"] == {"200": 200}
    assert figures["ladder_requests_during_calls"] == {"gateway-jwks": 1}
    assert (figures["burst_wakes"], figures["burst_lost"]) == (1, 0)
    assert figures["burst_answered_200"] + figures["burst_told_to_retry"] == 40
