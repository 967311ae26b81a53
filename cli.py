"""Command line of the Jiu engine: ``python cli.py COMMAND ...`` (``--help`` on any command).

The CLI only parses, validates and calls one library function per command. Any bad input (position,
move, record, option) prints one ``error: ...`` line to stderr and exits with status 2.
Heavy modules are imported inside the commands so that ``legal`` starts fast.

The commands live in ``frontends/cli_*.py`` by concern and register on one Typer app
(``frontends.cli_base.app``) when imported here, in the order ``--help`` lists them.
"""

from __future__ import annotations

# The import order is the order of the commands in --help.
# isort: off
import frontends.cli_rules  # noqa: F401  legal, apply, perft, replay, convert, random-game
import frontends.cli_match  # noqa: F401  bench, agents, arena, tournament, experiment, play
import frontends.cli_train  # noqa: F401  selfplay, pretrain, gen-records, train-approxq, train-dqn
import frontends.cli_models  # noqa: F401  report, snapshot, population, exploitability, diagnose, export-net
import frontends.cli_serve  # noqa: F401  serve, engine, analyze
# isort: on
from frontends.cli_base import OneLineErrors, app, usage_error_line  # noqa: F401  the entry points tests use

if __name__ == "__main__":
    app()
