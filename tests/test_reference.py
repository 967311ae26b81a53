"""Tests of the pure-Python reference rules (tests/reference.py) against the rule book.

Every position below is written by hand as a JFEN string, with a sketch of the relevant stones.
Expected numbers are derived by hand in the comments, not by running the reference.
"""
from __future__ import annotations

import math
import time
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.reference import (
    RefPosition,
    RefRules,
    apply_move,
    legal_moves,
    legal_paths,
    outcome,
    parse_jfen,
    perft,
    random_game,
    to_jfen,
)

DEFAULT = RefRules()
START = "14/14/14/14/14/14/14/14/14/14/14/14/14/14 w layout 0 0"


def idx(name: str) -> int:
    return (int(name[1:]) - 1) * 14 + "abcdefghijklmn".index(name[0])


def with_move(jfen: str, side: str) -> RefPosition:
    return replace(parse_jfen(jfen), to_move=side)


def jumps(pos, rules=DEFAULT) -> set[str]:
    return {p for p in legal_paths(pos, rules) if "x" in p}


def paths_from(pos, origin: str, rules=DEFAULT) -> set[str]:
    return {p for p in legal_paths(pos, rules) if p.split("-")[0].split("x")[0] == origin}


def moves_with_path(pos, path: str, rules=DEFAULT) -> list[str]:
    return [m for m in legal_moves(pos, rules) if m.split("/")[0] == path]


# ---------------------------------------------------------------------------------------------------
# Hand-built positions (filler: White on all of row 14, Black on all of row 12, row 13 empty between)
# ---------------------------------------------------------------------------------------------------

# A: White 20 (row 14 + a1 b1 c1 a2 c2 b3), Black 15 (row 12 + n1). White steps.
#   3 . W . .
#   2 W . W .
#   1 W W W . ... B(n1)
#     a b c d
POS_A = "WWWWWWWWWWWWWW/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/14/14/1W12/W1W11/WWW10B w battle 0 196"

# B14: White exactly 14 (flies): ring a1 b1 c1 a2 c2 a3 b3 c3 around empty b2, plus n7 and e5..i5;
# Black 15 (row 12 + n1). B15: same plus White j5 (15 stones: steps only).
POS_B14 = "14/14/BBBBBBBBBBBBBB/14/14/14/14/13W/14/4WWWWW5/14/WWW11/W1W11/WWW10B w battle 0 196"
POS_B15 = "14/14/BBBBBBBBBBBBBB/14/14/14/14/13W/14/4WWWWWW4/14/WWW11/W1W11/WWW10B w battle 0 196"

# C: White b2, Black b3 c4 d5: chain b2 -up-> b4 -right-> d4 -up-> d6.
POS_C = "WWWWWWWWWWWWWW/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/3B10/2B11/1B12/1W12/14 w battle 0 196"

# D: White c3 inside a ring of Black c4 d5 e4 d3: the chain can go round and come back to c3.
POS_D = "WWWWWWWWWWWWWW/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/3B10/2B1B9/2WB10/14/14 w battle 0 196"

# D2: White c1, Black c2 and the same ring: c1 x c3, then round the ring back to c3 (not the origin).
POS_D2 = "WWWWWWWWWWWWWW/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/3B10/2B1B9/3B10/2B11/2W11 w battle 0 196"

# E*: White b2 (b2xb4 then xd4 over c4) and j2 (single hop j2xj4 only); Black b3 c4 j3.
#   E1: W 16 (row 14 + b2 j2), B 6 (b3 c4 j3 l10 m10 n10)     nP > 14, nQ <= 14
#   E2: W 5 (b2 j2 l14 m14 n14), B 17 (row 12 + b3 c4 j3)     nP <= 14, nQ > 14
#   E3: W 16, B 17                                             both > 14
#   E4: W 5, B 6                                               both <= 14
POS_E1 = "WWWWWWWWWWWWWW/14/14/14/11BBB/14/14/14/14/14/2B11/1B7B4/1W7W4/14 w battle 0 196"
POS_E2 = "11WWW/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/14/2B11/1B7B4/1W7W4/14 w battle 0 196"
POS_E3 = "WWWWWWWWWWWWWW/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/14/2B11/1B7B4/1W7W4/14 w battle 0 196"
POS_E4 = "11WWW/14/14/14/11BBB/14/14/14/14/14/2B11/1B7B4/1W7W4/14 w battle 0 196"
# Boundaries: E5 W 16 v B exactly 14 (+ a8..h8); E6 W exactly 14 (a14..l14) v B 17; E7 W 15 v B 15.
POS_E5 = "WWWWWWWWWWWWWW/14/14/14/11BBB/14/BBBBBBBB6/14/14/14/2B11/1B7B4/1W7W4/14 w battle 0 196"
POS_E6 = "WWWWWWWWWWWW2/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/14/2B11/1B7B4/1W7W4/14 w battle 0 196"
POS_E7 = "WWWWWWWWWWWWW1/14/14/14/11BBB/14/BBBBBBBBB5/14/14/14/2B11/1B7B4/1W7W4/14 w battle 0 196"
# E8: W exactly 14 (a14..l14 + b2 j2) v B 6.
POS_E8 = "WWWWWWWWWWWW2/14/14/14/11BBB/14/14/14/14/14/2B11/1B7B4/1W7W4/14 w battle 0 196"

