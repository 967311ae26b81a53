"""Action encodings (nets.encoding; rule book section 8): round trips over every legal path and move of
positions reached by random play (walking, flying, jump chains, 3-4 square flights), injectivity,
and the exact set of decodable indices."""

from __future__ import annotations

import random
from collections import defaultdict
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.board import NEIGHBOR, NUM_POINTS, SIZE
from nets.encoding import (
    FLIGHT_BASE,
    JUMP_BASE,
    LOWER_NONE,
    NUM_LAYOUT_ACTIONS,
    NUM_LOWER_ACTIONS,
    NUM_UPPER_ACTIONS,
    PAPER_UPPER_ACTIONS,
    decode_layout,
    decode_lower,
    decode_upper,
    encode_layout,
    encode_lower,
    encode_paths,
    encode_upper,
    lower_sequence,
    upper_kind,
    victims_from_sequence,
)
from core.jfen import format_jfen
from core.notation import Move
from core.rules import Ruleset
from core.state import GameState
from tests.strategies import random_playout, random_battle_jfen

RULESETS = (
    Ruleset(),
    Ruleset(chain_revisit="allow", fly_jump_rule="none"),
    Ruleset(fly_jump_rule="all-multi", loss_below=1),
)


def _adjacent(a: int, b: int) -> bool:
    return b in NEIGHBOR[a]


def random_layout_end(rng: random.Random, ruleset: Ruleset = Ruleset()) -> GameState:
    """The first battle position after a full random layout (97 v 97, Black to move)."""
    s = GameState.initial(ruleset)
    while s.phase == 0:
        s = s._play(rng.choice(s.legal_moves()))
    return s


def sample_states(seed: int, n_boards: int = 6, plies: int = 6) -> list[GameState]:
    """Positions of every stage: a real game (layout, then battle), and random battle boards with chosen
    stone counts (both sides walking, one side flying, both flying, near-empty) played on at random,
    under several rulesets."""
    rng = random.Random(seed)
    states = random_playout(random_layout_end(rng), rng, plies)
    counts = [(97, 97), (60, 20), (14, 60), (8, 9), (30, 12), (3, 40), (13, 14), (90, 6)]
    for b in range(n_boards):
        ruleset = RULESETS[b % len(RULESETS)]
        nw, nb = counts[rng.randrange(len(counts))]
        start = GameState.from_jfen(random_battle_jfen(rng, nw, nb, shapes=rng.randrange(5)), ruleset)
        states.extend(random_playout(start, rng, plies))
    return states


@cache
def corpus() -> tuple[GameState, ...]:
    """A fixed corpus of positions (seeded), shared by the tests of this module."""
    return tuple(s for seed in range(6) for s in sample_states(seed))


def square_flight_state(n_victims: int) -> GameState:
    """White flies (9 stones) and can fly into e5, which is surrounded by 8 White stones: 4 squares.
    Black has ``n_victims`` + 2 stones away from the block."""
    board = np.zeros(NUM_POINTS, np.int8)
    c0, r0 = 4, 4  # e5
    for dc in (-1, 0, 1):
        for dr in (-1, 0, 1):
            if dc or dr:
                board[(r0 + dr) * SIZE + c0 + dc] = 1
    board[13 * SIZE + 13] = 1  # n14: the stone that flies in
    for p in (0, 13, 182, 100, 120, 150)[: n_victims + 2]:
        board[p] = 2
    return GameState.from_jfen(format_jfen(board, 0, 1, 0, 300))


# ------------------------------------------------------------------------------------ constants
def test_constants():
    assert NUM_LAYOUT_ACTIONS == 196
    assert PAPER_UPPER_ACTIONS == 196 * 53 == 10_388 == FLIGHT_BASE
    assert JUMP_BASE == 784
    assert NUM_UPPER_ACTIONS == 10_388 + 196 * 196 == 48_804
    assert NUM_LOWER_ACTIONS == 19_307 and LOWER_NONE == 19_306


