"""Running work: ``ladder ps``, ``show``, ``logs``, ``events``, ``stop`` and ``ssh`` (``url`` and ``endpoint call``
are in endpoints.py)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections import defaultdict
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import typer
from ladder_sdk import AuthenticatedClient
from ladder_sdk.api.allocations import (
    allocations_destroy,
    allocations_events_list,
    allocations_list,
    allocations_logs_retrieve,
)

from ladder_cli import choose, output
from ladder_cli.errors import REFUSED, USAGE, CliError, refusal
from ladder_cli.session import answer, client, every, unreachable

NAME = typer.Argument(..., metavar="NAME", help="The allocation's name (or its id).")
SSH_ARGS = typer.Argument(
    None, metavar="[-- SSH_ARGS...]", help="Passed on to ssh after the destination: options, or a remote command."
)
FOLLOW_TIMEOUT = httpx.Timeout(None, connect=10.0)  # a followed log may stay quiet for long: no read timeout


# --- how an allocation reads ----------------------------------------------------------------------------------


def age(created: datetime, now: datetime | None = None) -> str:
    """How long ago, as ``ps`` shows it: 45s, 12m, 5h, 3d."""
    seconds = max(0, int(((now or datetime.now(UTC)) - created).total_seconds()))
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def shape(allocation: Any) -> str:
    """What it holds, in a few words: ``1 GPU``, ``2x8 GPUs``, ``MIG 3g.40gb``, ``0.5 GPU``, ``1 node (8 GPUs)``;
    an idle endpoint holds nothing (``0 (idle)``), nor does one not placed yet (``-``)."""
    devices = list(allocation.devices)
    if not devices:
        return "0 (idle)" if str(allocation.state) == "idle" else "-"
    per_node: dict[str, int] = defaultdict(int)
    for device in devices:
        per_node[device.node] += 1
    first = devices[0]
    if isinstance(first.mig_profile, str):
        return f"MIG {first.mig_profile}" if len(devices) == 1 else f"{len(devices)}x MIG {first.mig_profile}"
    if isinstance(first.share, str):
        return f"{first.share} GPU" if len(devices) == 1 else f"{len(devices)}x {first.share} GPU"
    counts = set(per_node.values())
    if str(allocation.rung) == "bare_metal":
        return _plural(len(per_node), "node")
    if len(per_node) == 1:
        return _plural(len(devices), "GPU")
    if len(counts) == 1:
        return f"{len(per_node)}x{counts.pop()} GPUs"
    return f"{len(devices)} GPUs on {len(per_node)} nodes"


def _indexes(values: list[int]) -> str:
    """0,1,2,3,5 as ``0-3,5``."""
    runs: list[list[int]] = []
    for value in sorted(values):
        if runs and value == runs[-1][-1] + 1:
            runs[-1].append(value)
        else:
            runs.append([value])
    return ",".join(f"{run[0]}-{run[-1]}" if len(run) > 2 else ",".join(map(str, run)) for run in runs)


def device_lines(allocation: Any) -> list[str]:
    """One line a node: its GPUs (and the MIG slice or share of each)."""
    by_node: dict[str, list[Any]] = defaultdict(list)
    for device in allocation.devices:
        by_node[device.node].append(device)
    lines = []
    for node, devices in sorted(by_node.items()):
        first = devices[0]
        what = f"GPU {_indexes([d.gpu_index for d in devices])}"
        if len(devices) > 1:
            what = f"GPUs {_indexes([d.gpu_index for d in devices])}"
        if isinstance(first.mig_profile, str):
            what += f" (MIG {first.mig_profile})"
        elif isinstance(first.share, str):
            what += f" (share {first.share})"
        lines.append(f"{node}: {what}")
    return lines


def _stamp(moment: Any) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if isinstance(moment, datetime) else "-"


def _workload(allocation: Any) -> list[tuple[str, Any]]:
    workload = allocation.workload if isinstance(allocation.workload, dict) else None
    if not workload:
        return [("Workload", "none")]
    pairs: list[tuple[str, Any]] = []
    if workload.get("image"):
        pairs.append(("Image", workload["image"]))
    if workload.get("os_image"):
        pairs.append(("OS image", workload["os_image"]))
    argv = [*(workload.get("command") or []), *(workload.get("args") or [])]
    if argv:
        pairs.append(("Command", shlex.join(map(str, argv))))
    return pairs


def _access(allocation: Any) -> list[tuple[str, Any]]:
    access = allocation.access
    pairs: list[tuple[str, Any]] = []
    if access.ssh is not None:
        pairs.append(("SSH", shlex.join(ssh_argv(allocation, []))))
    if isinstance(access.endpoint, str):
        pairs.append(("Endpoint", access.endpoint))
    for port, url in sorted(access.urls.to_dict().items(), key=lambda item: int(item[0])):
        pairs.append((f"Port {port}", url))
    if isinstance(access.console, str):
        pairs.append(("Console", access.console))
    return pairs or [("Access", "no SSH, endpoint or public port")]


def _fabric(allocation: Any) -> str | None:
    fabric = allocation.fabric
    if fabric is None:
        return None
    rails = _indexes(list(fabric.rails))
    isolation = f"{fabric.isolation.kind} {fabric.isolation.value}"
    return f"{fabric.name} ({fabric.link_layer}, {isolation}, rails {rails}, {_plural(len(fabric.nodes), 'node')})"


def _host(allocation: Any) -> str:
    """What it holds beside its GPUs, and the part beyond its rung's bundle, which is billed by the hour."""
    if allocation.cpu is None:
        return "the whole host"
    held = f"{allocation.cpu} vCPUs, {allocation.memory_gib} GiB"
    beyond = [
        f"{amount} {unit}"
        for amount, unit in ((allocation.cpu_beyond_bundle, "vCPUs"), (allocation.memory_gib_beyond_bundle, "GiB"))
        if isinstance(amount, str) and Decimal(amount)
    ]
    return f"{held} ({' and '.join(beyond)} beyond the bundle, billed by the hour)" if beyond else held


