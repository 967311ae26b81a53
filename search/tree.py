"""The search tree as flat, preallocated arrays (no Python object per node), and its kernels.

Node ``0`` is the root. The edge into a node is stored *on the child* (AlphaZero style), so the edge
statistics of JFA Eq. 1-5 are the child's fields: ``N(s, a) = N[child]``, ``O(s, a) = O[child]``,
``W(s, a) = W[child]``, ``P(s, a) = P[child]``. The children of a node are the contiguous range
``first_child[n] : first_child[n] + n_children[n]``.

Locking (WU-UCT incomplete/complete updates, JFA Eq. 2-4): ``Tree.lock(n)`` returns the lock of node
``n`` from a striped pool (``n % NUM_LOCKS``, KataGo-style mutex pool). It guards the node's ``N``,
``O``, ``W`` and its expansion fields ``flag``, ``first_child``, ``n_children``. Readers that only
*select* (the PUCT scan over a node's children) read the children's statistics without locks: a value
a few updates stale changes one choice at worst, which WU-UCT's unobserved counts already tolerate.
The position arrays (``board`` ... ``hash``) and the move pool are written once, by the one thread
that expands the parent, before the parent's ``flag`` becomes ``EXPANDED``; they are read-only after.

Per-node arrays (capacity ``cap``):

- statistics: ``N`` int32 visits, ``O`` int32 unobserved (started, unfinished) simulations, ``W``
  float64 value sum from the point of view of ``mover``, ``P`` float32 prior of the edge into the node,
  ``terminal_value`` float32 (set once with ``flag = TERMINAL``: the result for the side to move);
- structure: ``parent`` int32, ``first_child`` int32 (-1 before expansion), ``n_children`` int32,
  ``flag`` int8 (``UNEXPANDED``, ``EXPANDING``, ``EXPANDED``, ``TERMINAL``), ``mover`` int8 (the side that
  played the edge into the node), ``action`` int32 (net action index of that edge);
- position after the edge: ``board`` int8[cap, 196], ``side``, ``phase`` int8, ``counts`` int16[cap, 2],
  ``quiet``, ``ply`` int32, ``hash`` uint64;
- move of the edge: ``move_off`` int32 into ``move_pool`` (int16: path points then victims),
  ``move_npath`` int16, ``move_nvic`` int8, ``move_jump`` int8; ``pending`` int8: square victims still
  to choose (JFA Fig. 2's lower decision is made lazily, when the child is first expanded: until then
  the child's position is the one after the path, with ``move_pool`` space reserved for the victims).
"""

from __future__ import annotations

import threading

import numpy as np

from core.board import NUM_POINTS
from core.jit import kernel
from core.play import play, step_key, take_stones
from core.status import battle_status
from core.zobrist import ZOBRIST_BLACK_TO_MOVE
from nets.encoding import encode_path

UNEXPANDED, EXPANDING, EXPANDED, TERMINAL = 0, 1, 2, 3
NUM_LOCKS = 64
FORMULA_PUCT, FORMULA_PRINTED = 0, 1


class TreeFullError(RuntimeError):
    """The tree's preallocated capacity is exhausted (raise ``max_nodes``)."""