# G3: White a1 b1 c1 a2 c2 b6, Black b5 b3 n14: b6xb4xb2 takes b5, b3 and lands in 2 squares, but
# Black has a single stone (n14) left. G2: same without n14 (nothing left to take).
POS_G3 = "13B/14/14/14/14/14/14/14/1W12/1B12/14/1B12/W1W11/WWW11 w battle 0 196"
POS_G2 = "14/14/14/14/14/14/14/14/1W12/1B12/14/1B12/W1W11/WWW11 w battle 0 196"

# H: a full board right after the layout (97 v 97, g7 and h8 empty, Black to move), checkerboard-like,
# with Black i7, f6, g6, f7, White h7, f8, g5: Black i7 jumps h7 to g7 and forms the square f6 g6 f7 g7.
POS_H = (
    "BWBWBWBWBWBWBW/WWWBWBWBWBWBWB/BWBWBWBWBWBWBW/WBWBWBWBWBWBWB/BWBWBWBWBWBWBW/WBWBWBWBWBWBWB/"
    "BWBWBWB1BWBWBW/WBWBWB1WBBWBWB/BWBWBBBWBWBWBW/WBWBWBWBWBWBWB/BWBWBWBWBWBWBW/WBWBWBWBWBWBWB/"
    "BWBWBWBWBWBWWW/WBWBWBWBWBWBWB b battle 0 196"
)

# NOMOVE: White 16 on a1..h2 walled in by Black a3..j4 and i1 j1 i2 j2 (every hop lands on Black).
POS_NOMOVE = "14/14/14/14/14/14/14/14/14/14/BBBBBBBBBB4/BBBBBBBBBB4/WWWWWWWWBB4/WWWWWWWWBB4 w battle 0 196"

# Stone-count positions: L3 White 3 (a1 b1 c1) v Black 15; L13 White 13 v 20; L14 White 14 v 20.
POS_L3 = "14/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/14/14/14/14/WWW10B w battle 0 196"
POS_L13 = "14/14/BBBBBBBBBBBBBB/14/13B/13B/14/13B/14/13B/14/13B/14/WWWWWWWWWWWWWB w battle 0 196"
POS_L14 = "14/14/BBBBBBBBBBBBBB/14/11B1B/13B/14/13B/14/13B/14/13B/14/WWWWWWWWWWWWWW w battle 0 196"

# T: layout, 195 stones (98 W, 97 B), only a2 empty, Black to place the last stone; g7 W, h8 B.
POS_T = (
    "BWBWBWBWBWBWBW/WBWBWBWBWBWBWB/BWBWBWBWBWBWBW/WBWBWBWBWBWBWB/BWBWBWBWBWBWBW/WBWBWBWBWBWBWB/"
    "BWBWBWBBBWBWBW/WBWBWBWWWBWBWB/BWBWBWBWBWBWBW/WBWBWBWBWBWBWB/BWBWBWBWBWBWBW/WBWBWBWBWBWBWB/"
    "1WBWBWBWBWBWBW/WBWBWBWBWBWBWB b layout 0 195"
)

ALL_HAND = [POS_A, POS_B14, POS_B15, POS_C, POS_D, POS_D2, POS_E1, POS_E2, POS_E3, POS_E4, POS_E5, POS_E6, POS_E7, POS_E8, POS_G3,
            POS_G2, POS_H, POS_NOMOVE, POS_L3, POS_L13, POS_L14, POS_T, START]


# ---------------------------------------------------------------------------------------------------
# Rule book section 9
# ---------------------------------------------------------------------------------------------------


def test_start_position_moves():
    start = parse_jfen(START)
    assert legal_moves(start, DEFAULT) == ["g7", "h8"]
    assert legal_paths(start, DEFAULT) == {"g7": 0, "h8": 0}
    assert outcome(start, DEFAULT) == (False, None)


def test_after_g7_only_h8():
    pos = apply_move(parse_jfen(START), "g7", DEFAULT)
    assert legal_moves(pos, DEFAULT) == ["h8"]
    assert to_jfen(pos) == "14/14/14/14/14/14/14/6W7/14/14/14/14/14/14 b layout 0 1"
    pos2 = apply_move(parse_jfen(START), "h8", DEFAULT)
    assert legal_moves(pos2, DEFAULT) == ["g7"]
    with pytest.raises(ValueError):
        apply_move(pos, "a1", DEFAULT)
    with pytest.raises(ValueError):
        apply_move(parse_jfen(START), "a1", DEFAULT)


