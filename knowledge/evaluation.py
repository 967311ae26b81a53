"""Static evaluations (kind ``evaluator``): ``eval.shape`` (shapes and material, papers/001 section
4.3, Eq. 9) and ``eval.expert`` (the expert agent's leaf evaluation, :class:`ExpertEvaluator`).

``eval.shape``. Per side ``p`` (shape counts from ``core.shapes.shape_counts``):

    score(s, p) = 7 c_chain + 3 c_gate + 4 c_square + material * n_p        (battle)
    score(s, p) = 7 c_chain + 3 c_gate + 4 c_square                         (layout)

- ``c_square``: the side's squares (cells with 4 own corners).
- ``c_gate``: the side's gates (cells with exactly 3 own corners and the 4th empty), open or not;
  papers/001 counts gates, not only open ones.
- ``c_chain``: the side's Dalians, counted as distinct ``(stone, empty neighbour)`` pairs of
  ``core.shapes.find_dalians`` (rule book section 5: a stone in one of the side's squares whose step to
  the empty neighbour forms a square). papers/001 literally defines ``c_chain`` as "the number of
  squares" (a misprint: that would make ``V_chain`` a copy of ``V_square``); the shuttle is what the
  paper's "chain" (da lian) means.
- material: ``material`` (default 1.0) per stone on the board. It enters only in the battle (in the
  layout White may lead by one placement, which is tempo, not material); the score difference thus
  carries ``material * (n_p - n_o)``. A square capture takes one stone, so one stone is worth a
  quarter of a square and a seventh of a Dalian, which keeps shapes dominant as in Eq. 9.

``value(s)`` for the side to move ``p`` against ``o``: ``tanh((score(s, p) - score(s, o)) / scale)``
with ``scale`` default 20 (about five squares or three Dalians of advantage give 0.76). Terminal
positions give the game result instead: +1 win, -1 loss, 0 draw for the side to move. The class,
``ShapeEvaluator``, lives in ``knowledge.formation`` (below the expert's layout scores, which use it).
"""

from __future__ import annotations

import math
import threading
from typing import Sequence

import numpy as np

from core.board import PHASE_BATTLE
from core.state import GameState
from knowledge.expert import default_knowledge
from knowledge.formation import V_CHAIN, V_GATE, V_SQUARE, ShapeEvaluator
from knowledge.registry import REGISTRY, register

@register("eval.shape", "evaluator")
def make_shape_evaluator(material: float = 1.0, scale: float = 20.0, chain: float = V_CHAIN, gate: float = V_GATE,
                         square: float = V_SQUARE) -> ShapeEvaluator:
    """papers/001 Eq. 9: 7 per Dalian, 3 per gate, 4 per square, plus material; tanh value."""
    return ShapeEvaluator(material=material, scale=scale, chain=chain, gate=gate, square=square)


