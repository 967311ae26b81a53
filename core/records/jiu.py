"""The competition "JIU" record (rule book 7.2).

JIU record (``.jiu``, ``.txt``; rule book 7.2). Written as three lines (UTF-8)::

    [JIU14][<white name> z][<black name> Z][<result text>][<date>][<event>]
    0,g6,H7,<placement 3>,...,<placement 196>
    1,<Black's centre stone>;2,<White's centre stone>;3,<path>[,<captured>...];4,...;

A point code is a row letter ``a``..``n`` (rows 1..14) and a column character ``0``..``9``, ``A``..``D``
(columns a..n); a lowercase row letter is White's stone, uppercase Black's (``g6`` = White on g7,
``H7`` = Black on h8). A battle path lists the origin and every landing joined by ``-`` in the
mover's case; the captured stones follow in the victim's case, jump victims in hop order then square
victims ascending. Result text: ``first wins`` / ``second wins`` / ``draw`` / ``unfinished``. The date
field holds ``start_time`` (or ``metadata["date"]``), the event field ``metadata["event"]``; field 7
carries the ruleset (``[ruleset chain_revisit=forbid fly_jump_rule=none loss_below=4 ...]``, every
``Ruleset`` option as ``key=value``; the rule book lets the header hold further bracketed fields), then
any ``metadata["jiu_extra"]`` fields. JSON -> JIU -> JSON is lossless for the ruleset, players, result,
start time, event and moves (not for ``search`` and other metadata). The battle line is written only
once the layout is complete.

Accepted when reading JIU: any number of bracketed header fields (field 1 must start with ``JIU``;
fields 2 and 3 are the team names with an optional trailing `` z``/`` Z`` marker; field 4 the result,
mapped from ``first wins``/``先手胜`` -> ``w``, ``second wins``/``后手胜`` -> ``b``, ``draw``/``平局``/
``和棋`` -> ``draw``, anything else -> ``None``; field 5 the date, kept as ``start_time`` when it parses
as an ISO date (``.`` and ``/`` separators allowed), else in ``metadata["date"]``; field 6 the event;
a later field ``ruleset key=value ...`` is the record's ruleset (at most one; options left out keep the
rule book's defaults); further fields in ``metadata["jiu_extra"]``). The body is split into tokens at
commas, semicolons and
whitespace; a token of digits starts an entry (so entries may end with ``;``, a line break or
nothing). Entry ``0`` is the layout: placements in order, each in the placing side's case. Entries
``1`` and ``2`` (in either order) must name the two centre stones, one of each colour, as placed in
the layout. Entries from ``3`` on are moves, numbered consecutively. A battle entry is resolved
against the legal moves (see :func:`parse_jiu_entry`): captured stones may be listed in any order;
the mover's case must be the side to move's and each captured stone's case the colour on its point
(the case of landing points is not checked).
Colour slips in the layout, occupied points, bad centre stones, wrong cases and illegal moves raise
``RecordError`` with the entry index.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from core.atomic import atomic_write_text
from core.board import BLACK, NUM_POINTS, SIZE, WHITE
from core.errors import JiuError, RecordError
from core.notation import Move, parse_move
from core.records.record import GBK_TOO, GameRecord, check_same_ruleset, read_record_text
from core.records.resolve import (
    RESULT_TEXT,
    Listed,
    apply_placement,
    check_centre_removals,
    finished_record,
    parse_result_text,
    resolve_move,
)
from core.rules import DEFAULT_RULESET, Ruleset
from core.state import GameState

_ROW_LETTERS = "abcdefghijklmn"
_COL_CHARS = "0123456789ABCD"


def format_jiu_point(point: int, colour: int) -> str:
    """JIU code of ``colour``'s (``WHITE``/``BLACK``) stone on ``point``: ``g7`` White -> ``g6``,
    ``h8`` Black -> ``H7``."""
    row_letter = _ROW_LETTERS[point // SIZE]
    return (row_letter if colour == WHITE else row_letter.upper()) + _COL_CHARS[point % SIZE]


def parse_jiu_point(code: str, where: str = "JIU point") -> tuple[int, int]:
    """``(point index, colour)`` of a JIU code: ``g6`` -> (g7, ``WHITE``), ``H7`` -> (h8,
    ``BLACK``). The column character may be in either case. Raises ``RecordError`` naming ``where``."""
    if len(code) == 2 and code[0].lower() in _ROW_LETTERS and code[0].isascii() and code[1].upper() in _COL_CHARS:
        row = _ROW_LETTERS.index(code[0].lower())
        col = _COL_CHARS.index(code[1].upper())
        return row * SIZE + col, WHITE if code[0].islower() else BLACK
    raise RecordError(
        f"{where}: {code!r} is not a JIU point (row letter a-n, lowercase White / uppercase Black,"
        " then column 0-9 or A-D)"
    )




_JIU_HEADER_FIELD = re.compile(r"\s*\[([^\[\]]*)\]")
_JIU_TOKEN = re.compile(r"[^,;\s]+")


def _jiu_listed(code: str, where: str) -> Listed:
    point, colour = parse_jiu_point(code, where)
    return Listed(point, colour, code)


def _jiu_entry_parts(tokens: Sequence[str], where: str) -> tuple[Listed, list[int], list[Listed]]:
    if not tokens:
        raise RecordError(f"{where}: empty entry")
    path_codes = tokens[0].split("-")
    if any(not c for c in path_codes):
        raise RecordError(f"{where}: path {tokens[0]!r} has an empty point")
    mover = _jiu_listed(path_codes[0], f"{where} path")
    landings = [_jiu_listed(c, f"{where} path").point for c in path_codes[1:]]
    captured = [_jiu_listed(c, f"{where} captured stone") for c in tokens[1:]]
    return mover, landings, captured


def parse_jiu_entry(state: GameState, text: str) -> Move:
    """Resolve one JIU battle entry (``"3,G8-G6,g7,e6;"``; the leading index and the ``;`` are
    optional) against the legal moves of ``state``.

    A legal move matches if its point sequence equals the path and its captured stones (jump victims
    plus square victims) equal the listed ones as a set; the order of the listed stones is free. If
    a flight and a jump match, the one whose canonical listing equals the listed order wins. Raises
    ``RecordError`` naming the entry (index and text) and the reason: bad point codes, wrong case of
    the mover or of a captured stone, no legal path, captures that fit no legal move, ambiguity.
    """
    tokens = _JIU_TOKEN.findall(text)
    label = f"battle entry {text.strip()!r}"
    if tokens and tokens[0].isdigit():
        label = f"battle entry {tokens[0]} {text.strip()!r}"
        tokens = tokens[1:]
    mover, landings, captured = _jiu_entry_parts(tokens, label)
    return resolve_move(state, mover, landings, captured, label)


def format_jiu_entry(index: int, state: GameState, move: Move) -> str:
    """The JIU battle entry (with ``;``) of ``move`` played in ``state``: path in the mover's case,
    then jump victims in hop order and square victims ascending in the victim's case."""
    me, opp = state.side, 1 - state.side
    path = "-".join(format_jiu_point(p, me) for p in move.path)
    victims = "".join("," + format_jiu_point(v, opp) for v in (*move.jumped, *move.victims))
    return f"{index},{path}{victims};"


