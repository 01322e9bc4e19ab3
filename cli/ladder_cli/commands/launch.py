"""Launching from a task file: ``ladder launch -f task.yaml``, and ``ladder task-schema`` for editors.

The task file is checked against its JSON Schema before anything is sent (exit 2, naming the line); then the plan
is shown (what runs where, both isolation promises, the price per hour, the budget left) and confirmed; then one
``POST /api/v1/allocations`` with an ``Idempotency-Key``, so a retry on 429/503 never launches twice; then the
allocation is followed until it runs, and how to reach it is printed.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from typing import Any

import typer
from ladder_sdk import AuthenticatedClient
from ladder_sdk.api.allocations import allocations_create, allocations_retrieve
from ladder_sdk.api.budget import budget_retrieve
from ladder_sdk.api.offerings import offerings_list
from ladder_sdk.api.ssh_keys import ssh_keys_list
from ladder_sdk.api.volumes import volumes_list
from ladder_sdk.models.allocation_request_request import AllocationRequestRequest

from ladder_cli import choose, output, plan, taskfile
from ladder_cli.config import credentials
from ladder_cli.errors import REFUSED, CliError
from ladder_cli.session import answer, client, every

POLL_SECONDS = 1.0
GONE = frozenset({"deleting", "deleted"})  # volumes that can no longer be mounted


def _names(api: AuthenticatedClient) -> taskfile.Resolver:
    """The caller's SSH keys and volumes by name, for the task file's ``ssh_keys`` and ``volumes``."""

    def resolve(kind: str) -> Mapping[str, int]:
        if kind == "ssh_keys":
            return {key.name: key.id for key in every(ssh_keys_list.sync_detailed, api)}
        found = [v for v in every(volumes_list.sync_detailed, api) if str(v.state) not in GONE]
        return {volume.name: volume.id for volume in found}

    return resolve


def _budget(api: AuthenticatedClient) -> dict[str, Any] | None:
    """This month's budget, or None when the caller's role may not see it."""
    try:
        return dict(output.plain(answer(budget_retrieve.sync_detailed, api)))
    except CliError as error:
        if error.code in ("permission_denied", "http_403"):
            return None
        raise


def _show_plan(rows: list[tuple[str, str]]) -> None:
    width = max(len(label) for label, _ in rows)
    output.err.print("Plan", style="bold")
    for label, value in rows:
        output.err.print(f"  {label.ljust(width)}  {value}", highlight=False)


def _arrived(allocation: Any) -> bool:
    """Running, or (an endpoint) idle at zero: ready for its first call."""
    state = str(allocation.state)
    return state == "running" or (str(allocation.rung) == plan.SERVERLESS and state == "idle")


def _follow(api: AuthenticatedClient, allocation: Any, timeout: float) -> Any:
    """Read the allocation every second until it runs; its failure, or the time running out, is exit 1."""
    name, deadline = allocation.name, time.monotonic() + timeout
    state = str(allocation.state)
    output.err.print(f"{name}: {state} on {allocation.hall} ({allocation.region})", highlight=False)
    try:
        with output.err.status(f"{name}: {state}…") as spinner:
            while not _arrived(allocation):
                if state == "failed":
                    reason = allocation.failure_reason or "no reason given"
                    raise CliError(f"{name} failed: {reason}", REFUSED, "failed")
                if state == "stopped":
                    why = f": {allocation.failure_reason}" if allocation.failure_reason else ""
                    raise CliError(f"{name} stopped before it ran{why}", REFUSED, "stopped")
                if time.monotonic() >= deadline:
                    raise CliError(
                        f"{name} is still {state} after {timeout:g} s; it goes on: follow it with `ladder show {name}`",
                        REFUSED,
                        "timeout",
                    )
                time.sleep(POLL_SECONDS)
                allocation = answer(allocations_retrieve.sync_detailed, api, id=allocation.id)
                if str(allocation.state) != state:
                    state = str(allocation.state)
                    output.err.print(f"{name}: {state}", highlight=False)
                    spinner.update(f"{name}: {state}…")
    except KeyboardInterrupt:
        raise CliError(f"no longer following {name}; it goes on: `ladder show {name}`", 130) from None
    return allocation


def _reach(allocation: Any) -> list[tuple[str, str]]:
    """How to reach it: SSH, each public port's URL, the endpoint, the VM's console, the job's fabric."""
    access, rows = allocation.access, []
    if access.ssh:
        rows.append(("SSH", str(access.ssh.command)))
    for port, url in sorted(access.urls.to_dict().items(), key=lambda item: int(item[0])):
        rows.append((f"Port {port}", str(url)))
    if access.endpoint:
        rows.append(("Endpoint", f"{access.endpoint} (call it with your API key as a Bearer token)"))
    if access.console:
        rows.append(("Console", str(access.console)))
    if allocation.fabric:
        fabric = allocation.fabric
        isolation = f"{fabric.isolation.kind} {fabric.isolation.value}"
        rows.append(("Fabric", f"{fabric.name} ({fabric.link_layer}, yours alone: {isolation})"))
    return rows


