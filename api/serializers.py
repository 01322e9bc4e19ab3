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
