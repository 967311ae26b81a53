"""Squares formed in self-play (papers/001 and 003, Table 2 and Fig. 5): how fast an agent learns to
build squares, measured per block of self-play steps.

A *run* is ``steps`` plies of self-play by one agent playing both sides, from the initial position (a
game that ends before ``steps`` is followed by a new one; the layout alone is 196 plies). A step's
*squares formed* are the cells (``core.shapes.find_squares``) whose four corners hold the mover's
stones after the move and did not before, so a placement forms 0-4 squares and a battle move those
it completes. The papers count "squares per 20 steps over 200 steps of self-play training" without
defining a step or a square count further; this is the reading used here (and stated in the
experiment's table).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from core.rules import DEFAULT_RULESET, Ruleset
from core.shapes import find_squares
from core.state import GameState


def new_squares(before: GameState, after: GameState) -> int:
    """Squares of ``before``'s side to move present in ``after`` and not in ``before`` (int >= 0): for a
    placement too, where ``knowledge.rewards.squares_formed`` (the ``nsq`` of a battle path) has none."""
    mover = before.side
    old = set(find_squares(before.board, mover).tolist())
    return sum(1 for c in find_squares(after.board, mover).tolist() if c not in old)


def selfplay_squares(agent_spec: str, steps: int = 200, bin_steps: int = 20, seed: int = 0,
                     ruleset: Ruleset = DEFAULT_RULESET) -> dict[str, Any]:
    """One run (module docstring) of the agent ``agent_spec`` seeded with ``seed``: ``{"seed", "steps",
    "bin_steps", "bins": [squares formed in steps 1-20, 21-40, ...] (ints, ceil(steps / bin_steps)
    of them), "total", "games"}`` (``games``: games started). ``ValueError`` for ``steps`` or
    ``bin_steps`` < 1; agent spec errors as ``train.matches.arena.build_agent``."""
    from train.matches.arena import build_agent

    if steps < 1 or bin_steps < 1:
        raise ValueError(f"steps and bin_steps must be >= 1, got {steps} and {bin_steps}")
    agent = build_agent(agent_spec, seed=seed)
    bins = [0] * math.ceil(steps / bin_steps)
    games = 1
    state = GameState.initial(ruleset)
    try:
        for step in range(steps):
            if state.is_terminal():
                state, games = GameState.initial(ruleset), games + 1
            after = state.apply(agent.select(state))
            bins[step // bin_steps] += new_squares(state, after)
            state = after
    finally:
        close = getattr(agent, "close", None)
        if callable(close):
            close()
    return {"seed": seed, "steps": steps, "bin_steps": bin_steps, "bins": bins, "total": sum(bins), "games": games}


def squares_stats(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean and standard error over runs: ``{"runs", "bins": [mean per bin], "bins_se": [...],
    "total": mean total, "total_se", "total_ci95": [lo, hi] (normal)}``; ``se`` is ``None`` with one
    run, every number ``None`` with none."""
    n = len(runs)
    if n == 0:
        return {"runs": 0, "bins": [], "bins_se": [], "total": None, "total_se": None, "total_ci95": None}
    b = np.array([r["bins"] for r in runs], np.float64)
    t = b.sum(axis=1)

    def se(x: np.ndarray):
        return (x.std(axis=0, ddof=1) / math.sqrt(n)) if n > 1 else None

    bins_se = se(b)
    total_se = se(t)
    mean = float(t.mean())
    return {"runs": n, "bins": b.mean(axis=0).tolist(),
            "bins_se": bins_se.tolist() if bins_se is not None else [None] * b.shape[1],
            "total": mean, "total_se": None if total_se is None else float(total_se),
            "total_ci95": None if total_se is None else [mean - 1.96 * float(total_se), mean + 1.96 * float(total_se)]}
