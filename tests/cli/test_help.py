"""Every command's ``--help``, snapshot-tested: a change to what a user reads shows up in review.

The snapshots are ``tests/cli/help/<command path>.txt``; after changing a command on purpose, rewrite them with
``LADDER_UPDATE_SNAPSHOTS=1 pytest tests/cli/test_help.py`` and commit them. Every command's help ends with an
example.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from ladder_cli.main import app
from typer.testing import CliRunner

SNAPSHOTS = Path(__file__).parent / "help"
UPDATE = os.environ.get("LADDER_UPDATE_SNAPSHOTS") == "1"


def _paths(command: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not getattr(sub, "hidden", False):
            yield from _paths(sub, (*path, name))


COMMANDS = list(_paths(typer.main.get_command(app)))


def _help(path: tuple[str, ...]) -> str:
    runner = CliRunner()
    done = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"})
    assert done.exit_code == 0, done.output
    return done.output


def _snapshot(path: tuple[str, ...]) -> Path:
    return SNAPSHOTS / f"{'-'.join(('ladder', *path))}.txt"


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(("ladder", *path)))
def test_help_matches_its_snapshot(path: tuple[str, ...]) -> None:
    text = _help(path)
    snapshot = _snapshot(path)
    if UPDATE:
        snapshot.write_text(text)
    assert snapshot.exists(), f"no snapshot for `ladder {' '.join(path)} --help`: run with LADDER_UPDATE_SNAPSHOTS=1"
    assert text == snapshot.read_text()


@pytest.mark.parametrize("path", [path for path in COMMANDS if path], ids=lambda path: " ".join(("ladder", *path)))
def test_every_command_shows_an_example(path: tuple[str, ...]) -> None:
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    if getattr(command, "commands", None):  # a group: its commands carry the examples
        return
    examples = [line for line in _help(path).splitlines() if line.strip().startswith("Example: ")]
    assert any(f"ladder {' '.join(path)}" in line for line in examples), path


def test_no_snapshot_is_left_from_a_command_that_is_gone() -> None:
    expected = {_snapshot(path).name for path in COMMANDS}
    assert {path.name for path in SNAPSHOTS.glob("*.txt")} <= expected


def test_shell_completion_completes_commands() -> None:
    """``ladder --install-completion`` (in ``ladder --help``, for the shell it finds running) installs a script that
    calls ``ladder`` back with ``_LADDER_COMPLETE`` set; so called, it answers the words that fit."""
    assert "--install-completion" in _help(())
    env = {"_LADDER_COMPLETE": "complete_bash", "COMP_WORDS": "ladder volumes ", "COMP_CWORD": "2"}
    words = CliRunner().invoke(app, [], prog_name="ladder", env=env)
    assert {"create", "grow", "snapshot", "delete"} <= set(words.output.split())
    env = {"_LADDER_COMPLETE": "complete_bash", "COMP_WORDS": "ladder ss", "COMP_CWORD": "1"}
    assert set(CliRunner().invoke(app, [], prog_name="ladder", env=env).output.split()) == {"ssh", "ssh-keys"}
