"""Typed protocols of the pluggable parts (one per registry kind) and the ``Agent`` protocol.

Plugins are thin objects over Numba kernels in ``core/``; they take a ``GameState`` and the
state's ``PathSet`` (CSR arrays of legal battle paths, ``core.state.PathSet``) so that nothing is
converted to Python objects per move. Every registered plugin passes ``tests/test_plugins.py``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from core.notation import Move
from core.state import GameState, PathSet


@runtime_checkable
class ExpansionPruner(Protocol):
    """Chooses which legal battle paths a search node expands (JFA Table 1)."""

    name: str

    def keep(self, state: GameState, paths: PathSet) -> np.ndarray:
        """Indices (``int64[k]``, ascending, ``k >= 1`` whenever ``paths.m >= 1``) of the paths to keep."""
        ...


@runtime_checkable
class CapturePruner(Protocol):
    """Chooses the candidate square-victim sets of a square-forming path (JFA Table 2, Eq. 7-9)."""

    name: str

    def candidates(self, state: GameState, path: tuple[int, ...], jump: bool) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """Victim sets (each ascending, of the size the rules require) and their scores (``float64[n]``,
        higher is better for the mover), best first; never empty when the path captures at all."""
        ...


@runtime_checkable
class LayoutPrior(Protocol):
    """A prior over layout placements (papers/001 Eq. 10)."""

    name: str

    def prior(self, state: GameState) -> np.ndarray:
        """``float32[196]``, zero on illegal placements, summing to 1 over the legal ones."""
        ...


@runtime_checkable
class Evaluator(Protocol):
    """A static evaluation of a position (papers/001 Eq. 9)."""

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
