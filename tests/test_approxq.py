"""Tests of the ``approxq`` agent (knowledge/approxq.py) and its training (train/learning/approxq.py).

The feature kernels are checked against a slow obvious reference that plays each move with
``GameState`` and counts everything from the public shape wrappers and the move generator; the
training against an uninterrupted run (resume) and its own checks (bad settings)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.board import CELL_CORNERS, NUM_CELLS, PHASE_BATTLE, POINT_CELLS
from core.notation import Move
from core.rules import Ruleset
from core.shapes import dalians, gates, squares
from core.state import GameState
from knowledge.agents import make_agent
from knowledge.approxq import (
    DEFAULT_WEIGHTS,
    FEATURE_NAMES,
    N_FEATURES,
    ApproxQAgent,
    WeightsError,
    initial_weights,
    load_weights,
    save_weights,
    state_features,
)
from knowledge.expert_kernels import threat_victims
from knowledge.formation import gaussian_density
from knowledge.layout_kernels import LAYOUT_WEIGHTS, layout_scores
from tests.strategies import layout_positions, played_positions

# Tier: unit (tests/conftest.py: the file's default), the whole training runs integration.
FAST = Ruleset(max_battle_plies=16, adjudicate="stones")
COL = {name: i for i, name in enumerate(FEATURE_NAMES)}


# ============================================================================ the slow reference
def _best_capture(board: np.ndarray, side: int, ruleset: Ruleset) -> tuple[bool, int, int]:
    """(has a legal path, most stones one path takes, distinct destinations of capturing paths) of
    ``side`` to move on ``board``, from the move generator (terminal rules ignored)."""
    s = GameState(board, side, PHASE_BATTLE, 0, 200, ruleset)
    ps = s._generate()
    n_opp = s.counts[1 - side]
    best, ends = 0, set()
    for i in range(ps.m):
        path = ps.path(i)
        hops = len(path) - 1 if ps.jump[i] else 0
        cap = hops + min(int(ps.nsq[i]), n_opp - hops)
        if cap > 0:
            ends.add(path[-1])
            best = max(best, cap)
    return ps.m > 0, best, len(ends)


def _in_own_square(board: np.ndarray, p: int, stone: int) -> bool:
    return any(c >= 0 and all(board[q] == stone for q in CELL_CORNERS[c]) for c in POINT_CELLS[p])


def reference_battle(state: GameState, paths) -> np.ndarray:
    """The feature rows of the paths ``paths`` (indices into ``state.paths()``)."""
    me, ps, rules = state.side, state.paths(), state.ruleset
    loss_below = rules.loss_below
    rows = np.zeros((len(paths), N_FEATURES))
    for row, i in enumerate(paths):
        path, jump = ps.path(i), bool(ps.jump[i])
        hops = len(path) - 1 if jump else 0
        k = min(int(ps.nsq[i]), state.counts[1 - me] - hops)
        victims = ()
        if k > 0:
            victims = tuple(int(v) for v in threat_victims(state.board, me, state.counts[me], state.counts[1 - me],
                                                           rules.vector, np.array(path, np.int16), jump, k)[0])
        after = GameState(state.board, me, PHASE_BATTLE, 0, 200, rules)._play(Move(path, jump, victims))
        board = np.array(after.board)
        own, opp = after.counts[me], after.counts[1 - me]
        r = rows[row]
        r[COL["battle_bias"]] = 1
        r[COL["own_stones"]], r[COL["opp_stones"]] = own / 98, opp / 98
        r[COL["taken"]] = min(hops + len(victims), 4) / 4
        in_square = _in_own_square(state.board, path[0], me + 1)
        if ps.nsq[i] > 0:
            r[COL["level_dalian" if not jump and in_square else "level_square"]] = 1
        elif jump or in_square:
            r[COL["level_jump_or_open"]] = 1
        wins = opp < loss_below
        if not wins:
            movable, best, breadth = _best_capture(board, 1 - me, rules)
            wins = not movable
            if movable:
                r[COL["reply"]], r[COL["reply_breadth"]] = min(best, 4) / 4, min(breadth, 4) / 4
                r[COL["loses"]] = float(own - best < loss_below)
        r[COL["wins"]] = float(wins)
        r[COL["ours"]] = min(_best_capture(board, me, rules)[1], 4) / 4
        view = GameState(board, me, PHASE_BATTLE, 0, 200, rules)
        for who, prefix in ((me, "own"), (1 - me, "opp")):
            g = gates(view, who)
            r[COL[f"{prefix}_squares"]] = min(len(squares(view, who)), 8) / 8
            r[COL[f"{prefix}_gates"]] = min(len(g), 8) / 8
            r[COL[f"{prefix}_open_gates"]] = min(sum(1 for x in g if x[2]), 8) / 8
            r[COL[f"{prefix}_dalians"]] = min(len(dalians(view, who)), 4) / 4
    return rows


def _layout_counts(board: np.ndarray, side: int) -> tuple[int, int, int]:
    """(squares, gates, Dalians) of ``side`` on a layout board, counted cell by cell."""
    stone = side + 1
    sq = sum(all(board[q] == stone for q in CELL_CORNERS[c]) for c in range(NUM_CELLS))
    gt = sum(sum(board[q] == stone for q in CELL_CORNERS[c]) == 3 and sum(board[q] == 0 for q in CELL_CORNERS[c]) == 1
             for c in range(NUM_CELLS))
    view = GameState(board, side, PHASE_BATTLE, 0, 200)
    return sq, gt, len(dalians(view, side))


def reference_layout(state: GameState) -> np.ndarray:
    me = state.side
    legal = state.placements()
    density = gaussian_density()
    top = max(density[p] for p in legal)
    know = layout_scores(state.board, me, LAYOUT_WEIGHTS)
    rows = np.zeros((len(legal), N_FEATURES))
    for i, p in enumerate(legal):
        board = np.array(state.board)
        board[p] = me + 1
        mine, theirs = _layout_counts(board, me), _layout_counts(board, 1 - me)
        r = rows[i]
        r[COL["layout_bias"]] = 1
        r[COL["layout_prior"]] = density[p] / top
        r[COL["layout_squares"]] = (mine[0] - theirs[0]) / 8
        r[COL["layout_gates"]] = (mine[1] - theirs[1]) / 8
        r[COL["layout_dalians"]] = (mine[2] - theirs[2]) / 4
        r[COL["layout_knowledge"]] = know[p] / 10
    return rows


# ============================================================================ features
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(played_positions(), st.randoms(use_true_random=False))
def test_battle_features_match_the_reference(fen, rnd):
    """Every row's layout block is zero; a sample of rows (the capturing ones first: they exercise
    the victims, the level and the win flags) equals the reference's."""
    state = GameState.from_jfen(fen)
    if state.is_terminal():
        return
    phi, actions, _ = state_features(state)
    ps = state.paths()
    assert phi.shape == (ps.m, N_FEATURES) and list(actions) == list(range(ps.m))
    assert not phi[:, :6].any()
    captures = [i for i in range(ps.m) if ps.jump[i] or ps.nsq[i]]
    rest = [i for i in range(ps.m) if not (ps.jump[i] or ps.nsq[i])]
    sample = rnd.sample(captures, min(4, len(captures))) + rnd.sample(rest, min(4, len(rest)))
    np.testing.assert_allclose(phi[sample], reference_battle(state, sample), atol=1e-12)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout_positions())
