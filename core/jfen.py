"""JFEN, the one-line position format (rule book section 6): parse with validation, and format.

``board side phase quiet ply``, e.g. the start ``14/14/14/14/14/14/14/14/14/14/14/14/14/14 w layout 0 0``.
Every error is an ``InvalidPositionError`` naming the field and the reason. ``quiet`` and ``ply`` are
integers in ``0..MAX_PLY`` (a million plies: far beyond any ply cap a ``Ruleset`` allows, small enough
for the kernels' 64-bit arithmetic).
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from core.board import (
    BLACK,
    BLACK_STONE,
    CENTRE_OTHER,
    CENTRE_WHITE_FIRST,
    EMPTY,
    NUM_POINTS,
    PHASE_BATTLE,
    PHASE_LAYOUT,
    SIZE,
    STONES_PER_SIDE,
    WHITE,
    WHITE_STONE,
)
from core.errors import InvalidPositionError

START_JFEN = "14/14/14/14/14/14/14/14/14/14/14/14/14/14 w layout 0 0"
_ROW_TOKEN = re.compile(r"[WB]|[0-9]+|.")
_PHASES = {"layout": PHASE_LAYOUT, "battle": PHASE_BATTLE}
MAX_PLY = 1_000_000


class JfenFields(NamedTuple):
    """A parsed JFEN: ``board`` ``int8[196]``, ``side`` 0/1, ``phase`` 0/1, ``quiet`` and ``ply``."""

    board: np.ndarray
    side: int
    phase: int
    quiet: int
    ply: int


def _parse_board(text: str) -> np.ndarray:
    rows = text.split("/")
    if len(rows) != SIZE:
        raise InvalidPositionError(f"JFEN board: {len(rows)} rows, expected 14 separated by '/'")
    board = np.zeros(NUM_POINTS, np.int8)
    for i, row in enumerate(rows):
        rank = SIZE - i  # rows are listed from 14 down to 1
        col = 0
        if not row:
            raise InvalidPositionError(f"JFEN board: row {rank} is empty")
        for tok in _ROW_TOKEN.findall(row):
            if tok in ("W", "B"):
                if col < SIZE:
                    board[(rank - 1) * SIZE + col] = WHITE_STONE if tok == "W" else BLACK_STONE
                col += 1
            elif tok.isdigit() and tok.isascii():
                run = int(tok)
                if not 1 <= run <= SIZE or tok[0] == "0":
                    raise InvalidPositionError(f"JFEN board: row {rank}: empty run {tok!r} not in 1..14")
                col += run
            else:
                raise InvalidPositionError(f"JFEN board: row {rank}: unknown character {tok!r}")
        if col != SIZE:
            raise InvalidPositionError(f"JFEN board: row {rank} adds up to {col}, expected 14")
    return board


def _parse_count(text: str, field: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise InvalidPositionError(f"JFEN {field}: {_clip(text)!r} is not an integer >= 0")
    if len(text) > len(str(MAX_PLY)) or int(text) > MAX_PLY:
        raise InvalidPositionError(f"JFEN {field}: {_clip(text)} is out of range 0..{MAX_PLY}")
    return int(text)


def _clip(text: str, n: int = 40) -> str:
    """``text`` shortened for an error message."""
    return text if len(text) <= n else text[:n] + "..."


def parse_jfen(text: str) -> JfenFields:
    """Parse and validate a JFEN string; raises ``InvalidPositionError`` naming the field."""
    if not isinstance(text, str):
        raise InvalidPositionError("JFEN: not a string")
    fields = text.strip().split(" ")
    if len(fields) != 5:
        raise InvalidPositionError(
            f"JFEN: {len(fields)} fields, expected 5 (board side phase quiet ply) separated by single spaces"
        )
    board_s, side_s, phase_s, quiet_s, ply_s = fields
    board = _parse_board(board_s)
    if side_s not in ("w", "b"):
        raise InvalidPositionError(f"JFEN side to move: {side_s!r}, expected 'w' or 'b'")
    side = WHITE if side_s == "w" else BLACK
    if phase_s not in _PHASES:
        raise InvalidPositionError(f"JFEN phase: {phase_s!r}, expected 'layout' or 'battle'")
    phase = _PHASES[phase_s]
    quiet = _parse_count(quiet_s, "quiet plies")
    ply = _parse_count(ply_s, "ply")
    n_white = int(np.count_nonzero(board == WHITE_STONE))
    n_black = int(np.count_nonzero(board == BLACK_STONE))
    for name, n in (("White", n_white), ("Black", n_black)):
        if n > STONES_PER_SIDE:
            raise InvalidPositionError(f"JFEN board: {n} {name} stones, at most 98")
    if phase == PHASE_LAYOUT:
        _check_layout(board, side, n_white, n_black, quiet)
    return JfenFields(board, side, phase, quiet, ply)


def _check_layout(board: np.ndarray, side: int, n_white: int, n_black: int, quiet: int) -> None:
    total = n_white + n_black
    if quiet != 0:
        raise InvalidPositionError(f"JFEN quiet plies: {quiet} in the layout, must be 0")
    if total == NUM_POINTS:
        raise InvalidPositionError("JFEN phase: a full board is a battle position (the layout ended)")
    if n_white - n_black not in (0, 1):
        raise InvalidPositionError(
            f"JFEN board: {n_white} White and {n_black} Black stones cannot arise in the layout"
            " (White places first, the sides alternate)"
        )
    expected = WHITE if total % 2 == 0 else BLACK
    if side != expected:
        raise InvalidPositionError(
            f"JFEN side to move: {'w' if side == WHITE else 'b'} with {total} stones placed;"
            f" {'White' if expected == WHITE else 'Black'} places next"
        )
    centres = sorted(int(board[p]) for p in (CENTRE_WHITE_FIRST, CENTRE_OTHER))
    if total == 1 and centres != [EMPTY, WHITE_STONE]:
        raise InvalidPositionError("JFEN board: the first placement must be White's on g7 or h8")
    if total >= 2 and centres != [WHITE_STONE, BLACK_STONE]:
        raise InvalidPositionError(
            "JFEN board: a layout position with stones must hold the two centre stones g7 and h8,"
            " one of each colour"
        )


def format_jfen(board: np.ndarray, side: int, phase: int, quiet: int, ply: int) -> str:
    """Canonical JFEN of a position (``board`` ``int8[196]``)."""
    rows = []
    for rank in range(SIZE, 0, -1):
        out, run = [], 0
        for col in range(SIZE):
            v = board[(rank - 1) * SIZE + col]
            if v == EMPTY:
                run += 1
                continue
            if run:
                out.append(str(run))
                run = 0
            out.append("W" if v == WHITE_STONE else "B")
        if run:
            out.append(str(run))
        rows.append("".join(out))
    phase_s = "layout" if phase == PHASE_LAYOUT else "battle"
    return f"{'/'.join(rows)} {'w' if side == WHITE else 'b'} {phase_s} {quiet} {ply}"
