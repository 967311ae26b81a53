"""Knowledge-based pruning kernels: JFA Table 1 levels, Table 2 scores, Eq. 7-9 (papers/000 section 3.5).

These are the hot parts of the ``prune.expansion`` / ``prune.capture`` plugins
(``knowledge/pruning.py``); the expert agent and the search call them per node, so they work on the
CSR path arrays of ``core.movegen`` and make no Python object per path.

Definitions (the project's reading of the paper; the rule book ``../shared/jiu-rules.md`` decides
every rules question):

**Table 1 levels** (:func:`path_levels`), for a legal battle path of the mover with origin ``o``:

1. *Movement of the Dalian*: a non-jump path (step or flight) whose origin ``o`` is a corner of one
   of the mover's squares now and that forms at least one square at its destination. For a step this
   is exactly a rule-book Dalian pair ``(o, e)`` (section 5, ``core.shapes.find_dalians``); a flight
   that leaves a square and forms another one counts too.
2. *Movement of the square*: any other path forming at least one square (square-forming steps and
   flights whose origin is in no square, and square-forming jump chains).
3. *Jump capturing and opening a square*: a jump chain forming no square, and a step or flight
   forming no square whose origin is a corner of one of the mover's squares (it opens the square,
   ready to close it again next turn).
4. *Invalid legal movements*: every other path.

**Table 2 scores** (:func:`score_paths`), for a path forming ``Ne >= 1`` squares:

- ``Ns`` = the mover's squares containing the **origin** before the move (``0`` vs ``1 or 2``;
  a flight can leave up to 4, scored like 1-2);
- ``Ne`` = squares formed at the destination (``1`` vs ``2``; a flight's 3-4 score like 2);
- *Destroyable*: the opponent can break a formed square with its next move. A complete square can
  never be jumped (a hop over a corner from outside the cell lands on another corner, which is
  occupied), so the only way to take one of its stones is a square capture, which may take any
  stone (rule book 3.3). Destroyable is therefore: **in the position after the path** (origin empty,
  jump victims removed, the mover's stone on the destination; the square victims are not known at
  this level and stay on the board) **the opponent has a legal path forming at least one square**,
  judged as if it were to move with its count after the whole move
  (``n_opp - hops - min(Ne, n_opp - hops)``, which decides flight and ``fly_jump_rule``) against the
  mover's count. An opponent left with fewer than ``loss_below`` stones has lost and destroys
  nothing. (The literal reading "a stone of the square could be jumped" is never true, by the
  argument above, so it is not used.)

  ======  ======  ===========  =====
  Ns      Ne      Destroyable  Score
  ======  ======  ===========  =====
  0       1       yes          2
  1-2     1       yes          4.5
  0       1       no           2.5
  1-2     1       no           9.5
  0       2       yes          3
  1-2     2       yes          4.5
  0       2       no           4
  1-2     2       no           9.5
  ======  ======  ===========  =====

  Paths forming no square score 0.

**Eq. 7-8**: ``score_dict[end] = max`` Table 2 score over the side's legal paths ending at ``end``
(:func:`action_scores`, ``float64[196]``), and ``f(s, side) = sum(score_dict)`` (:func:`potential`),
computed "as if ``side`` were to move" with the given stone counts.

**Eq. 9** (:func:`capture_score`): the paper prints ``F(s') = 1.5 f(s', o) - f(s', p1)`` and keeps
the highest, but motivates the 1.5 as "to reduce the potential score [of the opponent] in the next
round". Maximising the printed ``F`` would prefer captures that leave the opponent the *most*
square potential, which contradicts that motivation and any sensible play, so the project reads it
with the sign flipped: ``score = f(s', p1) - 1.5 f(s', o)``, higher is better for the mover (keep the
captures that leave the opponent the least potential and the mover the most).
"""

from __future__ import annotations

import numpy as np

from core.board import BEYOND, CELL_CORNERS, EMPTY, FLY_THRESHOLD, NEIGHBOR, NUM_POINTS, POINT_CELLS, SIZE
from core.jit import kernel
from core.movegen import ALL_POINTS, generate_square_paths, min_hops, new_path_buffers, square_targets, squares_at
from core.rules import R_ALLOW_REVISIT, R_FLY_JUMP_RULE, R_LOSS_BELOW

LEVEL_DALIAN = 1
LEVEL_SQUARE = 2
LEVEL_JUMP_OR_OPEN = 3
LEVEL_OTHER = 4
OPPONENT_WEIGHT = 1.5  # Eq. 9

