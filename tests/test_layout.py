"""The layout tells the architecture: pure domain code sits in each app's ``domain`` package and imports no Django,
no two modules of one app share a name unless their layer is in their paths, and no application file is too long
to read (docs/architecture.md, "Layout")."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.support import ROOT

APPS = ("api", "billing", "compliance", "config", "core", "lifecycle", "portal", "provisioning", "tenancy")
# What a domain module may not import: the web framework and the task queue. Of the project, only other domain code
# and the base's service errors (``core.errors``).
FRAMEWORKS = ("django", "rest_framework", "drf_spectacular", "celery", "kombu")
# Directories that name a layer inside an app.
LAYERS = {"domain", "services", "selectors", "drivers", "management", "models"}


def _modules(app: str) -> list[Path]:
    return sorted(p for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _domain_modules() -> list[Path]:
    return [p for app in APPS for p in _modules(app) if "domain" in p.relative_to(ROOT).parts]


def test_every_app_with_pure_code_keeps_it_in_a_domain_package() -> None:
    packages = sorted({p.relative_to(ROOT).parts[0] for p in _domain_modules()})
    assert packages == ["billing", "compliance", "core", "provisioning", "tenancy"]


def test_domain_code_imports_no_framework_and_no_layer_above_it() -> None:
    wrong = []
    for path in _domain_modules():
        for name in sorted(_imports(path)):
            top = name.split(".")[0]
            framework = top in FRAMEWORKS
            above = top in APPS and ".domain" not in name and not name.startswith("core.errors")
            if framework or above:
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
    assert wrong == []


def _layer(path: Path) -> str | None:
    """The layer a module's path names (``services``, ``domain``...), or None for a module at the app's top."""
    return next((part for part in path.parts[:-1] if part in LAYERS), None)


def test_no_two_modules_of_an_app_share_a_name_unless_their_layer_is_in_the_path() -> None:
    clashes = []
    for app in APPS:
        by_name: dict[str, list[Path]] = defaultdict(list)
        for path in _modules(app):
            if path.name not in ("__init__.py", "__main__.py"):
                by_name[path.name].append(path.relative_to(ROOT / app))
        for paths in by_name.values():
            layers = {_layer(p) for p in paths}
            if len(layers) > 1 and None in layers:
                clashes.append(f"{app}: {', '.join(str(p) for p in paths)}")
    assert clashes == []
