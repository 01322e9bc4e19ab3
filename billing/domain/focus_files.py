"""Writers of FOCUS rows (``billing.domain.focus``) to CSV and Parquet, streamed: memory does not grow with the rows.

Both take the batches of an export's charges in order (``focus_columns.Batch``: a chunk of the database's rows as
columns) and make their columns with one ``focus_columns.Columns`` (its cost carry needs every row, in order).
CSV: one header line, then one line per row (null an empty cell), a batch's lines assembled by Arrow string kernels
and written at once. Parquet: pyarrow, in row groups of ``ROW_GROUP`` rows; batches are held until a group is
full, then written and dropped. Decimal columns are Parquet decimals (38 digits, the column's places), so a reader
gets the exact values back; date/times are ISO 8601 strings as FOCUS spells them.
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from billing.domain.focus import COLUMNS, COST_PLACES, PRICE_PLACES, QUANTITY_PLACES, VARYING
from billing.domain.focus_columns import Batch, Columns, csv_bytes, record_batch
from billing.domain.focus_commitments import csv_lines

Rows = Sequence[tuple[Any, ...]]  # rows made whole in Python, each in ``COLUMN_NAMES`` order

FORMATS = ("csv", "parquet")
HASH_WINDOW = 32 << 20  # bytes of a CSV part mapped at once while it is hashed (a multiple of mmap's granularity)
ROW_GROUP = 65_536

_DECIMAL_PLACES = {
    "ListUnitPrice": PRICE_PLACES,
    "ContractedUnitPrice": PRICE_PLACES,
    "PricingCurrencyListUnitPrice": PRICE_PLACES,
    "PricingCurrencyContractedUnitPrice": PRICE_PLACES,
    "PricingQuantity": QUANTITY_PLACES,
    "ConsumedQuantity": QUANTITY_PLACES,
    "CommitmentDiscountQuantity": QUANTITY_PLACES,
    "x_GoodputSecondsLost": 3,
}


def _arrow_type(name: str, kind: str) -> pa.DataType:
    if kind == "decimal":
        return pa.decimal128(38, _DECIMAL_PLACES.get(name, COST_PLACES))
    if kind == "integer":
        return pa.int64()
    return pa.string()


SCHEMA = pa.schema(
    [pa.field(c.name, _arrow_type(c.name, c.kind), nullable=not c.required) for c in COLUMNS],
    metadata={b"focus_version": b"1.2", b"producer": b"Ladder"},
)
# The record batches an export is made of: SCHEMA with the string columns that are the same for a tenant x SKU x
# price x allocation x month dictionary-encoded (each row an index into its chunk's combinations). Parquet stores
# them as the strings they are, dictionary-encoded, and the Arrow schema is not stored in the file, so a reader gets
# SCHEMA's plain strings back; FILE_METADATA says the FOCUS version instead.
BATCH_SCHEMA = pa.schema(
    [
        field.with_type(pa.dictionary(pa.int32(), pa.string())) if i >= VARYING and field.type == pa.string() else field
        for i, field in enumerate(SCHEMA)
    ]
)
FILE_METADATA = {"focus_version": "1.2", "producer": "Ladder"}
HEADER = ",".join(c.name for c in COLUMNS)


def write_csv(out: IO[bytes], batches: Iterable[Batch], *, header: bool = True, extra: Rows = ()) -> int:
    """Write the header (unless told not to: a part of a file), one line per row of the batches (in order), then
    the ``extra`` rows (a reservation's, ``focus_commitments``), UTF-8; returns how many rows."""
    columns = Columns()
    if header:
        out.write(HEADER.encode() + b"\n")
    count = 0
    for batch in batches:
        if len(batch):
            out.write(csv_bytes(columns.make(batch)))
            count += len(batch)
    if extra:
        out.write(csv_lines(list(extra)))
    return count + len(extra)


def record_batches(batches: Iterable[Batch], extra: Rows = ()) -> Iterator[pa.RecordBatch]:
    """The batches' rows as Arrow record batches of ``BATCH_SCHEMA``, in order (one ``Columns``: the carry goes on),
    then the ``extra`` rows'."""
    columns = Columns()
    for batch in batches:
        if len(batch):
            yield record_batch(columns.make(batch), BATCH_SCHEMA)
    if extra:
        yield extra_record(extra)


def extra_record(rows: Rows) -> pa.RecordBatch:
    """Rows made whole in Python (each in ``COLUMN_NAMES`` order) as one record batch of ``BATCH_SCHEMA``."""
    columns = []
    for i, field in enumerate(BATCH_SCHEMA):
        values = [row[i] for row in rows]
        if pa.types.is_dictionary(field.type):
            columns.append(pa.array(values, pa.string()).dictionary_encode())
        else:
            columns.append(pa.array(values, field.type))
    return pa.RecordBatch.from_arrays(columns, schema=BATCH_SCHEMA)


def write_parquet(out: Any, batches: Iterable[Batch], *, row_group: int = ROW_GROUP, extra: Rows = ()) -> int:
    """Write one row per row of the batches, then the ``extra`` rows, in row groups of ``row_group`` rows, to a
    path or binary file; returns how many."""
    return write_parquet_records(out, record_batches(batches, extra), row_group=row_group)


def write_parquet_records(out: Any, records: Iterable[pa.RecordBatch], *, row_group: int = ROW_GROUP) -> int:
    """Write record batches of ``BATCH_SCHEMA`` to Parquet in row groups of ``row_group`` rows: batches are held until a
    group is full, then written and dropped."""
    count = 0
    pending: list[pa.RecordBatch] = []
    waiting = 0
    with pq.ParquetWriter(out, BATCH_SCHEMA, compression="zstd", store_schema=False) as writer:
        writer.add_key_value_metadata(FILE_METADATA)
        for record in records:
            pending.append(record)
            waiting += record.num_rows
            if waiting >= row_group:
                table = pa.Table.from_batches(pending, schema=BATCH_SCHEMA)
                full = waiting - waiting % row_group
                writer.write_table(table.slice(0, full), row_group_size=row_group)
                pending, waiting = table.slice(full).to_batches(), waiting - full
                count += full
        if waiting or count == 0:
            writer.write_table(pa.Table.from_batches(pending, schema=BATCH_SCHEMA), row_group_size=row_group)
            count += waiting
    return count


def write_part(file_format: str, path: str, batches: Iterable[Batch]) -> int:
    """Write a part of a file (the rows of some tenant x SKUs) for ``join``: CSV lines without the header, or for
    Parquet the Arrow record batches (an uncompressed IPC stream: the row groups are made when the parts are
    joined, so the file is what one writer would have made). Returns how many rows."""
    if file_format == "csv":
        with open(path, "wb") as out:
            return write_csv(out, batches, header=False)
    count = 0
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, BATCH_SCHEMA) as stream:
        for record in record_batches(batches):
            stream.write_batch(record)
            count += record.num_rows
    return count