def test_third_placement_anywhere():
    pos = apply_move(apply_move(parse_jfen(START), "h8", DEFAULT), "g7", DEFAULT)
    assert len(legal_moves(pos, DEFAULT)) == 194
    assert "g7" not in legal_moves(pos, DEFAULT)


@pytest.mark.parametrize("depth, expected", [(0, 1), (1, 2), (2, 2), (3, 388), (4, 74_884)])
def test_layout_perft(depth, expected):
    assert perft(parse_jfen(START), DEFAULT, depth) == expected


# ---------------------------------------------------------------------------------------------------
# Steps and flights
# ---------------------------------------------------------------------------------------------------


def test_steps_and_square_counts():
    pos = parse_jfen(POS_A)
    paths = legal_paths(pos, DEFAULT)
    # 14 row-14 stones step down; b1: b2; c1: d1; a2: a3 b2; c2: b2 d2 c3; b3: a3 c3 b4 b2; a1 blocked.
    assert len(paths) == 14 + 1 + 1 + 2 + 3 + 4
    assert paths_from(pos, "a1") == set()
    assert paths_from(pos, "c2") == {"c2-b2", "c2-d2", "c2-c3"}
    assert paths_from(pos, "b3") == {"b3-a3", "b3-c3", "b3-b4", "b3-b2"}
    assert all("x" not in p for p in paths)
    assert paths["b3-b2"] == 2  # a1 b1 a2 b2 and b1 c1 b2 c2
    assert paths["c2-b2"] == 1  # a1 b1 a2 b2 (c2 has left)
    assert paths["a2-b2"] == 1  # b1 c1 b2 c2 (a2 has left)
    assert paths["b1-b2"] == 0
    assert paths["a14-a13"] == 0
    # a move forming 2 squares takes 2 of Black's 15 stones: C(15, 2) victim sets
    two = moves_with_path(pos, "b3-b2")
    assert len(two) == math.comb(15, 2) == 105
    assert "b3-b2/n1/a12" in two and "b3-b2/a12/n1" not in two  # n1 (13) sorts before a12 (154)
    assert "b3-b2/n1/n12" in two
    assert len(moves_with_path(pos, "c2-b2")) == 15
    assert moves_with_path(pos, "b1-b2") == ["b1-b2"]
    # 22 non-capturing paths + 105 + 15 + 15
    assert len(legal_moves(pos, DEFAULT)) == 22 + 105 + 15 + 15
    assert perft(pos, DEFAULT, 1) == 157


def test_black_steps_only():
    pos = with_move(POS_A, "b")
    assert paths_from(pos, "n1") == {"n1-m1", "n1-n2"}
    # every row-12 stone steps up or down; no flights for a side with 15 stones
    assert len(legal_paths(pos, DEFAULT)) == 2 + 14 * 2


def test_flights_with_14_stones():
    pos = parse_jfen(POS_B14)
    paths = legal_paths(pos, DEFAULT)
    empties = 196 - 14 - 15
    assert len(paths) == 14 * empties  # only flights, no jumps possible
    assert paths["n7-a14"] == 0  # anywhere on the board
    assert paths["n7-n6"] == 0  # an adjacent flight is written like a step
    assert paths["n7-b2"] == 4  # fills the hole of the ring: 4 squares
    assert paths["a1-b2"] == 3  # a1 has left: 3 squares
    assert paths["b1-b2"] == 2
    assert len(moves_with_path(pos, "n7-b2")) == math.comb(15, 4) == 1365
    assert len(moves_with_path(pos, "a1-b2")) == math.comb(15, 3)
    # quiet increases on a non-capturing flight, resets on a capture
    after = apply_move(pos, "n7-a14", DEFAULT)
    assert after.quiet == 1 and after.ply == 197 and after.to_move == "b"
    after = apply_move(pos, "n7-b2/a12/b12/c12/d12", DEFAULT)
    assert after.quiet == 0
    assert after.board[idx("b2")] == "W" and after.board[idx("n7")] == "."
    assert [after.board[idx(p)] for p in ("a12", "b12", "c12", "d12", "e12")] == [".", ".", ".", ".", "B"]


def test_15_stones_do_not_fly():
    pos = parse_jfen(POS_B15)
    assert paths_from(pos, "n7") == {"n7-n6", "n7-n8", "n7-m7"}
    assert "n7-b2" not in legal_paths(pos, DEFAULT)
    with pytest.raises(ValueError, match="non-adjacent"):
        apply_move(pos, "n7-b2/a12/b12/c12/d12", DEFAULT)


# ---------------------------------------------------------------------------------------------------
# Jump chains
# ---------------------------------------------------------------------------------------------------


