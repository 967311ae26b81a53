"""``approxq``: a linear action-value agent, ``Q(s, a) = w . phi(s, a)`` (papers/004 section 2.5,
"Approximate Q-Learning Agent", Eq. ``Q(s, a) = w^T phi(s, a)``), playing both phases greedily in Q.

The feature vector follows the paper's split ``phi = [phi_board, phi_tactical, phi_action]``
(section 2.5.2), built here from the rules and the knowledge kernels instead of Jungle Chess
pieces. One weight vector covers both phases: the layout features are zero in the battle and the
battle features zero in the layout, each block with its own bias, so the two phases have their own
weights. Every feature is scaled to about ``[-1, 1]`` (the paper's "feature normalization").

Layout (one row per legal placement ``p`` of the side to move, :func:`layout_features`):

- ``layout_bias``: 1;
- ``layout_prior``: the Gaussian layout prior of ``knowledge.formation`` (papers/001 Eq. 10) at ``p``,
  scaled to max 1 over the legal placements (the greedy agent's prior term);
- ``layout_dalians`` / ``layout_gates`` / ``layout_squares``: the mover's Dalians, gates and squares
  minus the opponent's after the placement (``core.shapes.layout_shape_counts``; the greedy agent's
  shape gain is ``7 / 3 / 4`` times these), divided by 4, 8 and 8;
- ``layout_knowledge``: the expert's layout kernel at ``p`` (``knowledge.layout_kernels.layout_scores``
  with ``LAYOUT_WEIGHTS``) divided by 10.

Battle (one row per legal path, :func:`battle_features`), on the position after the whole move:
the path is played (``core.play.play_path``), then its square victims are removed, chosen by the
expert's kernel rule (``knowledge.expert_kernels.threat_victims_after``: the stones behind the
opponent's immediate capture threats, Dalian shuttles first, then stones of its gates and squares).
The agent plays those same victims, so ``Q`` scores exactly the move played; choosing the victims by
``Q`` among all sets would cost one feature row per set (up to 4,656 pairs for a step). Features:

- board: ``battle_bias`` (1), ``own_stones`` and ``opp_stones`` (counts / 98);
- action: ``taken`` (jump plus square victims, capped at 4, / 4), ``level_dalian``,
  ``level_square``, ``level_jump_or_open`` (JFA Table 1 level one-hot,
  ``knowledge.pruning_kernels.path_levels``; level 4 is all zeros);
- tactical: ``reply`` (the most stones the opponent's best reply takes, capped at 4, / 4),
  ``reply_breadth`` (distinct points where the opponent captures, capped at 4, / 4), ``ours`` (the
  most stones our next move could take if left alone, capped at 4, / 4; both from
  ``knowledge.expert_kernels._reply``), ``own_squares``, ``own_gates``, ``own_open_gates``,
  ``own_dalians`` and the opponent's four (``core.shapes.shape_counts_from``; squares and gates
  capped at 8 and / 8, Dalians capped at 4 and / 4), ``wins`` (1 when the opponent is left below
  ``loss_below`` stones or without a legal move; ``reply``, ``reply_breadth`` are then 0) and
  ``loses`` (1 when the opponent's best reply takes us below ``loss_below``).

Weights files (JSON, :func:`load_weights`): ``{"format": "jiu-approxq", "version": 1, "features":
[names in FEATURE_NAMES order], "weights": [floats]}`` plus free ``meta``; the shipped default is
``models/approxq/weights.json`` (trained by ``python cli.py train-approxq``, model card beside it).
Ties of ``Q`` (within ``1e-9``) are broken by the agent's seeded generator.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from core.board import NUM_CELLS, NUM_POINTS, PHASE_LAYOUT, STONES_PER_SIDE
from core.errors import JiuError
from core.inputs import read_text
from core.jit import kernel
from core.movegen import cell_sums, new_path_buffers, square_targets
from core.notation import Move
from core.play import play_path
from core.rules import R_LOSS_BELOW
from core.shapes import shape_counts_from
from core.state import GameState
from knowledge.agents import AgentOptions
from knowledge.expert_kernels import _reply, threat_victims_after
from knowledge.formation import GaussianPrior
from knowledge.layout_kernels import LAYOUT_WEIGHTS, layout_scores, placement_shape_counts
from knowledge.pruning_kernels import path_levels
from knowledge.registry import MODELS_DIR, NAMES_FILE, register

__all__ = [
    "BATTLE",
    "DEFAULT_WEIGHTS",
    "FEATURE_NAMES",
    "LAYOUT",
    "N_FEATURES",
    "ApproxQAgent",
    "WeightsError",
    "battle_features",
    "initial_weights",
    "layout_features",
    "load_weights",
    "save_weights",
    "state_features",
]

LAYOUT_NAMES = ("layout_bias", "layout_prior", "layout_dalians", "layout_gates", "layout_squares", "layout_knowledge")
BATTLE_NAMES = ("battle_bias", "own_stones", "opp_stones", "taken", "level_dalian", "level_square",
                "level_jump_or_open", "reply", "reply_breadth", "ours", "own_squares", "own_gates", "own_open_gates",
                "own_dalians", "opp_squares", "opp_gates", "opp_open_gates", "opp_dalians", "wins", "loses")
FEATURE_NAMES = LAYOUT_NAMES + BATTLE_NAMES
N_FEATURES = len(FEATURE_NAMES)
LAYOUT = slice(0, len(LAYOUT_NAMES))  # the layout block of phi
BATTLE = slice(len(LAYOUT_NAMES), N_FEATURES)  # the battle block
_B = len(LAYOUT_NAMES)  # first battle column
MAX_VICTIMS = 4  # a flight forms at most 4 squares (rule book 3.3)

WEIGHTS_FORMAT = "jiu-approxq"
WEIGHTS_VERSION = 1
WEIGHTS_LIMIT = 1 << 20  # bytes: a weights file is a few hundred
DEFAULT_WEIGHTS = MODELS_DIR / "approxq" / "weights.json"
TIE = 1e-9


class WeightsError(JiuError):
    """A weights file that cannot be used: unreadable, not JSON, or a field that does not match
    (the one-line message names the file and the field)."""


# ============================================================================ kernels
@kernel
def layout_features(board, side, n_stones, prior, out):
    """Layout features (module docstring) of every legal placement of ``side`` (0 White, 1 Black) on
    the layout ``board`` (``int8[196]``, not modified) holding ``n_stones`` stones. ``prior``
    ``float64[196]``: the Gaussian prior scaled to max 1 over the legal placements; ``out``
    ``float64[>= 196, N_FEATURES]`` (its first ``n`` rows are overwritten). Returns ``(n, points
    int16[n])``: the legal placements (``core.movegen.layout_points`` order) and their rows."""
    n, legal, counts = placement_shape_counts(board, side, n_stones)
    know = layout_scores(board, side, LAYOUT_WEIGHTS)
    for i in range(n):
        p = legal[i]
        for j in range(N_FEATURES):
            out[i, j] = 0.0
        out[i, 0] = 1.0
        out[i, 1] = prior[p]
        out[i, 2] = (counts[i, 2] - counts[i, 5]) / 4.0
        out[i, 3] = (counts[i, 1] - counts[i, 4]) / 8.0
        out[i, 4] = (counts[i, 0] - counts[i, 3]) / 8.0
        out[i, 5] = know[p] / 10.0
    return n, legal[:n].copy()


@kernel
def battle_features(board, side, n_own, n_opp, rules, pts, off, nsq, jump, m, out, victims):
    """Battle features (module docstring) of the ``m`` legal paths of ``side`` (CSR arrays of
    ``GameState.paths()``) on ``board`` (``int8[196]``, not modified; ``n_own``/``n_opp`` the mover's
    and the opponent's stones, ``rules`` ``Ruleset.vector``). Writes row ``i`` of ``out``
    (``float64[>= m, N_FEATURES]``) and the square victims of path ``i`` to ``victims[i]``
    (``int16[>= m, 4]``, ascending, ``-1`` after the last)."""
    loss_below = rules[R_LOSS_BELOW]
    levels = path_levels(board, side, n_own, n_opp, pts, off, nsq, jump, m)
    b = np.empty(NUM_POINTS, np.int8)
    sums = np.empty(NUM_CELLS, np.int16)
    mark = np.zeros(NUM_POINTS, np.bool_)
    qp, qo, qn, qj = new_path_buffers(256)
    for i in range(m):
        b[:] = board
        a = off[i]
        e = off[i + 1]
        jumped = play_path(b, side, pts[a:e], jump[i] != 0)[0]
        opp = n_opp - jumped
        k = min(nsq[i], opp)
        for t in range(MAX_VICTIMS):
            victims[i, t] = -1
        if k > 0:
            chosen, _ = threat_victims_after(b, side, n_own, opp, rules, k)
            for t in range(chosen.shape[0]):
                victims[i, t] = chosen[t]
                b[chosen[t]] = 0
            opp -= chosen.shape[0]
            k = chosen.shape[0]
        taken = jumped + k
        for j in range(N_FEATURES):
            out[i, j] = 0.0
        out[i, _B + 0] = 1.0
        out[i, _B + 1] = n_own / STONES_PER_SIDE
        out[i, _B + 2] = opp / STONES_PER_SIDE
        out[i, _B + 3] = min(taken, 4) / 4.0
        lv = levels[i]
        if lv <= 3:
            out[i, _B + 3 + lv] = 1.0
        wins = opp < loss_below
        if not wins:
            movable, best, breadth, _, _, qp, qo, qn, qj = _reply(b, square_targets(b, 2 - side), 1 - side, opp,
                                                                    n_own, rules, qp, qo, qn, qj, mark, True)
            if not movable:
                wins = True
            else:
                out[i, _B + 7] = min(best, 4) / 4.0
                out[i, _B + 8] = min(breadth, 4) / 4.0
                if n_own - best < loss_below:
                    out[i, _B + 19] = 1.0
        if wins:
            out[i, _B + 18] = 1.0
        _, ours, _, _, _, qp, qo, qn, qj = _reply(b, square_targets(b, side + 1), side, n_own, opp, rules,
                                                   qp, qo, qn, qj, mark, False)
        out[i, _B + 9] = min(ours, 4) / 4.0
        cell_sums(b, sums)
        sq, gates, opn, dal = shape_counts_from(b, sums, side, n_own, opp, rules, qp, qo, qj, -1)
        osq, ogates, oopn, odal = shape_counts_from(b, sums, 1 - side, opp, n_own, rules, qp, qo, qj, -1)
        out[i, _B + 10] = min(sq, 8) / 8.0
        out[i, _B + 11] = min(gates, 8) / 8.0
        out[i, _B + 12] = min(opn, 8) / 8.0
        out[i, _B + 13] = min(dal, 4) / 4.0
        out[i, _B + 14] = min(osq, 8) / 8.0
        out[i, _B + 15] = min(ogates, 8) / 8.0
        out[i, _B + 16] = min(oopn, 8) / 8.0
        out[i, _B + 17] = min(odal, 4) / 4.0


# ============================================================================ Python side
_PRIOR = GaussianPrior()


def state_features(state: GameState) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(phi, actions, victims)`` of a non-terminal ``state``: ``phi`` ``float64[n, N_FEATURES]``, one
    row per legal action; layout: ``actions`` ``int16[n]`` the placements, ``victims`` ``None``;
    battle: ``actions`` ``int64[n]`` the path indices of ``state.paths()``, ``victims`` ``int16[n, 4]``
    (:func:`battle_features`). ``n`` is 0 in a terminal position."""
    if state.phase == PHASE_LAYOUT:
        legal = state.placements()
        prior = np.zeros(NUM_POINTS)
        if legal:
            prior[legal] = _PRIOR.density[legal]
            prior /= prior.max()
        out = np.empty((NUM_POINTS, N_FEATURES))
        n, points = layout_features(state.board, state.side, int(state.counts[0] + state.counts[1]), prior, out)
        return out[:n], points, None
    ps = state.paths()
    s = state.side
    out = np.empty((ps.m, N_FEATURES))
    victims = np.empty((ps.m, MAX_VICTIMS), np.int16)
    if ps.m:
        battle_features(state.board, s, state.counts[s], state.counts[1 - s], state.ruleset.vector, ps.pts, ps.off,
                        ps.nsq, ps.jump, ps.m, out, victims)
    return out, np.arange(ps.m), victims


def action_move(state: GameState, actions: np.ndarray, victims: np.ndarray | None, i: int) -> Move:
    """The full move of row ``i`` of :func:`state_features`' answer for ``state``."""
    if victims is None:
        return Move((int(actions[i]),))
    ps = state.paths()
    j = int(actions[i])
    return Move(ps.path(j), bool(ps.jump[j]), tuple(int(v) for v in victims[i] if v >= 0))


def initial_weights() -> np.ndarray:
    """The weights training starts from (``float64[N_FEATURES]``): the greedy agent's layout score
    (prior 1, shape gain 7 / 3 / 4 per Dalian, gate, square, in feature units) divided by 20, so that
    layout values start on the scale of the battle's rewards; in the battle a stone taken worth a
    stone lost (0.1 per stone, ``train.learning.approxq.REWARD_PER_STONE``, in feature units), a win +1
    and a loss -1, everything else 0."""
    w = np.zeros(N_FEATURES)
    named = {"layout_prior": 0.05, "layout_dalians": 1.4, "layout_gates": 1.2, "layout_squares": 1.6,
             "taken": 0.4, "reply": -0.4, "wins": 1.0, "loses": -1.0}
    for name, value in named.items():
        w[FEATURE_NAMES.index(name)] = value
    return w


def save_weights(path: str | os.PathLike, weights: np.ndarray, meta: dict[str, Any] | None = None) -> None:
    """Write ``weights`` (``float64[N_FEATURES]``) as a weights file (module docstring), atomically."""
    from core.atomic import atomic_write_text

    w = np.asarray(weights, np.float64)
    if w.shape != (N_FEATURES,) or not np.all(np.isfinite(w)):
        raise ValueError(f"approxq weights: expected {N_FEATURES} finite numbers, got shape {w.shape}")
    data = {"format": WEIGHTS_FORMAT, "version": WEIGHTS_VERSION, "features": list(FEATURE_NAMES),
            "weights": [float(x) for x in w], "meta": meta or {}}
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


_LOADED: dict[tuple[str, int], np.ndarray] = {}


def load_weights(path: str | os.PathLike | None = None) -> np.ndarray:
    """The weights (``float64[N_FEATURES]``, read-only) of the weights file ``path`` (default
    :data:`DEFAULT_WEIGHTS`), cached per process by path and modification time. Raises
    :class:`WeightsError` naming the file and the field (``format``, ``version``, ``features``,
    ``weights``) when it does not match this module's features, and ``FileNotFoundError`` when it is
    missing."""
    p = Path(path) if path else DEFAULT_WEIGHTS
    key = (str(p.resolve()), p.stat().st_mtime_ns)
    if key in _LOADED:
        return _LOADED[key]
    try:
        data = json.loads(read_text(p, WEIGHTS_LIMIT, "approxq weights file"))
    except json.JSONDecodeError as exc:
        raise WeightsError(f"approxq weights {p}: not JSON ({exc.msg}, line {exc.lineno})") from None

    def bad(field: str, reason: str) -> WeightsError:
        return WeightsError(f"approxq weights {p}: field {field!r}: {reason}")

    if not isinstance(data, dict):
        raise bad("format", "expected a JSON object")
    if data.get("format") != WEIGHTS_FORMAT:
        raise bad("format", f"expected {WEIGHTS_FORMAT!r}, got {data.get('format')!r}")
    if data.get("version") != WEIGHTS_VERSION:
        raise bad("version", f"expected {WEIGHTS_VERSION}, got {data.get('version')!r}")
    names = data.get("features")
    if not isinstance(names, list) or len(names) != N_FEATURES:
        count = len(names) if isinstance(names, list) else type(names).__name__
        raise bad("features", f"expected {N_FEATURES} feature names, got {count}")
    for i, (got, want) in enumerate(zip(names, FEATURE_NAMES)):
        if got != want:
            raise bad("features", f"entry {i} is {got!r}, expected {want!r}")
    values = data.get("weights")
    if not isinstance(values, list) or len(values) != N_FEATURES:
        count = len(values) if isinstance(values, list) else type(values).__name__
        raise bad("weights", f"expected {N_FEATURES} numbers, got {count}")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in values):
        raise bad("weights", "every entry must be a finite number")
    w = np.array(values, np.float64)
    w.setflags(write=False)
    if len(_LOADED) > 16:
        _LOADED.clear()
    _LOADED[key] = w
    return w


