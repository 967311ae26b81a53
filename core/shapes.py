"""Shape detection: squares, gates and Dalians (rule book ``../shared/jiu-rules.md`` sections 1 and 5).

Numba kernels over the flat board (``int8[196]``: 0 empty, 1 White, 2 Black; ``side`` 0 White,
1 Black) plus thin wrappers taking a ``GameState``. The kernels make no Python object per item and
allocate only their output arrays and a few fixed-size scratch arrays per call, so knowledge plugins
and the expert agent can call them per evaluated position.

Cells are indexed ``c = r0 * 13 + c0`` (lower-left corner at 0-based column ``c0``, row ``r0``;
``core.board.CELL_CORNERS``); humans name a cell by its lower-left corner (cell ``g7`` has corners
g7, h7, g8, h8).

Shapes (rule book section 5):

- **Square**: a cell whose four corners hold the side's stones.
- **Gate**: a cell where the side holds exactly 3 corners and the 4th corner is empty. It is *open*
  when a stone of the side other than those 3 corners can reach the empty corner with one legal move
  (a step, a flight when the side has at most 14 stones, or a jump chain ending there under the
  ruleset's ``chain_revisit`` and ``fly_jump_rule``), judged as if the side were to move with the
  given stone counts.
- **Dalian**: a pair ``(s, e)``: ``s`` a stone of the side that is a corner of one of the side's
  squares now, ``e`` an empty orthogonal neighbour of ``s``, such that moving ``s`` to ``e`` forms at
  least one square containing ``e``. The stone can then shuttle ``s -> e -> s -> ...`` capturing on
  every move: the square it left is re-formed on the way back. The *number of Dalians* is the number
  of distinct ``(s, e)`` pairs (used for ``c_chain`` of papers/001 Eq. 9).

Dalian kinds. Let the move ``s -> e`` have unit direction ``u``. Every square ``A`` containing ``s``
cannot contain ``e`` (``e`` is empty), so ``A`` lies on the far side of ``s``; every square ``B``
formed at ``e`` cannot contain ``s`` (``s`` is empty after the move), so ``B`` lies on the far side of
``e``. ``A`` and ``B`` are therefore disjoint, separated by the edge ``s``-``e``, and the offset of
their lower-left corners is ``2u`` plus ``0`` or ``1`` unit perpendicular to ``u``. Each such pair
``(A, B)`` (``A`` a square now, ``B`` a square formed by the move) is:

- **flat** (the rule book's "flat gate"): ``A`` and ``B`` lie in the same two lines parallel to the
  move, i.e. the two squares are stacked along the direction of the move inside a 2 x 4 block and the
  shuttle moves along them. The classic shape is that block with ``e`` one of its two middle points
  empty (7 stones + 1 empty point).
- **diagonal** (the rule book's "diagonal gate"): ``A`` and ``B`` are shifted by one line
  perpendicular to the move, so they sit diagonally offset, overlapping in one line parallel to the
  move; ``s`` is ``A``'s corner on that shared line and ``e`` is ``B``'s. The classic shape is these
  7 stones + ``e``.

There is no third geometry, so ``kind`` of a pair is ``KIND_FLAT`` (0) when every ``(A, B)`` pairing
of that ``(s, e)`` is flat, ``KIND_DIAGONAL`` (1) when every pairing is diagonal, and ``KIND_MIXED``
(2, "other") when the pair realises both, which needs at least 9 stones (two squares on one side of
the edge ``s``-``e``, or a move forming two squares); no classic 7 + 1 shape is mixed.
"""

from __future__ import annotations

import numpy as np

from core.board import (
    BEYOND,
    CELL_CORNERS,
    EMPTY,
    FLY_THRESHOLD,
    NEIGHBOR,
    NUM_CELLS,
    NUM_POINTS,
    POINT_CELLS,
    POINT_NAMES,
    SIZE,
)
from core.jit import inline_kernel, kernel
from core.movegen import cell_count, cell_sums, generate_chains_to, new_path_buffers

KIND_FLAT = 0
KIND_DIAGONAL = 1
KIND_MIXED = 2
KIND_NAMES = ("flat", "diagonal", "mixed")

_CELL_SIDE = SIZE - 1  # 13 cells per row
# Neighbour directions in increasing point-index order (down, left, right, up), so Dalian pairs come
# out sorted by (stone, empty point).
_DIR_ORDER = np.array([1, 2, 3, 0], np.int64)
_DIR_ORDER.setflags(write=False)
MAX_DALIANS = NUM_POINTS * 4  # (stone, empty neighbour) pairs can never exceed this


# --------------------------------------------------------------------------------------------- helpers
@inline_kernel
def _cell_has(c, p):
    """Whether point ``p`` is a corner of cell ``c``."""
    dc = p % SIZE - c % _CELL_SIDE
    dr = p // SIZE - c // _CELL_SIDE
    return 0 <= dc <= 1 and 0 <= dr <= 1


