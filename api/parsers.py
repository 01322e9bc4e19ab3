"""The API's JSON parser: DRF's, refusing also what that one lets through to the views.

- Arrays and objects nested deeper than ``MAX_DEPTH``: 400 ``parse_error``. Python's decoder raises
  ``RecursionError`` (not a ``ValueError``, so DRF let it become a 500) when the nesting uses up what is left of
  the stack, and a body just short of that would exhaust it later, in whatever recurses over it next (the
  ``Idempotency-Key`` fingerprint, a serializer). No body of the API nests past a handful of levels.
- A string holding an unpaired UTF-16 surrogate (``"\\ud800"``): 400 ``parse_error``. That is not Unicode text:
  it can be neither encoded as UTF-8 (the ``Idempotency-Key`` fingerprint, the response echoing it) nor stored.
- A string holding U+0000: 422 ``validation_error`` naming where it is (``regions.0.name``). It is text, but
  PostgreSQL stores it in neither ``text`` nor ``jsonb``; DRF's string fields refused it with the same message, and
  now so is every string of every body (dictionary keys, related-object lookups, the fleet document, values echoed
  in an error stored for an ``Idempotency-Key``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

MAX_DEPTH = 64
NUL_MESSAGE = "Null characters are not allowed."
MAX_REPORTED = 20  # places named in one answer

_SURROGATE = re.compile("[\ud800-\udfff]")
_TOO_DEEP = f"JSON parse error - arrays and objects nest deeper than {MAX_DEPTH} levels."

Path = tuple[str | int, ...]


class JSONParser(parsers.JSONParser):
    def parse(self, stream: IO[Any], media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(_TOO_DEEP) from None
        check_json(data)
        return data


def _bad(text: str) -> bool:
    return "\x00" in text or _SURROGATE.search(text) is not None


def check_json(data: Any) -> None:
    """Refuse a parsed body nested deeper than ``MAX_DEPTH`` or holding a string (a value or a key) with U+0000 or
    an unpaired surrogate. One iterative pass (any depth the decoder returns is fine); a second one names the
    places, only when there is something to name."""
    bad = isinstance(data, str) and _bad(data)
    stack = [(data, 1)] if isinstance(data, dict | list) else []
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ParseError(_TOO_DEEP)
        items: Iterable[Any] = value
        if isinstance(value, dict):
            bad = bad or any(map(_bad, value))
            items = value.values()
        for item in items:
            if isinstance(item, str):
                bad = bad or _bad(item)
            elif isinstance(item, dict | list):
                stack.append((item, depth + 1))
    if bad:
        check_strings(data)


def check_strings(data: Any) -> None:
    """Refuse a string (a value or a key) holding an unpaired surrogate (400) or U+0000 (422, naming each place)."""
    nul: list[Path] = []
    surrogate: tuple[Path, str] | None = None
    stack: list[tuple[Any, Path]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        texts: list[tuple[str, Path]] = []
        if isinstance(value, str):
            texts.append((value, path))
        elif isinstance(value, dict):
            texts.extend((key, (*path, key)) for key in value)
            stack.extend(reversed([(item, (*path, key)) for key, item in value.items()]))  # popped in order
        elif isinstance(value, list):
            stack.extend(reversed([(item, (*path, index)) for index, item in enumerate(value)]))
        for text, where in texts:
            if "\x00" in text and len(nul) < MAX_REPORTED:
                nul.append(where)
            if surrogate is None and (found := _SURROGATE.search(text)):
                surrogate = (where, found.group())
    if surrogate is not None:
        where, char = surrogate
        place = f"the string at {_label(where)}" if where else "the body"
        raise ParseError(
            f"JSON parse error - {place} holds an unpaired surrogate (\\u{ord(char):04x}): it is not Unicode text."
        )
    if nul:
        raise ValidationError({(_label(where) or "non_field_errors"): [NUL_MESSAGE] for where in nul})


def _label(path: Path) -> str:
    return ".".join(_shown(part) if isinstance(part, str) else str(part) for part in path)


def _shown(text: str) -> str:
    """``text`` itself, or escaped (``a\\u0000b``) when it holds what the answer must not carry either."""
    return json.dumps(text)[1:-1] if _bad(text) else text
