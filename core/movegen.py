"""Rules kernels: path generation and square counting (rule book sections 2-3).

Legal battle paths are returned in a CSR layout so that no Python object is made per move:

- ``pts``  ``int16[K]``   the points of every path back to back (origin, then each landing);
- ``off``  ``int32[M+1]`` path ``i`` is ``pts[off[i]:off[i+1]]``;
- ``nsq``  ``int8[M]``    squares the path forms at its destination (``k`` of rule book 3.3, before
  capping by the opponent's stones left);
- ``jump`` ``int8[M]``    1 for a jump chain, 0 for a step or flight.

A *full move* is a path plus a victim set of ``min(k, opponent stones left)`` points.
``generate_square_paths`` gives only the paths with ``k > 0`` (what the pruning scores need).
Moves are applied by ``core.play``.
All kernels take the ruleset as ``Ruleset.vector`` (``int64[7]``).
"""

from __future__ import annotations

import numpy as np

from core.board import (
    BEYOND,
    CELL_CORNERS,
    CENTRE_OTHER,
    CENTRE_WHITE_FIRST,
    EMPTY,
    FLY_THRESHOLD,
    NEIGHBOR,
    NUM_CELLS,
    NUM_POINTS,
    POINT_CELLS,
    SIZE,
)
from core.jit import inline_kernel, kernel
from core.rules import FLY_ALL_MULTI, FLY_STRONG_SIDE_MULTI, R_ALLOW_REVISIT, R_FLY_JUMP_RULE

MAX_HOPS = 100  # a hop removes an enemy stone and a side never has more than 98


@kernel
def squares_at(board, d, stone):
    """Cells containing point ``d`` whose other three corners hold ``stone`` (``d`` counts as
    ``stone``). ``board`` ``int8[196]``; returns an int in 0..4."""
    k = 0
    for j in range(4):
        c = POINT_CELLS[d, j]
        if c < 0:
            break
        full = True
        for t in range(4):
            q = CELL_CORNERS[c, t]
            if q != d and board[q] != stone:
                full = False
                break
        if full:
            k += 1
    return k


@kernel
def min_hops(n_own, n_opp, fly_rule):
    """Fewest hops a jump chain of the mover needs under ``fly_jump_rule`` (rule book 3.2)."""
    if fly_rule == FLY_STRONG_SIDE_MULTI:
        if n_own > FLY_THRESHOLD and n_opp <= FLY_THRESHOLD:
            return 2
    elif fly_rule == FLY_ALL_MULTI:
        if n_own <= FLY_THRESHOLD or n_opp <= FLY_THRESHOLD:
            return 2
    return 1


@kernel
def new_path_buffers(capacity):
    """Empty CSR buffers for ``capacity`` paths (they grow on demand)."""
    off = np.zeros(capacity + 1, np.int32)
    return np.empty(capacity * 4, np.int16), off, np.empty(capacity, np.int8), np.empty(capacity, np.int8)


@inline_kernel
def _emit(pts, off, nsq, jump, m, k, chain, npts, is_jump, squares):
    """Write path ``chain[:npts]`` forming ``squares`` squares as path ``m`` if it fits. Returns the new ``(m, k)`` whether or not it was written: the
    buffers are never rebound here, because rebinding arrays in a loop costs reference counting on
    every iteration."""
    if m + 1 < off.shape[0] and k + npts <= pts.shape[0]:
        for i in range(npts):
            pts[k + i] = chain[i]
        nsq[m] = squares
        jump[m] = is_jump
        off[m + 1] = k + npts
    return m + 1, k + npts


# Cell sums (:func:`cell_sums`): each corner adds ``CELL_CODE[board value]`` to its cell, so one
# int16 per cell holds how many of its corners are White (``sum & 7``), Black (``(sum >> 3) & 7``)
# and empty (``sum >> 6``): every shape test of a cell is one lookup after one scan of the board.
CELL_CODE = np.array([64, 1, 8], np.int16)  # indexed by EMPTY, WHITE_STONE, BLACK_STONE
CELL_CODE.setflags(write=False)


@kernel
def cell_sums(board, sums):
    """Write the cell sums of ``board`` (``int8[196]``) into ``sums`` (``int16[>= 169]``, cell
    ``c = r0 * 13 + c0``; see :data:`CELL_CODE` and :func:`cell_count`); returns ``sums``."""
    for r in range(SIZE - 1):
        for c in range(SIZE - 1):
            p = r * SIZE + c
            sums[r * (SIZE - 1) + c] = (CELL_CODE[board[p]] + CELL_CODE[board[p + 1]] + CELL_CODE[board[p + SIZE]]
                                        + CELL_CODE[board[p + SIZE + 1]])
    return sums