# --------------------------------------------------------------------------------------------- squares
@kernel
def find_squares(board, side):
    """Squares of ``side`` (rule book sections 1 and 5).

    ``board`` ``int8[196]``, ``side`` 0 White / 1 Black. Returns ``int16[n]``: the cell indices
    (``r0 * 13 + c0``) whose four corners all hold that side's stones, ascending.
    """
    me = side + 1
    sums = cell_sums(board, np.empty(NUM_CELLS, np.int16))
    out = np.empty(NUM_CELLS, np.int16)
    n = 0
    for c in range(NUM_CELLS):
        if cell_count(sums[c], me) == 4:
            out[n] = c
            n += 1
    return out[:n].copy()


# --------------------------------------------------------------------------------------------- gates
@inline_kernel
def _is_gate_sum(t, me):
    """Whether a cell of sum ``t`` (:func:`core.movegen.cell_sums`) is a gate of stone value ``me``:
    three of its corners ``me``'s, the fourth empty (rule book 5)."""
    return cell_count(t, me) == 3 and cell_count(t, EMPTY) == 1


@kernel
def _scan_gates(board, sums, side, n_own, n_opp, rules, cells, empty, opn, pts, off, jump, m):
    """Write the gates of ``side`` into ``cells``/``empty``/``opn`` (each at least ``NUM_CELLS`` long)
    and return how many. See :func:`find_gates`; ``sums`` the board's :func:`core.movegen.cell_sums`.
    ``pts, off, jump, m``: when ``m >= 0``, paths of ``side`` on ``board`` holding every one of its
    jump chains (``core.movegen.generate_capture_paths`` or ``generate_paths``), which then decide
    the gates only a jump can open; when ``m < 0`` the chains to those gates are generated here."""
    me = side + 1
    n = 0
    for c in range(NUM_CELLS):
        t = sums[c]
        if _is_gate_sum(t, me):
            hole = -1
            for k in range(4):
                q = CELL_CORNERS[c, k]
                if board[q] == EMPTY:
                    hole = q
            cells[n] = c
            empty[n] = hole
            opn[n] = 0
            n += 1
    if n == 0:
        return 0
    # Stones of the side on the board (a gate can only be opened by a stone outside its 3 corners).
    total = 0
    for p in range(NUM_POINTS):
        if board[p] == me:
            total += 1
    if n_own <= FLY_THRESHOLD:
        # Flight (rule book 3.1): any own stone may move to any empty point, so a gate is open
        # exactly when the side has a stone outside its 3 corners.
        if total > 3:
            for i in range(n):
                opn[i] = 1
        return n
    # Steps: an own stone orthogonally next to the empty corner, outside the cell.
    pending = 0
    for i in range(n):
        e = empty[i]
        for d in range(4):
            q = NEIGHBOR[e, d]
            if q >= 0 and board[q] == me and not _cell_has(cells[i], q):
                opn[i] = 1
                break
        if opn[i] == 0:
            # Cheap necessary condition for a jump chain to end at e: its last hop jumps an opponent
            # stone next to e from the point beyond it. Only then look at the chains.
            for d in range(4):
                q = NEIGHBOR[e, d]
                if q >= 0 and board[q] != me and board[q] != EMPTY and BEYOND[e, d] >= 0:
                    pending += 1
                    break
    if pending == 0 or total <= 3:
        return n
    # Jump chains ending on a closed gate's hole: the caller's, or from the one move generator.
    target = np.zeros(NUM_POINTS, np.bool_)
    for i in range(n):
        if opn[i] == 0:
            target[empty[i]] = True
    if m < 0:
        pts, off, nsq, jump = new_path_buffers(64)
        m, pts, off, nsq, jump = generate_chains_to(board, side, n_own, n_opp, rules, pts, off, nsq, jump,
                                                    np.flatnonzero(target).astype(np.int16))
    for j in range(m):
        if jump[j] == 0:
            continue
        d = pts[off[j + 1] - 1]
        if not target[d]:
            continue
        o = pts[off[j]]
        for i in range(n):
            if opn[i] == 0 and empty[i] == d and not _cell_has(cells[i], o):
                opn[i] = 1
    return n


