"""Whole-move action values as afterstate values, for the ``dqn`` agent (papers/004 section 2.6).

The AlphaDou DQN outputs one Q per entry of a fixed action space. Jiu's full moves (path plus square
victims) do not fit one (flights alone are 38,416 paths, and each square-forming path has as many moves
as victim sets), so here ``Q(s, a) = q_theta(x(s, a))``: the value of the *afterstate* ``x(s, a)``, the
position after ``a``, encoded from the mover's view, and one batched pass of ``nets.model.QNet`` scores
every candidate move of a position.

Candidates (:func:`candidates`): in the layout every legal placement; in the battle every legal path,
a square-forming path once per victim set among the capture pruner's (``prune.capture``, JFA Eq. 9) best
``victim_sets`` sets, so the victims are chosen by Q among those (``victim_sets=1``: the pruner's best
set, nothing to choose).

Afterstate planes (:func:`afterstate_planes`): ``nets.features.encode_planes`` of the position after the
move (``core.play.play``: stones, counts, quiet plies, ply; the last placement's centre-stone removal),
with "own" = the **mover** (plane 3: the mover is Black), planes 7-9 the move itself (origin, destination,
jump and square victims), quiet plies and battle progress after it. (The side to move of an afterstate
is the mover's opponent, except after the last placement: Black places it and makes the first battle
move; plane 4 tells the net that the battle starts.)

Replay storage (:func:`pack_planes`, :func:`unpack_planes`): planes 0-9 are 0/1 and planes 10-13
constant over the board, so a plane stack packs losslessly into :data:`PACKED_BYTES` bits plus
:data:`PACKED_SCALARS` floats.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from core.board import NUM_POINTS, PHASE_LAYOUT, SIZE
from core.jit import kernel
from core.notation import Move
from core.play import play
from core.state import GameState
from nets.features import NUM_PLANES, encode_planes

BINARY_PLANES = 10  # planes 0-9 of nets.features are 0/1
PACKED_BYTES = (BINARY_PLANES * NUM_POINTS + 7) // 8  # 245
PACKED_SCALARS = NUM_PLANES - BINARY_PLANES  # planes 10-13: one value each


class Candidates(NamedTuple):
    """The candidate moves of a position in CSR arrays (``n`` moves): move ``i``'s path is
    ``pts[off[i]:off[i+1]]`` (``int16``; a placement is one point), ``jump[i]`` its jump flag (``int8``),
    its square victims ``vic[voff[i]:voff[i+1]]`` (``int16``, ascending)."""

    n: int
    pts: np.ndarray
    off: np.ndarray
    jump: np.ndarray
    vic: np.ndarray
    voff: np.ndarray

    def move(self, i: int) -> Move:
        """Candidate ``i`` as a ``core.notation.Move``."""
        path = tuple(int(p) for p in self.pts[self.off[i]:self.off[i + 1]])
        return Move(path, bool(self.jump[i]), tuple(int(v) for v in self.vic[self.voff[i]:self.voff[i + 1]]))


def candidates(state: GameState, pruner, victim_sets: int) -> Candidates:
    """The candidate moves of the non-terminal ``state`` (module docstring): every placement, or every
    legal path with each of the first ``victim_sets`` (>= 1) victim sets of ``pruner`` (a capture pruner,
    ``knowledge.protocols.VictimRanker``) for a square-forming path. Empty for a terminal state."""
    if state.phase == PHASE_LAYOUT:
        pts = np.asarray(state.placements(), np.int16)
        n = len(pts)
        return Candidates(n, pts, np.arange(n + 1, dtype=np.int64), np.zeros(n, np.int8), np.empty(0, np.int16),
                          np.zeros(n + 1, np.int64))
    ps = state.paths()
    n_opp = state.counts[1 - state.side]
    rows, vics = [], []  # (path index, victims) per candidate
    for i in range(ps.m):
        hops = int(ps.off[i + 1] - ps.off[i] - 1) if ps.jump[i] else 0
        if ps.nsq[i] > 0 and n_opp - hops > 0:
            sets, _ = pruner.candidates(state, ps.path(i), bool(ps.jump[i]))
            for s in sets[:victim_sets]:
                rows.append(i)
                vics.append(s)
        else:
            rows.append(i)
            vics.append(())
    idx = np.asarray(rows, np.int64)
    lengths = (ps.off[idx + 1] - ps.off[idx]).astype(np.int64)
    off = np.zeros(len(idx) + 1, np.int64)
    np.cumsum(lengths, out=off[1:])
    pts = np.concatenate([ps.pts[ps.off[i]:ps.off[i + 1]] for i in idx]).astype(np.int16) if len(idx) else np.empty(0, np.int16)
    voff = np.zeros(len(idx) + 1, np.int64)
    np.cumsum([len(v) for v in vics], out=voff[1:])
    vic = np.asarray([p for v in vics for p in v], np.int16)
    return Candidates(len(idx), pts, off, ps.jump[idx].astype(np.int8), vic, voff)


@kernel
def _afterstate_planes(board, counts, side, phase, quiet, ply, max_plies, pts, off, jump, vic, voff, out):
    """Planes of the afterstate of every candidate into ``out`` (``float32[n, NUM_PLANES, 14, 14]``)."""
    b = np.empty_like(board)
    c = np.empty(2, np.int64)
    cap = np.empty(NUM_POINTS, np.int16)
    for i in range(off.shape[0] - 1):
        b[:] = board
        c[0] = counts[0]
        c[1] = counts[1]
        path = pts[off[i]:off[i + 1]]
        victims = vic[voff[i]:voff[i + 1]]
        _, ph, q, p, _, _ = play(b, c, side, phase, quiet, ply, np.uint64(0), path, jump[i] != 0, victims, 0)
        k = 0
        if jump[i] != 0:
            for j in range(1, path.shape[0]):
                cap[k] = (path[j - 1] + path[j]) // 2
                k += 1
        for j in range(victims.shape[0]):
            cap[k] = victims[j]
            k += 1
        progress = 0.0
        if ph == 1:
            progress = min(max((p - NUM_POINTS) / max_plies, 0.0), 1.0)
        encode_planes(b, side, ph, c[side], c[1 - side], q, progress, path[0], path[path.shape[0] - 1],
                      cap[:k], out[i])


def afterstate_planes(state: GameState, cands: Candidates, out: np.ndarray | None = None) -> np.ndarray:
    """``float32[cands.n, NUM_PLANES, 14, 14]``: the planes of every candidate's afterstate from the
    mover's view (module docstring); written into ``out`` when given."""
    if out is None:
        out = np.empty((cands.n, NUM_PLANES, SIZE, SIZE), np.float32)
    _afterstate_planes(state.board, np.asarray(state.counts, np.int64), state.side, state.phase, state.quiet,
                       state.ply, float(state.ruleset.max_battle_plies), cands.pts, cands.off, cands.jump,
                       cands.vic, cands.voff, out)
    return out


