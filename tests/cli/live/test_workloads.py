"""Running work from a terminal, with the installed ``ladder`` against a live Ladder: ps, show, logs, events, stop,
ssh, url and endpoint call.

The demo allocations are shared by every test of the process: these tests read them (and wake the demo endpoint,
which idles again by itself) but never stop them; what a test stops it launched itself, named after the test.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from tests.support.cli import LADDER, LiveLadder

DEMO = {"notebook", "inference", "workstation", "metal", "pretrain"}


def _api(live: LiveLadder, user: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        f"{live.url}/api/v1/{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {live.key(user)}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _launch(live: LiveLadder, name: str) -> dict[str, Any]:
    """A one-GPU container of bob's (acme), running."""
    body = {
        "name": name,
        "rung": "container",
        "gpu_model": "H100-SXM-80GB",
        "gpus": 1,
        "workload": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "command": ["python", "train.py"]},
    }
    allocation = _api(live, "bob", "POST", "allocations", body)
    return _until(lambda: _api(live, "bob", "GET", f"allocations/{allocation['id']}"), "running")


def _until(read: Callable[[], dict[str, Any]], state: str, seconds: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        current = read()
        if current["state"] == state or time.monotonic() > deadline:
            assert current["state"] == state, current
            return current
        time.sleep(0.25)


def _demo(live: LiveLadder, name: str) -> dict[str, Any]:
    found = [a for a in _api(live, "alice", "GET", "allocations")["results"] if a["name"] == name]
    assert len(found) == 1
    return dict(found[0])


def test_ps_lists_the_live_allocations_and_json_parses(live: LiveLadder, home: Path) -> None:
    done = live.ladder("ps", home=home, user="alice")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["NAME", "ID", "RUNG", "STATE", "GPUS", "MODEL", "REGION", "AGE"]
    assert {row.split()[0] for row in rows} >= DEMO
    pretrain = next(row for row in rows if row.startswith("pretrain "))
    assert " job " in pretrain
    assert "2x8 GPUs" in pretrain
    assert "H100-SXM-80GB" in pretrain
    assert "eu-west" in pretrain

    listed = json.loads(live.ladder("ps", "--json", home=home, user="alice").stdout)
    assert {row["name"] for row in listed} >= DEMO
    assert all(row["state"] not in ("stopped", "failed") for row in listed)
    everything = json.loads(live.ladder("ps", "--all", "--json", home=home, user="alice").stdout)
    assert {row["id"] for row in everything} >= {row["id"] for row in listed}
    assert "notebook" not in {
        row["name"] for row in json.loads(live.ladder("ps", "--json", home=home, user="charlie").stdout)
    }


def test_show_by_name_and_by_id(live: LiveLadder, home: Path) -> None:
    notebook = _demo(live, "notebook")
    done = live.ladder("show", "notebook", home=home, user="alice")
    later = _demo(live, "notebook")  # the demo's notebook may finish provisioning while the command runs
    assert done.returncode == 0, done.stderr
    state = next(line for line in done.stdout.splitlines() if line.startswith("State "))
    assert done.stdout.startswith(f"Name                   notebook (id {notebook['id']})")
    for label in ("Performance isolation", "Security isolation", "Devices", "Command", "Goodput lost", "Restarts"):
        assert label in done.stdout
    assert "whole_gpu" in done.stdout
    assert notebook["security_isolation"] in done.stdout
    assert f"eu-west (hall {notebook['hall']})" in done.stdout
    assert "nvcr.io/nvidia/pytorch:25.01-py3" in done.stdout
    assert notebook["access"]["urls"]["8888"] in done.stdout
    assert state.split()[2] == "since"
    assert state.split()[1] in {notebook["state"], later["state"]}

    by_id = live.ladder("show", str(notebook["id"]), "--json", home=home, user="alice")
    assert by_id.returncode == 0, by_id.stderr
    data = json.loads(by_id.stdout)
    assert (data["name"], data["access"], data["performance_isolation"]) == (
        "notebook",
        notebook["access"],
        notebook["performance_isolation"],
    )
    pretrain = live.ladder("show", "pretrain", home=home, user="alice").stdout
    assert "Fabric" in pretrain
    assert "infiniband" in pretrain


def test_an_unknown_name_is_exit_4_with_one_line(live: LiveLadder, home: Path) -> None:
    for args in (("show", "no-such-allocation"), ("logs", "no-such-allocation"), ("ssh", "no-such-allocation")):
        done = live.ladder(*args, home=home, user="alice")
        assert done.returncode == 4, (args, done.stderr)
        assert done.stderr.splitlines() == [
            "ladder: no allocation 'no-such-allocation' (ladder ps --all lists yours) (not_found)"
        ]
    other_tenants = live.ladder("show", str(_demo(live, "notebook")["id"]), home=home, user="charlie")
    assert other_tenants.returncode == 4
    assert len(other_tenants.stderr.splitlines()) == 1


def test_logs_of_a_demo_allocation(live: LiveLadder, home: Path) -> None:
    done = live.ladder("logs", "notebook", home=home, user="alice")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines
    assert "jupyter lab" in lines[0]
    assert lines[0].split()[1] == "worker"
    tail = live.ladder("logs", "notebook", "--tail", "1", "--json", home=home, user="alice")
    assert len(json.loads(tail.stdout)["lines"]) == 1
    later = live.ladder("logs", "notebook", "--since", "2999-01-01T00:00:00Z", home=home, user="alice")
    assert (later.returncode, later.stdout) == (0, "")
    bad = live.ladder("logs", "notebook", "--since", "yesterday", home=home, user="alice")
    assert bad.returncode == 2
    assert bad.stderr.startswith("ladder: --since takes an ISO 8601 moment")


def _ladder_env(live: LiveLadder, home: Path, user: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("LADDER_", "XDG_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), COLUMNS="200", NO_COLOR="1", TERM="dumb")
    env.update(LADDER_URL=live.url, LADDER_API_KEY=live.key(user))
    return env


def _read_into(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


def test_logs_follow_streams_until_the_allocation_stops(live: LiveLadder, home: Path) -> None:
    allocation = _launch(live, "test-logs-follow")
    follow = subprocess.Popen(
        [str(LADDER), "logs", "test-logs-follow", "-f"],
        env=_ladder_env(live, home, "bob"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines: queue.Queue[str] = queue.Queue()
        assert follow.stdout is not None
        threading.Thread(target=_read_into, args=(follow.stdout, lines), daemon=True).start()
        first = lines.get(timeout=20)
        assert "worker  $ python train.py" in first
        _api(live, "bob", "DELETE", f"allocations/{allocation['id']}")  # a follow ends when the allocation does
        assert follow.wait(timeout=20) == 0
        assert follow.stderr is not None
        assert follow.stderr.read() == ""
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait()


def test_events(live: LiveLadder, home: Path) -> None:
    done = live.ladder("events", "notebook", home=home, user="alice")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["AT", "SOURCE", "TYPE", "REASON", "MESSAGE"]
    assert any(" ladder " in row and " placed " in row for row in rows)
    events = json.loads(live.ladder("events", "notebook", "--json", home=home, user="alice").stdout)
    assert {"placed", "running"} <= {event["reason"] for event in events if event["source"] == "ladder"}
    assert [event["at"] for event in events] == sorted(event["at"] for event in events)


def test_ssh_print_is_the_gateway_command_the_api_gives(live: LiveLadder, home: Path) -> None:
    ssh = _demo(live, "notebook")["access"]["ssh"]
    done = live.ladder("ssh", "notebook", "--print", home=home, user="alice")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"ssh -p {ssh['port']} {ssh['user']}@{ssh['host']}\n"
    extra = live.ladder(
        "ssh", "notebook", "--print", "--", "-L", "8888:localhost:8888", "echo hi", home=home, user="alice"
    )
    assert extra.stdout == f"ssh -p {ssh['port']} {ssh['user']}@{ssh['host']} -L 8888:localhost:8888 'echo hi'\n"
    job = live.ladder("ssh", "pretrain", "--print", home=home, user="alice")
    assert job.returncode == 1
    assert job.stderr.splitlines() == [
        "ladder: pretrain takes no SSH (a job; `ladder show pretrain` says how to reach it) (no_ssh)"
    ]


def test_url_of_a_public_port_and_of_an_endpoint(live: LiveLadder, home: Path) -> None:
    notebook, inference = _demo(live, "notebook"), _demo(live, "inference")
    done = live.ladder("url", "notebook", home=home, user="alice")
    assert (done.returncode, done.stdout) == (0, f"https://ldr-{notebook['id']}-8888.ladder.localhost/\n")
    assert live.ladder("url", "notebook", "8888", home=home, user="alice").stdout == done.stdout
    closed = live.ladder("url", "notebook", "22", home=home, user="alice")
    assert closed.returncode == 1
    assert "port 22 of notebook is not public (public ports: 8888)" in closed.stderr
    endpoint = live.ladder("url", "inference", home=home, user="alice")
    assert endpoint.stdout == f"{inference['access']['endpoint']}\n" == f"{live.url}/endpoints/{inference['id']}/\n"
    none = live.ladder("url", "pretrain", home=home, user="alice")
    assert none.returncode == 1
    assert none.stderr.startswith("ladder: pretrain has no public URL")


def test_stop_asks_then_stops_what_the_test_launched(live: LiveLadder, home: Path) -> None:
    allocation = _launch(live, "test-stop")
    unasked = live.ladder("stop", "test-stop", home=home, user="bob")
    assert unasked.returncode == 2
    assert unasked.stderr.startswith("ladder: pass --yes to stop test-stop (id ")
    assert unasked.stderr.endswith("(there is no terminal to ask on)\n")
    assert _api(live, "bob", "GET", f"allocations/{allocation['id']}")["state"] == "running"

    done = live.ladder("stop", "test-stop", "--yes", home=home, user="bob")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in (
        f"test-stop (id {allocation['id']}): stopping",
        f"test-stop (id {allocation['id']}): stopped",
    )
    assert _api(live, "bob", "GET", f"allocations/{allocation['id']}")["state"] in ("stopping", "stopped")
    listed = json.loads(live.ladder("ps", "--all", "--json", home=home, user="bob").stdout)
    assert allocation["id"] in {row["id"] for row in listed}


def _show(live: LiveLadder, home: Path, name: str) -> dict[str, Any]:
    done = live.ladder("show", name, "--json", home=home, user="alice")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_endpoint_call_wakes_an_idle_endpoint(live: LiveLadder, home: Path) -> None:
    """The live server idles an endpoint after 3 quiet seconds (FAST_FLEET): the call wakes it and is held."""
    _until(lambda: _show(live, home, "inference"), "idle", seconds=60)
    done = live.ladder(
        "endpoint",
        "call",
        "inference",
        "--path",
        "/v1/completions",
        "--data",
        '{"prompt": "Hello"}',
        home=home,
        user="alice",
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["path"] == "/v1/completions"
    assert answer["received_bytes"] == len('{"prompt": "Hello"}')
    assert answer["output"].startswith("simulated answer from inference")
    assert "inference is idle (scaled to zero): waking it" in done.stderr
    cold = _show(live, home, "inference")["cold_start_ms"]
    assert isinstance(cold, int)
    assert done.stderr.splitlines()[-1] == f"woke in {cold / 1000:.1f} s (cold start)"

    warm = live.ladder("endpoint", "call", "inference", "--json", home=home, user="alice")
    assert warm.returncode == 0, warm.stderr
    assert json.loads(warm.stdout)["body"]["path"] == "/"
    not_one = live.ladder("endpoint", "call", "notebook", home=home, user="alice")
    assert not_one.returncode == 1
    assert "(not_an_endpoint)" in not_one.stderr


def test_an_endpoint_token_calls_the_endpoint_and_dies_with_a_rotation(live: LiveLadder, home: Path) -> None:
    """`ladder endpoint token` prints a token the endpoint takes as it takes the key; a rotation refuses it."""
    minted = live.ladder("endpoint", "token", "inference", "--ttl", "600", "--json", home=home, user="alice")
    assert minted.returncode == 0, minted.stderr
    body = json.loads(minted.stdout)
    inference = _show(live, home, "inference")
    assert body["endpoints"] == [inference["id"]]
    printed = live.ladder("endpoint", "token", home=home, user="alice")
    assert printed.returncode == 0, printed.stderr
    token = printed.stdout.strip()
    assert token.count(".") == 2
    assert printed.stderr.startswith("expires ")

    def status(credential: str) -> int:
        request = urllib.request.Request(f"{live.url}/endpoints/{inference['id']}/", data=b"{}", method="POST")
        request.add_header("Authorization", f"Bearer {credential}")
        try:
            with urllib.request.urlopen(request, timeout=90) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)

    assert status(token) == 200
    assert status(body["token"]) == 200
    unasked = live.ladder("endpoint", "rotate-tokens", home=home, user="alice")
    assert unasked.returncode == 2
    assert "pass --yes" in unasked.stderr
    rotated = live.ladder("endpoint", "rotate-tokens", "--yes", home=home, user="alice")
    assert rotated.returncode == 0, rotated.stderr
    assert status(token) == 401
