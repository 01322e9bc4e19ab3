"""What a rung is and offers is written in one place: the table of rungs (``provisioning/domain/rungs.py``).

The application code names a rung by a member of ``Rung`` or asks the table (``rung_facts``), never by its name
as a string; and it asks an allocation's workload for its framework through the typed spec
(``provisioning.domain.workloads.WorkloadSpec``, ``Allocation.workload_spec``), never by reading the stored form. Only
string constants count (``ast``), so docstrings and comments may say "job" or "container" freely; migrations and
tests are not read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from provisioning.domain.rungs import Rung

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("api", "billing", "compliance", "config", "core", "lifecycle", "portal", "provisioning", "tenancy")
TABLE = "provisioning/domain/rungs.py"  # the one place rung names are written
SPEC = "provisioning/domain/workloads.py"  # the typed spec of a workload, and the parser of its stored form
RUNG_NAMES = frozenset(r.value for r in Rung)

# (file, enclosing function, string): why the word there is not a rung. Every entry must still be found.
NOT_A_RUNG = {
    ("provisioning/drivers/kubernetes/client.py", "Kube.pod_log", "container"): "the pod log API's query parameter",
    ("provisioning/simulated_exporter.py", "_pod", "container"): "dcgm-exporter's label naming the pod's container",
}
# (file, enclosing function): why a "framework" read there is not of a stored workload.
NOT_THE_WORKLOAD = {
    ("portal/forms.py", "LaunchForm.workload"): "the launch form's own field, which the typed workload is built from",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _scoped(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Every node with the qualified name of the function or class it is in ("" at module level)."""

    def walk(node: ast.AST, scope: str) -> Iterator[tuple[str, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            yield scope, child
            inner = scope
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                inner = f"{scope}.{child.name}" if scope else child.name
            yield from walk(child, inner)

    yield from walk(tree, "")


def _framework_read(node: ast.AST) -> bool:
    """``x.get("framework", ...)`` or ``x["framework"]``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        first = node.args[0] if node.args else None
        return isinstance(first, ast.Constant) and first.value == "framework"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "framework"
    return False


def offences(path: str, source: str) -> tuple[list[str], set[tuple[str, ...]]]:
    """The rung names and framework reads outside their one place, as ``file:line: what``; and the exceptions
    (``NOT_A_RUNG``, ``NOT_THE_WORKLOAD``) that were used."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found: list[str] = []
    excused: set[tuple[str, ...]] = set()
    for scope, node in _scoped(tree):
        if path != TABLE and isinstance(node, ast.Constant) and node.value in RUNG_NAMES:
            if id(node) in docstrings:
                continue
            key = (path, scope, str(node.value))
            if key in NOT_A_RUNG:
                excused.add(key)
                continue
            found.append(f"{path}:{node.lineno}: the rung {node.value!r} as a string; use Rung or rung_facts()")
        elif path != SPEC and isinstance(node, ast.Call | ast.Subscript) and _framework_read(node):
            spot = (path, scope)
            if spot in NOT_THE_WORKLOAD:
                excused.add(spot)
                continue
            found.append(f"{path}:{node.lineno}: the framework read from a dict; use allocation.workload_spec")
    return found, excused


def _application_files() -> Iterator[Path]:
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in file.relative_to(ROOT).parts:
                yield file


def test_rung_names_and_framework_reads_live_in_one_place() -> None:
    found: list[str] = []
    excused: set[tuple[str, ...]] = set()
    for file in _application_files():
        path = file.relative_to(ROOT).as_posix()
        more, used = offences(path, file.read_text())
        found += more
        excused |= used
    assert found == [], "\n".join(found)
    stale = (set(NOT_A_RUNG) | set(NOT_THE_WORKLOAD)) - excused
    assert stale == set(), f"exceptions no longer needed: {sorted(stale)}"


def test_it_finds_a_rung_name_in_code_and_not_in_prose() -> None:
    source = '''
"""A job runs here."""
def place(rung):
    """On the "vm" rung."""
    # a comment about bare_metal
    if rung == "job":
        return {"rung": 'bare_metal'}
    return f"{rung} on a container"
'''
    found, _ = offences("provisioning/example.py", source)
    assert found == [
        "provisioning/example.py:6: the rung 'job' as a string; use Rung or rung_facts()",
        "provisioning/example.py:7: the rung 'bare_metal' as a string; use Rung or rung_facts()",
    ]


def test_it_finds_a_framework_read_from_the_stored_workload() -> None:
    source = """
def slurm(allocation):
    return (allocation.workload or {}).get("framework") == "slurm" or allocation.workload["framework"]
"""
    found, _ = offences("provisioning/example.py", source)
    assert [line.split(": ", 1)[0] for line in found] == ["provisioning/example.py:3", "provisioning/example.py:3"]
    assert offences(SPEC, source)[0] == []


def test_the_table_may_name_rungs_and_the_exceptions_are_narrow() -> None:
    assert offences(TABLE, 'BARE = "bare_metal"\n')[0] == []
    source = """
class Kube:
    def pod_log(self):
        return [("container", 1)]

    def other(self):
        return "container"
"""
    found, excused = offences("provisioning/drivers/kubernetes/client.py", source)
    assert excused == {("provisioning/drivers/kubernetes/client.py", "Kube.pod_log", "container")}
    assert found == [
        "provisioning/drivers/kubernetes/client.py:7: the rung 'container' as a string; use Rung or rung_facts()"
    ]
