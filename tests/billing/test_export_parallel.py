"""A large export written by several processes (billing.selectors.exports.write): the rows are split into
contiguous runs of
tenant x SKU of about equal size, and the file the parts make is the file one process writes, byte for byte (CSV)
and value for value in the same row groups (Parquet). The workers are forked and read what is committed, so these
tests commit (transactional_db); an export inside a transaction is written by one process."""

from __future__ import annotations

import hashlib
import mmap
from io import StringIO

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from hypothesis import given
from hypothesis import strategies as st

import core.tasks
from billing.domain import focus_files
from billing.domain.metering import to_ms
from billing.selectors import exports
from tests.support.exports import MONTH, generated_month

FIRST_MS = to_ms(MONTH)
STOP_MS = FIRST_MS + 3 * 86_400_000


def test_split_keeps_keys_whole_in_order_and_evens_the_rows() -> None:
    counts = [((1, 1), 10), ((1, 2), 10), ((2, 1), 40), ((3, 1), 20), ((3, 2), 20)]
    runs = exports.split(counts, 2)
    assert runs == [(((1, 1), (2, 1)), 60), (((3, 1), (3, 2)), 40)]
    assert exports.split(counts, 1) == [(((1, 1), (3, 2)), 100)]
    assert exports.split([((7, 3), 5)], 4) == [(((7, 3), (7, 3)), 5)]
    assert exports.split([], 4) == []


@given(
    st.lists(st.integers(min_value=1, max_value=1000), min_size=1, max_size=60),
    st.integers(min_value=1, max_value=8),
)
def test_split_covers_every_key_once_in_at_most_the_parts_asked(sizes: list[int], parts: int) -> None:
    counts = [((i // 4, i % 4), size) for i, size in enumerate(sizes)]
    runs = exports.split(counts, parts)
    assert 1 <= len(runs) <= parts
    keys = [key for key, _ in counts]
    covered = []
    for (first, last), rows in runs:
        inside = [(key, count) for key, count in counts if first <= key <= last]
        assert sum(count for _, count in inside) == rows
        covered += [key for key, _ in inside]
    assert covered == keys  # contiguous, in order, each key in one run
    # No run is much more than its share, but for one key too large to share.
    assert max(rows for _, rows in runs) <= sum(sizes) / len(runs) + max(sizes)


def committed_month(tenants, monkeypatch, days: int) -> None:
    """The month's usage, committed, with its tasks never sent (as in a test's transaction, which never commits)."""
    with monkeypatch.context() as patch:
        patch.setattr(core.tasks.transaction, "on_commit", lambda *args, **kwargs: None)
        generated_month(tenants, days=days)


def _write(tmp_path, file_format: str, workers: int, detail: bool, tenant_id: int | None = None) -> str:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / f"{workers}-{detail}.{file_format}"
    written = exports.write(
        file_format,
        str(path),
        first_ms=FIRST_MS,
        stop_ms=STOP_MS,
        tenant_id=tenant_id,
        detail=detail,
        workers=workers,
    )
    assert written.rows > 0
    content = path.read_bytes()
    assert (written.sha256, written.bytes) == (hashlib.sha256(content).hexdigest(), len(content))  # as written
    if file_format == "csv":
        assert content.count(b"\n") == written.rows + 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(path.name)) == [path.name]  # no parts left
    return str(path)


@pytest.mark.parametrize("detail", [False, True], ids=["summary", "detail"])
def test_workers_write_the_file_one_process_writes(transactional_db, acme, globex, tmp_path, monkeypatch, detail):
    committed_month([acme, globex], monkeypatch, days=3)
    monkeypatch.setattr(exports, "PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr(focus_files, "HASH_WINDOW", mmap.ALLOCATIONGRANULARITY)  # a part hashed in many windows
    parts: list[tuple[exports.KeyRange, int]] = []  # those of the last split
    split = exports.split

    def recorded(counts, n):
        parts[:] = split(counts, n)
        return list(parts)

    monkeypatch.setattr(exports, "split", recorded)

    one = _write(tmp_path, "csv", 1, detail)
    assert parts == []  # one worker: no split
    many = _write(tmp_path, "csv", 3, detail)
    assert len(parts) >= 3  # several tenant x SKUs, written as parts
    with open(one, "rb") as a, open(many, "rb") as b:
        assert a.read() == b.read()

    one_p, many_p = _write(tmp_path, "parquet", 1, detail), _write(tmp_path, "parquet", 3, detail)
    assert pq.read_table(one_p).equals(pq.read_table(many_p))
    assert [pq.ParquetFile(p).metadata.num_row_groups for p in (one_p, many_p)] == [1, 1]

    # One tenant's export splits by its SKUs.
    alone_one = _write(tmp_path / "acme-1", "csv", 1, detail, tenant_id=acme.pk)
    parts.clear()
    alone_many = _write(tmp_path / "acme-2", "csv", 2, detail, tenant_id=acme.pk)
    assert len(parts) >= 2
    with open(alone_one, "rb") as a, open(alone_many, "rb") as b:
        assert a.read() == b.read()


def test_inside_a_transaction_one_process_writes(acme, globex, tmp_path, monkeypatch):
    """The test's transaction is not committed: workers could not read it."""
    generated_month([acme, globex], days=1)
    monkeypatch.setattr(exports, "PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr(exports, "split", lambda counts, n: pytest.fail("split inside a transaction"))
    assert transaction.get_connection().in_atomic_block
    _write(tmp_path, "csv", 2, False)


def test_a_failing_worker_fails_the_export_and_leaves_no_part(transactional_db, acme, globex, tmp_path, monkeypatch):
    committed_month([acme, globex], monkeypatch, days=1)
    monkeypatch.setattr(exports, "PARALLEL_MIN_ROWS", 1)

    def broken(*args):
        raise RuntimeError("disk full")

    monkeypatch.setattr(exports.focus_files, "write_part", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        exports.write(
            "csv", str(tmp_path / "x.csv"), first_ms=FIRST_MS, stop_ms=STOP_MS, tenant_id=None, detail=False, workers=2
        )
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("x.csv.")] == []


def test_the_command_writes_with_workers_and_says_when_one_failed(
    transactional_db, acme, globex, tmp_path, monkeypatch
):
    committed_month([acme, globex], monkeypatch, days=1)
    monkeypatch.setattr(exports, "PARALLEL_MIN_ROWS", 1)
    args = ["--from", "2026-10-01", "--to", "2026-10-01", "--format", "csv", "--workers", "2"]
    call_command("billing_export", *args, "--out", str(tmp_path / "two.csv"), stdout=StringIO())
    call_command("billing_export", *args[:-1], "1", "--out", str(tmp_path / "one.csv"), stdout=StringIO())
    assert (tmp_path / "two.csv").read_bytes() == (tmp_path / "one.csv").read_bytes()

    def broken(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(exports.focus_files, "write_part", broken)
    with pytest.raises(CommandError) as failed:
        call_command("billing_export", *args, "--out", str(tmp_path / "x.csv"), stdout=StringIO())
    assert failed.value.returncode == 1
    assert "failed in a worker process: OSError: [Errno 28] No space left on device" in str(failed.value)
    assert not (tmp_path / "x.csv").exists()
    assert not (tmp_path / "x.csv.sig.json").exists()
