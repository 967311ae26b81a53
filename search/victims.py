"""The one square-victim choice (JFA Fig. 2's lower decision, Eq. 6), for the search's lazy victim
resolution and for lower-net self-play.

A square-forming path of the mover takes ``count`` victims (``min(squares formed, opponent stones
left)``, rule book 3.3). :func:`choose_victims` works on the position **after the path** with those
victims still on the board (:func:`after_path`, or the search tree's child row as
``GameState.from_arrays``): the capture pruner ranks candidate sets there (``candidates_after``);
the lower net, when given, scores the positions after each of the first ``limit`` sets and the best
Q wins; with ``epsilon`` (self-play exploration) a uniformly random candidate is taken instead with
that probability; without a lower net the pruner's best. Without a pruner (JFA Table 5's "no capture
pruning") the lower net scores every set of ``count`` of the opponent's stones (``limit`` does not
apply: it counts the pruner's ranked sets), as the paper's lower DQN does, unless there are more than
:data:`MAX_ALL_SETS`; without a lower net, or beyond that many sets, the lowest ``count`` points are
taken (a deterministic fallback).
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from core.notation import Move
from core.play import play, take_stones
from core.state import GameState


MAX_ALL_SETS = 4_950  # C(100, 2): every pair of a full side; three or more victims fall back beyond it


def _victim_stones(after: GameState) -> list[int]:
    """The points of ``after``'s side to move (the victims' side), ascending."""
    return [int(p) for p in np.flatnonzero(after.board == after.side + 1)]


def all_victim_sets(after: GameState, count: int) -> list[tuple[int, ...]]:
    """Every set of ``count`` stones of ``after``'s side to move (the victims' side), ascending points
    in lexicographic order; empty when there are more than :data:`MAX_ALL_SETS` or fewer stones
    than ``count``."""
    stones = _victim_stones(after)
    if count > len(stones) or math.comb(len(stones), count) > MAX_ALL_SETS:
        return []
    return list(itertools.combinations(stones, count))


class VictimChoice(NamedTuple):
    """``victims`` (ascending points), ``after`` (the ``GameState`` after the whole move when a lower
    net was given, else ``None``), ``n_candidates`` (sets considered) and ``afters`` (when a lower net
    was given: the position after the whole move for every candidate set, in the candidates' order,
    ``after`` among them; else empty)."""

    victims: tuple[int, ...]
    after: GameState | None
    n_candidates: int
    afters: tuple[GameState, ...] = ()


def after_path(state: GameState, path, jump: bool, count: int) -> GameState:
    """The position after the legal battle ``path`` of ``state``'s side to move with its ``count``
    square victims still on the board (opponent to move, ``quiet`` 0). Made by ``core.play.play``."""
    board = state.board.copy()
    counts = np.array(state.counts, np.int64)
    side, phase, quiet, ply, h, _ = play(board, counts, state.side, state.phase, state.quiet, state.ply,
                                         np.uint64(state.hash), np.asarray(path, np.int16), bool(jump),
                                         np.empty(0, np.int16), int(count))
    return GameState.from_arrays(board, side, phase, quiet, ply, counts, h, np.array([h], np.uint64),
                                 state.ruleset, Move(tuple(int(p) for p in path), bool(jump)))


def take(after: GameState, path, jump: bool, victims) -> GameState:
    """The position after the whole move: ``after`` (from :func:`after_path`) without ``victims``."""
    board = after.board.copy()
    counts = np.array(after.counts, np.int64)
    h = take_stones(board, counts, after.side, np.asarray(victims, np.int16), np.uint64(after.hash))
    move = Move(tuple(int(p) for p in path), bool(jump), tuple(int(v) for v in victims))
    return GameState.from_arrays(board, after.side, after.phase, after.quiet, after.ply, counts, h,
                                 np.array([h], np.uint64), after.ruleset, move)


def choose_victims(after: GameState, path, jump: bool, count: int, pruner=None, scorer=None, limit: int = 0,
                   rng: np.random.Generator | None = None, epsilon: float = 0.0) -> VictimChoice:
    """Choose ``count`` square victims (module docstring). ``after``: the position after ``path``
    (victims pending); ``pruner``: a capture pruner (``knowledge.protocols.VictimRanker``) or
    ``None``; ``scorer``: a lower net (``q_values(states, actions)``, ``nets.evaluator``) or ``None``;
    ``limit``: score at most this many of the pruner's sets (0: all); ``rng``/``epsilon``: explore."""
    if count <= 0:
        return VictimChoice((), None, 1)
    if pruner is not None:
        sets, _ = pruner.candidates_after(after, count)
        if limit > 0:
            sets = sets[:limit]
    else:
        sets = all_victim_sets(after, count) if scorer is not None else []
        if not sets:
            sets = [tuple(_victim_stones(after)[:count])]
    if scorer is None:
        return VictimChoice(tuple(sets[0]), None, len(sets))
    from nets.encoding import encode_upper

    afters = tuple(take(after, path, jump, s) for s in sets)
    if len(sets) == 1:
        j = 0
    elif rng is not None and epsilon > 0 and rng.random() < epsilon:
        j = int(rng.integers(len(sets)))
    else:
        q = scorer.q_values(afters, [encode_upper(tuple(int(p) for p in path), bool(jump))] * len(afters))
        j = int(np.argmax(q))
    return VictimChoice(tuple(sets[j]), afters[j], len(sets), afters)
