"""Typed protocols of the pluggable parts (one per registry kind) and the ``Agent`` protocol.

Plugins are thin objects over Numba kernels (``core/``, ``knowledge/*_kernels.py``); they take a
``GameState`` and the state's ``PathSet`` (CSR arrays of legal battle paths, ``core.state.PathSet``)
so that nothing is converted to Python objects per move. The search hands them its tree's positions
as ``GameState.from_arrays`` views (board, counts and hash as stored, no rehash), and the capture
pruner the position after a path as it stands in the tree (``candidates_after``), so nothing is
regenerated. Every registered plugin passes ``tests/test_plugins.py``.

Names: the protocols are named for their role (``PathPruner``, ``VictimRanker``, ``PositionScorer``)
so they do not collide with the JFA implementations in ``knowledge.pruning``
(``ExpansionPruner``, ``CapturePruner``) or with ``nets.evaluator.Evaluator`` (the search's
policy-and-value source).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from core.notation import Move
from core.state import GameState, PathSet


@runtime_checkable
class PathPruner(Protocol):
    """Kind ``expansion_pruner``: chooses which legal battle paths a search node expands (JFA Table 1)."""

    name: str

    def keep(self, state: GameState, paths: PathSet) -> np.ndarray:
        """Indices (``int64[k]``, ascending, ``k >= 1`` whenever ``paths.m >= 1``) of the paths to keep."""
        ...


@runtime_checkable
class VictimRanker(Protocol):
    """Kind ``capture_pruner``: chooses the candidate square-victim sets of a square-forming path (JFA
    Table 2, Eq. 7-9)."""

    name: str

    def candidates(self, state: GameState, path: tuple[int, ...], jump: bool) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """Victim sets (each ascending, of the size the rules require) and their scores (``float64[n]``,
        higher is better for the mover), best first; never empty when the path captures at all."""
        ...

    def candidates_after(self, after: GameState, count: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """The same from the position after the path (its ``count`` victims still on the board, the
        victims' side to move: ``search.victims.after_path`` or a search tree's child)."""
        ...


@runtime_checkable
class LayoutPrior(Protocol):
    """A prior over layout placements (papers/001 Eq. 10)."""

    name: str

    def prior(self, state: GameState) -> np.ndarray:
        """``float32[196]``, zero on illegal placements, summing to 1 over the legal ones."""
        ...


@runtime_checkable
class PathPrior(Protocol):
    """Kind ``battle_prior``: a prior over the legal battle paths of a position (knowledge the search
    blends into its net policy, ``search.mcts.SearchConfig.battle_prior``)."""

    name: str

    def prior(self, state: GameState, paths: PathSet) -> np.ndarray:
        """``float32[paths.m]`` (``paths`` order), ``>= 0``, summing to 1 when ``paths.m >= 1``."""
        ...


@runtime_checkable
class PositionScorer(Protocol):
    """Kind ``evaluator``: a static evaluation of a position (papers/001 Eq. 9)."""

    name: str

    def score(self, state: GameState, player: int) -> float:
        """Raw score of ``player``'s shapes and material (higher is better for ``player``)."""
        ...

    def value(self, state: GameState) -> float:
        """Value in ``[-1, 1]`` for the side to move."""
        ...


@runtime_checkable
class Reward(Protocol):
    """A reward signal for training (JFA section 3.4)."""

    name: str

    def rewards(self, state: GameState, seed: int = 0) -> tuple[float, float]:
        """Rewards ``(White, Black)`` in ``[-1, 1]`` for ``state`` (a layout-end or final position)."""
        ...


@runtime_checkable
class Agent(Protocol):
    """A player: ``select(state) -> Move`` for a non-terminal state (layout or battle).

    Agents are seeded at construction (``seed=`` keyword) and deterministic for a given seed and
    sequence of states. ``last_think_time`` is the wall time in seconds of the latest ``select``.
    """

    name: str
    last_think_time: float

    def select(self, state: GameState) -> Move:
        ...
