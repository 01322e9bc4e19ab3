"""Plain SQL for the hottest statements, spelled from the models' own metadata.

The ORM compiles every statement again on every call; on the allocation path (a join per API key, the inserts of
an allocation) that compilation cost more CPU than PostgreSQL spent running the statement. These helpers build the
SQL text once per process from ``Model._meta`` (so a field added to a model is picked up, not forgotten) and turn
rows into model instances, and instances into insert values, the way the ORM does: the backend's and the fields'
converters on the way in, ``pre_save`` and ``get_db_prep_save`` on the way out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection
from django.db.models import Field, Model

Converter = Callable[[Any, Any, Any], Any]


class Columns:
    """A model's concrete columns, selected under ``alias``, and how to make an instance of a row's slice."""

    def __init__(self, model: type[Model], alias: str) -> None:
        self.model = model
        fields = model._meta.concrete_fields
        quote = connection.ops.quote_name
        self.sql = ", ".join(f"{quote(alias)}.{quote(str(f.column))}" for f in fields)
        self.names = [f.attname for f in fields]
        self.width = len(fields)
        self._converters: list[tuple[int, list[Converter], Any]] = []
        for i, field in enumerate(fields):
            column = field.get_col(alias)
            found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
            if found:
                self._converters.append((i, found, column))

    def instance(self, row: Sequence[Any], start: int = 0) -> Model | None:
        """The instance in ``row[start:start + width]``; None where an outer join found nothing (a null pk)."""
        values = list(row[start : start + self.width])
        if values[0] is None:
            return None
        for i, converters, column in self._converters:
            for convert in converters:
                values[i] = convert(values[i], column, connection)
        return self.model.from_db(connection.alias, self.names, values)


class Lookup:
    """``Model.objects.filter(<where>).first()`` for one fixed ``where`` (columns quoted with ``{name}``, values
    as ``%s``), the SQL built on first use: for reads every request makes."""

    def __init__(self, model: type[Model], where: str) -> None:
        self.model = model
        self.where = where
        self._sql: str | None = None
        self._columns: Columns | None = None

    def __call__(self, *params: Any) -> Any:
        if self._sql is None or self._columns is None:
            self._columns = Columns(self.model, "r")
            quote = connection.ops.quote_name
            names = {f.name: f"r.{quote(str(f.column))}" for f in self.model._meta.concrete_fields}
            table = quote(self.model._meta.db_table)
            self._sql = f"SELECT {self._columns.sql} FROM {table} r WHERE {self.where.format(**names)}"  # noqa: S608
        with connection.cursor() as cursor:
            cursor.execute(self._sql, list(params))
            row = cursor.fetchone()
        return None if row is None else self._columns.instance(row)


class InsertStatement:
    """Several inserts that depend on one another sent as one statement (PostgreSQL's data-modifying ``WITH``):
    one round trip and no ORM compilation for writes that always go together. Each insert is named; a later one
    refers to an earlier one's returned column with ``ref(name, column)``. Values are prepared as the ORM
    prepares them (``pre_save``, ``get_db_prep_save``); many rows go through ``UNNEST`` of one array per column,
    as Django's own bulk insert does on PostgreSQL. Names and columns come from code and the models, never from
    input; every value is a parameter."""

    def __init__(self) -> None:
        self._ctes: list[str] = []
        self.params: list[Any] = []

    @staticmethod
    def ref(name: str, column: str) -> str:
        return f"(SELECT {connection.ops.quote_name(column)} FROM {name})"  # noqa: S608

    def insert(self, name: str, instance: Model, *, refs: dict[str, str], returning: str) -> None:
        """One row: ``instance``'s values, the columns named in ``refs`` (by attname) from earlier inserts."""
        fields, values = _values(instance, refs)
        placeholders = ["%s"] * len(values) + list(refs.values())
        self._ctes.append(
            f"{name} AS (INSERT INTO {_table(instance)} ({_columns(instance, fields, refs)}) "  # noqa: S608
            f"VALUES ({', '.join(placeholders)}) RETURNING {connection.ops.quote_name(returning)})"
        )
        self.params += values

    def insert_many(self, name: str, instances: Sequence[Model], *, refs: dict[str, str], returning: str) -> None:
        """Rows of one model, in order; nothing when ``instances`` is empty."""
        if not instances:
            return
        rows = [_values(instance, refs) for instance in instances]
        fields = rows[0][0]
        arrays = [f"%s::{field.db_type(connection)}[]" for field in fields]
        names = [f"c{i}" for i in range(len(fields))]
        self._ctes.append(
            f"{name} AS (INSERT INTO {_table(instances[0])} ({_columns(instances[0], fields, refs)}) "  # noqa: S608
            f"SELECT {', '.join([*names, *refs.values()])} FROM UNNEST({', '.join(arrays)}) AS r({', '.join(names)}) "
            f"RETURNING {connection.ops.quote_name(returning)})"
        )
        self.params += [list(column) for column in zip(*(values for _, values in rows), strict=True)]

    def execute(self, final: str, params: Sequence[Any] = ()) -> tuple[Any, ...]:
        """Run the inserts and ``final`` after them (``SELECT (SELECT id FROM a)``, or an ``UPDATE ... RETURNING``
        of one row), with its own ``params``; its one row."""
        sql = f"WITH {', '.join(self._ctes)} {final}"
        with connection.cursor() as cursor:
            cursor.execute(sql, [*self.params, *params])
            row = cursor.fetchone()
        assert row is not None  # noqa: S101 - the final statement answers one row
        return tuple(row)


def _table(instance: Model) -> str:
    return connection.ops.quote_name(instance._meta.db_table)


_PLANS: dict[tuple[type[Model], tuple[str, ...]], list[tuple[Any, str, bool]]] = {}


def _plan(model: type[Model], refs: dict[str, str]) -> list[tuple[Any, str, bool]]:
    """Per model (and refs): the fields a new row inserts, each with its attname and whether it has a
    ``pre_save`` of its own (``auto_now`` times); worked out once, not per row."""
    key = (model, tuple(refs))
    plan = _PLANS.get(key)
    if plan is None:
        plan = [
            (f, f.attname, type(f).pre_save is not Field.pre_save)
            for f in model._meta.concrete_fields
            if f.attname not in refs
        ]
        _PLANS[key] = plan
    return plan


def _values(instance: Model, refs: dict[str, str]) -> tuple[list[Any], list[Any]]:
    """The fields the ORM would insert for a new ``instance`` (its pk left to the database, ``refs`` to the
    statement) and their values, prepared as the ORM prepares them."""
    fields, values = [], []
    for field, attname, pre_save in _plan(type(instance), refs):
        value = field.pre_save(instance, True) if pre_save else getattr(instance, attname)
        if field.primary_key and value is None:
            continue
        fields.append(field)
        values.append(field.get_db_prep_save(value, connection))
    return fields, values


def _columns(instance: Model, fields: list[Any], refs: dict[str, str]) -> str:
    quote = connection.ops.quote_name
    by_attname = {f.attname: f for f in instance._meta.concrete_fields}
    return ", ".join([*(quote(str(f.column)) for f in fields), *(quote(str(by_attname[a].column)) for a in refs)])
