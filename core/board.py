"""Board geometry: constants, point names and lookup tables, built once at import (pgx-style).

Points are indexed ``idx = (row - 1) * 14 + (column - 1)`` (rule book section 1): ``a1 = 0``,
``n1 = 13``, ``g7 = 90``, ``h8 = 105``, ``n14 = 195``. Board arrays are ``int8[196]`` holding
``EMPTY``, ``WHITE_STONE`` or ``BLACK_STONE``. Players are ``WHITE = 0`` (first in the layout) and
``BLACK = 1``; a player's stone value is ``player + 1``.

Tables (all read-only, Numba freezes them into compiled kernels as constants):

- ``NEIGHBOR``  ``int16[196, 4]``: orthogonal neighbour in direction 0 up (row+1), 1 down, 2 left,
  3 right; ``-1`` off the board.
- ``BEYOND``    ``int16[196, 4]``: the point two steps away in that direction (a jump's landing);
  ``-1`` off the board.
- ``CELL_CORNERS`` ``int16[169, 4]``: the four corners of cell ``c = r0 * 13 + c0`` (lower-left corner
  at 0-based column ``c0``, row ``r0``).
- ``POINT_CELLS``  ``int16[196, 4]``: the cells containing a point, ``-1`` padded at the end.
"""

from __future__ import annotations

import numpy as np

SIZE = 14
NUM_POINTS = SIZE * SIZE  # 196
NUM_CELLS = (SIZE - 1) * (SIZE - 1)  # 169
STONES_PER_SIDE = NUM_POINTS // 2  # 98
FLY_THRESHOLD = 14  # a side with at most this many stones flies (rule book 3.1)

EMPTY = 0
WHITE_STONE = 1
BLACK_STONE = 2
WHITE = 0
BLACK = 1
DRAW = -1  # winner code of a drawn game

CENTRE_WHITE_FIRST = 90  # g7
CENTRE_OTHER = 105  # h8
CENTRES = (CENTRE_WHITE_FIRST, CENTRE_OTHER)

PHASE_LAYOUT = 0
PHASE_BATTLE = 1

COLUMNS = "abcdefghijklmn"
# (dcol, drow) of the four directions, in the order of the action encoding (rule book section 8).
DIRECTIONS = ((0, 1), (0, -1), (-1, 0), (1, 0))


def point_index(col0: int, row0: int) -> int:
    """Index of the point at 0-based column ``col0`` and row ``row0``."""
    return row0 * SIZE + col0


def point_col_row(idx: int) -> tuple[int, int]:
    """0-based ``(column, row)`` of point ``idx``."""
    return idx % SIZE, idx // SIZE


POINT_NAMES: tuple[str, ...] = tuple(f"{COLUMNS[i % SIZE]}{i // SIZE + 1}" for i in range(NUM_POINTS))
POINT_BY_NAME: dict[str, int] = {name: i for i, name in enumerate(POINT_NAMES)}


def _build_tables():
    neighbor = np.full((NUM_POINTS, 4), -1, np.int16)
    beyond = np.full((NUM_POINTS, 4), -1, np.int16)
    for p in range(NUM_POINTS):
        c, r = point_col_row(p)
        for d, (dc, dr) in enumerate(DIRECTIONS):
            if 0 <= c + dc < SIZE and 0 <= r + dr < SIZE:
                neighbor[p, d] = point_index(c + dc, r + dr)
            if 0 <= c + 2 * dc < SIZE and 0 <= r + 2 * dr < SIZE:
                beyond[p, d] = point_index(c + 2 * dc, r + 2 * dr)
    cell_corners = np.zeros((NUM_CELLS, 4), np.int16)
    point_cells = np.full((NUM_POINTS, 4), -1, np.int16)
    fill = np.zeros(NUM_POINTS, np.int64)
    for r0 in range(SIZE - 1):
        for c0 in range(SIZE - 1):
            cell = r0 * (SIZE - 1) + c0
            corners = (
                point_index(c0, r0),
                point_index(c0 + 1, r0),
                point_index(c0, r0 + 1),
                point_index(c0 + 1, r0 + 1),
            )
            cell_corners[cell] = corners
            for q in corners:
                point_cells[q, fill[q]] = cell
                fill[q] += 1
    for table in (neighbor, beyond, cell_corners, point_cells):
        table.setflags(write=False)
    return neighbor, beyond, cell_corners, point_cells


NEIGHBOR, BEYOND, CELL_CORNERS, POINT_CELLS = _build_tables()
