"""Board symmetries of Jiu and their action on boards, states, moves and policy vectors (rule book
section 8).

The rules are invariant under a group of four maps of the board, each of which keeps the centre
diagonal g7-h8 (the Jiu mark) on itself. With 0-based column ``c`` and row ``r``:

=====  ================  ========================  ==============================================
sym    name              ``(c, r) ->``             on the point index
=====  ================  ========================  ==============================================
0      ``identity``      ``(c, r)``                ``idx``
1      ``rotate180``     ``(13 - c, 13 - r)``      ``195 - idx`` (swaps g7 and h8)
2      ``diagonal``      ``(r, c)``                reflection across the g7-h8 diagonal (fixes both)
3      ``antidiagonal``  ``(13 - r, 13 - c)``      1 and 2 composed: the other diagonal (swaps them)
=====  ================  ========================  ==============================================

The group is the Klein four-group: every element is its own inverse, so a map is also its inverse
permutation. A step's direction changes under the maps (``DIR_MAPS``); a jump chain's landings map
point by point; a flight's two ends map point by point.

Tables (read-only):

- ``POINT_MAPS`` ``int16[4, 196]``: ``POINT_MAPS[s, p]`` is the image of point ``p``; built at import.
  Layout actions are point indices, so layout policies use it too.
- ``DIR_MAPS`` ``int8[4, 4]``: image of step direction ``d`` (0 up, 1 down, 2 left, 3 right).
- :func:`upper_maps` -> ``UPPER_MAPS`` ``int32[4, 48804]`` and :func:`lower_maps` -> ``LOWER_MAPS``
  ``int32[4, 19307]``: images of upper/lower actions (``nets.encoding``); built on first use
  (``functools.cache``) so that importing this module stays cheap. They are permutations of the whole
  index range, impossible indices included (those map to impossible indices), and agree with
  ``encode(transform(path))`` for every path. The module attributes ``UPPER_MAPS`` and ``LOWER_MAPS``
  resolve lazily to the same arrays.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from core.board import NUM_POINTS, SIZE
from nets.encoding import (
    FLIGHT_BASE,
    HALF,
    JUMP_BASE,
    JUMP_PER_ORIGIN,
    LOWER_NONE,
    NUM_LAYOUT_ACTIONS,
    NUM_LOWER_ACTIONS,
    NUM_UPPER_ACTIONS,
    PAIR_BASE,
)
from core.notation import Move

NUM_SYMMETRIES = 4
SYMMETRY_NAMES = ("identity", "rotate180", "diagonal", "antidiagonal")
IDENTITY, ROTATE180, DIAGONAL, ANTIDIAGONAL = range(NUM_SYMMETRIES)
POLICY_KINDS = {"layout": NUM_LAYOUT_ACTIONS, "upper": NUM_UPPER_ACTIONS, "lower": NUM_LOWER_ACTIONS}

_LAST = SIZE - 1


def _map_col_row(sym: int, c, r):
    """Image ``(c', r')`` of 0-based column/row (ints or arrays) under ``sym``."""
    if sym == IDENTITY:
        return c, r
    if sym == ROTATE180:
        return _LAST - c, _LAST - r
    if sym == DIAGONAL:
        return r, c
    return _LAST - r, _LAST - c


def _build_point_maps() -> np.ndarray:
    idx = np.arange(NUM_POINTS)
    c, r = idx % SIZE, idx // SIZE
    maps = np.empty((NUM_SYMMETRIES, NUM_POINTS), np.int16)
    for s in range(NUM_SYMMETRIES):
        c2, r2 = _map_col_row(s, c, r)
        maps[s] = r2 * SIZE + c2
    maps.setflags(write=False)
    return maps


def _build_dir_maps() -> np.ndarray:
    dirs = ((0, 1), (0, -1), (-1, 0), (1, 0))  # core.board.DIRECTIONS: (dcol, drow)
    maps = np.empty((NUM_SYMMETRIES, 4), np.int8)
    for s in range(NUM_SYMMETRIES):
        for d, (dc, dr) in enumerate(dirs):
            # A direction is a difference of points; the affine part of the map cancels.
            c0, r0 = _map_col_row(s, 5, 5)
            c1, r1 = _map_col_row(s, 5 + dc, 5 + dr)
            maps[s, d] = dirs.index((c1 - c0, r1 - r0))
    maps.setflags(write=False)
    return maps


POINT_MAPS = _build_point_maps()
DIR_MAPS = _build_dir_maps()


def _check_sym(sym) -> int:
    if isinstance(sym, (bool, np.bool_)) or not isinstance(sym, (int, np.integer)) or not 0 <= sym < NUM_SYMMETRIES:
        raise ValueError(f"symmetry {sym!r}: expected 0..{NUM_SYMMETRIES - 1} ({', '.join(SYMMETRY_NAMES)})")
    return int(sym)


@cache
def upper_maps() -> np.ndarray:
    """``UPPER_MAPS`` ``int32[4, 48804]``: ``UPPER_MAPS[s, a]`` is the upper action of the image of
    a path with action ``a`` under symmetry ``s`` (read-only; built once, ~ms)."""
    maps = np.empty((NUM_SYMMETRIES, NUM_UPPER_ACTIONS), np.int32)
    # steps: 4*o + d -> 4*P[o] + D[d]
    o, d = np.divmod(np.arange(JUMP_BASE), 4)
    # jumps: 784 + 49*o + 7*(row0(e)//2) + col0(e)//2; recover e from o's parity
    jo, sub = np.divmod(np.arange(FLIGHT_BASE - JUMP_BASE), JUMP_PER_ORIGIN)
    r2, c2 = np.divmod(sub, HALF)
    je = (2 * r2 + (jo // SIZE) % 2) * SIZE + 2 * c2 + (jo % SIZE) % 2
    # flights: 10388 + 196*o + e
    fo, fe = np.divmod(np.arange(NUM_UPPER_ACTIONS - FLIGHT_BASE), NUM_POINTS)
    for s in range(NUM_SYMMETRIES):
        p = POINT_MAPS[s].astype(np.int64)
        maps[s, :JUMP_BASE] = 4 * p[o] + DIR_MAPS[s][d]
        e = p[je]
        sub_e = HALF * ((e // SIZE) // 2) + (e % SIZE) // 2
        maps[s, JUMP_BASE:FLIGHT_BASE] = JUMP_BASE + JUMP_PER_ORIGIN * p[jo] + sub_e
        maps[s, FLIGHT_BASE:] = FLIGHT_BASE + NUM_POINTS * p[fo] + p[fe]
    maps.setflags(write=False)
    return maps


@cache
def lower_maps() -> np.ndarray:
    """``LOWER_MAPS`` ``int32[4, 19307]``: ``LOWER_MAPS[s, a]`` is the lower action of the image of
    the victim set of ``a`` under symmetry ``s`` (read-only; built once)."""
    maps = np.empty((NUM_SYMMETRIES, NUM_LOWER_ACTIONS), np.int32)
    i = np.repeat(np.arange(NUM_POINTS), np.arange(NUM_POINTS))  # pair index order: i ascending ...
    j = np.concatenate([np.arange(k) for k in range(NUM_POINTS)])  # ... then j < i ascending
    for s in range(NUM_SYMMETRIES):
        p = POINT_MAPS[s].astype(np.int64)
        maps[s, :PAIR_BASE] = p
        a, b = np.maximum(p[i], p[j]), np.minimum(p[i], p[j])
        maps[s, PAIR_BASE:LOWER_NONE] = PAIR_BASE + a * (a - 1) // 2 + b
        maps[s, LOWER_NONE] = LOWER_NONE
    maps.setflags(write=False)
    return maps


def __getattr__(name: str):
    if name == "UPPER_MAPS":
        return upper_maps()
    if name == "LOWER_MAPS":
        return lower_maps()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def action_map(sym: int, kind: str) -> np.ndarray:
    """The action permutation of ``sym`` for ``kind`` in ``'layout'`` (``int16[196]``), ``'upper'``
    (``int32[48804]``) or ``'lower'`` (``int32[19307]``). Raises ``ValueError`` for a bad argument."""
    s = _check_sym(sym)
    if kind == "layout":
        return POINT_MAPS[s]
    if kind == "upper":
        return upper_maps()[s]
    if kind == "lower":
        return lower_maps()[s]
    raise ValueError(f"action kind {kind!r}: expected one of {', '.join(POLICY_KINDS)}")


# --------------------------------------------------------------------------------------------- objects
def transform_board(board: np.ndarray, sym: int) -> np.ndarray:
    """A new array with the points of ``board`` moved by ``sym``: ``out[..., POINT_MAPS[sym, p]] =
    board[..., p]``. ``board`` has the 196 points on its last axis (``int8[196]`` boards, or any
    ``(..., 196)`` per-point data); dtype is kept. Raises ``ValueError`` for another last axis."""
    s = _check_sym(sym)
    board = np.asarray(board)
    if board.shape[-1:] != (NUM_POINTS,):
        raise ValueError(f"transform_board: last axis must have {NUM_POINTS} points, shape is {board.shape}")
    out = np.empty_like(board)
    out[..., POINT_MAPS[s]] = board
    return out


def transform_planes(planes: np.ndarray, sym: int) -> np.ndarray:
    """Feature planes ``(..., 14, 14)`` indexed ``[..., row, column]`` (``nets.features``) moved by
    ``sym``, as a new contiguous array; consistent with :func:`transform_board` on the flattened
    ``row * 14 + column`` points. Raises ``ValueError`` for other trailing shapes."""
    s = _check_sym(sym)
    planes = np.asarray(planes)
    if planes.shape[-2:] != (SIZE, SIZE):
        raise ValueError(f"transform_planes: trailing axes must be (14, 14), shape is {planes.shape}")
    if s == ROTATE180:
        planes = planes[..., ::-1, ::-1]
    elif s == DIAGONAL:
        planes = np.swapaxes(planes, -1, -2)
    elif s == ANTIDIAGONAL:
        planes = np.swapaxes(planes[..., ::-1, ::-1], -1, -2)
    return np.ascontiguousarray(planes)


def transform_move(move: Move, sym: int) -> Move:
    """Image of a full ``Move`` (placement, step, flight or jump chain): every path point and victim is
    mapped; victims are re-sorted ascending, so ``str`` of the result is the image's notation."""
    p = POINT_MAPS[_check_sym(sym)]
    return Move(
        tuple(int(p[x]) for x in move.path),
        move.jump,
        tuple(sorted(int(p[v]) for v in move.victims)),
    )


