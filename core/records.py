"""Game records (rule book section 7): the project's JSON record, the competition "JIU" record and the
open-tournament CSV (import only).

Every reader validates every move against the rules engine and raises ``RecordError`` naming the
field, line, entry or move index and the reason; nothing is guessed. Every writer serialises first
and then writes atomically (temporary file in the target's directory, ``fsync``, ``os.replace``), so a
failed write never leaves a half-written or clobbered file.

JSON record (``.json``, lossless, UTF-8), one object::

    {"format": "jiu-record", "version": 1,
     "ruleset": {"chain_revisit": "forbid", ...every Ruleset field...},
     "players": {"white": "A", "black": "B"},
     "result": "w" | "b" | "draw" | null,
     "reason": "stones" | "no-move" | "repetition" | "ply-cap" | "resign" | "unfinished" | ... | null,
     "start_time": ISO 8601 string | null,
     "moves": ["g7", "h8", ..., "i7xg7/g5", ...],          # rule book section 4, from the start
     "search": null | [null | {"visits": 800, "value": 0.12, ...}, ...],   # one entry per move
     "metadata": {...any JSON...}}

``ruleset``, ``players``, ``result`` and ``moves`` are required; ``format``, ``version``, ``reason``,
``start_time``, ``search`` and ``metadata`` are optional; unknown fields are rejected.

JIU record (``.jiu``, ``.txt``; rule book 7.2). Written as three lines (UTF-8)::

    [JIU14][<white name> z][<black name> Z][<result text>][<date>][<event>]
    0,g6,H7,<placement 3>,...,<placement 196>
    1,<Black's centre stone>;2,<White's centre stone>;3,<path>[,<captured>...];4,...;

A point code is a row letter ``a``..``n`` (rows 1..14) and a column character ``0``..``9``, ``A``..``D``
(columns a..n); a lowercase row letter is White's stone, uppercase Black's (``g6`` = White on g7,
``H7`` = Black on h8). A battle path lists the origin and every landing joined by ``-`` in the
mover's case; the captured stones follow in the victim's case, jump victims in hop order then square
victims ascending. Result text: ``first wins`` / ``second wins`` / ``draw`` / ``unfinished``. The date
field holds ``start_time`` (or ``metadata["date"]``), the event field ``metadata["event"]``, then any
``metadata["jiu_extra"]`` fields. The battle line is written only once the layout is complete.

Accepted when reading JIU: any number of bracketed header fields (field 1 must start with ``JIU``;
fields 2 and 3 are the team names with an optional trailing `` z``/`` Z`` marker; field 4 the result,
mapped from ``first wins``/``先手胜`` -> ``w``, ``second wins``/``后手胜`` -> ``b``, ``draw``/``平局``/
``和棋`` -> ``draw``, anything else -> ``None``; field 5 the date, kept as ``start_time`` when it parses
as an ISO date (``.`` and ``/`` separators allowed), else in ``metadata["date"]``; field 6 the event;
further fields in ``metadata["jiu_extra"]``). The body is split into tokens at commas, semicolons and
whitespace; a token of digits starts an entry (so entries may end with ``;``, a line break or
nothing). Entry ``0`` is the layout: placements in order, each in the placing side's case. Entries
``1`` and ``2`` (in either order) must name the two centre stones, one of each colour, as placed in
the layout. Entries from ``3`` on are moves, numbered consecutively. A battle entry is resolved
against the legal moves (see :func:`parse_jiu_entry`): captured stones may be listed in any order;
the mover's case must be the side to move's and each captured stone's case the colour on its point
(the case of landing points is not checked).
Colour slips in the layout, occupied points, bad centre stones, wrong cases and illegal moves raise
``RecordError`` with the entry index.

Open-tournament CSV (``.csv``, import only; rule book 7.3), one game per line; lines without
``Stage[`` (headers, blank lines) are skipped::

    [anything]Stage[1]: W(G,7), B(H,8), W(A,1), ...  Stage[2]: B(E,7)-O(G,7),TC:W(F,7); W(H,7)-O(H,8),FC:B(A,1); ...

A stone token is ``W(col,row)`` / ``B(col,row)`` / ``O(col,row)`` with column letter ``A``..``N`` and
row number ``1``..``14`` (case and spaces inside the parentheses are free). ``Stage[1]`` lists the
placements in order (``W``/``B`` only). In ``Stage[2]`` a move is a ``W``/``B`` mover token
immediately followed by one or more ``O`` landing tokens (joined by ``-``; a multi-hop jump lists every
landing); ``TC:`` starts the jump-victim list and ``FC:`` the square-victim list of the current move;
victims are ``W``/``B`` tokens. Up to two lone ``W``/``B`` tokens before the first move are read as the
removal of the centre stones and checked. The ``TC:`` and ``FC:`` stones together are matched
against the legal moves exactly like a JIU entry's captured stones (path plus captured set). Between
tokens only whitespace, digits and ``, ; : | " ' - . _ /`` may appear (full-width ``（，）`` inside a
token are accepted); any other leftover text (letters) in a stage is an error. The text before
``Stage[1]`` is kept in ``metadata["csv_prefix"]`` and searched for a result text as in JIU headers.
Errors name the line number and the placement or move index.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.board import BLACK, CENTRES, NUM_POINTS, PHASE_BATTLE, PHASE_LAYOUT, POINT_NAMES, SIZE, WHITE
from core.atomic import atomic_write_text
from core.errors import IllegalMoveError, JiuError, NotationError, RecordError
from core.notation import Move, parse_move
from core.rules import DEFAULT_RULESET, Ruleset
from core.state import GameState

__all__ = [
    "GameRecord",
    "detect_format",
    "format_jiu_entry",
    "format_jiu_point",
    "jiu_to_record",
    "parse_csv_line",
    "parse_jiu_entry",
    "parse_jiu_point",
    "parse_result_text",
    "read_csv",
    "read_json",
    "read_jiu",
    "read_record",
    "record_from_dict",
    "record_from_json",
    "record_to_dict",
    "record_to_jiu",
    "record_to_json",
    "write_jiu",
    "write_json",
    "write_record",
]

COLOUR_NAMES = ("White", "Black")
Result = Literal["w", "b", "draw"]
Format = Literal["json", "jiu", "csv"]


# ===================================================================================== the record
class GameRecord(BaseModel):
    """One game: ruleset, players, result, moves in rule-book notation from the start position.

    Fields: ``ruleset``; ``white`` and ``black`` (player names); ``result`` (``"w"``, ``"b"``,
    ``"draw"`` or ``None`` when unknown/unfinished); ``reason`` (free text such as ``"stones"``,
    ``"no-move"``, ``"repetition"``, ``"ply-cap"``, ``"resign"``, ``"unfinished"``, or ``None``);
    ``start_time`` (ISO 8601 string or ``None``); ``moves`` (notation strings, placements included);
    ``search`` (``None`` or one ``dict``/``None`` per move, e.g. ``{"visits": 800, "value": 0.1}``);
    ``metadata`` (any JSON-serialisable mapping: seeds, event, ...).

    Construction validates the shapes (pydantic ``ValidationError`` naming the field): notation
    syntax of every move, ``search`` length, JSON-serialisability of ``search`` and ``metadata``,
    ISO ``start_time``. Legality is checked by :meth:`replay`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ruleset: Ruleset = DEFAULT_RULESET
    white: str = "White"
    black: str = "Black"
    result: Result | None = None
    reason: str | None = None
    start_time: str | None = None
    moves: tuple[str, ...] = ()
    search: tuple[dict[str, Any] | None, ...] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("start_time")
    @classmethod
    def _iso_time(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                datetime.fromisoformat(v)
            except ValueError:
                raise ValueError(f"{v!r} is not an ISO 8601 date/time") from None
        return v

    @field_validator("moves")
    @classmethod
    def _notation(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for i, text in enumerate(v, 1):
            try:
                parse_move(text)
            except NotationError as exc:
                raise ValueError(f"move {i} {text!r}: {exc}") from None
        return v

    @field_validator("metadata")
    @classmethod
    def _metadata_json(cls, v: dict[str, Any]) -> dict[str, Any]:
        _check_json_value(v)
        return v

    @model_validator(mode="after")
    def _search_matches_moves(self) -> "GameRecord":
        if self.search is not None:
            if len(self.search) != len(self.moves):
                raise ValueError(
                    f"field 'search': {len(self.search)} entries for {len(self.moves)} moves"
                    " (one per move, null allowed)"
                )
            try:
                _check_json_value(list(self.search))
            except ValueError as exc:
                raise ValueError(f"field 'search': {exc}") from None
        return self

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_moves(
        cls,
        moves: Sequence[str | Move],
        ruleset: Ruleset = DEFAULT_RULESET,
        **fields: Any,
    ) -> "GameRecord":
        """A record of ``moves`` (validated by replay). ``result`` and ``reason`` default to the
        final position's outcome (``reason="unfinished"``, ``result=None`` when it is not terminal);
        other ``fields`` are passed through. Raises ``RecordError`` on an illegal move."""
        record = cls(ruleset=ruleset, moves=tuple(str(m) for m in moves), **fields)
        final = record.final_state()
        outcome = final.outcome()
        defaults: dict[str, Any] = {}
        if "result" not in fields:
            defaults["result"] = outcome.winner_code
        if "reason" not in fields:
            defaults["reason"] = outcome.reason if outcome.terminal else "unfinished"
        return record.model_copy(update=defaults) if defaults else record

    # ------------------------------------------------------------------ replay
    def _states(self):
        state = GameState.initial(self.ruleset)
        yield state
        for i, text in enumerate(self.moves, 1):
            try:
                state = state.apply(text)
            except (NotationError, IllegalMoveError) as exc:
                raise RecordError(f"move {i} {text!r}: {exc}") from None
            yield state

    def replay(self) -> list[GameState]:
        """All states from the start position, ``len(moves) + 1`` of them, validating every move.
        Raises ``RecordError("move <i> '<text>': <engine reason>")`` (1-based ``i``) on the first
        move that is not well-formed or not legal."""
        return list(self._states())

    def final_state(self) -> GameState:
        """The state after the last move (validating every move like :meth:`replay`)."""
        state = None
        for state in self._states():
            pass
        return state


def _check_json_value(value: Any) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not JSON-serialisable: {exc}") from None


# ===================================================================================== atomic I/O
def _read_text(path: str | os.PathLike, encodings: Sequence[str] = ("utf-8-sig", "gb18030")) -> str:
    """Text of a record file, trying ``encodings`` in order (referee software may write GBK).
    Raises ``RecordError`` if none decodes, ``OSError`` if the file cannot be read."""
    data = Path(path).read_bytes()
    for encoding in encodings:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise RecordError(f"{path}: not text in {' or '.join(encodings)}")


# ===================================================================================== JSON
JSON_FORMAT = "jiu-record"
JSON_VERSION = 1
_JSON_REQUIRED = ("ruleset", "players", "result", "moves")
_JSON_OPTIONAL = ("format", "version", "reason", "start_time", "search", "metadata")


def record_to_dict(record: GameRecord) -> dict[str, Any]:
    """The JSON object of ``record`` (module docstring)."""
    return {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "ruleset": record.ruleset.model_dump(),
        "players": {"white": record.white, "black": record.black},
        "result": record.result,
        "reason": record.reason,
        "start_time": record.start_time,
        "moves": list(record.moves),
        "search": None if record.search is None else list(record.search),
        "metadata": record.metadata,
    }


def record_to_json(record: GameRecord, indent: int | None = None) -> str:
    """``record`` as JSON text (one line unless ``indent``). Raises ``RecordError`` if a value is
    not JSON-serialisable (only possible for records built without validation)."""
    try:
        return json.dumps(record_to_dict(record), ensure_ascii=False, allow_nan=False, indent=indent)
    except (TypeError, ValueError) as exc:
        raise RecordError(f"record: cannot serialise as JSON: {exc}") from None


def _field_name(loc: Sequence[Any]) -> str:
    """JSON field path of a pydantic error location, e.g. ``moves[3]``, ``ruleset.loss_below``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def record_from_dict(data: Any, source: str = "record") -> GameRecord:
    """Build a record from a parsed JSON object. Raises ``RecordError("<source>: field '<name>':
    <reason>")`` for a missing, unknown or bad field."""
    if not isinstance(data, dict):
        raise RecordError(f"{source}: the top level must be a JSON object, got {type(data).__name__}")
    for key in data:
        if key not in _JSON_REQUIRED and key not in _JSON_OPTIONAL:
            raise RecordError(f"{source}: field {key!r}: unknown field")
    for key in _JSON_REQUIRED:
        if key not in data:
            raise RecordError(f"{source}: field {key!r}: missing")
    if data.get("format", JSON_FORMAT) != JSON_FORMAT:
        raise RecordError(f"{source}: field 'format': {data['format']!r}, expected {JSON_FORMAT!r}")
    version = data.get("version", JSON_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= JSON_VERSION:
        raise RecordError(f"{source}: field 'version': {version!r}, this reader knows version {JSON_VERSION}")
    if not isinstance(data["ruleset"], dict):
        raise RecordError(f"{source}: field 'ruleset': must be an object of ruleset options")
    try:
        ruleset = Ruleset.parse(data["ruleset"])
    except JiuError as exc:
        raise RecordError(f"{source}: {exc}") from None
    players = data["players"]
    if not isinstance(players, dict):
        raise RecordError(f"{source}: field 'players': must be an object with 'white' and 'black'")
    for key in players:
        if key not in ("white", "black"):
            raise RecordError(f"{source}: field 'players.{key}': unknown field")
    for key in ("white", "black"):
        if not isinstance(players.get(key), str):
            raise RecordError(f"{source}: field 'players.{key}': missing or not a string")
    fields = {k: data[k] for k in ("result", "reason", "start_time", "moves", "search", "metadata") if k in data}
    if fields.get("metadata", {}) is None:
        fields.pop("metadata")
    if isinstance(fields.get("moves"), list):
        bad = [i for i, m in enumerate(fields["moves"]) if not isinstance(m, str)]
        if bad:
            raise RecordError(f"{source}: field 'moves[{bad[0]}]': not a string")
    elif "moves" in fields:
        raise RecordError(f"{source}: field 'moves': must be a list of move strings")
    if isinstance(fields.get("search"), list):
        fields["search"] = tuple(fields["search"])
    try:
        return GameRecord(ruleset=ruleset, white=players["white"], black=players["black"], **fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        field = _field_name(err["loc"])
        raise RecordError(f"{source}: field {field!r}: {msg}" if field else f"{source}: {msg}") from None


def record_from_json(text: str, source: str = "<json>") -> GameRecord:
    """Parse JSON record text. Raises ``RecordError`` for malformed JSON (with line and column) or
    a bad field (named)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{source}: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return record_from_dict(data, source)


def write_json(record: GameRecord, path: str | os.PathLike) -> None:
    """Write ``record`` as a JSON record, atomically (serialised before the file is touched).
    Raises ``RecordError`` if it cannot be serialised, ``OSError`` on I/O failure."""
    atomic_write_text(path, record_to_json(record, indent=1) + "\n")


def read_json(path: str | os.PathLike) -> GameRecord:
    """Read a JSON record (does not replay it; call :meth:`GameRecord.replay`). Raises
    ``RecordError`` naming the file and the bad field, ``OSError`` if unreadable."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RecordError(f"{path}: not UTF-8 text: {exc}") from None
    return record_from_json(text, str(path))


# ===================================================================================== JIU points
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


# ===================================================================================== results
_RESULT_WORDS: tuple[tuple[Result, tuple[str, ...]], ...] = (
    ("w", ("first wins", "先手胜", "先手勝")),
    ("b", ("second wins", "后手胜", "後手勝")),
    ("draw", ("draw", "平局", "和棋")),
)
_RESULT_TEXT: dict[str | None, str] = {"w": "first wins", "b": "second wins", "draw": "draw", None: "unfinished"}


def parse_result_text(text: str) -> Result | None:
    """``"w"``/``"b"``/``"draw"`` if ``text`` names exactly one result (``first wins``/``先手胜``,
    ``second wins``/``后手胜``, ``draw``/``平局``/``和棋``, case-insensitive), else ``None``."""
    low = text.strip().lower()
    found = {code for code, words in _RESULT_WORDS if any(w in low for w in words)}
    return found.pop() if len(found) == 1 else None


# ===================================================================================== move resolution
class _Listed(NamedTuple):
    """A stone named in a record: its point, colour (``WHITE``/``BLACK``) and the text as written."""

    point: int
    colour: int
    text: str


def _matching_paths(state: GameState, path: tuple[int, ...]) -> list[int]:
    """Indices of the legal paths of ``state`` whose point sequence is ``path``."""
    ps = state.paths()
    if ps.m == 0:
        return []
    lengths = np.diff(ps.off[: ps.m + 1])
    starts = ps.pts[ps.off[: ps.m]]
    hits = np.flatnonzero((lengths == len(path)) & (starts == path[0]))
    return [int(i) for i in hits if ps.path(int(i)) == path]


def _is_hop(a: int, b: int) -> bool:
    (ac, ar), (bc, br) = (a % SIZE, a // SIZE), (b % SIZE, b // SIZE)
    return (ac == bc and abs(ar - br) == 2) or (ar == br and abs(ac - bc) == 2)


def _no_path_reason(state: GameState, path: tuple[int, ...]) -> str:
    """The engine's reason why no step, flight or jump chain has this point sequence."""
    kinds = [True] if len(path) > 2 else ([True, False] if _is_hop(*path) else [False])
    reasons = []
    for jump in kinds:
        try:
            state.check_move(Move(path, jump, ()))
        except IllegalMoveError as exc:
            reasons.append(str(exc))
    return "; ".join(reasons) or "no legal path"


def _stone_word(state: GameState, point: int) -> str:
    v = int(state.board[point])
    return "no stone" if v == 0 else f"{COLOUR_NAMES[v - 1]}'s stone"


def _check_listed(state: GameState, mover: _Listed, captured: Sequence[_Listed], where: str) -> None:
    """Case checks: the mover's colour is the side to move and holds the origin; every captured stone
    is the opponent's and its case matches the stone on its point; no stone is listed twice."""
    if state.phase != PHASE_BATTLE:
        raise RecordError(
            f"{where}: a battle move, but the layout is not finished ({state.ply} of {NUM_POINTS} placements)"
        )
    outcome = state.outcome()
    if outcome.terminal:
        raise RecordError(f"{where}: the game is already over ({outcome.reason})")
    if mover.colour != state.side:
        raise RecordError(
            f"{where}: mover {mover.text!r} is {COLOUR_NAMES[mover.colour]}'s stone,"
            f" but {COLOUR_NAMES[state.side]} is to move"
        )
    if int(state.board[mover.point]) != mover.colour + 1:
        raise RecordError(
            f"{where}: mover {mover.text!r}: {POINT_NAMES[mover.point]} holds {_stone_word(state, mover.point)},"
            f" not {COLOUR_NAMES[mover.colour]}'s"
        )
    seen: set[int] = set()
    for c in captured:
        if c.colour == state.side:
            raise RecordError(f"{where}: captured stone {c.text!r} is in the mover's own colour")
        if int(state.board[c.point]) != c.colour + 1:
            raise RecordError(
                f"{where}: captured stone {c.text!r}: {POINT_NAMES[c.point]} holds {_stone_word(state, c.point)},"
                f" not {COLOUR_NAMES[c.colour]}'s"
            )
        if c.point in seen:
            raise RecordError(f"{where}: captured stone {c.text!r} ({POINT_NAMES[c.point]}) listed twice")
        seen.add(c.point)


def _resolve_move(
    state: GameState, mover: _Listed, landings: Sequence[int], captured: Sequence[_Listed], where: str
) -> Move:
    """The legal move of ``state`` with point sequence ``(mover, *landings)`` whose captured stones
    (jump victims + square victims) are exactly ``captured`` as a set. Ties (a flight and a jump with
    the same points and captures) go to the move whose canonical listing (jump victims in hop order,
    then square victims ascending) equals the listed order. Raises ``RecordError`` naming ``where``."""
    _check_listed(state, mover, captured, where)
    path = (mover.point, *landings)
    if len(path) < 2:
        raise RecordError(f"{where}: the path needs the origin and at least one landing")
    listed = [c.point for c in captured]
    listed_set = set(listed)
    ps = state.paths()
    candidates = _matching_paths(state, path)
    if not candidates:
        raise RecordError(f"{where}: {_no_path_reason(state, path)}")
    matches: dict[str, Move] = {}
    reasons = []
    for i in candidates:
        jump = bool(ps.jump[i])
        jumped = Move(path, jump).jumped
        if not set(jumped) <= listed_set:
            missing = ", ".join(POINT_NAMES[p] for p in jumped if p not in listed_set)
            reasons.append(f"as a jump it takes {missing}, which is not listed")
            continue
        move = Move(path, jump, tuple(sorted(listed_set - set(jumped))))
        try:
            matches[str(move)] = state.check_move(move)
        except IllegalMoveError as exc:
            reasons.append(str(exc))
    if not matches:
        raise RecordError(f"{where}: the captured stones do not fit the path: {'; '.join(reasons)}")
    if len(matches) > 1:
        canonical = [m for m in matches.values() if [*m.jumped, *m.victims] == listed]
        if len(canonical) != 1:
            raise RecordError(f"{where}: ambiguous, matches {', '.join(sorted(matches))}")
        return canonical[0]
    return next(iter(matches.values()))


def _apply_placement(state: GameState, point: int, colour: int, text: str, where: str) -> GameState:
    """Play a recorded placement, checking its colour against the side to place."""
    if state.phase != PHASE_LAYOUT:
        raise RecordError(f"{where} {text!r}: the layout is already complete ({NUM_POINTS} placements)")
    if colour != state.side:
        raise RecordError(
            f"{where} {text!r}: {COLOUR_NAMES[colour]}'s stone, but {COLOUR_NAMES[state.side]} places"
            f" at placement {state.ply + 1} (colour repeated in the layout?)"
        )
    try:
        return state.apply(Move((point,)))
    except IllegalMoveError as exc:
        raise RecordError(f"{where} {text!r}: {exc}") from None


def _check_centre_removals(layout: Sequence[int], removals: Sequence[_Listed], wheres: Sequence[str]) -> None:
    """``removals`` (0..2 stones) must be distinct centre stones in the colour placed there in the
    ``layout`` (the placement points in order)."""
    if len(layout) < NUM_POINTS:
        raise RecordError(f"{wheres[0]}: the layout has only {len(layout)} of {NUM_POINTS} placements")
    placed = {layout[0]: WHITE, layout[1]: BLACK}
    seen = set()
    for stone, where in zip(removals, wheres):
        if stone.point not in CENTRES:
            raise RecordError(
                f"{where}: {stone.text!r} is not a centre point (g7 or h8); expected a centre stone's removal"
            )
        if stone.colour != placed[stone.point]:
            raise RecordError(
                f"{where}: {stone.text!r}: the layout put {COLOUR_NAMES[placed[stone.point]]}'s stone on"
                f" {POINT_NAMES[stone.point]}"
            )
        if stone.point in seen:
            raise RecordError(f"{where}: {stone.text!r}: centre stone removed twice")
        seen.add(stone.point)


# ===================================================================================== JIU
_JIU_HEADER_FIELD = re.compile(r"\s*\[([^\[\]]*)\]")
_JIU_TOKEN = re.compile(r"[^,;\s]+")


def _jiu_listed(code: str, where: str) -> _Listed:
    point, colour = parse_jiu_point(code, where)
    return _Listed(point, colour, code)


def _jiu_entry_parts(tokens: Sequence[str], where: str) -> tuple[_Listed, list[int], list[_Listed]]:
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
    return _resolve_move(state, mover, landings, captured, label)


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
        _RESULT_TEXT[record.result],
        _header_text(date, "date"),
        _header_text(str(record.metadata.get("event", "")), "event"),
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


def read_jiu(source: str | os.PathLike, ruleset: Ruleset = DEFAULT_RULESET) -> GameRecord:
    """Read a JIU record from a path or from its text (a ``str`` starting with ``[`` or holding a
    line break), validating every placement and move. Raises ``RecordError`` naming the file (when
    read from one), the header field or the entry index (``layout entry <n>`` for the n-th placement,
    ``battle entry <n>``) and the reason; ``OSError`` if the file cannot be read."""
    if isinstance(source, str) and (source.lstrip().startswith("[") or "\n" in source):
        return jiu_to_record(source, ruleset)
    try:
        return jiu_to_record(_read_text(source), ruleset)
    except RecordError as exc:
        raise RecordError(f"{source}: {exc}") from None


def jiu_to_record(text: str, ruleset: Ruleset = DEFAULT_RULESET) -> GameRecord:
    """Parse JIU record text (see :func:`read_jiu`)."""
    fields, body = _split_jiu_header(text)
    fields += [""] * (6 - len(fields))
    entries = _jiu_entries(body)
    if entries and entries[0][0] != 0:
        raise RecordError(f"JIU body: the first entry is {entries[0][0]}; expected the layout line '0,...'")
    state = GameState.initial(ruleset)
    moves: list[Move] = []
    for n, code in enumerate(entries[0][1] if entries else [], 1):
        where = f"layout entry {n}"
        point, colour = parse_jiu_point(code, where)
        state = _apply_placement(state, point, colour, code, where)
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
    return _finished_record(state, moves, ruleset, result, white, black, start_time, metadata)


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
    _check_centre_removals(layout, removals, wheres)
    for expected, (index, tokens) in enumerate(entries[2:], 3):
        where = f"battle entry {index} {','.join(tokens)!r}"
        if index != expected:
            raise RecordError(f"{where}: expected entry {expected} (entries are numbered consecutively)")
        mover, landings, captured = _jiu_entry_parts(tokens, where)
        move = _resolve_move(state, mover, landings, captured, where)
        state = state.apply(move)
        moves.append(move)
    return state


def _finished_record(
    state: GameState,
    moves: Sequence[Move],
    ruleset: Ruleset,
    result: Result | None,
    white: str,
    black: str,
    start_time: str | None,
    metadata: dict[str, Any],
) -> GameRecord:
    """A record of moves already validated; ``reason`` is the final position's end reason if it is
    terminal, ``"unfinished"`` if no result is known, else ``None`` (decided off the board)."""
    outcome = state.outcome()
    reason = outcome.reason if outcome.terminal else ("unfinished" if result is None else None)
    return GameRecord(
        ruleset=ruleset,
        white=white,
        black=black,
        result=result,
        reason=reason,
        start_time=start_time,
        moves=tuple(str(m) for m in moves),
        metadata=metadata,
    )


# ===================================================================================== CSV
_CSV_TOKEN = re.compile(
    r"(?P<marker>\b[TtFf][Cc]\s*:)"
    r"|(?P<c>[WBOwbo])\s*[(（]\s*(?P<col>[A-Na-n])\s*[,，]\s*(?P<row>\d{1,2})\s*[)）]",
    re.IGNORECASE,
)
_CSV_FILLER = re.compile(r"[\s,;:|\"'\-.\d_/]*")


class _CsvToken(NamedTuple):
    """A Stage token: ``kind`` ``W``/``B``/``O`` (with its ``point``) or ``TC``/``FC`` (point -1)."""

    kind: str
    point: int
    text: str

    @property
    def listed(self) -> _Listed:
        return _Listed(self.point, WHITE if self.kind == "W" else BLACK, self.text)


def _csv_tokens(text: str, where: str) -> list[_CsvToken]:
    out, pos = [], 0
    for m in _CSV_TOKEN.finditer(text):
        _check_filler(text[pos : m.start()], where)
        pos = m.end()
        if m["marker"]:
            out.append(_CsvToken(m["marker"][:2].upper(), -1, m[0]))
            continue
        row = int(m["row"])
        if not 1 <= row <= SIZE:
            raise RecordError(f"{where}: {m[0]!r}: row {row} is not in 1..14")
        point = (row - 1) * SIZE + "ABCDEFGHIJKLMN".index(m["col"].upper())
        out.append(_CsvToken(m["c"].upper(), point, m[0]))
    _check_filler(text[pos:], where)
    return out


def _check_filler(text: str, where: str) -> None:
    if not _CSV_FILLER.fullmatch(text):
        raise RecordError(f"{where}: unrecognised text {text.strip()!r}")


def _csv_stages(line: str, where: str) -> tuple[str, str, str]:
    """``(prefix, stage 1 text, stage 2 text)`` of a CSV line."""
    marks = list(re.finditer(r"Stage\s*\[\s*(\d+)\s*\]\s*:?", line, re.IGNORECASE))
    numbers = [int(m[1]) for m in marks]
    if numbers not in ([1], [1, 2]):
        raise RecordError(f"{where}: expected 'Stage[1]:' then optionally 'Stage[2]:', found stages {numbers}")
    stage1_end = marks[1].start() if len(marks) == 2 else len(line)
    stage2 = line[marks[1].end() :] if len(marks) == 2 else ""
    return line[: marks[0].start()], line[marks[0].end() : stage1_end], stage2


def _csv_group_moves(tokens: list[_CsvToken], where: str):
    """Split Stage[2] tokens into centre removals and moves ``(mover, landings, captured)``."""
    removals: list[_CsvToken] = []
    moves: list[tuple[_CsvToken, list[int], list[_Listed]]] = []
    mode = None
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        here = f"{where}, move {len(moves)}" if moves else where
        if tok.kind in ("TC", "FC"):
            if not moves:
                raise RecordError(f"{here}: {tok.text!r} before any move")
            mode = tok.kind
        elif tok.kind == "O":
            if not moves or mode is not None:
                raise RecordError(f"{here}: landing {tok.text!r} is not part of a move's path")
            moves[-1][1].append(tok.point)
        elif nxt is not None and nxt.kind == "O":
            moves.append((tok, [], []))
            mode = None
        elif mode is not None:
            moves[-1][2].append(tok.listed)
        elif not moves:
            removals.append(tok)
        else:
            raise RecordError(f"{here}: stone {tok.text!r} after the path without a 'TC:' or 'FC:' marker")
    return removals, moves


def parse_csv_line(line: str, line_no: int = 1, ruleset: Ruleset = DEFAULT_RULESET) -> GameRecord:
    """One open-tournament CSV game (module docstring), validating every placement and move.
    Raises ``RecordError("line <n>, placement <i> ...")`` or ``("line <n>, move <j> ...")``."""
    where = f"line {line_no}"
    prefix, stage1, stage2 = _csv_stages(line, where)
    state = GameState.initial(ruleset)
    moves: list[Move] = []
    for n, tok in enumerate(_csv_tokens(stage1, f"{where}, Stage[1]"), 1):
        here = f"{where}, placement {n}"
        if tok.kind not in ("W", "B"):
            raise RecordError(f"{here} {tok.text!r}: the layout takes W(...) or B(...) placements only")
        state = _apply_placement(state, tok.point, tok.listed.colour, tok.text, here)
        moves.append(Move((tok.point,)))
    removals, battle = _csv_group_moves(_csv_tokens(stage2, f"{where}, Stage[2]"), where)
    if len(removals) > 2:
        raise RecordError(
            f"{where}, Stage[2]: {removals[2].text!r}: a stone without a move"
            " (only the two centre stones may be listed alone)"
        )
    if removals:
        labels = [f"{where}, Stage[2] {t.text!r}" for t in removals]
        _check_centre_removals([m.origin for m in moves], [t.listed for t in removals], labels)
    for j, (mover, landings, captured) in enumerate(battle, 1):
        move = _resolve_move(state, mover.listed, landings, captured, f"{where}, move {j} {mover.text!r}")
        state = state.apply(move)
        moves.append(move)
    metadata: dict[str, Any] = {"csv_line": line_no}
    if prefix.strip():
        metadata["csv_prefix"] = prefix.strip()
    return _finished_record(state, moves, ruleset, parse_result_text(prefix), "White", "Black", None, metadata)


def read_csv(path: str | os.PathLike, ruleset: Ruleset = DEFAULT_RULESET) -> list[GameRecord]:
    """All games of an open-tournament CSV file, one per line holding ``Stage[``; other lines are
    skipped. Raises ``RecordError`` naming the file, line number and placement/move index."""
    records = []
    for line_no, line in enumerate(_read_text(path).splitlines(), 1):
        if not re.search(r"Stage\s*\[", line, re.IGNORECASE):
            continue
        try:
            records.append(parse_csv_line(line, line_no, ruleset))
        except RecordError as exc:
            raise RecordError(f"{path}: {exc}") from None
    if not records:
        raise RecordError(f"{path}: no game lines (a game line holds 'Stage[1]:')")
    return records


# ===================================================================================== dispatch
_EXTENSIONS: dict[str, Format] = {".json": "json", ".jiu": "jiu", ".csv": "csv"}
FORMATS = ("json", "jiu", "csv")


def _check_format(fmt: str) -> Format:
    if fmt not in FORMATS:
        raise RecordError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    return fmt  # type: ignore[return-value]


def detect_format(path: str | os.PathLike) -> Format:
    """``"json"``, ``"jiu"`` or ``"csv"`` from the extension (``.json``, ``.jiu``, ``.csv``); for
    ``.txt`` and other names from the content: ``{`` -> json, ``[`` -> jiu, ``Stage[`` -> csv
    (``.txt`` defaults to jiu). Raises ``RecordError`` if it cannot tell, ``OSError`` if unreadable."""
    suffix = Path(path).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    head = Path(path).read_bytes()[:65536].decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if head.startswith("{"):
        return "json"
    if head.startswith("["):
        return "jiu"
    if re.search(r"Stage\s*\[", head, re.IGNORECASE):
        return "csv"
    if suffix == ".txt":
        return "jiu"
    raise RecordError(f"{path}: cannot tell the record format; name it .json, .jiu or .csv or pass the format")


def read_record(
    path: str | os.PathLike, fmt: str | None = None, ruleset: Ruleset = DEFAULT_RULESET
) -> list[GameRecord]:
    """The games in a record file (one for JSON and JIU, one per line for CSV). JIU and CSV files
    carry no ruleset: ``ruleset`` applies to them (the JSON record's own is used). Raises
    ``RecordError`` (bad format name, bad content), ``OSError`` if unreadable."""
    fmt = _check_format(fmt) if fmt is not None else detect_format(path)
    if fmt == "json":
        return [read_json(path)]
    if fmt == "jiu":
        return [read_jiu(Path(path), ruleset)]
    return read_csv(path, ruleset)


def write_record(record: GameRecord, path: str | os.PathLike, fmt: str | None = None) -> None:
    """Write ``record`` atomically as ``fmt`` (default from the extension: ``.json`` -> json,
    ``.jiu``/``.txt`` -> jiu). Raises ``RecordError`` for CSV (import only), an unknown format or an
    unserialisable record; ``OSError`` on I/O failure."""
    if fmt is None:
        suffix = Path(path).suffix.lower()
        fmt = {".json": "json", ".jiu": "jiu", ".txt": "jiu", ".csv": "csv"}.get(suffix)
        if fmt is None:
            raise RecordError(f"{path}: cannot tell the output format from the name; use .json or .jiu, or pass it")
    fmt = _check_format(fmt)
    if fmt == "csv":
        raise RecordError("format 'csv': the open-tournament CSV is import only; write json or jiu")
    (write_json if fmt == "json" else write_jiu)(record, path)