class Tree:
    """Flat arrays of a search tree; see the module docstring for fields and locking."""

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        cap = self.capacity
        self.N = np.zeros(cap, np.int32)
        self.O = np.zeros(cap, np.int32)
        self.W = np.zeros(cap, np.float64)
        self.P = np.zeros(cap, np.float32)
        self.terminal_value = np.zeros(cap, np.float32)  # TERMINAL nodes: value for the side to move
        self.parent = np.full(cap, -1, np.int32)
        self.first_child = np.full(cap, -1, np.int32)
        self.n_children = np.zeros(cap, np.int32)
        self.flag = np.zeros(cap, np.int8)
        self.mover = np.zeros(cap, np.int8)
        self.action = np.full(cap, -1, np.int32)
        self.board = np.zeros((cap, NUM_POINTS), np.int8)
        self.side = np.zeros(cap, np.int8)
        self.phase = np.zeros(cap, np.int8)
        self.counts = np.zeros((cap, 2), np.int16)
        self.quiet = np.zeros(cap, np.int32)
        self.ply = np.zeros(cap, np.int32)
        self.hash = np.zeros(cap, np.uint64)
        self.move_off = np.zeros(cap, np.int32)
        self.move_npath = np.zeros(cap, np.int16)
        self.move_nvic = np.zeros(cap, np.int8)
        self.move_jump = np.zeros(cap, np.int8)
        self.pending = np.zeros(cap, np.int8)
        self.move_pool = np.zeros(8 * cap, np.int16)
        self.size = 1  # nodes in use (the root is node 0)
        self.pool_used = 0
        self._alloc_lock = threading.Lock()
        self._locks = [threading.Lock() for _ in range(NUM_LOCKS)]

    def lock(self, node: int) -> threading.Lock:
        """The lock guarding ``node``'s statistics and expansion fields."""
        return self._locks[node % NUM_LOCKS]

    def allocate(self, n_nodes: int, n_pool: int) -> tuple[int, int]:
        """Reserve ``n_nodes`` contiguous nodes and ``n_pool`` move-pool entries; returns their starts.
        Raises ``TreeFullError`` when the capacity is exhausted."""
        with self._alloc_lock:
            if self.size + n_nodes > self.capacity or self.pool_used + n_pool > self.move_pool.shape[0]:
                raise TreeFullError(f"search tree full ({self.capacity} nodes)")
            start, pool = self.size, self.pool_used
            self.size += n_nodes
            self.pool_used += n_pool
            return start, pool


@kernel
def select_child(N, O, W, P, flag, terminal_value, side, mover, first, n, parent_visits, c_puct, fpu_value, formula):
    """Index (absolute node id) of the child maximising JFA Eq. 1 with unobserved counts.

    ``formula`` ``FORMULA_PUCT``: ``Q + c P sqrt(N(s) + O(s)) / (1 + N(s,a) + O(s,a))`` (default);
    ``FORMULA_PRINTED``: the paper's printed ``(Q + c P) sqrt(N(s) + O(s)) / (1 + N(s,a) + O(s,a))``.
    ``parent_visits`` is ``N(s) + O(s)``; an unvisited child's Q is ``fpu_value`` (first-play urgency),
    or its game result when it is already known to end the game (``flag`` ``TERMINAL``: its
    ``terminal_value``, for its side to move, seen from its ``mover``).
    Q values are from the point of view of the side choosing here (the children's ``mover``).
    """
    best = first
    best_score = -1e300
    sq = np.sqrt(max(parent_visits, 1.0))
    for i in range(first, first + n):
        visits = N[i]
        if visits > 0:
            q = W[i] / visits
        elif flag[i] == TERMINAL:
            q = terminal_value[i] if side[i] == mover[i] else -terminal_value[i]
        else:
            q = fpu_value
        denom = 1.0 + visits + O[i]
        if formula == FORMULA_PUCT:
            score = q + c_puct * P[i] * sq / denom
        else:
            score = (q + c_puct * P[i]) * sq / denom
        if score > best_score:
            best_score = score
            best = i
    return best


@kernel
def select_node(N, O, W, P, flag, terminal_value, first_child, n_children, side, mover, node, c_puct, fpu_reduction,
                formula):
    """:func:`select_child` over the children of the expanded ``node``: first-play urgency is the
    node's mean value for the side choosing there (0 before any visit) minus ``fpu_reduction``.
    Returns the chosen child's node id."""
    n_visits = N[node]
    q_parent = 0.0
    if n_visits > 0:
        q_parent = W[node] / n_visits
        if mover[node] != side[node]:
            q_parent = -q_parent
    return select_child(N, O, W, P, flag, terminal_value, side, mover, first_child[node], n_children[node],
                        float(n_visits + O[node]), c_puct, q_parent - fpu_reduction, formula)


