"""FOCUS rows (``billing.domain.focus``) made a chunk at a time, column by column, with Arrow compute: the export's
hot path.

A ``Batch`` is a chunk of charges as columns of ids and integers (as the database returns them) with the
``Lookups`` that turn ids into tenants, SKUs, prices and allocations. ``Columns`` turns each batch, in order, into
the export's columns:

- the cost carry (``focus.CostCarry``, same rule): each row's cost is ``cost_units(after) - cost_units(before)``
  of its invoice line's running quantity. A batch's rows are sorted (stably) by line, the running quantities are
  one cumulative sum with each line's start moved to what the line carried from the previous batch, and the
  costs are computed in 64-bit integers split so nothing overflows: with ``x = 72 Q + R``, ``cost_units(x) = Q k +
  (R k) // 72`` (``k`` = the price in units of 1e-10 x 20), so a row costs ``(Qa - Qb) k + ...``, the size of the
  row's own cost. A batch whose numbers do not fit (a row costing more than about 900 units of currency, a negative
  quantity) is computed with Python integers instead: exact either way;
- the unchanging columns of each combination (tenant x SKU x price x allocation x month) come from ``focus.Static``,
  made once per combination and taken by index;
- CSV text is assembled by Arrow string kernels into one buffer per batch, byte for byte what ``focus.Rows.csv_line``
  writes (the reference the tests compare against): plain decimals, the description always quoted, null cells
  empty;
- Parquet batches carry exact decimals (the unscaled integers reinterpreted at the column's scale).

Memory: the carry keeps the lines of the last tenant x SKU; the combination and hour caches are emptied when they
grow past a bound, so memory does not grow with the rows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from billing.domain.focus import (
    COLUMNS,
    COST_PLACES,
    HOUR_MS,
    QUANTITY_PLACES,
    VARYING,
    Charge,
    Price,
    Resource,
    Sku,
    Static,
    Tenant,
    cost_units,
    fixed,
    iso,
    month_bounds,
    price_units,
    quantity_units,
    static_of,
)

_INT64_MAX = 2**63 - 1
_CACHE_BOUND = 50_000
_PACK_LIMIT = _INT64_MAX  # combinations are keyed by packing their columns' indices into one int64 below this


class Lookups(Protocol):
    def tenant(self, pk: int) -> Tenant: ...
    def sku(self, pk: int) -> Sku: ...
    def price(self, pk: int | None) -> Price: ...
    def resource(self, pk: int) -> Resource: ...
    def prefetch(self, resources: Collection[int]) -> None:
        """A hint: the allocations a batch's combinations are about to look up."""


@dataclass(frozen=True)
class Batch:
    """A chunk of charges, as columns (equal lengths); ``resource`` None for a summary export."""

    lookups: Lookups
    tenant: Sequence[int]
    sku: Sequence[int]
    price: Sequence[int | None]
    window_ms: Sequence[int]
    seq: Sequence[int]
    quantity_milli: Sequence[int]
    closed_ms: Sequence[int]
    goodput_lost_ms: Sequence[int]
    resource: Sequence[int | None] | None = None

    def __len__(self) -> int:
        return len(self.tenant)


class _ChargeLookups:
    """Lookups of charges already made (``batches``): each object under the id ``batches`` gave it."""

    def __init__(self) -> None:
        self.tenants: dict[int, Tenant] = {}
        self.skus: dict[int, Sku] = {}
        self.sku_ids: dict[str, int] = {}
        self.prices: dict[int | None, Price] = {}
        self.resources: dict[int, Resource] = {}

    def tenant(self, pk: int) -> Tenant:
        return self.tenants[pk]

    def sku(self, pk: int) -> Sku:
        return self.skus[pk]

    def price(self, pk: int | None) -> Price:
        return self.prices[pk]

    def resource(self, pk: int) -> Resource:
        return self.resources[pk]

    def prefetch(self, resources: Collection[int]) -> None:
        pass  # every charge's allocation is at hand


