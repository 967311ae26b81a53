"""Knowledge-based pruning plugins (JFA section 3.5; kernels and definitions in ``knowledge/pruning_kernels.py``).

- ``prune.expansion`` (kind ``expansion_pruner``): keep only the legal paths of the best non-empty
  JFA Table 1 level (1 Dalian shuttle, 2 square-forming, 3 jump or square-opening, 4 other).
- ``prune.capture`` (kind ``capture_pruner``): rank the square-victim sets of a square-forming path
  by the Eq. 9 capture score (read as ``f(player) - 1.5 f(opponent)``, higher better) and keep the
  high-value ones (one victim) or the top ``top`` (two or more victims).
- ``prune.threat`` (kind ``capture_pruner``): the expert agent's square victims first (the stones
  behind the opponent's immediate capture threats), then ``prune.capture``'s ranking.
- :func:`best_victims`: the capture pruner's best victim set, for agents.

Capture pruning, exactly what is exact and what approximates (``CapturePruner.candidates``):

- **0 victims** (the path forms no square, or the opponent has no stone left to take): one
  candidate, the empty set, scored exactly.
- **1 victim**: every opponent stone left is scored exactly by ``capture_score`` of the position
  after the whole move. ``split="mean"`` (default) keeps the *high-value set*: the victims scoring
  at least the mean score (never empty: the best one always qualifies). ``split="mid"`` keeps those
  at least halfway between the worst and the best score; ``split="all"`` keeps everything.
- **2 victims** (up to C(97, 2) = 4,656 sets): every single victim is scored exactly first (as
  above); the ``pool`` best singles (default 12, so C(12, 2) = 66 pairs; the expert agent's value too)
  are paired and every such pair is scored exactly; the ``top`` best pairs (default 20) are kept. The
  approximation is only the restriction to pairs of good singles: a pair of two individually
  mediocre victims is never considered (docs/performance.md, "The search's own cost", says how often a larger pool would
  choose otherwise). With ``pool >= stones left`` the result is the exact top ``top``.
- **3-4 victims** (flights only): greedy, exact scores: the best ``pool`` singles, then each set is
  grown one victim at a time from the ``top`` best sets of the previous size (beam search of width
  ``top``); the kept sets are scored exactly.

Ties are broken by the victim points (ascending), so results are deterministic. Rankings are
remembered per position after the path (``CapturePruner.ranked``; option ``cache``), which changes no
result.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from core.board import PHASE_LAYOUT, POINT_NAMES
from core.errors import IllegalMoveError
from core.movegen import find_path
from core.play import play_path
from knowledge.expert import default_knowledge
from knowledge.expert_kernels import threat_victims, threat_victims_after
from knowledge.pruning_kernels import best_level_indices, path_levels, victim_set_scores
from core.state import GameState, PathSet
from knowledge.registry import register

SPLITS = ("mean", "mid", "all")


class ExpansionPruner:
    """``prune.expansion``: JFA Table 1 branch pruning (papers/000 section 3.5.1).

    ``keep(state, paths)`` returns the ascending indices (``int64[k]``) of the paths at the best
    (lowest-numbered) non-empty level; ``k >= 1`` whenever ``paths.m >= 1``. In the layout phase
    (no paths) it keeps everything, i.e. ``arange(paths.m)``.
    """

    name = "prune.expansion"

    def levels(self, state: GameState, paths: PathSet) -> np.ndarray:
        """``int8[m]`` Table 1 level of every path (``knowledge.pruning_kernels.path_levels``)."""
        s = state.side
        return path_levels(state.board, s, state.counts[s], state.counts[1 - s], paths.pts, paths.off,
                           paths.nsq, paths.jump, paths.m)

    def keep(self, state: GameState, paths: PathSet) -> np.ndarray:
        if state.phase == PHASE_LAYOUT or paths.m == 0:
            return np.arange(paths.m, dtype=np.int64)
        return best_level_indices(self.levels(state, paths))


class ExpertPruner:
    """``prune.expert``: keep the ``top`` paths the expert agent scores best (an expansion pruner).

    The scores are ``knowledge.expert.ExpertKnowledge.battle_scores`` of the shared default instance
    (``default_knowledge()``; the expert agent's: its one-ply score with the reply safety check,
    ``plies=2``: refined two plies deep; the Table 1 level is part of the score; one stone = 10 units;
    the one-ply scores come from its cache when the search's value plugin ``eval.expert`` has just
    scored the same position) with the expert's own repetition awareness
    (``ExpertKnowledge.repetition_adjust``, from the state's history: a quiet path ending the game by
    repetition ranks first for a side behind and last for a side ahead), so a search pruned by it sees the draw an opponent behind would take.
    ``keep(state, paths)`` -> ascending ``int64[min(top, m)]`` indices (ties broken by the
    lower index; ``arange(m)`` in the layout). ``paths`` must be ``state.paths()`` (same order); a
    different count raises ``ValueError``. ``top`` in 1..10,000, ``plies`` 1 or 2, else ``ValueError``.
    Use: a search that may choose only among the expert's best candidates, the net ranking them
    (``jfa:expansion_pruner=prune.expert:top=4``); the search then never plays a path the expert ranks
    below its ``top``-th."""

    name = "prune.expert"

    def __init__(self, top: int = 4, plies: int = 1):
        if not 1 <= int(top) <= 10_000:
            raise ValueError(f"prune.expert: top must be in 1..10000, got {top!r}")
        if plies not in (1, 2):
            raise ValueError(f"prune.expert: plies must be 1 or 2, got {plies!r}")
        self.top, self.plies = int(top), int(plies)
        self.knowledge = default_knowledge()

    def keep(self, state: GameState, paths: PathSet) -> np.ndarray:
        if state.phase == PHASE_LAYOUT or paths.m <= self.top:
            return np.arange(paths.m, dtype=np.int64)
        scores, _ = self.knowledge.battle_scores(state, self.plies)
        if len(scores) != paths.m:
            raise ValueError(f"prune.expert: {paths.m} paths given but the position has {len(scores)}")
        self.knowledge.repetition_adjust(state, paths, scores)
        order = np.lexsort((np.arange(paths.m), -scores))  # best score first, then the lower index
        return np.sort(order[: self.top]).astype(np.int64)


class CapturePruner:
    """``prune.capture``: square-victim pruning by the Eq. 9 capture score (papers/000 section 3.5.2).

    Options: ``top`` (sets kept for 2+ victims, default 20), ``pool`` (best singles paired for 2+
    victims, default 12), ``split`` (1-victim high/low split: ``"mean"``, ``"mid"`` or ``"all"``),
    ``cache`` (rankings remembered, most recently used first, default 4096; 0: none). See the module
    docstring for what is exact.

    A ranking depends only on the board after the path, the mover, its count, the number of victims
    and the rules, so it is remembered under those (the board's bytes, not its hash: no collision can
    return another position's victims); a search meets the same position after a path again through
    transpositions. The cache is shared by the threads of one search (a lock guards it).
    """

    name = "prune.capture"

    def __init__(self, top: int = 20, pool: int = 12, split: str = "mean", cache: int = 4096):
        if int(top) < 1:
            raise ValueError(f"prune.capture: top must be >= 1, got {top!r}")
        if int(pool) < 2:
            raise ValueError(f"prune.capture: pool must be >= 2, got {pool!r}")
        if split not in SPLITS:
            raise ValueError(f"prune.capture: split must be one of {', '.join(SPLITS)}, got {split!r}")
        if int(cache) < 0:
            raise ValueError(f"prune.capture: cache must be >= 0, got {cache!r}")
        self.top, self.pool, self.split, self.cache = int(top), int(pool), split, int(cache)
        self._cache: OrderedDict[bytes, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:  # picklable as before the cache: the lock and the cache stay behind
        return {"top": self.top, "pool": self.pool, "split": self.split, "cache": self.cache}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def candidates(self, state: GameState, path, jump) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """Victim sets (ascending tuples of the required size) best first, and their scores
        (``float64[n]``, descending, higher better for the mover). Never empty. Raises
        ``IllegalMoveError`` when ``path`` is not a legal path of ``state``."""
        if state.phase == PHASE_LAYOUT:
            raise IllegalMoveError("prune.capture: the layout phase has no captures")
        ps = state.paths()
        arr = np.asarray(path, np.int16)
        i = find_path(ps.pts, ps.off, ps.jump, ps.m, arr, int(bool(jump)))
        if i < 0:
            text = ("x" if jump else "-").join(POINT_NAMES[int(p)] for p in path)
            raise IllegalMoveError(f"prune.capture: {text} is not a legal path here")
        board = state.board.copy()
        hops = play_path(board, state.side, arr, bool(jump))[0]
        k = min(int(ps.nsq[i]), state.counts[1 - state.side] - hops)
        return _listed(*self.ranked(board, state.side, state.counts[state.side], k, state.ruleset.vector))

    def candidates_after(self, after: GameState, count: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """:meth:`candidates` from the position **after the path** (its victims still on the board,
        the victims' side to move; ``search.victims.after_path`` or a search tree's child) taking
        ``count`` victims, without generating the mover's paths again. Reads ``after.board``,
        ``after.side``, ``after.counts`` and ``after.ruleset`` only."""
        mover = 1 - after.side
        return _listed(*self.ranked(np.asarray(after.board), mover, after.counts[mover], int(count),
                                    after.ruleset.vector))

    def ranked(self, board, me, n_me, k, rules) -> tuple[np.ndarray, np.ndarray]:
        """The ranking of :meth:`candidates` as arrays: ``(sets int16[n, k], scores float64[n])``,
        best first, read-only (they may be the cache's). ``board`` ``int8[196]``: the position after
        the path of ``me`` (0 White, 1 Black), who has ``n_me`` stones, with its ``k`` victims still on
        the board; ``rules``: ``Ruleset.vector``."""
        if self.cache == 0:
            return self._rank(board, me, n_me, k, rules)
        key = b"".join((np.ascontiguousarray(board, np.int8).tobytes(), bytes((me, k)), int(n_me).to_bytes(2, "little"),
                        np.ascontiguousarray(rules).tobytes()))
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        ranking = self._rank(board, me, n_me, k, rules)
        for a in ranking:
            a.setflags(write=False)
        with self._lock:
            self._cache[key] = ranking
            if len(self._cache) > self.cache:
                self._cache.popitem(last=False)
        return ranking

    def _rank(self, board, me, n_me, k, rules) -> tuple[np.ndarray, np.ndarray]:
        """Rank the ``k``-victim sets on ``board`` (after the path of ``me``, who has ``n_me`` stones)."""
        left = np.flatnonzero(board == 2 - me).astype(np.int16)
        n_opp = len(left)
        score = lambda sets: victim_set_scores(board, me, n_me, n_opp, rules, sets)  # noqa: E731
        if k == 0:
            empty = np.empty((1, 0), np.int16)
            return empty, score(empty)
        singles = score(left.reshape(-1, 1))
        if k == 1:
            order = np.lexsort((left, -singles))
            if self.split == "mean":
                cut = singles.mean()
            elif self.split == "mid":
                cut = 0.5 * (singles.min() + singles.max())
            else:
                cut = -np.inf
            order = order[singles[order] >= cut - 1e-9]
            return left[order].reshape(-1, 1), singles[order]
        best = left[np.lexsort((left, -singles))[: self.pool]]
        sets = best.reshape(-1, 1)
        for size in range(2, k + 1):
            if size == 2:  # every pair of the pool, in combinations order, ranked by (-score, points)
                i, j = np.triu_indices(len(best), 1)
                pairs = np.stack((np.minimum(best[i], best[j]), np.maximum(best[i], best[j])), axis=1)
                sc = score(pairs)
                order = np.lexsort((pairs[:, 1], pairs[:, 0], -sc))[: self.top]
                sets, scores = pairs[order], sc[order]
                continue
            grown = sorted({tuple(sorted(s + (int(v),))) for s in map(tuple, sets.tolist()) for v in best
                            if int(v) not in s})
            arr = np.asarray(grown, np.int16)
            sc = score(arr)
            order = sorted(range(len(grown)), key=lambda j: (-sc[j], grown[j]))[: self.top]
            sets, scores = arr[order], sc[order]
        return sets, np.asarray(scores, np.float64)


class ThreatCapturePruner:
    """``prune.threat``: the expert agent's square victims first, then :class:`CapturePruner`'s ranking.

    While the victims' side has a capturing reply, the expert takes the stone behind its strongest
    threat (Dalian shuttles first; ``knowledge.expert_kernels.threat_victims``), so that the capture
    also parries; this pruner puts that set first when every one of its victims was taken that way
    (the rule of ``knowledge.agents.ExpertAgent.victims``, ``victims="threat"``), ahead of the Eq. 9
    ranking (without such a threat the ranking alone, as the expert). The expert's one-ply score of a
    path (``prune.expert``) assumes these victims, so a search pruned by it plays the captures it
    scored. Scores are the Eq. 9 scores of each set, except that the threat set, put first, scores at
    least the best of the others (scores descend, best first, as every capture pruner's). Options: those
    of ``prune.capture``.
    """

    name = "prune.threat"

    def __init__(self, top: int = 20, pool: int = 12, split: str = "mean", cache: int = 4096):
        self._ranking = CapturePruner(top=top, pool=pool, split=split, cache=cache)

    def candidates(self, state: GameState, path, jump) -> tuple[list[tuple[int, ...]], np.ndarray]:
        sets, scores = self._ranking.candidates(state, path, jump)  # checks the path
        s, k = state.side, len(sets[0])
        if k == 0:
            return sets, scores
        threat, n_threat = threat_victims(state.board, s, state.counts[s], state.counts[1 - s], state.ruleset.vector,
                                          np.asarray(path, np.int16), bool(jump), k)
        board = state.board.copy()
        play_path(board, s, np.asarray(path, np.int16), bool(jump))
        return self._first(sets, scores, threat, n_threat, board, s, state.counts[s], state.ruleset.vector)

    def candidates_after(self, after: GameState, count: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
        sets, scores = self._ranking.candidates_after(after, count)
        mover, k = 1 - after.side, len(sets[0])
        if k == 0:
            return sets, scores
        board = np.asarray(after.board)
        threat, n_threat = threat_victims_after(board, mover, after.counts[mover], after.counts[after.side],
                                                after.ruleset.vector, k)
        return self._first(sets, scores, threat, n_threat, board, mover, after.counts[mover], after.ruleset.vector)

    @staticmethod
    def _first(sets, scores, threat, n_threat, board, me, n_me, rules) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """``sets``/``scores`` with the threat set first when all its victims parried a threat."""
        first = tuple(int(v) for v in threat)
        if n_threat == 0 or len(first) != len(sets[0]):
            return sets, scores
        if first in sets:
            j = sets.index(first)
            own = scores[j]
            rest = [i for i in range(len(sets)) if i != j]
        else:
            n_opp = int(np.count_nonzero(np.asarray(board) == 2 - me))
            own = float(victim_set_scores(board, me, n_me, n_opp, rules, np.asarray([first], np.int16))[0])
            rest = list(range(len(sets)))
        return [first] + [sets[i] for i in rest], np.concatenate(([max(own, float(scores.max()))], scores[rest]))


def _listed(sets: np.ndarray, scores: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """``(sets as a list of tuples of ints, a writable copy of scores)``: the protocol's form."""
    return list(map(tuple, sets.tolist())), scores.copy()


def best_victims(state: GameState, path, jump, pruner: CapturePruner | None = None) -> tuple[int, ...]:
    """The best victim set (ascending point indices) of a legal ``path`` by the capture pruner's
    Eq. 9 score; ``()`` when the path captures no square victim. ``pruner`` defaults to
    ``prune.capture`` with its default options."""
    sets, _ = (pruner or _DEFAULT_CAPTURE).candidates(state, path, jump)
    return sets[0]


_DEFAULT_CAPTURE = CapturePruner()


@register("prune.expansion", "expansion_pruner")
def make_expansion_pruner() -> ExpansionPruner:
    """JFA Table 1: keep only the paths of the best non-empty level."""
    return ExpansionPruner()


@register("prune.expert", "expansion_pruner")
def make_expert_pruner(top: int = 4, plies: int = 1) -> ExpertPruner:
    """Keep the expert's ``top`` best-scored paths (its one-ply score with the reply check; plies=2 deeper)."""
    return ExpertPruner(top=top, plies=plies)


@register("prune.threat", "capture_pruner")
def make_threat_pruner(top: int = 20, pool: int = 12, split: str = "mean", cache: int = 4096) -> ThreatCapturePruner:
    """The expert's victims first (the stones behind the opponent's capture threats), then prune.capture's."""
    return ThreatCapturePruner(top=top, pool=pool, split=split, cache=cache)


@register("prune.capture", "capture_pruner")
def make_capture_pruner(top: int = 20, pool: int = 12, split: str = "mean", cache: int = 4096) -> CapturePruner:
    """JFA Eq. 7-9 victim pruning: high-value single victims, top-20 pairs."""
    return CapturePruner(top=top, pool=pool, split=split, cache=cache)