def test_worked_examples():
    assert encode_upper(Move((90, 104))) == 4 * 90 + 0  # g7-g8 up
    assert encode_upper(Move((90, 76))) == 4 * 90 + 1  # g7-g6 down
    assert encode_upper(Move((90, 89))) == 4 * 90 + 2  # g7-f7 left
    assert encode_upper(Move((90, 91))) == 4 * 90 + 3  # g7-h7 right
    assert encode_upper((13, 14), False) == FLIGHT_BASE + 196 * 13 + 14  # n1-a2: not adjacent
    # g7xg9xe9: origin g7 (col0 6, row0 6), end e9 (col0 4, row0 8)
    assert encode_upper(Move((90, 118, 116), True)) == 784 + 49 * 90 + 7 * 4 + 2
    assert encode_lower(()) == LOWER_NONE
    assert encode_lower((37,)) == 37
    assert encode_lower((195, 194)) == encode_lower((194, 195)) == 196 + 195 * 194 // 2 + 194 == 19_305
    assert encode_lower((0, 1)) == 196


# ------------------------------------------------------------------------------------ round trips
def test_round_trip_all_legal_paths():
    kinds = defaultdict(int)
    for state in corpus():
        ps = state.paths()
        enc = encode_paths(ps.pts, ps.off, ps.jump, ps.m)
        assert enc.dtype == np.int32 and enc.shape == (ps.m,)
        allow = state.ruleset.chain_revisit == "allow"
        for i in range(ps.m):
            path, jump = ps.path(i), bool(ps.jump[i])
            a = int(enc[i])
            assert a == encode_upper(path, jump) == encode_upper(Move(path, jump))
            kind, o, e = decode_upper(a, allow_revisit=allow)
            assert (o, e) == (path[0], path[-1])
            expected = "jump" if jump else "step" if _adjacent(path[0], path[1]) else "flight"
            assert kind == expected == upper_kind(a)
            kinds[kind] += 1
            if not jump and state.flying(state.side) and kind == "step":
                kinds["flight-to-neighbour"] += 1
    # the corpus covers every block and the lead's flight-to-neighbour decision
    assert all(kinds[k] > 20 for k in ("step", "jump", "flight", "flight-to-neighbour")), dict(kinds)


def test_round_trip_all_legal_moves_lower():
    n_by_victims = defaultdict(int)
    states = list(corpus()) + [square_flight_state(k) for k in (2, 3, 4)]
    for state in states:
        for move in state.legal_moves():
            seq = lower_sequence(move.victims)
            assert victims_from_sequence(seq) == move.victims
            assert all(0 <= a < NUM_LOWER_ACTIONS for a in seq)
            if len(move.victims) <= 2:
                assert seq == [encode_lower(move.victims)]
                assert decode_lower(seq[0]) == move.victims
            n_by_victims[len(move.victims)] += 1
    assert all(n_by_victims[k] > 0 for k in range(5)), dict(n_by_victims)


def test_four_square_flight():
    s = square_flight_state(4)
    assert s.legal_paths()["n14-e5"] == 4
    moves = [m for m in s.legal_moves() if m.path == (195, 60)]
    assert len(moves) == 15  # C(6, 4)
    for m in moves:
        assert encode_upper(m) == FLIGHT_BASE + 196 * 195 + 60
        a, b, c, d = m.victims
        assert lower_sequence(m.victims) == [encode_lower((c, d)), encode_lower((a, b))]
    s3 = square_flight_state(3)  # 5 Black stones: 4 squares take 4
    assert {len(m.victims) for m in s3.legal_moves() if m.path == (195, 60)} == {4}


def test_encode_paths_empty_and_terminal():
    s = GameState.initial()
    ps = s.paths()
    assert encode_paths(ps.pts, ps.off, ps.jump, ps.m).shape == (0,)


# ------------------------------------------------------------------------------------ injectivity
def _hop_chain(o: int, e: int) -> tuple[int, ...]:
    """Some hop-shaped chain from ``o`` to ``e`` (same parity): along the row, then the column."""
    path = [o]
    c, r = o % SIZE, o // SIZE
    ec, er = e % SIZE, e // SIZE
    while c != ec:
        c += 2 if ec > c else -2
        path.append(r * SIZE + c)
    while r != er:
        r += 2 if er > r else -2
        path.append(r * SIZE + c)
    if len(path) == 1:  # e == o: a 4-hop loop (legal only with chain_revisit=allow)
        dc = 2 if c + 2 < SIZE else -2
        dr = 2 if r + 2 < SIZE else -2
        path += [r * SIZE + c + dc, (r + dr) * SIZE + c + dc, (r + dr) * SIZE + c, o]
    return tuple(path)