def _where(allocation: Any) -> str:
    count = len(allocation.devices)
    held = f"{count} x {allocation.gpu_model}" if count else f"{allocation.gpu_model}, no GPU held while idle"
    return f"{held} in {allocation.hall} ({allocation.region})"


def launch(
    file: str = typer.Option(..., "-f", "--file", help="The task file (YAML; `-` reads standard input)."),
    yes: bool = choose.YES,
    detach: bool = typer.Option(False, "--detach", "-d", help="Do not follow it: print what was placed and return."),
    timeout: float = typer.Option(600, "--timeout", min=1, metavar="SECONDS", help="How long to wait for it to run."),
    as_json: bool = typer.Option(False, "--json", help="Print the allocation as JSON (the plan stays on stderr)."),
) -> None:
    """Launch what a task file describes: check it, show the plan, ask, launch and follow it until it runs.

    The file is checked before anything is sent (a problem is exit 2, naming its line). The plan says what runs
    where, both isolation promises, the price per hour and the budget left this month; then `Launch? [y/N]`
    (--yes skips it). It is launched once, whatever retries happen, and followed until it runs (an endpoint: until
    it runs or idles), failed or --timeout; then how to reach it is printed: SSH, URLs, the endpoint, the console.
    `ladder task-schema` prints the file's JSON Schema; examples are in cli/examples.

    Example: ladder launch -f job.yaml --yes
    """
    task = taskfile.check(taskfile.read(file))
    creds = credentials()
    api = client(creds)
    body = taskfile.request_body(task, _names(api))
    offered = output.plain(answer(offerings_list.sync_detailed, api))
    _show_plan(plan.plan(body, offered, _budget(api), task.source, task.data))
    choose.confirm("launch", yes)
    # The transport gives the POST its Idempotency-Key, the same over its retries (session.RetryingTransport).
    allocation = answer(allocations_create.sync_detailed, api, body=AllocationRequestRequest.from_dict(body))
    output.err.print(f"Launched {allocation.name} (id {allocation.id}).", highlight=False)
    if not detach:
        allocation = _follow(api, allocation, timeout)
    if as_json:
        output.emit_json(allocation)
        return
    if detach:
        output.err.print(
            f"{allocation.name} is {allocation.state} in {allocation.hall} ({allocation.region}); "
            f"`ladder show {allocation.name}` follows it.",
            highlight=False,
        )
    else:
        output.err.print(f"{allocation.name} is {allocation.state}: {_where(allocation)}.", highlight=False)
    reach = _reach(allocation)
    if reach:
        output.fields(reach)
    else:
        output.err.print(
            f"Nothing to reach from outside (no SSH key, no public port): `ladder show {allocation.name}`."
        )


def task_schema() -> None:
    """Print the task file's JSON Schema, for editors that check YAML as it is typed.

    The schema is the allocation request's, with the workload's fields beside its own. With the YAML language
    server, put `# yaml-language-server: $schema=task.schema.json` at the top of a task file.

    Example: ladder task-schema > task.schema.json
    """
    sys.stdout.write(json.dumps(taskfile.schema(), indent=2) + "\n")


def register(app: typer.Typer) -> None:
    app.command()(launch)
    app.command("task-schema")(task_schema)
