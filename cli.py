"""Command line of the Jiu engine: ``python cli.py COMMAND ...`` (``--help`` on any command).

The CLI only parses, validates and calls one library function per command. Any bad input (position,
move, record, option) prints one ``error: ...`` line to stderr and exits with status 2.
Heavy modules are imported inside the commands so that ``legal`` starts fast.
"""

from __future__ import annotations

import contextlib
import functools
import json
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


class OneLineErrors(TyperGroup):
    """The command group: usage errors become one ``error: ...`` line on stderr with exit status 2
    instead of Typer's usage box, and Ctrl-C ends with ``interrupted`` and status 130, also when it
    arrived inside a C++ extension that wrapped it (``train.rundir.caused_by_interrupt``), and so
    does SIGTERM (``train.signals.sigterm_as_interrupt``)."""

    def invoke(self, ctx):
        # Typer (0.29) turns a KeyboardInterrupt inside a command into a silent exit 130 before main
        # sees it, so the interrupt is reported here, where the command runs.
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            pass
        except Exception as exc:  # e.g. SystemError from PyTorch's pybind11 with the KeyboardInterrupt as cause
            from train.rundir import caused_by_interrupt

            if not caused_by_interrupt(exc):
                raise
        typer.echo("interrupted", err=True)
        raise typer.Exit(130)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        from train.signals import sigterm_as_interrupt

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


app = typer.Typer(cls=OneLineErrors, add_completion=False, no_args_is_help=True, help=__doc__.split("\n")[0])
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks (print ratios measured in one run).")
app.add_typer(bench_app, name="bench")

MAX_WORKERS = 256  # every --workers (processes on one machine)
MAX_SEED = 2**32 - 1  # every --seed: NumPy's seed range (the random-game kernel seeds NumPy with it)
RuleOption = Annotated[
    Optional[list[str]],
    typer.Option("--rule", "-r", help="Ruleset option KEY=VALUE (repeatable), e.g. -r loss_below=14."),
]


def fail(message: str) -> None:
    """Print a one-line error and exit with status 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


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


def _jfen_lines(fen: str | None, fen_file: Path | None, source: str | None):
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


@app.command()
@cli_errors
def legal(
    source: Annotated[Optional[str], typer.Argument(help="'-' to read JFEN lines from standard input.")] = None,
    fen: Annotated[Optional[str], typer.Option(help="One JFEN position.")] = None,
    fen_file: Annotated[Optional[Path], typer.Option(help="A file with one JFEN per line.")] = None,
    paths: Annotated[bool, typer.Option("--paths", help="List paths with their square counts instead of moves.")] = False,
    rule: RuleOption = None,
):
    """Legal moves of each position, one JSON line each: {"fen", "terminal", "winner", "moves"|"paths"}."""
    from core.errors import InvalidPositionError
    from core.state import GameState

    ruleset = ruleset_from(rule)
    out = sys.stdout
    for n, line in _jfen_lines(fen, fen_file, source):
        text = line.strip()
        try:
            state = GameState.from_jfen(text, ruleset)
        except InvalidPositionError as exc:
            if fen is not None:
                raise
            raise InvalidPositionError(f"line {n}: {exc}") from None
        outcome = state.outcome()
        row = {"fen": text, "terminal": outcome.terminal, "winner": outcome.winner_code}
        if paths:
            row["paths"] = [[p, k] for p, k in state.legal_paths().items()]
        else:
            row["moves"] = [str(m) for m in state.legal_moves()]
        out.write(json.dumps(row, separators=(",", ":")) + "\n")


@app.command()
@cli_errors
def apply(
    fen: Annotated[str, typer.Argument(help="The position (JFEN).")],
    moves: Annotated[list[str], typer.Argument(help="Moves in the project's notation, applied in order.")],
    rule: RuleOption = None,
):
    """Print the JFEN after playing MOVES from FEN."""
    from core.errors import JiuError
    from core.state import GameState

    state = GameState.from_jfen(fen, ruleset_from(rule))
    for i, move in enumerate(moves, 1):
        try:
            state = state.apply(move)
        except JiuError as exc:
            raise type(exc)(f"move {i}: {exc}") from None
    typer.echo(state.to_jfen())


@app.command()
@cli_errors
def perft(
    fen: Annotated[str, typer.Argument(help="The position (JFEN).")],
    depth: Annotated[int, typer.Argument(min=0, help="Plies.")],
    divide: Annotated[bool, typer.Option("--divide", help="Print the count below each move.")] = False,
    rule: RuleOption = None,
):
    """Count the leaves of the full-move tree (each victim set is a move)."""
    from core.perft import perft as count, perft_divide
    from core.state import GameState

    state = GameState.from_jfen(fen, ruleset_from(rule))
    if divide and depth >= 1:
        split = perft_divide(state, depth)
        for move, n in split.items():
            typer.echo(f"{move}: {n}")
        typer.echo(f"total: {sum(split.values())}")
    else:
        typer.echo(count(state, depth))


@app.command()
@cli_errors
def replay(
    file: Annotated[Path, typer.Argument(exists=False, help="A game record (.json, .jiu/.txt, .csv).")],
    format: Annotated[Optional[str], typer.Option("--format", help="json, jiu or csv (default: from the file).")] = None,
    rule: RuleOption = None,
):
    """Replay a record, validating every move; print one JSON summary line per game. A record's own
    ruleset (JSON; JIU with a ruleset field) is used; -r gives the rules of records without one (CSV,
    plain JIU) and must agree with a record's own."""
    from core.records import read_record

    for record in read_record(file, format, ruleset_from(rule), check_ruleset=bool(rule)):
        states = record.replay()
        final = states[-1]
        outcome = final.outcome()
        typer.echo(json.dumps({
            "moves": len(record.moves),
            "result": record.result,
            "reason": record.reason,
            "final_fen": final.to_jfen(),
            "terminal": outcome.terminal,
            "engine_result": outcome.winner_code,
        }))


