"""How ``ladder ps``, ``show``, ``ssh`` and ``endpoint call`` put an allocation into words (no server)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from ladder_cli.commands.endpoints import endpoint_url, request_body
from ladder_cli.commands.workloads import age, describe, device_lines, shape, ssh_argv
from ladder_cli.errors import USAGE, CliError
from ladder_sdk.models import Allocation

CREATED = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _device(node: str, index: int, mig: str | None = None, share: str | None = None) -> dict[str, Any]:
    return {"node": node, "gpu_index": index, "gpu_uuid": f"GPU-{node}-{index}", "mig_profile": mig, "share": share}


def allocation(**fields: Any) -> Allocation:
    data: dict[str, Any] = {
        "id": 7,
        "name": "notebook",
        "state": "running",
        "rung": "container",
        "performance_isolation": "whole_gpu",
        "security_isolation": "container",
        "gpu_model": "H100-SXM-80GB",
        "region": "eu-west",
        "hall": "eu-west-1a",
        "devices": [_device("h100-01", 0)],
        "cpu": "8",
        "memory_gib": "64",
        "cpu_beyond_bundle": "0",
        "memory_gib_beyond_bundle": "0",
        "created": CREATED.isoformat(),
        "state_changed_at": CREATED.isoformat(),
        "observed_at": None,
        "failure_reason": "",
        "replicas": None,
        "cold_start_ms": None,
        "workload": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "command": ["jupyter", "lab"], "args": ["--ip=0"]},
        "access": {
            "ssh": {"host": "ssh.eu-west-1a.ladder.localhost", "port": 2222, "user": "ldr-7", "command": "-"},
            "endpoint": None,
            "urls": {"8888": "https://ldr-7-8888.ladder.localhost/"},
            "console": None,
        },
        "checkpoint_at": None,
        "restarts": 0,
        "goodput_lost_seconds": "0.000",
        "faults": [],
        "capacity_class": "on_demand",
        "reservation": None,
        "on_preemption": "stop",
        "preempted_at": None,
        "preemptions": [],
        "fabric": None,
    }
    return Allocation.from_dict({**data, **fields})


def test_shape_says_what_an_allocation_holds() -> None:
    assert shape(allocation()) == "1 GPU"
    eight = [_device(node, i) for node in ("h100-03", "h100-04") for i in range(8)]
    assert shape(allocation(rung="job", devices=eight)) == "2x8 GPUs"
    assert shape(allocation(rung="job", devices=eight[:9])) == "9 GPUs on 2 nodes"
    assert shape(allocation(rung="bare_metal", devices=eight[:8])) == "1 node"
    assert shape(allocation(devices=[_device("h100-01", 0, mig="3g.40gb")])) == "MIG 3g.40gb"
    assert shape(allocation(devices=[_device("h100-01", 0, share="0.5")])) == "0.5 GPU"
    assert shape(allocation(rung="serverless", state="idle", devices=[])) == "0 (idle)"
    assert shape(allocation(state="failed", devices=[])) == "-"


def test_device_lines_group_gpus_by_node_as_ranges() -> None:
    devices = [_device("h100-03", i) for i in (0, 1, 2, 3, 5)] + [_device("h100-04", 6)]
    assert device_lines(allocation(devices=devices)) == ["h100-03: GPUs 0-3,5", "h100-04: GPU 6"]
    mig = allocation(devices=[_device("h100-01", 2, mig="1g.10gb")])
    assert device_lines(mig) == ["h100-01: GPU 2 (MIG 1g.10gb)"]


def test_age_is_short() -> None:
    assert age(CREATED, CREATED + timedelta(seconds=45)) == "45s"
    assert age(CREATED, CREATED + timedelta(minutes=12, seconds=5)) == "12m"
    assert age(CREATED, CREATED + timedelta(hours=5, minutes=59)) == "5h"
    assert age(CREATED, CREATED + timedelta(days=3, hours=1)) == "3d"
    assert age(CREATED, CREATED - timedelta(seconds=3)) == "0s"  # a clock a little behind the server's


def test_describe_names_both_promises_access_and_what_went_wrong() -> None:
    failed = allocation(state="failed", failure_reason="Image pull failed", restarts=2, goodput_lost_seconds="12.500")
    shown = dict(describe(failed))
    assert shown["Name"] == "notebook (id 7)"
    assert shown["State"] == "failed since 2026-05-01T12:00:00Z"
    assert shown["Failure reason"] == "Image pull failed"
    assert (shown["Performance isolation"], shown["Security isolation"]) == ("whole_gpu", "container")
    assert shown["CPU and memory"] == "8 vCPUs, 64 GiB"  # the bundle
    more = allocation(cpu="24", memory_gib="96", cpu_beyond_bundle="16", memory_gib_beyond_bundle="32")
    assert dict(describe(more))["CPU and memory"] == (
        "24 vCPUs, 96 GiB (16 vCPUs and 32 GiB beyond the bundle, billed by the hour)"
    )
    metal = allocation(cpu=None, memory_gib=None, cpu_beyond_bundle=None, memory_gib_beyond_bundle=None)
    assert dict(describe(metal))["CPU and memory"] == "the whole host"
    assert shown["Command"] == "jupyter lab --ip=0"
    assert shown["SSH"] == "ssh -p 2222 ldr-7@ssh.eu-west-1a.ladder.localhost"
    assert shown["Port 8888"] == "https://ldr-7-8888.ladder.localhost/"
    assert shown["Goodput lost"] == "12.500 s (not billed)"
    assert shown["Restarts"] == 2


def test_ssh_argv_puts_what_follows_after_the_destination() -> None:
    assert ssh_argv(allocation(), ["-L", "8888:localhost:8888"]) == [
        "ssh",
        "-p",
        "2222",
        "ldr-7@ssh.eu-west-1a.ladder.localhost",
        "-L",
        "8888:localhost:8888",
    ]
    job = allocation(name="pretrain", rung="job", access={"ssh": None, "endpoint": None, "urls": {}, "console": None})
    with pytest.raises(CliError) as refused:
        ssh_argv(job, [])
    assert (
        refused.value.line()
        == "ladder: pretrain takes no SSH (a job; `ladder show pretrain` says how to reach it) (no_ssh)"
    )


def test_the_endpoint_body_and_url(tmp_path: Path) -> None:
    assert request_body(None) == b"{}"
    assert request_body('{"prompt": "hi"}') == b'{"prompt": "hi"}'
    body = tmp_path / "body.json"
    body.write_bytes(b'{"from": "a file"}')
    assert request_body(f"@{body}") == b'{"from": "a file"}'
    for bad in ("not json", f"@{tmp_path / 'missing.json'}"):
        with pytest.raises(CliError) as refused:
            request_body(bad)
        assert refused.value.exit_code == USAGE
    assert endpoint_url("http://127.0.0.1:8000/endpoints/2/", "") == "http://127.0.0.1:8000/endpoints/2/"
    assert endpoint_url("http://127.0.0.1:8000/endpoints/2/", "/v1/completions") == (
        "http://127.0.0.1:8000/endpoints/2/v1/completions"
    )
    assert endpoint_url("https://ldr-2.ladder.example/", "v1/chat") == "https://ldr-2.ladder.example/v1/chat"
