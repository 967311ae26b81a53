"""Tests of game records (core/records/) against the rule book, section 7.

Expected values are derived by hand in the comments (point codes, hand-built positions, a
hand-designed CSV game) or by an independent re-implementation in this file (the JIU entry of a move
string); round trips compare against the moves that random play produced.
"""

from __future__ import annotations

import functools
import json
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import BLACK, DEFAULT_RULESET, WHITE, GameState, Move, RecordError, Ruleset
from core.records import (
    GameRecord,
    detect_format,
    format_jiu_entry,
    format_jiu_point,
    parse_jiu_entry,
    parse_jiu_point,
    parse_result_text,
    read_csv,
    read_json,
    read_jiu,
    read_record,
    record_from_json,
    record_to_dict,
    record_to_jiu,
    write_jiu,
    write_json,
    write_record,
)

COLS = "abcdefghijklmn"
DATA = Path(__file__).parent / "data" / "records"


def idx(name: str) -> int:
    """Point index by the rule book's formula (independent of core.board)."""
    return (int(name[1:]) - 1) * 14 + COLS.index(name[0])


def name(point: int) -> str:
    return f"{COLS[point % 14]}{point // 14 + 1}"


# ----------------------------------------------------------------------------------- game builders
def random_moves(seed: int, battle_cap: int = 300, ruleset: Ruleset = DEFAULT_RULESET, first: str | None = None):
    """Moves of a random legal game: uniform placement, then a uniform legal path with a uniform
    victim set of the required size. Stops at the end or after ``battle_cap`` battle plies."""
    rng = random.Random(seed)
    state = GameState.initial(ruleset)
    moves: list[str] = []
    while not state.is_terminal() and state.ply < 196 + battle_cap:
        if state.phase == 0:
            options = state.legal_moves()
            move = Move((idx(first),)) if first and state.ply == 0 else rng.choice(options)
        else:
            ps = state.paths()
            i = rng.randrange(ps.m)
            path, jump = ps.path(i), bool(ps.jump[i])
            left = state.victims_left(path, jump)
            move = Move(path, jump, tuple(sorted(rng.sample(left, min(int(ps.nsq[i]), len(left))))))
        state = state.apply(move)
        moves.append(str(move))
    return moves, state


@functools.lru_cache(maxsize=None)
def random_record(seed: int, battle_cap: int = 300, first: str | None = None, ruleset: Ruleset = DEFAULT_RULESET):
    moves, _ = random_moves(seed, battle_cap, ruleset, first)
    return GameRecord.from_moves(moves, ruleset, white="Team A", black="Team B", start_time="2024-05-01T10:00:00")


def battle_state(white: list[str], black: list[str], side: int, ruleset: Ruleset = DEFAULT_RULESET) -> GameState:
    board = np.zeros(196, np.int8)
    for p in white:
        board[idx(p)] = 1
    for p in black:
        board[idx(p)] = 2
    return GameState(board, side, 1, 0, 250, ruleset)


# Filler stones far from the action so that no side is below loss_below = 4; none forms a square.
W_FILL = ["n14", "l14", "n12", "l12"]
B_FILL = ["a14", "c14", "a12", "c12"]


# ----------------------------------------------------------------------------------- independent JIU
def jiu_code(point_name: str, colour: int) -> str:
    """Rule book 7.2 by hand: row letter (row 1 -> a) in the stone's case, then column 0-9, A-D."""
    col, row = COLS.index(point_name[0]), int(point_name[1:])
    letter = COLS[row - 1]
    return (letter if colour == WHITE else letter.upper()) + "0123456789ABCD"[col]


def expected_entry(index: int, move: str, mover: int) -> str:
    """JIU battle entry of a move string: path, then jump victims (hop midpoints) and square victims."""
    path_part, *squares = move.split("/")
    pts = re.split("[x-]", path_part)
    jumped = []
    if "x" in path_part:
        for a, b in zip(pts, pts[1:]):
            mid_col = (COLS.index(a[0]) + COLS.index(b[0])) // 2
            mid_row = (int(a[1:]) + int(b[1:])) // 2
            jumped.append(f"{COLS[mid_col]}{mid_row}")
    path = "-".join(jiu_code(p, mover) for p in pts)
    return f"{index},{path}" + "".join("," + jiu_code(v, 1 - mover) for v in jumped + squares) + ";"


