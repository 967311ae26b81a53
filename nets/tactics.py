"""Fixed tactical input planes, computed from the stone planes inside a net (``NetConfig.tactics``).

A net sees the board as stones (``nets.features``); what the next move can capture it has to work
out through its convolutions, and a small net trained on a few thousand positions does not
(docs/training.md, "The lower DQN's own self-play"). With ``NetConfig.tactics`` the trunk's input adds
:data:`NUM_TACTIC_PLANES` planes that say it directly, computed by :func:`tactic_planes` from planes
0-2 and 5-6 of ``nets.features`` (so they follow the board symmetries with them and need no storage):

====  ===============================================================================
 #    plane (side to move = "own", as in ``nets.features``)
====  ===============================================================================
 0    own squares formed by moving into this empty point (rule book 3.3): a step from a neighbour
      that is not a corner of the square, the most over the own neighbours, / 2; a flying side
      (plane 5): every cell around the point whose three other corners are own, / 4
 1    the same for the opponent (flying: plane 6)
 2    own stones the opponent can take by a single jump (an opponent stone beside it and the point
      beyond it empty), 0 or 1
 3    opponent stones a single own jump can take, 0 or 1
 4    own cells around this empty point whose three other corners are own (the "gates" a stone
      still has to reach), / 4
 5    the same for the opponent
====  ===============================================================================

They are approximations for a net to learn from, not rules: a jump chain's later hops, the flying
stage's jump restriction (``fly_jump_rule``) and a flight's origin inside a cell are not seen. The
slow reference ``tests/test_tactics.py`` computes each plane point by point from the board.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

NUM_TACTIC_PLANES = 6
_OWN, _OPP, _EMPTY, _OWN_FLY, _OPP_FLY = 0, 1, 2, 5, 6


def _shift(x: torch.Tensor, dr: int, dk: int) -> torch.Tensor:
    """``y[..., r, k] = x[..., r + dr, k + dk]`` (0 off the board), for ``|dr|, |dk| <= 2``."""
    p = 2
    padded = F.pad(x, (p, p, p, p))
    h, w = x.shape[-2:]
    return padded[..., p + dr:p + dr + h, p + dk:p + dk + w]


def _cell_complete(x: torch.Tensor, dr: int, dk: int) -> torch.Tensor:
    """1 where the three corners other than the point of the cell spanning rows ``r, r + dr`` and
    columns ``k, k + dk`` are stones of ``x`` (a cell off the board: 0)."""
    return _shift(x, dr, 0) * _shift(x, 0, dk) * _shift(x, dr, dk)


def _move_in_squares(x: torch.Tensor, flying: torch.Tensor, empty: torch.Tensor):
    """``(formed, gates)`` for the side whose stones are ``x`` ``(B, 14, 14)``: plane 0 / 4 of the module
    docstring (unscaled counts)."""
    cells = {(dr, dk): _cell_complete(x, dr, dk) for dr in (-1, 1) for dk in (-1, 1)}
    gates = sum(cells.values())
    best = torch.zeros_like(x)
    # a step from the neighbour on the far side of a row (column) forms the two cells on the near side
    for dr in (-1, 1):  # the mover at (r - dr, k): the cells towards row r + dr
        best = torch.maximum(best, _shift(x, -dr, 0) * (cells[(dr, -1)] + cells[(dr, 1)]))
    for dk in (-1, 1):  # the mover at (r, k - dk): the cells towards column k + dk
        best = torch.maximum(best, _shift(x, 0, -dk) * (cells[(-1, dk)] + cells[(1, dk)]))
    fly = flying[:, None, None]
    formed = (1 - fly) * best / 2 + fly * gates / 4
    return formed * empty, gates * empty / 4


def _jumpable(x: torch.Tensor, y: torch.Tensor, empty: torch.Tensor) -> torch.Tensor:
    """1 on each stone of ``x`` that a stone of ``y`` beside it can jump into the empty point beyond."""
    out = torch.zeros_like(x)
    for dr, dk in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        out = torch.maximum(out, _shift(y, -dr, -dk) * _shift(empty, dr, dk))
    return out * x


def tactic_planes(planes: torch.Tensor) -> torch.Tensor:
    """The tactical planes of the module docstring: ``planes`` ``(B, >=7, 14, 14)`` float (the
    ``nets.features`` planes) -> ``(B, NUM_TACTIC_PLANES, 14, 14)`` of its dtype, values in [0, 1]."""
    x = planes.float()
    own, opp, empty = x[:, _OWN], x[:, _OPP], x[:, _EMPTY]
    own_fly, opp_fly = x[:, _OWN_FLY, 0, 0], x[:, _OPP_FLY, 0, 0]
    own_formed, own_gates = _move_in_squares(own, own_fly, empty)
    opp_formed, opp_gates = _move_in_squares(opp, opp_fly, empty)
    out = torch.stack((own_formed, opp_formed, _jumpable(own, opp, empty), _jumpable(opp, own, empty),
                       own_gates, opp_gates), dim=1)
    return out.to(planes.dtype)
