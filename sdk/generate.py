"""Regenerate the SDK and the task file's JSON Schema from Ladder's own OpenAPI schema (`make sdk`).

1. The schema, as the API serves it: ``manage.py spectacular`` (validated, warnings fail).
2. ``sdk/ladder_sdk``: openapi-python-client (pinned in pyproject.toml) with ``sdk/openapi-python-client.yaml``.
3. ``cli/ladder_cli/task.schema.json``: the task file's JSON Schema, built from the allocation request in the same
   schema (``ladder_cli.taskschema``).

``--check`` generates into a scratch directory and compares instead of writing: it lists every file that differs
and exits 1, so a change to the API that was not followed by ``make sdk`` fails the suite (tests/cli).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sdk" / "ladder_sdk"
TASK_SCHEMA = ROOT / "cli" / "ladder_cli" / "task.schema.json"
CONFIG = ROOT / "sdk" / "openapi-python-client.yaml"
BIN = Path(sys.executable).parent


def _run(*command: str | Path, cwd: Path = ROOT) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "DEBUG": "1"}
    env.pop("LADDER_TEST_CLOCK", None)
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True)  # noqa: S603
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command[:3]))} failed:\n{done.stdout}\n{done.stderr}")


def generate(into: Path) -> tuple[Path, Path]:
    """Write the SDK package and the task schema under ``into``; return their paths."""
    schema = into / "openapi.json"
    _run(
        sys.executable,
        ROOT / "manage.py",
        "spectacular",
        "--validate",
        "--fail-on-warn",
        "--format",
        "openapi-json",
        "--file",
        schema,
    )
    package = into / "ladder_sdk"
    _run(
        BIN / "openapi-python-client",
        "generate",
        "--path",
        schema,
        "--meta",
        "none",
        "--config",
        CONFIG,
        "--output-path",
        package,
        "--overwrite",
        "--fail-on-warning",
        cwd=into,
    )
    (package / "py.typed").write_text("# Marker file for PEP 561\n")  # written only with --meta other than none
    from ladder_cli.taskschema import task_schema

    task = into / "task.schema.json"
    task.write_text(json.dumps(task_schema(json.loads(schema.read_text())), indent=2) + "\n")
    return package, task


def _files(root: Path) -> set[str]:
    paths = (path for path in root.rglob("*") if path.is_file() and "__pycache__" not in path.parts)
    return {str(path.relative_to(root)) for path in paths}


def differences(package: Path, task: Path) -> list[str]:
    """What differs between a fresh generation and the committed files, as paths from the repository's root."""
    found = []
    fresh, committed = _files(package), _files(PACKAGE) if PACKAGE.exists() else set()
    for name in sorted(fresh | committed):
        if name not in committed:
            found.append(f"sdk/ladder_sdk/{name} (missing)")
        elif name not in fresh:
            found.append(f"sdk/ladder_sdk/{name} (no longer generated)")
        elif not filecmp.cmp(package / name, PACKAGE / name, shallow=False):
            found.append(f"sdk/ladder_sdk/{name}")
    if not TASK_SCHEMA.exists() or TASK_SCHEMA.read_text() != task.read_text():
        found.append(str(TASK_SCHEMA.relative_to(ROOT)))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed files; write nothing")
    check = parser.parse_args().check
    with tempfile.TemporaryDirectory(prefix="ladder-sdk-") as scratch:
        package, task = generate(Path(scratch))
        if check:
            drifted = differences(package, task)
            for name in drifted:
                print(f"drifted: {name}")
            if drifted:
                print("The SDK no longer matches the API: run `make sdk` and commit the result.")
            return 1 if drifted else 0
        shutil.rmtree(PACKAGE, ignore_errors=True)
        shutil.copytree(package, PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copyfile(task, TASK_SCHEMA)
    print(f"wrote {PACKAGE.relative_to(ROOT)} and {TASK_SCHEMA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
