"""Game analysis (``search.analysis``, ``python cli.py analyze``): per-move values, mistakes and
blunders by thresholds, JSON and PNG output, bad input as one ``error:`` line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from cli import app
from core.records import GameRecord, write_json
from core.rules import Ruleset
from core.state import GameState
from knowledge.agents import make_agent
from search.analysis import analyze_game, classify, move_row

RULES = Ruleset(max_battle_plies=10, adjudicate="stones")


@pytest.fixture(scope="module")
def record():
    agent = make_agent("random", seed=5)
    state, moves = GameState.initial(RULES), []
    while not state.is_terminal():
        move = agent.select(state)
        moves.append(str(move))
        state = state.apply(move)
    return GameRecord.from_moves(moves, RULES, white="random", black="random")


def test_classify_thresholds():
    assert classify(0.05) is None
    assert classify(0.2) == "mistake" and classify(0.39) == "mistake"
    assert classify(0.4) == "blunder"
    assert classify(0.3, mistake=0.1, blunder=0.3) == "blunder"


def test_move_row_signs_and_loss():
    s0 = GameState.initial(RULES)
    s1 = s0.apply("g7")  # White moved; Black to move in s1
    before = {"value": 0.5, "best": "h8", "candidates": []}
    after = {"value": 0.25, "best": "h8", "candidates": []}  # Black's view: White's value is -0.25
    row = move_row(1, s0, s1, "g7", before, after)
    assert row["value_after"] == -0.25 and row["loss"] == 0.75 and row["label"] == "blunder"
    assert row["white_win"] == pytest.approx((1 - 0.25) / 2)
    same = move_row(1, s0, s1, "h8", before, after)  # the preferred move loses nothing by definition
    assert same["loss"] == 0 and same["label"] is None


def test_analyze_game_covers_every_move(record):
    states = record.replay()
    result = analyze_game(states, list(record.moves), make_agent("mcts:sims=4"), 4)
    rows = result["moves"]
    assert [r["ply"] for r in rows] == list(range(1, len(record.moves) + 1))
    assert all(r["loss"] >= 0 and 0 <= r["white_win"] <= 1 for r in rows)
    assert all((r["label"] is not None) == (r["loss"] >= 0.2) for r in rows)
    final = states[-1]
    assert final.is_terminal()
    # the last move's value after is the game result from the mover's view
    mover = states[-2].side
    result_for_mover = 0.0 if final.winner() in (None, -1) else (1.0 if final.winner() == mover else -1.0)
    assert rows[-1]["value_after"] == result_for_mover
    for side in "wb":
        mine = [r for r in rows if r["side"] == side]
        assert result["summary"][side]["blunders"] == sum(r["label"] == "blunder" for r in mine)
        assert result["summary"][side]["mean_loss"] == pytest.approx(np.mean([r["loss"] for r in mine]), abs=1e-4)


def test_analyze_needs_a_search_agent(record):
    with pytest.raises(ValueError, match="does not search"):
        analyze_game(record.replay(), list(record.moves), make_agent("random"), 4)


def test_cli_analyze_writes_json_and_png(tmp_path, record):
    path = tmp_path / "game.json"
    write_json(record, path)
    out = tmp_path / "analysis"
    result = CliRunner().invoke(app, ["analyze", str(path), "--sims", "4", "--agent", "mcts", "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["moves"] == len(record.moves)
    data = json.loads((out / "analysis.json").read_text())
    assert data["format"] == "jiu-analysis" and len(data["moves"]) == len(record.moves)
    assert data["players"] == {"white": "random", "black": "random"} and data["agent"] == "mcts"
    png = (out / "analysis.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000


@pytest.mark.parametrize("args, message", [
    (["analyze", "missing.json", "--agent", "mcts"], "missing.json"),
    (["analyze", "{record}", "--agent", "random"], "does not search"),
    (["analyze", "{record}", "--agent", "nosuch"], "unknown agent"),
    (["analyze", "{record}", "--agent", "mcts", "--mistake", "0.5", "--blunder", "0.3"], "mistake"),
])
def test_cli_analyze_bad_input(tmp_path, record, args, message):
    path = tmp_path / "game.json"
    write_json(record, path)
    result = CliRunner().invoke(app, [a.replace("{record}", str(path)) for a in args] + ["--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