def transform_state(state, sym: int):
    """Image of a ``GameState`` under ``sym`` (a new ``GameState``).

    The board is permuted; side, phase, quiet plies, ply, stone counts and ruleset are kept;
    ``last_move`` is transformed when present. The repetition **history cannot be transformed** (it
    holds Zobrist hashes, not boards), so the result's history **restarts** at the transformed
    position (as for a JFEN): repetition draws of the original game are not seen in the image.
    """
    from core.state import GameState  # deferred: keeps ``import nets.symmetry`` light

    s = _check_sym(sym)
    last = state.last_move
    return GameState(
        transform_board(state.board, s),
        state.side,
        state.phase,
        state.quiet,
        state.ply,
        state.ruleset,
        None,
        transform_move(last, s) if last is not None else None,
        state.counts,
    )


def transform_policy(vector: np.ndarray, sym: int, kind: str | None = None) -> np.ndarray:
    """A policy over actions moved by ``sym``: ``out[..., M[a]] = vector[..., a]`` with ``M`` the
    action map of ``kind`` (``'layout'`` 196, ``'upper'`` 48,804, ``'lower'`` 19,307 entries on the
    last axis; inferred from that length when ``kind`` is ``None``). Returns a new numpy array of the
    same dtype and shape. Raises ``ValueError`` if the length does not match the kind."""
    s = _check_sym(sym)
    vector = np.asarray(vector)
    n = vector.shape[-1] if vector.ndim else -1
    if kind is None:
        kinds = [k for k, size in POLICY_KINDS.items() if size == n]
        if not kinds:
            raise ValueError(f"transform_policy: last axis {n} is none of {sorted(POLICY_KINDS.values())}")
        kind = kinds[0]
    if kind not in POLICY_KINDS:
        raise ValueError(f"policy kind {kind!r}: expected one of {', '.join(POLICY_KINDS)}")
    if n != POLICY_KINDS[kind]:
        raise ValueError(f"transform_policy: a {kind} policy has {POLICY_KINDS[kind]} entries, got {n}")
    out = np.empty_like(vector)
    out[..., action_map(s, kind)] = vector
    return out
