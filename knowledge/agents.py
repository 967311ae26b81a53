"""Knowledge agents: the baselines (``random``, ``greedy``, ``minimax``) and the ``expert``.

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

The ``rollout`` layout agent and the ``eval.rollout`` evaluator (expert rollouts) are experiments in
``lab/rollout.py``, registered by ``--import lab.rollout`` (``lab/README.md``).
"""

from __future__ import annotations

import math
import time
from typing import Any, Literal

import numpy as np
from pydantic import Field

from core.board import PHASE_LAYOUT
from core.notation import Move
from core.play import play_path
from core.state import GameState
from knowledge.expert import REPETITION_TOP, ExpertKnowledge, default_knowledge
from knowledge.expert_kernels import threat_victims
from knowledge.formation import GaussianPrior, ShapeEvaluator, greedy_layout_scores
from knowledge.pruning import CapturePruner, ThreatCapturePruner, best_victims
from knowledge.pruning_kernels import path_levels
from knowledge.registry import REGISTRY, SEED_MAX, Options, SpecError, register

__all__ = [
    "RandomAgent",
    "GreedyAgent",
    "MinimaxAgent",
    "ExpertAgent",
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


def file_options(spec: str) -> list[str]:
    """The options of agent spec ``spec`` that name a file (``knowledge.registry.NAMES_FILE``: weights
    paths; ``none`` names none), as ``"agent:option"``, looking into both parts of ``LAYOUT+BATTLE`` and into the agent specs
    given as option values (``battle=slm:slm=FILE``). Reads the spec only, never the file system.
    Raises ``SpecError`` for a spec that does not parse or names an unknown agent."""
    from knowledge.registry import AGENT_SPEC, NAMES_FILE, flagged_options, parse_spec

    found: list[str] = []
    for part in _parts(spec):
        name, options = parse_spec(part)
        model = REGISTRY.entry(name, "agent").options
        files, nested = flagged_options(model, NAMES_FILE), flagged_options(model, AGENT_SPEC)
        for key, value in options.items():
            if key in files and value.strip().lower() != "none":
                found.append(f"{name}:{key}")
            elif key in nested and value.strip() and value.strip() != "search":
                found.extend(file_options(value))
    return found


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