# JFA Table 2, indexed [ns >= 1][ne >= 2][destroyable].
TABLE2 = np.array([[[2.5, 2.0], [4.0, 3.0]], [[9.5, 4.5], [9.5, 4.5]]], np.float64)
TABLE2.setflags(write=False)


@kernel
def path_levels(board, side, n_own, n_opp, pts, off, nsq, jump, m):
    """JFA Table 1 level (1 best .. 4) of each of the first ``m`` CSR paths (module docstring).

    ``board`` ``int8[196]`` before the move; ``side`` the mover (0 White, 1 Black); ``pts``/``off``/
    ``nsq``/``jump`` the arrays of ``core.movegen.generate_paths`` for that side. ``n_own``/``n_opp``
    are accepted for a uniform kernel signature and do not change the levels. Returns ``int8[m]``.
    """
    me = side + 1
    out = np.empty(m, np.int8)
    in_sq = np.full(NUM_POINTS, -1, np.int8)  # lazily: is the point a corner of one of my squares
    for i in range(m):
        o = pts[off[i]]
        if in_sq[o] < 0:
            in_sq[o] = 1 if (board[o] == me and squares_at(board, o, me) > 0) else 0
        if nsq[i] > 0:
            out[i] = LEVEL_DALIAN if (jump[i] == 0 and in_sq[o] == 1) else LEVEL_SQUARE
        elif jump[i] != 0 or in_sq[o] == 1:
            out[i] = LEVEL_JUMP_OR_OPEN
        else:
            out[i] = LEVEL_OTHER
    return out


@kernel
def can_form_square(board, side, n_own, n_opp, rules):
    """Whether ``side``, if it were to move with ``n_own`` stones against ``n_opp``, has a legal path
    forming at least one square (rule book 3.1-3.3). Exact; cheap in the common case.

    A path forming a square at ``e`` needs a *hole*: an empty ``e`` and a cell containing it whose
    other three corners hold ``side``'s stones, reached by a stone that is not one of those corners
    (the mover leaves its origin empty). Steps (any own neighbour of ``e`` outside the cell) and
    flights (any own stone outside the cell, when ``n_own <= 14``) are checked directly; jump chains
    (which remove only enemy stones): a single hop onto a hole is seen directly (an own stone two
    points away with an enemy stone between, when a chain may have one hop: ``core.movegen.min_hops``;
    the hop's origin is never a corner of a cell containing the hole, so the cell is completed); longer
    chains only when some hole has an enemy stone next to it and, beyond that stone, an empty point or
    an own stone (a chain's earlier landing), by the move generator; with ``chain_revisit=allow`` also
    when an own stone that can jump sits on a full own cell (a chain may return to its origin and
    complete that cell again). ``board`` ``int8[196]`` is not modified. Returns a bool.
    """
    return _can_form_square(board, side, n_own, n_opp, rules, ALL_POINTS)


@kernel
def _can_form_square(board, side, n_own, n_opp, rules, targets):
    """:func:`can_form_square` looking for holes among ``targets`` only (ascending points holding
    every hole of ``side``; see ``core.movegen.generate_square_paths``)."""
    me = side + 1
    flying = n_own <= FLY_THRESHOLD
    total = 0
    if flying:
        for p in range(NUM_POINTS):
            if board[p] == me:
                total += 1
    maybe_jump = False
    revisit = rules[R_ALLOW_REVISIT] != 0
    single_hop = min_hops(n_own, n_opp, rules[R_FLY_JUMP_RULE]) == 1
    for i in range(targets.shape[0]):
        e = targets[i]
        if board[e] != EMPTY:
            # With chain_revisit=allow a jump chain can return to its origin e and complete e's full
            # cell again: leave that to the move generator when e can start a jump at all.
            if revisit and board[e] == me and not maybe_jump:
                for dd in range(4):
                    q = NEIGHBOR[e, dd]
                    if q >= 0 and board[q] != me and board[q] != EMPTY and BEYOND[e, dd] >= 0:
                        maybe_jump = True
                        break
            continue
        for j in range(4):
            c = POINT_CELLS[e, j]
            if c < 0:
                break
            own = 0
            for t in range(4):
                if board[CELL_CORNERS[c, t]] == me:
                    own += 1
            if own != 3:
                continue
            if flying:
                if total > 3:
                    return True
            else:
                for dd in range(4):
                    q = NEIGHBOR[e, dd]
                    if q >= 0 and board[q] == me:
                        qc = q % SIZE - c % (SIZE - 1)
                        qr = q // SIZE - c // (SIZE - 1)
                        if not (0 <= qc <= 1 and 0 <= qr <= 1):
                            return True
            for dd in range(4):
                q = NEIGHBOR[e, dd]
                x = BEYOND[e, dd]
                if q < 0 or x < 0 or board[q] == me or board[q] == EMPTY:
                    continue
                if board[x] == me:
                    if single_hop:
                        return True  # x jumps q onto e
                    maybe_jump = True
                elif board[x] == EMPTY:
                    maybe_jump = True  # a chain may land on x first
    if not maybe_jump:
        return False
    pts, off, nsq, jump = new_path_buffers(64)
    m, pts, off, nsq, jump = generate_square_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump, targets)
    for i in range(m):
        if jump[i] != 0:
            return True
    return False