@app.command()
@cli_errors
def convert(
    source: Annotated[Path, typer.Argument(help="Input record (.json, .jiu/.txt, .csv).")],
    target: Annotated[Path, typer.Argument(help="Output record (.json or .jiu); written atomically.")],
    from_format: Annotated[Optional[str], typer.Option("--from", help="Input format (default: from the name).")] = None,
    to_format: Annotated[Optional[str], typer.Option("--to", help="Output format (default: from the name).")] = None,
    rule: RuleOption = None,
):
    """Convert a game record between formats (validating every move). A CSV with several games
    writes TARGET with the game number inserted before the extension. The ruleset goes along (JSON
    and JIU both carry it; CSV, which cannot, is import only); -r gives the rules of a source that
    carries none and must agree with a source's own."""
    from core.records import read_record, write_record

    records = read_record(source, from_format, ruleset_from(rule), check_ruleset=bool(rule))
    for i, record in enumerate(records, 1):
        record.replay()
        out = target if len(records) == 1 else target.with_name(f"{target.stem}-{i}{target.suffix}")
        write_record(record, out, to_format)
        typer.echo(str(out))


@app.command("random-game")
@cli_errors
def random_game(
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Random seed (same seed, same game).")] = 0,
    record: Annotated[Optional[Path], typer.Option(help="Also write the JSON record to this file.")] = None,
    rule: RuleOption = None,
):
    """Play one uniformly random game (uniform path, then uniform victim set) and print its JSON record."""
    from datetime import datetime, timezone

    from core.playout import random_game_moves
    from core.records import GameRecord, record_to_json, write_json

    ruleset = ruleset_from(rule)
    moves, _, _ = random_game_moves(seed, ruleset.vector)
    game = GameRecord.from_moves(moves, ruleset, white="random", black="random",
                                 start_time=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                 metadata={"seed": seed, "generator": "core.playout.random_game"})
    if record is not None:
        write_json(game, record)
    typer.echo(record_to_json(game))


@bench_app.command("search")
@cli_errors
def bench_search(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    simulations: Annotated[str, typer.Option(help="Comma-separated simulation counts.")] = "400,800,1600",
    threads: Annotated[str, typer.Option(help="Comma-separated WU-UCT thread counts.")] = "1,2,4,8,16",
    torch_threads: Annotated[int, typer.Option(min=1, help="Torch intra-op threads of the WU-UCT evaluators and the "
                                               "net-only figures (serial: 1); 2 only on an otherwise idle machine.")] = 1,
    inference_threads: Annotated[int, typer.Option(min=1, help="Threads serving the WU-UCT evaluators (net-only: as many "
                                                   "concurrent callers); 1 keeps the net on one core.")] = 2,
):
    """Serial MCTS vs WU-UCT (1/2/4/8/16 threads) on layout and battle positions with the tiny nets (JFA Table 3)."""
    from bench.search import run_search_benchmark

    def ints(text: str, what: str) -> tuple[int, ...]:
        try:
            values = tuple(int(x) for x in text.split(",") if x.strip())
        except ValueError:
            fail(f"--{what} {text!r}: expected comma-separated integers")
        if not values or min(values) < 1:
            fail(f"--{what} {text!r}: expected positive integers")
        return values

    result = run_search_benchmark(ints(simulations, "simulations"), ints(threads, "threads"), progress=not json_out,
                                  torch_threads=torch_threads, inference_threads=inference_threads)
    if json_out:
        typer.echo(json.dumps(result, default=float))


@bench_app.command("rules")
@cli_errors
def bench_rules(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    seconds: Annotated[float, typer.Option(min=0.2, help="Time budget per measurement (seconds).")] = 3.0,
):
    """Numba engine vs the pure-Python reference: move generations/s, random games/s, 2-thread speed-up."""
    from bench.rules import run_rules_benchmark

    result = run_rules_benchmark(seconds=seconds, progress=not json_out)
    if json_out:
        typer.echo(json.dumps(result))



# ----------------------------------------------------------------------------- matches (train/)
ImportOption = Annotated[
    Optional[list[str]],
    typer.Option("--import", help="Import MODULE first (repeatable); it may register extra agents."),
]


def _agent_errors(fn):
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


@app.command()
@_agent_errors
def agents(
    name: Annotated[Optional[str], typer.Argument(help="One agent (default: all).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the catalogue as one JSON list.")] = False,
    imports: ImportOption = None,
):
    """List the agents and their options (type, range, default): what agent specs NAME:key=value,... accept."""
    import catalog

    catalog.import_plugins(imports or ())
    entries = catalog.agent_catalogue(name)
    if json_out:
        typer.echo(json.dumps(entries))
        return
    for entry in entries:
        typer.echo(f"{entry['name']}: {entry['summary']}")
        for row in entry["options"]:
            kind = f"{row['type']} {row['range']}".strip()
            typer.echo(f"  {row['name']:<17} {kind:<28} default {row['default']:<8} {row['description']}")
    if name is None:
        typer.echo("Specs: NAME[:key=value,...], e.g. mcts:sims=400,threads=2; LAYOUT+BATTLE plays the two phases "
                   "with two agents (slm+expert).")


