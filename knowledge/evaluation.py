"""Static evaluation from shapes and material (papers/001 section 4.3, Eq. 9).

``eval.shape`` (kind ``evaluator``). Per side ``p`` (shape counts from ``core.shapes.shape_counts``):

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
positions give the game result instead: +1 win, -1 loss, 0 draw for the side to move.
"""

from __future__ import annotations

import math

from core.board import DRAW, PHASE_BATTLE
from core.shapes import shape_counts
from core.state import GameState
from knowledge.registry import register

V_CHAIN = 7.0
V_GATE = 3.0
V_SQUARE = 4.0


class ShapeEvaluator:
    """``eval.shape``: papers/001 Eq. 9 shape feedback plus material (module docstring).

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

    def value(self, state: GameState) -> float:
        p = state.side
        if state.phase == PHASE_BATTLE and state.is_terminal():
            w = state.winner()
            return 0.0 if w == DRAW else (1.0 if w == p else -1.0)
        return math.tanh((self.score(state, p) - self.score(state, 1 - p)) / self.scale)


@register("eval.shape", "evaluator")
def make_shape_evaluator(material: float = 1.0, scale: float = 20.0, chain: float = V_CHAIN, gate: float = V_GATE,
                         square: float = V_SQUARE) -> ShapeEvaluator:
    """papers/001 Eq. 9: 7 per Dalian, 3 per gate, 4 per square, plus material; tanh value."""
    return ShapeEvaluator(material=material, scale=scale, chain=chain, gate=gate, square=square)
