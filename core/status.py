"""Terminal test and winner for battle positions (rule book section 3.4), as one kernel.

Checked for the side to move at the start of its turn, decisive ends before draws (as in chess,
where mate on the move that reaches the move limit still wins):

1. fewer than ``loss_below`` stones: the side to move loses; otherwise, if the opponent has fewer
   (only possible in a hand-made position), the opponent loses;
2. no legal move: the side to move loses;
3. the ``repetition_draw``-th occurrence of (board, side to move) in the battle: draw;
4. ``ply - 196 >= max_battle_plies``: draw, or by stone count with ``adjudicate = "stones"``.

With ``end_order = "cap-first"`` the ply cap (4) is checked before everything else.

Layout positions are never terminal.
"""

from __future__ import annotations

from core.board import DRAW, NUM_POINTS
from core.jit import kernel
from core.rules import R_ADJUDICATE, R_END_ORDER, R_LOSS_BELOW, R_MAX_BATTLE_PLIES, R_REPETITION_DRAW

# End reasons (index into END_REASONS).
ONGOING, END_STONES, END_NO_MOVE, END_REPETITION, END_PLY_CAP = range(5)
END_REASONS = ("ongoing", "stones", "no-move", "repetition", "ply-cap")


@kernel
def repetitions(history, n):
    """How often ``history[n-1]`` (the current position's hash) occurs in ``history[:n]``."""
    count = 0
    h = history[n - 1]
    for i in range(n):
        if history[i] == h:
            count += 1
    return count


@kernel
def _ply_cap(counts, ply, rules):
    """``(reason, winner)`` of the ply cap if it is reached, else ``(ONGOING, -2)``."""
    if ply - NUM_POINTS < rules[R_MAX_BATTLE_PLIES]:
        return ONGOING, -2
    if rules[R_ADJUDICATE] != 0 and counts[0] != counts[1]:
        return END_PLY_CAP, 0 if counts[0] > counts[1] else 1
    return END_PLY_CAP, DRAW


@kernel
def battle_status(side, counts, ply, history, n_history, has_move, rules):
    """``(reason, winner)`` of a battle position: ``reason`` is ``ONGOING`` or an ``END_*`` code;
    ``winner`` is 0 White, 1 Black, ``DRAW`` (-1), or -2 while ongoing.

    ``counts`` ``int[2]`` stones per player; ``history`` ``uint64[>=n_history]`` the hashes of the
    battle positions since the last capture, the current one last (``n_history >= 1``);
    ``has_move``: whether the side to move has a legal path (``movegen.has_battle_move``).
    """
    if rules[R_END_ORDER] != 0:
        reason, winner = _ply_cap(counts, ply, rules)
        if reason != ONGOING:
            return reason, winner
    own = counts[side]
    opp = counts[1 - side]
    if own < rules[R_LOSS_BELOW]:
        return END_STONES, 1 - side
    if opp < rules[R_LOSS_BELOW]:
        return END_STONES, side
    if not has_move:
        return END_NO_MOVE, 1 - side
    rep = rules[R_REPETITION_DRAW]
    if rep > 0 and repetitions(history, n_history) >= rep:
        return END_REPETITION, DRAW
    return _ply_cap(counts, ply, rules)
