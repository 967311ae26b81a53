"""Kernels of the layout scores: the expert's knowledge kernel (:func:`layout_scores`) and the greedy
shape score (:func:`shape_layout_scores`, papers/001 Eq. 9 plus a prior), used by
``knowledge.expert.ExpertKnowledge.layout_scores`` and the greedy and minimax agents.

Layout (:func:`layout_scores`): every empty point is scored by the change it makes to the cells
(2x2 blocks) that contain it, for both sides:

- own gain: a cell free of opponent stones is worth ``own[k]`` with ``k`` own corners
  (``own = [0, .5, 1.5, 4, 10]``: 3 corners is a gate, 4 a square); placing adds ``own[k+1] - own[k]``;
- blocking: a cell holding only opponent stones loses its whole value ``block * own[k]`` for them;
- Dalian geometry: completing (or raising to a gate) a cell that sits at a Dalian offset from an own
  square (the two squares of a flat or diagonal Dalian, ``core.shapes`` docstring: offset ``2u`` or
  ``2u`` + 1 across) earns ``dalian_sq`` (``dalian_gate``); blocking such an opponent cell likewise;
- centre holes: the two centre points are emptied when the battle starts, so they count as empty
  for both sides in every cell; a cell with one centre corner and 3 own others becomes a gate whose
  hole is the centre at the first battle move (``centre`` values).

The agent adds this kernel, times ``layout_mix`` (0.3), to the greedy layout score (``eval.shape``
difference after the placement plus the Gaussian prior of ``knowledge.formation``): in matches between
expert battle players that mix beat both the kernel alone and the shape score alone.
"""

from __future__ import annotations

import numpy as np

from core.board import CELL_CORNERS, CENTRE_OTHER, CENTRE_WHITE_FIRST, EMPTY, NUM_CELLS, NUM_POINTS, POINT_CELLS
from core.jit import kernel
from core.movegen import CELL_CODE, cell_sums, layout_points
from core.shapes import layout_shape_counts

# own[0..4], centre-cell own[0..3], block, dalian_sq, dalian_gate
LAYOUT_WEIGHTS = np.array(
    [0.0, 0.5, 1.5, 4.0, 10.0, 0.0, 0.5, 1.5, 6.0, 0.9, 3.0, 1.0],
    np.float64,
)
LAYOUT_WEIGHTS.setflags(write=False)
_L_OWN, _L_CENTRE, _L_BLOCK, _L_DSQ, _L_DGATE = 0, 5, 9, 10, 11

_CS = 13  # cells per row
# Lower-left offsets (dcol, drow) between the two squares of a Dalian (flat: 2u; diagonal: 2u + 1 across).
_DALIAN_OFFSETS = np.array(
    [[2, 0], [-2, 0], [0, 2], [0, -2], [2, 1], [2, -1], [-2, 1], [-2, -1], [1, 2], [-1, 2], [1, -2], [-1, -2]],
    np.int64,
)
_DALIAN_OFFSETS.setflags(write=False)



@kernel
def _cell_counts(board, c, me, op):
    """(own, opponent, centre corners) of cell ``c``; centre points count as neither side."""
    a = 0
    b = 0
    z = 0
    for t in range(4):
        q = CELL_CORNERS[c, t]
        if q == CENTRE_WHITE_FIRST or q == CENTRE_OTHER:
            z += 1
            continue
        v = board[q]
        if v == me:
            a += 1
        elif v == op:
            b += 1
    return a, b, z


@kernel
def _dalian_partners(board, c, me, op):
    """(own squares, own pure gates) at a Dalian offset from cell ``c`` (centre points ignored)."""
    c0 = c % _CS
    r0 = c // _CS
    nsq = 0
    ngate = 0
    for k in range(_DALIAN_OFFSETS.shape[0]):
        cc = c0 + _DALIAN_OFFSETS[k, 0]
        rr = r0 + _DALIAN_OFFSETS[k, 1]
        if cc < 0 or cc >= _CS or rr < 0 or rr >= _CS:
            continue
        a, b, z = _cell_counts(board, rr * _CS + cc, me, op)
        if b == 0 and z == 0:
            if a == 4:
                nsq += 1
            elif a == 3:
                ngate += 1
    return nsq, ngate