class ApproxQAgent:
    """Greedy in ``Q(s, a) = w . phi(s, a)`` (module docstring), ties by the seeded generator.
    ``weights``: a ``float64[N_FEATURES]`` array, or a weights file path (``None``: the shipped one)."""

    name = "approxq"

    def __init__(self, seed: int = 0, weights: np.ndarray | str | os.PathLike | None = None):
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        if weights is None or isinstance(weights, (str, os.PathLike)):
            weights = load_weights(weights)
        self.weights = np.asarray(weights, np.float64)
        if self.weights.shape != (N_FEATURES,):
            raise ValueError(f"approxq: expected {N_FEATURES} weights, got shape {self.weights.shape}")
        self.last_think_time = 0.0

    def q_values(self, state: GameState) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """``(q float64[n], phi, actions, victims)``: :func:`state_features` and their Q values."""
        phi, actions, victims = state_features(state)
        return phi @ self.weights, phi, actions, victims

    def pick(self, q: np.ndarray) -> int:
        """Argmax of ``q`` (non-empty), ties within ``1e-9`` broken by the seeded generator."""
        best = np.flatnonzero(q >= q.max() - TIE)
        return int(best[int(self.rng.integers(len(best)))]) if len(best) > 1 else int(best[0])

    def select(self, state: GameState) -> Move:
        t0 = time.perf_counter()
        try:
            q, _, actions, victims = self.q_values(state)
            if len(q) == 0:
                raise ValueError("approxq: the position has no legal move")
            return action_move(state, actions, victims, self.pick(q))
        finally:
            self.last_think_time = time.perf_counter() - t0

    def __repr__(self) -> str:
        return f"<ApproxQAgent seed={self.seed}>"


class ApproxQOptions(AgentOptions):
    weights: str | None = Field(None, json_schema_extra=NAMES_FILE,
                                description="weights file (JSON, python cli.py train-approxq); default: "
                                            "models/approxq/weights.json")


@register("approxq", "agent", options=ApproxQOptions)
def make_approxq(o: ApproxQOptions) -> ApproxQAgent:
    """Linear Q over board, tactical and action features (papers/004 2.5), greedy; both phases."""
    return ApproxQAgent(o.seed, o.weights)