def test_layout_features_match_the_reference(fen):
    state = GameState.from_jfen(fen)
    phi, points, victims = state_features(state)
    assert victims is None and sorted(points.tolist()) == sorted(state.placements())
    order = [state.placements().index(int(p)) for p in points]
    np.testing.assert_allclose(phi, reference_layout(state)[order], atol=1e-12)
    assert not phi[:, 6:].any()


# ============================================================================ the agent
def _play(agent, opponent, ruleset, plies: int):
    state, moves = GameState.initial(ruleset), []
    while not state.is_terminal() and len(moves) < plies:
        move = (agent if state.side == 0 else opponent).select(state)
        state.check_move(move)  # raises for an illegal move
        moves.append(str(move))
        state = state._play(move)
    return moves, state


def test_the_agent_plays_legal_moves_and_is_deterministic_for_a_seed():
    a, _ = _play(make_agent("approxq", seed=3), make_agent("random", seed=1), FAST, 400)
    b, end = _play(make_agent("approxq", seed=3), make_agent("random", seed=1), FAST, 400)
    assert a == b and end.is_terminal()
    c, _ = _play(make_agent("approxq", seed=3), make_agent("approxq", seed=4), FAST, 400)
    assert len(c) > 196


def test_the_agent_plays_the_victims_its_features_scored():
    """A square-forming path's victims in the agent's move are those of its feature row."""
    import random

    from tests.strategies import random_battle_jfen

    seen = 0
    for seed in range(60):
        state = GameState.from_jfen(random_battle_jfen(random.Random(seed), 30, 30, 4))
        ps = state.paths()
        if state.is_terminal() or not ps.nsq[: ps.m].any():
            continue
        w = np.zeros(N_FEATURES)
        w[COL["taken"]] = 1.0  # a capture is the best move
        move = ApproxQAgent(seed, w).select(state)
        state.check_move(move)
        _, actions, victims = state_features(state)
        rows = [i for i in range(ps.m) if ps.path(int(actions[i])) == move.path and bool(ps.jump[i]) == move.jump]
        assert len(rows) == 1 and move.victims == tuple(int(v) for v in victims[rows[0]] if v >= 0)
        seen += bool(move.victims)
    assert seen >= 3


