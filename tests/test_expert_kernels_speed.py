"""The expert's battle kernels (``knowledge/expert_kernels.py``) return bit for bit what the frozen
pre-change copy (``tests/reference_expert_kernels.py``) returns: same arrays, same dtype, same order,
on battle positions reached by seeded random play under drawn rulesets."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.playout import random_game_moves
from core.state import GameState
from knowledge import expert_kernels as new
from knowledge.pruning_kernels import path_levels
from tests import reference_expert_kernels as ref
from tests.strategies import rulesets


def _battle_position(seed: int, depth: float, ruleset) -> GameState | None:
    """The battle position ``depth`` (0..1) of the way through the seeded random game's battle, or None."""
    moves, _, _ = random_game_moves(seed, ruleset.vector)
    s = GameState.initial(ruleset)
    states = []
    for m in moves:
        s = s._play(m)
        if s.phase != 0 and not s.is_terminal() and s.paths().m > 0:
            states.append(s)
    if not states:
        return None
    return states[min(len(states) - 1, int(depth * len(states)))]


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**31 - 1), depth=st.floats(0.0, 1.0), ruleset=rulesets(),
       k_full=st.sampled_from([4, 64]), top=st.integers(1, 10), replies=st.sampled_from([3, 48]),
       margin=st.sampled_from([0.0, 2.0, math.inf]), weights=st.sampled_from(["default", "scaled", "negative"]))
def test_new_kernels_equal_the_frozen_reference(seed, depth, ruleset, k_full, top, replies, margin, weights):
    """Also with other weights: scaled by non-integers (other float roundings under the leaf bounds),
    and with negative gate and threat weights (no leaf bound applies)."""
    state = _battle_position(seed, depth, ruleset)
    if state is None:
        return
    side = state.side
    n_own, n_opp = int(state.counts[side]), int(state.counts[1 - side])
    rules = state.ruleset.vector
    ps = state.paths()
    w = np.array(ref.BATTLE_WEIGHTS)
    ew = np.array(ref.EVAL_WEIGHTS)
    if weights == "scaled":
        w *= np.linspace(0.7, 1.3, w.shape[0])
        ew *= np.array([1.1, 0.9, 1.7, 1.0])
    elif weights == "negative":
        w[ref.S_GATE] = -1.5
        ew[ref.E_MY_THREAT] = -2.0
    levels = path_levels(state.board, side, n_own, n_opp, ps.pts, ps.off, ps.nsq, ps.jump, ps.m)
    args = (state.board, side, n_own, n_opp, rules, ps.pts, ps.off, ps.nsq, ps.jump, ps.m)
    one_old, full_old = ref.battle_scores(*args, levels, w, k_full)
    one_new, full_new = new.battle_scores(*args, levels, w, k_full)
    assert _same(one_old, one_new) and _same(full_old, full_new)
    assert _same(ref.refine_scores(*args, one_old, w, ew, top, replies, margin),
                 new.refine_scores(*args, one_old, w, ew, top, replies, margin))
    old_two = ref.search_scores(*args, levels, w, ew, k_full, top, replies, margin)
    new_two = new.search_scores(*args, levels, w, ew, k_full, top, replies, margin)
    assert _same(old_two[0], new_two[0]) and _same(old_two[1], new_two[1])
    for who in (side, 1 - side):
        a, b = int(state.counts[who]), int(state.counts[1 - who])
        assert _same(ref.leaf_value(state.board, who, a, b, rules, w, ew),
                     new.leaf_value(state.board, who, a, b, rules, w, ew))
