"""The command line's shared parts: the Typer app and its command group, one-line errors, and the
options and checks every command module uses (``frontends.cli_rules``, ``cli_match``, ``cli_train``,
``cli_models``, ``cli_serve`` register their commands on :data:`app` when imported; ``cli.py`` imports them all).

Any bad input (position, move, record, option) prints one ``error: ...`` line to stderr and exits with
status 2 (:func:`fail`, :func:`cli_errors`); Ctrl-C and SIGTERM print ``interrupted`` and exit with 130
(:class:`OneLineErrors`); a closed standard output (``>&-``) ends any command at once, quietly, with
status :data:`CLOSED_STDOUT_STATUS`.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

try:  # recent Typer vendors Click as typer._click; older Typer uses Click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - depends on the installed Typer
    from click import exceptions as click_errors
# Ctrl-C surfaces as Abort: Typer's own class where it vendors Click, Click's otherwise.
Abort = getattr(click_errors, "Abort", typer.Abort)


def usage_error_line(exc: click_errors.UsageError) -> str:
    """One line for a Click usage error (bad or missing parameter, unknown option or command), naming
    the command and the parameter: ``error: perft: Invalid value for 'DEPTH': ...``."""
    message = " ".join(exc.format_message().split())
    command = exc.ctx.command_path.split(" ", 1)[1] if exc.ctx is not None and " " in exc.ctx.command_path else ""
    if isinstance(exc, click_errors.NoSuchOption) and not exc.option_name.startswith("--"):
        message += " (an argument starting with '-', such as a JFEN, goes after '--')"
    return f"error: {command}: {message}" if command else f"error: {message}"


def writable(stream) -> bool:
    """Whether ``stream`` (``sys.stdout``, ``sys.stderr``) can be written: Python has no stream for a
    descriptor closed at start-up (``>&-``), or one on whatever file took the free descriptor number
    first (opened for reading: every write fails with EBADF)."""
    if stream is None:
        return False
    try:
        import fcntl

        return fcntl.fcntl(stream.fileno(), fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY
    except (ImportError, AttributeError, OSError, ValueError):  # not POSIX, or no descriptor (a test's buffer)
        return True


CLOSED_STDOUT_STATUS = 120  # a command started with standard output closed (Python's own status for an unflushable stdout)


class OneLineErrors(TyperGroup):
    """The command group: usage errors become one ``error: ...`` line on stderr with exit status 2
    instead of Typer's usage box, and Ctrl-C ends with ``interrupted`` and status 130, also when it
    arrived inside a C++ extension that wrapped it (``train.jobs.rundir.caused_by_interrupt``), and so
    does SIGTERM (``train.jobs.signals.sigterm_as_interrupt``). Started with standard output closed
    (``>&-``: Python then has no ``sys.stdout``), every command exits at once, quietly, with status
    :data:`CLOSED_STDOUT_STATUS`, before any work whose answer could not be written; with standard
    error closed, error lines are dropped and the exit status still tells."""

    def invoke(self, ctx):
        # Typer (0.29) turns a KeyboardInterrupt inside a command into a silent exit 130 before main
        # sees it, so the interrupt is reported here, where the command runs.
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            pass
        except Exception as exc:  # e.g. SystemError from PyTorch's pybind11 with the KeyboardInterrupt as cause
            from train.jobs.rundir import caused_by_interrupt

            if not caused_by_interrupt(exc):
                raise
        typer.echo("interrupted", err=True)
        raise typer.Exit(130)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        from train.jobs.signals import sigterm_as_interrupt

        if not writable(sys.stderr):  # started with `2>&-`: errors go nowhere, the status still tells
            sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
        if not writable(sys.stdout):  # started with `>&-`: no answer can be written, so no work is done
            rv = CLOSED_STDOUT_STATUS
            if not standalone_mode:
                return rv
            sys.exit(rv)
        try:
            with sigterm_as_interrupt():
                rv = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                                  **extra)
        except click_errors.UsageError as exc:
            typer.echo(usage_error_line(exc), err=True)
            rv = 2
        except (Abort, KeyboardInterrupt):  # outside a command (while parsing its arguments)
            typer.echo("interrupted", err=True)
            rv = 130
        except BrokenPipeError:  # the reader went away (`... --help | head`): stop quietly, as Unix tools do
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter flushes it at exit
            rv = 141
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(cls=OneLineErrors, add_completion=False, no_args_is_help=True, help="Command line of the Jiu engine: python cli.py COMMAND ... (--help on any command).")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks (print ratios measured in one run).")
app.add_typer(bench_app, name="bench")

MAX_WORKERS = 256  # every --workers (processes on one machine)
MAX_SEED = 2**32 - 1  # every --seed: NumPy's seed range (the random-game kernel seeds NumPy with it)
# core.board.STONES_PER_SIDE (a side's stones), written out: importing core would load the whole engine,
# Numba included, before every command (tests/test_cli.py holds the two equal).
STONES_MAX = 98
RuleOption = Annotated[
    Optional[list[str]],
    typer.Option("--rule", "-r", help="Ruleset option KEY=VALUE (repeatable), e.g. -r loss_below=14."),
]


def fail(message: str) -> None:
    """Print a one-line error and exit with status 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def check_games_in_flight(value: int) -> None:
    """``--games-in-flight`` in ``1..search.batched.GAMES_IN_FLIGHT_MAX``, else ``error:`` and exit 2."""
    from search.batched import GAMES_IN_FLIGHT_MAX

    if not 1 <= value <= GAMES_IN_FLIGHT_MAX:
        fail(f"--games-in-flight: must be in 1..{GAMES_IN_FLIGHT_MAX}, got {value}")


