"""Perft: the number of leaf nodes of the full-move tree to a given depth (python-chess style).

Every victim set is a separate move. A terminal node before the last ply contributes no leaves;
``perft(s, 0) == 1``. The last ply is counted without playing it (``GameState.count_moves``).
"""

from __future__ import annotations

from core.state import GameState


def perft(state: GameState, depth: int) -> int:
    """Leaf count of the move tree of ``state`` to ``depth`` plies (``depth >= 0``)."""
    if depth < 0:
        raise ValueError(f"perft depth {depth}: must be >= 0")
    if depth == 0:
        return 1
    if state.is_terminal():
        return 0
    if depth == 1:
        return state.count_moves()
    return sum(perft(state._play(m), depth - 1) for m in state.legal_moves())


def perft_divide(state: GameState, depth: int) -> dict[str, int]:
    """Per-move split of ``perft(state, depth)`` (``depth >= 1``): move notation -> leaf count."""
    if depth < 1:
        raise ValueError(f"perft divide depth {depth}: must be >= 1")
    if state.is_terminal():
        return {}
    return {str(m): perft(state._play(m), depth - 1) for m in state.legal_moves()}
