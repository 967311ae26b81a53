"""Knowledge agents: the baselines (``random``, ``greedy``, ``minimax``), the ``expert`` and ``rollout``.

Every agent follows ``knowledge.protocols.Agent``: ``name``, ``last_think_time`` (wall seconds of the
latest ``select``), ``select(state) -> Move`` for a non-terminal layout or battle state. Factories are
registered with kind ``"agent"`` and a frozen options model (``GreedyOptions`` ...; bounds, defaults and
descriptions: ``python cli.py agents``) filled from spec strings (``minimax:depth=2``); all accept
``seed`` and are deterministic for a seed and a sequence of states. :func:`make_agent` also
understands ``LAYOUT+BATTLE`` (``expert+random``), which builds a :class:`PhasedAgent`, the one
combiner of a layout agent and a battle agent (the net agents of ``search.agents`` use it too).

Agents (papers/004 section 2 for the baselines, papers/000 sections 3.4-3.5 for the expert):

- ``random``: a uniformly random legal placement; in the battle a uniformly random legal *path*,
  then a uniformly random victim set of the required size (the same two-level distribution as
  ``core.playout.random_game``; it is not uniform over full moves, whose count explodes for
  square-forming paths).
- ``greedy``: one ply. Battle: each legal path scores ``capture * stones taken`` (jump victims plus
  square victims) plus the ``eval.shape`` score difference (mover minus opponent) of the position after
  the path; the square victims of the chosen path come from ``best_victims`` (evaluating every
  square-forming flight's victim sets would cost seconds, so the shape term is taken before the
  square victims are removed). Layout: the ``eval.shape`` difference after the placement (own shapes
  gained, opponent shapes blocked) plus ``prior *`` the Gaussian prior scaled to max 1, so the
  centre is taken first and ties go to central points.
- ``minimax``: alpha-beta negamax over *paths* (square victims by ``best_victims``), iterative
  deepening under ``time`` seconds (default 0.5) or to a fixed ``depth``; children ordered by JFA
  Table 1 level (``knowledge.pruning_kernels.path_levels``) then stones taken, the previous iteration's best root
  move first. Leaves: ``eval.shape`` score difference plus ``material`` per stone of difference;
  terminal positions +-1e6 (sooner wins score higher). Inside the tree the repetition rule is the
  state's own (history is carried). Layout: the greedy layout policy (a tree over 196 placements with
  a shape evaluation says nothing the one-ply policy does not).
- ``expert``: the JFA auxiliary agent from human knowledge; its scores are
  ``knowledge.expert.ExpertKnowledge``'s (shared with the expert plugins), kernels and weights in
  ``knowledge/expert_kernels.py`` and ``knowledge/layout_kernels.py`` (their module docstrings have the
  formulas). Layout: the greedy layout score (``eval.shape`` gain and blocking, Gaussian prior: the
  centre first) plus ``layout_mix`` (0.3) times a knowledge kernel over the cells around each point
  (own gates/squares, blocking the opponent's, Dalian geometry next to own squares, the two centre
  holes the battle starts from). Battle: every path gets a one-ply score
  (stones taken, JFA Table 1 level bonus: Dalian shuttle > square-forming > jump/opening a square, a
  safety check of the opponent's best capture reply, our next threat, Dalians/squares/gates of both
  sides after the move); the best ``top`` (8) are then checked against the opponent's replies (all,
  or the ``replies`` (48) best by captures and level when the opponent flies) and valued by the worst
  resulting position (material, who can capture next, shapes). Flying stage: the same scores rank
  flights that form squares, flee jump threats or land where the opponent would capture; only the
  ``k_full`` (64) best flights by a cheap pre-score are scored in full. Square victims: when the
  opponent would have a capturing reply, the stones behind its threats go first (Dalian shuttles
  first), otherwise ``best_victims`` (JFA Eq. 9: break the opponent's Dalians, squares and gates).
  It does not walk into a repetition draw while ahead in stones (and takes one while behind).
  Its costs per battle move and per placement: README, section Performance.
- ``rollout``: the expert, except that from layout ply ``from_ply`` on each placement is chosen among
  the expert's ``top`` by expert rollouts that complete the layout and play ``battle_plies`` battle
  plies, valued by the stone difference (:class:`RolloutLayoutAgent`).
"""

from __future__ import annotations

import math
import time
import threading
from collections.abc import Iterator
from typing import Any, Literal

import numpy as np
from pydantic import Field

from core.board import NUM_POINTS, PHASE_LAYOUT
from core.notation import Move
from core.play import play_path
from core.state import GameState
from knowledge.expert import REPETITION_TOP, ExpertKnowledge, default_knowledge
from knowledge.expert_kernels import threat_victims
from knowledge.formation import GaussianPrior, ShapeEvaluator, greedy_layout_scores
from knowledge.layout_tree import PlacementTree
from knowledge.pruning import CapturePruner, ThreatCapturePruner, best_victims
from knowledge.pruning_kernels import path_levels
from knowledge.registry import REGISTRY, SEED_MAX, Options, SpecError, register

__all__ = [
    "RandomAgent",
    "GreedyAgent",
    "MinimaxAgent",
    "ExpertAgent",
    "RolloutLayoutAgent",
    "PhasedAgent",
    "finish_layout",
    "AgentOptions",
    "validate_agent_spec",
    "make_agent",
]


class _Agent:
    """Shared plumbing: timing and the seeded generator."""

    name = "agent"

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.last_think_time = 0.0

    def select(self, state: GameState) -> Move:
        t0 = time.perf_counter()
        try:
            return self._select(state)
        finally:
            self.last_think_time = time.perf_counter() - t0

    def _select(self, state: GameState) -> Move:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} seed={self.seed}>"


def _path_stones(ps, i: int, n_opp: int) -> int:
    """Stones path ``i`` of ``ps`` takes: jump victims plus square victims capped by the stones left."""
    hops = int(ps.off[i + 1] - ps.off[i] - 1) if ps.jump[i] else 0
    return hops + min(int(ps.nsq[i]), n_opp - hops)


def _victims(state: GameState, path: tuple[int, ...], jump: bool, nsq: int, pruner=None) -> tuple[int, ...]:
    if nsq <= 0:
        return ()
    return best_victims(state, path, jump, pruner)


