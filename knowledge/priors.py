"""Knowledge priors: layout priors (papers/001 section 4.3, Eq. 10) and the expert's.

``prior.gaussian`` (kind ``layout_prior``): the layout value of a point decays from the centre of the
board like a 2D normal density (papers/001 Fig. 3). Eq. 10 with the paper's parameters:
``sigma1 = sigma2 = 2``, ``mu1 = mu2 = 6.5``, ``rho = 0`` over 0-based coordinates
``x = column, y = row`` in ``[0, 13]``, i.e. centred between g7 and h8. The density is evaluated on
the legal placements of the position and normalised to sum to 1 (the constant
``1 / (2 pi sigma1 sigma2 sqrt(1 - rho^2))`` cancels). The class (``GaussianPrior``) and the density
(``gaussian_density``) live in ``knowledge.formation``, below the expert's scores that use them.

``prior.expert_layout`` (kind ``layout_prior``) and ``prior.expert`` (kind ``battle_prior``): the
expert's layout and battle scores (``knowledge.expert.ExpertKnowledge``) as softmax priors.
"""

from __future__ import annotations

import numpy as np

from core.board import NUM_POINTS, PHASE_LAYOUT
from core.state import GameState
from knowledge.expert import default_knowledge
from knowledge.formation import GaussianPrior
from knowledge.registry import register


@register("prior.gaussian", "layout_prior")
def make_gaussian_prior(sigma: float = 2.0, mu: float = 6.5, rho: float = 0.0) -> GaussianPrior:
    """papers/001 Eq. 10: 2D Gaussian over legal placements (sigma 2, mu 6.5, rho 0)."""
    return GaussianPrior(sigma=sigma, mu=mu, rho=rho)


class ExpertLayoutPrior:
    """``prior.expert_layout``: the expert's layout scores (``knowledge.expert.ExpertKnowledge.
    layout_scores`` of the shared ``default_knowledge()``, the expert agent's: the ``eval.shape`` gain, the Gaussian prior and the knowledge kernel) as a softmax
    over the legal placements: ``p_i = exp((s_i - max s) / temperature) / Z`` (``temperature`` in the
    layout score's units, default 0.5). ``prior(state)`` -> ``float32[196]``, 0 on illegal points,
    summing to 1 over the legal ones (all zero without a legal placement, e.g. in the battle). A
    temperature that is not a finite number > 0 raises ``ValueError``."""

    name = "prior.expert_layout"

    def __init__(self, temperature: float = 0.5):
        if not (np.isfinite(temperature) and temperature > 0):
            raise ValueError(f"prior.expert_layout: temperature must be a finite number > 0, got {temperature!r}")
        self.temperature = float(temperature)
        self.knowledge = default_knowledge()

    def prior(self, state: GameState) -> np.ndarray:
        out = np.zeros(NUM_POINTS, np.float64)
        if state.phase == PHASE_LAYOUT and state.placements():
            scores = self.knowledge.layout_scores(state)
            legal = np.isfinite(scores)
            out[legal] = np.exp((scores[legal] - scores[legal].max()) / self.temperature)
            out /= out.sum()
        return out.astype(np.float32)


@register("prior.expert_layout", "layout_prior")
def make_expert_layout_prior(temperature: float = 0.5) -> ExpertLayoutPrior:
    """The expert's layout scores as a softmax prior over the legal placements (temperature 0.5 units)."""
    return ExpertLayoutPrior(temperature=temperature)


class ExpertPathPrior:
    """``prior.expert``: the expert's battle move scores (``knowledge.expert.ExpertKnowledge.battle_scores`` of
    the shared ``default_knowledge()``, the expert agent's: its
    one-ply score with the reply safety check, refined two plies deep for its ``top`` best paths when
    ``plies`` is 2; one stone = 10 units) as a softmax prior over the legal paths:
    ``p_i = exp((s_i - max s) / temperature) / Z`` (``temperature`` in the expert's units, default 10:
    a path one stone worse gets ``1/e`` of the best one's weight). ``prior(state, paths)`` ->
    ``float32[paths.m]``; raises ``ValueError`` on a layout position."""

    name = "prior.expert"

    def __init__(self, temperature: float = 10.0, plies: int = 2):
        if not (np.isfinite(temperature) and temperature > 0):
            raise ValueError(f"prior.expert: temperature must be a finite number > 0, got {temperature!r}")
        if plies not in (1, 2):
            raise ValueError(f"prior.expert: plies must be 1 or 2, got {plies!r}")
        self.temperature = float(temperature)
        self.plies = int(plies)
        self.knowledge = default_knowledge()

    def prior(self, state: GameState, paths) -> np.ndarray:
        if state.phase == PHASE_LAYOUT:
            raise ValueError("prior.expert: a battle position is needed (got a layout position)")
        if paths.m == 0:
            return np.zeros(0, np.float32)
        scores, _ = self.knowledge.battle_scores(state, self.plies)
        z = np.exp((scores - scores.max()) / self.temperature)
        return (z / z.sum()).astype(np.float32)


@register("prior.expert", "battle_prior")
def make_expert_prior(temperature: float = 10.0, plies: int = 2) -> ExpertPathPrior:
    """The expert's battle move scores as a softmax prior over the legal paths (temperature 10 units)."""
    return ExpertPathPrior(temperature=temperature, plies=plies)
