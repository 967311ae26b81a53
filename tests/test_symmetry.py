"""Board symmetries (nets.symmetry; rule book section 8): the maps form the four-element group fixing
the g7-h8 diagonal, and the rules commute with them (legal moves, paths with square counts, move
application, terminal status); the action maps agree with encoding the transformed path."""

from __future__ import annotations

import random
import subprocess
import sys
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.board import NUM_POINTS, SIZE
from nets.encoding import (
    LOWER_NONE,
    NUM_LOWER_ACTIONS,
    NUM_UPPER_ACTIONS,
    decode_upper,
    encode_lower,
    encode_paths,
    encode_upper,
    lower_sequence,
    victims_from_sequence,
)
from core.notation import Move, parse_move
from core.rules import Ruleset
from core.state import GameState
from nets.symmetry import (
    DIR_MAPS,
    NUM_SYMMETRIES,
    POINT_MAPS,
    action_map,
    lower_maps,
    transform_board,
    transform_move,
    transform_planes,
    transform_policy,
    transform_state,
    upper_maps,
)
from tests.strategies import random_playout, battle_boards, random_battle_jfen, rulesets

SYMS = range(NUM_SYMMETRIES)
G7, H8 = 90, 105


@cache
def corpus() -> tuple[GameState, ...]:
    """Seeded positions: early and late layout, the first battle position of a random game, random
    battle boards with walking and flying sides under several rulesets, each played on at random."""
    rng = random.Random(1234)
    states = random_playout(GameState.initial(), rng, 4)
    s = states[-1]
    while s.phase == 0:
        s = s._play(rng.choice(s.legal_moves()))
        if s.ply in (150, 195):
            states.append(s)
    states += random_playout(s, rng, 4)
    rulesets_ = (Ruleset(), Ruleset(chain_revisit="allow", fly_jump_rule="none"), Ruleset(fly_jump_rule="all-multi"))
    counts = [(97, 97), (40, 12), (10, 70), (9, 11), (14, 15), (25, 5)]
    for b in range(14):
        nw, nb = counts[b % len(counts)]
        start = GameState.from_jfen(random_battle_jfen(rng, nw, nb, shapes=rng.randrange(5)), rulesets_[b % 3])
        states += random_playout(start, rng, 5)
    return tuple(states)


def _sorted_moves(moves) -> list[str]:
    return sorted(str(m) for m in moves)


# ------------------------------------------------------------------------------------ the maps
def test_point_maps_formulas_and_group():
    assert POINT_MAPS.shape == (4, 196) and POINT_MAPS.dtype == np.int16
    idx = np.arange(NUM_POINTS)
    c, r = idx % SIZE, idx // SIZE
    assert (POINT_MAPS[0] == idx).all()
    assert (POINT_MAPS[1] == 195 - idx).all()
    assert (POINT_MAPS[2] == c * SIZE + r).all()  # (c, r) -> (r, c)
    assert (POINT_MAPS[3] == POINT_MAPS[1][POINT_MAPS[2]]).all()
    assert (POINT_MAPS[3] == POINT_MAPS[2][POINT_MAPS[1]]).all()
    for s in SYMS:
        assert sorted(POINT_MAPS[s]) == list(range(NUM_POINTS))
        assert (POINT_MAPS[s][POINT_MAPS[s]] == idx).all()  # involution
        assert {int(POINT_MAPS[s, G7]), int(POINT_MAPS[s, H8])} == {G7, H8}
        assert sorted(DIR_MAPS[s]) == [0, 1, 2, 3] and (DIR_MAPS[s][DIR_MAPS[s]] == np.arange(4)).all()
    assert not POINT_MAPS.flags.writeable


@pytest.mark.parametrize(
    "kind,maps,n", [("upper", upper_maps, NUM_UPPER_ACTIONS), ("lower", lower_maps, NUM_LOWER_ACTIONS)]
)
def test_action_maps_are_involutive_permutations(kind, maps, n):
    m = maps()
    assert m.shape == (4, n) and m.dtype == np.int32 and not m.flags.writeable
    ar = np.arange(n)
    assert (m[0] == ar).all()
    for s in SYMS:
        assert (np.sort(m[s]) == ar).all()
        assert (m[s][m[s]] == ar).all()
        assert (action_map(s, kind) == m[s]).all()
    assert (m[3] == m[1][m[2]]).all()