def finish_layout(state: GameState, agent, moves: list | None = None) -> GameState:
    """The first battle position after ``agent`` (``select(state) -> Move``) plays every remaining
    placement of layout ``state``, both sides (``state`` itself when it is not a layout position); the
    moves chosen are appended to ``moves`` when given. The agent's moves are trusted as legal."""
    while state.phase == PHASE_LAYOUT:
        move = agent.select(state)
        if moves is not None:
            moves.append(move)
        state = state._play(move)
    return state


# ============================================================================ random
class RandomAgent(_Agent):
    """Uniform placement; in the battle a uniform path, then a uniform victim set (module docstring)."""

    name = "random"

    def _select(self, state: GameState) -> Move:
        if state.phase == PHASE_LAYOUT:
            pts = state.placements()
            return Move((pts[int(self.rng.integers(len(pts)))],))
        ps = state.paths()
        i = int(self.rng.integers(ps.m))
        path, jump = ps.path(i), bool(ps.jump[i])
        victims: tuple[int, ...] = ()
        if ps.nsq[i] > 0:
            left = state.victims_left(path, jump)
            k = min(int(ps.nsq[i]), len(left))
            victims = tuple(sorted(int(v) for v in self.rng.choice(left, size=k, replace=False))) if k else ()
        return Move(path, jump, victims)


# ============================================================================ greedy
class _BoardView:
    """The attributes ``ShapeEvaluator`` reads from a state (board, counts, ruleset, phase), for
    scoring a board after a path without building a ``GameState`` (no hash, no history)."""

    __slots__ = ("board", "counts", "ruleset", "phase")

    def __init__(self, board, counts, ruleset, phase):
        self.board, self.counts, self.ruleset, self.phase = board, counts, ruleset, phase


def _shape_diff(evaluator: ShapeEvaluator, view, player: int) -> float:
    return evaluator.score(view, player) - evaluator.score(view, 1 - player)


class GreedyAgent(_Agent):
    """One-ply greedy (module docstring). Options: ``capture`` (weight per stone taken, default 5),
    ``prior`` (weight of the Gaussian prior in the layout, default 1)."""

    name = "greedy"

    def __init__(self, seed: int = 0, capture: float = 5.0, prior: float = 1.0):
        super().__init__(seed)
        self.capture, self.prior_weight = float(capture), float(prior)
        self.evaluator = ShapeEvaluator()
        self.prior = GaussianPrior()

    def _pick(self, scores: np.ndarray) -> int:
        """Argmax with seeded random tie-breaking."""
        best = np.flatnonzero(scores >= scores.max() - 1e-9)
        return int(best[int(self.rng.integers(len(best)))]) if len(best) > 1 else int(best[0])

    def _select(self, state: GameState) -> Move:
        if state.phase == PHASE_LAYOUT:
            return Move((self._pick(greedy_layout_scores(state, self.evaluator, self.prior, self.prior_weight)),))
        ps = state.paths()
        me, n_opp = state.side, state.counts[1 - state.side]
        scores = np.empty(ps.m)
        board = np.empty_like(state.board)
        for i in range(ps.m):
            board[:] = state.board
            path = ps.pts[ps.off[i] : ps.off[i + 1]]
            jumped = play_path(board, me, path, bool(ps.jump[i]))[0]
            taken = _path_stones(ps, i, n_opp)
            counts = [0, 0]
            counts[me], counts[1 - me] = state.counts[me], n_opp - jumped
            view = _BoardView(board, tuple(counts), state.ruleset, state.phase)
            scores[i] = self.capture * taken + _shape_diff(self.evaluator, view, me)
        i = self._pick(scores)
        path, jump = ps.path(i), bool(ps.jump[i])
        return Move(path, jump, _victims(state, path, jump, int(ps.nsq[i])))


# ============================================================================ minimax
class _Timeout(Exception):
    pass


WIN_SCORE = 1e6


class MinimaxAgent(_Agent):
    """Alpha-beta negamax with iterative deepening (module docstring).

    Options: ``time`` (seconds per battle move, default 0.5; ignored when ``depth`` is given unless
    both are), ``depth`` (fixed depth; with ``time`` too, deepening stops at whichever comes first),
    ``material`` (leaf weight per stone of difference, default 4: with eval.shape's own 1 per stone a
    stone is worth a little more than a square), ``max_depth`` (cap of iterative deepening, default 8),
    ``prior`` (layout prior weight, as greedy).
    """

    name = "minimax"

    def __init__(self, seed: int = 0, time: float | None = None, depth: int | None = None, material: float = 4.0,
                 max_depth: int = 8, prior: float = 1.0):
        super().__init__(seed)
        if depth is None and time is None:
            time = 0.5
        if depth is not None and int(depth) < 1:
            raise ValueError(f"minimax: depth must be >= 1, got {depth!r}")
        if time is not None and float(time) <= 0:
            raise ValueError(f"minimax: time must be > 0, got {time!r}")
        self.time_budget = None if time is None else float(time)
        self.depth = None if depth is None else int(depth)
        self.max_depth = int(max_depth) if self.depth is None else self.depth
        self.material = float(material)
        self.prior_weight = float(prior)
        self.evaluator = ShapeEvaluator()
        self.prior = GaussianPrior()
        self.capture_pruner = CapturePruner(top=1, pool=12)
        self.nodes = 0
        self.completed_depth = 0
        self._deadline = float("inf")
        self._partial = None

    # ------------------------------------------------------------------ tree
    def _evaluate(self, state: GameState) -> float:
        p = state.side
        e = self.evaluator
        return e.score(state, p) - e.score(state, 1 - p) + self.material * (state.counts[p] - state.counts[1 - p])

    def _children(self, state: GameState):
        """``(paths, order)``: the legal paths and their search order (JFA Table 1 level, then stones
        taken, descending)."""
        ps = state.paths()
        s = state.side
        levels = path_levels(state.board, s, state.counts[s], state.counts[1 - s], ps.pts, ps.off, ps.nsq, ps.jump, ps.m)
        m = ps.m
        hops = np.where(ps.jump[:m] != 0, np.diff(ps.off[: m + 1]) - 1, 0)
        gain = hops + np.minimum(ps.nsq[:m].astype(np.int64), state.counts[1 - s] - hops)
        order = np.lexsort((-gain, levels))
        return ps, order

    def _move(self, state: GameState, ps, i: int) -> Move:
        path, jump = ps.path(i), bool(ps.jump[i])
        return Move(path, jump, _victims(state, path, jump, int(ps.nsq[i]), self.capture_pruner))

    def _negamax(self, state: GameState, depth: int, alpha: float, beta: float, ply: int) -> float:
        self.nodes += 1
        if time.perf_counter() > self._deadline:
            raise _Timeout
        out = state.outcome()
        if out.terminal:
            if out.winner is None or out.winner < 0:
                return 0.0
            return (WIN_SCORE - ply) if out.winner == state.side else -(WIN_SCORE - ply)
        if depth == 0:
            return self._evaluate(state)
        ps, order = self._children(state)
        best = -np.inf
        for i in order:
            v = -self._negamax(state._play(self._move(state, ps, int(i))), depth - 1, -beta, -alpha, ply + 1)
            if v > best:
                best = v
            if v > alpha:
                alpha = v
            if alpha >= beta:
                break
        return best

    def _root(self, state: GameState, depth: int, first: int | None) -> tuple[int, float]:
        """Search the root to ``depth``; the best move so far is kept in ``self._partial`` so that an
        interrupted iteration still counts (its first child is the previous iteration's best)."""
        ps, order = self._children(state)
        if first is not None:
            order = np.concatenate(([first], order[order != first]))
        alpha, beta = -np.inf, np.inf
        best_i, best_v = int(order[0]), -np.inf
        self._partial = None
        for i in order:
            i = int(i)
            v = -self._negamax(state._play(self._move(state, ps, i)), depth - 1, -beta, -alpha, 1)
            if v > best_v:
                best_i, best_v = i, v
                self._partial = (best_i, best_v)
            if v > alpha:
                alpha = v
        return best_i, best_v

    def _select(self, state: GameState) -> Move:
        if state.phase == PHASE_LAYOUT:
            scores = greedy_layout_scores(state, self.evaluator, self.prior, self.prior_weight)
            best = np.flatnonzero(scores >= scores.max() - 1e-9)
            return Move((int(best[int(self.rng.integers(len(best)))]),))
        start = time.perf_counter()
        self._deadline = start + self.time_budget if self.time_budget is not None else float("inf")
        self.nodes = 0
        self.completed_depth = 0
        ps, order = self._children(state)
        best_i = int(order[0])
        if ps.m > 1:
            for d in range(1, self.max_depth + 1):
                try:
                    best_i, v = self._root(state, d, best_i if d > 1 else None)
                except _Timeout:
                    if self._partial is not None:
                        best_i = self._partial[0]
                    break
                self.completed_depth = d
                if abs(v) >= WIN_SCORE - 1000:  # a forced result is known: deeper search cannot change it
                    break
        return self._move(state, ps, best_i)