def _capacity(allocation: Any) -> str:
    """Its capacity class; spot work with what becomes of it when preempted, and when it last was."""
    klass = str(allocation.capacity_class)
    if klass == "reserved":
        return f"reserved (reservation {allocation.reservation})"
    if klass != "spot":
        return klass.replace("_", "-")
    said = f"spot ({allocation.on_preemption} when preempted)"
    if isinstance(allocation.preempted_at, datetime):
        said += f", last preempted {_stamp(allocation.preempted_at)}"
    return said


def describe(allocation: Any) -> list[tuple[str, Any]]:
    """Everything ``ladder show`` prints about one allocation, label by label."""
    state = f"{allocation.state} since {_stamp(allocation.state_changed_at)}"
    pairs: list[tuple[str, Any]] = [
        ("Name", f"{allocation.name} (id {allocation.id})"),
        ("State", state),
    ]
    if allocation.failure_reason:
        pairs.append(("Failure reason", allocation.failure_reason))
    pairs += [
        ("Rung", allocation.rung),
        ("Performance isolation", allocation.performance_isolation),
        ("Security isolation", allocation.security_isolation),
        (
            "GPUs",
            f"{shape(allocation)} {allocation.gpu_model}"
            if allocation.devices
            else f"none now ({allocation.gpu_model})",
        ),
        ("CPU and memory", _host(allocation)),
        ("Region", f"{allocation.region} (hall {allocation.hall})"),
        ("Capacity", _capacity(allocation)),
    ]
    lines = device_lines(allocation)
    pairs += [("Devices" if i == 0 else "", line) for i, line in enumerate(lines)] or [("Devices", "none now")]
    if isinstance(allocation.replicas, int):
        pairs.append(("Replicas", allocation.replicas))
    if isinstance(allocation.cold_start_ms, int):
        pairs.append(("Last cold start", f"{allocation.cold_start_ms / 1000:.1f} s"))
    pairs += _workload(allocation)
    pairs += _access(allocation)
    pairs.append(("Restarts", allocation.restarts))
    if isinstance(allocation.checkpoint_at, datetime):
        pairs.append(("Last checkpoint", _stamp(allocation.checkpoint_at)))
    faults = f", {_plural(len(allocation.faults), 'provider fault')}" if allocation.faults else ""
    # A fault's lost work is not billed; a preemption's was, until its notice.
    billed = " (not billed)" if not allocation.preemptions else ""
    if allocation.preemptions:
        faults += f", {_plural(len(allocation.preemptions), 'preemption')}"
    pairs.append(("Goodput lost", f"{allocation.goodput_lost_seconds} s{billed}{faults}"))
    fabric = _fabric(allocation)
    if fabric:
        pairs.append(("Fabric", fabric))
    pairs.append(("Created", f"{_stamp(allocation.created)} ({age(allocation.created)} ago)"))
    return pairs