@kernel
def layout_scores(board, side, w):
    """Knowledge score of placing a stone of ``side`` on each point (module docstring).

    ``board`` ``int8[196]``, ``side`` 0/1, ``w`` ``float64[12]`` (``LAYOUT_WEIGHTS``). Returns
    ``float64[196]``, ``-inf`` on occupied points. Legality of the first two placements (centre
    points) is the caller's business.
    """
    me = side + 1
    op = 2 - side
    out = np.full(NUM_POINTS, -np.inf)
    for p in range(NUM_POINTS):
        if board[p] != EMPTY:
            continue
        s = 0.0
        if p == CENTRE_WHITE_FIRST or p == CENTRE_OTHER:
            out[p] = 0.0
            continue
        for j in range(4):
            c = POINT_CELLS[p, j]
            if c < 0:
                break
            a, b, z = _cell_counts(board, c, me, op)
            if z == 0:
                if b == 0:
                    s += w[_L_OWN + a + 1] - w[_L_OWN + a]
                    if a == 3 or a == 2:
                        dsq, dg = _dalian_partners(board, c, me, op)
                        if a == 3:
                            s += w[_L_DSQ] * dsq + w[_L_DGATE] * dg
                        else:
                            s += w[_L_DGATE] * dsq
                if a == 0 and b > 0:
                    s += w[_L_BLOCK] * w[_L_OWN + b]
                    if b >= 2:
                        dsq, dg = _dalian_partners(board, c, op, me)
                        if b == 3:
                            s += w[_L_BLOCK] * (w[_L_DSQ] * dsq + w[_L_DGATE] * dg)
                        else:
                            s += w[_L_BLOCK] * w[_L_DGATE] * dsq
            elif z == 1:
                if b == 0 and a < 3:
                    s += w[_L_CENTRE + a + 1] - w[_L_CENTRE + a]
                if a == 0 and b > 0:
                    s += w[_L_BLOCK] * w[_L_CENTRE + b]
            else:  # the middle cell g7: both centre corners become holes
                if b == 0 and a < 2:
                    s += w[_L_OWN + a + 1] - w[_L_OWN + a]
                if a == 0 and b > 0:
                    s += w[_L_BLOCK] * w[_L_OWN + b]
        out[p] = s
    return out


@kernel
def shape_layout_scores(board, side, n_stones, chain, gate, square, prior, prior_weight):
    """Greedy layout score of every legal placement of ``side`` (0 White, 1 Black) on the layout
    ``board`` (``int8[196]``, not modified) holding ``n_stones`` stones: the ``eval.shape`` layout
    score difference after the placement, ``chain * Dalians +
    gate * gates + square * squares`` of ``side`` minus the opponent's (``core.shapes.layout_shape_counts``,
    papers/001 Eq. 9), plus ``prior_weight * prior[p]`` (``prior`` ``float64[196]``). Returns
    ``float64[196]``, ``-inf`` on the points that are not legal placements
    (``core.movegen.layout_points``). The score of the greedy, minimax and expert layouts
    (``knowledge.formation.greedy_layout_scores``); ``tests/test_agents.py`` checks it against a
    placement-by-placement evaluation of ``knowledge.evaluation.ShapeEvaluator``."""
    out = np.full(NUM_POINTS, -np.inf)
    n, legal, counts = placement_shape_counts(board, side, n_stones)
    for i in range(n):
        mine = chain * counts[i, 2] + gate * counts[i, 1] + square * counts[i, 0]
        theirs = chain * counts[i, 5] + gate * counts[i, 4] + square * counts[i, 3]
        out[legal[i]] = (mine - theirs) + prior_weight * prior[legal[i]]
    return out


@kernel
def placement_shape_counts(board, side, n_stones):
    """The shapes after each legal placement of ``side`` (0 White, 1 Black) on the layout ``board``
    (``int8[196]``, not modified) holding ``n_stones`` stones, counted incrementally (one stone placed
    and lifted, the cell sums updated around it). Returns ``(n, legal int16[196], counts int32[196, 6])``:
    the ``n`` legal placements (``core.movegen.layout_points`` order) and for each, ``side``'s squares,
    gates and Dalians then the opponent's (``core.shapes.layout_shape_counts``)."""
    legal = np.empty(NUM_POINTS, np.int16)
    counts = np.zeros((NUM_POINTS, 6), np.int32)
    n = layout_points(board, n_stones, legal)
    b = board.copy()
    sums = cell_sums(b, np.empty(NUM_CELLS, np.int16))
    delta = CELL_CODE[side + 1] - CELL_CODE[EMPTY]
    for i in range(n):
        p = legal[i]
        b[p] = side + 1
        for j in range(4):
            c = POINT_CELLS[p, j]
            if c >= 0:
                sums[c] += delta
        counts[i, 0], counts[i, 1], counts[i, 2] = layout_shape_counts(b, sums, side)
        counts[i, 3], counts[i, 4], counts[i, 5] = layout_shape_counts(b, sums, 1 - side)
        for j in range(4):
            c = POINT_CELLS[p, j]
            if c >= 0:
                sums[c] -= delta
        b[p] = EMPTY
    return n, legal, counts
