"""A customer outside the repository installs the SDK and the CLI from a clone with pip, and uses them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT
from tests.support.cli import LiveLadder


def _constraints(path: Path) -> Path:
    """The lock's versions without its hashes (pip takes no hashes in a constraints file), so that the install
    resolves to what the suite tested and comes from pip's cache when it can."""
    pins = [line.split()[0] for line in (ROOT / "requirements.lock").read_text().splitlines() if "==" in line]
    path.write_text("\n".join(pins) + "\n")
    return path


def test_pip_install_from_a_clone_gives_a_working_ladder(live: LiveLadder, home: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    for package in ("sdk", "cli"):
        shutil.copytree(
            ROOT / package, clone / package, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
        )
    venv = tmp_path / "customer-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "install", "--quiet"]
    constraints = _constraints(tmp_path / "constraints.txt")
    installed = subprocess.run(
        [*pip, "-c", str(constraints), "./sdk", "./cli"], cwd=clone, capture_output=True, text=True, check=False
    )
    assert installed.returncode == 0, installed.stderr[-3000:]

    ladder = venv / "bin" / "ladder"
    env = {"HOME": str(home), "PATH": f"{venv / 'bin'}:/usr/bin:/bin", "LADDER_URL": live.url}
    version = subprocess.run([str(ladder), "--version"], env=env, capture_output=True, text=True, check=False)
    assert version.stdout.strip() == "ladder 1.0.0"
    who = subprocess.run(
        [str(ladder), "whoami", "--json"],
        env={**env, "LADDER_API_KEY": live.key("alice")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert who.returncode == 0, who.stderr
    assert json.loads(who.stdout)["tenant"]["slug"] == "acme"
    sdk = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import ladder_sdk, ladder_cli; print(ladder_sdk.__file__)"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert str(venv) in sdk.stdout  # installed, not read from the repository