# --- commands -------------------------------------------------------------------------------------------------


def ps(
    show_all: bool = typer.Option(False, "--all", "-a", help="Include stopped and failed allocations."),
    as_json: bool = output.JSON,
) -> None:
    """List your allocations: name, id, rung, state, what they hold, GPU model, region and age.

    Only live allocations unless --all, which adds the stopped and failed ones. Newest first.

    Example: ladder ps --all
    """
    rows = [
        item
        for item in every(allocations_list.sync_detailed, client())
        if show_all or str(item.state) not in choose.FINISHED
    ]
    if as_json:
        output.emit_json(rows)
        return
    output.table(
        ("NAME", "ID", "RUNG", "STATE", "GPUS", "MODEL", "REGION", "AGE"),
        ((a.name, a.id, a.rung, a.state, shape(a), a.gpu_model, a.region, age(a.created)) for a in rows),
        empty="No allocations" + ("." if show_all else " live (ladder ps --all shows stopped ones too)."),
    )


def show(name: str = NAME, as_json: bool = output.JSON) -> None:
    """Show everything about one allocation: state, both isolation promises, devices, access and more.

    Its state (and why it failed), the performance and security isolation it was promised, the devices it holds,
    its region and hall, the workload's image and command, how to reach it (SSH, endpoint, public URLs, console),
    restarts, goodput lost to provider faults, and its RDMA fabric.

    Example: ladder show notebook
    """
    allocation = choose.allocation(client(), name)
    if as_json:
        output.emit_json(allocation)
        return
    output.fields(describe(allocation))


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as error:
        raise CliError(
            f"--since takes an ISO 8601 moment such as 2026-05-01T12:00:00Z, not {value!r}", USAGE
        ) from error
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _write_line(at: Any, source: str, text: str) -> None:
    """Printed as it came (never read as markup): the moment, what wrote it, the text."""
    sys.stdout.write(f"{_stamp(at)} {source}  {text}\n")


def _follow(api: AuthenticatedClient, allocation_id: int, params: dict[str, Any], as_json: bool) -> None:
    """Print the NDJSON stream line by line as it arrives, until Ladder ends it (the allocation ended, or the
    server's time for one follow passed) or Ctrl-C."""
    url = f"/api/v1/allocations/{allocation_id}/logs"
    try:
        with api.get_httpx_client().stream(
            "GET", url, params={**params, "follow": "1"}, timeout=FOLLOW_TIMEOUT
        ) as response:
            if response.status_code != 200:
                raise refusal(response.status_code, response.read())
            for raw in response.iter_lines():
                if not raw.strip():
                    continue
                if as_json:
                    sys.stdout.write(raw + "\n")
                else:
                    line = json.loads(raw)
                    _write_line(datetime.fromisoformat(line["at"]), line["source"], line["text"])
                sys.stdout.flush()
    except httpx.TransportError as error:
        raise unreachable(api._base_url, error) from error
    except KeyboardInterrupt:
        return  # Ctrl-C is how a follow is meant to end


def logs(
    name: str = NAME,
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines as they are written."),
    tail: int = typer.Option(None, "--tail", min=1, metavar="N", help="Only the last N lines."),
    since: str = typer.Option(None, "--since", metavar="ISO", help="Only lines after this moment (ISO 8601)."),
    as_json: bool = output.JSON,
) -> None:
    """Print the workload's output: a container's or job's lines, a VM's serial console.

    In time order, each line with its moment and what wrote it (a job's members merged). With -f the lines keep
    coming as they are written, until the allocation ends or Ctrl-C; --json prints them as NDJSON then.

    Example: ladder logs pretrain -f --tail 20
    """
    api = client()
    allocation = choose.allocation(api, name)
    moment = _since(since)
    params: dict[str, Any] = {}
    if tail is not None:
        params["tail"] = tail
    if follow:
        _follow(api, allocation.id, {**params, **({"since": moment.isoformat()} if moment else {})}, as_json)
        return
    body = answer(
        allocations_logs_retrieve.sync_detailed,
        api,
        id=allocation.id,
        **params,
        **({"since": moment} if moment else {}),
    )
    if as_json:
        output.emit_json(body)
        return
    for line in body.lines:
        _write_line(line.at, line.source, line.text)
    if not body.lines:
        output.err.print(f"No output from {allocation.name} yet.", highlight=False)