def _header_text(field: str, what: str) -> str:
    if any(ch in field for ch in "[]\r\n"):
        raise RecordError(f"JIU header {what} {field!r}: may not contain '[', ']' or line breaks")
    return field


def record_to_jiu(record: GameRecord) -> str:
    """The JIU text of ``record`` (module docstring), validating every move by replay. Raises
    ``RecordError`` on an illegal move or a header field containing brackets or line breaks."""
    states = record.replay()
    date = record.start_time or str(record.metadata.get("date", ""))
    fields = [
        "JIU14",
        f"{_header_text(record.white, 'white name')} z",
        f"{_header_text(record.black, 'black name')} Z",
        RESULT_TEXT[record.result],
        _header_text(date, "date"),
        _header_text(str(record.metadata.get("event", "")), "event"),
        format_ruleset_field(record.ruleset),
        *(_header_text(str(f), "extra field") for f in record.metadata.get("jiu_extra", ())),
    ]
    moves = [parse_move(m) for m in record.moves]
    layout = moves[:NUM_POINTS]
    lines = ["".join(f"[{f}]" for f in fields)]
    codes = [format_jiu_point(m.origin, WHITE if i % 2 == 0 else BLACK) for i, m in enumerate(layout)]
    lines.append(",".join(["0", *codes]) if codes else "0,")
    if len(layout) == NUM_POINTS:
        white_centre, black_centre = layout[0].origin, layout[1].origin
        battle = [f"1,{format_jiu_point(black_centre, BLACK)};2,{format_jiu_point(white_centre, WHITE)};"]
        for k, move in enumerate(moves[NUM_POINTS:]):
            battle.append(format_jiu_entry(k + 3, states[NUM_POINTS + k], move))
        lines.append("".join(battle))
    return "\n".join(lines) + "\n"


