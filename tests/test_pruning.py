"""Tests of the pruning kernels (knowledge/pruning_kernels.py) and the pruning plugins (knowledge/pruning.py).

The naive references below take the legal paths from ``GameState.legal_paths`` (strings parsed with
``parse_move``) and do everything else with plain loops on (column, row) coordinates: squares,
Table 1 levels, Table 2 scores (Ns, Ne, Destroyable) and Eq. 7-9. They use none of the pruning
kernels and none of the board tables.
"""

from __future__ import annotations

import math
import pickle
import random
from itertools import combinations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.board import NUM_POINTS, PHASE_BATTLE, POINT_NAMES
from core.jfen import format_jfen
from core.notation import Move, parse_move
from knowledge.pruning_kernels import (
    action_scores,
    best_level_indices,
    can_form_square,
    capture_score,
    path_levels,
    potential,
    victim_set_scores,
)
from core.rules import Ruleset
from core.shapes import dalians, find_dalians
from core.state import GameState
from knowledge.pruning import CapturePruner, ExpansionPruner, best_victims
from knowledge.plugins import REGISTRY
from tests.strategies import battle_boards, played_positions, rulesets, shuffle_to_a_draw

N = 14
TABLE2 = {  # (Ns >= 1, Ne >= 2, destroyable) -> score, JFA Table 2
    (False, False, True): 2.0, (True, False, True): 4.5, (False, False, False): 2.5, (True, False, False): 9.5,
    (False, True, True): 3.0, (True, True, True): 4.5, (False, True, False): 4.0, (True, True, False): 9.5,
}


def pt(c: int, r: int) -> int:
    return r * N + c


def cr(p: int) -> tuple[int, int]:
    return p % N, p // N


# ============================================================================ naive references
def ref_squares_containing(board, p: int, stone: int) -> int:
    """Cells containing point p whose 4 corners all hold ``stone``."""
    c, r = cr(p)
    n = 0
    for c0 in (c - 1, c):
        for r0 in (r - 1, r):
            if 0 <= c0 < N - 1 and 0 <= r0 < N - 1:
                if all(board[pt(c0 + dc, r0 + dr)] == stone for dc in (0, 1) for dr in (0, 1)):
                    n += 1
    return n


def relaxed(ruleset: Ruleset) -> Ruleset:
    """The same move rules with no stone-count loss and no ply cap (a fresh model, so that the cached
    ``vector`` is rebuilt)."""
    return Ruleset(**{**ruleset.model_dump(), "loss_below": 1, "max_battle_plies": 1000})


def ref_paths(board, side: int, counts, ruleset: Ruleset):
    """[(path points, jump)] of ``side`` as if to move with ``counts`` (White, Black), from
    GameState.legal_paths (no terminal check: loss_below=1, battle ply 0)."""
    rs = relaxed(ruleset)
    # A count of 0 would end the game (rule book 3.4); 1 moves the same (both fly, both <= 14).
    counts = tuple(max(int(c), 1) for c in counts)
    s = GameState(board, side, PHASE_BATTLE, 0, NUM_POINTS, rs, counts=counts)
    out = []
    for text in s.legal_paths():
        mv = parse_move(text)
        out.append((mv.path, mv.jump))
    return out


