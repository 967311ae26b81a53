"""Perft: the number of leaf nodes of the full-move tree to a given depth (python-chess style).

Every victim set is a separate move. A terminal node before the last ply contributes no leaves;
``perft(s, 0) == 1``. The last ply is counted without playing it (``GameState.count_moves``).
Depth is bounded to ``0..MAX_DEPTH`` (64: the layout alone offers up to 194 placements per ply, so
counts that deep are out of reach anyway, and the recursion stays far below Python's limit). Bad
depths raise ``JiuError``.
"""

from __future__ import annotations

from core.errors import JiuError
from core.state import GameState

MAX_DEPTH = 64


def _check_depth(depth: int, low: int, what: str) -> None:
    if not low <= depth <= MAX_DEPTH:
        raise JiuError(f"{what} {depth}: out of range {low}..{MAX_DEPTH}")


def perft(state: GameState, depth: int) -> int:
    """Leaf count of the move tree of ``state`` to ``depth`` plies (``depth >= 0``)."""
    _check_depth(depth, 0, "perft depth")
    return _perft(state, depth)


def _perft(state: GameState, depth: int) -> int:
    if depth == 0:
        return 1
    if state.is_terminal():
        return 0
    if depth == 1:
        return state.count_moves()
    return sum(_perft(state._play(m), depth - 1) for m in state.legal_moves())


def perft_divide(state: GameState, depth: int) -> dict[str, int]:
    """Per-move split of ``perft(state, depth)`` (``depth >= 1``): move notation -> leaf count."""
    _check_depth(depth, 1, "perft divide depth")
    if state.is_terminal():
        return {}
    return {str(m): _perft(state._play(m), depth - 1) for m in state.legal_moves()}
