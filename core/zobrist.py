"""Zobrist hashing of positions (board, side to move, phase) for repetition detection.

Keys come from a fixed seed, so a hash means the same thing in every process and run.
``ZOBRIST_STONE`` is ``uint64[196, 2]`` (point, player); ``ZOBRIST_BLACK_TO_MOVE`` and
``ZOBRIST_BATTLE`` are XORed in when Black is to move / in the battle phase.
"""

from __future__ import annotations

import numpy as np

from core.board import NUM_POINTS
from core.jit import kernel

_rng = np.random.default_rng(0x4A49_5543_4845_5353)  # fixed: hashes must agree across processes
ZOBRIST_STONE = _rng.integers(0, 2**64 - 1, size=(NUM_POINTS, 2), dtype=np.uint64, endpoint=True)
_side_phase = _rng.integers(0, 2**64 - 1, size=2, dtype=np.uint64, endpoint=True)
ZOBRIST_BLACK_TO_MOVE = _side_phase[0]
ZOBRIST_BATTLE = _side_phase[1]
ZOBRIST_STONE.setflags(write=False)


@kernel
def zobrist_hash(board, side, phase):
    """``uint64`` hash of a position (``board`` ``int8[196]``, ``side`` 0/1, ``phase`` 0/1)."""
    h = np.uint64(0)
    for p in range(NUM_POINTS):
        if board[p] != 0:
            h ^= ZOBRIST_STONE[p, board[p] - 1]
    if side == 1:
        h ^= ZOBRIST_BLACK_TO_MOVE
    if phase == 1:
        h ^= ZOBRIST_BATTLE
    return h