def after_path(board, side: int, path, jump: bool) -> np.ndarray:
    b = np.array(board, np.int8)
    b[path[0]] = 0
    if jump:
        for a, c in zip(path, path[1:]):
            b[(a + c) // 2] = 0
    b[path[-1]] = side + 1
    return b


def ref_level(board, side: int, path, jump: bool) -> int:
    me = side + 1
    in_sq = ref_squares_containing(board, path[0], me) > 0
    formed = ref_squares_containing(after_path(board, side, path, jump), path[-1], me) > 0
    if formed:
        return 1 if (not jump and in_sq) else 2
    if jump or in_sq:
        return 3
    return 4


def ref_opponent_can_form(board_after, opp_side: int, n_opp_after: int, n_me: int, ruleset: Ruleset) -> bool:
    """The opponent (to move in the position after the path) has a square-forming legal path."""
    if n_opp_after <= 0 or n_opp_after < ruleset.loss_below:
        return False
    counts = (n_opp_after, n_me) if opp_side == 0 else (n_me, n_opp_after)
    for path, jump in ref_paths(board_after, opp_side, counts, ruleset):
        b = after_path(board_after, opp_side, path, jump)
        if ref_squares_containing(b, path[-1], opp_side + 1) > 0:
            return True
    return False


def ref_action_scores(board, side: int, n_own: int, n_opp: int, ruleset: Ruleset) -> np.ndarray:
    """JFA Eq. 7 with Table 2, by plain loops (see knowledge/pruning_kernels.py for the definitions)."""
    me = side + 1
    counts = (n_own, n_opp) if side == 0 else (n_opp, n_own)
    out = np.zeros(NUM_POINTS)
    for path, jump in ref_paths(board, side, counts, ruleset):
        b = after_path(board, side, path, jump)
        ne = ref_squares_containing(b, path[-1], me)
        if ne == 0:
            continue
        ns = ref_squares_containing(board, path[0], me)
        hops = len(path) - 1 if jump else 0
        left = n_opp - hops
        destroy = ref_opponent_can_form(b, 1 - side, left - min(ne, left), n_own, ruleset)
        out[path[-1]] = max(out[path[-1]], TABLE2[(ns >= 1, ne >= 2, destroy)])
    return out


def kernel_levels(state: GameState) -> dict[str, int]:
    ps = state.paths()
    s = state.side
    lv = path_levels(state.board, s, state.counts[s], state.counts[1 - s], ps.pts, ps.off, ps.nsq, ps.jump, ps.m)
    return {ps.path_str(i): int(lv[i]) for i in range(ps.m)}


def with_loss_below_1(text: str, ruleset: Ruleset) -> GameState:
    return GameState.from_jfen(text, relaxed(ruleset))


# ============================================================================ differential tests
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(st.one_of(battle_boards(), played_positions()), rulesets())
def test_path_levels_match_reference(text, ruleset):
    s = with_loss_below_1(text, ruleset)
    got = kernel_levels(s)
    for pstr, level in got.items():
        mv = parse_move(pstr)
        assert level == ref_level(s.board, s.side, mv.path, mv.jump), pstr


@SETTINGS
@given(st.one_of(battle_boards(), played_positions()), rulesets(), st.integers(0, 1))
def test_action_scores_match_reference(text, ruleset, side):
    s = GameState.from_jfen(text, ruleset)
    n_own, n_opp = s.counts[side], s.counts[1 - side]
    got = action_scores(s.board, side, n_own, n_opp, ruleset.vector)
    want = ref_action_scores(s.board, side, n_own, n_opp, ruleset)
    assert got.dtype == np.float64 and got.shape == (NUM_POINTS,)
    np.testing.assert_array_equal(got, want)
    assert potential(s.board, side, n_own, n_opp, ruleset.vector) == pytest.approx(want.sum())


@SETTINGS
@given(st.one_of(battle_boards(), played_positions()), rulesets(), st.integers(0, 1))
def test_can_form_square_matches_reference(text, ruleset, side):
    s = GameState.from_jfen(text, relaxed(ruleset))
    n_own, n_opp = s.counts[side], s.counts[1 - side]
    if n_own == 0:
        return
    counts = (n_own, n_opp) if side == 0 else (n_opp, n_own)
    want = any(
        ref_squares_containing(after_path(s.board, side, p, j), p[-1], side + 1) > 0
        for p, j in ref_paths(s.board, side, counts, ruleset)
    )
    assert can_form_square(s.board, side, n_own, n_opp, ruleset.vector) == want


@pytest.mark.parametrize("revisit", ["forbid", "allow"])
def test_can_form_square_finds_a_jump_loop_back_to_the_origin(revisit):
    """The only square-forming path is a jump chain that returns to its origin (a revisit), where the
    stone completes its cell again: a case random boards almost never produce."""
    board = np.zeros(NUM_POINTS, np.int8)
    for c, r in ((4, 4), (5, 4), (4, 5), (5, 5)):
        board[pt(c, r)] = 1  # White's full cell; the origin is (5, 5)
    for c, r in ((6, 5), (7, 6), (6, 7), (5, 6)):
        board[pt(c, r)] = 2  # Black stones around the loop (5,5)->(7,5)->(7,7)->(5,7)->(5,5)
    for c in range(0, 14, 1):
        board[pt(c, 12)] = 1  # more White stones, none completing a cell: White does not fly
    for c in range(0, 14, 2):
        board[pt(c, 0)] = 2
    ruleset = Ruleset(chain_revisit=revisit, fly_jump_rule="all-multi")
    n_own, n_opp = int((board == 1).sum()), int((board == 2).sum())
    want = any(ref_squares_containing(after_path(board, 0, p, j), p[-1], 1) > 0
               for p, j in ref_paths(board, 0, (n_own, n_opp), ruleset))
    assert want == (revisit == "allow")
    assert can_form_square(board, 0, n_own, n_opp, ruleset.vector) == want


@pytest.mark.parametrize("fly_rule", ["strong-side-multi", "none"])
def test_can_form_square_single_hop_into_a_hole_only_when_one_hop_is_allowed(fly_rule):
    """White's only square-forming path is one hop onto its hole (the shortcut in ``can_form_square``);
    with White over 14 stones and Black at most 14, ``strong-side-multi`` requires 2 hops, so White
    cannot form a square there."""
    board = np.zeros(NUM_POINTS, np.int8)
    for c, r in ((4, 4), (5, 4), (4, 5)):
        board[pt(c, r)] = 1  # White's hole at (5, 5)
    board[pt(6, 5)] = 2  # the Black stone to jump
    board[pt(7, 5)] = 1  # the jumper
    for c in range(14):
        board[pt(c, 12)] = 1  # White does not fly (18 stones), no other hole
    for c in range(0, 14, 2):
        board[pt(c, 0)] = 2  # Black flies (8 stones)
    ruleset = Ruleset(fly_jump_rule=fly_rule)
    n_own, n_opp = int((board == 1).sum()), int((board == 2).sum())
    want = any(ref_squares_containing(after_path(board, 0, p, j), p[-1], 1) > 0
               for p, j in ref_paths(board, 0, (n_own, n_opp), ruleset))
    assert want == (fly_rule == "none")
    assert can_form_square(board, 0, n_own, n_opp, ruleset.vector) == want


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(played_positions(), st.integers(0, 2**31))
def test_capture_scores_are_eq9_of_the_position_after(text, seed):
    """victim_set_scores == capture_score of the board after the whole move == f(p) - 1.5 f(o)."""
    s = GameState.from_jfen(text)
    ps = s.paths()
    rng = random.Random(seed)
    idx = [i for i in range(ps.m) if ps.nsq[i] > 0]
    if not idx:
        return
    i = rng.choice(idx)
    path, jump = ps.path(i), bool(ps.jump[i])
    left = s.victims_left(path, jump)
    k = min(int(ps.nsq[i]), len(left))
    victims = tuple(sorted(rng.sample(left, k)))
    me, rules = s.side, s.ruleset.vector
    b_path = after_path(s.board, me, path, jump)
    got = victim_set_scores(b_path, me, s.counts[me], len(left), rules, np.array([victims], np.int16).reshape(1, k))
    child = b_path.copy()
    child[list(victims)] = 0
    n_opp = len(left) - k
    direct = capture_score(child, me, s.counts[me], n_opp, rules)
    f_me = ref_action_scores(child, me, s.counts[me], n_opp, s.ruleset).sum()
    f_op = ref_action_scores(child, 1 - me, n_opp, s.counts[me], s.ruleset).sum()
    assert got[0] == pytest.approx(direct)
    assert direct == pytest.approx(f_me - 1.5 * f_op)


# ============================================================================ hand-built positions
def board_from(white, black) -> np.ndarray:
    b = np.zeros(NUM_POINTS, np.int8)
    for c, r in white:
        b[pt(c, r)] = 1
    for c, r in black:
        b[pt(c, r)] = 2
    return b


# Filler stones far from the action, no squares, no jumps, so both sides have > 14 stones.
WHITE_FILL = [(c, 12) for c in range(0, 14, 2)] + [(c, 10) for c in range(1, 14, 2)]
BLACK_FILL = [(c, 0) for c in range(0, 14, 2)] + [(c, 0) for c in range(9, 14, 2)] + [(c, 13) for c in range(1, 14, 2)]


def state_of(white, black, side=0, ruleset: Ruleset | None = None) -> GameState:
    b = board_from(list(white) + WHITE_FILL, list(black) + BLACK_FILL)
    return GameState.from_jfen(format_jfen(b, side, PHASE_BATTLE, 0, NUM_POINTS), ruleset or Ruleset())


def levels_by_name(s: GameState) -> dict[str, int]:
    return kernel_levels(s)


# Flat Dalian (rule book section 5): square on cell c3 (c3 d3 c4 d4), square c5-d6 missing c5:
# c4 -> c5 re-forms the upper square.
DALIAN_WHITE = [(2, 2), (3, 2), (2, 3), (3, 3), (3, 4), (2, 5), (3, 5)]


def test_dalian_shuttle_is_level_1_and_expansion_keeps_only_level_1():
    s = state_of(DALIAN_WHITE, [])
    assert ("c4", "c5", "flat") in dalians(s)
    lv = levels_by_name(s)
    assert lv["c4-c5"] == 1
    ps = s.paths()
    keep = REGISTRY.create("prune.expansion").keep(s, ps)
    assert keep.dtype == np.int64 and len(keep) >= 1
    kept = {ps.path_str(int(i)) for i in keep}
    assert "c4-c5" in kept
    assert all(lv[p] == 1 for p in kept)
    assert kept == {p for p, v in lv.items() if v == 1}
    # The Dalian pairs of the kernel are exactly the level-1 steps.
    stones, empties, _ = find_dalians(s.board, 0)
    assert {f"{POINT_NAMES[a]}-{POINT_NAMES[b]}" for a, b in zip(stones, empties)} == kept


def test_square_forming_step_is_level_2():
    # c3 d3 c4 white, e4 steps to d4 and forms the square on cell c3; e4 is in no square.
    s = state_of([(2, 2), (3, 2), (2, 3), (4, 3)], [])
    lv = levels_by_name(s)
    assert lv["e4-d4"] == 2
    ps = s.paths()
    kept = {ps.path_str(int(i)) for i in ExpansionPruner().keep(s, ps)}
    assert kept == {"e4-d4"}
    # Table 2: Ns = 0, Ne = 1, Black has no square-forming move -> 2.5 at d4.
    a = action_scores(s.board, 0, s.counts[0], s.counts[1], s.ruleset.vector)
    assert a[pt(3, 3)] == 2.5 and a.sum() == 2.5


def test_destroyable_when_the_opponent_can_form_a_square():
    # As above, plus a black hole: j9 k9 j10 black, k10 empty, l10 black steps into it.
    black = [(9, 8), (10, 8), (9, 9), (11, 9)]
    s = state_of([(2, 2), (3, 2), (2, 3), (4, 3)], black)
    a = action_scores(s.board, 0, s.counts[0], s.counts[1], s.ruleset.vector)
    assert a[pt(3, 3)] == 2.0  # Ns = 0, Ne = 1, destroyable
    assert can_form_square(s.board, 1, s.counts[1], s.counts[0], s.ruleset.vector)


def test_dalian_scores_9_5_when_safe():
    s = state_of(DALIAN_WHITE, [])
    a = action_scores(s.board, 0, s.counts[0], s.counts[1], s.ruleset.vector)
    assert a[pt(2, 4)] == 9.5  # Ns = 1 (c4 is in square c3), Ne = 1, not destroyable


def test_double_square_scores():
    # Two squares formed at once by d4 <- e4: cells c3 and c4 (c3 d3 c4 c5 d5), Ns = 0, Ne = 2.
    s = state_of([(2, 2), (3, 2), (2, 3), (2, 4), (3, 4), (4, 3)], [])
    lv = levels_by_name(s)
    assert lv["e4-d4"] == 2
    a = action_scores(s.board, 0, s.counts[0], s.counts[1], s.ruleset.vector)
    assert a[pt(3, 3)] == 4.0


def test_jump_is_level_3_and_expansion_keeps_the_jumps():
    s = state_of([(6, 6)], [(6, 7)])
    lv = levels_by_name(s)
    assert lv["g7xg9"] == 3
    assert lv["g7-f7"] == 4
    ps = s.paths()
    kept = {ps.path_str(int(i)) for i in ExpansionPruner().keep(s, ps)}
    assert kept == {p for p, v in lv.items() if v == 3}
    assert "g7xg9" in kept


def test_opening_a_square_is_level_3():
    s = state_of([(2, 2), (3, 2), (2, 3), (3, 3)], [])
    lv = levels_by_name(s)
    assert lv["c3-b3"] == 3 and lv["d4-e4"] == 3


def test_flight_leaving_a_square_and_forming_another_is_level_1():
    white = [(2, 2), (3, 2), (2, 3), (3, 3), (8, 8), (9, 8), (8, 9)]
    b = board_from(white, [(c, 0) for c in range(14)] + [(c, 13) for c in range(0, 14, 2)])
    s = GameState.from_jfen(format_jfen(b, 0, PHASE_BATTLE, 0, NUM_POINTS))
    assert s.flying(0)
    lv = levels_by_name(s)
    assert lv["c3-j10"] == 1  # leaves square c3, forms square i9
    assert lv["c3-b3"] == 3


def test_best_level_indices():
    assert best_level_indices(np.array([3, 2, 4, 2], np.int8)).tolist() == [1, 3]
    assert best_level_indices(np.empty(0, np.int8)).tolist() == []


def test_expansion_keeps_everything_in_layout():
    s = GameState.initial()
    ps = s.paths()
    assert ExpansionPruner().keep(s, ps).tolist() == list(range(ps.m))


# ============================================================================ capture pruner
def test_capture_pruner_one_victim_high_set():
    s = state_of([(2, 2), (3, 2), (2, 3), (4, 3)], [(9, 8), (10, 8), (9, 9), (11, 9)])
    cp = CapturePruner()
    sets, scores = cp.candidates(s, (pt(4, 3), pt(3, 3)), False)
    left = s.victims_left((pt(4, 3), pt(3, 3)), False)
    assert all(len(v) == 1 and v[0] in left for v in sets)
    assert np.all(np.diff(scores) <= 0)
    all_sets, all_scores = CapturePruner(split="all").candidates(s, (pt(4, 3), pt(3, 3)), False)
    assert len(all_sets) == len(left)
    assert len(sets) < len(all_sets)
    assert np.all(scores >= all_scores.mean() - 1e-9)
    # Taking a stone of Black's hole (so Black can no longer form a square) is the best single.
    assert sets[0][0] in {pt(9, 8), pt(10, 8), pt(9, 9), pt(11, 9)}
    assert best_victims(s, (pt(4, 3), pt(3, 3)), False) == sets[0]


def test_capture_pruner_two_victims_top_20_exact_with_full_pool():
    s = state_of([(2, 2), (3, 2), (2, 3), (2, 4), (3, 4), (4, 3)], [(9, 8), (10, 8), (9, 9), (11, 9)])
    path = (pt(4, 3), pt(3, 3))
    left = s.victims_left(path, False)
    sets, scores = CapturePruner(top=20, pool=len(left)).candidates(s, path, False)
    assert len(sets) == 20 and all(len(v) == 2 and v[0] < v[1] for v in sets)
    assert np.all(np.diff(scores) <= 0)
    # exact: brute force over all C(n, 2) pairs
    b_path = after_path(s.board, 0, path, False)
    pairs = np.array(list(combinations(left, 2)), np.int16)
    brute = victim_set_scores(b_path, 0, s.counts[0], len(left), s.ruleset.vector, pairs)
    assert scores[0] == pytest.approx(brute.max())
    assert scores[-1] == pytest.approx(np.sort(brute)[::-1][19])
    # the default pool (12 best singles) is an approximation but returns legal pairs, best first
    sets30, scores30 = CapturePruner().candidates(s, path, False)
    assert len(sets30) == 20 and scores30[0] <= scores[0] + 1e-9


def test_capture_pruner_cache_changes_no_result():
    """Rankings remembered per position after the path equal fresh ones, are shared read-only, and the
    least recently used one is forgotten beyond ``cache`` entries; a pickled pruner starts empty."""
    s = state_of([(2, 2), (3, 2), (2, 3), (2, 4), (3, 4), (4, 3)], [(9, 8), (10, 8), (9, 9), (11, 9)])
    b = after_path(s.board, 0, (pt(4, 3), pt(3, 3)), False)
    rules = s.ruleset.vector
    cached, fresh = CapturePruner(cache=2), CapturePruner(cache=0)
    first = {k: cached.ranked(b, 0, s.counts[0], k, rules) for k in (2, 1)}
    for k, (sets, scores) in first.items():
        want_sets, want_scores = fresh.ranked(b, 0, s.counts[0], k, rules)
        assert sets.shape[1] == k and np.array_equal(sets, want_sets) and np.array_equal(scores, want_scores)
        assert not sets.flags.writeable and not scores.flags.writeable
        again = cached.ranked(b, 0, s.counts[0], k, rules)
        assert again[0] is sets and again[1] is scores
    cached.ranked(b, 0, s.counts[0], 0, rules)  # a third ranking: the least recently used (k=2) goes
    assert cached.ranked(b, 0, s.counts[0], 1, rules)[0] is first[1][0]
    assert cached.ranked(b, 0, s.counts[0], 2, rules)[0] is not first[2][0]
    assert fresh.ranked(b, 0, s.counts[0], 1, rules)[0] is not fresh.ranked(b, 0, s.counts[0], 1, rules)[0]
    # the protocol's lists are fresh objects each time, equal to the uncached pruner's
    sets, scores = cached.candidates(s, (pt(4, 3), pt(3, 3)), False)
    want_sets, want_scores = fresh.candidates(s, (pt(4, 3), pt(3, 3)), False)
    assert sets == want_sets and np.array_equal(scores, want_scores)
    scores[0] = -1.0  # writable copy: the cache is not changed
    assert cached.candidates(s, (pt(4, 3), pt(3, 3)), False)[1][0] != -1.0
    clone = pickle.loads(pickle.dumps(cached))
    assert (clone.top, clone.pool, clone.split, clone.cache) == (20, 12, "mean", 2) and not clone._cache
    with pytest.raises(ValueError, match="cache"):
        CapturePruner(cache=-1)


def test_capture_pruner_no_square_gives_the_empty_set():
    s = state_of([(6, 6)], [(6, 7)])
    sets, scores = CapturePruner().candidates(s, (pt(6, 6), pt(6, 8)), True)
    assert sets == [()] and scores.shape == (1,) and math.isfinite(scores[0])
    assert best_victims(s, (pt(6, 6), pt(6, 8)), True) == ()


def test_capture_pruner_rejects_illegal_paths_and_options():
    s = state_of([(6, 6)], [(6, 7)])
    with pytest.raises(ValueError, match="not a legal path"):
        CapturePruner().candidates(s, (pt(6, 6), pt(8, 8)), False)
    with pytest.raises(ValueError, match="layout"):
        CapturePruner().candidates(GameState.initial(), (90,), False)
    with pytest.raises(ValueError, match="split"):
        CapturePruner(split="median")
    with pytest.raises(ValueError, match="top"):
        REGISTRY.create("prune.capture:top=0")


def test_capture_pruner_flight_forming_four_squares():
    # White flies (7 stones + the 8 around f6); a flight into f6 forms 4 squares: 4 victims.
    ring = [(4, 4), (5, 4), (6, 4), (4, 5), (6, 5), (4, 6), (5, 6), (6, 6)]
    white = ring + [(12, 12), (10, 12)]
    black = [(c, 0) for c in range(0, 14, 2)] + [(13, 9), (13, 11)]
    b = board_from(white, black)
    s = GameState.from_jfen(format_jfen(b, 0, PHASE_BATTLE, 0, NUM_POINTS))
    assert s.flying(0)
    path = (pt(12, 12), pt(5, 5))
    assert s.legal_paths()["m13-f6"] == 4
    sets, scores = CapturePruner(top=5, pool=6).candidates(s, path, False)
    assert 1 <= len(sets) <= 5 and all(len(v) == 4 and list(v) == sorted(v) for v in sets)
    assert np.all(np.diff(scores) <= 0)
    for v in sets:
        s.check_move(Move(path, False, v))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), top=st.integers(1, 12), plies=st.sampled_from([1, 2]))
