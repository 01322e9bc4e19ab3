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

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
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
    input; every value is a parameter.

    The text of each insert is built once per process for its model and references (``_Shape``): what varies from
    one statement to the next is only the values."""

    def __init__(self) -> None:
        self._ctes: list[str] = []
        self.params: list[Any] = []
        # The thread's own connection, not the ``connection`` proxy: every field's preparation reads the backend's
        # operations, and each read through the proxy looks the connection up again.
        self._db = connections[DEFAULT_DB_ALIAS]

    @staticmethod
    def ref(name: str, column: str) -> str:
        return f"(SELECT {connection.ops.quote_name(column)} FROM {name})"  # noqa: S608

    def insert(self, name: str, instance: Model, *, refs: dict[str, str], returning: str) -> None:
        """One row: ``instance``'s values, the columns named in ``refs`` (by attname) from earlier inserts."""
        shape = _shape(type(instance), refs, with_pk=instance.pk is not None)
        self._ctes.append(shape.one(name, returning))
        self.params += shape.values(instance, self._db)

    def insert_many(self, name: str, instances: Sequence[Model], *, refs: dict[str, str], returning: str) -> None:
        """Rows of one model, in order; nothing when ``instances`` is empty. One row goes as ``insert`` sends it:
        an array per column costs more to send than the row's values."""
        if not instances:
            return
        if len(instances) == 1:
            self.insert(name, instances[0], refs=refs, returning=returning)
            return
        shape = _shape(type(instances[0]), refs, with_pk=instances[0].pk is not None)
        self._ctes.append(shape.many(name, returning))
        rows = [shape.values(instance, self._db) for instance in instances]
        self.params += [list(column) for column in zip(*rows, strict=True)]

    def execute(self, final: str, params: Sequence[Any] = ()) -> tuple[Any, ...]:
        """Run the inserts and ``final`` after them (``SELECT (SELECT id FROM a)``, or an ``UPDATE ... RETURNING``
        of one row), with its own ``params``; its one row."""
        sql = f"WITH {', '.join(self._ctes)} {final}"
        with self._db.cursor() as cursor:
            cursor.execute(sql, [*self.params, *params])
            row = cursor.fetchone()
        assert row is not None  # noqa: S101 - the final statement answers one row
        return tuple(row)


class _Shape:
    """The rows of one model an insert writes, given the columns ``refs`` fills from earlier inserts: the fields
    (each with its attname and whether it has a ``pre_save`` of its own, like ``auto_now`` times; the pk only when
    the instance has one, else the database makes it) and the statement's text, worked out once per process."""

    def __init__(self, model: type[Model], refs: dict[str, str], *, with_pk: bool) -> None:
        fields = [f for f in model._meta.concrete_fields if f.attname not in refs and (with_pk or not f.primary_key)]
        self.fields = [(f, f.attname, type(f).pre_save is not Field.pre_save) for f in fields]
        quote = connection.ops.quote_name
        by_attname = {f.attname: f for f in model._meta.concrete_fields}
        columns = [*(quote(str(f.column)) for f in fields), *(quote(str(by_attname[a].column)) for a in refs)]
        self._head = f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(columns)})"
        self._one = f"VALUES ({', '.join(['%s'] * len(fields) + list(refs.values()))})"
        names = ", ".join(f"c{i}" for i in range(len(fields)))
        arrays = ", ".join(f"%s::{f.db_type(connection)}[]" for f in fields)
        selected = ", ".join([names, *refs.values()])
        self._many = f"SELECT {selected} FROM UNNEST({arrays}) AS r({names})"  # noqa: S608

    def one(self, name: str, returning: str) -> str:
        return f"{name} AS ({self._head} {self._one} RETURNING {connection.ops.quote_name(returning)})"

    def many(self, name: str, returning: str) -> str:
        return f"{name} AS ({self._head} {self._many} RETURNING {connection.ops.quote_name(returning)})"

    def values(self, instance: Model, db: BaseDatabaseWrapper) -> list[Any]:
        """The row's values, prepared as the ORM prepares them for an insert."""
        return [
            field.get_db_prep_save(field.pre_save(instance, True) if own else getattr(instance, attname), db)
            for field, attname, own in self.fields
        ]


_SHAPES: dict[tuple[type[Model], tuple[tuple[str, str], ...], bool], _Shape] = {}


def _shape(model: type[Model], refs: dict[str, str], *, with_pk: bool) -> _Shape:
    key = (model, tuple(refs.items()), with_pk)
    shape = _SHAPES.get(key)
    if shape is None:
        shape = _SHAPES[key] = _Shape(model, refs, with_pk=with_pk)
    return shape
