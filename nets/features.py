"""Feature planes for the nets: a state becomes ``(NUM_PLANES, 14, 14) float32``.

Planes are from the point of view of the side to move (AlphaZero style); plane ``[c, r, k]`` is
column ``k``, row ``r`` (0-based, row 0 = rank 1), i.e. the board index ``r * 14 + k``.

====  ===============================================================================
 #    plane
====  ===============================================================================
 0    own stones (side to move)
 1    opponent stones
 2    empty points
 3    constant 1 if Black is to move, else 0
 4    constant 1 in the battle phase, 0 in the layout
 5    constant 1 if the side to move is flying (battle, at most 14 stones)
 6    constant 1 if the opponent is flying
 7    last move's origin (placements: the placed point); all 0 when unknown
 8    last move's destination (placements: the placed point)
 9    points emptied by the last move's captures (jump and square victims)
10    quiet plies (battle plies since the last capture) / 100, clipped to 1
11    own stones / 98 (constant)
12    opponent stones / 98 (constant)
13    battle progress: battle plies / max_battle_plies, clipped to 1 (0 in the layout)
====  ===============================================================================

The last move is not part of a JFEN, so a state parsed from JFEN has planes 7-9 all zero.
"""

from __future__ import annotations

import numpy as np

from core.board import FLY_THRESHOLD, NUM_POINTS, SIZE, STONES_PER_SIDE
from core.jit import kernel
from core.state import GameState

NUM_PLANES = 14
QUIET_SCALE = 100.0


@kernel
def encode_planes(board, side, phase, n_own, n_opp, quiet, progress, last_from, last_to, captured, out):
    """Write the planes of one position into ``out`` (``float32[NUM_PLANES, 14, 14]``, overwritten).

    ``board`` ``int8[196]``; ``side`` 0/1; ``phase`` 0/1; ``progress`` in [0, 1]; ``last_from`` and
    ``last_to`` point indices or -1; ``captured`` ``int16[n]`` points emptied by the last move.
    """
    out[:] = 0.0
    me = side + 1
    for p in range(NUM_POINTS):
        r = p // SIZE
        c = p % SIZE
        v = board[p]
        if v == me:
            out[0, r, c] = 1.0
        elif v == 0:
            out[2, r, c] = 1.0
        else:
            out[1, r, c] = 1.0
    if side == 1:
        out[3] = 1.0
    if phase == 1:
        out[4] = 1.0
        if n_own <= FLY_THRESHOLD:
            out[5] = 1.0
        if n_opp <= FLY_THRESHOLD:
            out[6] = 1.0
    if last_from >= 0:
        out[7, last_from // SIZE, last_from % SIZE] = 1.0
    if last_to >= 0:
        out[8, last_to // SIZE, last_to % SIZE] = 1.0
    for i in range(captured.shape[0]):
        q = captured[i]
        out[9, q // SIZE, q % SIZE] = 1.0
    out[10] = min(quiet / QUIET_SCALE, 1.0)
    out[11] = n_own / STONES_PER_SIDE
    out[12] = n_opp / STONES_PER_SIDE
    out[13] = progress


def state_planes(state: GameState, out: np.ndarray | None = None) -> np.ndarray:
    """Feature planes of ``state``: ``(NUM_PLANES, 14, 14) float32`` (written into ``out`` if given)."""
    if out is None:
        out = np.empty((NUM_PLANES, SIZE, SIZE), np.float32)
    own, opp = state.counts[state.side], state.counts[1 - state.side]
    if state.phase == 1:
        progress = min((state.ply - NUM_POINTS) / state.ruleset.max_battle_plies, 1.0)
    else:
        progress = 0.0
    mv = state.last_move
    last_from = mv.origin if mv is not None else -1
    last_to = mv.destination if mv is not None else -1
    captured = np.array(mv.jumped + mv.victims if mv is not None else (), np.int16)
    encode_planes(state.board, state.side, state.phase, own, opp, state.quiet, max(progress, 0.0),
                  last_from, last_to, captured, out)
    return out


def batch_planes(states: list[GameState]) -> np.ndarray:
    """Planes of several states: ``(B, NUM_PLANES, 14, 14) float32``."""
    out = np.empty((len(states), NUM_PLANES, SIZE, SIZE), np.float32)
    for i, s in enumerate(states):
        state_planes(s, out[i])
    return out