# ============================================================================ expert
JITTER = 1e-6  # the expert's tie-breaking noise: uniform in [0, JITTER) added to every score


class ExpertAgent(_Agent):
    """The JFA auxiliary agent from human knowledge (module docstring; its scores are
    ``knowledge.expert.ExpertKnowledge``'s, kernels in ``knowledge/expert_kernels.py`` and
    ``knowledge/layout_kernels.py``).

    Options (all from spec strings except the weight arrays):

    - ``plies`` (2): 2 checks the ``top`` (8) best paths against the opponent's replies
      (``ExpertKnowledge.two_ply_scores``), 1 uses the one-ply scores alone (``ExpertKnowledge.one_ply``);
    - ``replies`` (48): opponent replies examined per candidate when there are more (flights);
    - ``k_full`` (64): paths scored in full when there are more (flights), best by pre-score;
    - ``victims`` (``"threat"``): square-victim rule, see :meth:`victims`;
    - ``pool`` (12): single victims ``best_victims`` pairs for two-victim moves;
    - ``layout_mix`` (0.3): weight of the knowledge layout kernel on top of the greedy layout score;
      ``prior`` (1): weight of the Gaussian prior scaled to max 1;
    - ``noise`` / ``layout_noise`` (0): standard deviation of Gaussian noise added to the battle /
      layout scores for diverse self-play (otherwise only seeded tie-breaking);
    - ``weights`` / ``layout_weights`` / ``eval_weights``: arrays replacing
      ``knowledge.expert_kernels.BATTLE_WEIGHTS`` / ``knowledge.layout_kernels.LAYOUT_WEIGHTS`` /
      ``knowledge.expert_kernels.EVAL_WEIGHTS``.

    ``knowledge`` is the scores' service: the process-wide ``knowledge.expert.default_knowledge()``
    when ``k_full``, ``layout_mix``, ``prior`` and the weights are the defaults (shared with the expert
    plugins and its cache of one-ply scores), else an instance of its own.

    Public helpers for training code: :meth:`layout_scores`, :meth:`battle_scores` and
    :meth:`victims` (the auxiliary agent "responsible for square capturing", JFA section 4.2).

    Without noise, a battle move is chosen from scores computed with the two-ply search's alpha cut
    (margin ``2 * JITTER``): the same move as from every score exact, found sooner; when the
    repetition rule changes a score, they are computed again in full.
    """

    name = "expert"

    VICTIM_RULES = ("threat", "eq9", "kernel")

    def __init__(self, seed: int = 0, noise: float = 0.0, layout_noise: float = 0.0, k_full: int = 64,
                 prior: float = 1.0, pool: int = 12, victims: str = "threat", plies: int = 2, top: int = 8,
                 replies: int = 48, layout_mix: float = 0.3, weights=None, layout_weights=None, eval_weights=None):
        super().__init__(seed)
        if int(plies) not in (1, 2):
            raise ValueError(f"expert: plies must be 1 or 2, got {plies!r}")
        self.plies, self.top, self.replies = int(plies), int(top), int(replies)
        if victims not in self.VICTIM_RULES:
            raise ValueError(f"expert: victims must be one of {', '.join(self.VICTIM_RULES)}, got {victims!r}")
        self.victim_rule = victims
        self.noise, self.layout_noise = float(noise), float(layout_noise)
        knowledge = ExpertKnowledge(k_full=k_full, layout_mix=layout_mix, prior=prior, weights=weights,
                                    layout_weights=layout_weights, eval_weights=eval_weights)
        self.knowledge = default_knowledge() if knowledge.is_default() else knowledge
        self.capture_pruner = CapturePruner(top=1, pool=int(pool))
        self.threat_pruner = ThreatCapturePruner(top=1, pool=int(pool))

    def layout_scores(self, state: GameState) -> np.ndarray:
        """``float64[196]`` layout scores of the legal placements (``-inf`` elsewhere), before noise
        (``ExpertKnowledge.layout_scores``)."""
        return self.knowledge.layout_scores(state)

    def battle_scores(self, state: GameState, margin: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
        """``(scores float64[m], levels int8[m])`` of the legal paths (``state.paths()`` order), before
        noise; ``scores`` writable, ``levels`` read-only (``ExpertKnowledge.battle_scores`` with this
        agent's ``plies``, ``top`` and ``replies``).

        ``margin`` (``plies=2`` only; expert units, >= 0): the alpha cut of
        ``knowledge.expert_kernels.refine_scores``: the scores within ``margin`` of the maximum are
        exact, the others only upper bounds below ``maximum - margin``. ``inf`` (the default): every
        score exact. For callers that need only the best score or move (:meth:`best_score`,
        :meth:`select`). A negative or NaN ``margin`` raises ``ValueError``."""
        return self.knowledge.battle_scores(state, self.plies, self.top, self.replies, margin)

    def best_score(self, state: GameState) -> float:
        """The best legal path's score (:meth:`battle_scores`' maximum, computed with the alpha cut), in
        the expert's units (one stone = 10) for the side to move; raises ``ValueError`` when the
        position has no legal path."""
        if state.paths().m == 0:
            raise ValueError("expert: the position has no legal path to score")
        return float(self.battle_scores(state, margin=0.0)[0].max())

    def _argmax(self, scores: np.ndarray, noise: float) -> int:
        jitter = self.rng.random(len(scores)) * JITTER
        if noise > 0:
            jitter += self.rng.normal(0.0, noise, len(scores))
        return int(np.argmax(scores + jitter))

    def _select(self, state: GameState) -> Move:
        if state.phase == PHASE_LAYOUT:
            return Move((self._argmax(self.layout_scores(state), self.layout_noise),))
        ps = state.paths()
        # Without noise only the paths within the jitter of the best can be chosen, so the alpha cut
        # gives the same move; unless the repetition rule moves a score, which needs them all exact.
        # (With top <= REPETITION_TOP every searched path is among those it looks at, cut or not.)
        cut = self.noise == 0 and self.top <= REPETITION_TOP
        scores, _ = self.battle_scores(state, 2 * JITTER if cut else math.inf)  # 2x: room for rounding
        if self.repetition_adjust(state, ps, scores) and cut:
            scores, _ = self.battle_scores(state)
            self.repetition_adjust(state, ps, scores)
        i = self._argmax(scores, self.noise)
        path, jump = ps.path(i), bool(ps.jump[i])
        return Move(path, jump, self.victims(state, path, jump, int(ps.nsq[i])))

    def repetition_adjust(self, state: GameState, ps, scores: np.ndarray, top: int = REPETITION_TOP) -> bool:
        """``ExpertKnowledge.repetition_adjust``: ``scores`` changed in place for the repetition rule;
        returns whether any score changed."""
        return self.knowledge.repetition_adjust(state, ps, scores, top)

    def victims(self, state: GameState, path: tuple[int, ...], jump: bool, nsq: int) -> tuple[int, ...]:
        """Square victims of a legal path forming ``nsq`` squares. Rule ``"threat"`` (default): when
        the opponent would have a capturing reply, the stones behind its threats go first, Dalian
        shuttles first (``knowledge.expert_kernels.threat_victims``); otherwise ``best_victims`` (JFA Eq. 9, breaks the
        opponent's Dalians, squares and gates): the first set of ``prune.threat``. ``"eq9"``: always
        ``best_victims``; ``"kernel"``: always the kernel's rule."""
        if nsq <= 0:
            return ()
        if self.victim_rule == "threat":  # the threat pruner's first set (knowledge.pruning.ThreatCapturePruner)
            return self.threat_pruner.candidates(state, path, jump)[0][0]
        if self.victim_rule == "kernel":
            s = state.side
            k = min(nsq, len(state.victims_left(path, jump)))
            if k == 0:
                return ()
            out, _ = threat_victims(state.board, s, state.counts[s], state.counts[1 - s], state.ruleset.vector,
                                    np.asarray(path, np.int16), jump, k)
            return tuple(int(v) for v in out)
        return _victims(state, path, jump, nsq, self.capture_pruner)


# ============================================================================ rollout
ROLLOUT_PLIES_MAX = 100_000  # battle plies of one rollout (eval.rollout and the rollout agent)
ROLLOUTS_MAX = 10_000  # rollouts per evaluation or per compared placement
TREE_ROLLOUTS = 44  # the tree search's rollouts per placement: the budget of lookahead_from's 3 x 3 x 4 + 2 x 4
TREE_C = 3.0  # its UCB1 exploration constant, stones (about one rollout's spread over sqrt(ln 44))


class RolloutEvaluator:
    """``eval.rollout``: a position valued by expert rollouts (AlphaGo's rollouts, Silver et al. 2016,
    with the expert agent as the rollout policy on both sides), the judge of the ``rollout`` layout
    agent and of a layout search's leaves (``SearchConfig.layout_value_evaluator``).

    One rollout (:meth:`rollout`, its stones counted by :meth:`stone_difference`): an expert whose
    generator is seeded with the rollout's seed completes the layout, plays ``battle_plies`` battle
    plies (fewer when the game ends) and the stones are counted. :meth:`margin` is the mean stone
    difference for the side to move over ``rollouts`` rollouts whose seeds derive from ``(seed,
    state.ply, i)``: the same for every position of one ply, so that the siblings of a search node are
    compared under common random numbers, and the same state always gets the same value (a deterministic
    search). ``value`` is ``tanh(margin / scale)`` (``scale`` in stones), the result in a terminal
    position. Layout or battle positions; the cost is ``rollouts`` times the remaining placements and
    ``battle_plies`` expert battle moves. Thread-safe (one rollout expert per thread). ``battle_plies``
    0..100,000, ``rollouts`` 1..10,000, ``scale`` finite > 0, ``seed`` 0..2**63-1, else ``ValueError``.
    """

    name = "eval.rollout"

    def __init__(self, battle_plies: int = 64, rollouts: int = 1, scale: float = 8.0, seed: int = 0):
        if not 0 <= battle_plies <= ROLLOUT_PLIES_MAX:
            raise ValueError(f"eval.rollout: battle_plies must be in 0..{ROLLOUT_PLIES_MAX}, got {battle_plies!r}")
        if not 1 <= rollouts <= ROLLOUTS_MAX:
            raise ValueError(f"eval.rollout: rollouts must be in 1..{ROLLOUTS_MAX}, got {rollouts!r}")
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"eval.rollout: scale must be a finite number > 0, got {scale!r}")
        if not 0 <= seed <= SEED_MAX:
            raise ValueError(f"eval.rollout: seed must be in 0..{SEED_MAX}, got {seed!r}")
        self.battle_plies, self.rollouts, self.scale, self.seed = int(battle_plies), int(rollouts), float(scale), int(seed)
        self._local = threading.local()

    def rollout_line(self, state: GameState, seed) -> Iterator[GameState]:
        """The battle positions of one rollout from ``state`` (a layout position, or a battle position),
        in order: the expert, its generator seeded with ``seed`` (an int or a
        ``numpy.random.SeedSequence``), plays both sides to the end of the layout (the first position
        yielded) and then ``battle_plies`` battle plies, one position after each, fewer when the game
        ends."""
        roller = getattr(self._local, "expert", None)
        if roller is None:
            roller = self._local.expert = ExpertAgent()
        roller.rng = np.random.default_rng(seed)
        s = finish_layout(state, roller)
        yield s
        for _ in range(self.battle_plies):
            if s.is_terminal():
                break
            s = s._play(roller.select(s))
            yield s

    def rollout(self, state: GameState, seed) -> GameState:
        """The position one rollout from ``state`` reaches: the last of :meth:`rollout_line`."""
        for s in self.rollout_line(state, seed):
            pass
        return s

    def stone_difference(self, state: GameState, player: int, seed) -> float:
        """Stones of ``player`` minus the opponent's in the position of one :meth:`rollout` from
        ``state`` under ``seed``."""
        s = self.rollout(state, seed)
        return float(int(s.counts[player]) - int(s.counts[1 - player]))

    def margin(self, state: GameState) -> float:
        """Mean :meth:`stone_difference` for the side to move over the ``rollouts`` seeds of the state's
        ply (class docstring); in stones. The latest state's margin is kept per thread, so that
        ``score`` for both players and ``value`` of one state cost one set of rollouts."""
        key = (state.hash, state.ply, int(state.counts[0]), int(state.counts[1]))
        last = getattr(self._local, "last", None)
        if last is not None and last[0] == key:
            return last[1]
        m = float(np.mean([self.stone_difference(state, state.side, np.random.SeedSequence([self.seed, state.ply, i]))
                           for i in range(self.rollouts)]))
        self._local.last = (key, m)
        return m

    def score(self, state: GameState, player: int) -> float:
        """:meth:`margin` from ``player``'s point of view (zero-sum); raises ``ValueError`` for a player
        other than 0 (White) or 1 (Black)."""
        if player not in (0, 1):
            raise ValueError(f"eval.rollout: player must be 0 (White) or 1 (Black), got {player!r}")
        m = self.margin(state)
        return m if player == state.side else -m

    def value(self, state: GameState) -> float:
        """``tanh(margin / scale)`` for the side to move in [-1, 1]; +1 / -1 / 0 for a won, lost or drawn
        terminal position."""
        if state.is_terminal():
            return state.returns()[state.side]
        return math.tanh(self.margin(state) / self.scale)