def test_chain_with_direction_change_and_prefixes():
    pos = parse_jfen(POS_C)
    for rule in ("strong-side-multi", "all-multi", "none"):  # both sides > 14: no restriction
        assert jumps(pos, RefRules(fly_jump_rule=rule)) == {"b2xb4", "b2xb4xd4", "b2xb4xd4xd6"}
    after = apply_move(pos, "b2xb4xd4xd6", DEFAULT)
    for p in ("b2", "b3", "c4", "d5"):
        assert after.board[idx(p)] == "."
    assert after.board[idx("d6")] == "W"
    assert after.quiet == 0 and after.to_move == "b"
    after1 = apply_move(pos, "b2xb4", DEFAULT)
    assert after1.board[idx("b3")] == "." and after1.board[idx("c4")] == "B"
    # Black's view: b3 can jump White b2 down to b1
    assert jumps(with_move(POS_C, "b")) == {"b3xb1"}


def test_chain_revisit_forbid_vs_allow_origin():
    pos = parse_jfen(POS_D)
    forbid = {"c3xc5", "c3xc5xe5", "c3xc5xe5xe3", "c3xe3", "c3xe3xe5", "c3xe3xe5xc5"}
    assert jumps(pos, RefRules(chain_revisit="forbid")) == forbid
    allowed = jumps(pos, RefRules(chain_revisit="allow"))
    assert allowed == forbid | {"c3xc5xe5xe3xc3", "c3xe3xe5xc5xc3"}
    after = apply_move(pos, "c3xc5xe5xe3xc3", RefRules(chain_revisit="allow"))
    assert after.board[idx("c3")] == "W"
    assert all(after.board[idx(p)] == "." for p in ("c4", "d5", "e4", "d3"))
    assert after.board.count("B") == 14
    with pytest.raises(ValueError):
        apply_move(pos, "c3xc5xe5xe3xc3", RefRules(chain_revisit="forbid"))


def test_chain_revisit_forbid_vs_allow_intermediate_point():
    pos = parse_jfen(POS_D2)
    forbid = {"c1xc3", "c1xc3xc5", "c1xc3xc5xe5", "c1xc3xc5xe5xe3",
              "c1xc3xe3", "c1xc3xe3xe5", "c1xc3xe3xe5xc5"}
    assert jumps(pos, RefRules(chain_revisit="forbid")) == forbid
    assert jumps(pos, RefRules(chain_revisit="allow")) == forbid | {"c1xc3xc5xe5xe3xc3", "c1xc3xe3xe5xc5xc3"}


E_ALL = {"b2xb4", "b2xb4xd4", "j2xj4"}
E_MULTI = {"b2xb4xd4"}


@pytest.mark.parametrize(
    "jfen, strong, all_multi",
    [
        (POS_E1, E_MULTI, E_MULTI),  # nP > 14, nQ <= 14
        (POS_E2, E_ALL, E_MULTI),  # nP <= 14, nQ > 14
        (POS_E3, E_ALL, E_ALL),  # both > 14
        (POS_E4, E_ALL, E_MULTI),  # both <= 14
        (POS_E5, E_MULTI, E_MULTI),  # 16 v 14
        (POS_E6, E_ALL, E_MULTI),  # 14 v 17
        (POS_E7, E_ALL, E_ALL),  # 15 v 15
        (POS_E8, E_ALL, E_MULTI),  # 14 v 6
    ],
)
def test_fly_jump_rule(jfen, strong, all_multi):
    pos = parse_jfen(jfen)
    assert pos.board.count("W") in (5, 14, 15, 16) and pos.board.count("B") in (6, 14, 15, 17)
    assert jumps(pos, RefRules(fly_jump_rule="strong-side-multi")) == strong
    assert jumps(pos, RefRules(fly_jump_rule="all-multi")) == all_multi
    assert jumps(pos, RefRules(fly_jump_rule="none")) == E_ALL


def test_fly_jump_rule_rejects_single_hop_move():
    pos = parse_jfen(POS_E1)
    with pytest.raises(ValueError):
        apply_move(pos, "j2xj4", DEFAULT)
    apply_move(pos, "j2xj4", RefRules(fly_jump_rule="none"))


def test_jump_square_capture_capped_by_stones_left():
    rules = RefRules(loss_below=1)
    pos = parse_jfen(POS_G3)
    paths = legal_paths(pos, rules)
    assert paths["b6xb4xb2"] == 2 and paths["b6xb4"] == 0
    assert moves_with_path(pos, "b6xb4xb2", rules) == ["b6xb4xb2/n14"]
    with pytest.raises(ValueError):
        apply_move(pos, "b6xb4xb2", rules)
    after = apply_move(pos, "b6xb4xb2/n14", rules)
    assert after.board.count("B") == 0
    assert outcome(after, rules) == (True, "w")
    # nothing left after the jump victims: the move takes no square victim at all
    pos2 = parse_jfen(POS_G2)
    assert legal_paths(pos2, rules)["b6xb4xb2"] == 2
    assert moves_with_path(pos2, "b6xb4xb2", rules) == ["b6xb4xb2"]
    after2 = apply_move(pos2, "b6xb4xb2", rules)
    assert after2.board.count("B") == 0 and after2.quiet == 0
    # with the default loss_below = 4, Black's 3 stones already ended the game
    assert legal_moves(pos, DEFAULT) == []
    assert outcome(pos, DEFAULT) == (True, "w")


