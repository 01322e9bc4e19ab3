"""What a command prints: tables for people, ``--json`` for scripts (stdout, the SDK's models as plain JSON),
and messages on stderr so that a script reading stdout sees data only."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import typer
from rich.console import Console
from rich.table import Table


def _width(stream: Any) -> int | None:
    """A terminal's own width (rich reads it); piped into a file or another program, no wrapping at 80 columns:
    a table's rows stay one line each, for grep and for people reading a log."""
    if os.environ.get("COLUMNS") or stream.isatty():
        return None
    return 4096


out = Console(soft_wrap=True, width=_width(sys.stdout))
err = Console(stderr=True, soft_wrap=True, width=_width(sys.stderr))

JSON = typer.Option(False, "--json", help="Print JSON for scripts instead of a table.")


def plain(value: Any) -> Any:
    """An SDK model (or a list of them) as the plain JSON the API answered."""
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(plain(value), indent=2, default=str) + "\n")


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], empty: str = "Nothing yet.") -> None:
    rows = list(rows)
    if not rows:
        err.print(empty)
        return
    grid = Table(show_edge=False, box=None, pad_edge=False, header_style="bold")
    for column in columns:
        grid.add_column(column, overflow="fold")
    for row in rows:
        grid.add_row(*("" if cell is None else str(cell) for cell in row))
    with out.capture() as captured:
        out.print(grid)
    out.file.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))  # no padding at the end


def fields(pairs: Sequence[tuple[str, Any]]) -> None:
    """A record, one ``label  value`` line each."""
    width = max(len(label) for label, _ in pairs)
    for label, value in pairs:
        out.print(f"[bold]{label.ljust(width)}[/bold]  {'' if value is None else value}", highlight=False)
