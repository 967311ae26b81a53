"""Frozen copy of ``knowledge/expert_kernels.py`` before the kernels were made faster (branch ``kernels``,
from commit a5d2933): the reference that ``tests/test_expert_kernels_speed.py`` holds the new kernels to,
bit for bit, and that ``python -m bench.expert_kernels`` times them against. Do not edit or optimise it."""

from __future__ import annotations

import numpy as np

from core.board import CELL_CORNERS, EMPTY, NUM_CELLS, NUM_POINTS, POINT_CELLS
from core.jit import inline_kernel, kernel
from core.movegen import (
    cell_sums,
    generate_capture_paths,
    generate_paths,
    has_battle_move,
    new_path_buffers,
    square_targets,
    square_targets_from,
    squares_at,
)
from core.play import play_path
from core.rules import R_LOSS_BELOW
from core.shapes import shape_counts_from

# ---------------------------------------------------------------------------------- battle weights
(W_GAIN, W_RISK, W_BREADTH, LEVEL1, LEVEL2, LEVEL3, W_THREAT, W_FLEE, W_BLOCK, W_WIN, W_LOSE,
 S_DALIAN, S_SQUARE, S_OPEN_GATE, S_GATE, O_DALIAN, O_SQUARE, O_OPEN_GATE, O_GATE, W_PRE_GATE, W_PRE_BREAK) = range(21)
N_BATTLE_WEIGHTS = 21

BATTLE_WEIGHTS = np.array(
    [
        10.0,  # W_GAIN       per stone captured now
        9.0,  # W_RISK        per stone of the opponent's best reply
        1.0,  # W_BREADTH     per distinct point where the opponent captures (capped at 4)
        8.0,  # LEVEL1        Dalian shuttle (JFA Table 1)
        3.0,  # LEVEL2        square-forming move
        1.0,  # LEVEL3        jump capture / opening a square
        4.0,  # W_THREAT      per stone our best next move would take (capped at 2) if left alone
        6.0,  # W_FLEE        pre-score: the origin stone is jumpable now
        3.0,  # W_BLOCK       pre-score: the destination is where the opponent would capture
        1e5,  # W_WIN         the move wins at once
        1e4,  # W_LOSE        the opponent's reply takes us below loss_below
        8.0,  # S_DALIAN      own shapes (papers/001 Eq. 9 weighs chain 7, square 4, gate 3)
        3.0,  # S_SQUARE
        3.0,  # S_OPEN_GATE
        1.0,  # S_GATE        a gate nobody of ours can close yet
        14.0,  # O_DALIAN     the opponent's shapes: a Dalian left standing takes a stone every turn
        3.0,  # O_SQUARE
        3.0,  # O_OPEN_GATE
        1.0,  # O_GATE
        2.0,  # W_PRE_GATE    pre-score: per gate the move makes at its destination (a threat for next turn)
        2.0,  # W_PRE_BREAK   pre-score: per own square the move leaves (Dalian shuttles excepted)
    ],
    np.float64,
)
BATTLE_WEIGHTS.setflags(write=False)

# ================================================================================== battle
@inline_kernel
def _path_takes(n_points, is_jump, squares, n_left):
    """Stones a path takes: ``(hops, square victims)``; the victims are ``min(squares, stones left
    after the jump)`` (rule book 3.3). Scalars only: called per path in hot loops."""
    hops = n_points - 1 if is_jump else 0
    return hops, min(squares, n_left - hops)


