"""Request bodies. Every serializer that reads a body (or a part of one) inherits ``StrictSerializer``: a field
it does not declare is refused, never silently dropped, so a misspelt field (``gpu_modle``) or one from a newer
API version fails loudly instead of being ignored.

A read-only field counts as unknown: a client sending ``id`` or ``created_at`` back is told so, not ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.request import Request

UNKNOWN_FIELD = "Unknown field."
MAX_ID = 2**63 - 1  # ids are bigints


class StrictSerializer(serializers.Serializer[Any]):
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors."""

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        """Copies of the declared fields, as DRF's serializers make, but shallow ones: DRF deep-copies every field
        by building it again from its arguments (each choice list normalized again, each list's child built
        again), and on an allocation's POST that cost more than validating the body. A copy is bound to this
        serializer as DRF binds its own; what it shares with the declared field (choices, validators, messages) is
        only read. A nested body builds its own fields from its copy when first used, and a list's child is copied
        with the list, so every field's parent, and the context it reads through it, are this serializer's.

        (Here, not in the class's docstring: that one is every body's description in the OpenAPI schema.)"""
        return {name: _copy(field) for name, field in self._declared_fields.items()}

    def to_internal_value(self, data: Any) -> Any:
        unknown: dict[str, list[str]] = {}
        if isinstance(data, Mapping):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = {str(key): [UNKNOWN_FIELD] for key in data if key not in writable}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as error:
            if unknown and isinstance(error.detail, dict):
                raise serializers.ValidationError({**unknown, **error.detail}) from None
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


def _copy(field: serializers.Field[Any, Any, Any, Any]) -> serializers.Field[Any, Any, Any, Any]:
    copied = object.__new__(type(field))  # copy.copy's result, without its trip through the pickle protocol
    copied.__dict__.update(field.__dict__)
    copied.__dict__.pop("fields", None)  # a nested body's fields, had they been built: its copy builds its own
    # The field a list (or dict, or many related rows) holds for each item: bound to its holder as DRF binds it.
    for name in ("child", "child_relation"):
        child = getattr(field, name, None)
        if isinstance(child, serializers.Field):
            child = _copy(child)
            child.parent = copied  # type: ignore[assignment]  # a field, as DRF's own lists set it
            setattr(copied, name, child)
    return copied


class IdField(serializers.IntegerField):
    """The id of a row named in a body: 1 to ``MAX_ID``. A larger one could name nothing, and SQLite cannot even
    compare it (an ``OverflowError``, not an empty match)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(min_value=1, max_value=MAX_ID, **kwargs)


class NoBodySerializer(StrictSerializer):
    """The body of an action that takes none: absent or ``{}``; any field in it is unknown."""


def refuse_body(request: Request) -> None:
    """For actions that take no body: refuse one with fields (or one that is not an object), as a serializer
    would refuse fields it does not declare."""
    NoBodySerializer(data=request.data).is_valid(raise_exception=True)