def batches(charges: Iterable[Charge], size: int = 5000) -> Iterator[Batch]:
    """Charges as batches of ``size``: ids as the reference (``focus.Rows``) keys them (tenant id, SKU code, price
    id, resource key)."""
    look = _ChargeLookups()
    chunk: list[Charge] = []

    def batch() -> Batch:
        skus = []
        for c in chunk:
            look.tenants[c.tenant.id] = c.tenant
            sku_id = look.sku_ids.setdefault(c.sku.code, len(look.sku_ids))
            look.skus[sku_id] = c.sku
            skus.append(sku_id)
            look.prices[c.price.id] = c.price
            if c.resource is not None:
                look.resources[c.resource.key] = c.resource
        detail = any(c.resource is not None for c in chunk)
        return Batch(
            look,
            [c.tenant.id for c in chunk],
            skus,
            [c.price.id for c in chunk],
            [c.window_ms for c in chunk],
            [c.seq for c in chunk],
            [c.quantity_milli for c in chunk],
            [c.closed_ms for c in chunk],
            [c.goodput_lost_ms for c in chunk],
            [c.resource.key if c.resource else None for c in chunk] if detail else None,
        )

    for charge in charges:
        chunk.append(charge)
        if len(chunk) == size:
            yield batch()
            chunk = []
    if chunk:
        yield batch()


def _fixed(units: pa.Array | list[int], places: int) -> pa.Array:
    """``focus.fixed`` of each value: Arrow kernels for an int64 array of values >= 0, else Python."""
    if isinstance(units, list):
        return pa.array([fixed(u, places) for u in units], pa.string())
    distinct = pc.unique(units)
    if len(distinct) * 4 <= len(units):  # few values (quantities, zero seconds lost): format each once
        return pc.take(_fixed(distinct, places), pc.index_in(units, distinct))
    padded = pc.utf8_lpad(units.cast(pa.string()), width=places + 1, padding="0")
    return pc.binary_join_element_wise(
        pc.utf8_slice_codeunits(padded, 0, -places), pc.utf8_slice_codeunits(padded, -places), "."
    )


def _decimal(units: pa.Array | list[int], places: int) -> pa.Array:
    """Values ``units x 10^-places`` as exact Arrow decimals (38 digits)."""
    kind = pa.decimal128(38, places)
    if isinstance(units, list):
        return pa.array([Decimal(u).scaleb(-places) for u in units], kind)
    whole = units.cast(pa.decimal128(38, 0))  # the unscaled integers; read at the scale wanted
    return pa.Array.from_buffers(kind, len(whole), whole.buffers(), offset=whole.offset)


def _split_units(values: pa.Array, factor: int) -> pa.Array:
    """``(values x factor + 36) // 72`` for values >= 0 without overflowing: ``Q x factor + (R x factor + 36) //
    72`` with ``values = 72 Q + R``."""
    whole = pc.divide(values, 72)
    rest = pc.subtract(values, pc.multiply(whole, 72))
    return pc.add_checked(
        pc.multiply_checked(whole, factor), pc.divide(pc.add_checked(pc.multiply_checked(rest, factor), 36), 72)
    )


def _cost_differences(after: pa.Array, before: pa.Array, factor: pa.Array) -> pa.Array:
    """``cost_units(after) - cost_units(before)`` (``k = factor``) for 0 <= before <= after, in 64-bit integers: with
    ``x = 72 Q + R``, ``(x k) // 72 = Q k + (R k) // 72``, so the difference is ``(Qa - Qb) k`` (the size of the
    row's own cost, whatever the running totals) plus the difference of the remainders' terms (each under ``k``).
    Raises ``ArrowInvalid`` when a row's cost does not fit."""
    whole_a, whole_b = pc.divide(after, 72), pc.divide(before, 72)
    rest_a, rest_b = pc.subtract(after, pc.multiply(whole_a, 72)), pc.subtract(before, pc.multiply(whole_b, 72))
    return pc.add_checked(
        pc.multiply_checked(pc.subtract(whole_a, whole_b), factor),
        pc.subtract(pc.divide(pc.multiply(rest_a, factor), 72), pc.divide(pc.multiply(rest_b, factor), 72)),
    )


@dataclass
class Made:
    """One batch's columns: the varying ones (costs and quantities as unscaled integers, an int64 array or a list
    of Python ints when they do not fit) and the index of each row's combination in ``statics``."""

    rows: int
    cost: pa.Array | list[int]
    quantity: pa.Array | list[int]
    quantity_milli: pa.Array
    seq: pa.Array
    lost: pa.Array
    start: pa.Array
    end: pa.Array
    correction: pa.Array  # bool
    late: pa.Array  # ", late adjustment n" or ""
    static: pa.Array  # int32 index into statics
    statics: list[Static]