# =================================================================================== point codes
def test_point_codes_rule_book_examples():
    assert parse_jiu_point("g6") == (idx("g7"), WHITE)
    assert parse_jiu_point("H7") == (idx("h8"), BLACK)
    assert parse_jiu_point("a0") == (idx("a1"), WHITE)
    assert parse_jiu_point("ND") == (idx("n14"), BLACK)
    assert parse_jiu_point("dA") == (idx("k4"), WHITE)  # row d = 4, column A = 11th = k
    assert parse_jiu_point("nd") == (idx("n14"), WHITE)  # column letter case is free
    assert format_jiu_point(idx("g7"), WHITE) == "g6"
    assert format_jiu_point(idx("h8"), BLACK) == "H7"
    assert format_jiu_point(idx("k4"), BLACK) == "DA"


@pytest.mark.parametrize("bad", ["o1", "a", "aE", "1a", "g66", "", "é1"])
def test_point_codes_rejected(bad):
    with pytest.raises(RecordError, match="not a JIU point"):
        parse_jiu_point(bad)


@given(st.integers(0, 195), st.sampled_from([WHITE, BLACK]))
def test_point_code_round_trip(point, colour):
    code = format_jiu_point(point, colour)
    assert code == jiu_code(name(point), colour)
    assert parse_jiu_point(code) == (point, colour)


# =================================================================================== battle entries
def example_state() -> GameState:
    """Rule book 7.2 example. Black to move; Black i7, f7, f8, g8; White h7, g5 (+ fillers).

    Row 8:  . f8=B g8=B  .   .
    Row 7:  . f7=B  g7   h7=W i7=B
    Row 5:         g5=W
    i7 jumps h7 onto g7; cell f7-g7-f8-g8 is then Black's square, so one victim: g5.
    Black has 8 stones (flying), so i7-g7 is also a legal flight forming the same square."""
    return battle_state(["h7", "g5", *W_FILL], ["i7", "f7", "f8", "g8", *B_FILL], BLACK)


def test_rule_book_example_entry():
    state = example_state()
    assert str(parse_jiu_entry(state, "3,G8-G6,g7,e6;")) == "i7xg7/g5"
    assert str(parse_jiu_entry(state, "G8-G6,g7,e6")) == "i7xg7/g5"
    # captured stones out of order (square victim before the jump victim)
    assert str(parse_jiu_entry(state, "3,G8-G6,e6,g7;")) == "i7xg7/g5"
    # without h7 among the captured stones the path can only be the flight
    assert str(parse_jiu_entry(state, "3,G8-G6,e6;")) == "i7-g7/g5"
    # h7 alone: the jump would still owe a square victim, so it is the flight taking h7 for its square
    assert str(parse_jiu_entry(state, "3,G8-G6,g7;")) == "i7-g7/h7"
    assert format_jiu_entry(3, state, Move((idx("i7"), idx("g7")), True, (idx("g5"),))) == "3,G8-G6,g7,e6;"


@pytest.mark.parametrize(
    "entry, message",
    [
        ("3,g8-G6,g7,e6;", "mover 'g8' is White's stone"),  # wrong case of the mover
        ("3,G7-G5,g7,e6;", "mover 'G7': h7 holds White's stone"),  # origin h7 is White's
        ("3,G8-G6,G7,e6;", "captured stone 'G7'"),  # h7 is White's, written as Black's
        ("3,G8-G6,g7,e5;", "captured stone 'e5': f5 holds no stone"),
        ("3,G8-G6,g7,g7,e6;", "captured stone 'g7' is the mover's own colour|listed twice"),
        ("3,G8-G6;", "do not fit"),  # the jump must take h7; the flight forms a square: 1 victim due
        ("3,G8-G6,g7,e6,nD;", "do not fit"),  # one victim too many (n14 is a White filler)
        ("3,G8-G5,g7;", "battle entry 3"),  # i7 to g6: no such path
        ("3,G8-Z5;", "not a JIU point"),
    ],
)
def test_bad_entries_rejected_with_index(entry, message):
    with pytest.raises(RecordError, match="battle entry 3") as info:
        parse_jiu_entry(example_state(), entry)
    assert re.search(message, str(info.value))