def events(name: str = NAME, as_json: bool = output.JSON) -> None:
    """List what happened to an allocation: Ladder's own changes and what the backend reported.

    In time order: placed, provisioning, running, stopped (source ladder) and scheduling, image pulls, starts,
    restarts, faults and checkpoints (source workload, or what reported them).

    Example: ladder events pretrain
    """
    api = client()
    allocation = choose.allocation(api, name)
    rows = answer(allocations_events_list.sync_detailed, api, id=allocation.id)
    if as_json:
        output.emit_json(rows)
        return
    output.table(
        ("AT", "SOURCE", "TYPE", "REASON", "MESSAGE"),
        ((_stamp(e.at), e.source, e.type_, e.reason, e.message) for e in rows),
        empty=f"Nothing has happened to {allocation.name} yet.",
    )


def stop(
    name: str = NAME,
    yes: bool = choose.YES,
    as_json: bool = typer.Option(False, "--json", help="Print the allocation as it was left, as JSON."),
) -> None:
    """Stop an allocation: its work ends, its devices are freed and billing stops.

    Asks to confirm unless --yes (without a terminal, --yes is required). Prints the state it got to: stopping
    while the backend tears it down, then stopped. Stopping twice is harmless.

    Example: ladder stop notebook --yes
    """
    api = client()
    allocation = choose.allocation(api, name)
    choose.confirm(f"stop {allocation.name} (id {allocation.id}, {allocation.rung}, {shape(allocation)})", yes)
    stopped = answer(allocations_destroy.sync_detailed, api, id=allocation.id)
    if as_json:
        output.emit_json(stopped)
        return
    output.out.print(f"{stopped.name} (id {stopped.id}): {stopped.state}", highlight=False)


def ssh_argv(allocation: Any, extra: list[str]) -> list[str]:
    """``ssh -p PORT USER@HOST ...``: through the hall's SSH gateway, which routes by user."""
    access = allocation.access.ssh
    if access is None:
        raise CliError(
            f"{allocation.name} takes no SSH (a {allocation.rung}; `ladder show {allocation.name}` says how to reach "
            "it)",
            REFUSED,
            "no_ssh",
        )
    return ["ssh", "-p", str(access.port), f"{access.user}@{access.host}", *extra]


def ssh(
    name: str = NAME,
    print_only: bool = typer.Option(False, "--print", help="Print the ssh command line instead of running it."),
    extra: list[str] = SSH_ARGS,
) -> None:
    """Open a shell on an allocation over SSH, through its hall's SSH gateway, with your SSH keys.

    Runs `ssh -p PORT USER@HOST` (ssh must be installed); what follows -- is passed on to ssh. --print prints the
    command line instead, quoted for a shell.

    Example: ladder ssh notebook -- -L 8888:localhost:8888
    """
    allocation = choose.allocation(client(), name)
    argv = ssh_argv(allocation, list(extra or []))
    if print_only:
        output.out.print(shlex.join(argv), highlight=False, markup=False)
        return
    if str(allocation.state) != "running":
        output.err.print(f"{allocation.name} is {allocation.state}: ssh may not connect.", highlight=False)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp("ssh", argv)  # noqa: S606, S607 - the user's own ssh on PATH, to the gateway Ladder named
    except OSError as error:
        raise CliError(f"cannot run ssh ({error}): install OpenSSH, or use --print", REFUSED) from error


def register(app: typer.Typer) -> None:
    app.command()(ps)
    app.command()(show)
    app.command()(logs)
    app.command()(events)
    app.command()(stop)
    app.command()(ssh)