@kernel
def find_gates(board, side, n_own, n_opp, rules):
    """Gates of ``side`` and whether each is open (rule book section 5; moves per section 3).

    ``board`` ``int8[196]``; ``side`` 0 White / 1 Black; ``n_own``/``n_opp`` the stone counts of
    ``side`` and its opponent (they decide flight and ``fly_jump_rule`` exactly as for the side to
    move); ``rules`` ``Ruleset.vector`` (``int64[7]``). Returns ``(cells int16[n], empty_corner
    int16[n], open int8[n])``, cells ascending: a gate is a cell with exactly 3 corners of ``side``
    and the 4th empty; ``open[i]`` is 1 when a stone of ``side`` other than those 3 corners reaches
    the empty corner with one legal move of ``side``: a step; a flight (``n_own <= 14``, so then every
    gate is open as soon as the side has a stone outside its 3 corners); or a jump chain ending there,
    taken from ``core.movegen.generate_chains_to`` (only called when a gate is still closed and an
    opponent stone next to its empty corner makes a jump possible).
    """
    cells = np.empty(NUM_CELLS, np.int16)
    empty = np.empty(NUM_CELLS, np.int16)
    opn = np.empty(NUM_CELLS, np.int8)
    sums = cell_sums(board, np.empty(NUM_CELLS, np.int16))
    n = _scan_gates(board, sums, side, n_own, n_opp, rules, cells, empty, opn, np.empty(0, np.int16),
                    np.zeros(1, np.int32), np.empty(0, np.int8), -1)
    return cells[:n].copy(), empty[:n].copy(), opn[:n].copy()


# --------------------------------------------------------------------------------------------- Dalians
@kernel
def _scan_dalians(board, sums, side, stones, empties, kinds, store):
    """Count the Dalian pairs of ``side``; when ``store`` also write them (arrays of
    ``MAX_DALIANS``). ``sums`` the board's :func:`core.movegen.cell_sums`. See :func:`find_dalians`."""
    me = side + 1
    n = 0
    for s in range(NUM_POINTS):
        if board[s] != me:
            continue
        in_square = False
        for j in range(4):
            a = POINT_CELLS[s, j]
            if a < 0:
                break
            if cell_count(sums[a], me) == 4:
                in_square = True
                break
        if not in_square:
            continue
        for k in range(4):
            d = _DIR_ORDER[k]
            e = NEIGHBOR[s, d]
            if e < 0 or board[e] != EMPTY:
                continue
            horizontal = d >= 2
            flags = 0
            for jb in range(4):
                b = POINT_CELLS[e, jb]
                if b < 0:
                    break
                # b is a square formed at e (its other three corners are the side's: e is empty)
                if _cell_has(b, s) or cell_count(sums[b], me) != 3:
                    continue
                if not store:
                    flags = 1  # counting only: one formed square makes the pair
                    break
                # pair it with every square a that s leaves.
                for ja in range(4):
                    a = POINT_CELLS[s, ja]
                    if a < 0:
                        break
                    if cell_count(sums[a], me) != 4:
                        continue
                    if horizontal:
                        flat = a // _CELL_SIDE == b // _CELL_SIDE
                    else:
                        flat = a % _CELL_SIDE == b % _CELL_SIDE
                    flags |= 1 if flat else 2
            if flags:
                if store:
                    stones[n] = s
                    empties[n] = e
                    kinds[n] = KIND_FLAT if flags == 1 else (KIND_DIAGONAL if flags == 2 else KIND_MIXED)
                n += 1
    return n


@kernel
def find_dalians(board, side):
    """Dalians of ``side`` (rule book section 5).

    ``board`` ``int8[196]``; ``side`` 0 White / 1 Black. Returns ``(stones int16[n], empties
    int16[n], kind int8[n])``, sorted by ``(stone, empty)``: every pair where ``stones[i]`` is a stone
    of ``side`` that is a corner of one of its squares now, ``empties[i]`` an empty orthogonal
    neighbour of it, and moving the stone there (origin emptied) forms at least one square containing
    ``empties[i]``. ``kind``: ``KIND_FLAT`` 0 (every (left square, formed square) pairing stacked
    along the move: the "flat gate"), ``KIND_DIAGONAL`` 1 (every pairing offset by one line across the
    move: the "diagonal gate"), ``KIND_MIXED`` 2 (both occur; module docstring gives the geometry).
    """
    stones = np.empty(MAX_DALIANS, np.int16)
    empties = np.empty(MAX_DALIANS, np.int16)
    kinds = np.empty(MAX_DALIANS, np.int8)
    n = _scan_dalians(board, cell_sums(board, np.empty(NUM_CELLS, np.int16)), side, stones, empties, kinds, True)
    return stones[:n].copy(), empties[:n].copy(), kinds[:n].copy()