RULESET_FIELD = "ruleset"


def format_ruleset_field(ruleset: Ruleset) -> str:
    """The header field carrying ``ruleset``: ``ruleset`` then every option as ``key=value``, e.g.
    ``ruleset chain_revisit=forbid fly_jump_rule=none loss_below=4 ...``."""
    return " ".join([RULESET_FIELD, *(f"{k}={v}" for k, v in ruleset.model_dump().items())])


def parse_ruleset_field(field: str, where: str) -> Ruleset:
    """The ``Ruleset`` of a ``ruleset key=value ...`` header field (options left out keep the rule
    book's defaults). Raises ``RecordError`` naming ``where`` and the option."""
    data: dict[str, str] = {}
    for item in field.split()[1:]:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RecordError(f"{where}: {item!r} is not KEY=VALUE")
        if key in data:
            raise RecordError(f"{where}: option {key!r} repeated")
        data[key] = value
    try:
        return Ruleset.parse(data)
    except JiuError as exc:
        raise RecordError(f"{where}: {exc}") from None


def write_jiu(record: GameRecord, path: str | os.PathLike) -> None:
    """Write ``record`` as a JIU record, atomically. Raises ``RecordError`` (see
    :func:`record_to_jiu`) before touching the file, ``OSError`` on I/O failure."""
    atomic_write_text(path, record_to_jiu(record))


def _split_jiu_header(text: str) -> tuple[list[str], str]:
    fields, pos = [], 0
    while m := _JIU_HEADER_FIELD.match(text, pos):
        fields.append(m.group(1))
        pos = m.end()
    if not fields:
        raise RecordError("JIU header: no bracketed fields; expected [JIU14][first team z][second team Z][result]...")
    if not fields[0].strip().upper().startswith("JIU"):
        raise RecordError(f"JIU header field 1 {fields[0]!r}: expected the format tag JIU14")
    return fields, text[pos:]


def _team_name(field: str) -> str:
    return re.sub(r"(^|\s+)[zZ]$", "", field.strip())


def _iso_date(text: str) -> str | None:
    """``text`` if it is an ISO date/time, or its ISO form when only ``.``/``/`` separate the date."""
    candidates = [text.strip()]
    m = re.fullmatch(r"(\d{4})[./-](\d{1,2})[./-](\d{1,2})(.*)", text.strip())
    if m:
        candidates.append(f"{m[1]}-{int(m[2]):02d}-{int(m[3]):02d}{m[4]}")
        candidates.append(f"{m[1]}-{int(m[2]):02d}-{int(m[3]):02d}")
    for c in candidates:
        try:
            datetime.fromisoformat(c)
        except ValueError:
            continue
        return c
    return None


def _jiu_entries(body: str) -> list[tuple[int, list[str]]]:
    """The body's entries ``(index, tokens)``: a token of digits starts an entry."""
    entries: list[tuple[int, list[str]]] = []
    for tok in _JIU_TOKEN.findall(body):
        if tok.isdigit():
            entries.append((int(tok), []))
        elif not entries:
            raise RecordError(f"JIU body: {tok!r} before the layout line; expected '0,' then the placements")
        else:
            entries[-1][1].append(tok)
    return entries