def test_rule_book_notation_example():
    pos = parse_jfen(POS_H)
    assert pos.board.count("W") == 97 and pos.board.count("B") == 97
    assert pos.board[idx("g7")] == "." and pos.board[idx("h8")] == "."
    assert legal_paths(pos, DEFAULT)["i7xg7"] == 1
    moves = legal_moves(pos, DEFAULT)
    assert "i7xg7/g5" in moves
    assert len(moves_with_path(pos, "i7xg7")) == 96  # any of White's 96 stones left after h7
    after = apply_move(pos, "i7xg7/g5", DEFAULT)
    assert [after.board[idx(p)] for p in ("i7", "h7", "g7", "g5")] == [".", ".", "B", "."]
    assert after.board.count("W") == 95 and after.to_move == "w" and after.ply == 197


# ---------------------------------------------------------------------------------------------------
# Move parsing errors
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "move, message",
    [
        ("z9-b2", "unknown point"),
        ("b3-b2", "square victims"),  # victims missing
        ("b3-b2/n1", "square victims"),  # one victim short
        ("b3-b2/n12/n1", "out of order"),
        ("b3-b2/n1/n1", "repeated"),
        ("b3-b2/a1/n1", "not an opponent"),
        ("b3-b5", "non-adjacent"),
        ("b3xb6", "not 2 points"),
        ("b3-b2xb4", "mixes"),
        ("a1-a2", "not legal"),
        ("b1-b2/n1", "square victims"),
    ],
)
def test_apply_move_rejections(move, message):
    with pytest.raises(ValueError, match=message):
        apply_move(parse_jfen(POS_A), move, DEFAULT)


# ---------------------------------------------------------------------------------------------------
# End of the game
# ---------------------------------------------------------------------------------------------------


def test_loss_below_default_4():
    assert outcome(parse_jfen(POS_L3), DEFAULT) == (True, "b")  # side to move below 4
    assert outcome(with_move(POS_L3, "b"), DEFAULT) == (True, "b")  # opponent below 4
    assert legal_moves(parse_jfen(POS_L3), DEFAULT) == []
    assert legal_paths(with_move(POS_L3, "b"), DEFAULT) == {}
    assert outcome(parse_jfen(POS_L3), RefRules(loss_below=3)) == (False, None)
    assert outcome(parse_jfen(POS_L13), DEFAULT) == (False, None)


def test_loss_below_14():
    rules = RefRules(loss_below=14)
    assert outcome(parse_jfen(POS_L13), rules) == (True, "b")
    assert outcome(with_move(POS_L13, "b"), rules) == (True, "b")
    assert legal_moves(parse_jfen(POS_L13), rules) == []
    assert outcome(parse_jfen(POS_L14), rules) == (False, None)
    assert legal_paths(parse_jfen(POS_L14), rules)


def test_both_below_side_to_move_loses():
    both = "14/14/14/14/14/14/14/14/14/14/14/14/14/WWW8BBB w battle 0 196"
    assert outcome(parse_jfen(both), DEFAULT) == (True, "b")
    assert outcome(with_move(both, "b"), DEFAULT) == (True, "w")


def test_no_stones_is_legal_input_but_terminal():
    pos = parse_jfen("14/14/14/14/14/14/14/14/14/14/14/14/14/WWWWW9 b battle 0 196")
    assert outcome(pos, DEFAULT) == (True, "w")
    assert outcome(pos, RefRules(loss_below=0)) == (True, "w")  # no legal move
    assert legal_moves(pos, DEFAULT) == []


def test_no_legal_move_loses():
    pos = parse_jfen(POS_NOMOVE)
    assert legal_paths(pos, DEFAULT) == {}
    assert legal_moves(pos, DEFAULT) == []
    assert outcome(pos, DEFAULT) == (True, "b")
    assert perft(pos, DEFAULT, 1) == 0
    black = with_move(POS_NOMOVE, "b")
    assert outcome(black, DEFAULT) == (False, None)
    assert legal_paths(black, DEFAULT)


def _shuttle(rules):
    pos = parse_jfen(POS_A)
    history = [pos]
    for move in ["a14-a13", "n1-n2", "a13-a14", "n2-n1"] * 2:
        pos = apply_move(pos, move, rules)
        history.append(pos)
    return history


