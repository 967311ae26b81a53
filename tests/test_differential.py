"""The Numba engine against the pure-Python reference (``tests/reference.py``), under every ruleset.

Compared: legal paths with square counts, full legal moves, the position after each move, and
terminal status with winner, on edge-case boards, capture-biased playouts and layout positions.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import GameState, Ruleset
from core.board import NUM_POINTS, POINT_NAMES
from core.jfen import format_jfen
from core.movegen import (
    ALL_POINTS,
    generate_capture_paths,
    generate_chains_to,
    generate_paths,
    generate_square_paths,
    has_battle_move,
    new_path_buffers,
    square_targets,
)
from tests import reference as ref
from tests.strategies import battle_boards, biased_playout, layout_positions, played_positions, rulesets

positions = st.one_of(battle_boards(), played_positions(), layout_positions())
SETTINGS = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _ref_outcome(state: GameState, rules: Ruleset, history=None) -> tuple[bool, str | None]:
    return ref.outcome(ref.parse_jfen(state.to_jfen()), rules, history)


@SETTINGS
@given(positions, rulesets())
def test_legal_paths_and_status_match_reference(jfen, rules):
    state = GameState.from_jfen(jfen, rules)
    pos = ref.parse_jfen(jfen)
    assert state.legal_paths() == ref.legal_paths(pos, rules), jfen
    outcome = state.outcome()
    assert (outcome.terminal, outcome.winner_code) == ref.outcome(pos, rules), jfen


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(battle_boards(), played_positions()), rulesets(), st.integers(0, 1))
def test_square_paths_match_reference(jfen, rules, side):
    """``square_targets`` are the reference's points where a stone would complete a square, and
    ``generate_square_paths`` gives the reference's square-forming paths (game over or not, either side
    to move), exactly the full generator's paths with ``nsq > 0`` in the same order, also with every
    point as a target."""
    state = GameState.from_jfen(jfen, rules)
    if state.phase != 1:
        return
    text = format_jfen(state.board, side, 1, state.quiet, state.ply)
    pos = ref.parse_jfen(text)
    stone = "WB"[side]
    targets = square_targets(state.board, side + 1)
    with_stone = lambda p: pos.board[:p] + (stone,) + pos.board[p + 1:]  # noqa: E731
    assert targets.tolist() == [p for p in range(NUM_POINTS) if ref.squares_at(with_stone(p), p, stone) > 0], text
    n_own, n_opp = state.counts[side], state.counts[1 - side]
    fm, fpts, foff, fnsq, fjump = generate_paths(state.board, side, n_own, n_opp, rules.vector, *new_path_buffers(64))
    full = [(tuple(fpts[foff[i]:foff[i + 1]]), int(fjump[i]), int(fnsq[i])) for i in range(fm) if fnsq[i] > 0]
    want = {name: p.squares for name, p in ref._battle_paths(pos, rules).items() if p.squares > 0}
    for t in (targets, ALL_POINTS):
        # Small buffers, so that regrowing them is exercised too.
        m, pts, off, nsq, jump = generate_square_paths(state.board, side, n_own, n_opp, rules.vector,
                                                       *new_path_buffers(2), t)
        got = [(tuple(pts[off[i]:off[i + 1]]), int(jump[i]), int(nsq[i])) for i in range(m)]
        assert got == full, text
        assert {("x" if j else "-").join(POINT_NAMES[p] for p in path): k for path, j, k in got} == want, text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(battle_boards(), played_positions()), rulesets(), st.integers(0, 1))
def test_capture_paths_match_reference(jfen, rules, side):
    """``generate_capture_paths`` gives the reference's capturing paths (every jump chain, every
    square-forming step or flight), exactly the full generator's paths with ``jump or nsq > 0`` in
    the same order, also with every point as a target. ``has_battle_move`` agrees with the
    reference's paths being non-empty. ``generate_chains_to`` gives the full generator's jump chains
    that end on its targets."""
    state = GameState.from_jfen(jfen, rules)
    if state.phase != 1:
        return
    text = format_jfen(state.board, side, 1, state.quiet, state.ply)
    pos = ref.parse_jfen(text)
    n_own, n_opp = state.counts[side], state.counts[1 - side]
    fm, fpts, foff, fnsq, fjump = generate_paths(state.board, side, n_own, n_opp, rules.vector, *new_path_buffers(64))
    full = [(tuple(fpts[foff[i]:foff[i + 1]]), int(fjump[i]), int(fnsq[i])) for i in range(fm)]
    paths = ref._battle_paths(pos, rules)
    want = {name: p.squares for name, p in paths.items() if "x" in name or p.squares > 0}
    for t in (square_targets(state.board, side + 1), ALL_POINTS):
        # Small buffers, so that regrowing them is exercised too.
        m, pts, off, nsq, jump = generate_capture_paths(state.board, side, n_own, n_opp, rules.vector,
                                                        *new_path_buffers(2), t)
        got = [(tuple(pts[off[i]:off[i + 1]]), int(jump[i]), int(nsq[i])) for i in range(m)]
        assert got == [p for p in full if p[1] or p[2] > 0], text
        assert {("x" if j else "-").join(POINT_NAMES[p] for p in path): k for path, j, k in got} == want, text
    assert has_battle_move(state.board, side, n_own, n_opp, rules.vector) == (len(paths) > 0), text
    for t in (ALL_POINTS, ALL_POINTS[side::3], square_targets(state.board, side + 1)):
        m, pts, off, nsq, jump = generate_chains_to(state.board, side, n_own, n_opp, rules.vector,
                                                    *new_path_buffers(2), t)
        got = [(tuple(pts[off[i]:off[i + 1]]), int(jump[i]), int(nsq[i])) for i in range(m)]
        ends = set(t.tolist())
        assert got == [p for p in full if p[1] and p[0][-1] in ends], text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(positions, rulesets(), st.integers(0, 2**32 - 1))
def test_full_moves_and_applied_positions_match_reference(jfen, rules, seed):
    state = GameState.from_jfen(jfen, rules)
    pos = ref.parse_jfen(jfen)
    if state.count_moves() <= 3000:
        assert [str(m) for m in state.legal_moves()] == ref.legal_moves(pos, rules), jfen
    moves = state.legal_moves() if state.count_moves() <= 3000 else []
    for move in random.Random(seed).sample(moves, min(len(moves), 8)):
        child = state.apply(move)
        assert child.to_jfen() == ref.to_jfen(ref.apply_move(pos, str(move), rules)), (jfen, str(move))
        # Invariants after every move.
        assert child.counts == (int((child.board == 1).sum()), int((child.board == 2).sum()))
        assert child.counts[0] <= state.counts[0] and child.counts[1] <= state.counts[1] or state.phase == 0
        assert child.ply == state.ply + 1
        assert child.side != state.side or child.phase != state.phase


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(battle_boards(), rulesets(), st.integers(0, 2**32 - 1))
def test_status_along_games_with_history_matches_reference(jfen, rules, seed):
    """Terminal status with the repetition history, along capture-biased games."""
    states = biased_playout(GameState.from_jfen(jfen, rules), random.Random(seed), 40, capture_bias=0.3)
    history = []
    for s in states:
        history.append(ref.parse_jfen(s.to_jfen()))
        outcome = s.outcome()
        assert (outcome.terminal, outcome.winner_code) == ref.outcome(history[-1], rules, history), s.to_jfen()


def test_repetition_draw_with_history_matches_reference():
    """Two stones shuttling back and forth: the third occurrence is a draw under the default rules."""
    rng = random.Random(7)
    from tests.strategies import random_battle_jfen

    rules = Ruleset()
    state = GameState.from_jfen(random_battle_jfen(rng, 30, 30), rules)
    # Find a step for each side that can be undone on the next turn.
    shuttle = []
    s = state
    for _ in range(2):
        step = next(m for m in s.legal_moves() if not m.jump and not m.victims)
        shuttle.append(step)
        s = s.apply(step)
    back = [type(m)((m.path[1], m.path[0])) for m in shuttle]
    sequence = (shuttle + back) * 2
    history = [ref.parse_jfen(state.to_jfen())]
    s = state
    for i, m in enumerate(sequence):
        s = s.apply(m)
        history.append(ref.parse_jfen(s.to_jfen()))
        assert (s.outcome().terminal, s.outcome().winner_code) == ref.outcome(history[-1], rules, history)
    assert s.outcome().reason == "repetition" and s.outcome().winner_code == "draw"


def test_random_game_kernel_replays_under_the_reference():
    """The in-kernel random game is a legal game: the reference accepts every move and agrees on the end."""
    from core.playout import random_game_moves
    from core.status import END_REASONS

    for seed, rules in ((3, Ruleset()), (11, Ruleset(loss_below=14, fly_jump_rule="all-multi", chain_revisit="allow"))):
        moves, winner, reason = random_game_moves(seed, rules.vector)
        pos = ref.parse_jfen(ref.START_JFEN)
        history = []
        for m in moves:
            pos = ref.apply_move(pos, str(m), rules)
            if pos.phase == "battle":
                history.append(pos)
        terminal, ref_winner = ref.outcome(pos, rules, history)
        assert terminal
        assert ref_winner == {0: "w", 1: "b", -1: "draw"}[winner]
        assert END_REASONS[reason] in ("stones", "no-move", "repetition", "ply-cap")
        assert pos.ply == len(moves) and len(moves) > NUM_POINTS


def test_end_order_option_at_the_ply_cap():
    """Black to move with 3 stones exactly at the ply cap: a loss by stones when decisive ends come
    first (the default), a draw at the cap with ``end_order="cap-first"``; engine and reference agree."""
    jfen = "/".join(["W" * 14, "W" * 6 + "8"] + ["14"] * 11 + ["BBB11"]) + " b battle 0 1196"
    for order, expected in (("decisive-first", ("stones", "w")), ("cap-first", ("ply-cap", "draw"))):
        rules = Ruleset(end_order=order)
        state = GameState.from_jfen(jfen, rules)
        assert (state.outcome().reason, state.outcome().winner_code) == expected
        assert _ref_outcome(state, rules) == (True, expected[1])