class Columns:
    """Makes the columns of an export's batches, in order (the cost carry continues from batch to batch)."""

    def __init__(self) -> None:
        self._scope: tuple[int, int] | None = None  # (tenant, SKU) of the last row
        self._running: dict[tuple[int, int], int] = {}  # (price or -1, month start) -> running quantity
        self._statics: dict[tuple[Any, ...], Static] = {}
        self._hours: dict[int, tuple[int, int, str, str]] = {}  # window -> month start, month end, start, end
        self._prices: dict[int, int] = {}  # price id -> the price in units of 1e-10

    def _hour(self, window_ms: int) -> tuple[int, int, str, str]:
        found = self._hours.get(window_ms)
        if found is None:
            start, end = month_bounds(window_ms)
            found = self._hours[window_ms] = (start, end, iso(window_ms), iso(window_ms + HOUR_MS))
        return found

    def make(self, batch: Batch) -> Made:
        n = len(batch)
        look = batch.lookups
        if len(self._hours) > _CACHE_BOUND:
            self._hours = {}
        if len(self._statics) > _CACHE_BOUND:
            self._statics = {}
        tenant = pa.array(batch.tenant, pa.int64())
        sku = pa.array(batch.sku, pa.int64())
        price = pc.fill_null(pa.array(batch.price, pa.int64()), -1)
        resource = pc.fill_null(pa.array(batch.resource, pa.int64()), -1) if batch.resource is not None else None
        window = pa.array(batch.window_ms, pa.int64())
        seq = pa.array(batch.seq, pa.int64())
        quantity = pa.array(batch.quantity_milli, pa.int64())
        closed = pa.array(batch.closed_ms, pa.int64())
        lost = pa.array(batch.goodput_lost_ms, pa.int64())

        windows = pc.unique(window)
        at = pc.index_in(window, windows)
        hours = [self._hour(w) for w in windows.to_pylist()]
        month = pc.take(pa.array([h[0] for h in hours], pa.int64()), at)
        month_end = pc.take(pa.array([h[1] for h in hours], pa.int64()), at)
        start = pc.take(pa.array([h[2] for h in hours], pa.string()), at)
        end = pc.take(pa.array([h[3] for h in hours], pa.string()), at)

        cost = self._costs(n, tenant, sku, price, month, quantity, look)
        if pc.all(pc.greater_equal(quantity, 0)).as_py() is not False:
            try:
                quantity_u: pa.Array | list[int] = _split_units(quantity, 20_000_000)
            except pa.ArrowInvalid:
                quantity_u = [quantity_units(q) for q in batch.quantity_milli]
        else:
            quantity_u = [quantity_units(q) for q in batch.quantity_milli]
        static, statics = self._combinations(batch, tenant, sku, price, resource, month)
        late_adjustment = pc.greater(seq, 0)
        return Made(
            rows=n,
            cost=cost,
            quantity=quantity_u,
            quantity_milli=quantity,
            seq=seq,
            lost=lost,
            start=start,
            end=end,
            correction=pc.and_(late_adjustment, pc.greater_equal(closed, month_end)),
            late=pc.if_else(
                late_adjustment,
                pc.binary_join_element_wise(", late adjustment ", seq.cast(pa.string()), ""),
                "",
            ),
            static=static,
            statics=statics,
        )

    def _costs(
        self,
        n: int,
        tenant: pa.Array,
        sku: pa.Array,
        price: pa.Array,
        month: pa.Array,
        quantity: pa.Array,
        look: Lookups,
    ) -> pa.Array | list[int]:
        """Each row's cost in units of 1e-16: the carry of ``focus.CostCarry``, a batch at a time."""
        # Scopes (tenant x SKU): the running quantities start again at each change, as in CostCarry.
        first = (tenant[0].as_py(), sku[0].as_py())
        changed = pc.or_(
            pc.not_equal(tenant[1:], tenant[:-1]),
            pc.not_equal(sku[1:], sku[:-1]),
        )
        scope = pc.cumulative_sum(
            pa.concat_arrays([pa.array([0 if first == self._scope else 1], pa.int64()), changed.cast(pa.int64())])
        )
        # Sort the rows by invoice line (stable), sum the quantities, move each line's start to its carry. Rows in
        # the export's order usually are in line order already (a price change inside an hour interleaves two).
        same_price = pc.equal(price[1:], price[:-1])
        back_in_line = pc.and_(
            pc.equal(scope[1:], scope[:-1]),
            pc.or_(pc.less(price[1:], price[:-1]), pc.and_(same_price, pc.less(month[1:], month[:-1]))),
        )
        order: pa.Array | None = None
        s_scope, s_price, s_month, s_quantity = scope, price, month, quantity
        if pc.any(back_in_line).as_py():
            order = pc.sort_indices(
                pa.table({"s": scope, "p": price, "m": month, "i": pa.array(range(n), pa.int64())}),
                sort_keys=[("s", "ascending"), ("p", "ascending"), ("m", "ascending"), ("i", "ascending")],
            )
            s_scope, s_price, s_month = pc.take(scope, order), pc.take(price, order), pc.take(month, order)
            s_quantity = pc.take(quantity, order)
        through = pc.cumulative_sum_checked(s_quantity)
        before_all = pc.subtract(through, s_quantity)
        new_line = pc.or_(
            pc.or_(pc.not_equal(s_scope[1:], s_scope[:-1]), pc.not_equal(s_price[1:], s_price[:-1])),
            pc.not_equal(s_month[1:], s_month[:-1]),
        )
        starts = [0] + [i + 1 for i in pc.indices_nonzero(new_line).to_pylist()]
        line = pc.cumulative_sum(pa.concat_arrays([pa.array([0], pa.int64()), new_line.cast(pa.int64())]))
        scopes, prices, months, before = (
            s_scope.to_pylist(),
            s_price.to_pylist(),
            s_month.to_pylist(),
            before_all.to_pylist(),
        )
        shift: list[int] = []
        totals: list[int] = []
        ends = [*starts[1:], n]
        through_list = None
        for begin, stop in zip(starts, ends, strict=True):
            carried = self._running.get((prices[begin], months[begin]), 0) if scopes[begin] == 0 else 0
            shift.append(carried - before[begin])
            if scopes[begin] == scopes[-1]:
                if through_list is None:
                    through_list = through.to_pylist()
                totals.append(carried + through_list[stop - 1] - before[begin])
            else:
                totals.append(0)
        # The carry goes on with the lines of the last scope.
        running = {
            (prices[begin], months[begin]): total
            for begin, total in zip(starts, totals, strict=True)
            if scopes[begin] == scopes[-1]
        }
        if scopes[-1] != 0:
            self._running = running
        else:
            self._running.update(running)
        self._scope = (tenant[n - 1].as_py(), sku[n - 1].as_py())
        s_before = pc.add_checked(before_all, pc.take(pa.array(shift, pa.int64()), line))
        s_after = pc.add_checked(s_before, s_quantity)
        # k = the price in units of 1e-10 x 20 per row, from its price.
        uniq = pc.unique(s_price)
        factors = []
        for pk in uniq.to_pylist():
            units = self._prices.get(pk)
            if units is None:
                units = self._prices[pk] = price_units(look.price(None if pk == -1 else pk).per_hour)
            factors.append(units * 20)
        inverse = pc.sort_indices(order) if order is not None else None
        fits = max(factors) * 72 <= _INT64_MAX and pc.min(s_quantity).as_py() >= 0
        if fits:
            k = pc.take(pa.array(factors, pa.int64()), pc.index_in(s_price, uniq))
            try:
                cost = _cost_differences(s_after, s_before, k)
                return cost if inverse is None else pc.take(cost, inverse)
            except pa.ArrowInvalid:
                pass
        units_of = dict(zip(uniq.to_pylist(), factors, strict=True))
        exact = [
            cost_units(a, units_of[p] // 20) - cost_units(b, units_of[p] // 20)
            for a, b, p in zip(s_after.to_pylist(), s_before.to_pylist(), prices, strict=True)
        ]
        if inverse is None:
            return exact
        return [exact[i] for i in inverse.to_pylist()]

    def _combinations(
        self,
        batch: Batch,
        tenant: pa.Array,
        sku: pa.Array,
        price: pa.Array,
        resource: pa.Array | None,
        month: pa.Array,
    ) -> tuple[pa.Array, list[Static]]:
        """Each row's combination, as an index into the batch's list of ``Static``."""
        keys = [tenant, sku, price, month] + ([resource] if resource is not None else [])
        packed: pa.Array | None = None
        span = 1
        for key in keys:
            values = pc.unique(key)
            span *= len(values)
            if span > _PACK_LIMIT:
                packed = None
                break
            index = pc.index_in(key, values).cast(pa.int64())
            packed = index if packed is None else pc.add(pc.multiply(packed, len(values)), index)
        if packed is None:  # too many distinct values to pack: key each row in Python
            rows = list(zip(*(k.to_pylist() for k in keys), strict=True))
            seen: dict[tuple[Any, ...], int] = {}
            ids = [seen.setdefault(r, len(seen)) for r in rows]
            index_of = pa.array(ids, pa.int32())
            firsts = sorted({i: row for row, i in reversed(list(enumerate(ids)))}.values())
        else:
            uniq = pc.unique(packed)  # in order of first appearance
            index_of = pc.index_in(packed, uniq)
            grows = pc.greater(index_of[1:], pc.cumulative_max(index_of)[:-1])
            firsts = [0] + [i + 1 for i in pc.indices_nonzero(grows).to_pylist()]
        look = batch.lookups
        if batch.resource is not None:
            look.prefetch({batch.resource[row] for row in firsts} - {None})  # type: ignore[arg-type]
        month_at = month.to_pylist() if len(firsts) > 64 else None
        statics = []
        for row in firsts:
            t, s, p, w = batch.tenant[row], batch.sku[row], batch.price[row], batch.window_ms[row]
            r = batch.resource[row] if batch.resource is not None else None
            m = month_at[row] if month_at is not None else month[row].as_py()
            key = (t, s, p, r, m)
            found = self._statics.get(key)
            if found is None:
                charge = Charge(
                    look.tenant(t),
                    look.sku(s),
                    look.price(p),
                    w,
                    0,
                    0,
                    0,
                    0,
                    look.resource(r) if r is not None else None,
                )
                found = self._statics[key] = static_of(charge)
            statics.append(found)
        return index_of.cast(pa.int32()), statics


def csv_bytes(made: Made) -> memoryview:
    """The batch's rows as CSV lines (each ending in a newline), UTF-8, as ``focus.Rows.csv_line`` writes them: a
    view of the Arrow buffer the lines were assembled in."""
    statics = made.statics
    cost = _fixed(made.cost, COST_PLACES)
    quantity = _fixed(made.quantity, QUANTITY_PLACES)
    lost = _fixed(made.lost, 3) if pc.min(made.lost).as_py() >= 0 else _fixed(made.lost.to_pylist(), 3)
    describe = pc.take(pa.array([s.describe_csv for s in statics], pa.string()), made.static)
    tail = pc.take(pa.array([s.csv + "\n" for s in statics], pa.string()), made.static)
    description = pc.binary_join_element_wise(describe, " for the hour from ", made.start, made.late, '"', "")
    correction = pc.if_else(made.correction, "Correction", "")
    lines = pc.binary_join_element_wise(
        cost,
        cost,
        cost,
        cost,
        cost,
        quantity,
        quantity,
        made.start,
        made.end,
        correction,
        description,
        lost,
        made.quantity_milli.cast(pa.string()),
        made.seq.cast(pa.string()),
        tail,
        ",",
    )
    _, offsets, data = lines.buffers()
    at = memoryview(offsets).cast("i")  # int32 offsets into the text: the lines are one run of bytes
    return memoryview(data)[at[lines.offset] : at[lines.offset + len(lines)]]


def record_batch(made: Made, schema: pa.Schema) -> pa.RecordBatch:
    """The batch's rows as an Arrow record batch of ``schema`` (``focus_files.BATCH_SCHEMA``: the unchanging string
    columns dictionary-encoded)."""
    cost = _decimal(made.cost, COST_PLACES)
    quantity = _decimal(made.quantity, QUANTITY_PLACES)
    description = pc.binary_join_element_wise(
        pc.take(pa.array([s.describe for s in made.statics], pa.string()), made.static),
        " for the hour from ",
        made.start,
        made.late,
        "",
    )
    head = [
        cost,
        cost,
        cost,
        cost,
        cost,
        quantity,
        quantity,
        made.start,
        made.end,
        pc.if_else(made.correction, "Correction", pa.scalar(None, pa.string())),
        description,
        _decimal(made.lost, 3),
        made.quantity_milli,
        made.seq,
    ]
    columns = [column.cast(schema.field(i).type) for i, column in enumerate(head)]
    for offset in range(len(COLUMNS) - VARYING):
        field = schema.field(VARYING + offset)
        values = [s.values[offset] for s in made.statics]
        if not pa.types.is_dictionary(field.type):
            columns.append(pc.take(pa.array(values, type=field.type), made.static))
            continue
        # A string column the same for a combination: the combinations' values and each row's index into them,
        # nothing copied per row. A null value is a null index.
        indices = made.static
        if None in values:
            kept = [i for i, value in enumerate(values) if value is not None]
            remap: list[int | None] = [None] * len(values)
            for new, old in enumerate(kept):
                remap[old] = new
            indices = pc.take(pa.array(remap, pa.int32()), made.static)
            values = [values[i] for i in kept]
        columns.append(pa.DictionaryArray.from_arrays(indices, pa.array(values, pa.string())))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
