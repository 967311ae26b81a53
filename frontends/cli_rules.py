"""Commands of the rules engine: ``legal``, ``apply``, ``perft``, ``replay``, ``convert``, ``random-game``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from frontends.cli_base import MAX_SEED, RuleOption, app, cli_errors, jfen_lines, ruleset_from


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
    for n, line in jfen_lines(fen, fen_file, source):
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
    from core.perft import perft as count
    from core.perft import perft_divide
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
