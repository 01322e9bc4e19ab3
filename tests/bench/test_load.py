"""The load run still runs end to end (a few seconds, three customers, its own scratch database on the local
PostgreSQL, a worker on Redis db 14): every endpoint of the mix is answered, none fails, and the figures are read
from locust's CSV. The CSV reader itself is checked on a file of locust's format."""

import json
import socket
import subprocess
import sys

from bench.load.report import endpoints, failures, table
from tests.support import ROOT, redis_reachable, require

STATS = """Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,Min Response Time,\
Max Response Time,Average Content Size,Requests/s,Failures/s,50%,66%,75%,80%,90%,95%,98%,99%,99.9%,99.99%,100%
GET,GET /tenant,120,0,14,16.2,9,80,410,4.0,0.0,14,16,18,19,24,30,41,52,80,80,80
POST,POST /allocations,30,3,48,51.0,30,200,900,1.0,0.1,48,52,57,60,70,90,150,190,200,200,200
,Aggregated,150,3,17,23.0,9,200,508,5.0,0.1,17,20,24,27,40,55,90,150,200,200,200
"""
FAILURES = """Method,Name,Error,Occurrences
POST,POST /allocations,500,2
POST,POST /allocations,ConnectionResetError(104),1
"""


def test_locusts_csv_is_read_per_endpoint():
    rows = endpoints(STATS)
    assert [(r.name, r.requests, r.failures, r.p50_ms, r.p99_ms) for r in rows] == [
        ("GET /tenant", 120, 0, 14.0, 52.0),
        ("POST /allocations", 30, 3, 48.0, 190.0),
        ("Aggregated", 150, 3, 17.0, 150.0),
    ]
    assert rows[-1].error_rate == 0.02
    assert rows[-1].per_second == 5.0
    assert failures(FAILURES) == [
        ("POST /allocations", "500", 2),
        ("POST /allocations", "ConnectionResetError(104)", 1),
    ]
    shown = table(rows).splitlines()
    assert shown[0].split() == ["endpoint", "requests", "req/s", "p50", "ms", "p99", "ms", "errors"]
    assert shown[2].split() == ["POST", "/allocations", "30", "1.0", "48", "190", "3"]


def _services() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
    except OSError:
        return False
    return redis_reachable("redis://127.0.0.1:6379/14")


def test_the_load_run_answers_every_endpoint_of_the_mix_without_errors():
    require(_services(), "PostgreSQL at 127.0.0.1:5432 and Redis at 127.0.0.1:6379")
    command = [sys.executable, "-m", "bench.load", "--run-time", "8", "--users", "3", "--spawn-rate", "3"]
    command += ["--nodes", "4", "--tenants", "2", "--database", "ladder_load_smoke", "--port", "8793", "--json"]
    result = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["errors"] == 0, summary["failures"]
    assert summary["requests"] > 20
    answered = {row["name"] for row in summary["endpoints"] if row["requests"]}
    for endpoint in ("GET /tenant", "GET /allocations", "POST /allocations", "GET /usage", "GET /invoices"):
        assert endpoint in answered
    total = summary["endpoints"][-1]
    assert total["name"] == "Aggregated"
    assert 0 < total["p50_ms"] <= total["p99_ms"]