def test_double_jump_victims_out_of_order():
    # Black c3 jumps White c4 then White c6: c3xc5xc7. Codes: c3 = C2, c5 = E2, c7 = G2, c4 = d2, c6 = f2.
    state = battle_state(["c4", "c6", *W_FILL], ["c3", *B_FILL], BLACK)
    assert str(parse_jiu_entry(state, "5,C2-E2-G2,f2,d2;")) == "c3xc5xc7"
    assert str(parse_jiu_entry(state, "5,C2-E2-G2,d2,f2;")) == "c3xc5xc7"
    assert str(parse_jiu_entry(state, "5,C2-E2,d2;")) == "c3xc5"
    assert str(parse_jiu_entry(state, "5,C2-E2;")) == "c3-c5"  # Black flies (5 stones)
    with pytest.raises(RecordError, match="battle entry 5.*c6, which is not listed"):
        parse_jiu_entry(state, "5,C2-E2-G2,d2;")


def test_flight_and_jump_with_same_captures_is_ambiguous():
    # loss_below 1; White has only a2. Black a1 flying: a1-a3 forms the square a3-b3-a4-b4 and takes
    # a2 (the only White stone), a1xa3 jumps a2 and forms the same square with nothing left to take.
    rules = Ruleset(loss_below=1)
    state = battle_state(["a2"], ["a1", "b3", "a4", "b4"], BLACK, rules)
    with pytest.raises(RecordError, match="ambiguous.*a1-a3/a2.*a1xa3|ambiguous.*a1xa3.*a1-a3/a2"):
        parse_jiu_entry(state, "3,A0-C0,b0;")


@functools.lru_cache(maxsize=None)
def capture_examples():
    """(state, move) pairs with at least two captured stones, from random play."""
    out = []
    for seed in (11, 12):
        states = random_record(seed).replay()
        for state, text in zip(states, random_record(seed).moves):
            move = state.parse_move(text)
            if len(move.jumped) + len(move.victims) >= 2:
                out.append((state, move))
    assert out
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_captured_stones_in_any_order(data):
    state, move = data.draw(st.sampled_from(capture_examples()))
    captured = [*move.jumped, *move.victims]
    order = data.draw(st.permutations(captured))
    entry = "-".join(format_jiu_point(p, state.side) for p in move.path)
    entry += "".join("," + format_jiu_point(v, 1 - state.side) for v in order)
    assert parse_jiu_entry(state, entry) == move


# =================================================================================== JSON records
@pytest.mark.parametrize("seed, rules", [(1, DEFAULT_RULESET), (2, Ruleset(loss_below=14, fly_jump_rule="all-multi"))])
def test_json_round_trip(tmp_path, seed, rules):
    moves, final = random_moves(seed, battle_cap=1000, ruleset=rules)
    search = [None if i % 3 else {"visits": i, "value": i / 7} for i in range(len(moves))]
    record = GameRecord.from_moves(
        moves, rules, white="W", black="黑", start_time="2024-05-01T10:00:00+08:00",
        search=search, metadata={"seed": seed, "note": ["a", 1]},
    )
    assert record.result == final.outcome().winner_code
    path = tmp_path / "game.json"
    write_json(record, path)
    back = read_json(path)
    assert back == record
    assert list(back.moves) == moves
    assert back.final_state().to_jfen() == final.to_jfen()
    assert json.loads(path.read_text("utf-8"))["players"] == {"white": "W", "black": "黑"}


def short_record_dict() -> dict:
    return record_to_dict(GameRecord.from_moves(random_moves(3, battle_cap=0)[0][:10]))


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d.pop("moves"), "'moves': missing"),
        (lambda d: d.pop("ruleset"), "'ruleset': missing"),
        (lambda d: d.pop("players"), "'players': missing"),
        (lambda d: d.update(result="white"), "'result'"),
        (lambda d: d["ruleset"].update(loss_below=0), "'loss_below'"),
        (lambda d: d["ruleset"].update(foo=1), "'foo'"),
        (lambda d: d.update(players={"white": "a"}), "'players.black'"),
        (lambda d: d["moves"].__setitem__(3, 5), "'moves[3]'"),
        (lambda d: d["moves"].__setitem__(2, "zz"), "'moves': move 3 'zz'"),
        (lambda d: d.update(moves="g7 h8"), "'moves'"),
        (lambda d: d.update(search=[None]), "'search'"),
        (lambda d: d.update(start_time="yesterday"), "'start_time'"),
        (lambda d: d.update(reason=3), "'reason'"),
        (lambda d: d.update(colour="w"), "'colour': unknown"),
        (lambda d: d.update(version=2), "'version'"),
        (lambda d: d.update(format="pgn"), "'format'"),
    ],
)
def test_bad_json_fields_named(mutate, field):
    data = short_record_dict()
    mutate(data)
    with pytest.raises(RecordError) as info:
        record_from_json(json.dumps(data), "g.json")
    assert field in str(info.value)
    assert str(info.value).startswith("g.json: ")