@inline_kernel
def cell_count(total, value):
    """Corners of a cell holding ``value`` (``EMPTY``, 1 White or 2 Black) from its sum ``total``
    (:func:`cell_sums`)."""
    if value == EMPTY:
        return total >> 6
    return (total >> (3 * (value - 1))) & 7


@kernel
def square_targets(board, stone):
    """The points ``d`` with ``squares_at(board, d, stone) > 0`` (occupied or not), ascending
    (``int16[n]``): the only destinations where a path of ``stone``'s side can form a square, since
    a move never adds a stone of the mover's. They are the corners of cells holding three or four
    ``stone`` stones. :func:`square_targets_from` is the form for a caller holding the cell sums."""
    return square_targets_from(board, cell_sums(board, np.empty(NUM_CELLS, np.int16)), stone)


@kernel
def square_targets_from(board, sums, stone):
    """:func:`square_targets` from the board's :func:`cell_sums` ``sums`` (``int16[169]``)."""
    mark = np.zeros(NUM_POINTS, np.bool_)
    n = 0
    for c in range(NUM_CELLS):
        own = cell_count(sums[c], stone)
        if own >= 3:
            for t in range(4):
                q = CELL_CORNERS[c, t]
                if (own == 4 or board[q] != stone) and not mark[q]:
                    mark[q] = True
                    n += 1
    out = np.empty(n, np.int16)
    k = 0
    for q in range(NUM_POINTS):
        if mark[q]:
            out[k] = q
            k += 1
    return out


ALL_POINTS = np.arange(NUM_POINTS, dtype=np.int16)  # every destination: the full generator's targets
ALL_POINTS.setflags(write=False)

# What _fill_paths writes (the public generators below are its only callers).
MODE_ALL = 0  # every legal path (targets: ALL_POINTS)
MODE_SQUARES = 1  # the paths forming a square at a target
MODE_CAPTURES = 2  # every jump chain, and the steps and flights forming a square at a target
MODE_CHAINS = 3  # the jump chains ending on a target


