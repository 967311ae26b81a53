"""Game analysis with the search: the engine's evaluation of each position and of each move played.

Values are the search's root value for the side to move, in ``[-1, 1]`` (+1 a sure win); a win
probability is ``(value + 1) / 2``. For move ``i`` (played by side ``s`` from position ``i``):

- ``value_before``: the search's value of position ``i`` for ``s``;
- ``value_after``: the value of position ``i + 1`` for ``s`` (the searched value, negated when the
  other side moves there; the game result when it is terminal). After the last placement the same
  side moves again (Black places last and moves first in the battle), so no negation there;
- ``loss`` = ``max(0, value_before - value_after)``, and 0 when the move played is the search's
  preferred one (both searches are noisy; the preferred move loses nothing by definition);
- ``label``: ``"blunder"`` when ``loss >= blunder``, ``"mistake"`` when ``loss >= mistake``, else ``None``.
  Defaults 0.4 and 0.2 in value units (20 and 10 points of win probability).

Each position is searched once (``len(moves) + 1`` searches, none for terminal positions), so a
game of about 500 plies at 8 simulations takes a few seconds with ``mcts`` and longer with the nets.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from core.board import WHITE
from core.state import GameState
from search.agents import searching_agent, think
from search.mcts import SearchResult, terminal_value

MISTAKE = 0.2
BLUNDER = 0.4


def top_candidates(result: SearchResult, k: int = 3) -> list[dict[str, Any]]:
    """The ``k`` most visited root moves (ties: higher prior), each ``{"move", "visits", "q", "prior"}``:
    visits N (int), Q the mean value for the side to move (``None`` if unvisited), P the prior."""
    import numpy as np

    order = np.lexsort((-result.priors, -result.visits))[:k]
    out = []
    for i in order:
        q = float(result.q[i])
        out.append({"move": str(result.moves[i]), "visits": int(result.visits[i]),
                    "q": None if q != q else round(q, 4), "prior": round(float(result.priors[i]), 4)})
    return out


def evaluate_position(agent, state: GameState, simulations: int | None = None, seconds: float | None = None,
                      stop: threading.Event | None = None, top: int = 3, pv: int = 0) -> dict[str, Any]:
    """The search's view of ``state``: ``{"value", "best", "candidates", "pv", "simulations"}`` with
    ``value`` for the side to move, ``best`` the move the agent plays (notation), ``candidates`` the
    ``top`` most visited moves (:func:`top_candidates`), ``pv`` up to ``pv`` moves of the main line.
    A terminal state gets its result as value and ``best`` ``None``. Raises ``ValueError`` when the
    agent does not search in this phase (e.g. ``random``, or the expert half of ``slm``)."""
    if state.is_terminal():
        return {"value": terminal_value(state), "best": None, "candidates": [], "pv": [], "simulations": 0}
    searcher = searching_agent(agent, state)
    if searcher is None:
        raise ValueError(f"agent {getattr(agent, 'name', agent)!r} does not search in the "
                         f"{'layout' if state.phase == 0 else 'battle'}; analysis needs a search agent (mcts, jfa)")
    move, result = think(searcher, state, simulations, seconds, stop)
    line = [str(m) for m in searcher.search.principal_variation(pv)] if pv else []
    return {"value": round(float(result.value), 4), "best": str(move), "candidates": top_candidates(result, top),
            "pv": line, "simulations": int(result.simulations)}


def classify(loss: float, mistake: float = MISTAKE, blunder: float = BLUNDER) -> str | None:
    """``"blunder"``, ``"mistake"`` or ``None`` for a value loss (module docstring)."""
    if loss >= blunder:
        return "blunder"
    if loss >= mistake:
        return "mistake"
    return None


def move_row(ply: int, before_state: GameState, after_state: GameState, move: str, before: dict, after: dict,
             mistake: float = MISTAKE, blunder: float = BLUNDER) -> dict[str, Any]:
    """The analysis of one move from the evaluations of the positions before and after it (module
    docstring); ``ply`` is 1-based. ``white_win`` is White's win probability after the move."""
    mover = before_state.side
    v_before = before["value"]
    v_after = after["value"] if after_state.side == mover else -after["value"]
    loss = 0.0 if move == before["best"] else max(0.0, v_before - v_after)
    white_after = v_after if mover == WHITE else -v_after
    return {"ply": ply, "side": "wb"[mover], "move": move, "best": before["best"],
            "value_before": round(v_before, 4), "value_after": round(v_after, 4), "loss": round(loss, 4),
            "label": classify(loss, mistake, blunder), "white_win": round((white_after + 1) / 2, 4),
            "candidates": before["candidates"]}


def analyze_game(states: list[GameState], moves: list[str], agent, simulations: int | None = None,
                 seconds: float | None = None, mistake: float = MISTAKE, blunder: float = BLUNDER,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Analyse a replayed game: ``states`` (``len(moves) + 1`` of them, as ``GameRecord.replay`` gives)
    and its ``moves`` (notation). Returns ``{"moves": [move_row...], "summary": {"w"|"b": {"mistakes",
    "blunders", "mean_loss", "moves"}}, "thresholds": {...}, "simulations", "seconds"}``.
    ``progress(done, total)`` is called after each position. Raises ``ValueError`` as
    :func:`evaluate_position` does, or when ``mistake > blunder``."""
    if len(states) != len(moves) + 1:
        raise ValueError(f"analysis: {len(states)} states for {len(moves)} moves")
    if not 0 < mistake <= blunder:
        raise ValueError(f"analysis: thresholds mistake={mistake} and blunder={blunder}: need 0 < mistake <= blunder")
    evals = []
    for i, state in enumerate(states):
        evals.append(evaluate_position(agent, state, simulations, seconds))
        if progress is not None:
            progress(i + 1, len(states))
    rows = [move_row(i + 1, states[i], states[i + 1], moves[i], evals[i], evals[i + 1], mistake, blunder)
            for i in range(len(moves))]
    summary = {}
    for side in "wb":
        mine = [r for r in rows if r["side"] == side]
        summary[side] = {"moves": len(mine),
                         "mistakes": sum(r["label"] == "mistake" for r in mine),
                         "blunders": sum(r["label"] == "blunder" for r in mine),
                         "mean_loss": round(sum(r["loss"] for r in mine) / len(mine), 4) if mine else 0.0}
    start_value = evals[0]["value"] if states[0].side == WHITE else -evals[0]["value"]
    return {"moves": rows, "summary": summary, "start_white_win": round((start_value + 1) / 2, 4),
            "thresholds": {"mistake": mistake, "blunder": blunder},
            "simulations": simulations, "seconds": seconds}