def test_expert_pruner_keeps_the_experts_best_paths(data, top, plies):
    """``prune.expert`` keeps the ``top`` paths of highest expert score (lower index on ties), in
    ascending order, checked against a sort of the expert's own scores."""
    from knowledge.agents import ExpertAgent
    from knowledge.pruning import ExpertPruner

    state = GameState.from_jfen(data.draw(played_positions()))
    if state.phase != PHASE_BATTLE or state.is_terminal() or state.paths().m == 0:
        return
    ps = state.paths()
    got = ExpertPruner(top=top, plies=plies).keep(state, ps)
    scores = ExpertAgent(plies=plies).battle_scores(state)[0]
    want = sorted(sorted(range(ps.m), key=lambda i: (-scores[i], i))[:top])
    assert got.dtype == np.int64 and got.tolist() == want
    assert int(np.argmax(scores)) in got.tolist()


def test_expert_pruner_options_and_registration():
    from knowledge.pruning import ExpertPruner

    assert REGISTRY.create("prune.expert:top=3", "expansion_pruner").top == 3
    with pytest.raises(ValueError, match="top"):
        ExpertPruner(top=0)
    with pytest.raises(ValueError, match="plies"):
        ExpertPruner(plies=3)
    state = GameState.initial()
    assert ExpertPruner(top=2).keep(state, state.paths()).tolist() == list(range(state.paths().m))


