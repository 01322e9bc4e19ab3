"""A group of subcommands whose bare name does its everyday read: ``ladder keys`` lists, as ``ladder keys list``
does, and takes ``--json`` the same way."""

from __future__ import annotations

from collections.abc import Callable

import typer

from ladder_cli import output


def group(summary: str, default: Callable[[bool], None]) -> typer.Typer:
    """A Typer sub-app described by ``summary`` that runs ``default(as_json)`` when no subcommand is named."""
    sub = typer.Typer(help=summary, rich_markup_mode=None, no_args_is_help=False, pretty_exceptions_enable=False)

    @sub.callback(invoke_without_command=True)
    def _bare(ctx: typer.Context, as_json: bool = output.JSON) -> None:
        if ctx.invoked_subcommand is None:
            default(as_json)

    return sub
