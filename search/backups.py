"""Temporal-difference backups of the search (papers/001 and 003, Eq. 2-8): SARSA(lambda), Q-learning and
the hybrid of both, as :class:`search.mcts.Search` applies them for ``SearchConfig.backup`` other than
``mean`` (JFA Eq. 3-5, which the search applies itself)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from search.config import SearchConfig
from search.tree import Tree


def td_backup(tree: Tree, path: list[int], value: float, leaf_side: int, cfg: SearchConfig,
              reward: Callable[[int], float]) -> None:
    """Temporal-difference backups of papers/001 and 003 (Eq. 2-5), for ``backup`` sarsa/q/hybrid, of one
    simulation's ``path`` (tree node ids, root first) whose leaf value ``value`` is for ``leaf_side``; the
    caller holds the search-wide lock. ``reward(i)`` is the knowledge feedback ``r_i`` (``Search._reward``).

    The path ``n_0 (root), n_1, ..., n_c (leaf)``; ``Q_i = W[n_i] / N[n_i]`` is the value of the edge
    into ``n_i`` for the side that made it (the root's: its position's value for the side that moved
    into it, used by first-play urgency); values of other nodes are negated when their mover
    differs. ``v`` is the leaf's value (evaluator or game result) from each node's mover's view;
    ``r_i`` the knowledge feedback (Eq. 9) of the move into ``n_i`` for its mover, times
    ``reward_scale`` (``r_0 = 0``): in the layout the ``layout_prior`` (Eq. 10) of the placed point
    relative to the best legal point (in [0, 1]); in the battle the ``feedback_evaluator`` value of
    the position after the move (in [-1, 1]).

    - SARSA(lambda) (``sarsa``, ``hybrid``), in the order of the descent, t = 0..c:
      ``target_t = r_t + gamma * Q_{t+1}`` (``v`` for t = c, Eq. 2), ``delta_t = target_t - Q_t``, and
      every ``i <= t`` gets ``Q_i += c1 * lambda^(t - i) * delta_t`` (Eq. 3: the trace decays with the
      distance ``t - i`` along the path). A node not yet visited (``N = 0``, the new leaf) first takes
      ``Q_t = target_t`` (from the leaf up) and has no TD error of its own.
      Eq. 3 as printed, ``Q <- (1 - c1) Q + c1 lambda^(c-i) E``, would pull every Q towards the TD error
      itself (towards 0 once learned); this is the standard SARSA(lambda) step it abbreviates.
    - Q-learning (``q``; ``hybrid`` after the SARSA sweep), from the leaf up: the leaf takes Eq. 5
      (``Q = W / N`` with ``v`` added; in ``hybrid`` its SARSA value), then for i = c-1..0:
      ``Q_i <- (1 - c2) Q_i + c2 * max_a Q(n_{i+1}'s siblings)`` (Eq. 4; the max is taken by the side
      choosing among them, over visited children, and returned to ``n_i``'s mover's view).

    Every path node then has ``N += 1`` and ``W = N * Q`` (so selection's ``W / N`` is the learned Q,
    Eq. 6-8) and ``O -= 1``. The papers apply SARSA while
    descending; applying it once the leaf value is known gives the same values at ``threads=1``
    (selection reads only the children of a node, never the path's own updated Q)."""

    c = len(path) - 1
    mover = [int(tree.mover[n]) for n in path]
    v = [value if m == leaf_side else -value for m in mover]

    def sign(i: int, j: int) -> float:
        return 1.0 if mover[i] == mover[j] else -1.0

    q = [float(tree.W[n] / tree.N[n]) if tree.N[n] > 0 else None for n in path]
    if cfg.backup in ("sarsa", "hybrid"):
        r = [0.0] + [reward(i) for i in range(1, c + 1)]
        fresh = [x is None for x in q]
        for t in range(c, -1, -1):  # unvisited nodes (the new leaf): Q_t = target_t
            if fresh[t]:
                q[t] = r[t] + cfg.discount * (v[c] if t == c else sign(t, t + 1) * q[t + 1])
        for t in range(c + 1):
            if fresh[t]:
                continue
            nxt = v[c] if t == c else sign(t, t + 1) * q[t + 1]
            delta = r[t] + cfg.discount * nxt - q[t]
            for i in range(t + 1):
                q[i] += cfg.sarsa_rate * cfg.trace_decay ** (t - i) * sign(i, t) * delta
    elif q[c] is None:
        q[c] = v[c]
    else:
        q[c] = (q[c] * tree.N[path[c]] + v[c]) / (tree.N[path[c]] + 1)  # Eq. 5
    for i in range(c, -1, -1):
        n = path[i]
        if cfg.backup in ("q", "hybrid") and i < c:
            target = best_child_q(tree, n)
            q[i] = target if q[i] is None else (1 - cfg.q_rate) * q[i] + cfg.q_rate * target
        tree.O[n] -= 1
        tree.N[n] += 1
        tree.W[n] = tree.N[n] * q[i]


def best_child_q(tree: Tree, node: int) -> float:
    """The best visited child's Q for the side choosing at ``node``, from the view of ``node``'s mover
    (Eq. 4's ``max_a Q(s_{i+1}, a)``)."""
    first, k = int(tree.first_child[node]), int(tree.n_children[node])
    idx = np.arange(first, first + k)
    idx = idx[tree.N[idx] > 0]
    best = float(np.max(tree.W[idx] / tree.N[idx]))
    return best if tree.side[node] == tree.mover[node] else -best
