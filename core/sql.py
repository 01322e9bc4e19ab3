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
from django.db.models import Model

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


def insert_values(instance: Model) -> tuple[list[str], list[Any]]:
    """The columns and values the ORM would insert for a new ``instance`` (its pk left to the database)."""
    columns, values = [], []
    for field in instance._meta.concrete_fields:
        if field.primary_key and getattr(instance, field.attname) is None:
            continue
        columns.append(connection.ops.quote_name(str(field.column)))
        values.append(field.get_db_prep_save(field.pre_save(instance, True), connection))
    return columns, values
