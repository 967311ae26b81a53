"""``GameState.legal_moves()`` as a lazy ``MoveList``: the same moves, in the same order, whether
indexed (victim sets unranked one at a time) or iterated (listed per path), as the naive sort of every
full move by its notation (``tests/reference.py`` checks the list itself in ``test_differential``)."""

from __future__ import annotations

import random
from itertools import combinations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import GameState
from core.notation import Move
from tests.strategies import battle_boards, layout_positions, played_positions, rulesets


def _naive(state: GameState) -> list[str]:
    """Every full move built one by one and sorted by notation (the old ``legal_moves``)."""
    if state.phase == 0:
        return sorted(str(Move((p,))) for p in state.placements())
    ps = state.paths()
    out = []
    for i in range(ps.m):
        path, jump = ps.path(i), bool(ps.jump[i])
        left = state.victims_left(path, jump)
        k = min(int(ps.nsq[i]), len(left))
        out.extend(str(Move(path, jump, v)) for v in combinations(left, k))
    return sorted(out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(battle_boards(), played_positions(), layout_positions()), rulesets(), st.integers(0, 2**32 - 1))
def test_indexing_and_iteration_give_the_sorted_full_list(jfen, rules, seed):
    state = GameState.from_jfen(jfen, rules)
    if state.count_moves() > 20000:
        return
    want = _naive(state)
    moves = state.legal_moves()
    assert len(moves) == len(want) == state.count_moves()
    rng = random.Random(seed)
    for j in rng.sample(range(len(want)), min(len(want), 50)) + ([0, -1] if want else []):
        assert str(state.legal_moves()[j]) == want[j], (jfen, j)  # a fresh list: unranked, nothing cached
    assert [str(m) for m in moves] == want
    assert [str(m) for m in moves[5:40:3]] == want[5:40:3]
    assert moves == list(moves) and (not want or moves[0] in moves)