def test_lazy_attributes_and_cheap_import():
    import nets.symmetry as sym

    assert sym.UPPER_MAPS is upper_maps() and sym.LOWER_MAPS is lower_maps()
    code = (
        "import nets.symmetry as s;"
        "assert s.upper_maps.cache_info().currsize == 0 == s.lower_maps.cache_info().currsize"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_upper_index_maps_to_the_transformed_decode():
    m = upper_maps()
    for s in (1, 2, 3):
        p = POINT_MAPS[s]
        for a in range(0, NUM_UPPER_ACTIONS, 7):
            try:
                kind, o, e = decode_upper(a, allow_revisit=True)
            except ValueError:
                with pytest.raises(ValueError):
                    decode_upper(int(m[s, a]), allow_revisit=True)
                continue
            assert decode_upper(int(m[s, a]), allow_revisit=True) == (kind, p[o], p[e])


def test_lower_maps_match_transformed_victims():
    m = lower_maps()
    from nets.encoding import decode_lower

    for s in SYMS:
        for k in range(NUM_LOWER_ACTIONS):
            v = decode_lower(k)
            assert m[s, k] == encode_lower(tuple(int(POINT_MAPS[s, x]) for x in v))
    assert (m[:, LOWER_NONE] == LOWER_NONE).all()


# ------------------------------------------------------------------------------------ rules commute
def test_legal_moves_commute():
    checked = 0
    for st_ in corpus():
        moves = st_.legal_moves()
        if len(moves) > 3000:
            moves_ok = st_.count_moves()
            for s in SYMS:
                assert transform_state(st_, s).count_moves() == moves_ok
            continue
        for s in (1, 2, 3):
            image = transform_state(st_, s)
            assert _sorted_moves(transform_move(m, s) for m in moves) == _sorted_moves(image.legal_moves())
            checked += 1
    assert checked > 100


def _transform_path_str(path: str, s: int) -> str:
    return transform_move(parse_move(path), s).path_str()


def test_legal_paths_with_square_counts_commute():
    for st_ in corpus():
        paths = st_.legal_paths()
        for s in SYMS:
            image = transform_state(st_, s)
            assert {_transform_path_str(p, s): k for p, k in paths.items()} == image.legal_paths()
            assert image.outcome() == st_.outcome()


def test_upper_maps_agree_with_encoding_transformed_paths():
    um = upper_maps()
    for st_ in corpus():
        ps = st_.paths()
        enc = encode_paths(ps.pts, ps.off, ps.jump, ps.m)
        for s in SYMS:
            image = transform_state(st_, s)
            ips = image.paths()
            ienc = encode_paths(ips.pts, ips.off, ips.jump, ips.m)
            mapped = um[s][enc]
            assert sorted(mapped.tolist()) == sorted(ienc.tolist())  # as multisets
            for i in range(ps.m):
                move = transform_move(Move(ps.path(i), bool(ps.jump[i])), s)
                assert mapped[i] == encode_upper(move)


def test_lower_maps_and_sequences_agree_on_legal_moves():
    lm = lower_maps()
    for st_ in corpus()[::3]:
        for move in st_.legal_moves()[:400]:
            for s in SYMS:
                image = transform_move(move, s)
                seq = lower_sequence(image.victims)
                assert victims_from_sequence(seq) == image.victims
                if len(move.victims) <= 2:
                    assert lm[s, encode_lower(move.victims)] == encode_lower(image.victims)


def test_apply_commutes():
    rng = random.Random(7)
    for st_ in corpus()[::2]:
        moves = st_.legal_moves()
        if not moves:
            continue
        for move in rng.sample(moves, min(3, len(moves))):
            child = st_.apply(move)
            for s in SYMS:
                via_image = transform_state(st_, s).apply(transform_move(move, s))
                assert via_image == transform_state(child, s)
                assert via_image.last_move == transform_move(move, s)


@settings(max_examples=40, deadline=None)
@given(battle_boards(), rulesets(), st.integers(1, 3))
def test_paths_commute_on_edge_case_boards(jfen, ruleset, s):
    st_ = GameState.from_jfen(jfen, ruleset)
    image = transform_state(st_, s)
    assert {_transform_path_str(p, s): k for p, k in st_.legal_paths().items()} == image.legal_paths()
    assert image.count_moves() == st_.count_moves()
    assert image.outcome() == st_.outcome()


# ------------------------------------------------------------------------------------ objects
def test_transform_state_fields():
    st_ = corpus()[-1]
    assert st_.last_move is not None and st_.phase == 1
    for s in SYMS:
        image = transform_state(st_, s)
        assert (image.board == transform_board(st_.board, s)).all()
        assert (image.side, image.phase, image.quiet, image.ply, image.counts, image.ruleset) == (
            st_.side, st_.phase, st_.quiet, st_.ply, st_.counts, st_.ruleset)
        assert image.last_move == transform_move(st_.last_move, s)
        assert image.history.tolist() == [image.hash]  # the repetition history restarts
        assert transform_state(image, s) == st_  # involution
        assert transform_state(image, s).board.tobytes() == st_.board.tobytes()
    layout = GameState.initial()
    assert transform_state(layout, 1).history.size == 0
    assert transform_state(layout, 1).last_move is None


def test_transform_move_examples():
    m = parse_move("g7-g8/c3/k10")
    assert str(transform_move(m, 0)) == "g7-g8/c3/k10"
    assert str(transform_move(m, 1)) == "h8-h7/d5/l12"  # (c, r) -> (13-c, 13-r); victims re-sorted
    assert str(transform_move(m, 2)) == "g7-h7/c3/j11"  # (c, r) -> (r, c)
    assert str(transform_move(parse_move("g7xg9xe9"), 2)) == "g7xi7xi5"
    assert str(transform_move(Move((90,)), 3)) == "h8"


def test_transform_board_and_planes():
    rng = np.random.default_rng(0)
    board = rng.integers(0, 3, NUM_POINTS).astype(np.int8)
    planes = rng.random((5, 14, 14)).astype(np.float32)
    for s in SYMS:
        out = transform_board(board, s)
        assert out.dtype == np.int8
        assert (out[POINT_MAPS[s]] == board).all()
        flat = transform_board(planes.reshape(5, NUM_POINTS), s)
        assert (transform_planes(planes, s).reshape(5, NUM_POINTS) == flat).all()
    with pytest.raises(ValueError):
        transform_board(np.zeros(195), 1)
    with pytest.raises(ValueError):
        transform_planes(np.zeros((14, 15)), 1)
    for bad in (4, -1, 1.0, None, True):
        with pytest.raises(ValueError):
            transform_board(board, bad)


@pytest.mark.parametrize("kind,n", [("layout", 196), ("upper", NUM_UPPER_ACTIONS), ("lower", NUM_LOWER_ACTIONS)])
def test_transform_policy(kind, n):
    rng = np.random.default_rng(1)
    p = rng.random((3, n)).astype(np.float32)
    for s in SYMS:
        amap = action_map(s, kind)
        out = transform_policy(p, s, kind)
        assert out.shape == p.shape and out.dtype == p.dtype
        assert (out[:, amap] == p).all()  # transform_policy(p, s)[map[a]] == p[a]
        assert (transform_policy(p[1], s) == out[1]).all()  # kind inferred from the length
        assert (transform_policy(out, s, kind) == p).all()
    with pytest.raises(ValueError):
        transform_policy(p, 1, "bogus")
    with pytest.raises(ValueError):
        transform_policy(p[:, :-1], 1, kind)
    with pytest.raises(ValueError):
        transform_policy(np.zeros(100), 1)


def test_policy_over_legal_moves_follows_the_move():
    """A policy mass on a legal path's action lands on the transformed path's action."""
    st_ = next(s for s in corpus() if s.phase == 1 and s.paths().m > 5)
    ps = st_.paths()
    enc = encode_paths(ps.pts, ps.off, ps.jump, ps.m)
    p = np.zeros(NUM_UPPER_ACTIONS, np.float32)
    p[enc[0]] = 1.0
    for s in SYMS:
        image_action = encode_upper(transform_move(Move(ps.path(0), bool(ps.jump[0])), s))
        assert transform_policy(p, s, "upper")[image_action] == 1.0
