"""JFEN and notation: round trips and bad-input errors (rule book sections 4 and 6)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from core import GameState, InvalidPositionError, Move, NotationError, POINT_NAMES, parse_move
from core.board import POINT_BY_NAME
from core.jfen import START_JFEN, parse_jfen
from tests.strategies import battle_boards, layout_positions, played_positions


def test_point_indices_follow_the_rule_book():
    assert [POINT_BY_NAME[n] for n in ("a1", "n1", "a2", "g7", "h8", "n14")] == [0, 13, 14, 90, 105, 195]


@settings(max_examples=200, deadline=None)
@given(battle_boards())
def test_jfen_round_trip_battle(jfen):
    assert GameState.from_jfen(jfen).to_jfen() == jfen


@settings(max_examples=50, deadline=None)
@given(layout_positions())
def test_jfen_round_trip_layout(jfen):
    assert GameState.from_jfen(jfen).to_jfen() == jfen


@settings(max_examples=100, deadline=None)
@given(played_positions())
def test_notation_round_trip_of_every_legal_move(jfen):
    state = GameState.from_jfen(jfen)
    moves = state.legal_moves()[:500]
    for m in moves:
        assert parse_move(str(m)) == m
        assert str(state.parse_move(str(m))) == str(m)


EMPTY_ROWS = "/".join(["14"] * 14)


@pytest.mark.parametrize(
    "jfen, field",
    [
        ("", "fields"),
        (EMPTY_ROWS + " w layout 0", "5"),
        (EMPTY_ROWS + "  w layout 0 0", "5"),
        ("/".join(["14"] * 13) + " w layout 0 0", "rows"),
        ("/".join(["14"] * 13 + ["13"]) + " w layout 0 0", "row 1 adds up to 13"),
        ("/".join(["15"] + ["14"] * 13) + " w layout 0 0", "row 14"),
        ("/".join(["7X6"] + ["14"] * 13) + " w layout 0 0", "unknown character"),
        ("/".join(["07W6"] + ["14"] * 13) + " w battle 0 200", "empty run"),
        ("/".join(["W13W"] + ["14"] * 13) + " w battle 0 200", "adds up to 15"),
        (EMPTY_ROWS + " x layout 0 0", "side to move"),
        (EMPTY_ROWS + " w opening 0 0", "phase"),
        (EMPTY_ROWS + " w layout -1 0", "quiet plies"),
        (EMPTY_ROWS + " w battle 0 1.5", "ply"),
        (EMPTY_ROWS + " b layout 0 0", "side to move"),
        (EMPTY_ROWS + " w layout 3 0", "quiet plies"),
        ("/".join(["14"] * 7 + ["6W7"] + ["14"] * 6) + " w layout 0 1", "side to move"),
        ("/".join(["14"] * 7 + ["W13"] + ["14"] * 6) + " b layout 0 1", "first placement"),
        ("/".join(["14"] * 6 + ["7W6", "7B6"] + ["14"] * 6) + " w layout 0 2", "centre stones"),
        ("/".join(["14"] * 6 + ["7W6", "6W7"] + ["14"] * 6) + " w layout 0 2", "cannot arise"),
        ("/".join(["W" * 14] * 7 + ["W" + "B" * 13] + ["B" * 14] * 6) + " w battle 0 300", "99 White stones, at most 98"),
    ],
)
def test_bad_jfen_names_the_field(jfen, field):
    with pytest.raises(InvalidPositionError, match="JFEN") as err:
        parse_jfen(jfen)
    assert field in str(err.value)


def test_full_layout_board_is_rejected_but_battle_side_without_stones_is_terminal():
    full = "/".join(["WB" * 7, "BW" * 7] * 7)
    with pytest.raises(InvalidPositionError, match="battle position"):
        parse_jfen(full + " w layout 0 196")
    lone = GameState.from_jfen("/".join(["W13"] + ["14"] * 13) + " b battle 0 300")
    assert lone.is_terminal() and lone.outcome().winner_code == "w" and lone.outcome().reason == "stones"


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty"),
        ("z9", "not a point"),
        ("a15", "not a point"),
        ("a0", "not a point"),
        ("g7-g8xg10", "mixes"),
        ("g7-g8-g9", "exactly two points"),
        ("g7-g7", "same point"),
        ("g7xg8", "two points along a line"),
        ("g7xi9", "two points along a line"),
        ("g7-g8/c3/c3", "repeated"),
        ("g7-g8/k10/c3", "out of order"),
        ("g7/c3", "placement captures nothing"),
        ("g7-g8/", "not a point"),
    ],
)
def test_bad_notation_names_the_token(text, reason):
    with pytest.raises(NotationError) as err:
        parse_move(text)
    assert reason in str(err.value)


def test_notation_examples_of_the_rule_book():
    assert str(parse_move("g7")) == "g7"
    assert str(parse_move("a1-m12")) == "a1-m12"
    m = parse_move("g7xg9xe9")
    assert m.jump and m.jumped == (POINT_BY_NAME["g8"], POINT_BY_NAME["f9"])
    m = parse_move("e5-e6/c3/k10")
    assert [POINT_NAMES[v] for v in m.victims] == ["c3", "k10"]
    assert Move((POINT_BY_NAME["i7"], POINT_BY_NAME["g7"]), True, (POINT_BY_NAME["g5"],)).__str__() == "i7xg7/g5"


def test_start_position_and_first_placements():
    s = GameState.from_jfen(START_JFEN)
    assert [str(m) for m in s.legal_moves()] == ["g7", "h8"]
    assert [str(m) for m in s.apply("h8").legal_moves()] == ["g7"]
    assert [str(m) for m in s.apply("g7").legal_moves()] == ["h8"]