def join(file_format: str, path: str, parts: Iterable[str], rows: Callable[[], int], *, extra: Rows = ()) -> Written:
    """Write the file from its parts (``write_part``), in order, removing each part once it is in, then the
    ``extra`` rows; ``rows`` tells how many rows the parts held, once they are all in."""

    def records() -> Iterator[pa.RecordBatch]:
        for part in parts:
            with pa.OSFile(part, "rb") as source, pa.ipc.open_stream(source) as stream:
                yield from stream
            os.unlink(part)
        if extra:
            yield extra_record(extra)

    if file_format == "parquet":
        return _digest_of(path, write_parquet_records(path, records()))
    # CSV: each part is hashed where it lies, mapped a window at a time (the process holds one window's pages, not
    # the part's), and appended by the kernel (copy_file_range): its bytes are not copied through Python.
    digest = hashlib.sha256(HEADER.encode() + b"\n")
    with open(path, "wb", buffering=0) as out:
        out.write(HEADER.encode() + b"\n")
        for part in parts:
            with open(part, "rb", buffering=0) as source:
                size = os.fstat(source.fileno()).st_size
                for offset in range(0, size, HASH_WINDOW):
                    length = min(HASH_WINDOW, size - offset)
                    with mmap.mmap(source.fileno(), length, offset=offset, access=mmap.ACCESS_READ) as window:
                        digest.update(window)
                copied = 0
                while copied < size:
                    copied += os.copy_file_range(source.fileno(), out.fileno(), size - copied, copied)
            os.unlink(part)
        tail = csv_lines(list(extra))
        out.write(tail)
        digest.update(tail)
        return Written(rows() + len(extra), digest.hexdigest(), out.tell())


@dataclass(frozen=True)
class Written:
    """A file written: its rows, the SHA-256 (hex) and the size of its bytes."""

    rows: int
    sha256: str
    bytes: int


class _Digesting:
    """A binary file that takes the SHA-256 and the size of what is written through it: a CSV export is hashed as
    it is written, not read back (its text is most of the export's bytes)."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: Any) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.out.write(data)

    def written(self, rows: int) -> Written:
        return Written(rows, self.digest.hexdigest(), self.size)


def _digest_of(path: str, rows: int) -> Written:
    """A Parquet file, read back to hash it (it is compressed: a fraction of the CSV's bytes)."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return Written(rows, digest.hexdigest(), size)


def write(file_format: str, path: str, batches: Iterable[Batch], *, extra: Rows = ()) -> Written:
    """Write an export's file: the batches' rows, then the ``extra`` rows."""
    if file_format == "csv":
        with open(path, "wb") as out:
            digesting = _Digesting(out)
            return digesting.written(write_csv(digesting, batches, extra=extra))  # type: ignore[arg-type]
    if file_format == "parquet":
        return _digest_of(path, write_parquet(path, batches, extra=extra))
    raise ValueError(f"unknown export format {file_format!r}: one of {', '.join(FORMATS)}")
