"""The SDK reads what Ladder really answers: every read the schema describes, called through the generated client
against a live Ladder as each kind of user, parses into its typed model (a 200) or into ``Problem`` (a refusal).

A field the schema calls non-null that comes back null, an enum missing a value the API sends, or a list described
as a page: each breaks a generated client on real data, and each fails here with the operation's name.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import ladder_sdk.api
from ladder_sdk import AuthenticatedClient
from ladder_sdk.models import Problem

from tests.support.cli import LiveLadder

USERS = ("alice", "finance", "compliance", "operator")
# Reads that need an argument: the list their argument comes from, and the field of its first item.
ARGUMENTS = {
    "allocations_retrieve": ("allocations_list", "id"),
    "allocations_events_list": ("allocations_list", "id"),
    "allocations_logs_retrieve": ("allocations_list", "id"),
    "api_keys_retrieve": ("api_keys_list", "id"),
    "members_retrieve": ("members_list", "id"),
    "volumes_retrieve": ("volumes_list", "id"),
    "volumes_snapshots_list": ("volumes_list", "id"),
    "data_assets_retrieve": ("data_assets_list", "id"),
    "ops_nodes_retrieve": ("ops_nodes_list", "id"),
    "ops_nodes_diagnosis_retrieve": ("ops_nodes_list", "id"),
    "retention_policies_retrieve": ("retention_policies_list", "category"),
    "secrets_retrieve": ("secrets_list", "name"),
}


def _reads() -> Iterator[tuple[str, ModuleType]]:
    for tag in pkgutil.iter_modules(ladder_sdk.api.__path__):
        package = importlib.import_module(f"ladder_sdk.api.{tag.name}")
        for operation in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{operation.name}")
            if module._get_kwargs.__code__.co_consts and "get" in module._get_kwargs.__code__.co_consts:
                yield operation.name, module


def _required(module: ModuleType) -> list[str]:
    parameters = inspect.signature(module.sync_detailed).parameters
    return [name for name, p in parameters.items() if name != "client" and p.default is inspect.Parameter.empty]


def _first(client: AuthenticatedClient, reads: dict[str, ModuleType], listing: str, field: str) -> Any:
    page = reads[listing].sync_detailed(client=client).parsed
    items = getattr(page, "results", page)
    return getattr(items[0], field) if isinstance(items, list) and items else None


def test_every_read_parses_as_the_schema_says_for_every_kind_of_user(live: LiveLadder) -> None:
    reads = dict(_reads())
    assert len(reads) > 50
    called, broken = 0, []
    for user in USERS:
        client = AuthenticatedClient(base_url=live.url, token=live.key(user), raise_on_unexpected_status=True)
        for name, module in sorted(reads.items()):
            kwargs: dict[str, Any] = {}
            required = _required(module)
            if required:
                if name not in ARGUMENTS or len(required) != 1:
                    continue  # needs arguments no demo list gives (an export's dates, a signed download)
                value = _first(client, reads, *ARGUMENTS[name])
                if value is None:
                    continue
                kwargs[required[0]] = value
            try:
                answer = module.sync_detailed(client=client, **kwargs)
            except Exception as error:
                broken.append(f"{name} as {user}: {type(error).__name__}: {error}")
                continue
            called += 1
            status = int(answer.status_code)
            expected = Problem if status >= 400 else type(answer.parsed)
            if answer.parsed is None or (status < 400 and isinstance(answer.parsed, Problem)):
                broken.append(f"{name} as {user}: {status} parsed as {type(answer.parsed).__name__}")
            elif not isinstance(answer.parsed, expected):
                broken.append(f"{name} as {user}: {status} is not a Problem")
    assert not broken, "\n".join(broken)
    assert called > 150