@kernel
def score_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump, m, out, opp_targets):
    """Eq. 7: write into ``out`` (``float64[196]``, zeroed by the caller) the maximum JFA Table 2
    score of the first ``m`` CSR paths of ``side`` ending at each point; return their sum (Eq. 8).

    ``board`` ``int8[196]`` before the move (not modified; a scratch copy is used); ``n_own``/
    ``n_opp`` the stone counts of ``side`` and its opponent; ``rules`` ``Ruleset.vector``. Ns, Ne and
    Destroyable as in the module docstring. ``opp_targets``: ``core.movegen.square_targets(board,
    2 - side)`` (or a superset), where the opponent's holes after any path of ``side`` lie, since
    a path only removes opponent stones.
    """
    me = side + 1
    opp = 2 - side
    loss_below = rules[R_LOSS_BELOW]
    b = board.copy()
    # A path scores at least its Destroyable=yes entry and at most its Destroyable=no one. A first
    # pass puts the lower bounds in ``out``; the second runs the costly Destroyable check only for
    # paths whose upper bound beats the best known at their end point (same maxima, fewer checks).
    for i in range(m):
        ne = nsq[i]
        if ne > 0:
            d = pts[off[i + 1] - 1]
            low = TABLE2[1 if squares_at(board, pts[off[i]], me) >= 1 else 0, 1 if ne >= 2 else 0, 1]
            if low > out[d]:
                out[d] = low
    for i in range(m):
        ne = nsq[i]
        if ne <= 0:
            continue
        s = off[i]
        e = off[i + 1]
        o = pts[s]
        d = pts[e - 1]
        ns = squares_at(board, o, me)
        if TABLE2[1 if ns >= 1 else 0, 1 if ne >= 2 else 0, 0] <= out[d]:
            continue
        hops = 0
        b[o] = EMPTY
        if jump[i] != 0:
            for t in range(s + 1, e):
                b[(pts[t - 1] + pts[t]) // 2] = EMPTY
                hops += 1
        b[d] = me
        left = n_opp - hops
        opp_after = left - min(ne, left)
        destroy = False
        if opp_after >= loss_below and opp_after > 0:
            destroy = _can_form_square(b, 1 - side, opp_after, n_own, rules, opp_targets)
        b[d] = EMPTY
        if jump[i] != 0:
            for t in range(s + 1, e):
                b[(pts[t - 1] + pts[t]) // 2] = opp
        b[o] = me
        score = TABLE2[1 if ns >= 1 else 0, 1 if ne >= 2 else 0, 1 if destroy else 0]
        if score > out[d]:
            out[d] = score
    total = 0.0
    for p in range(NUM_POINTS):
        total += out[p]
    return total


@kernel
def action_scores(board, side, n_own, n_opp, rules):
    """JFA Eq. 7 ``score_dict``: ``float64[196]``, per end point the best Table 2 score of ``side``'s
    legal paths ending there, as if ``side`` were to move with ``n_own`` stones against ``n_opp``
    (``rules`` = ``Ruleset.vector``). Terminal status is not checked; 0 where no square is formed."""
    out = np.zeros(NUM_POINTS, np.float64)
    pts, off, nsq, jump = new_path_buffers(64)
    _potential(board, side, n_own, n_opp, rules, pts, off, nsq, jump, out,
               square_targets(board, side + 1), square_targets(board, 2 - side))
    return out


@kernel
def _potential(board, side, n_own, n_opp, rules, pts, off, nsq, jump, out, targets, opp_targets):
    """Eq. 8 with caller-owned buffers; returns ``(f, pts, off, nsq, jump)`` (buffers maybe grown) and
    leaves Eq. 7 in ``out``. ``targets``/``opp_targets``: ``core.movegen.square_targets`` of ``board``
    for ``side`` and for its opponent, or supersets (those of a board with more of each side's
    stones), so that related boards share them. Only square-forming paths score, so only those are
    generated: enumerating the others was most of the cost."""
    m, pts, off, nsq, jump = generate_square_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump, targets)
    out[:] = 0.0
    f = score_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump, m, out, opp_targets)
    return f, pts, off, nsq, jump


