"""Command line of the Jiu engine: ``python cli.py COMMAND ...`` (``--help`` on any command).

The CLI only parses, validates and calls one library function per command. Any bad input (position,
move, record, option) prints one ``error: ...`` line to stderr and exits with status 2.
Heavy modules are imported inside the commands so that ``legal`` starts fast.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__.split("\n")[0])
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks (print ratios measured in one run).")
app.add_typer(bench_app, name="bench")

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
            fail(f"{exc.filename or ''}: {exc.strerror or exc}")

    return wrapper


def ruleset_from(options: list[str] | None):
    """A ``Ruleset`` from ``KEY=VALUE`` strings (values are ints when they look like ints)."""
    from core.errors import JiuError
    from core.rules import Ruleset

    data: dict[str, object] = {}
    for item in options or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise JiuError(f"--rule {item!r}: expected KEY=VALUE")
        data[key.strip().replace("-", "_")] = int(value) if value.strip().lstrip("-").isdigit() else value.strip()
    return Ruleset.parse(data)


def _jfen_lines(fen: str | None, fen_file: Path | None, source: str | None):
    if sum(x is not None for x in (fen, fen_file, source)) != 1:
        fail("give exactly one of --fen JFEN, --fen-file FILE, or - (standard input)")
    if fen is not None:
        yield 1, fen
        return
    if source is not None and source != "-":
        fail(f"positional argument {source!r}: only '-' (standard input) is accepted; use --fen or --fen-file")
    stream = sys.stdin if source == "-" else open(fen_file, encoding="utf-8")
    with stream:
        for n, line in enumerate(stream, 1):
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
):
    """Replay a record, validating every move; print one JSON summary line per game."""
    from core.records import read_record

    for record in read_record(file, format):
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
):
    """Convert a game record between formats (validating every move). A CSV with several games
    writes TARGET with the game number inserted before the extension."""
    from core.records import read_record, write_record

    records = read_record(source, from_format)
    for i, record in enumerate(records, 1):
        record.replay()
        out = target if len(records) == 1 else target.with_name(f"{target.stem}-{i}{target.suffix}")
        write_record(record, out, to_format)
        typer.echo(str(out))


@app.command("random-game")
@cli_errors
def random_game(
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same game).")] = 0,
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
    threads: Annotated[str, typer.Option(help="Comma-separated WU-UCT thread counts.")] = "1,2,4",
):
    """Serial MCTS vs WU-UCT (1/2/4 threads) on layout and battle positions with the tiny nets (JFA Table 3)."""
    from bench.search import run_search_benchmark

    def ints(text: str, what: str) -> tuple[int, ...]:
        try:
            values = tuple(int(x) for x in text.split(",") if x.strip())
        except ValueError:
            fail(f"--{what} {text!r}: expected comma-separated integers")
        if not values or min(values) < 1:
            fail(f"--{what} {text!r}: expected positive integers")
        return values

    result = run_search_benchmark(ints(simulations, "simulations"), ints(threads, "threads"), progress=not json_out)
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


@app.command()
@_agent_errors
def arena(
    agent_a: Annotated[str, typer.Argument(metavar="A", help="Agent spec, e.g. greedy, minimax:depth=2, slm+expert.")],
    agent_b: Annotated[str, typer.Argument(metavar="B", help="Agent spec of the opponent.")],
    games: Annotated[int, typer.Option("--games", "-n", help="Games (even: pairs with colours swapped).")] = 20,
    workers: Annotated[int, typer.Option(min=0, help="Worker processes (0: play in this process).")] = 1,
    seed: Annotated[int, typer.Option(help="Base seed; pair k uses seed + k.")] = 0,
    out: Annotated[
        Optional[Path], typer.Option(help="Run directory (resumed if it exists). Default: runs/arena/A__vs__B.")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
    imports: ImportOption = None,
    rule: RuleOption = None,
):
    """Colour-balanced match A vs B: win rate with SE and 95% CI, Elo, decision times; resumable."""
    from rich.console import Console

    from train.arena import run_arena, summary_table
    from train.tournament import pair_dir_name

    ruleset = ruleset_from(rule)
    out_dir = out if out is not None else Path("runs") / "arena" / pair_dir_name(agent_a, agent_b)
    summary = run_arena(agent_a, agent_b, games, workers=workers, seed=seed, out_dir=out_dir, ruleset=ruleset,
                        progress=not json_out, imports=imports or ())
    if json_out:
        typer.echo(json.dumps({**summary.data, "out_dir": str(out_dir)}))
    else:
        Console().print(summary_table(summary.data))
        typer.echo(f"records and summary.json in {out_dir}")


@app.command()
@_agent_errors
def tournament(
    agents: Annotated[list[str], typer.Argument(metavar="AGENT...", help="At least two agent specs.")],
    games: Annotated[int, typer.Option("--games", "-n", help="Games per pair (even).")] = 20,
    workers: Annotated[int, typer.Option(min=0, help="Worker processes shared by all pairs (0: in this process).")] = 1,
    seed: Annotated[int, typer.Option(help="Base seed of every pair.")] = 0,
    out: Annotated[Path, typer.Option(help="Run directory (resumed if it exists).")] = Path("runs/tournament"),
    anchor: Annotated[Optional[str], typer.Option(help="Agent held at Elo 0 (default: mean 0).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    imports: ImportOption = None,
    rule: RuleOption = None,
):
    """Round robin: an arena per pair, payoff matrix and Bradley-Terry Elo with 95% CIs (JSON + Markdown)."""
    from rich.console import Console

    from train.tournament import RESULT_FILE, TABLE_FILE, rich_tables, run_tournament

    result = run_tournament(agents, games, workers=workers, seed=seed, out_dir=out, ruleset=ruleset_from(rule),
                            progress=not json_out, imports=imports or (), anchor=anchor)
    if json_out:
        typer.echo(json.dumps(result.data))
    else:
        console = Console()
        for table in rich_tables(result.data):
            console.print(table)
        typer.echo(f"wrote {out / RESULT_FILE} and {out / TABLE_FILE}")


@app.command()
@_agent_errors
def play(
    agent: Annotated[str, typer.Option(help="The opponent's agent spec.")] = "greedy",
    human: Annotated[str, typer.Option(help="Your colour: w (White, places first) or b.")] = "w",
    seed: Annotated[int, typer.Option(help="The agent's seed.")] = 0,
    record: Annotated[Optional[Path], typer.Option(help="Write the JSON record here at the end or on quit.")] = None,
    imports: ImportOption = None,
    rule: RuleOption = None,
):
    """Play against an agent in the terminal (type moves in notation; moves, undo, save [FILE], quit)."""
    import importlib

    from train.arena import check_agent_spec
    from train.play import play as play_game

    for module in imports or ():
        importlib.import_module(module)
    ruleset = ruleset_from(rule)
    if human not in ("w", "b"):
        fail(f"--human {human!r}: expected w or b")
    check_agent_spec(agent, "--agent")
    play_game(agent, human, seed, ruleset, record)


if __name__ == "__main__":
    app()
