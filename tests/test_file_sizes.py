"""No application module grows past 600 lines (STYLE.md: "no file over ~600 lines without a reason"): a module
that long has more than one concern, and the seam between them is where it splits."""

from __future__ import annotations

import tomllib

from tests.support import ROOT

LIMIT = 600
# The apps and config: import-linter's root packages. Not the tests, the benchmarks or the migrations.
PACKAGES = ("api", "billing", "compliance", "config", "core", "lifecycle", "portal", "provisioning", "tenancy")


def lines_by_module() -> dict[str, int]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            found[path.relative_to(ROOT).as_posix()] = len(path.read_text().splitlines())
    return found


def test_the_packages_are_the_ones_the_import_contracts_cover() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert sorted(PACKAGES) == sorted(config["tool"]["importlinter"]["root_packages"])


def test_no_application_module_is_over_600_lines() -> None:
    long = {module: count for module, count in lines_by_module().items() if count > LIMIT}
    assert long == {}, "split along their seams: " + ", ".join(f"{m} ({n} lines)" for m, n in sorted(long.items()))
