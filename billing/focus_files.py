"""Writers of FOCUS rows (``billing.focus``) to CSV and Parquet, streamed: memory does not grow with the rows.

Both take the batches of an export's charges in order (``focus_columns.Batch``: a chunk of the database's rows as
columns) and make their columns with one ``focus_columns.Columns`` (its cost carry needs every row, in order).
CSV: one header line, then one line per row (null an empty cell), a batch's lines assembled by Arrow string kernels
and written at once. Parquet: pyarrow, in row groups of ``ROW_GROUP`` rows; batches are held until a group is
full, then written and dropped. Decimal columns are Parquet decimals (38 digits, the column's places), so a reader
gets the exact values back; date/times are ISO 8601 strings as FOCUS spells them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from billing.focus import COLUMNS, COST_PLACES, QUANTITY_PLACES
from billing.focus_columns import Batch, Columns, csv_bytes, record_batch

FORMATS = ("csv", "parquet")
ROW_GROUP = 65_536

_DECIMAL_PLACES = {
    "ListUnitPrice": 6,
    "ContractedUnitPrice": 6,
    "PricingCurrencyListUnitPrice": 6,
    "PricingCurrencyContractedUnitPrice": 6,
    "PricingQuantity": QUANTITY_PLACES,
    "ConsumedQuantity": QUANTITY_PLACES,
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
HEADER = ",".join(c.name for c in COLUMNS)


def write_csv(out: IO[bytes], batches: Iterable[Batch]) -> int:
    """Write the header and one line per row of the batches (in order), UTF-8; returns how many rows."""
    columns = Columns()
    out.write(HEADER.encode() + b"\n")
    count = 0
    for batch in batches:
        if len(batch):
            out.write(csv_bytes(columns.make(batch)))
            count += len(batch)
    return count


def write_parquet(out: Any, batches: Iterable[Batch], *, row_group: int = ROW_GROUP) -> int:
    """Write one row per row of the batches, in row groups of ``row_group`` rows, to a path or binary file;
    returns how many."""
    columns = Columns()
    count = 0
    pending: list[pa.RecordBatch] = []
    waiting = 0
    with pq.ParquetWriter(out, SCHEMA, compression="zstd") as writer:
        for batch in batches:
            if not len(batch):
                continue
            pending.append(record_batch(columns.make(batch), SCHEMA))
            waiting += len(batch)
            if waiting >= row_group:
                table = pa.Table.from_batches(pending, schema=SCHEMA)
                full = waiting - waiting % row_group
                writer.write_table(table.slice(0, full), row_group_size=row_group)
                pending, waiting = table.slice(full).to_batches(), waiting - full
                count += full
        if waiting or count == 0:
            writer.write_table(pa.Table.from_batches(pending, schema=SCHEMA), row_group_size=row_group)
            count += waiting
    return count


def write(file_format: str, path: str, batches: Iterable[Batch]) -> int:
    if file_format == "csv":
        with open(path, "wb") as out:
            return write_csv(out, batches)
    if file_format == "parquet":
        return write_parquet(path, batches)
    raise ValueError(f"unknown export format {file_format!r}: one of {', '.join(FORMATS)}")
