"""What a person picks or gives: one record of a list by the name (or id) they typed (an allocation, a volume, a
key), a yes before anything is launched, stopped or destroyed, and a secret (an API key, a secret's value) typed
unseen or piped in, never on the command line.

A name matches no record: exit 4. It matches several: exit 2, naming their ids. A destructive command asks first
unless ``--yes``; with no terminal to ask on and no ``--yes`` it is a usage error (exit 2), never a silent yes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import typer
from ladder_sdk import AuthenticatedClient
from ladder_sdk.api.allocations import allocations_list, allocations_retrieve

from ladder_cli.errors import NOT_FOUND, REFUSED, USAGE, CliError
from ladder_cli.session import answer, every

T = TypeVar("T")

FINISHED = frozenset({"stopped", "failed"})  # an allocation's states that no longer hold anything
YES = typer.Option(False, "--yes", "-y", help="Do it without asking (needed when there is no terminal to ask on).")


def one(
    items: Iterable[T],
    typed: str,
    what: str,
    hint: str,
    keys: Callable[[T], Iterable[Any]],
    gone: Callable[[T], bool] = lambda _: False,
) -> T:
    """The item whose id, name or other key (``keys``) is ``typed``. Items that are ``gone`` (deleted, revoked)
    count only when nothing else matches."""
    found = [item for item in items if typed in {str(key) for key in keys(item) if key not in (None, "")}]
    live = [item for item in found if not gone(item)] or found
    if not live:
        raise CliError(f"no {what} {typed!r} ({hint})", NOT_FOUND, "not_found")
    if len(live) > 1:
        ids = ", ".join(str(getattr(item, "id", "?")) for item in live)
        raise CliError(f"{len(live)} {what}s match {typed!r} (ids {ids}): give the id instead", USAGE)
    return live[0]


def confirm(action: str, yes: bool) -> None:
    """Go on when ``--yes`` was given or the person answers yes to ``action`` ("delete volume x"); otherwise end
    the command having changed nothing."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise CliError(f"pass --yes to {action} (there is no terminal to ask on)", USAGE)
    if not typer.confirm(f"{action[:1].upper()}{action[1:]}?", default=False, err=True):
        raise CliError("not confirmed: nothing was changed", REFUSED)


def hidden_input(label: str, *, twice: bool = False) -> str:
    """A secret from a hidden prompt at a terminal (asked twice when ``twice``), else from stdin with one trailing
    newline dropped (as ``echo`` adds it). Never from the command line, where the shell's history and the process
    list would keep it."""
    if sys.stdin.isatty():
        return str(typer.prompt(label, hide_input=True, confirmation_prompt=twice, err=True))
    value = sys.stdin.read()
    return value[:-2] if value.endswith("\r\n") else value[:-1] if value.endswith("\n") else value


def allocation(api: AuthenticatedClient, name: str) -> Any:
    """The allocation named ``name`` (or with that id): the live one when finished ones share its name."""
    if name.isdigit():
        return answer(allocations_retrieve.sync_detailed, api, id=int(name))
    return one(
        every(allocations_list.sync_detailed, api, name=name),
        name,
        "allocation",
        "ladder ps --all lists yours",
        keys=lambda item: (item.name,),
        gone=lambda item: str(item.state) in FINISHED,
    )
