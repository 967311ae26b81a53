"""A search tree over one player's layout placements, for the rollout layout agents.

``rollout:tree_from=P`` (``lab.rollout.RolloutLayoutAgent``) chooses its placements from layout
ply ``P`` on by a UCT search (Kocsis and Szepesvari 2006) over *its own* placements only: the
opponent, modelled as the expert, replies deterministically, so a node is a position where the
searching player is to place (or the first battle position, a leaf), and an edge one of the
proposer's candidate placements followed by the modelled reply. A leaf is valued by one expert
rollout (the stone difference for the searching player ``battle_plies`` into the battle); every
value in the tree is from that player's side, so nothing is negated on the way up. After the
placement is played and the opponent replies as modelled, the chosen child becomes the next root
with its statistics (tree reuse), so the search's depth grows over the moves.

Storage is flat arrays indexed by node (pgx / KataGo style, no parent-child object graph): ``visits``
``int64[n]`` (rollouts through the node), ``total`` ``float64[n]`` (their summed stone differences),
``first`` ``int64[n]`` (index of the first child, ``-1`` before expansion; children are contiguous),
``count`` ``int64[n]`` (children), ``point`` ``int64[n]`` (the placement of the edge into the node,
``-1`` at a root), and ``states`` (the node's ``GameState``, needed to expand it and to roll out).
Nodes are appended and never freed within a game; :meth:`PlacementTree.reset` starts over.
Single-threaded: the agent that owns the tree is its only user.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["PlacementTree"]


class PlacementTree:
    """The tree of one game's searched placements (module docstring). ``capacity`` (>= 1) is the
    initial array size; the arrays double when full."""

    # (field, fill value, dtype) of every per-node array.
    _FIELDS = (("visits", 0, np.int64), ("total", 0.0, np.float64), ("first", -1, np.int64),
               ("count", 0, np.int64), ("point", -1, np.int64))

    def __init__(self, capacity: int = 256):
        if capacity < 1:
            raise ValueError(f"layout tree: capacity must be >= 1, got {capacity!r}")
        self._allocate(int(capacity))

    def _allocate(self, capacity: int) -> None:
        for name, fill, dtype in self._FIELDS:
            setattr(self, name, np.full(capacity, fill, dtype))
        self.states: list = []

    def _grow(self) -> None:
        """Double every array, keeping the nodes in use."""
        for name, fill, dtype in self._FIELDS:
            old = getattr(self, name)
            new = np.full(2 * len(old), fill, dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    @property
    def size(self) -> int:
        """Nodes in use."""
        return len(self.states)

    def reset(self) -> None:
        """Forget every node (a new game)."""
        self._allocate(len(self.visits))

    def add(self, state, point: int = -1) -> int:
        """Append a node for ``state`` reached by placement ``point`` (``-1``: a root); returns its index."""
        i = self.size
        if i == len(self.visits):
            self._grow()
        self.states.append(state)
        self.point[i] = int(point)
        return i

    def expand(self, node: int, points, states) -> None:
        """Give ``node`` its children: one per placement of ``points`` (best first: the order decides
        ties), leading to the matching position of ``states``. Raises ``ValueError`` when ``node`` is
        already expanded or the two lengths differ."""
        if self.first[node] >= 0:
            raise ValueError(f"layout tree: node {node} is already expanded")
        if len(points) != len(states):
            raise ValueError(f"layout tree: {len(points)} placements but {len(states)} positions")
        start = self.size
        for p, s in zip(points, states):
            self.add(s, int(p))
        self.first[node] = start if len(points) else -1
        self.count[node] = len(points)

    def expanded(self, node: int) -> bool:
        return bool(self.first[node] >= 0)

    def children(self, node: int) -> np.ndarray:
        """``int64[k]``: the children of ``node`` in their expansion order (empty before expansion)."""
        if self.first[node] < 0:
            return np.empty(0, np.int64)
        return np.arange(self.first[node], self.first[node] + self.count[node], dtype=np.int64)

    def mean(self, node: int) -> float:
        """The node's mean stone difference over its rollouts; ``nan`` before its first."""
        n = self.visits[node]
        return float(self.total[node] / n) if n else math.nan

    def select_child(self, node: int, c: float) -> int:
        """The child of expanded ``node`` to descend into: the first unvisited one in expansion order,
        else the highest UCB1 score ``mean + c * sqrt(ln N / n)`` (``N`` the node's visits, ``n`` the
        child's; ``c`` in stones, >= 0), ties to the earlier child."""
        kids = self.children(node)
        if len(kids) == 0:
            raise ValueError(f"layout tree: node {node} has no children to select from")
        n = self.visits[kids]
        unvisited = np.flatnonzero(n == 0)
        if len(unvisited):
            return int(kids[unvisited[0]])
        log_n = math.log(max(int(self.visits[node]), 1))
        ucb = self.total[kids] / n + c * np.sqrt(log_n / n)
        return int(kids[int(np.argmax(ucb))])

    def backup(self, path, value: float) -> None:
        """Add one rollout's ``value`` (stones) to every node of ``path`` (indices, root first)."""
        idx = np.asarray(path, np.int64)
        self.visits[idx] += 1
        self.total[idx] += float(value)

    def best_child(self, node: int) -> int:
        """The most visited child of expanded ``node``; ties to the higher mean, then the earlier child."""
        kids = self.children(node)
        if len(kids) == 0:
            raise ValueError(f"layout tree: node {node} has no children")
        n = self.visits[kids]
        means = np.where(n > 0, self.total[kids] / np.maximum(n, 1), -np.inf)
        order = np.lexsort((np.arange(len(kids)), -means, -n))
        return int(kids[order[0]])