@kernel
def _fill_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump, mode, targets):
    """Write the legal paths of ``mode`` (``MODE_*``) into the buffers as far as they fit; return the
    totals ``(m, k)``. Steps and flights are tried only to ``targets`` (ascending points) and, except
    in ``MODE_ALL``, written only when they form a square; ``MODE_CHAINS`` writes no steps or flights.
    Jump chains are all written in ``MODE_ALL`` and ``MODE_CAPTURES``, those forming a square in
    ``MODE_SQUARES`` and those ending on a target in ``MODE_CHAINS``."""
    quiet = mode == MODE_ALL  # steps and flights forming no square are written
    steps = mode != MODE_CHAINS
    prune = mode == MODE_SQUARES or mode == MODE_CHAINS  # chains must end on a target
    me = side + 1
    opp = 2 - side
    flying = n_own <= FLY_THRESHOLD
    need = min_hops(n_own, n_opp, rules[R_FLY_JUMP_RULE])
    allow_revisit = rules[R_ALLOW_REVISIT] != 0
    b = board.copy()
    visited = np.zeros(NUM_POINTS, np.bool_)
    chain = np.empty(MAX_HOPS + 1, np.int16)
    victim = np.empty(MAX_HOPS + 1, np.int16)
    next_dir = np.empty(MAX_HOPS + 1, np.int8)
    m = 0
    k = 0
    off[0] = 0
    cap_m = off.shape[0] - 1  # paths that fit
    cap_k = pts.shape[0]  # points that fit
    n_targets = targets.shape[0]
    target = np.zeros(NUM_POINTS, np.bool_)
    for t in range(n_targets):
        target[targets[t]] = True
    # Two cheap necessary conditions skip most of the work when not every path is wanted:
    # - ``step_from`` (without ``quiet``): a step's origin is next to an empty target (flights are
    #   checked per target);
    # - ``reach`` (with ``prune``): the points a jump chain can leave and still end on a
    #   target, found backwards from the targets over hops of the relaxed rules (jumped stones are
    #   enemy stones now, landings are empty now or, with revisits, the mover's own origin; no hop
    #   count, no visited points), so chains are neither started nor extended from other points.
    step_from = np.ones(NUM_POINTS, np.bool_)
    reach = np.ones(NUM_POINTS, np.bool_)
    if not quiet:
        step_from[:] = False
        for t in range(n_targets if steps else 0):
            e = targets[t]
            if b[e] == EMPTY:
                for dd in range(4):
                    q = NEIGHBOR[e, dd]
                    if q >= 0:
                        step_from[q] = True
    if prune:
        reach[:] = False
        stack = np.empty(NUM_POINTS + n_targets, np.int16)
        n_stack = 0
        for t in range(n_targets):
            e = targets[t]
            # A chain ends only on a point empty at the start or, with revisits, on its origin: a
            # landing point keeps the origin's parity in both coordinates and a jumped point does not,
            # so a chain never lands where it removed a stone. Only those targets seed the search.
            if b[e] == EMPTY or (allow_revisit and b[e] == me):
                stack[n_stack] = e
                n_stack += 1
        while n_stack > 0:
            n_stack -= 1
            x = stack[n_stack]
            for dd in range(4):
                p = BEYOND[x, dd]
                if p < 0 or reach[p] or b[NEIGHBOR[x, dd]] != opp:
                    continue
                reach[p] = True
                if b[p] == EMPTY or (allow_revisit and b[p] == me):
                    stack[n_stack] = p
                    n_stack += 1
    # Flying: the squares a flight would form at each empty point. Only a flight whose origin is in
    # the destination's 3x3 block changes that count; those are recounted per origin below.
    base = np.zeros(NUM_POINTS, np.int8)
    flying = flying and steps  # in MODE_CHAINS no flight is written
    if flying:
        for e in range(NUM_POINTS):
            if b[e] == EMPTY and target[e]:
                base[e] = squares_at(b, e, me)
    for o in range(NUM_POINTS):
        if b[o] != me:
            continue
        if not (flying or step_from[o] or reach[o]):
            continue  # no step, flight or first hop from here can end on a target
        b[o] = EMPTY  # the stone leaves its origin
        chain[0] = o
        oc = o % SIZE
        orow = o // SIZE
        if flying:  # recount the origin's 3x3 block without the stone
            for dr in range(-1, 2):
                for dc in range(-1, 2):
                    if 0 <= oc + dc < SIZE and 0 <= orow + dr < SIZE:
                        e = o + dr * SIZE + dc
                        if b[e] == EMPTY and target[e]:
                            base[e] = squares_at(b, e, me)
        # Steps (4 neighbours) or flights (every target; a flight to a neighbour is written like a
        # step), in one loop. The path is written out
        # rather than through _emit: a call costs ~40 ns of reference counting per path, 25x the
        # stores themselves, and a flying side has thousands of flights.
        for t in range(n_targets if flying else (4 if step_from[o] else 0)):
            e = targets[t] if flying else NEIGHBOR[o, t]
            if e < 0 or e == o or b[e] != EMPTY or not target[e]:
                continue
            sq = base[e] if flying else squares_at(b, e, me)
            if sq == 0 and not quiet:
                continue
            if m < cap_m and k + 2 <= cap_k:
                pts[k] = o
                pts[k + 1] = e
                nsq[m] = sq
                jump[m] = 0
                off[m + 1] = k + 2
            m += 1
            k += 2
        if flying:  # restore the 3x3 block's counts with the stone back at its origin
            for dr in range(-1, 2):
                for dc in range(-1, 2):
                    if 0 <= oc + dc < SIZE and 0 <= orow + dr < SIZE:
                        e = o + dr * SIZE + dc
                        if b[e] == EMPTY and target[e]:
                            b[o] = me
                            base[e] = squares_at(b, e, me)
                            b[o] = EMPTY
        # Most stones have no first hop: checking that here is several times cheaper than entering
        # the search below.
        can_hop = False
        if reach[o]:
            for dd in range(4):
                land = BEYOND[o, dd]
                # a first hop the search below would take (its landing checks, cheapest first)
                if land >= 0 and (reach[land] or target[land]) and b[NEIGHBOR[o, dd]] == opp and b[land] == EMPTY:
                    can_hop = True
                    break
        if not can_hop:
            b[o] = me
            continue
        # Jump chains: iterative depth-first search; every prefix with >= `need` hops is a path.
        depth = 0
        next_dir[0] = 0
        visited[o] = True
        while depth >= 0:
            cur = chain[depth]
            dd = next_dir[depth]
            if dd == 4:
                if depth > 0:
                    b[victim[depth]] = opp
                    visited[cur] = False
                depth -= 1
                continue
            next_dir[depth] = dd + 1
            land = BEYOND[cur, dd]
            if land < 0:
                continue
            if not reach[land] and not target[land]:
                continue  # no square at land nor beyond it
            if visited[land] and not allow_revisit:
                continue
            mid = NEIGHBOR[cur, dd]
            if b[mid] != opp or b[land] != EMPTY:
                continue
            b[mid] = EMPTY  # the jumped stone is removed at once
            depth += 1
            chain[depth] = land
            victim[depth] = mid
            next_dir[depth] = 0
            visited[land] = True
            if depth >= need:
                sq = squares_at(b, land, me) if target[land] else 0
                if mode == MODE_SQUARES:
                    write = sq > 0
                elif mode == MODE_CHAINS:
                    write = target[land]
                else:
                    write = True
                if write:
                    m, k = _emit(pts, off, nsq, jump, m, k, chain, depth + 1, 1, sq)
        visited[o] = False
        b[o] = me
    return m, k