@app.command()
@_agent_errors
def arena(
    agent_a: Annotated[str, typer.Argument(metavar="A", help=AGENT_HELP)],
    agent_b: Annotated[str, typer.Argument(metavar="B", help="Agent spec of the opponent.")],
    games: Annotated[int, typer.Option("--games", "-n", help="Games (even: pairs with colours swapped).")] = 20,
    workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS, help="Worker processes (0: play in this process).")] = 1,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED,
                                      help="Base seed; pair k's game seed derives from (seed, k).")] = 0,
    out: Annotated[
        Optional[Path], typer.Option(help="Run directory (resumed if it exists). Default: runs/arena/A__vs__B.")
    ] = None,
    sprt: Annotated[Optional[str], typer.Option(metavar="ELO0,ELO1", help="Stop as soon as the pentanomial SPRT of A against B decides (e.g. 0,40); -n is the cap.")] = None,
    alpha: Annotated[float, typer.Option(min=0.0001, max=0.5, help="SPRT false-positive rate.")] = 0.05,
    beta: Annotated[float, typer.Option(min=0.0001, max=0.5, help="SPRT false-negative rate.")] = 0.05,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
    imports: ImportOption = None,
    rule: RuleOption = None,
):
    """Colour-balanced match A vs B: win rate with SE and 95% CI, Elo, decision times; resumable;
    with --sprt it stops when the test decides."""
    from rich.console import Console

    from train.arena import run_arena, summary_table
    from train.tournament import pair_dir_name

    bounds = None
    if sprt is not None:
        parts = sprt.split(",")
        try:
            elo0, elo1 = (float(x) for x in parts)
        except ValueError:
            fail(f"--sprt {sprt!r}: expected ELO0,ELO1 (two numbers, e.g. 0,40)")
        if not (abs(elo0) <= 1000 and abs(elo1) <= 1000 and elo1 > elo0):
            fail(f"--sprt {sprt!r}: expected -1000 <= ELO0 < ELO1 <= 1000")
        bounds = (elo0, elo1, alpha, beta)
    ruleset = ruleset_from(rule)
    out_dir = out if out is not None else Path("runs") / "arena" / pair_dir_name(agent_a, agent_b)
    summary = run_arena(agent_a, agent_b, games, workers=workers, seed=seed, out_dir=out_dir, ruleset=ruleset,
                        progress=not json_out, imports=imports or (), sprt=bounds)
    if json_out:
        typer.echo(json.dumps({**summary.data, "out_dir": str(out_dir)}))
    else:
        Console().print(summary_table(summary.data))
        test = summary.data.get("sprt")
        if test is not None:
            verdict = {"H1": f"H1 (A is {test['elo1']:g} Elo better)", "H0": f"H0 (A is not {test['elo0']:g} Elo better)"}
            typer.echo(f"SPRT [{test['elo0']:g}, {test['elo1']:g}] alpha {test['alpha']:g} beta {test['beta']:g}: "
                       f"LLR {test['llr']:+.2f} in [{test['lower']:.2f}, {test['upper']:.2f}] after "
                       f"{summary.games} games: {verdict.get(test['decision'], 'undecided')}")
        typer.echo(f"records and summary.json in {out_dir}")


