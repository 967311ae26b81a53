"""``MoveList``: every full legal move of a position as a lazy, sorted sequence (``GameState.legal_moves``).

A square-forming path takes any ``k`` of the opponent's stones left, so a position can have
thousands of full moves (up to C(97, 2) = 4,656 per path, C(97, 4) for a flight forming four
squares) while a user usually looks at one. The list therefore holds the legal paths (CSR arrays of
``core.movegen``) and the number of moves each one makes; a ``Move`` is made only when it is read,
and a path's victim sets only when one of its moves is read.

Order: by notation string (``str(move)``), exactly as ``sorted(moves, key=str)``. Because ``/`` sorts
before every character of a point name and ``-``/``x``, and a path's notation is never a proper
prefix of another path's unless all its moves sort first, that order is: paths by their notation,
then, within a path, victim sets by the tuple of their point names (each set written in point-index
order, as ``Move`` holds it).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from math import comb

import numpy as np

from core.board import NUM_POINTS, POINT_NAMES
from core.jit import kernel
from core.notation import Move

_NAME_BYTES = np.zeros((NUM_POINTS, 3), np.uint8)
_NAME_LEN = np.zeros(NUM_POINTS, np.int64)
for _p, _name in enumerate(POINT_NAMES):
    _NAME_BYTES[_p, : len(_name)] = np.frombuffer(_name.encode(), np.uint8)
    _NAME_LEN[_p] = len(_name)
_NAME_BYTES.setflags(write=False)
_NAME_LEN.setflags(write=False)
# NAME_RANK[p]: the rank of point p's name in string order.
NAME_RANK = np.empty(NUM_POINTS, np.int64)
NAME_RANK[np.array(sorted(range(NUM_POINTS), key=lambda p: POINT_NAMES[p]))] = np.arange(NUM_POINTS)
NAME_RANK.setflags(write=False)
# COMB[n, k] = C(n, k) for n <= 196 stones left and k <= 4 victims.
COMB = np.array([[comb(n, k) for k in range(5)] for n in range(NUM_POINTS + 1)], np.int64)
COMB.setflags(write=False)


@kernel
def _key_less(keys, a, b):
    """Row ``a`` of ``keys`` sorts before row ``b`` (bytes compared in order; zero padding first)."""
    for c in range(keys.shape[1]):
        if keys[a, c] != keys[b, c]:
            return keys[a, c] < keys[b, c]
    return False


@kernel
def notation_order(pts, off, jump, nsq, m, n_opp):
    """The first ``m`` CSR paths of ``core.movegen`` in notation order, and their moves: returns
    ``(order int64[m], k int64[m], counts int64[m])`` with ``k`` the victims each path takes
    (``min(nsq, n_opp - jumped)``) and ``counts`` its full moves (``C(n_opp - jumped, k)``), both in
    that order. Each path's notation is written as ASCII bytes (zero padded, so a prefix sorts
    first); rows are sorted by their first 8 bytes as a big-endian integer, then equal leads by the
    whole row (stable)."""
    width = 1
    for i in range(m):
        w = off[i + 1] - off[i] - 1  # separators
        for t in range(off[i], off[i + 1]):
            w += _NAME_LEN[pts[t]]
        width = max(width, w)
    width = max(width, 8)
    keys = np.zeros((m, width), np.uint8)
    lead = np.zeros(m, np.uint64)
    for i in range(m):
        c = 0
        sep = 120 if jump[i] != 0 else 45  # "x" or "-"
        for t in range(off[i], off[i + 1]):
            if t > off[i]:
                keys[i, c] = sep
                c += 1
            p = pts[t]
            for j in range(_NAME_LEN[p]):
                keys[i, c] = _NAME_BYTES[p, j]
                c += 1
        v = np.uint64(0)
        for j in range(8):
            v = (v << np.uint64(8)) | np.uint64(keys[i, j])
        lead[i] = v
    order = np.argsort(lead, kind="mergesort")
    i = 0
    while i < m:  # equal leads: insertion sort by the whole row
        j = i + 1
        while j < m and lead[order[j]] == lead[order[i]]:
            j += 1
        for a in range(i + 1, j):
            x = order[a]
            b = a - 1
            while b >= i and _key_less(keys, x, order[b]):
                order[b + 1] = order[b]
                b -= 1
            order[b + 1] = x
        i = j
    k = np.empty(m, np.int64)
    counts = np.empty(m, np.int64)
    for r in range(m):
        i = order[r]
        left = n_opp - (off[i + 1] - off[i] - 1 if jump[i] != 0 else 0)
        k[r] = min(nsq[i], left)
        counts[r] = COMB[left, k[r]]
    return order, k, counts


class MoveList(Sequence):
    """The full legal moves of a position in notation order (module docstring); a read-only
    ``Sequence[Move]`` (``len``, indexing, slices as lists, iteration, ``in``). ``list(moves)`` is the
    complete sorted list. Equal to any sequence of the same moves in the same order."""

    __slots__ = ("_flat", "_start", "_end", "_jump", "_k", "_cum", "_n", "_board", "_opp", "_sets")

    def __init__(self, flat: list[int], start: list[int], end: list[int], jump: np.ndarray, k: np.ndarray,
                 counts: np.ndarray, board: np.ndarray | None = None, opp: int = 0):
        """Path ``b`` (in notation order) is ``flat[start[b]:end[b]]`` (``start`` ``None``: the
        one-point path ``(flat[b],)``, a placement) with jump flag ``jump[b]``,
        ``k[b]`` victims to take and ``counts[b]`` moves (``C(stones left, k)``); ``board`` (before
        the move) and ``opp`` (the victims' stone value) give the stones left when a path's victim
        sets are needed."""
        self._flat, self._start, self._end = flat, start, end
        self._jump, self._k = jump, k
        self._cum = np.cumsum(counts)
        self._n = int(self._cum[-1]) if len(self._cum) else 0
        self._board, self._opp = board, opp
        self._sets: dict[int, list[tuple[int, ...]]] = {}

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = self._n
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("move index out of range")
        b = int(np.searchsorted(self._cum, i, side="right"))
        if self._k[b] == 0:
            return Move(self._path(b), bool(self._jump[b]))
        j = i - (int(self._cum[b - 1]) if b else 0)
        return Move(self._path(b), bool(self._jump[b]), self._victim_set(b, j))

    def _path(self, b: int) -> tuple[int, ...]:
        if self._start is None:
            return (self._flat[b],)
        return tuple(self._flat[self._start[b]:self._end[b]])

    def __iter__(self):
        for b in range(len(self._flat) if self._start is None else len(self._start)):
            path, jump = self._path(b), bool(self._jump[b])
            if self._k[b] == 0:
                yield Move(path, jump)
            else:
                for v in self._victim_sets(b):
                    yield Move(path, jump, v)

    def __eq__(self, other) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"MoveList({len(self)} moves)"

    def _stones_left(self, b: int) -> np.ndarray:
        """The opponent's stones left after path ``b`` (ascending points, ``int64``)."""
        path = self._path(b)
        left = self._board == self._opp
        if self._jump[b]:
            for a, c in zip(path, path[1:]):
                left[(a + c) // 2] = False
        return np.flatnonzero(left)

    def _victim_set(self, b: int, j: int) -> tuple[int, ...]:
        """The ``j``-th victim set of path ``b`` in notation order, found without listing the others:
        the first victim (in name order) is the one whose block of sets holds ``j`` (a victim ``a``
        heads ``C(stones after a, k - 1)`` sets, those after it by point index), and so on."""
        if b in self._sets:
            return self._sets[b][j]
        pool = self._stones_left(b)
        k = int(self._k[b])
        out = []
        for level in range(k):
            n = len(pool)
            heads = COMB[np.arange(n - 1, -1, -1), k - level - 1]
            by_name = np.argsort(NAME_RANK[pool], kind="stable")
            cum = np.cumsum(heads[by_name])
            idx = int(np.searchsorted(cum, j, side="right"))
            t = int(by_name[idx])
            j -= int(cum[idx - 1]) if idx else 0
            out.append(int(pool[t]))
            pool = pool[t + 1:]
        return tuple(out)

    def _victim_sets(self, b: int) -> list[tuple[int, ...]]:
        """Victim sets of path ``b`` (ascending point indices each) in notation order."""
        if b not in self._sets:
            k = int(self._k[b])
            stones = self._stones_left(b)
            if k == 1:
                sets = [(int(v),) for v in stones[np.argsort(NAME_RANK[stones])]]
            else:
                if k == 2:
                    rows = stones[np.stack(np.triu_indices(len(stones), 1), axis=1)]
                else:
                    rows = np.array(list(combinations(stones.tolist(), k)), np.int64).reshape(-1, k)
                order = np.lexsort([NAME_RANK[rows[:, c]] for c in range(k - 1, -1, -1)])
                sets = [tuple(r) for r in rows[order].tolist()]
            self._sets[b] = sets
        return self._sets[b]


def placement_list(points: np.ndarray) -> MoveList:
    """The placements ``points`` (``int16``/``int64[n]``) as a ``MoveList`` in notation order."""
    n = len(points)
    flat = points[np.argsort(NAME_RANK[points], kind="stable")].tolist()
    return MoveList(flat, None, None, _ZEROS[:n], _ZEROS[:n], _ONES[:n])


_ZEROS = np.zeros(NUM_POINTS, np.int64)
_ONES = np.ones(NUM_POINTS, np.int64)
_ZEROS.setflags(write=False)
_ONES.setflags(write=False)


def battle_list(board: np.ndarray, side: int, n_opp: int, m: int, pts, off, nsq, jump) -> MoveList:
    """The full moves of the ``m`` CSR paths of ``side`` (``core.movegen``) on ``board`` (the
    opponent has ``n_opp`` stones) as a ``MoveList``."""
    if m == 0:
        return MoveList([], [], [], np.zeros(0, np.int8), np.zeros(0, np.int64), np.zeros(0, np.int64))
    order, k, counts = notation_order(pts, off, jump, nsq, m, n_opp)
    o = off[: m + 1]
    return MoveList(pts[: o[-1]].tolist(), o[:-1][order].tolist(), o[1:][order].tolist(), jump[:m][order], k, counts,
                    board, 2 - side)