@kernel
def _reply(board, sums, side, n_own, n_opp, rules, pts, off, nsq, jump, mark):
    """The best immediate capture of ``side`` (to move) on ``board`` (``sums`` its
    ``core.movegen.cell_sums``).

    Returns ``(movable, best, breadth, origin, m, pts, off, nsq, jump)``: whether ``side`` has a legal
    path, the most stones one move takes (jump victims + square victims capped by the stones left),
    the number of distinct destination points of capturing moves, the origin of a best move (-1 if
    none), and the ``m`` capturing paths in the (possibly regrown) path buffers, every jump chain
    among them (``core.movegen.generate_capture_paths``: only the capturing paths are generated).
    ``mark`` ``bool[196]`` scratch, all False on entry and exit.
    """
    m, pts, off, nsq, jump = generate_capture_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump,
                                                    square_targets_from(board, sums, side + 1))
    best = 0
    breadth = 0
    origin = -1
    for j in range(m):
        a = off[j]
        e = off[j + 1]
        hops, k = _path_takes(e - a, jump[j] != 0, nsq[j], n_opp)
        cap = hops + k
        if cap > 0:
            d = pts[e - 1]
            if not mark[d]:
                mark[d] = True
                breadth += 1
            if cap > best:
                best = cap
                origin = pts[a]
    for j in range(m):
        mark[pts[off[j + 1] - 1]] = False
    movable = m > 0 or has_battle_move(board, side, n_own, n_opp, rules)
    return movable, best, breadth, origin, m, pts, off, nsq, jump


@kernel
def _quick_shape(board, o, d, stone):
    """Cheap shape change of moving ``stone`` from ``o`` to ``d`` (jump victims ignored): the gates
    it makes at ``d`` (cells containing ``d`` that get 3 of ``stone``'s corners and 1 empty corner, ``o``
    counting as empty) and the squares of ``stone`` containing ``o`` it leaves."""
    gates = 0
    for j in range(4):
        c = POINT_CELLS[d, j]
        if c < 0:
            break
        own = 0
        empty = 0
        for t in range(4):
            q = CELL_CORNERS[c, t]
            if q == d:
                continue
            if q == o or board[q] == EMPTY:
                empty += 1
            elif board[q] == stone:
                own += 1
        if own == 2 and empty == 1:
            gates += 1
    return gates, squares_at(board, o, stone)


