"""Names a person types, turned into the ids the API takes: allocations (``ladder show NAME``), SSH keys and
volumes (a task file's ``ssh_keys`` and ``volumes``)."""

from __future__ import annotations

from typing import Any

from ladder_sdk import AuthenticatedClient
from ladder_sdk.api.allocations import allocations_list, allocations_retrieve

from ladder_cli.errors import NOT_FOUND, USAGE, CliError
from ladder_cli.session import answer, every

FINISHED = frozenset({"stopped", "failed"})


def allocation(api: AuthenticatedClient, name: str) -> Any:
    """The allocation named ``name`` (or with that id): the live one when stopped ones share its name."""
    if name.isdigit():
        return answer(allocations_retrieve.sync_detailed, api, id=int(name))
    found = [item for item in every(allocations_list.sync_detailed, api) if item.name == name]
    live = [item for item in found if str(item.state) not in FINISHED] or found
    if not live:
        raise CliError(f"no allocation named {name!r} (ladder ps lists yours)", NOT_FOUND, "not_found")
    if len(live) > 1:
        ids = ", ".join(str(item.id) for item in live)
        raise CliError(f"{len(live)} allocations are named {name!r} (ids {ids}): give the id instead", USAGE)
    return live[0]
