"""The vendored front-end libraries are the files their README says: every file listed, each with its SHA-256."""

import hashlib
import re

from tests.support import ROOT

VENDOR = ROOT / "portal" / "static" / "portal" / "vendor"
ROW = re.compile(r"^\| `(?P<file>[^`]+)` \| (?P<source>[^|]+) \| (?P<licence>[^|]+) \| `(?P<sha256>[0-9a-f]{64})` \|$")


def _table() -> dict[str, str]:
    rows = [ROW.match(line) for line in (VENDOR / "README.md").read_text().splitlines()]
    return {row["file"]: row["sha256"] for row in rows if row}


def test_it_lists_every_vendored_file() -> None:
    on_disk = {path.relative_to(VENDOR).as_posix() for path in VENDOR.rglob("*") if path.is_file()}
    assert set(_table()) == on_disk - {"README.md"}


def test_it_matches_every_sha256() -> None:
    table = _table()
    assert table, "the README's table has no rows"
    for name, expected in table.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == expected, name


def test_it_keeps_a_licence_beside_each_library() -> None:
    for library in (path for path in VENDOR.iterdir() if path.is_dir()):
        assert any(path.name.startswith("LICENSE") for path in library.iterdir()), library.name
