"""Board helpers of the expert's battle kernels (``knowledge/expert_kernels.py``): the cell sums of a
board one move on, recounted only where the move changed it; both sides' square targets in one pass
into scratch; whether the side to move has a one-hop jump. Each returns exactly what the
``core.movegen`` function it stands for returns."""

from __future__ import annotations

from core.board import BEYOND, CELL_CORNERS, EMPTY, NEIGHBOR, NUM_CELLS, NUM_POINTS, POINT_CELLS
from core.jit import inline_kernel, kernel
from core.movegen import CELL_CODE, cell_count, min_hops
from core.rules import R_FLY_JUMP_RULE


@kernel
def square_targets_both(board, sums, side, mark, t_me, t_op):
    """``core.movegen.square_targets_from`` of ``board`` (``sums`` its cell sums) for both sides at once,
    into the scratch ``t_me`` (``side``'s stones) and ``t_op`` (``int16[196]``, ascending); returns
    their views. ``mark`` ``bool[2, 196]`` scratch, all False on entry and exit."""
    me = side + 1
    op = 2 - side
    lo = NUM_POINTS  # the marked points lie in lo..hi
    hi = -1
    for c in range(NUM_CELLS):
        t = sums[c]
        own = cell_count(t, me)
        opp = cell_count(t, op)
        if own >= 3:
            lo, hi = _mark_targets(board, c, own, me, mark[0], lo, hi)
        elif opp >= 3:
            lo, hi = _mark_targets(board, c, opp, op, mark[1], lo, hi)
    n0 = 0
    n1 = 0
    for q in range(lo, hi + 1):
        if mark[0, q]:
            t_me[n0] = q
            n0 += 1
            mark[0, q] = False
        if mark[1, q]:
            t_op[n1] = q
            n1 += 1
            mark[1, q] = False
    return t_me[:n0], t_op[:n1]


@inline_kernel
def _mark_targets(board, c, n, stone, marks, lo, hi):
    """Mark in ``marks`` (``bool[196]``) the corners of cell ``c`` that hold ``n`` >= 3 stones of ``stone``
    and are its square targets (every corner when it is full, else the one that is not ``stone``'s);
    returns ``(lo, hi)`` widened to the marked points."""
    for k in range(4):
        q = CELL_CORNERS[c, k]
        if n == 4 or board[q] != stone:
            marks[q] = True
            lo = min(lo, q)
            hi = max(hi, q)
    return lo, hi


@kernel
def sums_after(b2, sums1, sums, rpts, ra, re, is_jump, victims, nv):
    """``core.movegen.cell_sums`` of ``b2`` into ``sums``, from ``sums1`` (those of the board before the
    path ``rpts[ra:re]``, a jump chain when ``is_jump``, and its ``nv`` square victims ``victims``
    made ``b2``): only the cells touching a point the move changed are recounted. Returns ``sums``."""
    for c in range(NUM_CELLS):
        sums[c] = sums1[c]
    for t in range(ra, re):
        _recount(b2, sums, rpts[t])
        if is_jump and t > ra:
            _recount(b2, sums, (rpts[t - 1] + rpts[t]) // 2)
    for t in range(nv):
        _recount(b2, sums, victims[t])
    return sums


@inline_kernel
def _recount(b, sums, p):
    """Recount the cell sums of the cells with corner ``p`` on ``b``."""
    for j in range(4):
        c = POINT_CELLS[p, j]
        if c < 0:
            break
        sums[c] = (CELL_CODE[b[CELL_CORNERS[c, 0]]] + CELL_CODE[b[CELL_CORNERS[c, 1]]]
                   + CELL_CODE[b[CELL_CORNERS[c, 2]]] + CELL_CODE[b[CELL_CORNERS[c, 3]]])


@kernel
def has_one_hop(b, side, n_own, n_opp, rules):
    """1 when ``side`` (to move, ``n_own`` against ``n_opp`` stones) has a one-hop jump that is a legal
    path (one hop is enough under ``fly_jump_rule``), so that :func:`_reply`'s best capture is at
    least 1; else 0 (a lower bound: square-forming moves are not looked for)."""
    if min_hops(n_own, n_opp, rules[R_FLY_JUMP_RULE]) != 1:
        return 0
    me = side + 1
    op = 2 - side
    for o in range(NUM_POINTS):
        if b[o] != me:
            continue
        for dd in range(4):
            land = BEYOND[o, dd]
            if land >= 0 and b[NEIGHBOR[o, dd]] == op and b[land] == EMPTY:
                return 1
    return 0
