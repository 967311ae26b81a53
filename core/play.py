"""The one move-application kernel (rule book sections 2.4 and 3): every caller that plays a move
(``GameState``, the search tree, the random playout, the expert's look-ahead) goes through
:func:`play` or, for a path alone, :func:`play_path`.

A position is ``board`` ``int8[196]`` and ``counts`` (stones of White, Black; any integer dtype,
length 2), both updated in place, plus the scalars ``side``, ``phase``, ``quiet``, ``ply`` and the
Zobrist ``hash`` (``uint64``, ``core.zobrist``), which are returned. The hash is updated by XOR
deltas (one key per stone placed, moved or removed, plus the side and phase keys), never recomputed.
No legality check is made: callers pass moves the generator produced or ``GameState`` checked.
"""

from __future__ import annotations

import numpy as np

from core.board import BLACK, CENTRE_OTHER, CENTRE_WHITE_FIRST, EMPTY, NUM_POINTS, STONES_PER_SIDE
from core.jit import kernel
from core.zobrist import ZOBRIST_BATTLE, ZOBRIST_BLACK_TO_MOVE, ZOBRIST_STONE


@kernel
def step_key(side, origin, dest):
    """The Zobrist XOR (``uint64``) of ``side``'s stone leaving point ``origin`` for point ``dest``: the
    whole hash change of a quiet battle move but the side-to-move key (``ZOBRIST_BLACK_TO_MOVE``)."""
    return ZOBRIST_STONE[origin, side] ^ ZOBRIST_STONE[dest, side]


@kernel
def play_path(board, side, path, is_jump):
    """Move ``side``'s stone along ``path`` (``int16[n]``, origin first) on ``board`` in place and
    remove the jumped stones when ``is_jump``; no square victims. Returns ``(hops, delta)``: the
    stones jumped and the Zobrist XOR of the stone changes (side and phase keys not included)."""
    o = path[0]
    d = path[path.shape[0] - 1]
    opp = 1 - side
    delta = step_key(side, o, d)
    board[o] = EMPTY
    hops = 0
    if is_jump:
        for i in range(1, path.shape[0]):
            q = (path[i - 1] + path[i]) // 2
            board[q] = EMPTY
            delta ^= ZOBRIST_STONE[q, opp]
            hops += 1
    board[d] = side + 1
    return hops, delta


@kernel
def take_stones(board, counts, player, points, h):
    """Remove ``player``'s stones at ``points`` (``int16[v]``) from ``board``, decrement
    ``counts[player]`` (both in place) and return the hash ``h`` with their keys XORed out (as
    ``uint64``, whatever integer type ``h`` came as)."""
    out = np.uint64(h)
    for j in range(points.shape[0]):
        q = points[j]
        board[q] = EMPTY
        out ^= ZOBRIST_STONE[q, player]
    counts[player] -= points.shape[0]
    return out


@kernel
def play(board, counts, side, phase, quiet, ply, h, path, is_jump, victims, pending):
    """Play one move of ``side`` in place on ``board``/``counts`` and return the new scalars
    ``(side, phase, quiet, ply, hash, captured)``.

    Layout (``phase`` 0): ``path`` is one point; the stone is placed. The 196th placement starts the
    battle: both centre stones are removed, each side has 97 stones and Black moves (rule book 2.4).
    Battle (``phase`` 1): ``path`` with jump flag ``is_jump`` (jumped stones removed), then the square
    ``victims`` (``int16[v]``, opponent stones) are removed. ``pending`` is the number of square
    victims still to be chosen and removed later by :func:`take_stones` (the search's lazy victims):
    they count as a capture for ``quiet`` only. ``captured`` is the number of stones removed now.
    ``h`` is ``uint64`` (pass ``np.uint64(hash)`` from Python: a Python int would be typed ``int64``).
    """
    h = np.uint64(h)
    if phase == 0:
        p = path[0]
        board[p] = side + 1
        counts[side] += 1
        h ^= ZOBRIST_STONE[p, side]
        if counts[0] + counts[1] < NUM_POINTS:
            return 1 - side, 0, 0, ply + 1, h ^ ZOBRIST_BLACK_TO_MOVE, 0
        for c in (CENTRE_WHITE_FIRST, CENTRE_OTHER):
            h ^= ZOBRIST_STONE[c, board[c] - 1]
            board[c] = EMPTY
        counts[0] = STONES_PER_SIDE - 1
        counts[1] = STONES_PER_SIDE - 1
        h ^= ZOBRIST_BATTLE
        if side != BLACK:
            h ^= ZOBRIST_BLACK_TO_MOVE
        return BLACK, 1, 0, ply + 1, h, 0
    hops, delta = play_path(board, side, path, is_jump)
    counts[1 - side] -= hops
    h = take_stones(board, counts, 1 - side, victims, h ^ delta ^ ZOBRIST_BLACK_TO_MOVE)
    captured = hops + victims.shape[0]
    new_quiet = 0 if captured + pending > 0 else quiet + 1
    return 1 - side, 1, new_quiet, ply + 1, h, captured
