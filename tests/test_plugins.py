"""One conformance suite for every registered plugin and agent (``knowledge/protocols.py``).

Each test is parametrised over ``REGISTRY.names(kind)`` with every built-in module registered
(``catalog``), so plugins and agents registered later are checked automatically; a kind with no
registered plugin is skipped. A plugin that is slow with its defaults gets a quicker spec in
``FAST_SPECS`` (only options; the checks are the same). A factory that cannot be built here because
trained weights are missing (``FileNotFoundError``) is skipped with the reason.

Checks per kind (positions from ``tests/strategies.py``):

- ``expansion_pruner``: ascending, unique, in-range ``int64`` indices, never empty when a path exists;
- ``capture_pruner``: legal victim sets (distinct opponent stones left after the path, ascending, of
  size ``min(squares formed, stones left)``), no duplicates, ``float64`` scores, descending, same
  length, never empty;
- ``layout_prior``: ``float32[196]``, >= 0, 0 on illegal points, sums to 1 over the legal ones;
- ``evaluator``: finite scores, value in ``[-1, 1]``, and the sign of ``value`` agrees with
  ``score(side to move) - score(opponent)`` on non-terminal positions, from both sides to move;
- ``reward``: a pair of floats in ``[-1, 1]``;
- ``agent``: a legal move on a few layout and battle positions, ``last_think_time >= 0``.
"""

from __future__ import annotations

import functools
import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.board import NUM_POINTS, PHASE_BATTLE
from core.notation import Move
from core.state import GameState
import catalog  # noqa: F401 - registers every built-in plugin and agent
from knowledge import protocols
from search.victims import after_path
from knowledge.plugins import REGISTRY
from tests.strategies import battle_boards, layout_positions, played_positions, random_battle_jfen

# Quicker options for plugins whose defaults take seconds per call (same checks).
FAST_SPECS = {
    "mcts": "mcts:sims=16",
    "minimax": "minimax:depth=1",
    "jfa": "jfa:sims=8,threads=1",
    "slm": "slm:sims=8,threads=1",
    "hbm": "hbm:sims=8,threads=1",
    "reward.outcome": "reward.outcome:agent=random",
    "reward.first_square": "reward.first_square:agent=random,max_plies=60",
}
PROTOCOLS = {
    "expansion_pruner": protocols.PathPruner,
    "capture_pruner": protocols.VictimRanker,
    "layout_prior": protocols.LayoutPrior,
    "battle_prior": protocols.PathPrior,
    "evaluator": protocols.PositionScorer,
    "reward": protocols.Reward,
    "agent": protocols.Agent,
}
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))


def names(kind: str) -> list:
    found = REGISTRY.names(kind)
    return found or [pytest.param(None, marks=pytest.mark.skip(reason=f"no {kind} registered"))]


_CACHE: dict = {}


def make(name: str, kind: str):
    """The plugin built from its (fast) spec, once per test session; skips when weights are missing."""
    if name not in _CACHE:
        extra = {"seed": 0} if kind == "agent" else {}
        try:
            _CACHE[name] = REGISTRY.create(FAST_SPECS.get(name, name), kind, **extra)
        except FileNotFoundError as exc:
            _CACHE[name] = exc
    obj = _CACHE[name]
    if isinstance(obj, FileNotFoundError):
        pytest.skip(f"{name}: {obj}")
    assert isinstance(obj, PROTOCOLS[kind]), f"{name} does not implement the {kind} protocol"
    assert isinstance(obj.name, str) and obj.name
    return obj


def battle_or_played():
    return st.one_of(battle_boards(), played_positions())


@functools.cache
def fixed_battle_states() -> list[GameState]:
    """Deterministic battle positions: start of the battle, mid-game, both flying, one flying."""
    rng = random.Random(7)
    out = []
    for nw, nb, shapes in ((97, 97, 0), (60, 55, 3), (12, 10, 2), (40, 13, 2)):
        while True:
            s = GameState.from_jfen(random_battle_jfen(rng, nw, nb, shapes))
            if not s.is_terminal():
                out.append(s)
                break
    return out


@functools.cache
def fixed_layout_states() -> list[GameState]:
    """The start, after the first placement, mid-layout and the last placement of the layout."""
    rng = random.Random(3)
    s = GameState.initial()
    out = [s]
    for i in range(195):
        s = s._play(rng.choice(s.legal_moves()))
        if i in (0, 100, 194):
            out.append(s)
    return out


def flip_side(state: GameState) -> GameState:
    """The same board and counters with the other side to move."""
    return GameState(state.board, 1 - state.side, state.phase, state.quiet, state.ply, state.ruleset)


# ============================================================================ expansion pruners
@pytest.mark.parametrize("name", names("expansion_pruner"))
@SETTINGS
@given(text=battle_or_played())
def test_expansion_pruner(name, text):
    pruner = make(name, "expansion_pruner")
    s = GameState.from_jfen(text)
    ps = s.paths()
    keep = pruner.keep(s, ps)
    assert isinstance(keep, np.ndarray) and keep.dtype == np.int64 and keep.ndim == 1
    if ps.m >= 1:
        assert len(keep) >= 1
    assert np.all((keep >= 0) & (keep < ps.m))
    assert np.all(np.diff(keep) > 0), "indices must be ascending and unique"


@pytest.mark.parametrize("name", names("expansion_pruner"))
def test_expansion_pruner_layout(name):
    pruner = make(name, "expansion_pruner")
    for s in fixed_layout_states()[:2]:
        ps = s.paths()
        keep = pruner.keep(s, ps)
        assert keep.dtype == np.int64 and np.all((keep >= 0) & (keep < ps.m))