def test_repetition_draw():
    rules = DEFAULT
    h = _shuttle(rules)
    assert h[0].board == h[4].board == h[8].board and h[8].to_move == "w"
    assert h[8].quiet == 8 and h[8].ply == 204
    assert outcome(h[4], rules, h[:5]) == (False, None)  # second occurrence
    assert outcome(h[8], rules, h[:9]) == (True, "draw")  # third occurrence
    assert outcome(h[7], rules, h[:8]) == (False, None)  # h[3], h[7]: second occurrence
    assert outcome(h[8], rules) == (False, None)  # no history: cannot be seen
    assert outcome(h[4], RefRules(repetition_draw=2), h[:5]) == (True, "draw")
    assert outcome(h[8], RefRules(repetition_draw=0), h[:9]) == (False, None)
    # a history that stops just before the position is taken to continue with it
    assert outcome(h[8], rules, h[:8]) == (True, "draw")


def test_ply_cap():
    capped = POS_A.replace("battle 0 196", "battle 0 1196")  # White 20 v Black 15
    pos = parse_jfen(capped)
    assert outcome(pos, DEFAULT) == (True, "draw")
    assert legal_moves(pos, DEFAULT) == [] and legal_paths(pos, DEFAULT) == {}
    assert perft(pos, DEFAULT, 2) == 0
    stones = RefRules(adjudicate="stones")
    assert outcome(pos, stones) == (True, "w")
    assert outcome(replace(pos, to_move="b"), stones) == (True, "w")
    before = parse_jfen(POS_A.replace("battle 0 196", "battle 0 1195"))
    assert outcome(before, DEFAULT) == (False, None)
    assert outcome(before, RefRules(max_battle_plies=999)) == (True, "draw")
    assert outcome(parse_jfen(POS_A.replace("battle 0 196", "battle 5 206")), RefRules(max_battle_plies=10)) == (
        True,
        "draw",
    )
    # equal stones -> draw even with adjudication
    equal = parse_jfen("WWWWWWWWWWWWWW/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/14/14/14/14/14 w battle 0 1196")
    assert outcome(equal, stones) == (True, "draw")
    # decisive results take precedence over the cap
    assert outcome(parse_jfen(POS_L3.replace("battle 0 196", "battle 0 1196")), DEFAULT) == (True, "b")
    assert outcome(parse_jfen(POS_NOMOVE.replace("battle 0 196", "battle 0 1196")), DEFAULT) == (True, "b")


def test_layout_never_terminal():
    pos = parse_jfen(POS_T)
    assert outcome(pos, RefRules(max_battle_plies=0, loss_below=100)) == (False, None)


# ---------------------------------------------------------------------------------------------------
# Layout -> battle transition
# ---------------------------------------------------------------------------------------------------


def test_layout_to_battle_transition():
    pos = parse_jfen(POS_T)
    assert pos.board.count("W") == 98 and pos.board.count("B") == 97
    assert legal_moves(pos, DEFAULT) == ["a2"]
    battle = apply_move(pos, "a2", DEFAULT)
    assert battle.phase == "battle" and battle.to_move == "b"
    assert battle.ply == 196 and battle.quiet == 0
    assert battle.board[idx("g7")] == "." and battle.board[idx("h8")] == "."
    assert battle.board[idx("a2")] == "B"
    assert battle.board.count("W") == 97 and battle.board.count("B") == 97
    assert to_jfen(battle).endswith(" b battle 0 196")
    assert outcome(battle, DEFAULT) == (False, None)
    moves = legal_moves(battle, DEFAULT)
    # Black's possible moves all end on g7 or h8 (the only empty points)
    assert moves and all(m.split("/")[0][-2:] in ("g7", "h8") for m in moves)


# ---------------------------------------------------------------------------------------------------
# JFEN
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("jfen", ALL_HAND)
def test_jfen_round_trip(jfen):
    pos = parse_jfen(jfen)
    assert to_jfen(pos) == jfen
    assert parse_jfen(to_jfen(pos)) == pos


def test_jfen_round_trip_along_a_game():
    moves, _, _ = random_game(3, RefRules(max_battle_plies=60))
    pos = parse_jfen(START)
    for i, move in enumerate(moves):
        pos = apply_move(pos, move, RefRules(max_battle_plies=60))
        if i % 17 == 0 or pos.phase == "battle":
            assert parse_jfen(to_jfen(pos)) == pos


def test_jfen_layout_values():
    pos = parse_jfen("14/14/14/14/14/14/7B6/6W7/14/14/14/14/14/14 w layout 0 2")
    assert pos.board[idx("g7")] == "W" and pos.board[idx("h8")] == "B"
    assert pos.to_move == "w" and pos.phase == "layout" and pos.ply == 2
    # White may take h8 first; Black then has g7
    swapped = parse_jfen("14/14/14/14/14/14/7W6/6B7/14/14/14/14/14/WB12 w layout 0 4")
    assert swapped.board[idx("h8")] == "W" and len(legal_moves(swapped, DEFAULT)) == 192
    assert parse_jfen(START) == RefPosition(("." ,) * 196, "w", "layout", 0, 0)