@pytest.mark.parametrize("behind", [True, False])
def test_expert_pruner_keeps_the_draw_for_the_side_behind_only(behind):
    """With the game's history, ``prune.expert`` ranks a step that ends the game by repetition as the
    expert does: kept (first) for a side behind on stones, dropped for a side ahead."""
    from knowledge.pruning import ExpertPruner

    found = next(filter(None, (shuffle_to_a_draw(40, 30, seed) if behind else shuffle_to_a_draw(30, 40, seed)
                               for seed in range(40))))
    state, draw = found
    assert state.side == 1 and (state.counts[1] < state.counts[0]) == behind
    assert state.apply(Move(state.paths().path(draw))).is_terminal()  # the step draws
    kept = ExpertPruner(top=1).keep(state, state.paths()).tolist()
    assert (kept == [draw]) == behind


# ============================================================================ the expert's threat victims
def ref_threat_victim(board, side: int, ruleset: Ruleset) -> int:
    """The stone of ``side``'s opponent whose removal best defuses its capturing replies: the origin of its
    strongest capture (10 per stone taken, +5 for a step out of one of its squares, +0.01 per capture
    from that origin seen so far, in the move generator's order: the first best wins), or -1."""
    op_side, op = 1 - side, 2 - side
    counts = (int(np.count_nonzero(board == 1)), int(np.count_nonzero(board == 2)))
    ps = GameState(board.copy(), op_side, PHASE_BATTLE, 0, NUM_POINTS, relaxed(ruleset), counts=counts).paths()
    seen: dict[int, float] = {}
    best, victim = 0.0, -1
    for j in range(ps.m):
        path, jump = ps.path(j), bool(ps.jump[j])
        hops = len(path) - 1 if jump else 0
        taken = hops + min(int(ps.nsq[j]), counts[side] - hops)
        if taken <= 0:
            continue
        o = path[0]
        v = 10.0 * taken + (5.0 if not jump and ref_squares_containing(board, o, op) > 0 else 0.0)
        seen[o] = seen.get(o, 0.0) + 0.01
        v += seen[o]
        if v > best:
            best, victim = v, o
    return victim