def read_jiu(
    source: str | os.PathLike, ruleset: Ruleset = DEFAULT_RULESET, check_ruleset: bool = False
) -> GameRecord:
    """Read a JIU record from a path or from its text (a ``str`` starting with ``[`` or holding a
    line break), validating every placement and move. The record's own ``[ruleset ...]`` header
    field decides the rules; ``ruleset`` applies to a record without one, and with ``check_ruleset``
    a carried ruleset that differs from ``ruleset`` is an error. Raises ``RecordError`` naming the
    file (when read from one), the header field or the entry index (``layout entry <n>`` for the n-th
    placement, ``battle entry <n>``) and the reason; ``OSError`` if the file cannot be read."""
    if isinstance(source, str) and (source.lstrip().startswith("[") or "\n" in source):
        return jiu_to_record(source, ruleset, check_ruleset)
    try:
        return jiu_to_record(read_record_text(source, GBK_TOO), ruleset, check_ruleset)
    except RecordError as exc:
        raise RecordError(f"{source}: {exc}") from None


def jiu_to_record(text: str, ruleset: Ruleset = DEFAULT_RULESET, check_ruleset: bool = False) -> GameRecord:
    """Parse JIU record text (see :func:`read_jiu`)."""
    fields, body = _split_jiu_header(text)
    fields += [""] * (6 - len(fields))
    carried = [i for i, f in enumerate(fields) if i >= 6 and f.split(maxsplit=1)[:1] == [RULESET_FIELD]]
    if len(carried) > 1:
        raise RecordError(f"JIU header field {carried[1] + 1}: a second ruleset field")
    if carried:
        own = parse_ruleset_field(fields[carried[0]], f"JIU header field {carried[0] + 1} (ruleset)")
        if check_ruleset:
            check_same_ruleset(own, ruleset, "JIU header ruleset")
        ruleset = own
        del fields[carried[0]]
    entries = _jiu_entries(body)
    if entries and entries[0][0] != 0:
        raise RecordError(f"JIU body: the first entry is {entries[0][0]}; expected the layout line '0,...'")
    state = GameState.initial(ruleset)
    moves: list[Move] = []
    for n, code in enumerate(entries[0][1] if entries else [], 1):
        where = f"layout entry {n}"
        point, colour = parse_jiu_point(code, where)
        state = apply_placement(state, point, colour, code, where)
        moves.append(Move((point,)))
    battle = entries[1:]
    if battle:
        state = _read_jiu_battle(state, [m.origin for m in moves], battle, moves)
    start_time = _iso_date(fields[4])
    metadata: dict[str, Any] = {}
    if fields[5].strip():
        metadata["event"] = fields[5].strip()
    if start_time is None and fields[4].strip():
        metadata["date"] = fields[4].strip()
    if len(fields) > 6:
        metadata["jiu_extra"] = fields[6:]
    result = parse_result_text(fields[3])
    white, black = _team_name(fields[1]), _team_name(fields[2])
    return finished_record(state, moves, ruleset, result, white, black, start_time, metadata)


def _read_jiu_battle(
    state: GameState, layout: list[int], entries: list[tuple[int, list[str]]], moves: list[Move]
) -> GameState:
    """Check the centre-removal entries 1 and 2, then resolve and play entries 3, 4, ... (appending
    to ``moves``); return the final state."""
    first = entries[:2]
    removals, wheres = [], []
    for index, tokens in first:
        where = f"battle entry {index} {','.join(tokens)!r}"
        if index not in (1, 2) or len(tokens) != 1:
            raise RecordError(f"{where}: entries 1 and 2 must each name one centre stone (like '1,H7;2,g6;')")
        removals.append(_jiu_listed(tokens[0], where))
        wheres.append(where)
    if len(first) == 2 and first[0][0] == first[1][0]:
        raise RecordError(f"{wheres[1]}: entry {first[0][0]} repeated")
    check_centre_removals(layout, removals, wheres)
    for expected, (index, tokens) in enumerate(entries[2:], 3):
        where = f"battle entry {index} {','.join(tokens)!r}"
        if index != expected:
            raise RecordError(f"{where}: expected entry {expected} (entries are numbered consecutively)")
        mover, landings, captured = _jiu_entry_parts(tokens, where)
        move = resolve_move(state, mover, landings, captured, where)
        state = state.apply(move)
        moves.append(move)
    return state

