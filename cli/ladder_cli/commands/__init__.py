"""One module per group of commands; ``ladder_cli.main`` registers each module's commands on the app."""