# --------------------------------------------------------------------------------------------- evaluation
@kernel
def shape_counts(board, side, n_own, n_opp, rules):
    """Shape counts of ``side`` for evaluation (papers/001 section 4.3, Eq. 9:
    ``V = 7 c_chain + 3 c_gate + 4 c_square``).

    Arguments as for :func:`find_gates`. Returns ``(n_squares, n_gates, n_open_gates, n_dalians)``
    as ints, where ``n_dalians`` is the number of distinct Dalian ``(stone, empty point)`` pairs
    (:func:`find_dalians`). :func:`shape_counts_from` is the form for callers that already hold
    the board's cell sums or the side's capture paths.
    """
    sums = cell_sums(board, np.empty(NUM_CELLS, np.int16))
    return shape_counts_from(board, sums, side, n_own, n_opp, rules, np.empty(0, np.int16), np.zeros(1, np.int32),
                             np.empty(0, np.int8), -1)


@kernel
def shape_counts_from(board, sums, side, n_own, n_opp, rules, pts, off, jump, m):
    """:func:`shape_counts` with the board's cell sums ``sums`` (``int16[169]``,
    :func:`core.movegen.cell_sums`) and, when ``m >= 0``, ``m`` paths of ``side`` on ``board`` in
    CSR form (``pts`` ``int16``, ``off`` ``int32[m + 1]``, ``jump`` ``int8[m]``) holding every one
    of its jump chains (``core.movegen.generate_capture_paths``), so that no move generation is
    repeated; ``m < 0``: generated when a gate needs them. Allocates three ``NUM_CELLS`` scratch
    arrays."""
    me = side + 1
    n_sq = 0
    for c in range(NUM_CELLS):
        if cell_count(sums[c], me) == 4:
            n_sq += 1
    cells = np.empty(NUM_CELLS, np.int16)
    empty = np.empty(NUM_CELLS, np.int16)
    opn = np.empty(NUM_CELLS, np.int8)
    n_gates = _scan_gates(board, sums, side, n_own, n_opp, rules, cells, empty, opn, pts, off, jump, m)
    n_open = 0
    for i in range(n_gates):
        n_open += opn[i]
    return n_sq, n_gates, n_open, _dalian_count(board, sums, side, n_sq)


@kernel
def layout_shape_counts(board, sums, side):
    """``(n_squares, n_gates, n_dalians)`` of ``side`` as :func:`shape_counts_from` counts them, without
    the open-gate check (which needs move generation): what ``eval.shape`` scores in the layout.
    ``sums`` the board's :func:`core.movegen.cell_sums`; ``tests/test_agents.py`` checks it against
    :func:`shape_counts` through the greedy layout scores."""
    me = side + 1
    n_sq = 0
    n_gates = 0
    for c in range(NUM_CELLS):
        t = sums[c]
        k = cell_count(t, me)
        if k == 4:
            n_sq += 1
        elif _is_gate_sum(t, me):
            n_gates += 1
    return n_sq, n_gates, _dalian_count(board, sums, side, n_sq)


@inline_kernel
def _dalian_count(board, sums, side, n_sq):
    """Dalians of ``side`` (:func:`_scan_dalians`, nothing written) given its ``n_sq`` squares: 0
    without a square, since a Dalian is built on one."""
    if n_sq == 0:
        return 0
    dummy16 = np.empty(0, np.int16)
    return _scan_dalians(board, sums, side, dummy16, dummy16, np.empty(0, np.int8), False)


# --------------------------------------------------------------------------------------------- wrappers
def cell_name(c: int) -> str:
    """A cell's human name: its lower-left corner point (cell ``g7`` has corners g7, h7, g8, h8)."""
    return POINT_NAMES[int(CELL_CORNERS[c, 0])]


def _side(state, side):
    return state.side if side is None else int(side)


def squares(state, side: int | None = None) -> list[str]:
    """Squares of ``side`` (default: the side to move) in ``state``, as cell names (lower-left
    corners), ascending by cell index."""
    return [cell_name(c) for c in find_squares(state.board, _side(state, side))]


def gates(state, side: int | None = None) -> list[tuple[str, str, bool]]:
    """Gates of ``side`` (default: the side to move) as ``(cell name, empty corner, open)``; openness
    uses ``state.counts`` and ``state.ruleset`` as if ``side`` were to move (battle move rules, also
    when called on a layout position)."""
    s = _side(state, side)
    cells, empty, opn = find_gates(
        state.board, s, state.counts[s], state.counts[1 - s], state.ruleset.vector
    )
    return [(cell_name(c), POINT_NAMES[e], bool(o)) for c, e, o in zip(cells, empty, opn)]


def dalians(state, side: int | None = None) -> list[tuple[str, str, str]]:
    """Dalians of ``side`` (default: the side to move) as ``(stone, empty point, kind)`` with kind
    ``"flat"``, ``"diagonal"`` or ``"mixed"``, sorted by (stone, empty) index."""
    stones, empties, kinds = find_dalians(state.board, _side(state, side))
    return [(POINT_NAMES[s], POINT_NAMES[e], KIND_NAMES[k]) for s, e, k in zip(stones, empties, kinds)]
