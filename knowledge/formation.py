"""Formation knowledge of papers/001 section 4.3, the base of every layout score: the Eq. 9 shape
evaluation (:class:`ShapeEvaluator`, registered as ``eval.shape`` by ``knowledge.evaluation``, whose
docstring has the formula), the Eq. 10 Gaussian layout prior (:func:`gaussian_density`,
:class:`GaussianPrior`, registered as ``prior.gaussian`` by ``knowledge.priors``) and the greedy layout
score built from both (:func:`greedy_layout_scores`, used by the greedy, minimax and expert layouts).

A lower layer than the plugin modules: it imports no plugin and no registry, so that the expert's
scores (``knowledge.expert``) and the plugins both build on it without an import circle.
"""

from __future__ import annotations

import math

import numpy as np

from core.board import NUM_POINTS, PHASE_BATTLE, PHASE_LAYOUT, SIZE
from core.shapes import shape_counts
from core.state import GameState
from knowledge.layout_kernels import shape_layout_scores

V_CHAIN = 7.0
V_GATE = 3.0
V_SQUARE = 4.0


class ShapeEvaluator:
    """``eval.shape``: papers/001 Eq. 9 shape feedback plus material (``knowledge.evaluation``'s docstring).

    Options: ``material`` (weight per stone in the battle, default 1.0), ``scale`` (tanh scale of the
    score difference, default 20.0), ``chain``/``gate``/``square`` (Eq. 9 weights 7, 3, 4).
    """

    name = "eval.shape"

    def __init__(self, material: float = 1.0, scale: float = 20.0, chain: float = V_CHAIN, gate: float = V_GATE,
                 square: float = V_SQUARE):
        if scale <= 0:
            raise ValueError(f"eval.shape: scale must be > 0, got {scale!r}")
        self.material, self.scale = float(material), float(scale)
        self.chain, self.gate, self.square = float(chain), float(gate), float(square)

    def counts(self, state: GameState, player: int) -> tuple[int, int, int, int]:
        """``(squares, gates, open gates, Dalians)`` of ``player`` (``core.shapes.shape_counts``)."""
        return shape_counts(state.board, player, state.counts[player], state.counts[1 - player],
                            state.ruleset.vector)

    def score(self, state: GameState, player: int) -> float:
        if player not in (0, 1):
            raise ValueError(f"eval.shape: player must be 0 (White) or 1 (Black), got {player!r}")
        n_sq, n_gates, _, n_dal = self.counts(state, player)
        s = self.chain * n_dal + self.gate * n_gates + self.square * n_sq
        if state.phase == PHASE_BATTLE:
            s += self.material * state.counts[player]
        return float(s)

    def margin(self, state: GameState) -> float:
        """The side to move's advantage in this evaluator's units: its score minus the opponent's;
        ``value`` is ``tanh(margin / scale)`` outside terminal battle positions."""
        p = state.side
        return self.score(state, p) - self.score(state, 1 - p)

    def value(self, state: GameState) -> float:
        if state.phase == PHASE_BATTLE and state.is_terminal():
            return state.returns()[state.side]
        return math.tanh(self.margin(state) / self.scale)


def gaussian_density(sigma: float = 2.0, mu: float = 6.5, rho: float = 0.0) -> np.ndarray:
    """papers/001 Eq. 10 at every point: ``float64[196]`` indexed by point (``idx = row0 * 14 + col0``),
    with ``x = col0``, ``y = row0``, ``sigma1 = sigma2 = sigma``, ``mu1 = mu2 = mu``, correlation ``rho``."""
    if sigma <= 0:
        raise ValueError(f"prior.gaussian: sigma must be > 0, got {sigma!r}")
    if not -1.0 < rho < 1.0:
        raise ValueError(f"prior.gaussian: rho must be in (-1, 1), got {rho!r}")
    idx = np.arange(NUM_POINTS)
    x = (idx % SIZE - mu) / sigma
    y = (idx // SIZE - mu) / sigma
    q = (x * x - 2.0 * rho * x * y + y * y) / (2.0 * (1.0 - rho * rho))
    return np.exp(-q) / (2.0 * math.pi * sigma * sigma * math.sqrt(1.0 - rho * rho))


class GaussianPrior:
    """``prior.gaussian``: Eq. 10 restricted to the legal placements and normalised.

    ``prior(state)`` -> ``float32[196]``, 0 on illegal points, summing to 1 over the legal ones
    (all zero when there is no legal placement, e.g. in the battle).
    """

    name = "prior.gaussian"

    def __init__(self, sigma: float = 2.0, mu: float = 6.5, rho: float = 0.0):
        self.sigma, self.mu, self.rho = float(sigma), float(mu), float(rho)
        self.density = gaussian_density(self.sigma, self.mu, self.rho)
        self.density.setflags(write=False)

    def prior(self, state: GameState) -> np.ndarray:
        out = np.zeros(NUM_POINTS, np.float64)
        if state.phase == PHASE_LAYOUT:
            legal = state.placements()
            if legal:
                out[legal] = self.density[legal]
                out /= out.sum()
        return out.astype(np.float32)


def greedy_layout_scores(state: GameState, evaluator: ShapeEvaluator, prior: GaussianPrior,
                         prior_weight: float) -> np.ndarray:
    """``float64[196]`` greedy layout scores of layout ``state`` (``-inf`` on illegal points):
    ``evaluator``'s (``eval.shape``) score difference after the placement plus ``prior_weight`` times
    the Gaussian prior scaled to max 1 (the kernel ``knowledge.layout_kernels.shape_layout_scores``).
    Raises ``ValueError`` for a battle position."""
    if state.phase != PHASE_LAYOUT:
        raise ValueError("greedy layout scores: the position is not in the layout")
    me = state.side
    pr = prior.prior(state).astype(np.float64)
    top = pr.max()
    if top > 0:
        pr /= top
    return shape_layout_scores(state.board, me, int(state.counts[0]) + int(state.counts[1]), evaluator.chain,
                               evaluator.gate, evaluator.square, pr, float(prior_weight))
