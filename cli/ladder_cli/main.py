"""The ``ladder`` app: every group of commands registered on one Typer app (``ladder --help`` lists them)."""

from __future__ import annotations

import sys

import typer

from ladder_cli import __version__
from ladder_cli.commands import account, billing, endpoints, keys, launch, offerings, volumes, workloads
from ladder_cli.errors import CliError

app = typer.Typer(
    name="ladder",
    help=(
        "Ladder from a terminal: buy GPU capacity, run work on it, reach it and pay for it.\n\n"
        "Start with `ladder login`, then `ladder offerings` and `ladder launch -f task.yaml`. "
        "Exit codes: 0 done, 1 refused by Ladder, 2 bad usage, 3 not signed in, 4 not found."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ladder {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    """Ladder from a terminal."""


for module in (account, offerings, launch, workloads, endpoints, billing, keys, volumes):
    module.register(app)


def main() -> None:
    """The ``ladder`` entry point: a CliError ends the command with its line on stderr and its exit code (usage
    errors are Typer's own, exit 2)."""
    try:
        app()
    except CliError as error:
        error.show()
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("ladder: interrupted\n")
        sys.exit(130)
