"""Matching the stones a JIU or CSV record lists against the legal moves, shared by both readers:
placements checked against the side to place, centre-stone removals, battle entries resolved to the
one legal move with that path and captured set (see ``core.records.jiu``), result texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from core.board import BLACK, CENTRES, NUM_POINTS, PHASE_BATTLE, PHASE_LAYOUT, POINT_NAMES, WHITE
from core.errors import IllegalMoveError, RecordError
from core.notation import Move, is_hop
from core.records.record import COLOUR_NAMES, GameRecord, Result
from core.rules import Ruleset
from core.state import GameState

# ===================================================================================== results
_RESULT_WORDS: tuple[tuple[Result, tuple[str, ...]], ...] = (
    ("w", ("first wins", "先手胜", "先手勝")),
    ("b", ("second wins", "后手胜", "後手勝")),
    ("draw", ("draw", "平局", "和棋")),
)
RESULT_TEXT: dict[str | None, str] = {"w": "first wins", "b": "second wins", "draw": "draw", None: "unfinished"}


def parse_result_text(text: str) -> Result | None:
    """``"w"``/``"b"``/``"draw"`` if ``text`` names exactly one result (``first wins``/``先手胜``,
    ``second wins``/``后手胜``, ``draw``/``平局``/``和棋``, case-insensitive), else ``None``."""
    low = text.strip().lower()
    found = {code for code, words in _RESULT_WORDS if any(w in low for w in words)}
    return found.pop() if len(found) == 1 else None



# ===================================================================================== move resolution
class Listed(NamedTuple):
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


def _no_path_reason(state: GameState, path: tuple[int, ...]) -> str:
    """The engine's reason why no step, flight or jump chain has this point sequence."""
    kinds = [True] if len(path) > 2 else ([True, False] if is_hop(*path) else [False])
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


def _check_listed(state: GameState, mover: Listed, captured: Sequence[Listed], where: str) -> None:
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


def resolve_move(
    state: GameState, mover: Listed, landings: Sequence[int], captured: Sequence[Listed], where: str
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


def apply_placement(state: GameState, point: int, colour: int, text: str, where: str) -> GameState:
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


def check_centre_removals(layout: Sequence[int], removals: Sequence[Listed], wheres: Sequence[str]) -> None:
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


def finished_record(
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

