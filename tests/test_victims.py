"""The one square-victim choice (``search.victims``) without a capture pruner: the lower net scores every
set of the opponent's stones (JFA Table 5, "no capture pruning"), checked against brute force."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings

from core.state import GameState
from search.victims import MAX_ALL_SETS, after_path, all_victim_sets, choose_victims
from tests.strategies import played_positions


class PointSumScorer:
    """A stand-in lower net: Q of a position = minus the sum of the victims' side's remaining points, so
    the best set is the one with the highest points (known by brute force)."""

    def q_values(self, states_after, upper_actions):
        return np.array([-float(np.flatnonzero(s.board == s.side + 1).sum()) for s in states_after])


def _square_paths(state: GameState):
    ps = state.paths()
    return [(ps.path(i), bool(ps.jump[i]), int(ps.nsq[i])) for i in range(ps.m) if ps.nsq[i] > 0]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=played_positions())
def test_without_a_pruner_the_lower_net_scores_every_set(text):
    state = GameState.from_jfen(text)
    if state.phase != 1 or state.is_terminal():
        return
    for path, jump, squares in _square_paths(state)[:3]:
        hops = len(path) - 1 if jump else 0
        count = min(squares, state.counts[1 - state.side] - hops)
        if count <= 0:
            continue
        after = after_path(state, path, jump, count)
        stones = [int(p) for p in np.flatnonzero(after.board == after.side + 1)]
        sets = all_victim_sets(after, count)
        brute = list(itertools.combinations(stones, count))
        if len(brute) > MAX_ALL_SETS:
            assert sets == []
            continue
        assert sets == brute
        # The stand-in net's best set: the victims' side's highest points.
        choice = choose_victims(after, path, jump, count, pruner=None, scorer=PointSumScorer(), limit=1)
        assert choice.victims == tuple(sorted(stones)[-count:]) and choice.n_candidates == len(brute)
        # Without a net: the lowest points, deterministic.
        assert choose_victims(after, path, jump, count).victims == tuple(sorted(stones)[:count])
