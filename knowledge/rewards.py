"""Reward plugins for training (JFA section 3.4): the auxiliary agent plays the game on.

- ``reward.first_square`` (kind ``reward``): from a position at the end of the layout (or any
  battle position; a layout position is first completed by the same agent), the auxiliary agent
  (``expert`` by default) plays the battle for **both** sides. The side that makes the first move
  forming at least one square (``nsq >= 1`` at the destination, rule book 3.3) gets +1, the other -1.
  If no square is formed within ``max_plies`` battle plies (default 200) the rewards are 0, 0. If the
  game ends before any square is formed (jump captures below ``loss_below``, no move, repetition or
  the ply cap of the ruleset), the game result is returned instead (+1/-1, or 0/0 for a draw): a win
  is worth at least as much as a first square.
- ``reward.outcome`` (kind ``reward``): plays the game out with the auxiliary agent (both sides,
  layout included when needed) and returns the result (+1/-1, 0/0 for a draw); a terminal state gives
  its result directly. The ruleset's ``max_battle_plies`` bounds the game.

- ``reward.shape`` (kind ``reward``): ShapeAgent's reward (JFA section 4.2, papers/001 Eq. 9): at the
  end of the layout (a layout position is first completed by the agent), the formation evaluation
  ``eval.shape`` without material, ``tanh((score(White) - score(Black)) / scale)`` for White and its
  negation for Black. ``python cli.py selfplay --model slm --reward reward.shape`` trains an SLM-kind
  net for the ``shape`` agent (``shape:net=PATH``).

``rewards(state, seed)`` seeds the agent with ``seed`` (ties and optional noise), so a reward is
deterministic for a state and a seed. After a call, ``last_moves`` lists the moves the auxiliary agent
chose from ``state`` (for ``reward.first_square`` the square-forming move is the last one), so that a
self-play record can continue the very game that produced the reward. Options: ``agent`` (an agent spec for the auxiliary agent,
default ``"expert"``; ``LAYOUT+BATTLE`` specs work too).
"""

from __future__ import annotations

import numpy as np

from core.board import PHASE_LAYOUT, WHITE
from core.movegen import find_path
from core.state import GameState
from knowledge.agents import finish_layout, make_agent
from knowledge.formation import ShapeEvaluator
from knowledge.registry import register


def squares_formed(state: GameState, move) -> int:
    """Squares the (legal battle) ``move`` forms at its destination in ``state`` (``nsq`` of its path)."""
    ps = state.paths()
    i = find_path(ps.pts, ps.off, ps.jump, ps.m, np.asarray(move.path, np.int16), int(move.jump))
    return int(ps.nsq[i]) if i >= 0 else 0


class FirstSquareReward:
    """``reward.first_square`` (module docstring). Options: ``max_plies`` (default 200), ``agent``."""

    name = "reward.first_square"

    def __init__(self, max_plies: int = 200, agent: str = "expert"):
        if int(max_plies) < 1:
            raise ValueError(f"reward.first_square: max_plies must be >= 1, got {max_plies!r}")
        self.max_plies, self.agent = int(max_plies), str(agent)
        self.last_plies = 0  # battle plies played by the latest call (for statistics)
        self.last_moves: list = []  # the moves chosen from the latest call's state (module docstring)

    def rewards(self, state: GameState, seed: int = 0) -> tuple[float, float]:
        agent = make_agent(self.agent, seed)
        self.last_moves = []
        s = finish_layout(state, agent, self.last_moves)
        self.last_plies = 0
        for _ in range(self.max_plies):
            if s.is_terminal():
                return s.returns()
            move = agent.select(s)
            self.last_moves.append(move)
            if squares_formed(s, move) > 0:
                return (1.0, -1.0) if s.side == WHITE else (-1.0, 1.0)
            s = s._play(move)
            self.last_plies += 1
        return (0.0, 0.0)


class OutcomeReward:
    """``reward.outcome`` (module docstring). Option: ``agent`` (default ``"expert"``)."""

    name = "reward.outcome"

    def __init__(self, agent: str = "expert"):
        self.agent = str(agent)
        self.last_state: GameState | None = None  # the final position of the latest call
        self.last_moves: list = []  # the moves chosen from the latest call's state

    def rewards(self, state: GameState, seed: int = 0) -> tuple[float, float]:
        s = state
        self.last_moves = []
        if not (s.phase != PHASE_LAYOUT and s.is_terminal()):
            agent = make_agent(self.agent, seed)
            s = finish_layout(s, agent, self.last_moves)
            while not s.is_terminal():
                move = agent.select(s)
                self.last_moves.append(move)
                s = s._play(move)
        self.last_state = s
        return s.returns()


class ShapeReward:
    """``reward.shape`` (module docstring). Options: ``scale`` (tanh scale, default 20 as ``eval.shape``),
    ``agent`` (completes a layout position, default ``"expert"``)."""

    name = "reward.shape"

    def __init__(self, scale: float = 20.0, agent: str = "expert"):
        self.evaluator = ShapeEvaluator(material=0.0, scale=scale)
        self.agent = str(agent)
        self.last_moves: list = []  # the placements chosen to complete a layout position (no battle)

    def rewards(self, state: GameState, seed: int = 0) -> tuple[float, float]:
        self.last_moves = []
        s = finish_layout(state, make_agent(self.agent, seed), self.last_moves) if state.phase == PHASE_LAYOUT else state
        e = self.evaluator
        v = float(np.tanh((e.score(s, WHITE) - e.score(s, 1 - WHITE)) / e.scale))
        return (v, -v)


@register("reward.shape", "reward")
def make_shape_reward(scale: float = 20.0, agent: str = "expert") -> ShapeReward:
    """ShapeAgent (JFA 4.2): the formation evaluation (papers/001 Eq. 9) at the end of the layout."""
    return ShapeReward(scale=scale, agent=agent)


@register("reward.first_square", "reward")
def make_first_square(max_plies: int = 200, agent: str = "expert") -> FirstSquareReward:
    """JFA 3.4: the auxiliary agent plays both sides; +1 to the first side forming a square."""
    return FirstSquareReward(max_plies=max_plies, agent=agent)


@register("reward.outcome", "reward")
def make_outcome(agent: str = "expert") -> OutcomeReward:
    """The game result after the auxiliary agent plays the game out for both sides."""
    return OutcomeReward(agent=agent)