@kernel
def _threat_maps(board, side, n_own, n_opp, rules, pts, off, nsq, jump, threatened, hot):
    """Mark the stones ``side`` can jump now (``threatened``) and the destinations/landings of its
    capturing moves (``hot``). Returns the regrown buffers."""
    m, pts, off, nsq, jump = generate_capture_paths(board, side, n_own, n_opp, rules, pts, off, nsq, jump,
                                                    square_targets(board, side + 1))
    for j in range(m):
        a = off[j]
        e = off[j + 1]
        if jump[j] != 0:
            for t in range(a + 1, e):
                threatened[(pts[t - 1] + pts[t]) // 2] = True
                hot[pts[t]] = True
        elif nsq[j] > 0:
            hot[pts[e - 1]] = True
    return pts, off, nsq, jump


@kernel
def _shape_value(board, sums, side, n_own, n_opp, rules, w, base, pts, off, jump, m):
    """Weighted shapes of ``side``: ``w[base..base+3]`` per Dalian, square, open gate, closed gate
    (``core.shapes.shape_counts_from``: ``sums`` the board's cell sums; ``m`` paths of ``side`` with
    every jump chain, as :func:`_reply` leaves them, or ``m < 0``)."""
    n_sq, n_gates, n_open, n_dal = shape_counts_from(board, sums, side, n_own, n_opp, rules, pts, off, jump, m)
    return w[base] * n_dal + w[base + 1] * n_sq + w[base + 2] * n_open + w[base + 3] * (n_gates - n_open)


@kernel
def _threat_victim(b, side, n_own, n_opp, rules, pts, off, nsq, jump, value):
    """The opponent stone whose removal best defuses the opponent's immediate threats on ``b``
    (``side`` is the mover, about to take square victims): the origin of the opponent's strongest
    capturing reply, preferring a Dalian shuttle (a non-jump move out of one of its squares, which
    would capture again every turn). Returns ``(victim or -1, regrown buffers)``."""
    op_side = 1 - side
    op = 2 - side
    m, pts, off, nsq, jump = generate_capture_paths(b, op_side, n_opp, n_own, rules, pts, off, nsq, jump,
                                                    square_targets(b, op))
    best = 0.0
    victim = -1
    for j in range(m):
        a = off[j]
        e = off[j + 1]
        hops, k = _path_takes(e - a, jump[j] != 0, nsq[j], n_own)
        cap = hops + k
        if cap <= 0:
            continue
        o = pts[a]
        v = 10.0 * cap
        if jump[j] == 0 and squares_at(b, o, op) > 0:
            v += 5.0
        value[o] += 0.01  # several threats from one stone: a tie-breaker
        v += value[o]
        if v > best:
            best = v
            victim = o
    for j in range(m):
        value[pts[off[j]]] = 0.0
    return victim, pts, off, nsq, jump


@kernel
def _shape_victim(b, side, value):
    """The opponent stone in most opponent-only cells with 3+ stones (its gates and squares),
    weighted by stones in the cell; the lowest such point on ties; -1 if the opponent has none."""
    me = side + 1
    op = 2 - side
    for p in range(NUM_POINTS):
        value[p] = 0.0
    for c in range(NUM_CELLS):
        a = 0
        o = 0
        for t in range(4):
            v = b[CELL_CORNERS[c, t]]
            if v == op:
                o += 1
            elif v == me:
                a += 1
        if a == 0 and o >= 3:
            for t in range(4):
                q = CELL_CORNERS[c, t]
                if b[q] == op:
                    value[q] += o - 2
    victim = -1
    best = -1.0
    for p in range(NUM_POINTS):
        if b[p] == op and value[p] > best:
            best = value[p]
            victim = p
        value[p] = 0.0
    return victim


@kernel
def _take_victims(b, side, n_own, n_opp, rules, k, pts, off, nsq, jump, value, out):
    """Remove up to ``k`` opponent stones from ``b`` (``side`` the mover, ``n_opp`` the opponent's
    stones on ``b``): while the opponent has a capturing reply, :func:`_threat_victim`; then
    :func:`_shape_victim`. Writes the victims to ``out``; returns ``(taken, taken for threats,
    regrown buffers)``."""
    n = 0
    n_threat = 0
    for _ in range(k):
        victim, pts, off, nsq, jump = _threat_victim(b, side, n_own, n_opp, rules, pts, off, nsq, jump, value)
        if victim >= 0:
            n_threat += 1
        else:
            victim = _shape_victim(b, side, value)
        if victim < 0:
            break
        b[victim] = EMPTY
        out[n] = victim
        n += 1
        n_opp -= 1
    return n, n_threat, pts, off, nsq, jump


@kernel
def threat_victims(board, side, n_own, n_opp, rules, path, is_jump, k):
    """The expert's own choice of ``k`` square victims for the legal ``path`` (``int16[n]``) of
    ``side`` on ``board`` (before the move; ``n_opp`` the opponent's count before it): first the
    stones behind the opponent's immediate threats (:func:`_threat_victim`: Dalian shuttles first),
    then stones of its gates and squares. Returns ``(victims int16[<=k] ascending, how many were
    taken for threats)``; the caller may prefer another rule when that count is 0."""
    b = board.copy()
    b[path[0]] = EMPTY
    hops = 0
    if is_jump:
        for t in range(1, path.shape[0]):
            b[(path[t - 1] + path[t]) // 2] = EMPTY
            hops += 1
    b[path[path.shape[0] - 1]] = side + 1
    return threat_victims_after(b, side, n_own, n_opp - hops, rules, k)


@kernel
def threat_victims_after(after, side, n_own, n_opp, rules, k):
    """:func:`threat_victims` from the board ``after`` the path of ``side`` (``int8[196]``, its victims
    still on it; ``n_opp`` the opponent's stones there); ``after`` is not modified."""
    b = after.copy()
    pts, off, nsq, jump = new_path_buffers(256)
    value = np.zeros(NUM_POINTS)
    out = np.empty(max(k, 1), np.int16)
    n, n_threat, pts, off, nsq, jump = _take_victims(b, side, n_own, n_opp, rules, k, pts, off, nsq, jump, value, out)
    return np.sort(out[:n]), n_threat


@kernel
def battle_scores(board, side, n_own, n_opp, rules, pts, off, nsq, jump, m, levels, w, k_full):
    """Expert score of each of the ``m`` legal paths of ``side`` (module docstring).

    ``board`` ``int8[196]``; ``n_own``/``n_opp`` the stone counts of the mover and the opponent;
    ``rules`` ``Ruleset.vector``; ``pts, off, nsq, jump`` the CSR paths (``GameState.paths()``);
    ``levels`` ``int8[m]`` JFA Table 1 levels 1..4; ``w`` ``BATTLE_WEIGHTS``; ``k_full`` how many
    paths (best by pre-score) get the full evaluation. Returns ``(scores float64[m], full bool[m])``;
    paths without the full evaluation score ``pre-score - 1e6``.
    """
    opp_side = 1 - side
    loss_below = rules[R_LOSS_BELOW]
    level_bonus = np.zeros(5)
    level_bonus[1] = w[LEVEL1]
    level_bonus[2] = w[LEVEL2]
    level_bonus[3] = w[LEVEL3]
    bpts, boff, bnsq, bjump = new_path_buffers(256)
    threatened = np.zeros(NUM_POINTS, np.bool_)
    hot = np.zeros(NUM_POINTS, np.bool_)
    mark = np.zeros(NUM_POINTS, np.bool_)
    value = np.zeros(NUM_POINTS)
    victims = np.empty(8, np.int16)
    bpts, boff, bnsq, bjump = _threat_maps(board, opp_side, n_opp, n_own, rules, bpts, boff, bnsq, bjump, threatened, hot)
    gain = np.zeros(m, np.int64)
    pre = np.empty(m)
    for i in range(m):
        a = off[i]
        e = off[i + 1]
        hops, k = _path_takes(e - a, jump[i] != 0, nsq[i], n_opp)
        gain[i] = hops + k
        lv = levels[i]
        if lv < 1 or lv > 4:
            lv = 4
        s = w[W_GAIN] * gain[i] + level_bonus[lv]
        g, broken = _quick_shape(board, pts[a], pts[e - 1], side + 1)
        s += w[W_PRE_GATE] * g
        if lv != 1:
            s -= w[W_PRE_BREAK] * broken
        if threatened[pts[a]]:
            s += w[W_FLEE]
        if hot[pts[e - 1]]:
            s += w[W_BLOCK]
        if n_opp - gain[i] < loss_below:
            s += w[W_WIN]
        pre[i] = s
    scores = np.empty(m)
    full = np.zeros(m, np.bool_)
    if m > k_full:
        order = np.argsort(-pre, kind="mergesort")
    else:
        order = np.arange(m)
    b = np.empty(NUM_POINTS, np.int8)
    sums = np.empty(NUM_CELLS, np.int16)
    me = side + 1
    for r in range(m):
        i = order[r]
        if r >= k_full:
            scores[i] = pre[i] - 1e6
            continue
        full[i] = True
        a = off[i]
        e = off[i + 1]
        for p in range(NUM_POINTS):
            b[p] = board[p]
        b[pts[a]] = EMPTY
        hops = 0
        if jump[i] != 0:
            for t in range(a + 1, e):
                b[(pts[t - 1] + pts[t]) // 2] = EMPTY
                hops += 1
        b[pts[e - 1]] = me
        n_opp2 = n_opp - gain[i]
        lv = levels[i]
        if lv < 1 or lv > 4:
            lv = 4
        s = w[W_GAIN] * gain[i] + level_bonus[lv]
        if n_opp2 < loss_below:
            scores[i] = s + w[W_WIN]
            continue
        k = gain[i] - hops
        if k > 0:
            nv, nt, bpts, boff, bnsq, bjump = _take_victims(b, side, n_own, n_opp - hops, rules, k, bpts, boff, bnsq,
                                                            bjump, value, victims)
        cell_sums(b, sums)
        mo, best, breadth, origin, mr, bpts, boff, bnsq, bjump = _reply(
            b, sums, opp_side, n_opp2, n_own, rules, bpts, boff, bnsq, bjump, mark
        )
        if not mo:
            scores[i] = s + w[W_WIN]
            continue
        theirs = _shape_value(b, sums, opp_side, n_opp2, n_own, rules, w, O_DALIAN, bpts, boff, bjump, mr)
        s -= w[W_RISK] * best + w[W_BREADTH] * min(breadth, 4)
        if n_own - best < loss_below:
            s -= w[W_LOSE]
        mm, mine, mb, mo2, mr, bpts, boff, bnsq, bjump = _reply(
            b, sums, side, n_own, n_opp2, rules, bpts, boff, bnsq, bjump, mark
        )
        s += w[W_THREAT] * min(mine, 2)
        s += _shape_value(b, sums, side, n_own, n_opp2, rules, w, S_DALIAN, bpts, boff, bjump, mr)
        s -= theirs
        scores[i] = s
    return scores, full


# ================================================================================== two-ply refinement
E_MATERIAL, E_MY_THREAT, E_THEIR_THREAT, E_ONE_PLY = range(4)
EVAL_WEIGHTS = np.array(
    [
        10.0,  # E_MATERIAL      per stone of difference
        8.0,  # E_MY_THREAT     per stone (capped at 2) we can take now (we are to move at the leaf)
        4.0,  # E_THEIR_THREAT  per stone (capped at 2) they could take if it were their move
        0.01,  # E_ONE_PLY      the one-ply score as a tie-breaker
    ],
    np.float64,
)
EVAL_WEIGHTS.setflags(write=False)


@kernel
def _play_path(b, board, pts, a, e, is_jump, side):
    """``b[:] = board`` then play ``side``'s path ``pts[a:e]`` there (``core.play.play_path``; no
    square victims); returns the hops."""
    for p in range(NUM_POINTS):
        b[p] = board[p]
    return play_path(b, side, pts[a:e], is_jump)[0]


@kernel
def _leaf(b, side, n_own, n_opp, rules, w, ew, pts, off, nsq, jump, mark, sums):
    """Static value of ``b`` for ``side``, who is to move: material, our capture now, their capture
    threat, shapes (``w`` own ``S_*`` and opponent ``O_*`` weights). ``sums`` ``int16[169]`` scratch
    (for ``b``'s cell sums). Returns ``(value, buffers)``."""
    sums = cell_sums(b, sums)
    m1, mine, b1, o1, mp, pts, off, nsq, jump = _reply(b, sums, side, n_own, n_opp, rules, pts, off, nsq, jump, mark)
    ours = _shape_value(b, sums, side, n_own, n_opp, rules, w, S_DALIAN, pts, off, jump, mp)
    m2, theirs, b2, o2, mp, pts, off, nsq, jump = _reply(b, sums, 1 - side, n_opp, n_own, rules, pts, off, nsq, jump,
                                                         mark)
    v = ew[E_MATERIAL] * (n_own - n_opp)
    v += ew[E_MY_THREAT] * min(mine, 2) - ew[E_THEIR_THREAT] * min(theirs, 2)
    if not m1:
        v -= w[W_WIN]
    v += ours
    v -= _shape_value(b, sums, 1 - side, n_opp, n_own, rules, w, O_DALIAN, pts, off, jump, mp)
    return v, pts, off, nsq, jump


@kernel
def leaf_value(board, side, n_own, n_opp, rules, w, ew):
    """The two-ply search's static value (:func:`_leaf`) of the battle position ``board`` (``int8[196]``)
    for ``side`` (0 White, 1 Black), taken as the side to move with ``n_own`` stones against ``n_opp``:
    ``ew[E_MATERIAL]`` per stone of difference, ``ew[E_MY_THREAT]`` / ``ew[E_THEIR_THREAT]`` per stone
    (capped at 2) either side can take with one move, the weighted shapes of both sides (``w``:
    :data:`BATTLE_WEIGHTS`), and ``-w[W_WIN]`` when ``side`` has no legal move. Returns ``float64``
    in the expert's units (one stone = ``ew[E_MATERIAL]``). ``board`` is not modified."""
    pts, off, nsq, jump = new_path_buffers(256)
    mark = np.zeros(NUM_POINTS, np.bool_)
    v, pts, off, nsq, jump = _leaf(board, side, n_own, n_opp, rules, w, ew, pts, off, nsq, jump, mark,
                                   np.empty(NUM_CELLS, np.int16))
    return v


@kernel
def search_scores(board, side, n_own, n_opp, rules, pts, off, nsq, jump, m, levels, w, ew, k_full, n_top,
                  k_reply, margin):
    """Two-ply refinement of :func:`battle_scores` (module docstring): the ``n_top`` best paths by the
    one-ply score are searched one reply deep. For each, the opponent's replies (all of them, or the
    ``k_reply`` best by a cheap pre-score, as in :func:`battle_scores`) are played (their square
    victims by :func:`_take_victims`) and the resulting position is valued for us by :func:`_leaf`;
    the candidate's score is the minimum over the replies (plus ``E_ONE_PLY`` times its one-ply
    score), or ``-W_WIN`` (plus that) when one of those replies takes us below ``loss_below``.
    Returns ``(scores float64[m], one_ply float64[m])``; paths outside the ``n_top`` keep
    ``one_ply - 1e7``.

    ``margin`` (float >= 0, or ``inf`` for none): an alpha cut for callers that need only the best
    score and the paths near it. With a finite margin the replies are tried strongest first by their
    pre-score, and a candidate stops as soon as one reply holds it strictly below the best candidate
    so far less ``margin``; its score is then an upper bound, below ``maximum - margin``, instead of
    its exact value. Every score within ``margin`` of the maximum, the maximum itself and the paths
    reaching it are exactly those of ``margin=inf``; so is ``argmax(scores + jitter)`` for any jitter
    in ``[0, margin)``."""
    one, full = battle_scores(board, side, n_own, n_opp, rules, pts, off, nsq, jump, m, levels, w, k_full)
    return refine_scores(board, side, n_own, n_opp, rules, pts, off, nsq, jump, m, one, w, ew, n_top, k_reply,
                         margin), one


@kernel
def refine_scores(board, side, n_own, n_opp, rules, pts, off, nsq, jump, m, one, w, ew, n_top, k_reply, margin):
    """The two-ply part of :func:`search_scores` from given one-ply scores ``one`` (``float64[m]``,
    :func:`battle_scores`' first result for the same position, paths and weights ``w``): returns the
    two-ply ``scores float64[m]`` alone (``search_scores(...)[0]``, bit for bit). For callers that keep
    the one-ply scores of a position (``knowledge.expert.ExpertKnowledge``) and must not compute them
    twice. ``one`` is not modified."""
    out = np.empty(m)
    for i in range(m):
        out[i] = one[i] - 1e7
    if m == 0:
        return out
    order = np.argsort(-one, kind="mergesort")
    opp_side = 1 - side
    op = 2 - side
    loss_below = rules[R_LOSS_BELOW]
    level_bonus = np.zeros(5)
    level_bonus[1] = w[LEVEL1]
    level_bonus[2] = w[LEVEL2]
    level_bonus[3] = w[LEVEL3]
    b1 = np.empty(NUM_POINTS, np.int8)
    b2 = np.empty(NUM_POINTS, np.int8)
    rpts, roff, rnsq, rjump = new_path_buffers(256)
    lpts, loff, lnsq, ljump = new_path_buffers(256)
    mark = np.zeros(NUM_POINTS, np.bool_)
    sums = np.empty(NUM_CELLS, np.int16)
    threatened = np.zeros(NUM_POINTS, np.bool_)
    hot = np.zeros(NUM_POINTS, np.bool_)
    value = np.zeros(NUM_POINTS)
    victims = np.empty(8, np.int16)
    top = min(n_top, m)
    best = -np.inf  # the best candidate's score so far (the alpha of the cut)
    cut = margin < np.inf
    for r in range(top):
        i = order[r]
        a = off[i]
        e = off[i + 1]
        hops = _play_path(b1, board, pts, a, e, jump[i] != 0, side)
        k = min(nsq[i], n_opp - hops)
        n_opp1 = n_opp - hops - k
        if n_opp1 < loss_below:
            out[i] = one[i] + w[W_WIN]
            best = max(best, out[i])
            continue
        if k > 0:
            nv, nt, lpts, loff, lnsq, ljump = _take_victims(b1, side, n_own, n_opp - hops, rules, k, lpts, loff, lnsq,
                                                            ljump, value, victims)
        mr, rpts, roff, rnsq, rjump = generate_paths(b1, opp_side, n_opp1, n_own, rules, rpts, roff, rnsq, rjump)
        if mr == 0:
            out[i] = one[i] + w[W_WIN]
            best = max(best, out[i])
            continue
        if mr > k_reply:  # the replies are cut by pre-score: mark our threats so that parries rank high
            for p in range(NUM_POINTS):
                threatened[p] = False
                hot[p] = False
            lpts, loff, lnsq, ljump = _threat_maps(b1, side, n_own, n_opp1, rules, lpts, loff, lnsq, ljump,
                                                   threatened, hot)
        # the opponent's replies to consider
        rgain = np.empty(mr, np.int64)
        rpre = np.empty(mr)
        for j in range(mr):
            ra = roff[j]
            re = roff[j + 1]
            rh = re - ra - 1 if rjump[j] != 0 else 0
            rk = rnsq[j]
            if rk > n_own - rh:
                rk = n_own - rh
            rgain[j] = rh + rk
            rpre[j] = w[W_GAIN] * rgain[j]
            if rnsq[j] > 0 and rjump[j] == 0 and squares_at(b1, rpts[ra], op) > 0:
                rpre[j] += level_bonus[1]
            elif rnsq[j] > 0:
                rpre[j] += level_bonus[2]
            if mr > k_reply:
                g, broken = _quick_shape(b1, rpts[ra], rpts[re - 1], op)
                rpre[j] += w[W_PRE_GATE] * g
                if rnsq[j] == 0 or rjump[j] != 0 or broken == 0:
                    rpre[j] -= w[W_PRE_BREAK] * broken
                if threatened[rpts[ra]]:
                    rpre[j] += w[W_FLEE]
                if hot[rpts[re - 1]]:
                    rpre[j] += w[W_BLOCK]
        if mr > k_reply:
            rorder = np.argsort(-rpre, kind="mergesort")[:k_reply]
        elif cut:
            rorder = np.argsort(-rpre, kind="mergesort")
        else:
            rorder = np.arange(mr)
        tie = ew[E_ONE_PLY] * one[i]
        lost = False  # a reply taking us below loss_below decides the candidate without a leaf
        for jj in range(rorder.shape[0]):
            if n_own - rgain[rorder[jj]] < loss_below:
                lost = True
                break
        if lost:
            out[i] = -w[W_WIN] + tie
            best = max(best, out[i])
            continue
        worst = np.inf
        for jj in range(rorder.shape[0]):
            j = rorder[jj]
            ra = roff[j]
            re = roff[j + 1]
            rh = _play_path(b2, b1, rpts, ra, re, rjump[j] != 0, opp_side)
            rk = rgain[j] - rh
            if rk > 0:
                nv, nt, lpts, loff, lnsq, ljump = _take_victims(b2, opp_side, n_opp1, n_own - rh, rules, rk, lpts, loff,
                                                                lnsq, ljump, value, victims)
            v, lpts, loff, lnsq, ljump = _leaf(b2, side, n_own - rgain[j], n_opp1, rules, w, ew, lpts, loff, lnsq,
                                               ljump, mark, sums)
            if v < worst:
                worst = v
                if cut and worst + tie < best - margin:
                    break
        out[i] = worst + tie
        best = max(best, out[i])
    return out