BAD_JFENS = [
    # malformed rows / fields
    "14/14/14/14/14/14/14/14/14/14/14/14/14 w layout 0 0",  # 13 rows
    "14/14/14/14/14/14/14/14/14/14/14/14/14/14/14 w layout 0 0",  # 15 rows
    "14/14/14/14/14/14/14//14/14/14/14/14/14 w layout 0 0",  # empty row
    "14/14/14/14/14/14/14/14/14/14/14/14/14/14 w layout 0",  # 4 fields
    "14/14/14/14/14/14/14/14/14/14/14/14/14/14  w layout 0 0",  # double space
    "14/14/14/14/14/14/14/14/14/14/14/14/14/14 x layout 0 0",  # bad side
    "14/14/14/14/14/14/14/14/14/14/14/14/14/14 w setup 0 0",  # bad phase
    "14/14/14/14/14/14/14/14/14/14/14/14/14/14 w layout -1 0",  # bad integer
    "14/14/14/14/14/14/14/14/14/14/14/14/14/14 w layout 0 x",  # bad integer
    # wrong sums
    "13/14/14/14/14/14/14/14/14/14/14/14/14/14 w layout 0 0",
    "15/14/14/14/14/14/14/14/14/14/14/14/14/14 w layout 0 0",
    "14/14/14/14/14/14/14/6W8/14/14/14/14/14/14 b layout 0 1",
    "14/14/14/14/14/14/14/6W6/14/14/14/14/14/14 b layout 0 1",
    "WWWWWWWWWWWWWWW/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/14/14/14/14/14 w battle 0 196",
    "7 7/14/14/14/14/14/14/14/14/14/14/14/14/14 w layout 0 0",
    "0WWWWWWWWWWWWWW/14/14/14/14/14/14/14/14/14/14/14/14/BBBBBBBBBBBBBB w battle 0 196",
    # bad characters
    "14/14/14/14/14/14/14/6X7/14/14/14/14/14/14 b layout 0 1",
    "14/14/14/14/14/14/14/6w7/14/14/14/14/14/14 b layout 0 1",
    "14/14/14/14/14/14/14/6.7/14/14/14/14/14/14 b layout 0 1",
    # side to move inconsistent with a layout position
    "14/14/14/14/14/14/14/14/14/14/14/14/14/14 b layout 0 0",
    "14/14/14/14/14/14/14/6W7/14/14/14/14/14/14 w layout 0 1",
    "14/14/14/14/14/14/7B6/6W7/14/14/14/14/14/14 b layout 0 2",
    # layout without the centre stones (or with the wrong colours on them)
    "14/14/14/14/14/14/14/14/14/14/14/14/14/W13 b layout 0 1",
    "14/14/14/14/14/14/14/6W7/14/14/14/14/14/B13 w layout 0 2",
    "14/14/14/14/14/14/7W6/6W7/14/14/14/14/14/BB12 w layout 0 4",
    "14/14/14/14/14/14/14/6B7/14/14/14/14/14/14 b layout 0 1",  # first stone must be White's
    # stone balance impossible in a layout
    "14/14/14/14/14/14/7B6/6W7/14/14/14/14/14/BB12 w layout 0 4",
    # layout counters
    "14/14/14/14/14/14/7B6/6W7/14/14/14/14/14/14 w layout 1 2",
    "14/14/14/14/14/14/7B6/6W7/14/14/14/14/14/14 w layout 0 3",
    # battle counters
    "WWWWWWWWWWWWWW/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/14/14/14/14/14 w battle 0 150",
    "WWWWWWWWWWWWWW/14/BBBBBBBBBBBBBB/14/14/14/14/14/14/14/14/14/14/14 w battle 11 206",
    # more than 98 stones of a colour (99 White)
    "14/14/14/14/14/14/W13/WWWWWWWWWWWWWW/WWWWWWWWWWWWWW/WWWWWWWWWWWWWW/WWWWWWWWWWWWWW/"
    "WWWWWWWWWWWWWW/WWWWWWWWWWWWWW/WWWWWWWWWWWWWW w battle 0 196",
]


@pytest.mark.parametrize("bad", BAD_JFENS)
def test_bad_jfen_rejected(bad):
    with pytest.raises(ValueError):
        parse_jfen(bad)