# ============================================================================ capture pruners
def check_victim_sets(state: GameState, path, jump, sets, scores):
    ps = state.paths()
    i = next(j for j in range(ps.m) if ps.path(j) == tuple(path) and bool(ps.jump[j]) == jump)
    left = set(state.victims_left(tuple(path), jump))
    k = min(int(ps.nsq[i]), len(left))
    assert len(sets) >= 1
    assert isinstance(scores, np.ndarray) and scores.dtype == np.float64 and scores.shape == (len(sets),)
    assert np.all(np.isfinite(scores))
    assert np.all(np.diff(scores) <= 1e-12), "scores must be descending (best first)"
    assert len(set(map(tuple, sets))) == len(sets), "duplicate victim sets"
    for v in sets:
        v = tuple(v)
        assert len(v) == k and all(p in left for p in v) and list(v) == sorted(set(v))
        state.check_move(Move(tuple(path), jump, v))  # raises if the full move is illegal


@pytest.mark.parametrize("name", names("capture_pruner"))
@SETTINGS
@given(text=battle_or_played(), seed=st.integers(0, 2**31))
def test_capture_pruner(name, text, seed):
    pruner = make(name, "capture_pruner")
    s = GameState.from_jfen(text)
    ps = s.paths()
    if ps.m == 0:
        return
    rng = random.Random(seed)
    forming = [i for i in range(ps.m) if ps.nsq[i] > 0]
    other = [i for i in range(ps.m) if ps.nsq[i] == 0]
    chosen = rng.sample(forming, min(2, len(forming))) + rng.sample(other, min(1, len(other)))
    for i in chosen:
        path, jump = ps.path(i), bool(ps.jump[i])
        sets, scores = pruner.candidates(s, path, jump)
        check_victim_sets(s, path, jump, sets, scores)
        # From the position after the path (the search's view): the same sets and scores.
        k = len(sets[0])
        after_sets, after_scores = pruner.candidates_after(after_path(s, path, jump, k), k)
        assert [tuple(v) for v in after_sets] == [tuple(v) for v in sets]
        assert np.array_equal(after_scores, scores)


# ============================================================================ layout priors
@pytest.mark.parametrize("name", names("layout_prior"))
@SETTINGS
@given(text=layout_positions())
def test_layout_prior(name, text):
    prior = make(name, "layout_prior")
    s = GameState.from_jfen(text)
    p = prior.prior(s)
    assert isinstance(p, np.ndarray) and p.dtype == np.float32 and p.shape == (NUM_POINTS,)
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    legal = np.zeros(NUM_POINTS, bool)
    legal[s.placements()] = True
    assert np.all(p[~legal] == 0)
    assert float(p[legal].sum(dtype=np.float64)) == pytest.approx(1.0, abs=1e-5)


# ============================================================================ battle priors
@pytest.mark.parametrize("name", names("battle_prior"))
@SETTINGS
@given(text=st.one_of(battle_boards(), played_positions()))
def test_battle_prior(name, text):
    prior = make(name, "battle_prior")
    s = GameState.from_jfen(text)
    if s.phase != PHASE_BATTLE:
        return
    ps = s.paths()
    p = prior.prior(s, ps)
    assert isinstance(p, np.ndarray) and p.dtype == np.float32 and p.shape == (ps.m,)
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    if ps.m:
        assert float(p.sum(dtype=np.float64)) == pytest.approx(1.0, abs=1e-5)


# ============================================================================ evaluators
def check_evaluator(ev, s: GameState):
    scores = [ev.score(s, p) for p in (0, 1)]
    assert all(isinstance(x, float) and math.isfinite(x) for x in scores)
    v = ev.value(s)
    assert isinstance(v, float) and -1.0 <= v <= 1.0 and math.isfinite(v)
    if not s.is_terminal():
        d = scores[s.side] - scores[1 - s.side]
        if d > 1e-9:
            assert v >= 0, (d, v)
        elif d < -1e-9:
            assert v <= 0, (d, v)


@pytest.mark.parametrize("name", names("evaluator"))
@SETTINGS
@given(text=st.one_of(battle_boards(), played_positions(), layout_positions()))
def test_evaluator(name, text):
    ev = make(name, "evaluator")
    s = GameState.from_jfen(text)
    check_evaluator(ev, s)
    if s.phase == PHASE_BATTLE:
        check_evaluator(ev, flip_side(s))


# ============================================================================ rewards
@pytest.mark.parametrize("name", names("reward"))
def test_reward(name):
    reward = make(name, "reward")
    layout_end = fixed_layout_states()[-1]
    battle = fixed_battle_states()[2]
    for s in (layout_end, battle):
        r = reward.rewards(s, seed=1)
        assert isinstance(r, tuple) and len(r) == 2
        assert all(isinstance(x, float) and -1.0 <= x <= 1.0 for x in r), r


# ============================================================================ agents
@pytest.mark.parametrize("name", names("agent"))
def test_agent(name):
    agent = make(name, "agent")
    layouts = fixed_layout_states()
    for s in [layouts[0], layouts[1], layouts[-1]] + fixed_battle_states():
        move = agent.select(s)
        assert isinstance(move, Move)
        s.check_move(move)  # raises IllegalMoveError with the reason
        assert isinstance(agent.last_think_time, float) and agent.last_think_time >= 0
    close = getattr(agent, "close", None)
    if close is not None:
        close()


def test_every_kind_is_known():
    """Registered names of every kind come back sorted; unknown names raise KeyError."""
    for kind in PROTOCOLS:
        found = REGISTRY.names(kind)
        assert found == sorted(found)
    with pytest.raises(KeyError, match="available"):
        REGISTRY.create("prune.no-such-plugin", "expansion_pruner")
