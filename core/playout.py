"""Whole random games inside one kernel: the rules benchmark and ``cli.py random-game``.

Each ply picks a uniformly random legal placement or battle path, then a uniformly random victim
set of the required size (rule book 3.3). The kernel releases the GIL, so threads play games in
parallel. Moves come back in a flat record (see :func:`random_game`).
"""

from __future__ import annotations

import numpy as np

from core.board import BLACK, CENTRE_OTHER, CENTRE_WHITE_FIRST, EMPTY, NUM_POINTS
from core.jit import kernel
from core.movegen import apply_path, generate_paths, layout_points, new_path_buffers
from core.rules import R_MAX_BATTLE_PLIES
from core.status import ONGOING, battle_status
from core.zobrist import zobrist_hash


MAX_SEED = 2**32 - 1


@kernel
def _grow16(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty(2 * a.shape[0] + need, np.int16)
    b[: a.shape[0]] = a
    return b


@kernel
def random_game(seed, rules):
    """Play one random game from the start position with seed ``seed`` (int).

    Returns ``(n_plies, winner, reason, kind, start, n_path, n_victims, data)``: ``winner`` 0/1/-1
    (draw), ``reason`` an ``END_*`` code of ``core.status``; per ply ``i < n_plies``: ``kind[i]``
    0 placement, 1 step/flight, 2 jump; its path is ``data[start[i] : start[i] + n_path[i]]`` and its
    square victims (ascending) follow immediately, ``n_victims[i]`` of them.
    """
    np.random.seed(seed)
    max_plies = NUM_POINTS + rules[R_MAX_BATTLE_PLIES] + 1
    kind = np.zeros(max_plies, np.int8)
    start = np.zeros(max_plies, np.int32)
    n_path = np.zeros(max_plies, np.int16)
    n_victims = np.zeros(max_plies, np.int16)
    data = np.empty(4 * max_plies, np.int16)
    used = 0
    board = np.zeros(NUM_POINTS, np.int8)
    spots = np.empty(NUM_POINTS, np.int16)
    side = 0
    for ply in range(NUM_POINTS):
        n = layout_points(board, ply, spots)
        p = spots[np.random.randint(n)]
        board[p] = side + 1
        start[ply] = used
        n_path[ply] = 1
        data[used] = p
        used += 1
        side = 1 - side
    board[CENTRE_WHITE_FIRST] = EMPTY
    board[CENTRE_OTHER] = EMPTY
    counts = np.array([NUM_POINTS // 2 - 1, NUM_POINTS // 2 - 1], np.int64)
    side = BLACK
    ply = NUM_POINTS
    history = np.empty(rules[R_MAX_BATTLE_PLIES] + 2, np.uint64)
    history[0] = zobrist_hash(board, side, 1)
    n_hist = 1
    pts, off, nsq, jump = new_path_buffers(512)
    left = np.empty(NUM_POINTS, np.int16)
    while True:
        m, pts, off, nsq, jump = generate_paths(board, side, counts[side], counts[1 - side], rules, pts, off, nsq, jump)
        reason, winner = battle_status(side, counts, ply, history, n_hist, m > 0, rules)
        if reason != ONGOING:
            return ply, winner, reason, kind, start, n_path, n_victims, data
        i = np.random.randint(m)
        path = pts[off[i] : off[i + 1]].copy()
        captured = apply_path(board, side, path, jump[i] != 0, path[:0])
        # Square victims: a uniform random subset of the opponent stones left, of the size required.
        n_left = 0
        for q in range(NUM_POINTS):
            if board[q] == 2 - side:
                left[n_left] = q
                n_left += 1
        nv = min(nsq[i], n_left)
        for j in range(nv):  # partial Fisher-Yates
            r = j + np.random.randint(n_left - j)
            left[j], left[r] = left[r], left[j]
        victims = np.sort(left[:nv])
        for j in range(nv):
            board[victims[j]] = EMPTY
        captured += nv
        data = _grow16(data, used + path.shape[0] + nv)
        kind[ply] = 2 if jump[i] else 1
        start[ply] = used
        n_path[ply] = path.shape[0]
        n_victims[ply] = nv
        data[used : used + path.shape[0]] = path
        used += path.shape[0]
        data[used : used + nv] = victims
        used += nv
        counts[1 - side] -= captured
        side = 1 - side
        ply += 1
        if captured > 0:
            n_hist = 0  # positions before a capture can never recur
        history[n_hist] = zobrist_hash(board, side, 1)
        n_hist += 1


def random_game_moves(seed: int, rules: np.ndarray) -> tuple[list, int, int]:
    """Play :func:`random_game` and return ``(moves, winner, reason)`` with ``moves`` as ``Move``s.
    ``seed`` must be in ``0..MAX_SEED`` (the kernel's NumPy seed range); ``JiuError`` otherwise."""
    from core.errors import JiuError
    from core.notation import Move

    if not 0 <= seed <= MAX_SEED:
        raise JiuError(f"seed {seed}: out of range 0..{MAX_SEED}")
    n, winner, reason, kind, start, n_path, n_victims, data = random_game(seed, rules)
    moves = []
    for i in range(n):
        a, b = start[i], start[i] + n_path[i]
        path = tuple(int(p) for p in data[a:b])
        victims = tuple(int(v) for v in data[b : b + n_victims[i]])
        moves.append(Move(path, bool(kind[i] == 2), victims))
    return moves, int(winner), int(reason)
