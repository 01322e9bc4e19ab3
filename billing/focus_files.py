"""Writers of FOCUS rows (``billing.focus``) to CSV and Parquet, streamed: memory does not grow with the rows.

Both take the charges of an export in order and make the rows with one ``focus.Rows`` (its cost carry needs every
row, in order). CSV: one header line, then one line per row (null an empty cell), the unchanging columns of a
combination rendered once. Parquet: pyarrow, in row groups of ``ROW_GROUP`` rows; a group's changing columns are
built from lists, its unchanging ones by taking from the combinations it used (``take_statics``), then it is
written and dropped. Decimal columns are Parquet decimals (38 digits, the column's places), so a reader gets the
exact values back; date/times are ISO 8601 strings as FOCUS spells them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from billing.focus import COLUMNS, COST_PLACES, QUANTITY_PLACES, VARYING, Charge, Rows

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


def write_csv(out: IO[str], charges: Iterable[Charge]) -> int:
    """Write the header and one line per charge; returns how many rows."""
    rows = Rows()
    out.write(HEADER + "\n")
    count = 0
    lines: list[str] = []
    for line in rows.csv_lines(charges):
        lines.append(line)
        if len(lines) == 4096:
            out.write("\n".join(lines) + "\n")
            count += len(lines)
            lines = []
    if lines:
        out.write("\n".join(lines) + "\n")
        count += len(lines)
    return count


def _group(varying: list[list[Any]], ids: list[int], rows: Rows) -> pa.RecordBatch:
    statics = rows.take_statics()
    columns: list[pa.Array] = []
    made: dict[int, pa.Array] = {}
    for index in range(VARYING):
        values = varying[index]
        same = next((j for j in made if varying[j] is values), None)  # the five costs share one list
        column = made[same] if same is not None else pa.array(values, type=SCHEMA.field(index).type)
        made[index] = column
        columns.append(column)
    indices = pa.array(ids, type=pa.int32())
    for offset in range(len(COLUMNS) - VARYING):
        field = SCHEMA.field(VARYING + offset)
        dictionary = pa.array([s.values[offset] for s in statics], type=field.type)
        columns.append(pc.take(dictionary, indices))
    return pa.RecordBatch.from_arrays(columns, schema=SCHEMA)


def write_parquet(out: Any, charges: Iterable[Charge], *, row_group: int = ROW_GROUP) -> int:
    """Write one row per charge, in row groups of ``row_group`` rows, to a path or binary file; returns how many."""
    rows = Rows(columnar=True)
    count = 0

    def empty() -> tuple[list[list[Any]], list[int]]:
        costs: list[Any] = []
        quantities: list[Any] = []
        lists = [costs] * 5 + [quantities] * 2 + [[] for _ in range(VARYING - 7)]
        return lists, []

    with pq.ParquetWriter(out, SCHEMA, compression="zstd") as writer:
        varying, ids = empty()
        costs, quantities, rest = varying[0], varying[5], varying[7:]
        for charge in charges:
            head, static_id = rows.varying(charge)
            costs.append(head[0])
            quantities.append(head[5])
            for column, value in zip(rest, head[7:], strict=True):
                column.append(value)
            ids.append(static_id)
            if len(ids) == row_group:
                writer.write_batch(_group(varying, ids, rows), row_group_size=row_group)
                count += len(ids)
                varying, ids = empty()
                costs, quantities, rest = varying[0], varying[5], varying[7:]
        if ids or count == 0:
            writer.write_batch(_group(varying, ids, rows), row_group_size=row_group)
            count += len(ids)
    return count


def write(file_format: str, path: str, charges: Iterable[Charge]) -> int:
    if file_format == "csv":
        with open(path, "w", newline="", encoding="utf-8") as out:
            return write_csv(out, charges)
    if file_format == "parquet":
        return write_parquet(path, charges)
    raise ValueError(f"unknown export format {file_format!r}: one of {', '.join(FORMATS)}")
