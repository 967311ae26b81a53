"""The expert's knowledge as a service: its scores of a position, for the expert agent and the plugins.

:class:`ExpertKnowledge` holds the expert's weights and options and computes, with the kernels of
``knowledge/expert_kernels.py`` (battle) and ``knowledge/layout_kernels.py`` (layout):

- :meth:`~ExpertKnowledge.layout_scores`: ``float64[196]`` placement scores (greedy shape score,
  Gaussian prior, ``layout_mix`` times the knowledge kernel);
- :meth:`~ExpertKnowledge.one_ply`: the one-ply path scores and JFA Table 1 levels
  (``expert_kernels.battle_scores``, ``pruning_kernels.path_levels``);
- :meth:`~ExpertKnowledge.two_ply_scores`: the two-ply refinement of the ``top`` best paths
  (``expert_kernels.refine_scores`` on the one-ply scores) and :meth:`~ExpertKnowledge.best_score`, its
  maximum found with the alpha cut (the ``eval.expert:plies=2`` leaf value);
- :meth:`~ExpertKnowledge.leaf_value`: the static two-ply leaf value (``eval.expert:plies=1``);
- :meth:`~ExpertKnowledge.repetition_adjust`: the expert's repetition awareness on a score array.

Who calls it: ``knowledge.agents.ExpertAgent`` (which adds the tie-breaking jitter, the noise and the
square victims) and the plugins ``prune.expert``, ``eval.expert``, ``prior.expert`` and
``prior.expert_layout``; none of them builds an agent. The plugins use one process-wide instance with
the default weights (:func:`default_knowledge`), and so does every ``ExpertAgent`` with default weights.

Scores of a position are computed once: :meth:`~ExpertKnowledge.one_ply` remembers the one-ply scores
of the last ``cache`` (256) positions, most recently used first, keyed by the exact position (board
bytes, side to move, stone counts, rules vector; not a hash, so no collision can return another
position's scores). One search leaf asks ``eval.expert:plies=2`` for its value (one-ply scores, then
the refinement) and then ``prune.expert`` for its children (the same one-ply scores): the second ask is
a cache hit (as is the root's: the search asks the value plugin for the root's margin first). The
victim scorer of ``jfa`` (``eval.expert``, :meth:`~ExpertKnowledge.leaf_value` of the position after
each candidate victim set) values other positions than the leaf, once each, so it has nothing to share
and is not cached. The scores do not depend on the repetition history (the adjustment is applied to a copy
by the caller), so the cache changes no result. The cache is shared by a search's threads (a lock
guards the dictionary; kernels run outside it, so two threads may compute the same entry once each,
with identical results); cached arrays are read-only.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np

from core.notation import Move
from core.state import GameState
from knowledge.expert_kernels import BATTLE_WEIGHTS, EVAL_WEIGHTS, battle_scores, leaf_value, refine_scores
from knowledge.formation import GaussianPrior, ShapeEvaluator, greedy_layout_scores
from knowledge.layout_kernels import LAYOUT_WEIGHTS, layout_scores
from knowledge.pruning_kernels import path_levels

REPETITION_TOP = 12  # the best paths ``ExpertKnowledge.repetition_adjust`` looks at
CACHE = 256  # positions whose one-ply scores an ExpertKnowledge remembers (default)


class ExpertKnowledge:
    """The expert's scores of a position (module docstring).

    Options: ``k_full`` (64): paths scored in full when there are more (flights), best by pre-score;
    ``layout_mix`` (0.3): weight of the knowledge layout kernel on top of the greedy layout score;
    ``prior`` (1): weight of the Gaussian prior scaled to max 1; ``weights`` / ``layout_weights`` /
    ``eval_weights``: arrays replacing ``expert_kernels.BATTLE_WEIGHTS`` / ``layout_kernels.LAYOUT_WEIGHTS``
    / ``expert_kernels.EVAL_WEIGHTS`` (copied; not to be modified); ``cache`` (256): positions whose one-ply
    scores are remembered (0: none). Thread-safe.
    """

    def __init__(self, k_full: int = 64, layout_mix: float = 0.3, prior: float = 1.0, weights=None,
                 layout_weights=None, eval_weights=None, cache: int = CACHE):
        if int(cache) < 0:
            raise ValueError(f"expert: cache must be >= 0, got {cache!r}")
        self.k_full = int(k_full)
        self.layout_mix = float(layout_mix)
        self.prior_weight = float(prior)
        self.weights = _weights(BATTLE_WEIGHTS if weights is None else weights)
        self.layout_weights = _weights(LAYOUT_WEIGHTS if layout_weights is None else layout_weights)
        self.eval_weights = _weights(EVAL_WEIGHTS if eval_weights is None else eval_weights)
        self.evaluator = ShapeEvaluator()
        self.prior = GaussianPrior()
        self.cache = int(cache)
        self._cache: OrderedDict[bytes, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0  # one-ply lookups answered from the cache (statistics)
        self.misses = 0  # one-ply scores computed

    def __getstate__(self) -> dict:  # picklable: the lock and the cache stay behind
        return {"k_full": self.k_full, "layout_mix": self.layout_mix, "prior": self.prior_weight,
                "weights": self.weights, "layout_weights": self.layout_weights, "eval_weights": self.eval_weights,
                "cache": self.cache}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    # ------------------------------------------------------------------ layout
    def layout_scores(self, state: GameState) -> np.ndarray:
        """``float64[196]`` layout scores of the legal placements (``-inf`` elsewhere), a new array: the
        ``eval.shape`` difference after the placement plus the Gaussian prior scaled to max 1 times
        ``prior`` (``knowledge.formation.greedy_layout_scores``), plus ``layout_mix`` times the knowledge
        kernel ``knowledge.layout_kernels.layout_scores``. Raises ``ValueError`` for a battle position."""
        scores = greedy_layout_scores(state, self.evaluator, self.prior, self.prior_weight)
        if self.layout_mix:
            legal = np.isfinite(scores)
            raw = layout_scores(state.board, state.side, self.layout_weights)
            scores[legal] += self.layout_mix * raw[legal]
        return scores

    # ------------------------------------------------------------------ battle
    def one_ply(self, state: GameState) -> tuple[np.ndarray, np.ndarray]:
        """``(scores float64[m], levels int8[m])`` of the legal paths of battle ``state``
        (``state.paths()`` order), read-only (they may be the cache's): the one-ply score
        (``expert_kernels.battle_scores``; paths outside the ``k_full`` best by pre-score score
        ``pre-score - 1e6``) and the JFA Table 1 level. Expert units: one stone = 10."""
        s = state.side
        n_own, n_opp = int(state.counts[s]), int(state.counts[1 - s])
        rules = state.ruleset.vector
        key = None
        if self.cache:
            key = b"".join((np.ascontiguousarray(state.board, np.int8).tobytes(), bytes((s,)),
                            n_own.to_bytes(2, "little"), n_opp.to_bytes(2, "little"),
                            np.ascontiguousarray(rules).tobytes()))
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    self.hits += 1
                    return hit
        ps = state.paths()
        levels = path_levels(state.board, s, n_own, n_opp, ps.pts, ps.off, ps.nsq, ps.jump, ps.m)
        scores, _ = battle_scores(state.board, s, n_own, n_opp, rules, ps.pts, ps.off, ps.nsq, ps.jump, ps.m, levels,
                                  self.weights, self.k_full)
        scores.setflags(write=False)
        levels.setflags(write=False)
        if key is not None:
            with self._lock:
                self.misses += 1
                self._cache[key] = (scores, levels)
                if len(self._cache) > self.cache:
                    self._cache.popitem(last=False)
        return scores, levels

    def two_ply_scores(self, state: GameState, top: int = 8, replies: int = 48, margin: float = math.inf) -> np.ndarray:
        """``float64[m]`` two-ply scores of the legal paths of battle ``state`` (a new array): the ``top``
        best paths by :meth:`one_ply` checked against the opponent's replies (all, or the ``replies`` best
        when it has more), valued by the worst resulting position (``expert_kernels.refine_scores``; the
        others keep ``one-ply - 1e7``). ``margin`` (expert units, >= 0): the alpha cut, scores within
        ``margin`` of the maximum exact, the others upper bounds below ``maximum - margin``; ``inf`` (the
        default): every score exact. A negative or NaN ``margin`` raises ``ValueError``."""
        if not margin >= 0.0:
            raise ValueError(f"expert: margin must be >= 0 (inf: no cut), got {margin!r}")
        one, _ = self.one_ply(state)
        s = state.side
        ps = state.paths()
        return refine_scores(state.board, s, state.counts[s], state.counts[1 - s], state.ruleset.vector, ps.pts,
                             ps.off, ps.nsq, ps.jump, ps.m, one, self.weights, self.eval_weights, int(top),
                             int(replies), float(margin))

    def battle_scores(self, state: GameState, plies: int = 2, top: int = 8, replies: int = 48,
                      margin: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
        """``(scores float64[m], levels int8[m])``: :meth:`one_ply` (``plies=1``, scores copied, writable)
        or :meth:`two_ply_scores` (``plies=2``, ``margin`` applies) with the levels (read-only)."""
        if plies == 1:
            if not margin >= 0.0:
                raise ValueError(f"expert: margin must be >= 0 (inf: no cut), got {margin!r}")
            scores, levels = self.one_ply(state)
            return scores.copy(), levels
        scores = self.two_ply_scores(state, top, replies, margin)
        return scores, self.one_ply(state)[1]

    def best_score(self, state: GameState, top: int = 8, replies: int = 48) -> float:
        """The best legal path's two-ply score (:meth:`two_ply_scores`' maximum, computed with the alpha
        cut), expert units for the side to move; raises ``ValueError`` when the position has no legal path."""
        if state.paths().m == 0:
            raise ValueError("expert: the position has no legal path to score")
        return float(self.two_ply_scores(state, top, replies, 0.0).max())

    def leaf_value(self, state: GameState) -> float:
        """The static value of battle ``state`` for its side to move (``expert_kernels.leaf_value``:
        material, each side's best capture next move, weighted shapes), expert units."""
        me = state.side
        return float(leaf_value(state.board, me, state.counts[me], state.counts[1 - me], state.ruleset.vector,
                                self.weights, self.eval_weights))

    def repetition_adjust(self, state: GameState, ps, scores: np.ndarray, top: int = REPETITION_TOP) -> bool:
        """Repetition awareness for the best ``top`` quiet paths of ``ps`` (``state.paths()``; only quiet
        moves can repeat a position): a move that would end the game by the repetition rule scores
        ``-1000 * sign(stone lead)`` (avoid it when ahead, take it when behind); when ahead, a move back
        to a position seen before costs ``5`` per earlier occurrence, so the expert makes progress
        instead of shuffling. ``scores`` (``float64[m]``, writable) is changed in place; returns whether
        any score changed."""
        rep = state.ruleset.repetition_draw
        lead = state.counts[state.side] - state.counts[1 - state.side]
        if len(state.history) < 2 or (lead == 0 and rep == 0):
            return False
        hist = state.history
        changed = False
        for i in np.argsort(-scores, kind="stable")[:top]:
            if ps.jump[i] or ps.nsq[i] > 0:
                continue
            h = np.uint64(state._play(Move(ps.path(int(i)))).hash)
            seen = int(np.count_nonzero(hist == h))
            if seen == 0:
                continue
            if rep > 0 and seen + 1 >= rep:
                if lead != 0:
                    scores[i] -= 1000.0 * np.sign(lead)
                    changed = True
            elif lead > 0:
                scores[i] -= 5.0 * seen
                changed = True
        return changed

    def is_default(self) -> bool:
        """Whether the options are the defaults (the weights those of the kernel modules)."""
        return (self.k_full == 64 and self.layout_mix == 0.3 and self.prior_weight == 1.0
                and np.array_equal(self.weights, BATTLE_WEIGHTS) and np.array_equal(self.layout_weights, LAYOUT_WEIGHTS)
                and np.array_equal(self.eval_weights, EVAL_WEIGHTS))


def _weights(weights) -> np.ndarray:
    """A writable ``float64`` copy (as the kernels were always called with; do not modify it)."""
    return np.array(weights, np.float64)


_DEFAULT: ExpertKnowledge | None = None
_DEFAULT_LOCK = threading.Lock()


def default_knowledge() -> ExpertKnowledge:
    """The process-wide :class:`ExpertKnowledge` with the default options, shared by the expert plugins
    and the default-weight expert agents (so that one position's scores are computed once)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = ExpertKnowledge()
        return _DEFAULT
