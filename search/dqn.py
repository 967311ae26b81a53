"""The ``dqn`` agent: greedy in a learned whole-move action value (papers/004 section 2.6, AlphaDou's
DQN baseline), in both phases.

``Q(s, a)`` is the ``q``-kind net (``nets.model.QNet``) on the afterstate of ``a`` from the mover's view
(``nets.qnet``): every candidate move of the position (every placement; every battle path, a
square-forming one once per victim set among the capture pruner's ``victim_sets`` best, so its square
victims are chosen by Q among those) is scored in one batch, and the agent plays the highest Q, ties
broken by its seeded generator. No search. The net is trained by ``python cli.py train-dqn``
(``train.learning.dqn``: double DQN, prioritized replay, a two-phase curriculum); the shipped one is
``models/dqn/dqn.safetensors`` (its model card: ``models/dqn/README.md``).

It lives in ``search`` with the other agents that load nets (``search.agents.load_net``: one cached
net per file and process), although it does not search.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from pydantic import Field, field_validator

from core.notation import Move
from core.state import GameState
from knowledge.agents import AgentOptions
from knowledge.pruning import CapturePruner
from knowledge.registry import NAMES_FILE, register
from nets.qnet import afterstate_planes, candidates, q_values
from search.agents import MODELS_DIR, load_net

DEFAULT_MODEL = MODELS_DIR / "dqn" / "dqn.safetensors"
TIE = 1e-6  # Q values this close to the best are ties (broken by the seeded generator)


class DqnAgent:
    """Plays ``argmax_a Q(s, a)`` over the candidate moves (module docstring); ``Agent`` protocol.

    ``net``: a ``QNet`` in eval mode; ``victim_sets``: capture-pruner sets scored per square-forming path
    (1: the pruner's best); ``batch``: positions per forward pass. :meth:`evaluate` exposes the
    candidates, their afterstate planes and Q values (the trainer's epsilon-greedy acting uses it)."""

    name = "dqn"

    def __init__(self, net, victim_sets: int = 4, batch: int = 256, seed: int = 0):
        self.net = net
        self.victim_sets, self.batch = int(victim_sets), int(batch)
        self.pruner = CapturePruner(top=max(self.victim_sets, 1))
        self.rng = np.random.default_rng(seed)
        self.last_think_time = 0.0

    def evaluate(self, state: GameState):
        """``(cands, planes, q)``: ``nets.qnet.Candidates`` of the non-terminal ``state``, their afterstate
        planes ``float32[n, 14, 14, 14]`` and ``Q float32[n]`` for the side to move."""
        cands = candidates(state, self.pruner, self.victim_sets)
        planes = afterstate_planes(state, cands)
        return cands, planes, q_values(self.net, planes, self.batch)

    def greedy(self, q: np.ndarray) -> int:
        """The index of the highest ``q``, ties (within :data:`TIE`) broken uniformly by the generator."""
        best = np.flatnonzero(q >= q.max() - TIE)
        return int(best[self.rng.integers(len(best))]) if len(best) > 1 else int(best[0])

    def select(self, state: GameState) -> Move:
        t0 = time.perf_counter()
        try:
            cands, _, q = self.evaluate(state)
            return cands.move(self.greedy(q))
        finally:
            self.last_think_time = time.perf_counter() - t0

    def __repr__(self) -> str:
        return f"<DqnAgent victim_sets={self.victim_sets}>"


class DqnOptions(AgentOptions):
    model: str = Field("models/dqn/dqn.safetensors", json_schema_extra=NAMES_FILE,
                       description="q-net weights file (train-dqn's dqn.safetensors); the default is the shipped one, "
                                   "found relative to the repository")
    victim_sets: int = Field(4, ge=1, le=64, description="square-forming paths: victim sets of prune.capture scored by Q (1: its best set)")
    batch: int = Field(256, ge=1, le=4096, description="afterstates per forward pass")

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a weights file (.safetensors)")
        return value


def model_path(value: str | Path) -> Path:
    """The weights file of option ``model``: the shipped default resolved relative to the repository (so
    it works from any directory), any other path as given; ``FileNotFoundError`` naming it when missing."""
    p = DEFAULT_MODEL if str(value) == DqnOptions.model_fields["model"].default else Path(value)
    if not p.exists():
        raise FileNotFoundError(f"dqn weights {p} not found (train them with `python cli.py train-dqn`, or pass model=PATH)")
    return p


@register("dqn", "agent", "AlphaDou's DQN baseline: greedy in a learned afterstate Q over every candidate move, both phases (no search)",
          options=DqnOptions)
def make_dqn(o: DqnOptions) -> DqnAgent:
    return DqnAgent(load_net(model_path(o.model), "q"), o.victim_sets, o.batch, o.seed)