def test_shipped_weights_load_and_bad_files_name_the_field(tmp_path):
    w = load_weights()
    assert w.shape == (N_FEATURES,) and DEFAULT_WEIGHTS.name == "weights.json"
    for name in ("gamma-0.9.json", "gamma-0.99.json"):
        assert load_weights(DEFAULT_WEIGHTS.parent / name).shape == (N_FEATURES,)
    good = tmp_path / "w.json"
    save_weights(good, initial_weights())
    np.testing.assert_array_equal(load_weights(good), initial_weights())
    data = json.loads(good.read_text())
    cases = [({**data, "features": data["features"][:-1]}, "'features': expected 26"),
             ({**data, "features": ["x"] + data["features"][1:]}, "'features': entry 0 is 'x'"),
             ({**data, "weights": data["weights"] + [1.0]}, "'weights': expected 26"),
             ({**data, "weights": [None] * N_FEATURES}, "'weights': every entry"),
             ({**data, "format": "other"}, "'format'")]
    for i, (bad, message) in enumerate(cases):
        path = tmp_path / f"bad{i}.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(WeightsError, match=message):
            load_weights(path)
    (tmp_path / "text.json").write_text("not json")
    with pytest.raises(WeightsError, match="not JSON"):
        load_weights(tmp_path / "text.json")
    with pytest.raises(FileNotFoundError):
        make_agent(f"approxq:weights={tmp_path / 'missing.json'}")


# ============================================================================ training
def _config(**changes):
    from train.learning.approxq import make_config

    fields = {"episodes": 4, "seed": 5, "opponents": ("random", "self"), "checkpoint_every": 2,
              "rules": tuple(f"{k}={v}" for k, v in FAST.model_dump().items())}
    return make_config(**{**fields, **changes})


@pytest.mark.integration
def test_training_changes_the_weights_and_resumes_exactly(tmp_path):
    from train.learning.approxq import train

    whole = train(tmp_path / "whole", _config())
    assert whole["episode"] == 4 and len(whole["rows"]) == 4
    assert not np.allclose(whole["weights"], initial_weights())
    assert [r["opponent"] for r in whole["rows"]] == ["random", "random", "self", "self"]
    part = train(tmp_path / "part", _config(), stop_after=3)  # interrupted after episode 3
    assert json.loads((tmp_path / "part" / "state.json").read_text())["episode"] == 2
    resumed = train(tmp_path / "part", _config())
    assert resumed["weights"] == whole["weights"] and resumed["rows"] == whole["rows"]
    assert part is not None
    np.testing.assert_array_equal(load_weights(tmp_path / "part" / "weights.json"), np.array(whole["weights"]))


def test_training_refuses_bad_settings(tmp_path):
    from train.jobs.rundir import TrainError
    from train.learning.approxq import ApproxQConfig, train

    for changes, message in [({"gamma": "1.5"}, "gamma"), ({"gamma": "often"}, "gamma"),
                             ({"opponents": ("bogus",)}, "opponents: unknown agent"),
                             ({"episodes": 0}, "episodes"), ({"alpha": 0}, "alpha"),
                             ({"rules": ("loss_below=x",)}, "rules")]:
        with pytest.raises(ValueError, match=message):
            _config(**changes)
    config = _config(episodes=1)
    train(tmp_path, config)
    with pytest.raises(TrainError, match="gamma"):
        train(tmp_path, _config(episodes=1, gamma=0.9))
    assert ApproxQConfig(episodes=300).gamma_at(0) == pytest.approx(0.9)
    assert ApproxQConfig(episodes=300).gamma_at(50) == pytest.approx(0.945)
    assert ApproxQConfig(episodes=300).gamma_at(250) == pytest.approx(0.99)
    assert ApproxQConfig(episodes=300, gamma=0.5).gamma_at(250) == 0.5
