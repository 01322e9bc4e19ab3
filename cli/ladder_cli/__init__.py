"""`ladder`: Ladder's command line, on top of the generated SDK (ladder_sdk). docs/cli.md is its guide."""

__version__ = "1.0.0"