@kernel
def potential(board, side, n_own, n_opp, rules):
    """JFA Eq. 8: ``f(s, side)``, the sum of :func:`action_scores` over the end points (float)."""
    pts, off, nsq, jump = new_path_buffers(64)
    out = np.empty(NUM_POINTS, np.float64)
    return _potential(board, side, n_own, n_opp, rules, pts, off, nsq, jump, out,
                      square_targets(board, side + 1), square_targets(board, 2 - side))[0]


@kernel
def capture_score(board, mover, n_mover, n_opp, rules):
    """The project's reading of JFA Eq. 9 (module docstring): ``f(s', mover) - 1.5 f(s', opponent)``.

    ``board`` ``int8[196]`` is the position ``s'`` after the whole capturing move (path, jump victims
    and square victims removed); ``n_mover``/``n_opp`` the stone counts there. Higher is better for
    the mover. Returns a float.
    """
    pts, off, nsq, jump = new_path_buffers(64)
    out = np.empty(NUM_POINTS, np.float64)
    t_me = square_targets(board, mover + 1)
    t_op = square_targets(board, 2 - mover)
    f_me, pts, off, nsq, jump = _potential(board, mover, n_mover, n_opp, rules, pts, off, nsq, jump, out, t_me, t_op)
    f_op, pts, off, nsq, jump = _potential(board, 1 - mover, n_opp, n_mover, rules, pts, off, nsq, jump, out, t_op, t_me)
    return f_me - OPPONENT_WEIGHT * f_op


@kernel
def victim_set_scores(board, mover, n_mover, n_opp, rules, sets):
    """:func:`capture_score` of many victim sets of one path, in one call.

    ``board`` ``int8[196]`` is the position after the path (origin empty, jump victims removed, the
    mover's stone on its destination) and ``n_opp`` the opponent's count there; ``sets`` ``int16[n, k]``
    holds ``n`` victim sets of ``k`` opponent stones (``k = 0`` scores the path alone). Returns
    ``float64[n]``. ``board`` is restored before returning.
    """
    n = sets.shape[0]
    k = sets.shape[1]
    scores = np.empty(n, np.float64)
    pts, off, nsq, jump = new_path_buffers(64)
    out = np.empty(NUM_POINTS, np.float64)
    opp = 2 - mover
    b = board.copy()
    # Removing victims takes opponent stones only: the square targets of ``board`` hold those of
    # every set's board, so they are found once.
    t_me = square_targets(board, mover + 1)
    t_op = square_targets(board, opp)
    for i in range(n):
        for j in range(k):
            b[sets[i, j]] = EMPTY
        left = n_opp - k
        f_me, pts, off, nsq, jump = _potential(b, mover, n_mover, left, rules, pts, off, nsq, jump, out, t_me, t_op)
        f_op, pts, off, nsq, jump = _potential(b, 1 - mover, left, n_mover, rules, pts, off, nsq, jump, out, t_op, t_me)
        scores[i] = f_me - OPPONENT_WEIGHT * f_op
        for j in range(k):
            b[sets[i, j]] = opp
    return scores


@kernel
def best_level_indices(levels):
    """Ascending indices (``int64[k]``) of the entries of ``levels`` equal to their minimum; empty
    when ``levels`` is empty."""
    m = levels.shape[0]
    if m == 0:
        return np.empty(0, np.int64)
    best = levels[0]
    for i in range(m):
        if levels[i] < best:
            best = levels[i]
    n = 0
    for i in range(m):
        if levels[i] == best:
            n += 1
    out = np.empty(n, np.int64)
    n = 0
    for i in range(m):
        if levels[i] == best:
            out[n] = i
            n += 1
    return out
