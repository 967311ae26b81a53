"""Whole random games inside one kernel: the rules benchmark and ``cli.py random-game``.

Each ply picks a uniformly random legal placement or battle path, then a uniformly random victim
set of the required size (rule book 3.3). The kernel releases the GIL, so threads play games in
parallel. Moves come back in a flat record (see :func:`random_game`).
"""

from __future__ import annotations

import numpy as np

from core.board import NUM_POINTS
from core.jit import kernel
from core.movegen import generate_paths, layout_points, new_path_buffers
from core.play import play
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
    counts = np.zeros(2, np.int64)
    spots = np.empty(NUM_POINTS, np.int16)
    side, phase, quiet, ply, h = 0, 0, 0, 0, zobrist_hash(board, 0, 0)
    no_victims = np.empty(0, np.int16)
    while phase == 0:
        n = layout_points(board, ply, spots)
        place = spots[np.random.randint(n) : ][:1]
        start[ply] = used
        n_path[ply] = 1
        data[used] = place[0]
        used += 1
        side, phase, quiet, ply, h, _ = play(board, counts, side, phase, quiet, ply, h, place, False, no_victims, 0)
    history = np.empty(rules[R_MAX_BATTLE_PLIES] + 2, np.uint64)
    history[0] = h
    n_hist = 1
    pts, off, nsq, jump = new_path_buffers(512)
    left = np.empty(NUM_POINTS, np.int16)
    jumped = np.zeros(NUM_POINTS, np.bool_)
    while True:
        m, pts, off, nsq, jump = generate_paths(board, side, counts[side], counts[1 - side], rules, pts, off, nsq, jump)
        reason, winner = battle_status(side, counts, ply, history, n_hist, m > 0, rules)
        if reason != ONGOING:
            return ply, winner, reason, kind, start, n_path, n_victims, data
        i = np.random.randint(m)
        path = pts[off[i] : off[i + 1]].copy()
        is_jump = jump[i] != 0
        if is_jump:
            for t in range(1, path.shape[0]):
                jumped[(path[t - 1] + path[t]) // 2] = True
        # Square victims: a uniform random subset of the opponent stones left after the path, of the
        # size required.
        n_left = 0
        for q in range(NUM_POINTS):
            if board[q] == 2 - side and not jumped[q]:
                left[n_left] = q
                n_left += 1
            jumped[q] = False
        nv = min(nsq[i], n_left)
        for j in range(nv):  # partial Fisher-Yates
            r = j + np.random.randint(n_left - j)
            left[j], left[r] = left[r], left[j]
        victims = np.sort(left[:nv])
        data = _grow16(data, used + path.shape[0] + nv)
        kind[ply] = 2 if is_jump else 1
        start[ply] = used
        n_path[ply] = path.shape[0]
        n_victims[ply] = nv
        data[used : used + path.shape[0]] = path
        used += path.shape[0]
        data[used : used + nv] = victims
        used += nv
        side, phase, quiet, ply, h, captured = play(board, counts, side, phase, quiet, ply, h, path, is_jump, victims, 0)
        if captured > 0:
            n_hist = 0  # positions before a capture can never recur
        history[n_hist] = h
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