@register("eval.rollout", "evaluator")
def make_rollout_evaluator(battle_plies: int = 64, rollouts: int = 1, scale: float = 8.0, seed: int = 0) -> RolloutEvaluator:
    """Expert rollouts into the battle: tanh(stone difference after battle_plies / scale), mean of rollouts."""
    return RolloutEvaluator(battle_plies=battle_plies, rollouts=rollouts, scale=scale, seed=seed)


def halving_survivors(means: np.ndarray) -> np.ndarray:
    """``int64[ceil(k / 2)]``, ascending: the indices of the better half of ``k`` candidates by
    ``means`` (``float64[k]``), ties to the lower index (the higher expert score); the survivors of
    a sequential-halving round (:class:`RolloutLayoutAgent`)."""
    return np.sort(np.argsort(-np.asarray(means), kind="stable")[: (len(means) + 1) // 2]).astype(np.int64)


class RolloutLayoutAgent(_Agent):
    """Flat Monte Carlo layout with the expert as the rollout policy (a layout baseline and a measuring
    instrument: it models an ``expert`` opponent exactly, apart from that agent's tie-break seeds).

    Before layout ply ``from_ply`` (placements made) and in the battle it plays as ``expert`` (its own
    generator). From ``from_ply`` on, each of the expert's ``top`` placements by score
    (:meth:`ExpertAgent.layout_scores`) gets ``rollouts`` rollouts
    (:meth:`RolloutEvaluator.stone_difference` with ``battle_plies``) under seeds drawn from the
    agent's generator, the same seeds for every candidate (common random numbers); the highest mean
    stone difference for the player who placed wins and ties go to the higher expert score: a layout
    value judged by the first stretch of the battle, the one the layout decides most directly.

    With ``halving_rollouts`` > 0, one round of sequential halving (Karnin et al. 2013) follows: the
    better half of the candidates by that mean (``ceil(k / 2)`` of ``k``, ties to the higher expert
    score) get ``halving_rollouts`` more rollouts each under further common seeds, and the pick is
    the highest mean over all of a survivor's rollouts: the rollouts go where the choice is close.

    From layout ply ``late_from`` on, ``late_top`` placements are compared instead of ``top``: under
    expert play a layout's result is decided in its last few dozen placements (``python -m
    bench.battle_noise --ply P``), and there the expert's ranking of its placements says little
    about which is best (``python -m bench.judge_noise --from-ply P --top K``).

    From layout ply ``lookahead_from`` on, a two-placement lookahead: each candidate's rollouts start
    from its best follow-up (:meth:`lookahead_leaves`: the expert's modelled reply, then the best of
    our ``lookahead_top`` next candidates by the same rollouts), so that a placement is judged with
    our next one searched rather than the expert's.

    From layout ply ``tree_from`` on (and ``from_ply``), a tree search instead (:meth:`tree_pick`,
    ``knowledge.layout_tree``): UCT over our own placements, ``top_at`` candidates a node, the
    opponent's modelled reply after each, one rollout a leaf, ``tree_rollouts`` of them a placement,
    exploration ``tree_c`` (stones); the subtree of the chosen placement is kept for the next one when
    the opponent replies as modelled. The other options of the search (rollouts, halving, lookahead)
    do not apply there.

    Cost per searched placement: ``k * rollouts + ceil(k / 2) * halving_rollouts`` rollouts (``k`` the
    candidates compared; ``k * lookahead_top * rollouts + ...`` with the lookahead; ``tree_rollouts``
    in the tree search), each the
    remaining placements and ``battle_plies`` expert battle moves (``arena`` prints the seconds per
    move). Options, bounds and defaults: :class:`RolloutOptions`.
    """

    name = "rollout"

    def __init__(self, seed: int, *, from_ply: int, top: int, rollouts: int, battle_plies: int,
                 halving_rollouts: int = 0, late_from: int = NUM_POINTS, late_top: int | None = None,
                 lookahead_from: int = NUM_POINTS, lookahead_top: int = 3, tree_from: int = NUM_POINTS,
                 tree_rollouts: int = TREE_ROLLOUTS, tree_c: float = TREE_C):
        super().__init__(seed)
        if not (math.isfinite(tree_c) and tree_c >= 0):
            raise ValueError(f"rollout: tree_c must be a finite number >= 0, got {tree_c!r}")
        if tree_rollouts < 1:
            raise ValueError(f"rollout: tree_rollouts must be >= 1, got {tree_rollouts!r}")
        self.tree_from, self.tree_rollouts, self.tree_c = int(tree_from), int(tree_rollouts), float(tree_c)
        self.tree = PlacementTree()
        self._chosen = -1  # the tree node of the last placement chosen by tree_pick (-1: none)
        self.last_search: dict | None = None  # the latest tree search's root statistics (tree_pick), for records
        self.from_ply, self.top, self.rollouts = int(from_ply), int(top), int(rollouts)
        self.halving_rollouts = int(halving_rollouts)
        self.late_from, self.late_top = int(late_from), int(top if late_top is None else late_top)
        self.lookahead_from, self.lookahead_top = int(lookahead_from), int(lookahead_top)
        self.expert = ExpertAgent(seed)
        self.judge = RolloutEvaluator(battle_plies=battle_plies)

    def top_at(self, ply: int) -> int:
        """How many placements are compared at layout ply ``ply``: ``late_top`` from ``late_from`` on,
        else ``top``."""
        return self.late_top if ply >= self.late_from else self.top

    def candidates(self, state: GameState, count: int | None = None) -> np.ndarray:
        """``int64[k]``: the expert's ``count`` (default :meth:`top_at`) best legal placements in layout
        ``state``, best score first (``k`` at most the legal ones; :meth:`ExpertAgent.layout_scores`)."""
        scores = self.expert.layout_scores(state)
        order = np.argsort(-scores, kind="stable")
        count = self.top_at(state.ply) if count is None else count
        return np.array([p for p in order[:count] if np.isfinite(scores[p])], np.int64)

    def reply(self, state: GameState) -> int:
        """The opponent's modelled reply in layout ``state``: the expert's best placement by
        :meth:`ExpertAgent.layout_scores`, the first maximum (the expert without its tie-break jitter)."""
        return int(np.argmax(self.expert.layout_scores(state)))

    def rollout_matrix(self, state: GameState, points, seeds) -> np.ndarray:
        """``float64[k, n]``: :meth:`RolloutEvaluator.stone_difference` (stones) for the side to move
        after placing each of ``points`` (``k``) in layout ``state``, one rollout per seed of ``seeds``
        (``n`` ints; the same seeds for every placement)."""
        return self.leaf_matrix([state.apply(Move((int(p),))) for p in points], state.side, seeds)

    def leaf_matrix(self, leaves, player: int, seeds) -> np.ndarray:
        """``float64[k, n]``: :meth:`RolloutEvaluator.stone_difference` (stones) for ``player`` from
        each of the positions ``leaves`` (``k``), one rollout per seed of ``seeds`` (``n`` ints; the
        same seeds for every position)."""
        return np.array([[self.judge.stone_difference(leaf, player, int(seed)) for seed in seeds] for leaf in leaves],
                        np.float64).reshape(len(leaves), len(seeds))

    def layout_rollouts(self, state: GameState, seeds) -> tuple[np.ndarray, np.ndarray]:
        """``(points int64[k], diffs float64[k, n])``: :meth:`candidates` and their
        :meth:`rollout_matrix` under ``seeds``."""
        points = self.candidates(state)
        return points, self.rollout_matrix(state, points, seeds)

    def lookahead_leaves(self, state: GameState, points, seeds) -> tuple[list, np.ndarray]:
        """``(leaves, diffs float64[k, n])``: for each of ``points`` (``k`` placements in layout
        ``state``), the position its rollouts start from under the two-placement lookahead, and those
        rollouts' stone differences for the side to move (:meth:`leaf_matrix` under ``seeds``).

        After placing ``p`` the opponent replies as :meth:`reply` models it; from there each of our
        :meth:`candidates` (``lookahead_top`` of them) gets the rollouts, and ``p``'s leaf is the one
        with the highest mean (ties to the earlier candidate): ``p`` is valued by its best follow-up,
        as our search will play it, not by the expert's. Where the layout ends before our next
        placement, the leaf is the position after ``p`` (or after the reply). A leaf's diffs are the
        best of ``lookahead_top`` means, so biased upwards alike for every candidate of one ply (the
        halving round's further rollouts of the leaf are not)."""
        leaves, rows = [], []
        for p in points:
            leaf = state.apply(Move((int(p),)))
            if leaf.phase == PHASE_LAYOUT:
                leaf = leaf.apply(Move((self.reply(leaf),)))
            if leaf.phase == PHASE_LAYOUT:
                follow = [leaf.apply(Move((int(d),))) for d in self.candidates(leaf, self.lookahead_top)]
                diffs = self.leaf_matrix(follow, state.side, seeds)
                best = int(np.argmax(diffs.mean(axis=1)))
                leaves.append(follow[best])
                rows.append(diffs[best])
            else:
                leaves.append(leaf)
                rows.append(self.leaf_matrix([leaf], state.side, seeds)[0])
        return leaves, np.array(rows, np.float64).reshape(len(points), len(seeds))

    def _select(self, state: GameState) -> Move:
        self.last_search = None
        if state.phase != PHASE_LAYOUT or state.ply < self.from_ply:
            return self.expert.select(state)
        if state.ply >= self.tree_from:
            return Move((self.tree_pick(state),))
        seeds = self.rng.integers(0, 2**62, self.rollouts + self.halving_rollouts)
        return Move((self.pick(state, seeds),))

    def tree_root(self, state: GameState) -> int:
        """The tree node to search layout ``state`` from: the child chosen by the last
        :meth:`tree_pick` when ``state`` is its position (we placed it and the opponent replied as
        modelled: its statistics are kept), else a new tree holding ``state`` alone."""
        tree, c = self.tree, self._chosen
        if c >= 0:
            known = tree.states[c]
            # In the layout the ply decides the side to place, so ply and board identify the position.
            if known.ply == state.ply and np.array_equal(known.board, state.board):
                return c
        tree.reset()
        self._chosen = -1
        return tree.add(state)

    def tree_expand(self, node: int) -> None:
        """Expand ``node`` of :attr:`tree`: a child per :meth:`candidates` (best first), its position
        after that placement and the opponent's :meth:`reply` (no reply when the layout ends first)."""
        s = self.tree.states[node]
        points = self.candidates(s)
        children = []
        for p in points:
            child = s.apply(Move((int(p),)))
            if child.phase == PHASE_LAYOUT:
                child = child.apply(Move((self.reply(child),)))
            children.append(child)
        self.tree.expand(node, points, children)

    def tree_pick(self, state: GameState) -> int:
        """The placement chosen in layout ``state`` by the tree search (class docstring;
        ``knowledge.layout_tree``). Each of ``tree_rollouts`` simulations descends from the root by
        :meth:`PlacementTree.select_child` (unvisited children first, best candidate first; then UCB1
        with ``tree_c``), expands a node on its second visit if we are to place there (the root at
        once), and backs up one rollout (:meth:`RolloutEvaluator.stone_difference` for us) from the
        node it stops at, seeded by ``(a draw of the agent's generator, the node's ply, the node's
        visits)``: siblings' first rollouts share their seeds (common random numbers). The most visited
        root child wins (ties: higher mean, then the better candidate). Sets :attr:`last_search`:
        ``{"visits": the root's rollouts, "kept": those of them from earlier searches, "nodes": the
        tree's size, "value": the chosen child's mean stone difference}``."""
        tree, me = self.tree, state.side
        root = self.tree_root(state)
        kept = int(tree.visits[root])
        base = int(self.rng.integers(0, 2**62))
        for _ in range(self.tree_rollouts):
            node, path = root, [root]
            while True:
                s = tree.states[node]
                if (not tree.expanded(node) and (node == root or tree.visits[node] > 0)
                        and s.phase == PHASE_LAYOUT and s.side == me):
                    self.tree_expand(node)
                if not tree.expanded(node):
                    break
                node = tree.select_child(node, self.tree_c)
                path.append(node)
                if tree.visits[node] == 0:
                    break
            leaf = tree.states[node]
            seed = np.random.SeedSequence([base, leaf.ply, int(tree.visits[node])])
            tree.backup(path, self.judge.stone_difference(leaf, me, seed))
        self._chosen = tree.best_child(root)
        self.last_search = {"visits": int(tree.visits[root]), "kept": kept, "nodes": tree.size,
                            "value": round(tree.mean(self._chosen), 4)}
        return int(tree.point[self._chosen])

    def pick(self, state: GameState, seeds) -> int:
        """The placement chosen in layout ``state`` with the rollout seeds ``seeds`` (ints: the first
        ``rollouts`` for every candidate, the next ``halving_rollouts`` for the survivors of the
        halving round; class docstring). From ``lookahead_from`` on a candidate's rollouts start
        from its :meth:`lookahead_leaves` leaf. Ties go to the higher expert score."""
        points = self.candidates(state)
        first = seeds[: self.rollouts]
        if state.ply >= self.lookahead_from:
            leaves, diffs = self.lookahead_leaves(state, points, first)
        else:
            leaves = [state.apply(Move((int(p),))) for p in points]
            diffs = self.leaf_matrix(leaves, state.side, first)
        means = diffs.mean(axis=1)
        keep = halving_survivors(means)
        if self.halving_rollouts == 0 or len(keep) < 2:
            return int(points[int(np.argmax(means))])  # argmax: the first maximum, the higher expert score
        more = self.leaf_matrix([leaves[i] for i in keep], state.side,
                                seeds[self.rollouts: self.rollouts + self.halving_rollouts])
        totals = np.concatenate([diffs[keep], more], axis=1).mean(axis=1)
        return int(points[keep][int(np.argmax(totals))])


# ============================================================================ phased
class PhasedAgent:
    """Plays the layout with ``layout_agent`` and the battle with ``battle_agent``; ``name`` is
    ``"layout_name+battle_name"``, ``last_think_time`` that of the agent that moved last."""

    def __init__(self, layout_agent, battle_agent):
        self.layout_agent, self.battle_agent = layout_agent, battle_agent
        self.name = f"{layout_agent.name}+{battle_agent.name}"
        self.last_think_time = 0.0
        self.last_agent = None

    def select(self, state: GameState) -> Move:
        agent = self.layout_agent if state.phase == PHASE_LAYOUT else self.battle_agent
        try:
            return agent.select(state)
        finally:
            self.last_agent = agent
            self.last_think_time = agent.last_think_time

    @property
    def last_search(self) -> dict | None:
        """Search statistics of the agent that moved last, if it reports any."""
        return getattr(self.last_agent, "last_search", None)

    def close(self) -> None:
        """Release both agents' resources (search threads, evaluators)."""
        for agent in (self.layout_agent, self.battle_agent):
            close = getattr(agent, "close", None)
            if callable(close):
                close()

    def __repr__(self) -> str:
        return f"<PhasedAgent {self.name}>"


def _parts(spec: str) -> list[str]:
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError("agent spec: must be a non-empty string")
    parts = [p.strip() for p in spec.split("+")]
    if len(parts) > 2 or not all(parts):
        raise SpecError(f"agent spec {spec!r}: expected NAME[:k=v,...] or LAYOUT+BATTLE")
    return parts


def validate_agent_spec(spec: str, **overrides: Any) -> None:
    """Validate an agent spec (``NAME[:k=v,...]`` or ``LAYOUT+BATTLE``) without building the agent:
    names registered, options of the right types and in range. Raises ``knowledge.registry.SpecError``
    (one line naming the agent and the option) or ``UnknownNameError``. Agents registered by higher
    layers (``search.agents``) are known once they are imported (the ``catalog`` module does)."""
    parts = _parts(spec)
    for part in parts:
        REGISTRY.check(part, "agent", **overrides)


def make_agent(spec: str, seed: int = 0, **overrides: Any):
    """An agent from a spec string: ``NAME[:k=v,...]`` or ``LAYOUT+BATTLE`` (each part a spec, e.g.
    ``expert+minimax:depth=2``, combined by :class:`PhasedAgent`), seeded with ``seed`` (both parts get
    the same seed). ``overrides`` go to a single agent's options. Raises ``SpecError`` /
    ``UnknownNameError`` (``knowledge.registry``) for a bad spec."""
    parts = _parts(spec)
    if len(parts) == 1:
        return REGISTRY.create(parts[0], "agent", seed=seed, **overrides)
    if overrides:
        raise SpecError(f"agent spec {spec!r}: keyword overrides apply to a single agent; put them in each part")
    return PhasedAgent(REGISTRY.create(parts[0], "agent", seed=seed), REGISTRY.create(parts[1], "agent", seed=seed))


# ============================================================================ options and registration
WEIGHT_MAX = 1e6  # bound of the score weights and noise levels below (scores are O(10-1000))


def _weight(default: float, description: str) -> Any:
    return Field(default, ge=0, le=WEIGHT_MAX, description=description)


class AgentOptions(Options):
    """Options every agent takes (spec strings, validated; base of every agent's options model)."""

    seed: int = Field(0, ge=0, le=SEED_MAX, description="seed of the agent's generator (same seed and positions, same moves)")


class GreedyOptions(AgentOptions):
    capture: float = _weight(5.0, "score per stone taken")
    prior: float = _weight(1.0, "layout: weight of the Gaussian prior scaled to max 1")


class MinimaxOptions(AgentOptions):
    time: float | None = Field(None, gt=0, le=3600, description="seconds per battle move (0.5 when depth is not given)")
    depth: int | None = Field(None, ge=1, le=64, description="fixed search depth in plies (with time: whichever ends first)")
    material: float = _weight(4.0, "leaf score per stone of difference")
    max_depth: int = Field(8, ge=1, le=64, description="cap of iterative deepening")
    prior: float = _weight(1.0, "layout: weight of the Gaussian prior scaled to max 1")


class ExpertOptions(AgentOptions):
    noise: float = _weight(0.0, "standard deviation of Gaussian noise on the battle scores")
    layout_noise: float = _weight(0.0, "standard deviation of Gaussian noise on the layout scores")
    k_full: int = Field(64, ge=1, le=100_000, description="paths scored in full when there are more (flights)")
    prior: float = _weight(1.0, "layout: weight of the Gaussian prior scaled to max 1")
    pool: int = Field(12, ge=2, le=196, description="best single victims paired for two-victim moves")
    victims: Literal["threat", "eq9", "kernel"] = Field("threat", description="square-victim rule (ExpertAgent.victims)")
    plies: int = Field(2, ge=1, le=2, description="2: check the best paths against the replies; 1: one-ply scores")
    top: int = Field(8, ge=1, le=1000, description="best paths checked against the opponent's replies")
    replies: int = Field(48, ge=1, le=100_000, description="opponent replies examined per candidate when there are more")
    layout_mix: float = _weight(0.3, "weight of the knowledge layout kernel on the greedy layout score")


class RolloutOptions(AgentOptions):
    from_ply: int = Field(120, ge=0, le=NUM_POINTS, description="layout ply (placements made) from which placements are chosen by rollouts")
    top: int = Field(3, ge=1, le=NUM_POINTS, description="the expert's best placements compared by rollouts")
    rollouts: int = Field(2, ge=1, le=ROLLOUTS_MAX, description="rollouts per compared placement (the same seeds for each)")
    halving_rollouts: int = Field(0, ge=0, le=ROLLOUTS_MAX, description="more rollouts for each of the better half after the first round (0: none)")
    battle_plies: int = Field(64, ge=0, le=ROLLOUT_PLIES_MAX, description="expert battle plies a rollout plays after the layout")
    late_from: int = Field(NUM_POINTS, ge=0, le=NUM_POINTS,
                           description="layout ply from which late_top placements are compared, not top (196: never)")
    late_top: int = Field(6, ge=1, le=NUM_POINTS, description="placements compared from late_from on")
    lookahead_from: int = Field(NUM_POINTS, ge=0, le=NUM_POINTS,
                                description="layout ply from which a candidate is valued by its best follow-up "
                                            "after the expert's reply (two-placement lookahead; 196: never)")
    lookahead_top: int = Field(3, ge=1, le=NUM_POINTS, description="our next placements compared in the lookahead")
    tree_from: int = Field(NUM_POINTS, ge=0, le=NUM_POINTS,
                           description="layout ply from which placements are chosen by a tree search over ours "
                                       "(UCT, the expert's modelled replies, one rollout a leaf; 196: never)")
    tree_rollouts: int = Field(TREE_ROLLOUTS, ge=1, le=ROLLOUTS_MAX, description="rollouts of the tree search per placement")
    tree_c: float = Field(TREE_C, ge=0, le=1000, description="the tree search's UCB1 exploration constant, in stones")

    def rollout_options(self) -> dict[str, Any]:
        """The keyword arguments of :class:`RolloutLayoutAgent` (every rollout option but the seed)."""
        return {name: getattr(self, name) for name in RolloutOptions.model_fields if name != "seed"}


@register("random", "agent", options=AgentOptions)
def make_random(o: AgentOptions) -> RandomAgent:
    """Uniform random legal path, then a uniform victim set (uniform placement in the layout)."""
    return RandomAgent(o.seed)


@register("greedy", "agent", options=GreedyOptions)
def make_greedy(o: GreedyOptions) -> GreedyAgent:
    """One ply: stones taken plus eval.shape after the move; layout: Gaussian prior plus shape gain."""
    return GreedyAgent(o.seed, capture=o.capture, prior=o.prior)


@register("minimax", "agent", options=MinimaxOptions)
def make_minimax(o: MinimaxOptions) -> MinimaxAgent:
    """Alpha-beta negamax, iterative deepening (time= seconds, default 0.5) or depth=, Table 1 ordering."""
    return MinimaxAgent(o.seed, time=o.time, depth=o.depth, material=o.material, max_depth=o.max_depth, prior=o.prior)


@register("expert", "agent", options=ExpertOptions)
def make_expert(o: ExpertOptions) -> ExpertAgent:
    """The JFA auxiliary agent: knowledge layout, Table 1 battle policy with a safety check of the replies."""
    return ExpertAgent(o.seed, noise=o.noise, layout_noise=o.layout_noise, k_full=o.k_full, prior=o.prior, pool=o.pool,
                       victims=o.victims, plies=o.plies, top=o.top, replies=o.replies, layout_mix=o.layout_mix)


@register("rollout", "agent", options=RolloutOptions)
def make_rollout(o: RolloutOptions) -> RolloutLayoutAgent:
    """Expert layout, late placements chosen among its top by expert rollouts into the battle; expert battle."""
    return RolloutLayoutAgent(o.seed, **o.rollout_options())