@app.command()
@_agent_errors
def tournament(
    agents: Annotated[list[str], typer.Argument(metavar="AGENT...", help="At least two agent specs. " + AGENT_HELP)],
    games: Annotated[int, typer.Option("--games", "-n", help="Games per pair (even).")] = 20,
    workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS, help="Worker processes shared by all pairs (0: in this process).")] = 1,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Base seed of every pair.")] = 0,
    out: Annotated[Path, typer.Option(help="Run directory (resumed if it exists).")] = Path("runs/tournament"),
    anchor: Annotated[Optional[str], typer.Option(help="Agent held at Elo 0 (default: mean 0).")] = None,
    versus: Annotated[Optional[list[str]], typer.Option(
        "--versus", help="An agent of a second population (repeatable): adds the relative population performance "
                         "(RPP) of AGENT... against these.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    imports: ImportOption = None,
    rule: RuleOption = None,
):
    """Round robin: an arena per pair; win rates by colour with decision latency, payoff matrix, Bradley-Terry
    Elo with 95% CIs, maximum-entropy Nash weights and gamescape (JSON, Markdown, PNG); RPP with --versus."""
    from rich.console import Console

    from train.tournament import RESULT_FILE, TABLE_FILE, rich_tables, run_tournament

    result = run_tournament(agents, games, workers=workers, seed=seed, out_dir=out, ruleset=ruleset_from(rule),
                            progress=not json_out, imports=imports or (), anchor=anchor, versus=versus or ())
    if json_out:
        typer.echo(json.dumps(result.data))
    else:
        console = Console()
        for table in rich_tables(result.data):
            console.print(table)
        typer.echo(f"wrote {out / RESULT_FILE}, {out / TABLE_FILE}, {out / 'payoff.png'} and {out / 'gamescape.png'}")


@app.command()
@_agent_errors
def experiment(
    name: Annotated[Optional[str], typer.Argument(metavar="NAME", help="A built-in experiment (see --list).")] = None,
    spec: Annotated[Optional[Path], typer.Option("--spec", help="Your own experiment spec file (.toml or .json) instead of NAME.")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the built-in experiments and exit.")] = False,
    games: Annotated[Optional[int], typer.Option("--games", "-n", help="Games per match row, or self-play runs per squares row (even; default: the spec's).")] = None,
    workers: Annotated[int, typer.Option(min=0, help="Worker processes shared by all rows (0: in this process).")] = 1,
    seed: Annotated[int, typer.Option(help="Base seed of every row.")] = 0,
    out: Annotated[Optional[Path], typer.Option(help="Run directory (default runs/experiments/NAME).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --out (finished games and rows are kept).")] = False,
    param: Annotated[Optional[list[str]], typer.Option("--param", "-p", help="Spec parameter NAME=VALUE (repeatable), e.g. -p hbm_sims=8.")] = None,
    rows: Annotated[Optional[str], typer.Option(help="Comma-separated row ids to run (default: all).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print result.json as one JSON object.")] = False,
):
    """Run one of the papers' experiments (JFA Tables 3-5, Figs. 5-6) or your own spec: result.json, table.md, PNGs."""
    import shlex

    from train.experiment import TABLE_FILE, list_experiments, load_spec, parse_params, run_experiment

    if list_:
        for e in list_experiments():
            params = " ".join(f"{k}={v}" for k, v in e["params"].items())
            typer.echo(f"{e['name']:<8} {e['kind']:<14} {e['title']}")
            typer.echo(f"         rows: {', '.join(e['rows'])}")
            if params:
                typer.echo(f"         params: {params}")
            for problem in e["problems"]:
                typer.echo(f"         not runnable yet: {problem}")
        return
    if (name is None) == (spec is None):
        fail("give an experiment NAME or --spec FILE (python cli.py experiment --list shows the built-ins)")
    exp = load_spec(spec if spec is not None else name)
    timer = None
    if exp.kind == "decision-time":
        from bench.search import measure_decision_time as timer
    command = "python cli.py experiment " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    result = run_experiment(exp, out, games=games, workers=workers, seed=seed, params=parse_params(param),
                            rows=[r.strip() for r in rows.split(",") if r.strip()] if rows else None,
                            resume=resume, progress=not json_out, timer=timer, command=command)
    out_dir = out if out is not None else Path("runs") / "experiments" / exp.name
    if json_out:
        typer.echo(json.dumps({**result, "out_dir": str(out_dir)}))
    else:
        typer.echo((out_dir / TABLE_FILE).read_text(encoding="utf-8"))
        typer.echo(f"wrote {out_dir / 'result.json'}, {out_dir / TABLE_FILE}" +
                   "".join(f", {p}" for p in result["plots"]))


@app.command()
@_agent_errors
def play(
    agent: Annotated[str, typer.Option(help="The opponent's agent spec (default: the shipped JFA model). " + AGENT_HELP)] = "jfa",
    human: Annotated[str, typer.Option(help="Your colour: w (White, places first) or b.")] = "w",
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="The agent's seed.")] = 0,
    record: Annotated[Optional[Path], typer.Option(help="Write the JSON record here at the end or on quit.")] = None,
    imports: ImportOption = None,
    rule: RuleOption = None,
):
    """Play against an agent in the terminal (type moves in notation; moves, undo, save [FILE], quit)."""
    import catalog
    from train.arena import check_agent_spec
    from train.play import play as play_game

    catalog.import_plugins(imports or ())
    ruleset = ruleset_from(rule)
    if human not in ("w", "b"):
        fail(f"--human {human!r}: expected w or b")
    check_agent_spec(agent, "--agent")
    try:
        play_game(agent, human, seed, ruleset, record)
    except KeyboardInterrupt:
        typer.echo("interrupted" + (f"; record written to {record}" if record is not None else ""), err=True)
        raise typer.Exit(130) from None


# ----------------------------------------------------------------------------- training (train/)
SetOption = Annotated[
    Optional[list[str]],
    typer.Option("--set", help="Config override SECTION.KEY=VALUE (repeatable), e.g. --set selfplay.games=8."),
]
DriftEndsOption = Annotated[Optional[str], typer.Option(help="The --value-drift target of a position whose game ends "
                                                        "within K plies: 'result' (the game's result) or 'drop' "
                                                        "(no target); default: the search net's (NET_DRIFT_ENDS).")]


