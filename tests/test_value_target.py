"""The evaluator-value target (``DriftTarget(mode="value")``, ``pretrain --value-eval-target K``): each battle
position's value target is the evaluator's value ``K`` plies later, computed here position by position from
``ExpertEvaluator.value``; within ``K`` plies of a game's end it is the result (a draw 0)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.board import DRAW
from core.records import GameRecord
from core.rules import Ruleset
from knowledge.agents import make_agent
from knowledge.evaluation import ExpertEvaluator
from train.learning.drift import DriftTarget, drift_values

pytestmark = pytest.mark.unit


def _game(max_battle_plies: int, seed: int = 4) -> list:
    """The positions of one noisy expert game under ``max_battle_plies`` (it ends by that limit or before)."""
    import catalog  # noqa: F401 - registers the expert

    rules = Ruleset(max_battle_plies=max_battle_plies, adjudicate="stones")
    agent = make_agent("expert:noise=2,layout_noise=2", seed=seed)
    moves = []
    record = GameRecord.from_moves([], rules)
    state = record.final_state()
    while not state.is_terminal():
        move = agent.select(state)
        moves.append(str(move))
        state = state.apply(move)
    return GameRecord.from_moves(moves, rules).replay()


def _reference(replay, k: int) -> list:
    ev = ExpertEvaluator(plies=1)
    last, final = len(replay) - 1, replay[-1]
    out = []
    for t, pos in enumerate(replay):
        if t == last or pos.phase != 1 or pos.is_terminal():
            out.append(None)
        elif t + k < last:
            out.append(math.tanh(ev.margin(replay[t + k]) / ev.scale) if replay[t + k].side == pos.side else None)
        else:
            w = final.winner()
            out.append(0.0 if w == DRAW else (1.0 if w == pos.side else -1.0))
    return out


@pytest.mark.parametrize("k", [0, 2, 6])
def test_the_target_is_the_evaluators_value_k_plies_on(k):
    replay = _game(40)
    assert replay[-1].is_terminal()
    got = drift_values(replay, DriftTarget(k, "eval.expert", mode="value"))
    want = _reference(replay, k)
    assert [None if np.isnan(g) else pytest.approx(g, abs=1e-6) for g in got] == want
    assert sum(w is not None for w in want) > 20 and any(w not in (None, 0.0, 1.0, -1.0) for w in want)
    if k == 0:  # the position's own value: what the search's value plugin says of it
        ev = ExpertEvaluator(plies=1)
        battle = [t for t, w in enumerate(want) if w is not None and t < len(replay) - 1]
        assert all(got[t] == pytest.approx(ev.value(replay[t]), abs=1e-6) for t in battle)


def test_the_value_mode_is_checked_and_named_in_the_spec():
    DriftTarget(0, mode="value").check_plies()
    assert DriftTarget(0, "eval.expert", mode="value").spec() == "value:0:eval.expert"
    assert DriftTarget(2, "eval.expert").spec() == "drift:2:eval.expert"
    for bad, match in ((DriftTarget(0), "2..1000"), (DriftTarget(3, mode="value"), "even"),
                       (DriftTarget(2, mode="nope"), "mode")):
        with pytest.raises(ValueError, match=match):
            bad.check_plies()


@pytest.mark.parametrize("mode,k", [("value", 0), ("value", 4), ("drift", 2)])
def test_result_mix_blends_the_result_into_every_defined_target(mode, k):
    replay = _game(40)
    final = replay[-1]
    plain = drift_values(replay, DriftTarget(k, "eval.expert", mode=mode))
    mixed = drift_values(replay, DriftTarget(k, "eval.expert", mode=mode, result_mix=0.25))
    w = final.winner()
    for t, pos in enumerate(replay):
        if np.isnan(plain[t]):
            assert np.isnan(mixed[t])
            continue
        r = 0.0 if w == DRAW else (1.0 if w == pos.side else -1.0)
        assert mixed[t] == pytest.approx(0.25 * r + 0.75 * plain[t], abs=1e-6)
    assert np.array_equal(drift_values(replay, DriftTarget(k, "eval.expert", mode=mode, result_mix=0.0)), plain,
                          equal_nan=True)
    whole = drift_values(replay, DriftTarget(k, "eval.expert", mode=mode, result_mix=1.0))
    sides = [p.side for t, p in enumerate(replay) if not np.isnan(plain[t])]
    assert {float(v) for v in whole[~np.isnan(whole)]} <= {-1.0, 0.0, 1.0} and len(sides) > 10


def test_result_mix_gives_no_target_without_a_result_and_is_checked():
    replay = _game(40)[:-3]  # a record cut before its end: no result
    assert not replay[-1].is_terminal()
    assert np.isnan(drift_values(replay, DriftTarget(0, "eval.expert", mode="value", result_mix=0.5))).all()
    assert not np.isnan(drift_values(replay, DriftTarget(0, "eval.expert", mode="value"))).all()
    assert DriftTarget(0, "eval.expert", mode="value", result_mix=0.5).spec() == "value:0:eval.expert:result_mix=0.5"
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="result_mix"):
            DriftTarget(0, mode="value", result_mix=bad).check_plies()


@pytest.mark.parametrize("mode,k", [("value", 0), ("drift", 2)])
def test_result_stones_puts_the_result_where_a_side_has_few_stones(mode, k):
    """``result_stones = S``: where the side with fewer stones has at most ``S`` the target is the result
    alone (a position-by-position check), elsewhere the target without it; the threshold is the game's
    median count so that both kinds occur."""
    replay = _game(40)
    w = replay[-1].winner()
    plain = drift_values(replay, DriftTarget(k, "eval.expert", mode=mode, result_mix=0.25))
    battle = [t for t, p in enumerate(replay) if p.phase == 1 and not p.is_terminal() and t < len(replay) - 1]
    s = int(np.median([min(replay[t].counts) for t in battle]))
    got = drift_values(replay, DriftTarget(k, "eval.expert", mode=mode, result_mix=0.25, result_stones=s))
    few = many = 0
    for t, pos in enumerate(replay):
        if t in battle and min(pos.counts) <= s:
            few += 1
            assert got[t] == (0.0 if w == DRAW else (1.0 if w == pos.side else -1.0))
        else:
            many += t in battle and not np.isnan(plain[t])
            assert np.isnan(got[t]) == np.isnan(plain[t]) and (np.isnan(got[t]) or got[t] == plain[t])
    assert few > 0 and many > 0
    cut = replay[:-3]  # no result: no target where it would be the result
    partial = drift_values(cut, DriftTarget(k, "eval.expert", mode=mode, result_stones=s))
    assert all(np.isnan(partial[t]) for t in battle if t < len(cut) and min(cut[t].counts) <= s)


@pytest.mark.parametrize("mode,k", [("value", 0), ("drift", 2)])
def test_result_from_narrows_the_result_to_a_band(mode, k):
    """``result_from = F``: the result alone only where the side with fewer stones has ``F`` to ``S``
    (both ends included); below ``F`` and above ``S`` the target without it, position by position."""
    replay = _game(40)
    w = replay[-1].winner()
    plain = drift_values(replay, DriftTarget(k, "eval.expert", mode=mode, result_mix=0.25))
    battle = [t for t, p in enumerate(replay) if p.phase == 1 and not p.is_terminal() and t < len(replay) - 1]
    fewer = sorted({int(min(replay[t].counts)) for t in battle})
    lo, hi = fewer[len(fewer) // 3], fewer[2 * len(fewer) // 3]  # counts that occur: both ends are hit
    got = drift_values(replay, DriftTarget(k, "eval.expert", mode=mode, result_mix=0.25, result_stones=hi,
                                           result_from=lo))
    kinds = {"band": 0, "below": 0, "above": 0}
    for t, pos in enumerate(replay):
        n = int(min(pos.counts))
        if t in battle and lo <= n <= hi:
            kinds["band"] += 1
            assert got[t] == (0.0 if w == DRAW else (1.0 if w == pos.side else -1.0))
        else:
            if t in battle and not np.isnan(plain[t]):
                kinds["below" if n < lo else "above"] += 1
            assert np.isnan(got[t]) == np.isnan(plain[t]) and (np.isnan(got[t]) or got[t] == plain[t])
    assert min(kinds.values()) > 0, kinds
    ends = {int(min(replay[t].counts)) for t in battle}
    assert lo in ends and hi in ends


def test_result_stones_is_checked_and_named_in_the_spec():
    spec = DriftTarget(0, "eval.expert", mode="value", result_mix=0.25, result_stones=29).spec()
    assert spec == "value:0:eval.expert:result_mix=0.25:result_stones=29"
    for bad in (-1, 99):
        with pytest.raises(ValueError, match="result_stones"):
            DriftTarget(0, mode="value", result_stones=bad).check_plies()
    band = DriftTarget(0, "eval.expert", mode="value", result_stones=29, result_from=14)
    assert band.spec() == "value:0:eval.expert:result_stones=29:result_from=14"
    band.check_plies()
    for bad in (-1, 30):
        with pytest.raises(ValueError, match="result_from"):
            DriftTarget(0, mode="value", result_stones=29, result_from=bad).check_plies()
    with pytest.raises(ValueError, match="result_from"):
        DriftTarget(0, mode="value", result_from=5).check_plies()  # a band without its top
