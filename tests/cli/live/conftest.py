"""One Ladder per test process for the command-line tests: started as ``make run`` starts it (tests/support/cli.py).

The tests share it, so none may change what another reads: each signs in as its own demo user or tenant, names
what it launches after itself, and puts back any tenant setting it changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import LiveLadder, live_ladder


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLadder]:
    with live_ladder(tmp_path_factory.mktemp("ladder-server")) as server:
        yield server


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The user's home for one test: its own config directory, so no stored login leaks between tests."""
    path = tmp_path / "home"
    path.mkdir()
    return path