def test_malformed_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"moves": ["g7",\n ]', "utf-8")
    with pytest.raises(RecordError, match=r"bad.json: not valid JSON: line 2"):
        read_json(path)
    path.write_text("[1, 2]", "utf-8")
    with pytest.raises(RecordError, match="JSON object"):
        read_json(path)


def test_replay_names_the_bad_move():
    record = GameRecord(moves=("g7", "h8", "a1", "a1"))
    with pytest.raises(RecordError, match=r"move 4 'a1':.*occupied"):
        record.replay()
    # After the layout both centre points are empty, so no stone can start from g7.
    layout = random_moves(4, battle_cap=0)[0]
    record = GameRecord(moves=(*layout, "g7-g8"))
    with pytest.raises(RecordError, match=r"move 197 'g7-g8':.*g7 holds no stone"):
        record.final_state()
    assert len(GameRecord(moves=tuple(layout)).replay()) == 197


def test_from_moves_outcome():
    record = GameRecord.from_moves(["g7", "h8"])
    assert (record.result, record.reason) == (None, "unfinished")
    with pytest.raises(RecordError, match="move 2 'g7'"):
        GameRecord.from_moves(["g7", "g7"])


# =================================================================================== JIU records
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_jiu_round_trip_full_games(seed):
    moves, final = random_moves(seed, battle_cap=1000)
    record = GameRecord.from_moves(moves, white="Team A", black="Team B")
    back = read_jiu(record_to_jiu(record))
    assert list(back.moves) == moves
    assert back.final_state().to_jfen() == final.to_jfen()
    assert (back.white, back.black, back.result) == ("Team A", "Team B", final.outcome().winner_code)


def test_jiu_round_trip_other_ruleset(tmp_path):
    rules = Ruleset(loss_below=14)
    record = random_record(5, 1000, None, rules)
    path = tmp_path / "g.jiu"
    write_jiu(record, path)
    back = read_jiu(path, rules)
    assert back.moves == record.moves
    assert back.reason == record.reason
    assert back.final_state().to_jfen() == record.final_state().to_jfen()


def test_jiu_text_layout_and_entries():
    record = random_record(6, 300, "g7")
    header, layout, battle = record_to_jiu(record).splitlines()
    assert header == (
        "[JIU14][Team A z][Team B Z][unfinished][2024-05-01T10:00:00][][ruleset chain_revisit=forbid"
        " fly_jump_rule=strong-side-multi loss_below=4 repetition_draw=3 max_battle_plies=1000 adjudicate=none"
        " end_order=decisive-first]"
    )
    placements = layout.split(",")
    assert placements[0] == "0" and len(placements) == 197
    assert placements[1:3] == ["g6", "H7"]
    for n, (code, move) in enumerate(zip(placements[1:], record.moves), 1):
        assert code == jiu_code(move, WHITE if n % 2 else BLACK)
    assert battle.startswith("1,H7;2,g6;")  # rule book: Black's centre stone first
    entries = [e + ";" for e in battle.split(";")[2:-1]]
    assert len(entries) == len(record.moves) - 196
    for k, (entry, move) in enumerate(zip(entries, record.moves[196:])):
        assert entry == expected_entry(k + 3, move, BLACK if k % 2 == 0 else WHITE)


def jiu_lines(seed: int = 7) -> list[str]:
    return record_to_jiu(random_record(seed, 40)).splitlines()


def test_jiu_header_is_lenient():
    _, layout, battle = jiu_lines()
    expected = random_record(7, 40).moves
    text = f"[jiu14][Alpha][Beta z][先手胜][2019.08.10][CCGC 2019][round 3][table 2]\n{layout}\n{battle}\n"
    back = read_jiu(text)
    assert back.moves == expected
    assert (back.white, back.black, back.result) == ("Alpha", "Beta", "w")
    assert back.start_time == "2019-08-10"
    assert back.metadata == {"event": "CCGC 2019", "jiu_extra": ["round 3", "table 2"]}
    assert read_jiu(f"[JIU14]\n{layout}\n{battle}").moves == expected  # header fields missing
    # entries separated by line breaks instead of ';', layout and battle on one line
    assert read_jiu(f"[JIU14][a][b][draw]\n{layout};{battle.replace(';', chr(10))}").moves == expected
    with pytest.raises(RecordError, match="header field 1"):
        read_jiu(f"[PGN][a z][b Z]\n{layout}\n{battle}")