class ExpertEvaluator:
    """``eval.expert``: the position value the expert's two-ply search uses at its leaves
    (``knowledge.expert.ExpertKnowledge.leaf_value``, kernel ``knowledge.expert_kernels.leaf_value``: material, each side's best capture next move, both sides'
    weighted Dalians, squares and gates; one stone = 10 units), as a value for a search.

    ``score(state, player)`` is that value of the position from ``player``'s point of view: the leaf is
    computed for the side to move (whose capture next move and lack of moves it weighs), and the other
    player's score is its negation, so scores are zero-sum. Battle only: the layout score is 0 (nothing
    can be captured there; ``eval.shape`` values layouts). ``value(state)`` for the side to move is
    ``tanh(score / scale)`` (``scale`` in the expert's units, default 40: a lead of three stones gives
    0.63), the game result in a terminal position, and 0 in the layout.

    ``plies=2`` values a position by the expert's own two-ply search from it instead of the static
    leaf: the best, over the expert's ``top`` candidate paths (one-ply score with the reply check), of
    the worst leaf value after the opponent's replies (``knowledge.expert_kernels.search_scores``, the
    expert agent's move choice; ``replies`` as the agent's; computed with its alpha cut,
    ``knowledge.expert.ExpertKnowledge.best_score`` of the shared ``default_knowledge()``, whose
    one-ply scores the search's ``prune.expert`` then reuses). A search using it sees two plies beyond each of its own leaves, at
    the cost of one expert decision per leaf. ``plies`` 1 or 2, ``top``
    1..1,000, ``replies`` 1..100,000, else ``ValueError``.
    """

    name = "eval.expert"

    def __init__(self, scale: float = 40.0, plies: int = 1, top: int = 8, replies: int = 48):
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"eval.expert: scale must be a finite number > 0, got {scale!r}")
        if plies not in (1, 2):
            raise ValueError(f"eval.expert: plies must be 1 or 2, got {plies!r}")
        if not 1 <= top <= 1000:
            raise ValueError(f"eval.expert: top must be in 1..1000, got {top!r}")
        if not 1 <= replies <= 100_000:
            raise ValueError(f"eval.expert: replies must be in 1..100000, got {replies!r}")
        self.scale = float(scale)
        self.plies, self.top, self.replies = int(plies), int(top), int(replies)
        self.knowledge = default_knowledge()

    def score(self, state: GameState, player: int) -> float:
        if player not in (0, 1):
            raise ValueError(f"eval.expert: player must be 0 (White) or 1 (Black), got {player!r}")
        if state.phase != PHASE_BATTLE:
            return 0.0
        me = state.side
        if self.plies == 2 and state.paths().m > 0:
            v = self.knowledge.best_score(state, self.top, self.replies)
        else:
            v = self.knowledge.leaf_value(state)
        return v if player == me else -v

    def margin(self, state: GameState) -> float:
        """The side to move's advantage in the expert's units (``score(state, state.side)``; 0 in the
        layout); ``value`` is ``tanh(margin / scale)`` outside terminal positions."""
        return self.score(state, state.side)

    def value(self, state: GameState) -> float:
        if state.phase != PHASE_BATTLE:
            return 0.0
        if state.is_terminal():
            return state.returns()[state.side]
        return math.tanh(self.margin(state) / self.scale)


@register("eval.expert", "evaluator")
def make_expert_evaluator(scale: float = 40.0, plies: int = 1, top: int = 8, replies: int = 48) -> ExpertEvaluator:
    """The expert's leaf evaluation (material, capture threats, shapes) as a tanh value; battle only;
    plies=2: the value of the expert's two-ply search from the position."""
    return ExpertEvaluator(scale=scale, plies=plies, top=top, replies=replies)


class EvaluatorVictimScorer:
    """An ``evaluator`` plugin as a victim scorer (``nets.evaluator.VictimScorer``): the Q of a
    candidate set is minus the plugin's ``value`` of the position after the whole move (the opponent
    moves there), so the best Q is the set that leaves the opponent worst off. The knowledge
    counterpart of the lower DQN (``jfa:victim_eval=eval.expert:plies=2``), and the target
    ``selfplay.lower_eval`` trains that net towards. ``q_values(states_after, upper_actions)`` ->
    ``float32 (N,)`` in ``[-1, 1]``; the actions are not used (their count must match, else
    ``ValueError``). Calls are serialised by a lock (the expert's search is not shared between
    threads)."""

    def __init__(self, evaluator):
        self.evaluator = evaluator
        self.name = f"victims:{getattr(evaluator, 'name', 'evaluator')}"
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, spec: str) -> "EvaluatorVictimScorer":
        """The scorer of the ``evaluator`` plugin ``spec`` (``NAME[:k=v]``); raises
        ``knowledge.registry.SpecError`` for an unknown name or option. The plugin's module must have
        been imported (``knowledge.plugins`` or ``catalog``: ``eval.rollout`` registers in
        ``knowledge.agents``, which this module cannot import)."""
        return cls(REGISTRY.create(spec, "evaluator"))

    def q_values(self, states_after: Sequence[GameState], upper_actions: Sequence[int]) -> np.ndarray:
        states_after = list(states_after)
        if len(states_after) != len(upper_actions):
            raise ValueError(f"q_values: {len(states_after)} states but {len(upper_actions)} upper actions")
        with self._lock:
            return np.array([-self.evaluator.value(s) for s in states_after], np.float32)