@kernel
def generate_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump):
    """All legal battle paths of ``side`` (0 White, 1 Black) into the CSR buffers.

    ``board`` ``int8[196]`` is not modified; ``n_own``/``n_opp`` are the stone counts at the start of
    the turn. Returns ``(m, pts, off, nsq, jump)``: the number of paths and the buffers, reallocated
    larger (and refilled) when they were too small. Terminal status is not checked here
    (``core.status``).
    """
    return _generate(board, side, n_own, n_opp, rules, pts, off, nsq, jump, MODE_ALL, ALL_POINTS)


@kernel
def generate_square_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump, targets):
    """The paths of :func:`generate_paths` that form at least one square (``nsq > 0``), in the same
    order and with the same return value, without enumerating the others: what the square-potential
    scores of ``knowledge.pruning_kernels`` need, many times per search node.

    ``targets`` (ascending ``int16``) must hold every point ``d`` with ``squares_at(board, d, side +
    1) > 0``: :func:`square_targets` of ``board``, or of a board with the same stones of ``side`` and
    more (a superset is exact, only slower), so a caller scoring many related boards computes it once.
    """
    return _generate(board, side, n_own, n_opp, rules, pts, off, nsq, jump, MODE_SQUARES, targets)


@kernel
def generate_capture_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump, targets):
    """The paths of :func:`generate_paths` that capture: every jump chain, and every step or flight
    that forms a square (``nsq > 0``), in the same order and with the same return value, without
    enumerating the quiet steps and flights. For callers that look only at captures (a side's best
    immediate capture, the stones it threatens), many times per search node.

    ``targets`` as for :func:`generate_square_paths` (:func:`square_targets` of ``board`` for
    ``side + 1``, or a superset). ``m == 0`` does not mean the side cannot move: ask
    :func:`has_battle_move`.
    """
    return _generate(board, side, n_own, n_opp, rules, pts, off, nsq, jump, MODE_CAPTURES, targets)


@kernel
def generate_chains_to(board, side, n_own, n_opp, rules, pts, off, nsq, jump, targets):
    """The jump chains of :func:`generate_paths` that end on one of ``targets`` (ascending points,
    any), in the same order and with the same return value (``nsq`` exact), without searching the
    chains that cannot end there (the backward ``reach`` test of :func:`generate_square_paths`): what
    a gate's openness needs (``core.shapes``).
    """
    return _generate(board, side, n_own, n_opp, rules, pts, off, nsq, jump, MODE_CHAINS, targets)


@kernel
def _generate(board, side, n_own, n_opp, rules, pts, off, nsq, jump, mode, targets):
    m, k = _fill_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump, mode, targets)
    if m + 1 > off.shape[0] or k > pts.shape[0]:
        pts, off, nsq, jump = new_path_buffers(2 * m + 16)
        pts = np.empty(2 * k + 64, np.int16)
        _fill_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump, mode, targets)
    return m, pts, off, nsq, jump


@kernel
def has_battle_move(board, side, n_own, n_opp, rules):
    """True if ``side`` has at least one legal battle path (cheap in the common case)."""
    me = side + 1
    if n_own == 0:
        return False
    if n_own <= FLY_THRESHOLD:
        return True  # a battle board always has an empty point: both centre stones were removed
    for o in range(NUM_POINTS):
        if board[o] == me:
            for dd in range(4):
                e = NEIGHBOR[o, dd]
                if e >= 0 and board[e] == EMPTY:
                    return True
    pts, off, nsq, jump = new_path_buffers(16)
    m = generate_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump)[0]
    return m > 0


@kernel
def layout_points(board, n_stones, out):
    """Legal placements into ``out`` (``int16[>=196]``); returns how many (rule book section 2)."""
    n = 0
    if n_stones == 0:
        out[0] = CENTRE_WHITE_FIRST
        out[1] = CENTRE_OTHER
        return 2
    if n_stones == 1:
        if board[CENTRE_WHITE_FIRST] == EMPTY:
            out[0] = CENTRE_WHITE_FIRST
            return 1
        if board[CENTRE_OTHER] == EMPTY:
            out[0] = CENTRE_OTHER
            return 1
        return 0
    for p in range(NUM_POINTS):
        if board[p] == EMPTY:
            out[n] = p
            n += 1
    return n


@kernel
def find_path(pts, off, jump, m, path, is_jump):
    """Index of ``path`` (``int16[n]``, kind ``is_jump``) among the first ``m`` generated paths, or -1."""
    n = path.shape[0]
    for i in range(m):
        if off[i + 1] - off[i] != n or jump[i] != is_jump:
            continue
        same = True
        for j in range(n):
            if pts[off[i] + j] != path[j]:
                same = False
                break
        if same:
            return i
    return -1