def test_jiu_rewrite_is_stable():
    text = "\n".join(jiu_lines()) + "\n"
    assert record_to_jiu(read_jiu(text)) == text


def replace_layout_entry(layout: str, n: int, code: str) -> str:
    tokens = layout.split(",")
    tokens[n] = code
    return ",".join(tokens)


def test_layout_colour_slip_rejected():
    header, layout, battle = jiu_lines()
    fifth = layout.split(",")[5]  # placement 5 is White's: lowercase
    assert fifth.islower() or fifth[0].islower()
    slipped = replace_layout_entry(layout, 5, fifth[0].upper() + fifth[1])
    with pytest.raises(RecordError, match=r"layout entry 5 .*Black's stone, but White places"):
        read_jiu(f"{header}\n{slipped}\n{battle}")


def test_layout_occupied_and_centre_rejected():
    header, layout, battle = jiu_lines()
    third = layout.split(",")[3]
    with pytest.raises(RecordError, match=r"layout entry 7 .*occupied"):
        read_jiu(f"{header}\n{replace_layout_entry(layout, 7, third)}\n{battle}")
    with pytest.raises(RecordError, match=r"layout entry 1 .*centre"):
        read_jiu(f"{header}\n{replace_layout_entry(layout, 1, third)}\n{battle}")


def test_centre_removal_entries():
    header, layout, battle = jiu_lines()
    first_white = layout.split(",")[1]  # White's centre stone, g6 or h7 in lowercase
    first_black = layout.split(",")[2]
    rest = battle.split(";", 2)[2]
    expected = random_record(7, 40).moves
    assert battle.startswith(f"1,{first_black};2,{first_white};")
    swapped = f"1,{first_white};2,{first_black};{rest}"
    assert read_jiu(f"{header}\n{layout}\n{swapped}").moves == expected
    reordered = f"2,{first_white};1,{first_black};{rest}"
    assert read_jiu(f"{header}\n{layout}\n{reordered}").moves == expected
    with pytest.raises(RecordError, match="battle entry 2 'e5'.*not a centre point"):
        read_jiu(f"{header}\n{layout}\n1,{first_black};2,e5;{rest}")
    with pytest.raises(RecordError, match="battle entry 2.*the layout put White's stone"):
        read_jiu(f"{header}\n{layout}\n1,{first_black};2,{first_white.upper()};{rest}")
    with pytest.raises(RecordError, match="battle entry 3.*entries 1 and 2 must"):
        read_jiu(f"{header}\n{layout}\n{rest}")