def test_bad_jfen_messages_name_the_field():
    with pytest.raises(ValueError, match="board"):
        parse_jfen("14/14/14/14/14/14/14/6X7/14/14/14/14/14/14 b layout 0 1")
    with pytest.raises(ValueError, match="side-to-move"):
        parse_jfen("14/14/14/14/14/14/14/14/14/14/14/14/14/14 b layout 0 0")
    with pytest.raises(ValueError, match="centre"):
        parse_jfen("14/14/14/14/14/14/14/6W7/14/14/14/14/14/B13 w layout 0 2")
    with pytest.raises(ValueError, match="more than 98"):
        parse_jfen(BAD_JFENS[-1])


def test_98_stones_of_a_colour_accepted():
    full = "/".join(["WWWWWWWWWWWWWW"] * 7 + ["BBBBBBBBBBBBBB"] * 7) + " w battle 0 196"
    pos = parse_jfen(full)
    assert pos.board.count("W") == 98
    assert outcome(pos, DEFAULT) == (True, "b")  # full board: no move at all


# ---------------------------------------------------------------------------------------------------
# Random games and perft consistency
# ---------------------------------------------------------------------------------------------------


def test_random_game_replays_and_is_deterministic():
    rules = RefRules(max_battle_plies=150)
    moves, winner, reason = random_game(11, rules)
    assert (moves, winner, reason) == random_game(11, rules)
    assert reason in ("stones", "no-move", "repetition", "ply-cap")
    pos = parse_jfen(START)
    history = []
    for i, move in enumerate(moves):
        if pos.phase == "battle":
            history.append(pos)
            assert outcome(pos, rules, history) == (False, None)
            assert move.split("/")[0] in legal_paths(pos, rules)
        pos = apply_move(pos, move, rules)
        if i == 195:
            assert pos.phase == "battle" and pos.ply == 196
    history.append(pos)
    terminal, result = outcome(pos, rules, history)
    assert terminal and result == winner
    if reason == "ply-cap":
        assert pos.ply - 196 == 150


def test_perft_depth2_matches_enumeration():
    pos = parse_jfen(POS_C)
    expected = sum(len(legal_moves(apply_move(pos, m, DEFAULT), DEFAULT)) for m in legal_moves(pos, DEFAULT))
    assert perft(pos, DEFAULT, 2) == expected
    assert perft(pos, DEFAULT, 1) == len(legal_moves(pos, DEFAULT))


def test_random_game_default_rules_speed():
    t = time.perf_counter()
    moves, winner, reason = random_game(0, DEFAULT)
    assert time.perf_counter() - t < 20
    assert len(moves) >= 196 and reason in ("stones", "no-move", "repetition", "ply-cap")
    if reason == "ply-cap":
        assert len(moves) == 196 + 1000



@settings(max_examples=4, deadline=None)
@given(st.integers(min_value=0, max_value=10**6))
def test_path_invariants_along_random_games(seed):
    """Shape checks of every legal path in positions met along a short random game."""
    rules = RefRules(max_battle_plies=120)
    moves, _, _ = random_game(seed, rules)
    pos = parse_jfen(START)
    for move in moves:
        pos = apply_move(pos, move, rules)
        if pos.phase != "battle":
            continue
        me, opp = pos.to_move.upper(), ("B" if pos.to_move == "w" else "W")
        flying = pos.board.count(me) <= 14
        for path, k in legal_paths(pos, rules).items():
            if "-" in path:
                a, b = (idx(p) for p in path.split("-"))
                assert pos.board[a] == me and pos.board[b] == "."
                if not flying:
                    assert abs(a % 14 - b % 14) + abs(a // 14 - b // 14) == 1
                assert 0 <= k <= (4 if flying else 2)
                hops = 0
            else:
                pts = [idx(p) for p in path.split("x")]
                assert pos.board[pts[0]] == me
                for a, b in zip(pts, pts[1:]):
                    dc, dr = b % 14 - a % 14, b // 14 - a // 14
                    assert (abs(dc), abs(dr)) in ((2, 0), (0, 2))
                    assert pos.board[(a + b) // 2] == opp
                assert len(set(pts)) == len(pts)  # default chain_revisit = forbid
                assert 0 <= k <= 2
                hops = len(pts) - 1
            n_opp = pos.board.count(opp)
            m = min(k, n_opp - hops)
            first = legal_moves_for_path_first(pos, path, m, opp)
            after = apply_move(pos, first, rules)
            assert after.board.count(opp) == n_opp - hops - m
            assert after.board.count(me) == pos.board.count(me)
            assert after.quiet == (0 if hops + m else pos.quiet + 1)


def legal_moves_for_path_first(pos, path, m, opp):
    victims = [i for i in range(196) if pos.board[i] == opp]
    # jump victims are the midpoints of the hops
    if "x" in path:
        pts = [idx(p) for p in path.split("x")]
        for a, b in zip(pts, pts[1:]):
            victims.remove((a + b) // 2)
    names = ["abcdefghijklmn"[v % 14] + str(v // 14 + 1) for v in victims[:m]]
    return path + "".join("/" + n for n in names)