@kernel
def write_children(
    board, side, phase, counts, quiet, ply, hash_, parent, mover, action, P, move_off, move_npath, move_nvic,
    move_jump, move_pool, flag, first_child, n_children,
    pending, node, start, pool_start, pts, off, jump, squares, actions, priors, k,
):
    """Write the ``k`` children of ``node`` at ``start`` with their edge data. Move ``i`` has path
    ``pts[off[i]:off[i+1]]`` (one point: a placement) and jump flag ``jump[i]``; when its path forms
    ``squares[i] > 0`` squares, ``min(squares, opponent stones left)`` victims are left *pending* (see
    :func:`resolve_victims`) and the child holds the position after the path. Returns the move-pool
    entries used (victim space included). Positions and hashes come from ``core.play.play`` (the
    parent's hash updated incrementally), which handles the end of the layout (rule book 2.4)."""
    s = side[node]
    used = 0
    for i in range(k):
        c = start + i
        board[c] = board[node]
        counts[c] = counts[node]
        path = pts[off[i] : off[i + 1]]
        n_vic = 0
        if phase[node] == 1 and squares[i] > 0:
            hops = path.shape[0] - 1 if jump[i] != 0 else 0
            n_vic = min(squares[i], counts[node, 1 - s] - hops)
        side[c], phase[c], quiet[c], ply[c], hash_[c], _ = play(
            board[c], counts[c], s, phase[node], quiet[node], ply[node], hash_[node], path, jump[i] != 0, path[:0], n_vic)
        parent[c] = node
        mover[c] = s
        action[c] = actions[i]
        P[c] = priors[i]
        flag[c] = 0
        first_child[c] = -1
        n_children[c] = 0
        move_off[c] = pool_start + used
        move_npath[c] = path.shape[0]
        move_nvic[c] = 0
        move_jump[c] = jump[i]
        pending[c] = n_vic
        for j in range(path.shape[0]):
            move_pool[pool_start + used + j] = path[j]
        used += path.shape[0] + n_vic
    return used


@kernel
def children_status(side, counts, ply, quiet, hash_, pending, start, k, history, n_history, rules):
    """The game status of battle children ``start .. start + k - 1`` of one node, with the rule book's
    terminal test (``core.status.battle_status``, one implementation): returns ``(reason int8[k],
    winner int8[k])`` (``core.status`` codes; ``winner`` -2 while ongoing).

    A child's pending square victims (``pending``) are counted as taken from its side to move; its
    repetition history is the parent's ``history[:n_history]`` (``uint64``, the parent's position last)
    followed by the child's hash, cut to its last ``quiet + 1`` entries (only the child's own after a
    capture). The child's side to move is assumed to have a legal move, so a loss by having none is
    not reported (the search finds it when the child is expanded)."""
    reason = np.zeros(k, np.int8)
    winner = np.full(k, -2, np.int8)
    buf = np.empty(n_history + 1, np.uint64)
    buf[:n_history] = history[:n_history]
    cnt = np.empty(2, np.int64)
    for i in range(k):
        c = start + i
        cnt[0] = counts[c, 0]
        cnt[1] = counts[c, 1]
        cnt[side[c]] -= pending[c]
        buf[n_history] = hash_[c]
        first = max(0, n_history - quiet[c])
        r, w = battle_status(side[c], cnt, ply[c], buf[first:], n_history + 1 - first, True, rules)
        reason[i] = r
        winner[i] = w
    return reason, winner


@kernel
def returning_paths(side, hash_, m, pts, off, jump, nsq, history, n_history, at_least):
    """The indices (``int64``, ascending) of a battle position's quiet paths (no jump, no square) among
    its ``m`` legal paths (the ``core.movegen`` CSR buffers ``pts``/``off``/``jump``/``nsq``, which may
    be longer than ``m``) after which the position (``hash_`` with
    ``side``'s stone moved and the other side to move) is already in ``history[:n_history]``
    (``uint64``, the repetition history, this position last) at least ``at_least`` times. Only a quiet
    move can repeat a position: any capture changes the stone counts."""
    out = np.empty(m, np.int64)
    k = 0
    h = np.uint64(hash_)
    for i in range(m):
        if jump[i] or nsq[i]:
            continue
        child = h ^ step_key(side, pts[off[i]], pts[off[i + 1] - 1]) ^ ZOBRIST_BLACK_TO_MOVE
        count = 0
        for j in range(n_history):
            if history[j] == child:
                count += 1
        if count >= at_least:
            out[k] = i
            k += 1
    return out[:k]


@kernel
def resolve_victims(board, side, counts, hash_, move_off, move_npath, move_nvic, move_pool, pending, node, victims):
    """Take the square ``victims`` (``int16[v]``, ``v == pending[node]``) of the edge into ``node``:
    remove them, update counts and hash, record them in the move pool, clear ``pending``."""
    for j in range(victims.shape[0]):
        move_pool[move_off[node] + move_npath[node] + j] = victims[j]
    # the side to move at the child is the one losing stones
    hash_[node] = take_stones(board[node], counts[node], side[node], victims, hash_[node])
    move_nvic[node] = victims.shape[0]
    pending[node] = 0


