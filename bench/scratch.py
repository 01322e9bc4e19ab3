"""A benchmark's own PostgreSQL database, recreated empty and migrated, with Django set up on it."""

from __future__ import annotations

import os
import subprocess
from typing import Any
from urllib.parse import urlparse


def setup_scratch_django(bench: str, server: str, database: str, **environment: str) -> None:
    """Drop and create ``database`` on ``server`` (PostgreSQL only), point Django at it with ``environment``
    added, set Django up and migrate."""
    parsed = urlparse(server)
    if not parsed.scheme.startswith("postgres"):
        raise SystemExit(f"{bench} runs on PostgreSQL only; --server is {server!r}")
    admin = parsed._replace(path="/postgres").geturl()
    for statement in (f"DROP DATABASE IF EXISTS {database}", f"CREATE DATABASE {database}"):
        done = subprocess.run(["psql", admin, "-qc", statement], capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"cannot use PostgreSQL at {admin}: {done.stderr.strip()}")
    os.environ.update(
        DATABASE_URL=parsed._replace(path=f"/{database}").geturl(), DEBUG="0", LOG_LEVEL="WARNING", **environment
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def sql(statement: str, params: Any = None) -> list[tuple[Any, ...]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else []