def test_illegal_battle_move_rejected_with_index():
    header, layout, battle = jiu_lines()
    entries = battle.split(";")
    state = random_record(7, 40).replay()[196 + 7]  # before entry 10 (the 8th battle move, White)
    assert state.side == WHITE
    own = [p for p in range(196) if state.board[p] == 1]
    empty = [p for p in range(196) if state.board[p] == 0]
    # a White stone and an empty point neither adjacent nor two apart on a line: not a step or jump
    o, d = next((o, d) for o in own for d in empty
                if abs(o % 14 - d % 14) + abs(o // 14 - d // 14) > 2 and o % 14 != d % 14 and o // 14 != d // 14)
    entries[9] = f"10,{format_jiu_point(o, WHITE)}-{format_jiu_point(d, WHITE)}"
    with pytest.raises(RecordError, match=r"battle entry 10 .*not adjacent"):
        read_jiu(f"{header}\n{layout}\n{';'.join(entries)}")
    entries = battle.split(";")
    entries[9] = "11" + entries[9][2:]
    with pytest.raises(RecordError, match=r"battle entry 11 .*expected entry 10"):
        read_jiu(f"{header}\n{layout}\n{';'.join(entries)}")


def test_unfinished_layout_round_trip(tmp_path):
    record = GameRecord.from_moves(random_moves(8, 0)[0][:51])
    text = record_to_jiu(record)
    assert len(text.splitlines()) == 2  # no battle line before the layout is complete
    back = read_jiu(text)
    assert back.moves == record.moves and (back.result, back.reason) == (None, "unfinished")
    empty = GameRecord()
    assert read_jiu(record_to_jiu(empty)).moves == ()


def test_jiu_file_errors_name_the_file(tmp_path):
    header, layout, battle = jiu_lines()
    path = tmp_path / "bad.jiu"
    path.write_text(f"{header}\n{replace_layout_entry(layout, 5, 'ZZ')}\n{battle}\n", "utf-8")
    with pytest.raises(RecordError, match=r"bad.jiu: layout entry 5"):
        read_record(path)


def test_jiu_gbk_file(tmp_path):
    header, layout, battle = jiu_lines()
    path = tmp_path / "g.jiu"
    path.write_bytes(f"[JIU14][甲队 z][乙队 Z][后手胜][2019-08-10][]\n{layout}\n{battle}\n".encode("gbk"))
    back = read_record(path)[0]
    assert (back.white, back.black, back.result) == ("甲队", "乙队", "b")


# =================================================================================== CSV import
def csv_game() -> tuple[list[str], list[str]]:
    """A hand-designed layout and its Stage[1] tokens.

    Fixed points: White g7 (centre), f7, h7, i8, h9, i9; Black h8 (centre), e7, g8, a1; the other
    186 points: the 92 lowest-index ones White, the rest Black (98 each).
    Move 1 (Black): e7 jumps f7 onto g7. Cells at g7: f6-g7 and f7-g8 contain the emptied f7,
    g6-h7 and g7-h8 contain White h7: no square.  -> e7xg7
    Move 2 (White): h7-h8. Cell h8-i8-h9-i9 is all White (square); g7-h8 has Black g7, h7-i8 the
    emptied h7, g8-h9 Black g8: one square, White takes Black a1.  -> h7-h8/a1
    """
    white = ["g7", "f7", "h7", "i8", "h9", "i9"]
    black = ["h8", "e7", "g8", "a1"]
    fixed = set(white + black)
    rest = [name(p) for p in range(196) if name(p) not in fixed]
    white += rest[:92]
    black += rest[92:]
    assert len(white) == len(black) == 98
    order = [p for pair in zip(white, black) for p in pair]
    tokens = [f"{'W' if i % 2 == 0 else 'B'}({p[0].upper()},{p[1:]})" for i, p in enumerate(order)]
    return order, tokens


def test_csv_import_hand_written(tmp_path):
    order, tokens = csv_game()
    line1 = "1,A vs B,Stage[1]:" + ",".join(tokens) + ",Stage[2]:B(E,7)-O(G,7),TC:W(F,7),W(H,7)-O(H,8),FC:B(A,1)"
    line2 = ("2;Stage[1]: " + "; ".join(tokens) + " Stage[2]: B(H,8) W(G,7); B(E, 7)-O(G, 7); TC: W(F, 7);"
             " W(H,7)-O(H,8); FC: B(A,1)")
    path = tmp_path / "open.csv"
    path.write_text(f"id,record\n{line1}\n\n{line2}\n", "utf-8")
    games = read_csv(path)
    assert len(games) == 2
    for game in games:
        assert list(game.moves) == [*order, "e7xg7", "h7-h8/a1"]
    assert games[0].metadata["csv_line"] == 2 and games[1].metadata["csv_line"] == 4
    assert read_record(path) == games and detect_format(path) == "csv"


@pytest.mark.parametrize(
    "stage2, message",
    [
        ("B(E,7)-O(G,7),TC:W(F,7),W(H,7)-O(H,8)", r"line 1, move 2 'W\(H,7\)'.*do not fit"),
        ("B(E,7)-O(G,7),TC:W(F,7),W(H,7)-O(H,8),FC:W(I,9)", r"line 1, move 2 .*own colour"),
        ("B(E,7)-O(G,7),W(H,7)-O(H,8),FC:B(A,1)", r"line 1, move 1 .*f7, which is not listed"),
        ("W(H,7)-O(H,8),FC:B(A,1)", r"line 1, move 1 .*White's stone, but Black is to move"),
        ("B(E,7)-O(G,7),TC:W(F,7),X(H,7)-O(H,8)", r"line 1.*unrecognised text"),
        ("W(G,8) B(E,7)-O(G,7)", r"line 1, Stage\[2\] 'W\(G,8\)'.*not a centre point"),
    ],
)
def test_csv_bad_moves(tmp_path, stage2, message):
    _, tokens = csv_game()
    path = tmp_path / "bad.csv"
    path.write_text("Stage[1]:" + ",".join(tokens) + ",Stage[2]:" + stage2 + "\n", "utf-8")
    with pytest.raises(RecordError, match=message):
        read_csv(path)


def test_csv_layout_slip(tmp_path):
    _, tokens = csv_game()
    tokens[4] = "B" + tokens[4][1:]  # placement 5 is White's
    path = tmp_path / "slip.csv"
    path.write_text("Stage[1]:" + ",".join(tokens) + "\n", "utf-8")
    with pytest.raises(RecordError, match=r"line 1, placement 5 .*Black's stone, but White places"):
        read_csv(path)


def test_csv_fixture_file():
    games = read_record(DATA / "open-tournament.csv")
    assert [len(g.moves) for g in games] == [198]
    assert games[0].moves[-2:] == ("e7xg7", "h7-h8/a1")


# =================================================================================== atomic writes, dispatch
def test_atomic_write_leaves_no_temp_files(tmp_path):
    record = random_record(9, 20)
    write_record(record, tmp_path / "a.json")
    write_record(record, tmp_path / "a.jiu")
    write_record(record, tmp_path / "a.jiu")  # overwrite
    assert sorted(os.listdir(tmp_path)) == ["a.jiu", "a.json"]
    assert read_record(tmp_path / "a.jiu")[0].moves == read_record(tmp_path / "a.json")[0].moves == record.moves


def test_failed_serialisation_keeps_old_file(tmp_path):
    path = tmp_path / "g.json"
    write_json(random_record(9, 20), path)
    before = path.read_bytes()
    bad = GameRecord.model_construct(**{**dict(random_record(9, 20)), "metadata": {"x": object()}})
    with pytest.raises(RecordError, match="serialise"):
        write_json(bad, path)
    jiu = tmp_path / "g.jiu"
    write_jiu(random_record(9, 20), jiu)
    jiu_before = jiu.read_bytes()
    with pytest.raises(RecordError, match=r"white name"):
        write_jiu(random_record(9, 20).model_copy(update={"white": "a]b"}), jiu)
    assert path.read_bytes() == before and jiu.read_bytes() == jiu_before
    assert sorted(os.listdir(tmp_path)) == ["g.jiu", "g.json"]


@pytest.mark.parametrize("broken", ["fsync", "replace"])
def test_failed_disk_write_keeps_old_file(tmp_path, monkeypatch, broken):
    path = tmp_path / "g.json"
    write_json(random_record(9, 20), path)
    before = path.read_bytes()

    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, broken, fail)
    with pytest.raises(OSError, match="No space left on device") as info:
        write_json(random_record(10, 20), path)
    assert info.value.filename == str(path)  # a full disk names the file, not a temporary one
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["g.json"]


def test_detect_format_and_dispatch(tmp_path):
    record = random_record(9, 20)
    txt = tmp_path / "game.txt"
    write_record(record, txt)  # .txt is written as JIU
    assert txt.read_text("utf-8").startswith("[JIU14]")
    assert detect_format(txt) == "jiu"
    noext = tmp_path / "game"
    write_record(record, noext, "json")
    assert detect_format(noext) == "json"
    assert read_record(noext)[0] == record
    with pytest.raises(RecordError, match="import only"):
        write_record(record, tmp_path / "g.csv")
    with pytest.raises(RecordError, match="format 'sgf'"):
        read_record(txt, "sgf")
    with pytest.raises(RecordError, match="cannot tell"):
        write_record(record, tmp_path / "g.sgf")
    assert not (tmp_path / "g.csv").exists()


@pytest.mark.parametrize(
    "text, result",
    [("first wins", "w"), ("先手胜", "w"), ("Second Wins", "b"), ("后手胜", "b"), ("draw", "draw"),
     ("平局", "draw"), ("和棋", "draw"), ("unfinished", None), ("", None), ("?", None)],
)
def test_result_text(text, result):
    assert parse_result_text(text) == result


# ----------------------------------------------------------------------------------- rules survive conversion
RULESETS = st.builds(
    Ruleset,
    chain_revisit=st.sampled_from(["forbid", "allow"]),
    fly_jump_rule=st.sampled_from(["strong-side-multi", "all-multi", "none"]),
    loss_below=st.integers(1, 14),
    repetition_draw=st.sampled_from([0, 2, 3, 5]),
    max_battle_plies=st.integers(1, 400),
    adjudicate=st.sampled_from(["none", "stones"]),
    end_order=st.sampled_from(["decisive-first", "cap-first"]),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ruleset=RULESETS, seed=st.integers(0, 2**32 - 1))
def test_json_jiu_json_keeps_the_ruleset(tmp_path, ruleset, seed):
    from core.playout import random_game_moves

    moves, _, _ = random_game_moves(seed, ruleset.vector)
    record = GameRecord.from_moves(moves, ruleset, white="A", black="B", start_time="2024-05-01T10:00:00",
                                   metadata={"event": "cup"})
    write_json(record, tmp_path / "a.json")
    write_record(read_record(tmp_path / "a.json")[0], tmp_path / "a.jiu")
    back = read_record(tmp_path / "a.jiu")[0]  # no ruleset given: the header's must be used
    assert back == record
    write_json(back, tmp_path / "b.json")
    assert json.loads((tmp_path / "b.json").read_text("utf-8"))["ruleset"] == ruleset.model_dump()


def test_game_under_other_rules_replays_from_jiu_only_with_them(tmp_path):
    """The issue's case: a game played with fly_jump_rule=none, as JIU. Without the ruleset field the
    default rules reject it (the reader reports an entry); with the field it replays as played."""
    from core.playout import random_game_moves

    none = Ruleset(fly_jump_rule="none")
    for seed in range(50):
        moves, _, _ = random_game_moves(seed, none.vector)
        try:
            GameRecord.from_moves(moves, DEFAULT_RULESET)
        except RecordError:
            break
    else:
        pytest.skip("no seed below 50 gives a game that only fly_jump_rule=none allows")
    text = record_to_jiu(GameRecord.from_moves(moves, none))
    assert read_jiu(text).ruleset == none
    stripped = re.sub(r"\[ruleset [^\]]*\]", "", text)
    with pytest.raises(RecordError, match="battle entry"):
        read_jiu(stripped)
    assert read_jiu(stripped, none).moves == tuple(str(m) for m in moves)


def test_given_rules_must_agree_with_the_records_own(tmp_path):
    record = random_record(9, 20)
    write_json(record, tmp_path / "g.json")
    write_jiu(record, tmp_path / "g.jiu")
    other = Ruleset(max_battle_plies=300)
    for path in (tmp_path / "g.json", tmp_path / "g.jiu"):
        assert read_record(path, ruleset=other)[0].ruleset == DEFAULT_RULESET  # the record's own wins
        with pytest.raises(RecordError, match=r"max_battle_plies=1000, but the given rules say max_battle_plies=300"):
            read_record(path, ruleset=other, check_ruleset=True)
        assert read_record(path, ruleset=DEFAULT_RULESET, check_ruleset=True)[0] == record


@pytest.mark.parametrize("field, message", [
    ("[ruleset loss_below=0]", r"field 7 \(ruleset\): ruleset field 'loss_below'"),
    ("[ruleset bogus=1]", r"field 7 \(ruleset\): ruleset field 'bogus'"),
    ("[ruleset loss_below]", r"'loss_below' is not KEY=VALUE"),
    ("[ruleset loss_below=4 loss_below=5]", "repeated"),
    ("[ruleset loss_below=4][ruleset loss_below=4]", "field 8: a second ruleset field"),
])
def test_bad_ruleset_field_is_named(field, message):
    text = record_to_jiu(random_record(9, 20))
    text = re.sub(r"\[ruleset [^\]]*\]", field, text)
    with pytest.raises(RecordError, match=message):
        read_jiu(text)


def test_ruleset_field_keeps_defaults_for_options_left_out():
    text = re.sub(r"\[ruleset [^\]]*\]", "[ruleset fly_jump_rule=none]", record_to_jiu(random_record(9, 20)))
    assert read_jiu(text).ruleset == Ruleset(fly_jump_rule="none")


# ----------------------------------------------------------------------------------- bounded reads
def test_record_readers_refuse_oversized_and_binary_input(tmp_path, monkeypatch):
    from core.errors import InputError
    from core.records import record as record_module

    path = tmp_path / "g.json"
    write_json(random_record(9, 20), path)
    monkeypatch.setattr(record_module, "MAX_RECORD_BYTES", path.stat().st_size - 1)
    for fmt in ("json", "jiu", "csv"):
        with pytest.raises(InputError, match=r"g.json: record file larger than \d+ bytes"):
            read_record(path, fmt)
    monkeypatch.undo()
    binary = tmp_path / "b.jiu"
    binary.write_bytes(b"[JIU14]\xff\xfe\x81\x30\xff")
    with pytest.raises(InputError, match=r"b.jiu: not utf-8 or gb18030 text \(byte 0x"):
        read_record(binary)


def test_deeply_nested_json_is_a_record_error():
    with pytest.raises(RecordError, match="nested too deeply"):
        record_from_json("[" * 100_000 + "]" * 100_000)