def ref_shape_victim(board, side: int) -> int:
    """The opponent stone in the most opponent-only cells with 3 or 4 of its stones, each such cell
    counting (its stones - 2); the lowest point on ties; -1 when the opponent has no stone."""
    op = 2 - side
    value = np.zeros(NUM_POINTS)
    for c0 in range(N - 1):
        for r0 in range(N - 1):
            corners = [pt(c0 + dc, r0 + dr) for dc in (0, 1) for dr in (0, 1)]
            mine = sum(board[q] == side + 1 for q in corners)
            theirs = sum(board[q] == op for q in corners)
            if mine == 0 and theirs >= 3:
                for q in corners:
                    if board[q] == op:
                        value[q] += theirs - 2
    stones = [p for p in range(NUM_POINTS) if board[p] == op]
    return max(stones, key=lambda p: (value[p], -p)) if stones else -1


def ref_threat_victims(after, side: int, k: int, ruleset: Ruleset) -> tuple[tuple[int, ...], int]:
    """The expert's ``k`` victims on the board ``after`` the path: threat victims while there are
    threats, then shape victims; ``(ascending victims, how many parried a threat)``."""
    b = np.array(after, np.int8)
    out, n_threat = [], 0
    for _ in range(k):
        victim = ref_threat_victim(b, side, ruleset)
        if victim >= 0:
            n_threat += 1
        else:
            victim = ref_shape_victim(b, side)
        if victim < 0:
            break
        b[victim] = 0
        out.append(victim)
    return tuple(sorted(out)), n_threat


