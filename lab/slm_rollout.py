"""``slm_rollout``: the ``rollout`` layout agent with the SLM proposing its candidates.

An experiment, not part of the installed packages (``lab/README.md``: what it measured). Importing
this module registers ``slm_rollout`` (and, through ``lab.rollout``, ``rollout`` and
``eval.rollout``): ``python cli.py arena --import lab.slm_rollout "slm_rollout:tree_from=120" expert``.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import Field, field_validator

from core.board import PHASE_LAYOUT
from core.notation import Move
from core.state import GameState
from knowledge.plugins import REGISTRY
from knowledge.registry import register
from lab.rollout import RolloutLayoutAgent, RolloutOptions
from nets.config import Precision
from search.agents import load_net, weights_path
from search.config import SearchConfig, plugin_spec_or_none
from search.mcts import blend_priors, normalised

__all__ = ["SlmRolloutLayoutAgent", "SlmRolloutOptions", "make_slm_rollout"]


class SlmRolloutLayoutAgent(RolloutLayoutAgent):
    """``slm_rollout``: the ``rollout`` agent with the SLM proposing its candidates (AlphaGo's split:
    the policy net proposes, rollouts judge; here without a tree, each candidate's rollouts replaying
    that placement under new seeds).

    A layout node's priors are the search's (:func:`search.mcts.blend_priors`): the SLM's policy over
    the legal placements raised to ``1 / policy_temperature``, blended with the ``layout_prior``
    plugin by ``layout_prior_mix``. Before layout ply ``from_ply`` it plays the placement with the
    highest prior; from it on, the ``top`` highest (``late_top`` from ``late_from`` on) are the
    candidates of :meth:`RolloutLayoutAgent.pick` (rollouts, halving round, ties to the higher prior).
    The battle is the expert's. :meth:`close` stops the SLM's evaluator. Options: :class:`SlmRolloutOptions`.
    """

    name = "slm_rollout"

    def __init__(self, seed: int, *, evaluator, policy_temperature: float, layout_prior, layout_prior_mix: float,
                 **rollout: Any):
        super().__init__(seed, **rollout)
        self.evaluator, self.policy_temperature = evaluator, float(policy_temperature)
        self.layout_prior, self.layout_prior_mix = layout_prior, float(layout_prior_mix)

    def priors(self, state: GameState) -> tuple[np.ndarray, np.ndarray]:
        """``(points int64[n], priors float64[n])`` over the legal placements of layout ``state``."""
        points = np.array(state.placements(), np.int64)
        policy = np.asarray(self.evaluator.evaluate([state])[0].policy, np.float64)[points]
        knowledge = None
        if self.layout_prior is not None and len(points):
            knowledge = normalised(np.asarray(self.layout_prior.prior(state), np.float64)[points])
        return points, np.asarray(blend_priors(policy, knowledge, self.policy_temperature, self.layout_prior_mix),
                                  np.float64)

    def candidates(self, state: GameState, count: int | None = None) -> np.ndarray:
        """``int64[k]``: the ``count`` (default :meth:`top_at`) legal placements with the highest
        :meth:`priors`, highest first (ties: lower point)."""
        points, p = self.priors(state)
        return points[np.argsort(-p, kind="stable")[: self.top_at(state.ply) if count is None else count]]

    def _select(self, state: GameState) -> Move:
        if state.phase == PHASE_LAYOUT and state.ply < self.from_ply:
            return Move((int(self.candidates(state)[0]),))
        return super()._select(state)

    def close(self) -> None:
        self.evaluator.close()


class SlmRolloutOptions(RolloutOptions):
    # RolloutOptions' field (default and bounds) with this agent's description: pydantic merges the two
    top: Annotated[int, RolloutOptions.model_fields["top"],
                   Field(description="the placements with the highest priors compared by rollouts")]
    slm: str | None = Field(None, description="SLM weights file (default: models/default/slm.safetensors)")
    policy_temperature: float = Field(SearchConfig.model_fields["policy_temperature"].default, ge=0.05, le=10,
                                      description="softmax temperature of the SLM's priors (< 1 sharpens, > 1 flattens)")
    layout_prior: str = Field("prior.expert_layout",
                              description="layout_prior plugin blended into the SLM's priors by layout_prior_mix, or none")
    layout_prior_mix: float = Field(0.3, ge=0, le=1,
                                    description="weight of layout_prior in the priors: (1 - w) SLM + w plugin")
    precision: Precision = Field("float32", description="net arithmetic: float32, bfloat16 or auto (nets.inference)")

    @field_validator("slm")
    @classmethod
    def _slm(cls, value: str | None) -> str | None:
        if value is not None and (not value or value.lower() == "none"):
            raise ValueError("must be a weights file (.safetensors)")
        return value

    @field_validator("layout_prior")
    @classmethod
    def _layout_prior(cls, value: str) -> str:
        return plugin_spec_or_none(value, "layout_prior")


@register("slm_rollout", "agent", options=SlmRolloutOptions)
def make_slm_rollout(o: SlmRolloutOptions) -> SlmRolloutLayoutAgent:
    """The SLM proposes (blended with a knowledge layout prior), expert rollouts judge; expert battle."""
    from nets.evaluator import NetEvaluator

    evaluator = NetEvaluator(load_net(weights_path(o.slm, "slm"), "slm"), None, clients=1, precision=o.precision)
    prior = None if o.layout_prior == "none" else REGISTRY.create(o.layout_prior, "layout_prior")
    return SlmRolloutLayoutAgent(o.seed, evaluator=evaluator, policy_temperature=o.policy_temperature,
                                 layout_prior=prior, layout_prior_mix=o.layout_prior_mix, **o.rollout_options())
