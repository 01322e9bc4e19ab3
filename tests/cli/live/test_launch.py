"""``ladder launch -f`` with the installed command against a live Ladder: from a task file to something running
and reachable, and each refusal (a bad file, the budget, residency) before or instead of a launch.

What a test launches is named after the test and stopped at its end. The refusals sign in as charlie (globex) and
put back the setting they change. A hard-stop budget that is used up stops what globex runs (the demo's enclave):
that is what the budget promises, and globex's work is this file's to change.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import ROOT, LiveLadder

EXAMPLES = ROOT / "cli" / "examples"


def api(live: LiveLadder, user: str, path: str, method: str = "GET", body: Any = None) -> Any:
    request = urllib.request.Request(
        f"{live.url}/api/v1/{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {live.key(user)}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null")


def named(live: LiveLadder, user: str, name: str) -> list[dict[str, Any]]:
    return [a for a in api(live, user, "allocations?page_size=500")["results"] if a["name"] == name]


@contextmanager
def launched(live: LiveLadder, user: str, name: str) -> Iterator[None]:
    """Stop whatever the test launched under ``name``, however the test ends."""
    try:
        yield
    finally:
        for allocation in named(live, user, name):
            if allocation["state"] not in ("stopped", "failed"):
                api(live, user, f"allocations/{allocation['id']}", method="DELETE")


def task_file(home: Path, example: str, name: str, **changes: str) -> Path:
    """The shipped example ``example``, named ``name``, with any top-level ``key: value`` lines replaced."""
    text = (EXAMPLES / f"{example}.yaml").read_text()
    for key, value in {"name": name, **changes}.items():
        text, count = re.subn(rf"^{key}: .*$", f"{key}: {value}", text, flags=re.MULTILINE)
        assert count == 1, key
    path = home / f"{name}.yaml"
    path.write_text(text)
    return path


def small_task(home: Path, name: str, region: str) -> Path:
    """One whole H100 running an image, and nothing of a tenant's own (keys, volumes): any tenant can launch it."""
    path = home / f"{name}.yaml"
    path.write_text(
        f"name: {name}\nrung: container\ngpu_model: H100-SXM-80GB\ngpus: 1\nregions: [{region}]\n"
        "image: nvcr.io/nvidia/pytorch:25.01-py3\n"
    )
    return path


def test_a_container_launches_from_its_task_file_and_says_how_to_reach_it(live: LiveLadder, home: Path) -> None:
    name = "launch-container"
    path = task_file(home, "container", name)
    with launched(live, "alice", name):
        done = live.ladder("launch", "-f", str(path), "--yes", home=home, user="alice")
        assert done.returncode == 0, done.stderr
        plan = done.stderr
        assert f"Launch       {name} (from {path})" in plan
        assert "Shape        1 whole GPU" in plan
        assert "Performance  Whole GPUs: every SM and all the memory of each GPU are yours alone." in plan
        assert "Security     A container in your own namespace" in plan
        assert "Price        2.61 USD an hour (1 x 2.6145 USD per GPU-hour)" in plan
        assert "Budget       no budget set" in plan
        assert f"{name} is running: 1 x H100-SXM-80GB in eu-west-1a (eu-west)." in plan
        (allocation,) = named(live, "alice", name)
        assert re.search(rf"^SSH +ssh ldr-{allocation['id']}@ssh\.eu-west-1a\.", done.stdout, re.MULTILINE)
        assert re.search(rf"^Port 8888 +https://ldr-{allocation['id']}-8888\.", done.stdout, re.MULTILINE)
        assert allocation["state"] == "running"
        assert allocation["workload"]["command"] == ["jupyter", "lab", "--ip=0.0.0.0", "--port=8888", "--no-browser"]
        assert allocation["workload"]["volumes"][0]["mount_path"] == "/data"  # `datasets`, named in the file


def test_a_two_node_job_launches_as_a_gang_from_its_task_file(live: LiveLadder, home: Path) -> None:
    name = "launch-job"
    with launched(live, "alice", name):
        done = live.ladder("launch", "-f", str(task_file(home, "job", name)), "--yes", home=home, user="alice")
        assert done.returncode == 0, done.stderr
        assert "a gang of 2 members x 8 whole GPUs (16 GPUs), started together in one NVLink domain" in done.stderr
        assert "Price        39.84 USD an hour (16 x 2.49 USD per GPU-hour)" in done.stderr
        assert f"{name} is running: 16 x H100-SXM-80GB in eu-west-1a (eu-west)." in done.stderr
        assert re.search(r"^Fabric +eu-west-1a/ib-0 \(infiniband, yours alone: partition_key 0x", done.stdout, re.M)
        (allocation,) = named(live, "alice", name)
        assert len({device["node"] for device in allocation["devices"]}) == 2
        assert allocation["workload"]["checkpoint"] == {"path": "/checkpoints", "interval_s": 600}