@kernel
def kept_children(pts, off, jump, nsq, keep):
    """The children data of the kept battle paths, in one pass over the CSR path set of
    ``core.movegen`` (``pts`` int16, ``off`` int32, ``jump``/``nsq`` int8) and ``keep`` (int64
    indices, ascending, from the expansion pruner). Returns ``(pts int16[K], off int32[k+1], jump
    int8[k], squares int8[k], actions int32[k], pool_size)``: the kept paths back to back, their
    jump flags, squares formed (victims are chosen when the child is first expanded), upper actions
    (``nets.encoding``) and the move-pool entries the children need (their points plus room for up
    to 4 victims each)."""
    k = keep.shape[0]
    out_off = np.zeros(k + 1, np.int32)
    for i in range(k):
        p = keep[i]
        out_off[i + 1] = out_off[i] + off[p + 1] - off[p]
    out_pts = np.empty(out_off[k], np.int16)
    out_jump = np.empty(k, np.int8)
    squares = np.empty(k, np.int8)
    actions = np.empty(k, np.int32)
    pool = out_off[k]
    for i in range(k):
        p = keep[i]
        start = off[p]
        for j in range(off[p + 1] - start):
            out_pts[out_off[i] + j] = pts[start + j]
        out_jump[i] = jump[p]
        squares[i] = nsq[p]
        actions[i] = encode_path(pts, start, off[p + 1], jump[p] != 0)
        pool += min(nsq[p], 4)
    return out_pts, out_off, out_jump, squares, actions, pool


@kernel
def shared_prior(policy, actions):
    """``float64[k]``: ``policy[actions[i]]`` divided by the number of children sharing that action
    (jump chains with the same origin and end share one upper action and split its prior, rule book
    section 8). ``policy`` float32 over the action space, ``actions`` int32[k]."""
    k = actions.shape[0]
    out = np.empty(k, np.float64)
    order = np.argsort(actions)
    i = 0
    while i < k:
        j = i + 1
        while j < k and actions[order[j]] == actions[order[i]]:
            j += 1
        for t in range(i, j):
            c = order[t]
            out[c] = np.float64(policy[actions[c]]) / (j - i)
        i = j
    return out


def same_position(tree: "Tree", node: int, state) -> bool:
    """Whether ``node`` holds ``state``'s position (side, phase, ply and board; its hash is compared first by the caller)."""
    return (int(tree.side[node]) == state.side and int(tree.phase[node]) == state.phase
            and int(tree.ply[node]) == state.ply and np.array_equal(tree.board[node], state.board))


def subtree(tree: "Tree", root: int) -> "Tree":
    """A new tree holding the subtree of ``tree`` below ``root`` (breadth first, so that each node's
    children stay contiguous), with the same statistics."""
    order = [root]
    i = 0
    while i < len(order):
        n = order[i]
        if tree.flag[n] == EXPANDED:
            order.extend(range(int(tree.first_child[n]), int(tree.first_child[n] + tree.n_children[n])))
        i += 1
    order_a = np.array(order, np.int64)
    new = Tree(tree.capacity)
    remap = np.full(tree.size, -1, np.int32)
    remap[order_a] = np.arange(len(order), dtype=np.int32)
    for name in ("N", "W", "P", "terminal_value", "n_children", "flag", "mover", "action", "board", "side",
                 "phase", "counts", "quiet", "ply", "hash", "move_npath", "move_nvic", "move_jump", "pending"):
        getattr(new, name)[: len(order)] = getattr(tree, name)[order_a]
    fc = tree.first_child[order_a]
    new.first_child[: len(order)] = np.where(fc >= 0, remap[np.maximum(fc, 0)], -1)
    par = tree.parent[order_a]
    new.parent[: len(order)] = np.where(par >= 0, remap[np.maximum(par, 0)], -1)
    new.parent[0] = -1
    new.flag[: len(order)][new.flag[: len(order)] == EXPANDING] = UNEXPANDED
    sizes = (tree.move_npath[order_a] + np.maximum(tree.move_nvic[order_a], tree.pending[order_a])).astype(np.int64)
    starts = np.zeros(len(order), np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    for j, n in enumerate(order):
        o = int(tree.move_off[n])
        new.move_pool[starts[j]:starts[j] + sizes[j]] = tree.move_pool[o:o + sizes[j]]
    new.move_off[: len(order)] = starts
    new.size = len(order)
    new.pool_used = int(sizes.sum())
    return new
