"""Ladder as a newcomer runs it, and the installed ``ladder`` command against it.

:func:`live_ladder` starts what ``make run`` starts, in a scratch directory: the embedded default's settings
(``config.settings``, tasks inline, the simulated fleet), ``migrate``, ``seed_demo``, ``runserver`` and
``beat_inline`` beside it, with the simulated fleet's clocks shortened so that a launch runs within a second or
two. Its database is the pass's: a scratch SQLite file, or, when the suite runs on PostgreSQL (``DATABASE_URL``),
a scratch database on that server, dropped afterwards, so the command line is tried on both.
:class:`LiveLadder.ladder` runs ``.venv/bin/ladder`` in a subprocess with a home of its own, exactly as a customer's
shell would (no test double between the command and the server).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LADDER = BIN / "ladder"

# The server's settings beyond make run's own: quick clocks for the simulated fleet, and a serverless endpoint
# that goes idle after a few quiet seconds, so that a call wakes it.
FAST_FLEET = {
    "LADDER_SIM_PROVISION_SECONDS": "0.5",
    "LADDER_RECONCILE_EVERY_SECONDS": "0.5",
    "LADDER_SERVERLESS_IDLE_SECONDS": "3",
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _scratch_database(scratch: Path) -> Iterator[str]:
    """The server's DATABASE_URL: a new database on the suite's PostgreSQL, or a SQLite file in ``scratch``."""
    suite = urllib.parse.urlsplit(os.environ.get("DATABASE_URL", ""))
    if suite.scheme not in ("postgres", "postgresql"):
        yield f"sqlite:///{scratch / 'db.sqlite3'}"
        return
    import psycopg

    name = f"ladder_cli_{uuid.uuid4().hex[:12]}"
    admin = urllib.parse.urlunsplit(suite._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urllib.parse.urlunsplit(suite._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _server_env(database: str, url: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("LADDER_", "DJANGO_", "DATABASE_", "CELERY_", "PYTEST_"))
    }
    return {
        **env,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "1",
        "LADDER_TASKS_INLINE": "1",
        "DATABASE_URL": database,
        "LADDER_PUBLIC_URL": url,  # where the server is: the demo's endpoints are served by it, at its own port
        **FAST_FLEET,
    }


@dataclass
class LiveLadder:
    url: str
    demo: dict[str, Any]
    scratch: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def key(self, user: str) -> str:
        for tenant in self.demo["tenants"].values():
            if user in tenant["users"]:
                return str(tenant["users"][user]["api_key"])
        return str(self.demo["staff"][user]["api_key"])

    def ladder(
        self,
        *args: str,
        home: Path,
        user: str | None = None,
        stdin: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run the installed ``ladder`` with ``home`` as the user's home. ``user`` signs in through the
        environment (LADDER_URL, LADDER_API_KEY); without it the command sees only what ``ladder login`` stored."""
        base = {key: value for key, value in os.environ.items() if not key.startswith(("LADDER_", "XDG_"))}
        base.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), COLUMNS="200", NO_COLOR="1", TERM="dumb")
        if user is not None:
            base.update(LADDER_URL=self.url, LADDER_API_KEY=self.key(user))
        base.update(env or {})
        return subprocess.run(
            [str(LADDER), *args], input=stdin, env=base, capture_output=True, text=True, timeout=timeout, cwd=home
        )

    def log(self) -> str:
        return "\n".join(path.read_text()[-4000:] for path in sorted(self.scratch.glob("*.log")))


def _wait_until_up(url: str, server: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("the server exited while starting")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the server did not answer /healthz in time")


@contextmanager
def live_ladder(scratch: Path) -> Iterator[LiveLadder]:
    """Migrate, seed and serve the embedded default from ``scratch``; stop everything on the way out."""
    with _scratch_database(scratch) as database:
        yield from _serve(scratch, database)


def _serve(scratch: Path, database: str) -> Iterator[LiveLadder]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = _server_env(database, url)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput"], env=env, check=True, capture_output=True, cwd=ROOT)
    seeded = subprocess.run(
        [*manage, "seed_demo", "--json"], env=env, check=True, capture_output=True, text=True, cwd=ROOT
    )
    live = LiveLadder(url=url, demo=json.loads(seeded.stdout), scratch=scratch)
    commands = {
        "server": [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
        "beat": [*manage, "beat_inline"],
    }
    try:
        for name, command in commands.items():
            log = (scratch / f"{name}.log").open("wb")
            live.processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=log, cwd=ROOT))
        _wait_until_up(live.url, live.processes[0], time.monotonic() + 60)
        yield live
    finally:
        for process in live.processes:
            process.terminate()
        for process in live.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