def pack_planes(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(bits uint8[..., PACKED_BYTES], scalars float32[..., PACKED_SCALARS])`` of planes
    ``float32[..., NUM_PLANES, 14, 14]`` (lossless for ``nets.features`` planes; :func:`unpack_planes`)."""
    lead = planes.shape[:-3]
    flat = planes.reshape(*lead, NUM_PLANES, NUM_POINTS)
    bits = np.packbits(flat[..., :BINARY_PLANES, :].reshape(*lead, -1) > 0.5, axis=-1)
    return bits, np.ascontiguousarray(flat[..., BINARY_PLANES:, 0], np.float32)


def unpack_planes(bits: np.ndarray, scalars: np.ndarray) -> np.ndarray:
    """The planes ``float32[..., NUM_PLANES, 14, 14]`` that :func:`pack_planes` packed."""
    lead = bits.shape[:-1]
    binary = np.unpackbits(bits, axis=-1, count=BINARY_PLANES * NUM_POINTS).reshape(*lead, BINARY_PLANES, NUM_POINTS)
    out = np.empty((*lead, NUM_PLANES, NUM_POINTS), np.float32)
    out[..., :BINARY_PLANES, :] = binary
    out[..., BINARY_PLANES:, :] = scalars[..., None]
    return out.reshape(*lead, NUM_PLANES, SIZE, SIZE)


def q_values(net, planes: np.ndarray, batch: int = 256) -> np.ndarray:
    """``float32[n]``: ``net`` (a ``nets.model.QNet``, in eval mode) on ``planes``
    (``float32[n, NUM_PLANES, 14, 14]``), ``batch`` positions per forward pass, without gradients."""
    import torch

    out = np.empty(len(planes), np.float32)
    with torch.inference_mode():
        for a in range(0, len(planes), batch):
            out[a:a + batch] = net(torch.from_numpy(planes[a:a + batch])).numpy()
    return out
