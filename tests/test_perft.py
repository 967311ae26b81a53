"""Perft counts stored as data (``tests/data/perft.json``, made by the reference) run against the engine.

On a mismatch the failure message lists the per-move split where the engine and the reference differ.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import GameState, Ruleset
from core.perft import perft, perft_divide
from tests import reference as ref

CASES = json.loads((Path(__file__).parent / "data" / "perft.json").read_text())


def _split_diff(state: GameState, rules: Ruleset, depth: int) -> str:
    mine = perft_divide(state, depth)
    pos = ref.parse_jfen(state.to_jfen())
    theirs = {m: ref.perft(ref.apply_move(pos, m, rules), rules, depth - 1) for m in ref.legal_moves(pos, rules)}
    lines = [f"{m}: engine {mine.get(m)} reference {theirs.get(m)}"
             for m in sorted(set(mine) | set(theirs)) if mine.get(m) != theirs.get(m)]
    return "\n".join(lines[:40]) or "(splits agree; totals differ)"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_perft_counts(case):
    rules = Ruleset.parse(case["ruleset"])
    state = GameState.from_jfen(case["jfen"], rules)
    for depth, expected in enumerate(case["counts"], 1):
        got = perft(state, depth)
        assert got == expected, f"depth {depth}: {got} != {expected}\n{_split_diff(state, rules, depth)}"


def test_perft_depth_zero_and_terminal():
    state = GameState.initial()
    assert perft(state, 0) == 1
    lone = GameState.from_jfen("/".join(["W13"] + ["14"] * 13) + " b battle 0 300")
    assert perft(lone, 0) == 1 and perft(lone, 2) == 0 and perft_divide(lone, 1) == {}