def _train_errors(fn):
    """``_agent_errors`` plus ``ValueError`` (bad values) as status 2 (Ctrl-C is the group's:
    :meth:`OneLineErrors.invoke`)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError as exc:
            fail(str(exc))

    return _agent_errors(wrapper)


def _drift_target(value_drift: int, value_eval: str | None, drift_ends: str | None, model: str):
    """``--value-drift K``, ``--value-eval`` and ``--drift-ends`` as a checked
    ``train.supervised.DriftTarget`` for a ``model`` net, ``None`` for ``K = 0``; a one-line error naming
    the options otherwise."""
    if not value_drift:
        return None
    from train.supervised import DriftTarget

    options = {k: v for k, v in (("evaluator", value_eval), ("ends", drift_ends)) if v is not None}
    drift = DriftTarget(value_drift, **options)  # DriftTarget's defaults for what is not given
    try:
        drift.check(model)
    except ValueError as exc:
        fail(f"--value-drift/--value-eval/--drift-ends: {exc}")
    return drift


def _rule_overrides(rule: list[str] | None) -> list[str]:
    out = []
    for item in rule or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"--rule {item!r}: expected KEY=VALUE")
        out.append(f"ruleset.{key.strip().replace('-', '_')}={value.strip()}")
    return out


@app.command()
@_train_errors
def selfplay(
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="Config file (.toml or .json); default: the model directory's config.toml (with --from-scratch: the built-in defaults = configs/default.toml).")] = None,
    overrides: SetOption = None,
    model: Annotated[Optional[str], typer.Option(help="Net to train: slm, upper, lower or cycle (default: the config's model; models/default/config.toml says upper, the built-in defaults slm).")] = None,
    iterations: Annotated[Optional[int], typer.Option(help="Total iterations of the run (default: the config's iterations, 2 in models/default/config.toml and the built-in defaults).")] = None,
    minutes: Annotated[Optional[float], typer.Option(help="Wall-clock budget of this invocation, in minutes.")] = None,
    workers: Annotated[Optional[int], typer.Option(help="Worker processes (0: everything in this process; default: the config's workers, 2).")] = None,
    seed: Annotated[Optional[int], typer.Option(min=0, max=MAX_SEED, help="Run seed (default: the config's seed).")] = None,
    backend: Annotated[Optional[str], typer.Option(help="Self-play backend: process (default) or ray.")] = None,
    reward: Annotated[Optional[str], typer.Option(help="SLM reward plugin (default reward.first_square; or reward.outcome, or reward.shape for the shape agent).")] = None,
    run_dir: Annotated[Optional[Path], typer.Option("--run-dir", help="Directory of a new run (default runs/selfplay-<time>).")] = None,
    resume: Annotated[Optional[Path], typer.Option(help="Continue the run in this directory where it stopped (across days).")] = None,
    from_scratch: Annotated[bool, typer.Option("--from-scratch", help="Run the whole pipeline from records (pretraining) instead of continuing from the model directory.")] = False,
    model_dir: Annotated[Path, typer.Option("--model-dir", help="The model directory a new run continues from (its nets and config.toml).")] = Path("models/default"),
    export: Annotated[Optional[Path], typer.Option("--export", help="After the run, play its best nets against this model directory's (the export gate: an SPRT of up to gate.export_games games) and, if they pass, write them there with config.toml and the model card's lineage; exit status 1 if they do not. With --resume and neither --iterations nor --minutes the run is not continued: only the export.")] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No live display and no progress lines.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the final state as one JSON object.")] = False,
    rule: RuleOption = None,
):
    """Self-play training of SLM / HBM upper / HBM lower (JFA): self-play, training, SPRT gate, learning curve; resumable.

    Without arguments a new run continues from models/default (its nets and its config.toml); --from-scratch
    pretrains on expert records first (pretrain.* fields). Each iteration plays self-play games with the best
    net, trains the latest net on the replay window, gates it against the best net with an SPRT and measures
    the best net's Elo against the anchor pool (curve.* fields). A terminal gets a live panel; a log gets a
    line per phase and at least one a minute. Prints the run directory."""
    import shlex

    from train.config import apply_overrides, config_to_dict, read_config_file, validate_config
    from train.pipeline import default_run_dir, load_run_config, run_pipeline

    typed = {"model": model, "iterations": iterations, "minutes": minutes, "workers": workers, "seed": seed,
             "backend": backend, "selfplay.reward": reward}
    typed = {k: v for k, v in typed.items() if v is not None}
    sets = [*(overrides or []), *_rule_overrides(rule)]
    if resume is not None:
        if run_dir is not None:
            fail("give either --resume RUN_DIR or --run-dir DIR, not both")
        if config is not None:
            fail("--config cannot be combined with --resume (the run keeps its config.json)")
        if from_scratch:
            fail("--from-scratch cannot be combined with --resume (the run keeps how it started)")
        base = config_to_dict(load_run_config(resume))
        cfg = validate_config(apply_overrides(apply_overrides(base, sets), typed))
        target, is_resume = resume, True
    else:
        from train.modeldir import read_model_config

        source = str(config) if config else "config"
        if config is not None:
            data = read_config_file(config)
        elif not from_scratch and (model_dir / "config.toml").exists():
            data, source = read_model_config(model_dir), str(model_dir / "config.toml")
        else:
            data = {}
        if not from_scratch:
            if not any((model_dir / f"{k}.safetensors").exists() for k in ("slm", "upper", "lower")):
                fail(f"--model-dir {model_dir}: no nets (slm/upper/lower.safetensors) to continue from; "
                     "use --from-scratch")
            data = {**data, "init_dir": str(model_dir)}
        cfg = validate_config(apply_overrides(apply_overrides(data, sets), typed), source)
        target, is_resume = (run_dir if run_dir is not None else default_run_dir()), False
    typer.echo(f"run directory: {target}", err=True)
    progress = "off" if no_progress or json_out else "auto"
    if is_resume and export is not None and iterations is None and minutes is None:
        from train.rundir import RunPaths, read_state  # export only: the run is not continued

        result = {"reason": "export only", "session_seconds": 0.0,
                  "state": read_state(RunPaths(target)).model_dump(mode="json")}
    else:
        result = run_pipeline(cfg, target, resume=is_resume, progress=progress)
    state = result["state"]
    exported, gate_rows = None, None
    if export is not None:
        from train.modeldir import export_gate, export_gate_text, export_run

        gate_rows = export_gate(target, export, progress=progress == "auto", config=cfg)
        for r in gate_rows:
            typer.echo(f"export gate {r['kind']} (iteration {r['iteration']}) vs {r['against']}: "
                       f"{export_gate_text(r)}", err=True)
        if all(r["passed"] for r in gate_rows):
            exported = [str(p) for p in export_run(target, export, "python cli.py " + shlex.join(sys.argv[1:]),
                                                   export_gate=gate_rows)]
    if json_out:
        typer.echo(json.dumps({"run_dir": str(target), "reason": result["reason"],
                               "session_seconds": round(result["session_seconds"], 3), "state": state,
                               "exported": exported, "export_gate": gate_rows}))
    else:
        typer.echo(f"stopped ({result['reason']}) after {state.get('completed_iterations', 0)} completed iteration(s) in "
                   f"{result['session_seconds']:.0f} s; next: iteration {state['iteration']} phase {state['phase']}")
        if exported:
            typer.echo(f"exported the best nets, config.toml and the model card lineage into {export}")
        elif export is not None:
            typer.echo(f"not exported: the run's best net did not pass the export gate against {export}'s")
        typer.echo(f"run directory: {target}  (best nets in {Path(target) / 'best'}; "
                   f"plots: python cli.py report {target}; continue: python cli.py selfplay --resume {target} --iterations N;"
                   f" export: python cli.py selfplay --resume {target} --export models/default)")
    if export is not None and not exported:
        raise typer.Exit(1)


@app.command()
@_train_errors
def pretrain(
    records: Annotated[Optional[list[Path]], typer.Argument(metavar="[RECORDS...]", help="Record files or directories (.json, .jiu/.txt, .csv).")] = None,
    model: Annotated[str, typer.Option(help="Net to train: slm, upper or lower.")] = "slm",
    shards: Annotated[Optional[list[Path]], typer.Option(help="Also train on the --model samples of these sample shards (.npz files, directories such as a run's RUN/shards/lower, or glob patterns; repeatable): a run's replay with its own targets.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Output net file (default models/pretrained/<model>.safetensors).")] = None,
    steps: Annotated[int, typer.Option(min=0, max=10**8, help="Training steps.")] = 200,
    batch_size: Annotated[int, typer.Option(min=1, max=65536, help="Batch size.")] = 64,
    lr: Annotated[float, typer.Option(min=0.0, help="Learning rate (constant).")] = 1e-3,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the initial weights and the batches.")] = 0,
    init: Annotated[Optional[Path], typer.Option(help="Continue training this net file instead of a fresh net.")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="Config file for nets/learner/replay settings.")] = None,
    overrides: SetOption = None,
    teacher: Annotated[Optional[str], typer.Option(help="Battle prior plugin spec blended into the upper net's policy target (distillation), e.g. prior.expert:temperature=10.")] = None,
    teacher_mix: Annotated[float, typer.Option(min=0.0, max=1.0, help="Weight of --teacher in the policy target (the played move has the rest).")] = 0.5,
    workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS, help="Processes converting records to samples (0: in this process).")] = 0,
    samples_cache: Annotated[Optional[Path], typer.Option(help="Directory of per-record sample shards, reused when present (resumable conversion).")] = None,
    value_drift: Annotated[int, typer.Option(min=0, max=1000, help="Upper net: value target = the drift of --value-eval's margin over this many plies of the record (even; 0: the result).")] = 0,
    value_eval: Annotated[Optional[str], typer.Option(help="Evaluator (with a margin) of the --value-drift target "
                                                      "(default: the search's battle leaf value).")] = None,
    drift_ends: DriftEndsOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
    rule: RuleOption = None,
):
    """Supervised pretraining on records: policy target = the played move (one-hot, blended with a
    --teacher prior if given), value target = the result, or with --value-drift K the change of the
    expert's two-ply value over the next K plies (with --set learner.trainable=value only the value
    head learns)."""
    from train.config import KINDS, check_trainable, load_config
    from train.supervised import check_teacher, pretrain as run_pretrain, read_records, samples_from_records

    if model not in KINDS:
        fail(f"--model {model!r}: expected one of {', '.join(KINDS)}")
    check_teacher(model, teacher)
    drift = _drift_target(value_drift, value_eval, drift_ends, model)
    if init is not None:  # a bad --init fails before the samples are built
        from nets.io import load

        load(init, expected_kind=model)
    cfg = load_config(config, overrides or [])
    check_trainable(model, cfg.learner.trainable)
    ruleset = ruleset_from(rule)
    if not records and not shards:
        fail("nothing to train on: give RECORDS or --shards")
    parts = []
    if shards:
        from train.samples import read_shards

        parts.append(read_shards(shards, (model,))[model])
    games = read_records(records, ruleset) if records else []
    if records and not games:
        fail("no records found in " + ", ".join(str(r) for r in records))
    from train.arena import new_progress
    from train.samples import concat

    progress = None if json_out else new_progress(transient=True)
    with progress if progress is not None else contextlib.nullcontext():
        if games:
            update = None
            if progress is not None:
                task = progress.add_task(f"{model} samples", total=len(games), score="")
                update = lambda n: progress.update(task, completed=n)  # noqa: E731
            parts.insert(0, samples_from_records(games, model, update, teacher=teacher, teacher_mix=teacher_mix,
                                                 workers=workers, cache_dir=samples_cache, drift=drift))
        samples = concat(parts, model)
        if len(samples) == 0:
            fail(f"the {len(games)} record(s) and the shards give no {model} samples")
        target = out if out is not None else Path("models") / "pretrained" / f"{model}.safetensors"
        step_done = None
        if progress is not None:
            step_task = progress.add_task(f"{model} steps", total=steps, score="")
            step_done = lambda i, losses: progress.update(  # noqa: E731
                step_task, completed=i + 1, score=f"loss {losses['total']:.4f}")
        summary = run_pretrain(samples, cfg.nets.net_config(model), cfg.learner, target, steps, batch_size, lr,
                               seed=seed, symmetries=cfg.replay.symmetries, init=init, callback=step_done,
                               extra={"records": len(games), "shards": [str(p) for p in shards or []],
                                      "teacher": teacher, "teacher_mix": teacher_mix if teacher else None,
                                      "value_target": drift.spec() if drift is not None else "result",
                                      "trainable": cfg.learner.trainable})
    summary["records"] = len(games)
    if json_out:
        typer.echo(json.dumps(summary))
    else:
        source = f"{len(games)} records" + (f" and {len(shards)} shard path(s)" if shards else "")
        typer.echo(f"{model}: {source}, {summary['samples']} samples, {steps} steps in {summary['seconds']:.1f} s;"
                   f" loss {summary.get('first_loss', float('nan')):.4f} -> {summary.get('last_loss', float('nan')):.4f}")
        typer.echo(f"wrote {target}")


@app.command("gen-records")
@_train_errors
def gen_records(
    agent: Annotated[str, typer.Option(help="Agent spec playing both sides (or White with --black).")] = "expert",
    black: Annotated[Optional[str], typer.Option(help="Agent spec of Black (default: the same as --agent).")] = None,
    games: Annotated[int, typer.Option("--games", "-n", min=1, help="Number of games.")] = 10,
    out: Annotated[Path, typer.Option(help="Output directory of the JSON records (resumed if it exists).")] = Path("runs/records"),
    workers: Annotated[int, typer.Option(min=0, max=MAX_WORKERS, help="Worker processes (0: in this process).")] = 2,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Base seed; game i's seeds derive from (seed, i).")] = 0,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
    rule: RuleOption = None,
):
    """Generate a starter corpus of JSON records (agent vs itself), in parallel; resumable."""
    from train.supervised import generate_records

    progress = None
    if not json_out:
        from train.arena import new_progress

        progress = new_progress()
    ruleset = ruleset_from(rule)
    if progress is not None:
        with progress:
            summary = generate_records(agent, games, out, workers=workers, seed=seed, ruleset=ruleset, black=black,
                                       progress=progress)
    else:
        summary = generate_records(agent, games, out, workers=workers, seed=seed, ruleset=ruleset, black=black)
    if json_out:
        typer.echo(json.dumps(summary))
    else:
        typer.echo(f"{summary['games']} records in {out} ({summary['played']} played now, {summary['seconds']:.1f} s);"
                   f" results {summary['results']}")


@app.command()
@_train_errors
def report(
    run_dir: Annotated[Path, typer.Argument(help="A training run directory (python cli.py selfplay).")],
    out: Annotated[Optional[Path], typer.Option(help="Output directory (default RUN_DIR/report).")] = None,
):
    """Plot losses, win rates, self-play speed and the learning curve (Elo vs games and hours) into PNG files."""
    from train.report import curve_lines, render_report

    written = render_report(run_dir, out)
    for path in written:
        typer.echo(str(path))
    summary = next(p for p in written if p.name == "summary.json")
    for line in curve_lines(json.loads(summary.read_text(encoding="utf-8"))):
        typer.echo(line)


@app.command()
@_train_errors
def diagnose(
    model_dir: Annotated[Path, typer.Argument(help="A model directory holding slm/upper/lower .safetensors, or one "
                                              "net file (a run's checkpoint).")],
    records: Annotated[Optional[list[Path]], typer.Option("--records", help="Held-out record files or directories "
                                                          "(games the nets were not trained on; default without "
                                                          "--shards: the shipped corpus data/heldout-expert).")] = None,
    shards: Annotated[Optional[list[Path]], typer.Option("--shards", help="Sample shards (.npz), directories or quoted "
                                                         "glob patterns of them (repeatable), e.g. "
                                                         "'RUN/shards/upper/i0005-*.npz', shards written after the "
                                                         "net's checkpoint: how well the nets predict those search "
                                                         "targets (alone unless --records is given).")] = None,
    max_records: Annotated[int, typer.Option(min=1, max=100_000, help="Use at most this many games (the last).")] = 200,
    positions: Annotated[int, typer.Option(min=1, max=1_000_000, help="Positions per net, drawn uniformly.")] = 4000,
    victims: Annotated[int, typer.Option(min=0, max=1000, help="Capture-pruner sets the lower net ranks (0: all).")] = 8,
    victim_reference: Annotated[Optional[str], typer.Option(help="Evaluator plugin spec whose best victim set the "
                                                        "lower net and the pruner are scored against (default: "
                                                        "the expert's two-ply value, eval.expert:plies=2; 'none': "
                                                        "no reference).")] = None,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the position sample.")] = 0,
    value_drift: Annotated[int, typer.Option(min=0, max=1000, help="Also score the upper value against the drift of "
                                             "--value-eval's margin over this many plies of the records (even; 0: off).")] = 0,
    value_eval: Annotated[Optional[str], typer.Option(help="Evaluator (with a margin) of the --value-drift target "
                                                      "(default: the search's battle leaf value).")] = None,
    drift_ends: DriftEndsOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    rule: RuleOption = None,
):
    """Where strength is lost: policy top-1/top-3 agreement with the records' moves, value calibration
    (sign accuracy, Brier score), and the lower net's victim choice against the capture pruner's and
    against the expert's two-ply value of the position after each set; with an SLM, who formed the
    first square, what the knowledge evaluations say at the layout's end and how well they and the
    stone difference early in the battle predict the result; with --shards, the policy's
    cross-entropy and KL divergence to unseen self-play targets; with --value-drift K, how well the
    upper value predicts the drift target (train.diagnose)."""
    import json

    from train.diagnose import HELDOUT_RECORDS, VICTIM_REFERENCE, diagnose as run_diagnose, format_report

    drift = _drift_target(value_drift, value_eval, drift_ends, "upper")
    reference = VICTIM_REFERENCE if victim_reference is None else victim_reference
    if reference.strip().lower() == "none":
        reference = None
    else:
        from knowledge.plugins import REGISTRY
        from knowledge.registry import SpecError

        try:
            REGISTRY.create(reference, "evaluator")
        except (SpecError, ValueError) as exc:
            fail(f"--victim-reference: {exc}")
    record_paths = records or ([] if shards else [HELDOUT_RECORDS])
    report = run_diagnose(model_dir, record_paths, max_records=max_records, max_positions=positions, victims=victims,
                          seed=seed, ruleset=ruleset_from(rule), victim_reference=reference, shard_paths=shards or [],
                          drift=drift)
    typer.echo(json.dumps(report) if json_out else format_report(report))


@app.command("export-net")
@_train_errors
def export_net(
    nets: Annotated[list[Path], typer.Argument(help="Net files (.safetensors) to export.")],
    out: Annotated[Path, typer.Option(help="Output directory; each net is written as <kind>.safetensors.")] = Path("models/default"),
    half: Annotated[bool, typer.Option("--half/--float32", help="Store weights as float16 (half the size).")] = True,
):
    """Copy trained nets into a model directory (default: the shipped model the search agents load),
    checked on load and stored as float16 by default."""
    from nets.io import load, save

    for path in nets:
        model, config, extra = load(path)
        target = out / f"{config.kind}.safetensors"
        save(model, config, target, extra={**extra, "exported_from": path.name}, half=half)
        typer.echo(f"{path} -> {target} ({target.stat().st_size / 1e6:.2f} MB)")


# ----------------------------------------------------------------------------- front ends (frontends/)
@app.command()
@_train_errors
def serve(
    host: Annotated[str, typer.Option(help="Address to bind (default: this machine only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8000,
    agent: Annotated[str, typer.Option(help="The default opponent's agent spec on the new-game form.")] = "jfa",
    max_games: Annotated[int, typer.Option(min=1, help="Games kept at once (the least recently used goes).")] = 32,
):
    """A browser board: play against any agent, see its search, review records (FastAPI + uvicorn)."""
    from frontends.server import serve as run_server
    from train.arena import check_agent_spec

    check_agent_spec(agent, "--agent")
    run_server(host, port, default_agent=agent, max_games=max_games)


@app.command()
@_train_errors
def engine(
    agent: Annotated[str, typer.Option(help="The agent that plays genmove/go (a search agent for analyze).")] = "jfa",
    seed: Annotated[int, typer.Option(help="The agent's seed.")] = 0,
    rule: RuleOption = None,
):
    """The engine protocol on stdin/stdout (GTP-like commands, or UGI after `ugi`; docs/engine-protocol.md)."""
    from frontends.engine import run_engine
    from train.arena import check_agent_spec

    check_agent_spec(agent, "--agent")
    raise typer.Exit(run_engine(sys.stdin, sys.stdout, agent, seed, ruleset_from(rule)))


@app.command()
@_train_errors
def analyze(
    record: Annotated[Path, typer.Argument(help="A game record (.json, .jiu/.txt; a CSV's first game).")],
    sims: Annotated[Optional[int], typer.Option("--sims", min=1, help="Simulations per position (default: the agent's).")] = None,
    seconds: Annotated[Optional[float], typer.Option("--seconds", min=0.001, help="Time limit per position.")] = None,
    out: Annotated[Path, typer.Option(help="Output directory for analysis.json and analysis.png.")] = Path("runs/analysis"),
    agent: Annotated[str, typer.Option(help="The search agent that evaluates (mcts, jfa, ...).")] = "jfa",
    mistake: Annotated[float, typer.Option(min=0.0, help="Value loss (in [-1, 1] units) that marks a mistake.")] = 0.2,
    blunder: Annotated[float, typer.Option(min=0.0, help="Value loss that marks a blunder.")] = 0.4,
    format: Annotated[Optional[str], typer.Option("--format", help="json, jiu or csv (default: from the file).")] = None,
    seed: Annotated[int, typer.Option(help="The agent's seed.")] = 0,
):
    """Evaluate every move of a game with the search: mistakes, blunders, JSON and a PNG of the evaluation."""
    from train.arena import check_agent_spec
    from train.report import analyze_record

    check_agent_spec(agent, "--agent")
    result = analyze_record(record, out, agent, sims, seconds, seed, mistake, blunder, format)
    typer.echo(json.dumps({"moves": len(result["moves"]), "summary": result["summary"], "files": result["files"]}))


if __name__ == "__main__":
    app()
