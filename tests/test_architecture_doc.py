"""docs/architecture.md stays true: its lists of apps, endpoint modules, audited actions, beat entries and settings
are the code's, and its lock order is the one core/locks.py writes down."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver

from tests.support import ROOT

DOC = (ROOT / "docs" / "architecture.md").read_text()
APPS = ["core", "tenancy", "provisioning", "billing", "compliance", "lifecycle", "api", "portal"]


def section(title: str) -> str:
    start = DOC.index(f"\n## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end != -1 else len(DOC)]


def first_column(text: str) -> list[str]:
    """The backticked names in the first column of every table row of ``text``."""
    return re.findall(r"^\| `([^`]+)`", text, flags=re.MULTILINE)


def test_the_apps_are_the_installed_ones() -> None:
    apps = section("Apps").split("Endpoint modules")[0]
    local = [app for app in settings.INSTALLED_APPS if (ROOT / app / "apps.py").exists()]
    assert sorted(first_column(apps)) == sorted([*local, "config"])
    assert sorted(local) == sorted(APPS)


def _views(patterns: list[Any]) -> Iterator[Any]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _views(pattern.url_patterns)
        elif isinstance(pattern, URLPattern):
            yield pattern.callback


def test_the_endpoint_modules_are_those_the_urls_route_to() -> None:
    routed = set()
    for view in _views(get_resolver().url_patterns):
        module = getattr(getattr(view, "cls", None), "__module__", None) or view.__module__
        if module.startswith("api.") and module not in ("api.problems",):
            routed.add(module.replace(".", "/") + ".py")
    listed = set(first_column(section("Apps").split("Endpoint modules")[1]))
    assert listed == routed


def _audited_actions() -> tuple[set[str], set[str]]:
    """Actions passed to audit_record / audit_record_many anywhere in the apps: literals, and the fixed prefixes of
    f-strings (``allocation.{to}`` gives ``allocation.``)."""
    literals: set[str] = set()
    prefixes: set[str] = set()
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text())
            constants = {
                t.id: n.value.value
                for n in ast.walk(tree)
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                for t in n.targets
                if isinstance(t, ast.Name)
            }
            for call in ast.walk(tree):
                if not isinstance(call, ast.Call) or getattr(call.func, "id", None) not in (
                    "audit_record",
                    "audit_record_many",
                ):
                    continue
                for keyword in call.keywords:
                    if keyword.arg == "action":
                        _collect(keyword.value, constants, literals, prefixes, path)
    return literals, prefixes


def _collect(node: ast.expr, constants: dict[str, str], literals: set[str], prefixes: set[str], path: Any) -> None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        literals.add(node.value)
    elif isinstance(node, ast.IfExp):
        _collect(node.body, constants, literals, prefixes, path)
        _collect(node.orelse, constants, literals, prefixes, path)
    elif isinstance(node, ast.Name) and node.id in constants:
        literals.add(constants[node.id])
    elif isinstance(node, ast.JoinedStr) and isinstance(node.values[0], ast.Constant):
        prefixes.add(str(node.values[0].value))
    else:
        raise AssertionError(f"{path}: an audited action this test cannot read: {ast.unparse(node)}")


def test_the_audited_actions_are_the_ones_services_write() -> None:
    listed = set(re.findall(r"`([a-z_]+\.[a-z_]+)`", section("Audited actions")))
    literals, prefixes = _audited_actions()
    assert literals - listed == set(), "audited in the code, missing from the doc"
    for prefix in prefixes:
        assert any(action.startswith(prefix) for action in listed), f"no {prefix}* action listed"
    unknown = {a for a in listed - literals if not any(a.startswith(p) for p in prefixes)}
    assert unknown == set(), "listed in the doc, audited nowhere"


def test_the_beat_entries_are_the_schedule() -> None:
    rows = re.findall(r"^\| `([a-z-]+)` \| `([a-z_.]+)`", section("Celery"), flags=re.MULTILINE)
    assert dict(rows) == {name: entry["task"] for name, entry in settings.CELERY_BEAT_SCHEDULE.items()}


def test_the_settings_are_the_ones_read_from_the_environment() -> None:
    source = (ROOT / "config" / "settings.py").read_text()
    scheme = re.search(r"env = environ\.FileAwareEnv\((.*?)\n\)", source, flags=re.DOTALL)
    assert scheme is not None
    read = set(re.findall(r"^\s+([A-Z][A-Z0-9_]+)=", scheme.group(1), flags=re.MULTILINE))
    read |= set(re.findall(r"env(?:\.\w+)?\(\s*\"([A-Z][A-Z0-9_]+)\"", source))
    listed = set(first_column(section("Settings")))
    assert listed == read


def _lock_order(written: str) -> list[str]:
    """The names of a lock order written ``A -> B (details) -> (C, details) -> D`` (or with ``→``): each step without
    its parenthesised details; a step that is all parentheses keeps its words up to the first comma or colon."""
    steps = re.split(r"\s*(?:->|→)\s*", " ".join(written.split()).rstrip("."))
    names = []
    for step in steps:
        if step.startswith("("):
            names.append(re.split(r"[,:)]", step[1:])[0].strip())
        else:
            names.append(re.sub(r"\s*\([^)]*\)", "", step).strip())
    return names


def test_the_lock_order_is_the_one_core_locks_writes_down() -> None:
    docstring = ast.get_docstring(ast.parse((ROOT / "core" / "locks.py").read_text())) or ""
    lines = docstring.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Lock order"))
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith(" "):
            break
        body.append(line)
    in_code = _lock_order(" ".join(body))
    assert len(in_code) >= 3, f"core/locks.py: the lock order did not parse: {in_code}"
    assert all(in_code), f"core/locks.py: the lock order did not parse: {in_code}"
    written = re.search(r"`([^`]*→[^`]*)`", section("Transactions and locks"))
    assert written is not None, "docs/architecture.md, Transactions and locks: no lock order written as `A → B`"
    assert _lock_order(written.group(1)) == in_code


def test_every_row_lock_of_the_product_is_no_key() -> None:
    """A ``FOR UPDATE`` lock blocks the foreign-key checks Django defers to commit, out of the lock order."""
    found, plain = 0, []
    for package in ("api", "billing", "compliance", "config", "core", "lifecycle", "portal", "provisioning", "tenancy"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "select_for_update":
                    found += 1
                    no_key = [k for k in node.keywords if k.arg == "no_key"]
                    if not (no_key and isinstance(no_key[0].value, ast.Constant) and no_key[0].value.value is True):
                        plain.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found >= 20, found
    assert plain == [], f"row locks without no_key=True: {plain}"
