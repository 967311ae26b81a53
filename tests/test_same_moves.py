"""The search agents play the same moves as at the commit that recorded ``tests/data/same_moves.json``.

A guard for refactors of the search's configuration (issue 61): the shipped ``jfa`` and ``hbm`` with one
search thread (deterministic for a seed) and ``mcts:sims=50`` play two consecutive moves (the tree kept
between them) from fixed layout and battle positions, and each move must equal the recorded one.
Re-record (only when a change of moves is intended): ``python -m tests.test_same_moves``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import catalog  # noqa: F401 - registers every agent
from core.state import GameState
from knowledge.agents import make_agent
from tests.strategies import biased_playout, random_battle_jfen

DATA = Path(__file__).parent / "data" / "same_moves.json"
SPECS = ("jfa:threads=1", "hbm:threads=1", "mcts:sims=50")
PLIES = 2  # consecutive moves per position (the agent's tree reused between them)


def positions() -> dict[str, str]:
    """Name -> JFEN: two layout positions and two battle positions (one with shapes to capture with)."""
    out = {}
    rng = random.Random(61)
    s = GameState.initial()
    for n in (12, 150):
        while s.ply < n:
            s = s._play(rng.choice(s.legal_moves()))
        out[f"layout{n}"] = s.to_jfen()
    for name, (w, b, shapes) in {"battle_quiet": (30, 28, 0), "battle_shapes": (40, 38, 4)}.items():
        start = GameState.from_jfen(random_battle_jfen(random.Random(f"{name}"), w, b, shapes))
        out[name] = biased_playout(start, random.Random(7), 4)[-1].to_jfen()
    return out


def play(spec: str, jfen: str, seed: int = 3) -> list[str]:
    """``spec``'s ``PLIES`` consecutive moves from ``jfen`` (one agent, seeded), as text."""
    agent = make_agent(spec, seed=seed)
    state, moves = GameState.from_jfen(jfen), []
    try:
        for _ in range(PLIES):
            if state.is_terminal():
                break
            move = agent.select(state)
            moves.append(str(move))
            state = state.apply(move)
    finally:
        close = getattr(agent, "close", None)
        if callable(close):
            close()
    return moves


def record() -> dict:
    pos = positions()
    return {"positions": pos, "moves": {spec: {name: play(spec, jfen) for name, jfen in pos.items()} for spec in SPECS}}


@pytest.mark.parametrize("spec", SPECS)
def test_same_moves(spec):
    data = json.loads(DATA.read_text())
    assert positions() == data["positions"]
    for name, jfen in data["positions"].items():
        assert play(spec, jfen) == data["moves"][spec][name], (spec, name)


if __name__ == "__main__":
    DATA.write_text(json.dumps(record(), indent=1) + "\n")
    print(DATA.read_text())