def _square_forming(state: GameState, limit: int = 6):
    ps = state.paths()
    idx = [i for i in range(ps.m) if ps.nsq[i] > 0]
    return [(ps.path(i), bool(ps.jump[i]), int(ps.nsq[i])) for i in idx[:limit]]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=played_positions())
def test_threat_victims_match_the_reference(text):
    from knowledge.expert_kernels import threat_victims, threat_victims_after

    state = GameState.from_jfen(text)
    if state.phase != PHASE_BATTLE or state.is_terminal():
        return
    s = state.side
    for path, jump, nsq in _square_forming(state):
        after = after_path(state.board, s, path, jump)
        n_opp = int(np.count_nonzero(after == 2 - s))
        k = min(nsq, n_opp)
        want = ref_threat_victims(after, s, k, state.ruleset)
        got, n_threat = threat_victims(state.board, s, state.counts[s], state.counts[1 - s], state.ruleset.vector,
                                       np.asarray(path, np.int16), jump, k)
        assert (tuple(int(v) for v in got), int(n_threat)) == want
        got, n_threat = threat_victims_after(after, s, state.counts[s], n_opp, state.ruleset.vector, k)
        assert (tuple(int(v) for v in got), int(n_threat)) == want


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=played_positions())
def test_threat_pruner_puts_the_experts_parrying_set_first(text):
    """``prune.threat``: the reference's threat set first when all its victims parried a threat, else
    ``prune.capture``'s order; the same sets as ``prune.capture`` plus that one; the same from the
    position after the path; each set scored by Eq. 9 (``victim_set_scores``), the first at least as
    high as the best of the others."""
    from search.victims import after_path as after_state

    state = GameState.from_jfen(text)
    if state.phase != PHASE_BATTLE or state.is_terminal():
        return
    threat, capture = REGISTRY.create("prune.threat", "capture_pruner"), CapturePruner()
    s = state.side
    for path, jump, nsq in _square_forming(state):
        base_sets, base_scores = capture.candidates(state, path, jump)
        sets, scores = threat.candidates(state, path, jump)
        k = len(base_sets[0])
        after = after_path(state.board, s, path, jump)
        first, n_threat = ref_threat_victims(after, s, k, state.ruleset)
        if k > 0 and n_threat > 0 and len(first) == k:
            assert sets[0] == first
            assert set(sets) == set(base_sets) | {first} and len(sets) == len(set(sets))
        else:
            assert sets == base_sets and np.array_equal(scores, base_scores)
        n_opp = int(np.count_nonzero(after == 2 - s))
        want = victim_set_scores(after, s, state.counts[s], n_opp, state.ruleset.vector, np.asarray(sets, np.int16).reshape(len(sets), k))
        want[0] = max(want[0], want.max())
        assert np.allclose(scores, want)
        assert threat.candidates_after(after_state(state, path, jump, k), k)[0] == sets


