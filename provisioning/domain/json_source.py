"""A JSON text parsed with the line of every value: ``parse_text`` gives the value and a ``SourceMap`` from each
value's JSON path (``("regions", 0, "code")``) to its line, with the keys that appear twice in one object (which
``json.loads`` resolves silently, the last one winning). The fleet document (``fleet_document.py``) names the line
of each of its problems with it. Pure Python (no Django).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]


def json_type(value: object) -> str:
    """What a parsed JSON value is, as a problem names it ("a string", "null", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


@dataclass(frozen=True)
class SourceMap:
    """The line of each value of a parsed file (for an object member: the line of its key), and the paths of
    keys that appear twice in one object."""

    lines: Mapping[Path, int]
    duplicate_keys: tuple[Path, ...] = ()

    def line_of(self, path: Path) -> int | None:
        """The line of ``path``, or of its nearest ancestor present in the file (a missing key: its object)."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return line
        return None


class JsonSyntaxError(ValueError):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line} column {column}: {message}")
        self.message = message
        self.line = line
        self.column = column


def parse_text(text: str) -> tuple[Any, SourceMap]:
    """Parse a JSON text; the value and where each part of it is. Raises ``JsonSyntaxError``."""
    try:
        # json.loads takes NaN and Infinity; the locator refuses them, naming where they are.
        return json.loads(text), _Locator(text).source()
    except json.JSONDecodeError as error:
        raise JsonSyntaxError(error.msg, error.lineno, error.colno) from None
    except RecursionError:
        raise JsonSyntaxError("nested too deeply", 1, 1) from None


class _Locator:
    """A second pass over text that ``json.loads`` accepted, recording the line where each value starts."""

    _WS = re.compile(r"[ \t\n\r]*")
    _STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
    _NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")

    def __init__(self, text: str) -> None:
        self.text = text
        self.newlines = [i for i, ch in enumerate(text) if ch == "\n"]
        self.lines: dict[Path, int] = {}
        self.duplicates: list[Path] = []

    def source(self) -> SourceMap:
        self.value(self.skip(0), ())
        return SourceMap(self.lines, tuple(self.duplicates))

    def line(self, pos: int) -> int:
        return bisect_left(self.newlines, pos) + 1

    def skip(self, pos: int) -> int:
        match = self._WS.match(self.text, pos)
        return match.end() if match else pos

    def value(self, pos: int, path: Path) -> int:
        """Record the value at ``pos`` (and everything inside it); the position after it."""
        self.lines.setdefault(path, self.line(pos))
        text = self.text
        char = text[pos]
        if char == "{":
            pos = self.skip(pos + 1)
            keys: set[str] = set()
            if text[pos] == "}":
                return pos + 1
            while True:
                key_line = self.line(pos)
                key, pos = self.string(pos)
                member = (*path, key)
                if key in keys:
                    self.duplicates.append(member)
                keys.add(key)
                self.lines[member] = key_line  # the key's line (the last of duplicates, as json.loads keeps it)
                pos = self.skip(self.skip(pos) + 1)  # past ':'
                pos = self.skip(self.value(pos, member))
                if text[pos] == "}":
                    return pos + 1
                pos = self.skip(pos + 1)  # past ','
        if char == "[":
            pos, index = self.skip(pos + 1), 0
            if text[pos] == "]":
                return pos + 1
            while True:
                pos = self.skip(self.value(pos, (*path, index)))
                index += 1
                if text[pos] == "]":
                    return pos + 1
                pos = self.skip(pos + 1)
        if char == '"':
            return self.string(pos)[1]
        for literal in ("true", "false", "null"):
            if text.startswith(literal, pos):
                return pos + len(literal)
        for constant in ("NaN", "Infinity", "-Infinity"):
            if text.startswith(constant, pos):
                raise self.error(f"{constant} is not valid JSON", pos)
        return self._match(self._NUMBER, pos).end()

    def error(self, message: str, pos: int) -> JsonSyntaxError:
        line = self.line(pos)
        start = self.newlines[line - 2] + 1 if line > 1 else 0
        return JsonSyntaxError(message, line, pos - start + 1)

    def string(self, pos: int) -> tuple[str, int]:
        match = self._match(self._STRING, pos)
        return json.loads(match.group()), match.end()

    def _match(self, pattern: re.Pattern[str], pos: int) -> re.Match[str]:
        match = pattern.match(self.text, pos)
        if match is None:  # json.loads accepted the text, so this cannot happen
            raise self.error("unexpected character", pos)
        return match
