"""The committed SDK and task schema are what the API generates now (sdk/generate.py, `make sdk`)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.support import ROOT


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sdk_generate", ROOT / "sdk" / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_sdk_is_what_the_api_generates() -> None:
    done = subprocess.run(
        [sys.executable, "sdk/generate.py", "--check"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_drift_is_found_and_named(tmp_path: Path) -> None:
    generator = _generator()
    package, task = generator.generate(tmp_path)
    assert generator.differences(package, task) == []
    (package / "api" / "allocations" / "allocations_list.py").write_text("# edited\n")
    shutil.rmtree(package / "api" / "volumes")
    task.write_text("{}\n")
    drifted = generator.differences(package, task)
    assert "sdk/ladder_sdk/api/allocations/allocations_list.py" in drifted
    assert "sdk/ladder_sdk/api/volumes/volumes_list.py (no longer generated)" in drifted
    assert drifted[-1] == "cli/ladder_cli/task.schema.json"