def test_threat_victims_match_the_reference_in_expert_games():
    """The same on positions of real games (``data/heldout-expert``), where captures parry threats: 60
    battle positions with two or more legal paths, drawn (seeded) from the first 6 games."""
    from knowledge.expert_kernels import threat_victims
    from train.learning.diagnose import HELDOUT_RECORDS
    from train.learning.supervised import read_records, record_files

    records = read_records(record_files([HELDOUT_RECORDS])[:6], Ruleset(max_battle_plies=300, adjudicate="stones"))
    states = [s for r in records for s in r.replay()[:-1] if s.phase == 1 and s.paths().m > 1]
    drawn = np.sort(np.random.default_rng(3).choice(len(states), min(60, len(states)), replace=False))
    checked = parried = 0
    for state in (states[i] for i in drawn):
        s = state.side
        for path, jump, nsq in _square_forming(state, 2):
            after = after_path(state.board, s, path, jump)
            k = min(nsq, int(np.count_nonzero(after == 2 - s)))
            want = ref_threat_victims(after, s, k, state.ruleset)
            got, n_threat = threat_victims(state.board, s, state.counts[s], state.counts[1 - s], state.ruleset.vector,
                                           np.asarray(path, np.int16), jump, k)
            assert (tuple(int(v) for v in got), int(n_threat)) == want
            checked, parried = checked + 1, parried + (n_threat > 0)
    assert checked >= 20 and parried >= 5  # the sample exercises both rules