@pytest.mark.parametrize("example", ["serverless", "vm"])
def test_the_other_examples_launch_on_the_demo(live: LiveLadder, home: Path, example: str) -> None:
    name = f"launch-{example}"
    with launched(live, "alice", name):
        done = live.ladder("launch", "-f", str(task_file(home, example, name)), "-y", "--json", home=home, user="alice")
        assert done.returncode == 0, done.stderr
        allocation = json.loads(done.stdout)
        assert allocation["name"] == name
        if example == "serverless":
            assert allocation["state"] in ("running", "idle")
            assert allocation["access"]["endpoint"].endswith(f"/endpoints/{allocation['id']}/")
        else:
            assert allocation["state"] == "running"
            assert allocation["access"]["console"]
            assert allocation["access"]["ssh"]["command"]


def test_detached_it_is_placed_and_printed_at_once(live: LiveLadder, home: Path) -> None:
    name = "launch-detached"
    with launched(live, "alice", name):
        path = task_file(home, "container", name)
        done = live.ladder("launch", "-f", str(path), "--yes", "--detach", "--json", home=home, user="alice")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["state"] == "placed"


def test_a_bad_task_file_is_exit_2_naming_its_line_and_nothing_is_created(live: LiveLadder, home: Path) -> None:
    path = task_file(home, "container", "launch-bad-file", gpus="12")
    done = live.ladder("launch", "-f", str(path), "--yes", home=home, user="alice")
    assert done.returncode == 2
    assert done.stderr == f"ladder: {path}:7: gpus: 12 is greater than the maximum of 8\n"
    unknown = task_file(home, "container", "launch-bad-key", ssh_keys="[no-such-key]")
    done = live.ladder("launch", "-f", str(unknown), "--yes", home=home, user="alice")
    assert done.returncode == 2
    assert done.stderr.startswith(f"ladder: {unknown}:17: ssh_keys.0: you have no SSH key named 'no-such-key'")
    assert named(live, "alice", "launch-bad-file") == named(live, "alice", "launch-bad-key") == []


def test_without_a_terminal_it_asks_for_yes(live: LiveLadder, home: Path) -> None:
    path = task_file(home, "container", "launch-unconfirmed")
    done = live.ladder("launch", "-f", str(path), home=home, user="alice")
    assert done.returncode == 2
    assert done.stderr.endswith("ladder: pass --yes to launch (there is no terminal to ask on)\n")
    assert named(live, "alice", "launch-unconfirmed") == []


def _spend_reaches(live: LiveLadder, user: str, amount: float) -> None:
    deadline = time.monotonic() + 60
    while float(api(live, user, "budget")["spend"]) < amount:
        assert time.monotonic() < deadline, "globex spent nothing this month: its demo enclave is not running"
        time.sleep(1)


def test_over_budget_the_launch_is_refused_with_budget_exceeded(live: LiveLadder, home: Path) -> None:
    before = api(live, "charlie", "budget")
    _spend_reaches(live, "charlie", 0.01)  # the demo's enclave runs up globex's spend
    try:
        api(live, "charlie", "budget", method="PUT", body={"monthly": "0.01", "hard_stop": True})
        path = small_task(home, "launch-over-budget", "eu-west")
        done = live.ladder("launch", "-f", str(path), "--yes", home=home, user="charlie")
        assert "Budget       used up:" in done.stderr
        assert done.returncode == 1
        assert done.stderr.splitlines()[-1].endswith("(budget_exceeded)")
    finally:
        api(
            live,
            "charlie",
            "budget",
            method="PUT",
            body={"monthly": before["monthly"], "hard_stop": before["hard_stop"]},
        )
    assert named(live, "charlie", "launch-over-budget") == []


def test_a_region_outside_the_tenants_residency_is_refused(live: LiveLadder, home: Path) -> None:
    before = api(live, "charlie", "tenant")["residency"]
    try:
        api(live, "charlie", "tenant", method="PATCH", body={"residency": {**before, "regions": ["us-east"]}})
        path = small_task(home, "launch-outside-residency", "eu-west")
        done = live.ladder("launch", "-f", str(path), "--yes", home=home, user="charlie")
        assert done.returncode == 1
        assert done.stderr.splitlines()[-1] == (
            "ladder: refused: Region eu-west is outside the tenant's allowed regions. (residency)"
        )
    finally:
        api(live, "charlie", "tenant", method="PATCH", body={"residency": before})
    assert named(live, "charlie", "launch-outside-residency") == []
