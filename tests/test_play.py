"""The move-application kernel (``core.play``) against the pure-Python reference, and the search
tree's positions against ``GameState.apply`` (both made by that kernel, one by the tree's own path).

Naive reference of the incremental hash: the full Zobrist sum over the board (:func:`_naive_hash`).
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import GameState, Ruleset
from core.board import NUM_POINTS
from core.notation import Move
from core.play import play, take_stones
from core.zobrist import ZOBRIST_BATTLE, ZOBRIST_BLACK_TO_MOVE, ZOBRIST_STONE
from nets.evaluator import UniformEvaluator
from search.mcts import Search, SearchConfig
from search.tree import EXPANDED
from tests import reference as ref
from tests.strategies import battle_boards, layout_positions, played_positions, rulesets

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _naive_hash(board, side: int, phase: int) -> int:
    h = 0
    for p in range(NUM_POINTS):
        if board[p]:
            h ^= int(ZOBRIST_STONE[p, board[p] - 1])
    return h ^ (int(ZOBRIST_BLACK_TO_MOVE) if side else 0) ^ (int(ZOBRIST_BATTLE) if phase else 0)


def _check_position(state: GameState) -> None:
    assert state.hash == _naive_hash(state.board, state.side, state.phase), state.to_jfen()
    assert state.counts == (int((state.board == 1).sum()), int((state.board == 2).sum())), state.to_jfen()


@SETTINGS
@given(st.one_of(battle_boards(), played_positions(), layout_positions()), rulesets(), st.integers(0, 2**32 - 1))
def test_play_matches_the_reference_and_a_full_rehash(jfen, rules, seed):
    """Every move class (placement, step, flight, jump chain, square victims): the kernel's board,
    side, phase, quiet and ply are the reference's, its hash the full rehash, its counts the board's."""
    state = GameState.from_jfen(jfen, rules)
    if state.is_terminal():
        return
    pos = ref.parse_jfen(jfen)
    moves = state.legal_moves() if state.count_moves() <= 3000 else []
    for move in random.Random(seed).sample(moves, min(len(moves), 6)):
        child = state._play(move)
        assert child.to_jfen() == ref.to_jfen(ref.apply_move(pos, str(move), rules)), (jfen, str(move))
        _check_position(child)
        want = [child.hash] if child.phase == 1 and (state.phase == 0 or child.counts != state.counts) else \
            [*state.history.tolist(), child.hash] if child.phase == 1 else []
        assert child.history.tolist() == want


def test_the_196th_placement_starts_the_battle():
    """Layout to battle (rule book 2.4): centre stones removed, 97 each, Black to move, hash rehashed."""
    rng = random.Random(5)
    s = GameState.initial()
    while s.phase == 0:
        s = s._play(Move((rng.choice(s.placements()),)))
        _check_position(s)
    assert s.counts == (97, 97) and s.side == 1 and s.ply == NUM_POINTS and s.quiet == 0
    assert s.history.tolist() == [s.hash]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 4), st.integers(0, 1))
def test_pending_victims_then_take_stones_equal_playing_them_at_once(seed, n, side):
    """``play`` with ``pending`` then ``take_stones`` (the search's lazy victims) gives the same position,
    hash and quiet count as ``play`` with the victims."""
    rng = np.random.default_rng(seed)
    board = rng.integers(0, 3, NUM_POINTS).astype(np.int8)
    o = int(rng.choice(np.flatnonzero(board == side + 1))) if (board == side + 1).any() else 0
    board[o] = side + 1
    d = int(rng.choice(np.flatnonzero(board == 0)))
    victims = np.sort(rng.choice(np.flatnonzero(board == 2 - side), n, replace=False)).astype(np.int16)
    counts = np.array([(board == 1).sum(), (board == 2).sum()], np.int64)
    h = np.uint64(_naive_hash(board, side, 1))
    path = np.array([o, d], np.int16)
    b1, c1 = board.copy(), counts.copy()
    r1 = play(b1, c1, side, 1, 7, 300, h, path, False, victims, 0)
    b2, c2 = board.copy(), counts.copy()
    r2 = play(b2, c2, side, 1, 7, 300, h, path, False, victims[:0], n)
    h2 = take_stones(b2, c2, 1 - side, victims, np.uint64(r2[4]))
    assert np.array_equal(b1, b2) and np.array_equal(c1, c2) and int(r1[4]) == int(h2)
    assert r1[:4] == r2[:4] and int(h2) == _naive_hash(b1, 1 - side, 1)
    assert r1[2] == (0 if n else 8) and r1[5] == n


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(played_positions(), layout_positions()), st.integers(0, 3))
def test_every_expanded_child_is_its_parent_after_its_move(jfen, seed):
    """After a search, each expanded node's children hold ``parent.apply(move)``: board, side, phase,
    counts, quiet, ply and hash (the tree applies moves in a kernel, with victims chosen lazily)."""
    root = GameState.from_jfen(jfen, Ruleset())
    if root.is_terminal():
        return
    with Search(UniformEvaluator(), SearchConfig(simulations=60, seed=seed, reuse_tree=False)) as search:
        search.run(root)
        tree = search.tree
        states = {0: root}
        order = [0]
        checked = 0
        while order:
            n = order.pop()
            if tree.flag[n] != EXPANDED:
                continue
            first, k = int(tree.first_child[n]), int(tree.n_children[n])
            for c in range(first, first + k):
                if tree.pending[c] > 0:
                    continue  # victims not chosen yet: the child is not a position
                move = search._move_of(c)
                want = states[n].apply(move)
                assert np.array_equal(tree.board[c], want.board), (jfen, str(move))
                assert (int(tree.side[c]), int(tree.phase[c]), int(tree.quiet[c]), int(tree.ply[c])) == \
                    (want.side, want.phase, want.quiet, want.ply)
                assert tuple(int(x) for x in tree.counts[c]) == want.counts
                assert int(tree.hash[c]) == want.hash
                states[c] = want
                order.append(c)
                checked += 1
        assert checked >= 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(battle_boards(), played_positions()), rulesets(), st.integers(0, 2**32 - 1))
def test_after_path_then_take_is_the_state_after_the_move(jfen, rules, seed):
    """``search.victims``: the position after a path with its victims pending, then the victims taken,
    is ``GameState._play`` of the whole move in every field (history and last move included)."""
    from search.victims import after_path, take

    state = GameState.from_jfen(jfen, rules)
    if state.is_terminal() or state.count_moves() > 3000:
        return
    moves = [m for m in state.legal_moves() if m.victims]
    for move in random.Random(seed).sample(moves, min(len(moves), 4)):
        got = take(after_path(state, move.path, move.jump, len(move.victims)), move.path, move.jump, move.victims)
        want = state._play(move)
        assert got == want and got.hash == want.hash and got.counts == want.counts
        assert (got.quiet, got.ply, got.last_move) == (want.quiet, want.ply, want.last_move)
        assert got.history.tolist() == want.history.tolist()