def test_injective_on_all_path_shapes():
    """Every (origin, end) of a two-point non-jump path and of a jump chain gets its own index; the
    only shared indices are chains with the same origin and end."""
    seen: dict[int, tuple] = {}
    for o in range(NUM_POINTS):
        for e in range(NUM_POINTS):
            if e != o:
                a = encode_upper((o, e), False)
                assert a not in seen, (a, seen.get(a), (o, e))
                seen[a] = ("move", o, e)
            if (o - e) % SIZE % 2 == 0 and (o // SIZE - e // SIZE) % 2 == 0:
                a = encode_upper(_hop_chain(o, e), True)
                assert a not in seen, (a, seen.get(a), (o, e))
                seen[a] = ("jump", o, e)
    assert len(seen) == 196 * 195 + 196 * 49
    # exactly the steps, the jumps and the non-adjacent flights are produced
    produced = np.zeros(NUM_UPPER_ACTIONS, bool)
    produced[list(seen)] = True
    for a in range(NUM_UPPER_ACTIONS):
        try:
            kind, o, e = decode_upper(a, allow_revisit=True)
        except ValueError:
            assert not produced[a]
            continue
        assert produced[a] == (kind != "flight" or not _adjacent(o, e)), a


def test_collisions_in_legal_positions_are_only_same_chain_ends():
    collided = 0
    for state in corpus():
        ps = state.paths()
        enc = encode_paths(ps.pts, ps.off, ps.jump, ps.m)
        groups = defaultdict(list)
        for i in range(ps.m):
            groups[int(enc[i])].append(i)
        for idx in (g for g in groups.values() if len(g) > 1):
            paths = [ps.path(i) for i in idx]
            assert all(ps.jump[i] for i in idx)
            assert len({(p[0], p[-1]) for p in paths}) == 1
            assert len(set(paths)) == len(paths)
            collided += 1
    assert collided > 0  # the corpus has two routes to one landing somewhere


@settings(max_examples=300, deadline=None)
@given(st.integers(0, NUM_POINTS - 1), st.lists(st.integers(0, 3), min_size=1, max_size=12))
def test_random_hop_chains(o, dirs):
    path = [o]
    for d in dirs:
        nxt = NEIGHBOR[path[-1], d]
        if nxt >= 0 and NEIGHBOR[nxt, d] >= 0:
            path.append(int(NEIGHBOR[nxt, d]))
    if len(path) < 2:
        return
    a = encode_upper(path, True)
    assert JUMP_BASE <= a < FLIGHT_BASE
    assert decode_upper(a, allow_revisit=True) == ("jump", path[0], path[-1])
    pts = np.array(path, np.int16)
    assert encode_paths(pts, np.array([0, len(path)], np.int32), np.ones(1, np.int8), 1)[0] == a


# ------------------------------------------------------------------------------------ index ranges
def test_every_upper_index_decodes_or_raises():
    errors = defaultdict(int)
    for a in range(NUM_UPPER_ACTIONS):
        try:
            kind, o, e = decode_upper(a)
        except ValueError:
            errors[upper_kind(a)] += 1
            if a < JUMP_BASE:
                assert NEIGHBOR[a // 4, a % 4] < 0
            elif a < FLIGHT_BASE:
                assert decode_upper(a, allow_revisit=True)[1:] == ((a - JUMP_BASE) // 49,) * 2
            else:
                assert (a - FLIGHT_BASE) // 196 == (a - FLIGHT_BASE) % 196
            continue
        assert kind == upper_kind(a)
        assert 0 <= o < NUM_POINTS and 0 <= e < NUM_POINTS and o != e
        if kind == "step":
            assert 0 <= a <= 783 and _adjacent(o, e)
            assert encode_upper((o, e), False) == a
        elif kind == "jump":
            assert 784 <= a <= 10_387
            assert (o % 2, (o // SIZE) % 2) == (e % 2, (e // SIZE) % 2)
            assert encode_upper(_hop_chain(o, e), True) == a
        else:
            assert 10_388 <= a <= 48_803
            expected = 4 * o + int(np.flatnonzero(NEIGHBOR[o] == e)[0]) if _adjacent(o, e) else a
            assert encode_upper((o, e), False) == expected
    # 56 board-edge steps, one self-jump and one self-flight per point
    assert dict(errors) == {"step": 56, "jump": 196, "flight": 196}


@pytest.mark.parametrize("bad", [-1, NUM_UPPER_ACTIONS, 10**9, 1.0, "3", True, None])
def test_upper_out_of_range(bad):
    with pytest.raises(ValueError):
        decode_upper(bad)
    with pytest.raises(ValueError):
        upper_kind(bad)


@pytest.mark.parametrize(
    "path,jump",
    [((5,), False), ((5, 5), False), ((5, 6, 7), False), ((5, 6), True), ((0, 2, 31), True), ((12, 14), True),
     ((0, 196), False),
     ((-1, 0), False), ((0, 2.0), True), ((), True)],
)
def test_encode_upper_rejects_bad_shapes(path, jump):
    with pytest.raises(ValueError):
        encode_upper(path, jump)


def test_encode_upper_flag_checks():
    with pytest.raises(ValueError):
        encode_upper((0, 1))  # bare path without jump flag
    with pytest.raises(ValueError):
        encode_upper(Move((0, 1)), True)
    assert encode_upper(Move((0, 1)), False) == 3


def test_every_lower_index_round_trips():
    seen = set()
    for k in range(NUM_LOWER_ACTIONS):
        v = decode_lower(k)
        assert list(v) == sorted(set(v)) and len(v) <= 2 and all(0 <= p < NUM_POINTS for p in v)
        assert (len(v) == 0) == (k == LOWER_NONE) and (len(v) == 1) == (k < 196)
        assert encode_lower(v) == k
        seen.add(v)
    assert len(seen) == NUM_LOWER_ACTIONS


@pytest.mark.parametrize("bad", [-1, NUM_LOWER_ACTIONS, 2**40, 0.5, False])
def test_lower_out_of_range(bad):
    with pytest.raises(ValueError):
        decode_lower(bad)


@pytest.mark.parametrize("bad", [(1, 1), (196,), (-1,), (1, 2, 3), (0, 1, 2, 3, 4), (1.5,)])
def test_encode_lower_rejects(bad):
    with pytest.raises(ValueError):
        encode_lower(bad)


@settings(max_examples=400, deadline=None)
@given(st.sets(st.integers(0, NUM_POINTS - 1), max_size=4))
def test_lower_sequence_round_trip(victims):
    v = tuple(sorted(victims))
    seq = lower_sequence(reversed(v))
    assert len(seq) == (1 if len(v) <= 2 else 2)
    assert victims_from_sequence(seq) == v
    if len(v) >= 3:  # canonical: the pair of the two largest first
        assert decode_lower(seq[0]) == v[-2:]
        assert decode_lower(seq[1]) == v[:-2]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, NUM_LOWER_ACTIONS - 1), min_size=0, max_size=3))
def test_victims_from_sequence_inverse_or_raises(seq):
    try:
        v = victims_from_sequence(seq)
    except ValueError:
        if len(seq) == 2:  # a rejected pair of actions is never a canonical sequence
            first, second = decode_lower(seq[0]), decode_lower(seq[1])
            both = sorted(first + second)
            assert len(set(both)) != len(both) or len(both) < 3 or lower_sequence(both) != seq
        else:
            assert len(seq) != 1
        return
    assert lower_sequence(v) == list(seq)


def test_victims_from_sequence_rejects_non_canonical():
    with pytest.raises(ValueError):
        victims_from_sequence([3, encode_lower((10, 20))])  # single first
    with pytest.raises(ValueError):
        victims_from_sequence([encode_lower((1, 2)), 30])  # single above the pair
    with pytest.raises(ValueError):
        victims_from_sequence([encode_lower((1, 2)), encode_lower((30, 40))])  # smaller pair first
    with pytest.raises(ValueError):
        victims_from_sequence([encode_lower((10, 20)), LOWER_NONE])
    with pytest.raises(ValueError):
        victims_from_sequence([encode_lower((10, 20)), 10])  # repeated victim
    with pytest.raises(ValueError):
        victims_from_sequence([])
    with pytest.raises(ValueError):
        lower_sequence(range(5))


def test_layout_encoding():
    for p in range(NUM_POINTS):
        assert encode_layout(p) == p == decode_layout(p)
        assert encode_layout(Move((p,))) == p
    for bad in (-1, 196, 1.0, None):
        with pytest.raises(ValueError):
            encode_layout(bad)
        with pytest.raises(ValueError):
            decode_layout(bad)
    with pytest.raises(ValueError):
        encode_layout(Move((0, 1)))
    assert [encode_layout(m) for m in GameState.initial().legal_moves()] == [90, 105]