def cli_errors(fn):
    """Turn the engine's typed errors and unreadable files into ``fail`` (status 2, no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from core.errors import JiuError

        try:
            return fn(*args, **kwargs)
        except JiuError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"{exc.filename}: {exc.strerror or exc}" if exc.filename else str(exc))

    return wrapper


def ruleset_from(options: list[str] | None):
    """A ``Ruleset`` from ``-r KEY=VALUE`` strings (``Ruleset.from_options``)."""
    from core.rules import Ruleset

    return Ruleset.from_options(options or [])


def jfen_lines(fen: str | None, fen_file: Path | None, source: str | None):
    if sum(x is not None for x in (fen, fen_file, source)) != 1:
        fail("give exactly one of --fen JFEN, --fen-file FILE, or - (standard input)")
    if fen is not None:
        yield 1, fen
        return
    if source is not None and source != "-":
        fail(f"positional argument {source!r}: only '-' (standard input) is accepted; use --fen or --fen-file")
    from core.inputs import iter_lines

    stream = sys.stdin.buffer if source == "-" else open(fen_file, "rb")
    with stream:
        for n, line in iter_lines(stream, "standard input" if source == "-" else str(fen_file)):
            if line.strip():
                yield n, line


DriftEndsOption = Annotated[Optional[str], typer.Option(help="The --value-drift target of a position whose game ends "
                                                        "within K plies: 'result' (the game's result) or 'drop' "
                                                        "(no target); default: 'result' (train.learning.supervised.DriftTarget).")]


def drift_target(value_drift: int, value_eval: str | None, drift_ends: str | None, model: str,
                 value_eval_target: int | None = None, result_stones: int = 0, result_from: int = 0):
    """``--value-drift K`` (or ``--value-eval-target K``: ``mode = "value"``), ``--value-eval``,
    ``--drift-ends`` and ``--value-result-stones S`` / ``--value-result-from F`` (the result alone where the
    side with fewer stones has F..S) as a checked ``train.learning.drift.DriftTarget`` for a ``model`` net,
    ``None`` for neither target (the result); a one-line error naming the options otherwise."""
    if value_eval_target is not None and value_drift:
        fail("--value-eval-target: not with --value-drift (one value target)")
    if not value_drift and value_eval_target is None:
        if result_stones or result_from:
            fail("--value-result-stones/--value-result-from: they narrow an evaluator's target; give --value-drift "
                 "or --value-eval-target")
        return None
    from train.learning.drift import DriftTarget

    options = {k: v for k, v in (("evaluator", value_eval), ("ends", drift_ends)) if v is not None}
    flag = "--value-eval-target" if value_eval_target is not None else "--value-drift"
    try:
        if value_eval_target is not None:
            drift = DriftTarget(value_eval_target, mode="value", result_stones=result_stones, result_from=result_from,
                                **options)
        else:  # DriftTarget's defaults for what is not given
            drift = DriftTarget(value_drift, result_stones=result_stones, result_from=result_from, **options)
        drift.check(model)
    except ValueError as exc:
        band = "/--value-result-stones/--value-result-from" if result_stones or result_from else ""
        fail(f"{flag}/--value-eval/--drift-ends{band}: {exc}")
    return drift


ResultStonesOption = Annotated[int, typer.Option(min=0, max=STONES_MAX, help="Upper net: the value target is the result "
                                                 "alone where the side with fewer stones has from "
                                                 "--value-result-from to this many (0: nowhere; as "
                                                 "selfplay.value_result_stones).")]
ResultFromOption = Annotated[int, typer.Option(min=0, max=STONES_MAX, help="The fewest stones of --value-result-stones' "
                                               "band (as selfplay.value_result_from).")]


ImportOption = Annotated[
    Optional[list[str]],
    typer.Option("--import", help="Import MODULE first (repeatable); it may register extra agents."),
]


def agent_errors(fn):
    """``cli_errors`` plus unknown agent names (``KeyError`` from the registry) as status 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KeyError as exc:
            fail(exc.args[0] if exc.args else str(exc))
        except ModuleNotFoundError as exc:
            fail(f"cannot import module {exc.name!r} ({exc})")

    return cli_errors(wrapper)


AGENT_HELP = "Agent spec NAME[:key=value,...] or LAYOUT+BATTLE, e.g. greedy, minimax:depth=2, slm+expert (options: python cli.py agents)."


def train_errors(fn):
    """``agent_errors`` plus ``ValueError`` (bad values) as status 2 (Ctrl-C is the group's:
    :meth:`OneLineErrors.invoke`)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError as exc:
            fail(str(exc))

    return agent_errors(wrapper)
