"""WU-UCT parallel Monte Carlo tree search (JFA section 3.1, Eq. 1-5; Liu et al. 2020).

A pool of ``threads`` workers runs simulations on one shared tree (``search.tree``):

1. *Selection*: from the root, pick children by Eq. 1 with the unobserved counts ``O``; each node
   entered gets the **incomplete update** ``O += 1`` (Eq. 2) under its lock, so other threads see the
   pending simulation at once and spread out.
2. *Expansion and evaluation* (outside any lock): the leaf's position is evaluated through the
   ``Evaluator`` protocol (nets, or knowledge/uniform), batched across threads by the evaluator, and its
   children are generated (JFA section 3.2, Fig. 2): layout children are placements; battle children are
   the legal paths kept by the expansion pruner (``prune.expansion``, JFA Table 1), and a path that
   forms squares takes the victims the lower net prefers among the capture pruner's candidates (JFA
   Eq. 6), or without a lower net the capture pruner's best set, so that each child holds the state
   after the whole move. Priors come from the policy at the path's upper action index; paths sharing
   an index split its prior.
3. **Complete update** (Eq. 3-5) along the path: ``O -= 1, N += 1, W += v`` under each node's lock.
   With ``backup`` other than ``mean``, the values are instead temporal-difference backups
   (papers/001 and 003, Eq. 2-5): see :meth:`Search._backup_td`.

First-play urgency: an unvisited child's Q is the parent's mean value (for the side choosing) minus
``fpu_reduction``. Values are in ``[-1, 1]``; terminal positions use the game result.

``threads=1`` with a fixed ``seed`` is deterministic (same visits every run); with an evaluator that
does not batch, it is the serial MCTS baseline.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from core.board import DRAW, NUM_POINTS, PHASE_BATTLE, PHASE_LAYOUT
from core.notation import Move
from core.state import GameState
from core.status import END_PLY_CAP, ONGOING
from search.tree import (
    EXPANDED,
    EXPANDING,
    FORMULA_PRINTED,
    FORMULA_PUCT,
    TERMINAL,
    UNEXPANDED,
    Tree,
    TreeFullError,
    children_status,
    kept_children,
    resolve_victims,
    select_node,
    shared_prior,
    write_children,
)
from search.victims import choose_victims

_NO_HISTORY = np.empty(0, np.uint64)
_NO_HISTORY.setflags(write=False)

# The search of the net agents (``search.agents.NetOptions``) and of self-play
# (``train.learning.config.SelfPlayConfig``): the expert's 4 best paths per battle node, every battle leaf valued
# by the expert's own two-ply search from it, a lower exploration constant than ``SearchConfig``'s,
# so that at 16 simulations those values, not the priors, decide the visits, and the Gumbel root search,
# which visits every kept path at the root (docs/knowledge-and-search.md, "The shipped
# agent's search and why", for the matches that chose them). The leaf value is half the expert's two-ply value and half
# the upper net's, a net whose value is trained to predict how that two-ply value changes over the next
# NET_VALUE_DRIFT plies (``train.learning.drift.DriftTarget``; ``selfplay.value_drift``), so the sum is
# the two-ply value plus where the game takes it, at the scale the lower c_puct keeps. The paper's HBM
# search is ``prune.expansion`` with no value plugin and ``c_puct`` 1.5, ``SearchConfig``'s own defaults.
NET_EXPANSION_PRUNER = "prune.expert:top=4"
NET_VALUE_EVAL = "eval.expert:plies=2"
NET_VALUE_MIX = 0.5
NET_VALUE_DRIFT = 8  # plies: the value target of the net that NET_VALUE_MIX blends in
NET_DRIFT_ENDS = "result"  # that target within NET_VALUE_DRIFT plies of a game's end (DriftTarget.ends)
NET_VALUE_CENTER = True
NET_C_PUCT = 0.25
NET_ROOT_SELECTION = "gumbel"  # Gumbel root search with sequential halving (SearchConfig.root_selection)
# The net agents' square victims: the expert's one-ply value of the position after each of the capture
# pruner's 8 best sets chooses (``knowledge.evaluation.EvaluatorVictimScorer``; docs/knowledge-and-search.md,
# "The shipped agent's search and why", for the match), unless a lower net is given (``search.agents.NetOptions``).
NET_VICTIM_EVAL = "eval.expert"
NET_VICTIM_CANDIDATES = 8


class SearchConfig(BaseModel):
    """Search settings (validated, frozen).

    ``simulations`` per move; ``threads`` workers; ``c_puct`` exploration constant; ``formula``
    ``"puct"`` (default, standard PUCT with unobserved counts) or ``"printed"`` (JFA Eq. 1 as printed);
    ``fpu_reduction`` (an unvisited child's Q is the parent's mean value minus this; ``None`` means 0.2
    for ``puct`` and 0 for ``printed``: the printed form multiplies Q by the decaying exploration factor,
    so an unvisited child with a negative Q would score below every visited one and never be tried);
    root Dirichlet noise ``dirichlet_alpha``/``dirichlet_epsilon`` (0 = off; self-play
    uses 0.25); ``expansion_pruner``/``capture_pruner`` plugin names or ``None``; ``victim_candidates``: the
    lower net scores at most this many of the capture pruner's victim sets, best first by the pruner's
    JFA Eq. 9 score (0: all of them; each set costs one lower-net position, about 1 ms for the tiny net on
    one CPU core, and resolving victims dominated battle search time with all ~36 sets); ``max_nodes`` tree
    capacity; ``reuse_tree`` between moves; ``seed`` for noise and move sampling.

    ``backup`` (papers/001 and 003, Eq. 2-8): ``"mean"`` (default: ``W += v``, Q = W / N, JFA Eq. 3-5),
    ``"sarsa"`` (SARSA(lambda) with the knowledge feedback of Eq. 9-10 as reward), ``"q"`` (Q-learning:
    each node's Q moves towards the best child's Q) or ``"hybrid"`` (SARSA(lambda), then Q-learning in
    the same backup). ``sarsa_rate`` c1 and ``q_rate`` c2 are the papers' Table 1 learning rates
    (0.372, 0.628); the papers leave undefined the trace decay ``trace_decay`` (lambda, 0.9), the
    discount ``discount`` (gamma of Eq. 2, 1.0) and the reward scale ``reward_scale`` (0.1: the
    feedback is in [0, 1] in the layout and [-1, 1] in the battle before scaling, so that it shapes but
    does not swamp game values in [-1, 1]); ``feedback_evaluator`` and ``layout_prior`` name the
    plugins giving the feedback (Eq. 9 and Eq. 10). Details: :meth:`Search._backup_td`.

    ``value_evaluator`` (an ``evaluator`` plugin name such as ``eval.expert``, or ``None``) and
    ``value_mix`` (``lambda`` in ``[0, 1]``) blend a static evaluation into the value of every expanded
    battle leaf: ``v = (1 - lambda) v_evaluator + lambda v_plugin`` (AlphaGo's mix of value net and
    rollout, here with human knowledge; layout leaves keep the evaluator's value). Off by default.
    ``layout_value_evaluator`` and ``layout_value_mix`` do the same for the leaves of a layout search
    (a search whose root is a layout position: its layout leaves and the first battle positions) whose
    ply is at least ``layout_value_from``; with ``eval.rollout`` (expert rollouts into the battle,
    ``knowledge.agents.RolloutEvaluator``) this is AlphaGo's mix of value net and rollouts, with the
    expert as the rollout policy (``SearchAgent`` plays earlier placements with one simulation). Off by
    default.
    ``battle_prior`` (a ``battle_prior`` plugin name such as ``prior.expert``, or ``None``) and
    ``prior_mix`` (``beta``) blend a knowledge prior into the priors of a battle node's kept children:
    ``P = (1 - beta) P_evaluator + beta P_plugin``, each renormalised over the kept paths first (before
    root noise). Off by default. ``layout_prior_mix`` does the same for a layout node's children with
    the ``layout_prior`` plugin (``prior.gaussian``, papers/001 Eq. 10, or the expert's
    ``prior.expert_layout``): ``P = (1 - beta) P_evaluator + beta P_plugin`` over the legal
    placements (0, the default: the evaluator's priors alone). ``policy_temperature`` (``tau``)
    sharpens (``< 1``) or flattens (``> 1``) the evaluator's priors over a node's children:
    ``P_i ∝ P_i ** (1 / tau)``, the same as ``softmax(logits / tau)`` restricted to the children
    (Leela's policy softmax temperature); 1 leaves them as they are.

    ``value_center`` takes the value plugin's evaluation relative to the root's: a battle leaf's plugin
    value is ``tanh((margin(leaf) - margin(root)) / scale)`` for the leaf's side to move (``margin`` and
    ``scale`` of the plugin, ``knowledge.evaluation``; the root's margin negated for the other side),
    and a drawn battle leaf is worth ``tanh((0 - margin(root)) / scale)`` (the plugin's even position
    against the root's); wins and losses stay +1 and -1. Without it a search far ahead or behind sees
    every leaf near +1 or -1 (``tanh`` saturates: a lead of 12 stones is 0.995 with ``eval.expert``), so
    it cannot tell moves apart nor see a draw by repetition as the loss of a won game (KataGo's score
    utility is centred on the root's expected score for the same reason). Values stored in a tree kept
    for the next move keep the old root's centre. Off by default; needs a plugin with ``margin``.

    ``terminal_bound`` (on by default): an expanded battle leaf's value is at least the best result its
    side to move reaches with one move among its kept children that ends the game (a win on stones or by
    adjudication: +1; a draw by repetition or at the ply cap: 0, or the centred draw value above), found
    with the rule book's terminal test on the children (``search.tree.children_status``), and those
    children are marked terminal with their result, which selection uses as an unvisited child's Q in
    place of first-play urgency. A static or net value cannot see that the side behind may repeat the
    position at once, and at a few simulations the search rarely visits that reply when its prior is
    low, so the move allowing it looked as good as any (docs/knowledge-and-search.md).

    ``root_selection`` ``"gumbel"``: Gumbel root search (Danihelka et al. 2022, "Policy improvement by
    planning with Gumbel", sections 3-4; mctx's ``gumbel_muzero_policy``). The root's ``gumbel_m`` best
    children by ``g + logits`` (``logits = log P``; ``g`` Gumbel(0, 1) noise times ``gumbel_scale``, drawn
    once per search: 0 for play, 1 for self-play exploration) share the simulations by sequential
    halving: ``ceil(log2 m)`` phases, each giving every remaining child ``max(1, n / (phases * remaining))``
    more visits of this search's ``n``, then keeping the better half by ``g + logits + sigma(q)``; the
    move played is the survivor (when the search stops early: the best of the most visited remaining ones).
    ``sigma(q) = (gumbel_c_visit + max_b N(b)) * gumbel_c_scale * q`` (50 and 0.1, mctx's defaults), ``q``
    the *completed* Q (a visited
    child's mean value, an unvisited one's the root's mean value: the paper's ``v_mix`` with the root's
    mean in place of the net's value) rescaled to [0, 1] over the root's children. Below the root,
    selection stays Eq. 1. The result also carries the improved policy
    ``softmax(logits + sigma(completed q))`` over every root child, the paper's policy-training target
    (``SearchResult.target``). Root Dirichlet noise is not used with it (the Gumbel noise explores).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    simulations: int = Field(400, ge=1)
    threads: int = Field(1, ge=1, le=256)
    c_puct: float = Field(1.5, gt=0)
    formula: Literal["puct", "printed"] = "puct"
    fpu_reduction: float | None = None
    dirichlet_alpha: float = Field(0.3, gt=0)
    dirichlet_epsilon: float = Field(0.0, ge=0, le=1)
    expansion_pruner: str | None = "prune.expansion"
    capture_pruner: str | None = "prune.capture"
    victim_candidates: int = Field(8, ge=0)
    max_nodes: int = Field(300_000, ge=16)
    reuse_tree: bool = True
    seed: int = 0
    backup: Literal["mean", "sarsa", "q", "hybrid"] = "mean"
    sarsa_rate: float = Field(0.372, gt=0, le=1)
    q_rate: float = Field(0.628, gt=0, le=1)
    trace_decay: float = Field(0.9, ge=0, le=1)
    discount: float = Field(1.0, ge=0, le=1)
    reward_scale: float = Field(0.1, ge=0, le=10)
    feedback_evaluator: str = "eval.shape"
    layout_prior: str = "prior.gaussian"
    value_evaluator: str | None = None
    value_mix: float = Field(0.0, ge=0, le=1)
    layout_value_evaluator: str | None = None
    layout_value_mix: float = Field(0.0, ge=0, le=1)
    layout_value_from: int = Field(0, ge=0, le=NUM_POINTS)
    battle_prior: str | None = None
    prior_mix: float = Field(0.5, ge=0, le=1)
    layout_prior_mix: float = Field(0.0, ge=0, le=1)
    policy_temperature: float = Field(1.0, ge=0.05, le=10)
    value_center: bool = False
    terminal_bound: bool = True
    root_selection: Literal["puct", "gumbel"] = "puct"
    gumbel_m: int = Field(16, ge=1, le=4096)
    gumbel_scale: float = Field(0.0, ge=0, le=10)
    gumbel_c_visit: float = Field(50.0, ge=0, le=1e6)
    gumbel_c_scale: float = Field(0.1, gt=0, le=1e3)


class SearchResult(NamedTuple):
    """Root statistics after a search: ``moves`` (root children), ``visits`` int32, ``q`` float64 (mean
    value for the side to move at the root; ``nan`` if unvisited), ``priors`` float32, ``actions`` int32
    (net action indices), ``value`` (root value estimate for the side to move), ``simulations`` run,
    ``seconds`` elapsed; with Gumbel root search (``SearchConfig.root_selection``) also ``chosen``, the
    index of the move it chose (-1 otherwise), and ``improved``, its improved policy over ``moves``
    (float32, sums to 1; ``None`` otherwise)."""

    moves: list[Move]
    visits: np.ndarray
    q: np.ndarray
    priors: np.ndarray
    actions: np.ndarray
    value: float
    simulations: int
    seconds: float
    chosen: int = -1
    improved: np.ndarray | None = None

    def best(self) -> Move:
        """The Gumbel search's choice, else the most visited move (ties: higher prior)."""
        if self.chosen >= 0:
            return self.moves[self.chosen]
        order = np.lexsort((-self.priors, -self.visits))
        return self.moves[int(order[0])]

    def sample(self, temperature: float, rng: np.random.Generator) -> Move:
        """A move drawn with probability proportional to ``visits ** (1 / temperature)``; the most
        visited move when ``temperature`` is 0. A Gumbel search's choice whatever the temperature (its
        Gumbel noise is the sampling: ``SearchConfig.gumbel_scale``)."""
        if temperature <= 0 or self.visits.sum() == 0 or self.chosen >= 0:
            return self.best()
        weights = self.visits.astype(np.float64) ** (1.0 / temperature)
        return self.moves[int(rng.choice(len(self.moves), p=weights / weights.sum()))]

    def policy(self) -> np.ndarray:
        """Visit distribution over the root children (float32, sums to 1)."""
        total = self.visits.sum()
        return (self.visits / total).astype(np.float32) if total else np.full(len(self.moves), 1 / len(self.moves), np.float32)

    def target(self) -> np.ndarray:
        """The policy-training target over the root children (float32, sums to 1): the Gumbel search's
        improved policy, else the visit distribution."""
        return self.improved if self.improved is not None else self.policy()


def terminal_value(state: GameState) -> float:
    """The result of a terminal ``state`` for its side to move: +1 won, -1 lost, 0 drawn."""
    winner = state.winner()
    if winner is None or winner == DRAW:
        return 0.0
    return 1.0 if winner == state.side else -1.0


class Search:
    """WU-UCT search over a shared tree with a thread pool; see the module docstring.

    ``evaluator`` implements ``nets.evaluator.Evaluator`` (``evaluate(states) -> [Evaluation(policy,
    value)]``); ``victim_scorer`` optionally implements ``nets.evaluator.VictimScorer`` (the lower net).
    Use as a context manager or call :meth:`close` to stop the worker threads.
    """

    def __init__(self, evaluator, config: SearchConfig | None = None, victim_scorer=None):
        from knowledge.registry import REGISTRY

        self.evaluator = evaluator
        self.config = config or SearchConfig()
        self.victim_scorer = victim_scorer
        cfg = self.config
        self.expansion_pruner = REGISTRY.create(cfg.expansion_pruner, "expansion_pruner") if cfg.expansion_pruner else None
        self.capture_pruner = REGISTRY.create(cfg.capture_pruner, "capture_pruner") if cfg.capture_pruner else None
        self.formula = FORMULA_PUCT if cfg.formula == "puct" else FORMULA_PRINTED
        self.fpu_reduction = cfg.fpu_reduction if cfg.fpu_reduction is not None else (0.2 if cfg.formula == "puct" else 0.0)
        self.rng = np.random.default_rng(cfg.seed)
        self.tree: Tree | None = None
        self._root_state: GameState | None = None
        self._pending: dict[int, threading.Event] = {}
        self._claim_lock = threading.Lock()
        self._remaining, self._claimed = 0, 0
        self._deadline: float | None = None
        self._stop: threading.Event | None = None
        self._pool = ThreadPoolExecutor(cfg.threads, thread_name_prefix="wuuct") if cfg.threads > 1 else None
        self.tree_full = False
        self._backup_lock = threading.Lock()
        self._rewards: dict[int, float] = {}  # knowledge feedback per node of the current tree (TD backups)
        self._value_plugin = (REGISTRY.create(cfg.value_evaluator, "evaluator")
                              if cfg.value_evaluator is not None and cfg.value_mix > 0 else None)
        if cfg.value_center and self._value_plugin is not None and not hasattr(self._value_plugin, "margin"):
            raise ValueError(f"search: value_center needs a value plugin with a margin; {cfg.value_evaluator!r} has none")
        self._root_margin = 0.0  # the value plugin's margin of the root for its side to move (value_center)
        self.layout_value_plugin = (REGISTRY.create(cfg.layout_value_evaluator, "evaluator")
                                     if cfg.layout_value_evaluator is not None and cfg.layout_value_mix > 0 else None)
        self._gumbel = cfg.root_selection == "gumbel"
        self._gumbel_lock = threading.Lock()
        self._halving: _Halving | None = None  # this search's Gumbel root schedule (set once the root is expanded)
        self._prior_plugin = (REGISTRY.create(cfg.battle_prior, "battle_prior")
                              if cfg.battle_prior is not None and cfg.prior_mix > 0 else None)
        self._layout_prior_plugin = (REGISTRY.create(cfg.layout_prior, "layout_prior")
                                     if cfg.layout_prior_mix > 0 else None)
        if cfg.backup != "mean":
            self._feedback = REGISTRY.create(cfg.feedback_evaluator, "evaluator")
            self._prior = self._layout_prior_plugin or REGISTRY.create(cfg.layout_prior, "layout_prior")

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> "Search":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ public API
    def run(self, state: GameState, simulations: int | None = None, seconds: float | None = None,
            stop: threading.Event | None = None) -> SearchResult:
        """Search ``state`` (non-terminal) for ``simulations`` (default: the config's) and return the
        root statistics. Reuses the subtree of ``state`` when it is already in the tree (tree reuse).

        ``seconds`` (wall time, > 0) and ``stop`` (set from another thread) end the search early: no new
        simulation starts after the deadline or once ``stop`` is set, except that the first one always
        runs, so the root has children. Simulations already started finish."""
        if state.is_terminal():
            raise ValueError("search: the position is terminal")
        if seconds is not None and not seconds > 0:
            raise ValueError(f"search: seconds={seconds!r}, expected a positive number")
        sims = self.config.simulations if simulations is None else simulations
        self._deadline = None if seconds is None else time.perf_counter() + seconds
        self._stop = stop
        self._claimed = 0
        self._reuse_or_new(state)
        self._root_state = state
        self._root_margin = (float(self._value_plugin.margin(state))
                             if self._centred() and state.phase == PHASE_BATTLE and not state.is_terminal() else 0.0)
        if self.tree.flag[0] == EXPANDED and self.config.dirichlet_epsilon > 0 and not self._gumbel:
            self._noise_root()  # a reused root: its priors were expanded without noise
        self._halving = None
        tree = self.tree
        start_n = int(tree.N[0])
        t0 = time.perf_counter()
        self._remaining = sims
        if self._pool is None:
            while self._claim():
                self._simulate()
        else:
            futures = [self._pool.submit(self._worker) for _ in range(self.config.threads)]
            for f in futures:
                f.result()
        return self._result(int(tree.N[0]) - start_n, time.perf_counter() - t0)

    def principal_variation(self, max_moves: int = 8) -> list[Move]:
        """The moves of the latest search's main line: from the root, the most visited child (ties: the
        higher prior) while it has been visited, at most ``max_moves``. Empty before any search.
        Call it between searches, not while one runs."""
        tree, line, node = self.tree, [], 0
        while tree is not None and len(line) < max_moves and tree.flag[node] == EXPANDED:
            first, n = int(tree.first_child[node]), int(tree.n_children[node])
            idx = np.arange(first, first + n)
            best = int(idx[np.lexsort((-tree.P[idx], -tree.N[idx]))[0]])
            if tree.N[best] == 0 or tree.pending[best] > 0:
                break
            line.append(self._move_of(best))
            node = best
        return line

    def _reuse_or_new(self, state: GameState) -> None:
        """Keep the tree if ``state`` is its root, a child or a grandchild of it (the position after
        our move and the opponent's reply); otherwise start a new tree."""
        tree = self.tree
        if self.config.reuse_tree and tree is not None:
            frontier = [0]
            for _ in range(3):
                for n in frontier:
                    if tree.hash[n] == np.uint64(state.hash) and _same_position(tree, n, state):
                        if n != 0:
                            self.tree = _subtree(tree, n)
                            self._rewards = {}
                        return
                frontier = [c for n in frontier if tree.flag[n] == EXPANDED
                            for c in range(int(tree.first_child[n]), int(tree.first_child[n] + tree.n_children[n]))]
        self._new_tree(state)

    def _noise_root(self) -> None:
        """Mix fresh Dirichlet noise into the priors of the root's children (JFA self-play)."""
        tree, eps = self.tree, self.config.dirichlet_epsilon
        first, n = int(tree.first_child[0]), int(tree.n_children[0])
        noise = self.rng.dirichlet(np.full(n, self.config.dirichlet_alpha))
        tree.P[first:first + n] = ((1 - eps) * tree.P[first:first + n] + eps * noise).astype(np.float32)

    # ------------------------------------------------------------------ simulations
    def _claim(self) -> bool:
        with self._claim_lock:
            if self._remaining <= 0:
                return False
            if self._claimed and ((self._stop is not None and self._stop.is_set())
                                  or (self._deadline is not None and time.perf_counter() >= self._deadline)):
                return False
            self._remaining -= 1
            self._claimed += 1
            return True

    def _worker(self) -> None:
        while self._claim():
            self._simulate()

    def _simulate(self) -> None:
        tree = self.tree
        path = [0]
        node = 0
        with tree.lock(0):
            tree.O[0] += 1  # Eq. 2 at the root
        while True:
            flag = tree.flag[node]
            if flag == EXPANDED:
                child = self._gumbel_child(tree) if node == 0 and self._gumbel else self._select(tree, node)
                with tree.lock(child):
                    tree.O[child] += 1  # Eq. 2
                path.append(child)
                node = child
                continue
            if flag == TERMINAL:
                value = float(tree.terminal_value[node])
                break
            with tree.lock(node):
                flag = tree.flag[node]
                mine = flag == UNEXPANDED
                if mine:
                    tree.flag[node] = EXPANDING
                    if self._pool is not None:  # only other search threads wait for the expansion
                        self._pending[node] = threading.Event()
                event = self._pending.get(node) if flag == EXPANDING else None
            if mine:
                value = self._expand(tree, node, path)
                break
            if event is not None:
                event.wait()  # another thread is expanding this leaf: then descend through it
        self._backup(tree, path, value, int(tree.side[node]))

    def _select(self, tree: Tree, node: int) -> int:
        return select_node(tree.N, tree.O, tree.W, tree.P, tree.flag, tree.terminal_value, tree.first_child,
                           tree.n_children, tree.side, tree.mover,
                           node, self.config.c_puct, self.fpu_reduction, self.formula)

    # ------------------------------------------------------------------ Gumbel root search
    def _gumbel_child(self, tree: Tree) -> int:
        """The root child of the next simulation under sequential halving (``root_selection`` gumbel):
        the remaining child with the fewest simulations started in this search; when every one has
        reached the phase's target, the better half is kept first (by ``g + logits + sigma(q)``)."""
        with self._gumbel_lock:
            h = self._halving
            if h is None:
                h = self._halving = self._start_halving(tree)
            if len(h.remaining) > 1 and min(h.started[c] for c in h.remaining) >= h.target:
                keep = -(-len(h.remaining) // 2)
                score = self._gumbel_scores(tree, h)
                h.remaining = sorted(h.remaining, key=lambda c: -score[c - h.first])[:keep]
                h.target += max(1, h.budget // (h.phases * len(h.remaining)))
            child = min(h.remaining, key=lambda c: h.started[c])  # ties: the better-ranked child
            h.started[child] += 1
            return child

    def _start_halving(self, tree: Tree) -> "_Halving":
        cfg = self.config
        first, k = int(tree.first_child[0]), int(tree.n_children[0])
        logits = np.log(np.maximum(tree.P[first:first + k].astype(np.float64), 1e-12))
        noise = self.rng.gumbel(size=k) * cfg.gumbel_scale if cfg.gumbel_scale > 0 else np.zeros(k)
        m = min(cfg.gumbel_m, k)
        ranked = [first + int(i) for i in np.argsort(-(noise + logits), kind="stable")[:m]]
        phases = max(1, math.ceil(math.log2(m))) if m > 1 else 1
        budget = max(1, self._remaining + 1)  # this simulation and those not yet started
        return _Halving(first, k, logits, noise, ranked, dict.fromkeys(ranked, 0),
                        max(1, budget // (phases * m)), phases, budget)

    def _completed_sigma(self, tree: Tree, first: int, k: int) -> np.ndarray:
        """``sigma(completed q)`` of the root's children (float64[k], see ``SearchConfig``)."""
        cfg = self.config
        visits = tree.N[first:first + k].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            q = tree.W[first:first + k] / visits  # the children's mover is the root's side to move
        root_mean = -float(tree.W[0] / tree.N[0]) if tree.N[0] > 0 else 0.0  # W[0] is for the root's mover
        completed = np.where(visits > 0, q, root_mean)
        lo, hi = float(completed.min()), float(completed.max())
        scaled = (completed - lo) / (hi - lo) if hi > lo else np.zeros(k)
        return (cfg.gumbel_c_visit + visits.max()) * cfg.gumbel_c_scale * scaled

    def _gumbel_scores(self, tree: Tree, h: "_Halving") -> np.ndarray:
        """``g + logits + sigma(completed q)`` of the root's children (float64[k])."""
        return h.noise + h.logits + self._completed_sigma(tree, h.first, h.k)

    def _backup(self, tree: Tree, path: list[int], value: float, leaf_side: int) -> None:
        """Complete update (JFA Eq. 3-5): ``value`` is for ``leaf_side``; each node's ``W`` is kept from
        the point of view of the side that moved into it. Other ``backup`` modes: :meth:`_backup_td`."""
        if self.config.backup != "mean":
            self._backup_td(tree, path, value, leaf_side)
            return
        for n in reversed(path):
            v = value if tree.mover[n] == leaf_side else -value
            with tree.lock(n):
                tree.O[n] -= 1
                tree.N[n] += 1
                tree.W[n] += v

    def _backup_td(self, tree: Tree, path: list[int], value: float, leaf_side: int) -> None:
        """Temporal-difference backups of papers/001 and 003 (Eq. 2-5), for ``backup`` sarsa/q/hybrid.

        The path ``n_0 (root), n_1, ..., n_c (leaf)``; ``Q_i = W[n_i] / N[n_i]`` is the value of the edge
        into ``n_i`` for the side that made it (the root's: its position's value for the side that moved
        into it, used by first-play urgency); values of other nodes are negated when their mover
        differs. ``v`` is the leaf's value (evaluator or game result) from each node's mover's view;
        ``r_i`` the knowledge feedback (Eq. 9) of the move into ``n_i`` for its mover, times
        ``reward_scale`` (``r_0 = 0``): in the layout the ``layout_prior`` (Eq. 10) of the placed point
        relative to the best legal point (in [0, 1]); in the battle the ``feedback_evaluator`` value of
        the position after the move (in [-1, 1]).

        - SARSA(lambda) (``sarsa``, ``hybrid``), in the order of the descent, t = 0..c:
          ``target_t = r_t + gamma * Q_{t+1}`` (``v`` for t = c, Eq. 2), ``delta_t = target_t - Q_t``, and
          every ``i <= t`` gets ``Q_i += c1 * lambda^(t - i) * delta_t`` (Eq. 3: the trace decays with the
          distance ``t - i`` along the path). A node not yet visited (``N = 0``, the new leaf) first takes
          ``Q_t = target_t`` (from the leaf up) and has no TD error of its own.
          Eq. 3 as printed, ``Q <- (1 - c1) Q + c1 lambda^(c-i) E``, would pull every Q towards the TD error
          itself (towards 0 once learned); this is the standard SARSA(lambda) step it abbreviates.
        - Q-learning (``q``; ``hybrid`` after the SARSA sweep), from the leaf up: the leaf takes Eq. 5
          (``Q = W / N`` with ``v`` added; in ``hybrid`` its SARSA value), then for i = c-1..0:
          ``Q_i <- (1 - c2) Q_i + c2 * max_a Q(n_{i+1}'s siblings)`` (Eq. 4; the max is taken by the side
          choosing among them, over visited children, and returned to ``n_i``'s mover's view).

        Every path node then has ``N += 1`` and ``W = N * Q`` (so selection's ``W / N`` is the learned Q,
        Eq. 6-8) and ``O -= 1``. The whole backup holds one search-wide lock. The papers apply SARSA while
        descending; applying it once the leaf value is known gives the same values at ``threads=1``
        (selection reads only the children of a node, never the path's own updated Q)."""
        cfg = self.config
        c = len(path) - 1
        mover = [int(tree.mover[n]) for n in path]
        v = [value if m == leaf_side else -value for m in mover]

        def sign(i: int, j: int) -> float:
            return 1.0 if mover[i] == mover[j] else -1.0

        with self._backup_lock:
            q = [float(tree.W[n] / tree.N[n]) if tree.N[n] > 0 else None for n in path]
            if cfg.backup in ("sarsa", "hybrid"):
                r = [0.0] + [self._reward(tree, path, i) for i in range(1, c + 1)]
                fresh = [x is None for x in q]
                for t in range(c, -1, -1):  # unvisited nodes (the new leaf): Q_t = target_t
                    if fresh[t]:
                        q[t] = r[t] + cfg.discount * (v[c] if t == c else sign(t, t + 1) * q[t + 1])
                for t in range(c + 1):
                    if fresh[t]:
                        continue
                    nxt = v[c] if t == c else sign(t, t + 1) * q[t + 1]
                    delta = r[t] + cfg.discount * nxt - q[t]
                    for i in range(t + 1):
                        q[i] += cfg.sarsa_rate * cfg.trace_decay ** (t - i) * sign(i, t) * delta
            elif q[c] is None:
                q[c] = v[c]
            else:
                q[c] = (q[c] * tree.N[path[c]] + v[c]) / (tree.N[path[c]] + 1)  # Eq. 5
            for i in range(c, -1, -1):
                n = path[i]
                if cfg.backup in ("q", "hybrid") and i < c:
                    target = self._best_child(tree, n)
                    q[i] = target if q[i] is None else (1 - cfg.q_rate) * q[i] + cfg.q_rate * target
                tree.O[n] -= 1
                tree.N[n] += 1
                tree.W[n] = tree.N[n] * q[i]

    def _best_child(self, tree: Tree, node: int) -> float:
        """The best visited child's Q for the side choosing at ``node``, from the view of ``node``'s mover
        (Eq. 4's ``max_a Q(s_{i+1}, a)``)."""
        first, k = int(tree.first_child[node]), int(tree.n_children[node])
        idx = np.arange(first, first + k)
        idx = idx[tree.N[idx] > 0]
        best = float(np.max(tree.W[idx] / tree.N[idx]))
        return best if tree.side[node] == tree.mover[node] else -best

    def _reward(self, tree: Tree, path: list[int], i: int) -> float:
        """The knowledge feedback ``r_i`` of the move into ``path[i]`` for its mover (Eq. 9-10, times
        ``reward_scale``; see :meth:`_backup_td`), cached per node of the current tree."""
        n = path[i]
        r = self._rewards.get(n)
        if r is None:
            parent = path[i - 1]
            if tree.phase[parent] == PHASE_LAYOUT:  # a placement: Eq. 10 at its point, relative to the best legal one
                prior = self._prior.prior(self._state_at(tree, parent, path[:i]))
                point = int(tree.move_pool[int(tree.move_off[n])])
                top = float(prior.max())
                r = float(prior[point]) / top if top > 0 else 0.0
            else:  # a battle move: Eq. 9 value of the position after it, for the mover
                value = float(self._feedback.value(self._state_at(tree, n, path[: i + 1])))
                r = value if tree.side[n] == tree.mover[n] else -value
            r *= self.config.reward_scale
            self._rewards[n] = r
        return r

    # ------------------------------------------------------------------ expansion
    def _expand(self, tree: Tree, node: int, path: list[int]) -> float:
        """Evaluate the leaf and write its children; returns the value for its side to move."""
        try:
            if tree.pending[node] > 0:
                self._resolve(tree, node)
            state = self._state_at(tree, node, path)
            if state.is_terminal():
                value = self._end_value(state.side, state.winner())
                with tree.lock(node):
                    tree.terminal_value[node] = value
                    tree.flag[node] = TERMINAL
                return value
            evaluation = self.evaluator.evaluate([state])[0]
            value = float(evaluation.value)
            if (self.layout_value_plugin is not None and self._root_state.phase == PHASE_LAYOUT
                    and state.ply >= self.config.layout_value_from):
                mix = self.config.layout_value_mix
                value = (1.0 - mix) * value + mix * float(self.layout_value_plugin.value(state))
            elif self._value_plugin is not None and state.phase == PHASE_BATTLE:
                mix = self.config.value_mix
                if self._centred():  # the root's margin is already known (run)
                    margin = self._root_margin if node == 0 else float(self._value_plugin.margin(state))
                    plugin = self._centred_value(state, margin)
                else:
                    plugin = float(self._value_plugin.value(state))
                value = (1.0 - mix) * value + mix * plugin
            moves = self._children(state, evaluation.policy, root=node == 0)
            try:
                start, pool = tree.allocate(moves.k, moves.pool_size)
            except TreeFullError:
                self.tree_full = True
                with tree.lock(node):
                    tree.flag[node] = UNEXPANDED  # evaluated as a leaf; expandable in a larger tree
                return value
            write_children(
                tree.board, tree.side, tree.phase, tree.counts, tree.quiet, tree.ply, tree.hash, tree.parent,
                tree.mover, tree.action, tree.P, tree.move_off, tree.move_npath, tree.move_nvic, tree.move_jump,
                tree.move_pool, tree.flag, tree.first_child, tree.n_children, tree.pending,
                node, start, pool, moves.pts, moves.off, moves.jump, moves.squares,
                moves.actions, moves.priors, moves.k,
            )
            if self.config.terminal_bound and state.phase == PHASE_BATTLE:
                value = max(value, self._terminal_bound(tree, state, start, moves.k))
            with tree.lock(node):
                tree.first_child[node] = start
                tree.n_children[node] = moves.k
                tree.flag[node] = EXPANDED
            return value
        finally:
            event = self._pending.pop(node, None)
            if event is not None:
                event.set()

    def _terminal_bound(self, tree: Tree, state: GameState, start: int, k: int) -> float:
        """``terminal_bound``: the best value for ``state``'s side to move among its ``k`` children at
        ``start`` that end the game, or -1 when none does. Children whose end is exact whatever their
        moves (on stones, by repetition, at the ply cap checked first) are marked ``TERMINAL`` with
        their result, so that selection knows it before a visit (``search.tree.select_child``); a ply-cap
        end checked after the no-move loss waits for its visit (``children_status`` assumes a move)."""
        reason, winner = children_status(tree.side, tree.counts, tree.ply, tree.quiet, tree.hash, tree.pending,
                                         start, k, state.history, len(state.history), state.ruleset.vector)
        cap_first = state.ruleset.end_order == "cap-first"
        bound = -1.0
        for i in np.flatnonzero(reason != ONGOING):
            c = start + int(i)
            value = self._end_value(int(tree.side[c]), int(winner[i]))
            bound = max(bound, -value)
            if reason[i] != END_PLY_CAP or cap_first:
                tree.terminal_value[c] = value
                tree.flag[c] = TERMINAL
        return bound

    def _end_value(self, side: int, winner: int) -> float:
        """The value of a finished game for ``side`` (to move there): +1 won, -1 lost; a draw 0, or with
        ``value_center`` the even position against the root's margin (``_centred_for(side, 0)``)."""
        if winner == DRAW:
            return self._centred_for(side, 0.0) if self._centred() else 0.0
        return 1.0 if winner == side else -1.0

    def _centred(self) -> bool:
        return self.config.value_center and self._value_plugin is not None

    def _centred_value(self, state: GameState, margin: float) -> float:
        """``tanh((margin - the root's margin for state's side to move) / scale)`` (``value_center``)."""
        return self._centred_for(state.side, margin)

    def _centred_for(self, side: int, margin: float) -> float:
        """``tanh((margin - the root's margin for side) / scale)`` (``value_center``)."""
        root = self._root_margin if side == self._root_state.side else -self._root_margin
        return math.tanh((margin - root) / self._value_plugin.scale)

    def _resolve(self, tree: Tree, node: int) -> None:
        """Choose the pending square victims of the edge into ``node`` (JFA Eq. 6,
        ``search.victims.choose_victims``) on the child's own row (the position after the path) and
        take them."""
        o, n = int(tree.move_off[node]), int(tree.move_npath[node])
        path = tree.move_pool[o:o + n]
        after = self._view(tree, node, _NO_HISTORY, None)
        choice = choose_victims(after, path, bool(tree.move_jump[node]), int(tree.pending[node]), self.capture_pruner,
                                self.victim_scorer, self.config.victim_candidates)
        resolve_victims(tree.board, tree.side, tree.counts, tree.hash, tree.move_off, tree.move_npath,
                        tree.move_nvic, tree.move_pool, tree.pending, node, np.array(choice.victims, np.int16))

    def _view(self, tree: Tree, node: int, history: np.ndarray, last_move: Move | None) -> GameState:
        """``node``'s position as a ``GameState`` made from its row (board copied, hash and counts
        as stored: no rehash)."""
        return GameState.from_arrays(tree.board[node].copy(), tree.side[node], tree.phase[node], tree.quiet[node],
                                     tree.ply[node], tree.counts[node], tree.hash[node], history,
                                     self._root_state.ruleset, last_move)

    def _state_at(self, tree: Tree, node: int, path: list[int]) -> GameState:
        """The ``GameState`` of ``node`` reached by ``path``, with its repetition history (the root's
        history, then the battle positions along ``path``, the last ``quiet + 1`` of them)."""
        root = self._root_state
        if node == 0:
            return root
        history = _NO_HISTORY
        if tree.phase[node] == 1:
            along = np.asarray(path[1:], np.int64)
            hashes = np.concatenate((root.history, tree.hash[along][tree.phase[along] == 1]))
            history = hashes[-(int(tree.quiet[node]) + 1):]
        return self._view(tree, node, history, self._move_of(node))

    def _move_of(self, node: int) -> Move:
        t = self.tree
        o, n, v = int(t.move_off[node]), int(t.move_npath[node]), int(t.move_nvic[node])
        pool = t.move_pool
        return Move(tuple(int(x) for x in pool[o:o + n]), bool(t.move_jump[node]), tuple(int(x) for x in pool[o + n:o + n + v]))

    def _children(self, state: GameState, policy: np.ndarray, root: bool) -> "_Children":
        if state.phase == 0:
            points = np.array(state.placements(), np.int16)
            k = len(points)
            knowledge = None
            if self._layout_prior_plugin is not None and k:  # the layout prior plugin's, over the placements
                knowledge = normalised(np.asarray(self._layout_prior_plugin.prior(state), np.float64)[points])
            children = _Children(k, points, np.arange(k + 1, dtype=np.int32), np.zeros(k, np.int8),
                                 np.zeros(k, np.int8), points.astype(np.int32), knowledge, k)
        else:
            children = self._battle_children(state)
        # children.priors: the prior plugin's, over the kept paths or the placements (or None)
        mix = self.config.prior_mix if state.phase else self.config.layout_prior_mix
        priors = blend_priors(shared_prior(policy, children.actions), children.priors,
                              self.config.policy_temperature, mix)
        if root and self.config.dirichlet_epsilon > 0 and not self._gumbel:
            eps = self.config.dirichlet_epsilon
            priors = (1 - eps) * priors + eps * self.rng.dirichlet(np.full(children.k, self.config.dirichlet_alpha))
        return children._replace(priors=priors.astype(np.float32))

    def _battle_children(self, state: GameState) -> "_Children":
        ps = state.paths()
        keep = self.expansion_pruner.keep(state, ps) if self.expansion_pruner is not None else np.arange(ps.m)
        keep = np.asarray(keep, np.int64)
        pts, off, jump, squares, actions, pool_size = kept_children(ps.pts, ps.off, ps.jump, ps.nsq, keep)
        knowledge = None
        if self._prior_plugin is not None and len(keep):
            knowledge = normalised(np.asarray(self._prior_plugin.prior(state, ps), np.float64)[keep])
        return _Children(len(off) - 1, pts, off, jump, squares, actions, knowledge, pool_size)

    # ------------------------------------------------------------------ results
    def _new_tree(self, state: GameState) -> None:
        tree = Tree(self.config.max_nodes)
        tree.board[0] = state.board
        tree.side[0] = state.side
        tree.phase[0] = state.phase
        tree.counts[0] = state.counts
        tree.quiet[0] = state.quiet
        tree.ply[0] = state.ply
        tree.hash[0] = np.uint64(state.hash)
        tree.mover[0] = 1 - state.side
        self.tree = tree
        self.tree_full = False
        self._rewards = {}

    def _result(self, simulations: int, seconds: float) -> SearchResult:
        tree = self.tree
        first, n = int(tree.first_child[0]), int(tree.n_children[0])
        idx = np.arange(first, first + n)
        for c in idx[tree.pending[idx] > 0]:  # unvisited root children: complete their moves
            self._resolve(tree, int(c))
        visits = tree.N[idx].copy()
        with np.errstate(invalid="ignore", divide="ignore"):
            q = np.where(visits > 0, tree.W[idx] / np.maximum(visits, 1), np.nan)
        total = visits.sum()
        value = float(np.nansum(q * visits) / total) if total else 0.0
        chosen, improved = -1, None
        h = self._halving
        if self._gumbel and h is not None and h.first == first:
            sigma = self._completed_sigma(tree, first, n)
            score = h.noise + h.logits + sigma
            top = max(int(tree.N[c]) for c in h.remaining)  # a search stopped mid-phase: the most visited
            chosen = max((c for c in h.remaining if tree.N[c] == top), key=lambda c: score[c - first]) - first
            z = h.logits + sigma
            improved = np.exp(z - z.max())
            improved = (improved / improved.sum()).astype(np.float32)
        return SearchResult([self._move_of(int(c)) for c in idx], visits, q, tree.P[idx].copy(),
                            tree.action[idx].copy(), value, simulations, seconds, chosen, improved)


def blend_priors(priors: np.ndarray, knowledge: np.ndarray | None, tau: float, mix: float) -> np.ndarray:
    """A node's priors over its ``k`` children: the evaluator's ``priors`` (``(k,)``, float) raised to
    ``1 / tau`` (``SearchConfig.policy_temperature``) and normalised, then ``(1 - mix) P + mix K``
    when a prior plugin's ``knowledge`` ``K`` (``float64[k]``, normalised by :func:`normalised`) is
    given (``prior_mix`` in the battle, ``layout_prior_mix`` in the layout). Returns ``(k,)`` float."""
    if tau != 1.0:
        priors = np.power(priors.astype(np.float64), 1.0 / tau)
    priors = normalised(priors)
    if knowledge is not None:
        priors = (1.0 - mix) * priors + mix * knowledge
    return priors


def normalised(p: np.ndarray) -> np.ndarray:
    """``p / p.sum()``, or uniform when the sum is not positive and finite (``p`` non-empty)."""
    total = p.sum()
    return p / total if total > 0 and np.isfinite(total) else np.full(len(p), 1.0 / len(p))


def _same_position(tree: Tree, node: int, state: GameState) -> bool:
    return (int(tree.side[node]) == state.side and int(tree.phase[node]) == state.phase
            and int(tree.ply[node]) == state.ply and np.array_equal(tree.board[node], state.board))


@dataclass(slots=True)
class _Halving:
    """Sequential halving at the root of one Gumbel search: the root's children ``first .. first + k - 1``,
    their ``logits`` and Gumbel ``noise`` (float64[k]), the ``remaining`` child ids (best first),
    simulations ``started`` per considered child in this search, the phase's cumulative ``target``
    per child, the number of ``phases`` and the search's simulation ``budget``."""

    first: int
    k: int
    logits: np.ndarray
    noise: np.ndarray
    remaining: list[int]
    started: dict[int, int]
    target: int
    phases: int
    budget: int


class _Children(NamedTuple):
    k: int
    pts: np.ndarray
    off: np.ndarray
    jump: np.ndarray
    squares: np.ndarray
    actions: np.ndarray
    priors: np.ndarray | None  # the prior plugin's over the kept paths or the placements (float64[k]), or None
    pool_size: int


def _subtree(tree: Tree, root: int) -> Tree:
    """A new tree holding the subtree of ``tree`` below ``root`` (breadth first, so that each node's
    children stay contiguous), with the same statistics."""
    order = [root]
    i = 0
    while i < len(order):
        n = order[i]
        if tree.flag[n] == EXPANDED:
            order.extend(range(int(tree.first_child[n]), int(tree.first_child[n] + tree.n_children[n])))
        i += 1
    order_a = np.array(order, np.int64)
    new = Tree(tree.capacity)
    remap = np.full(tree.size, -1, np.int32)
    remap[order_a] = np.arange(len(order), dtype=np.int32)
    for name in ("N", "W", "P", "terminal_value", "n_children", "flag", "mover", "action", "board", "side",
                 "phase", "counts", "quiet", "ply", "hash", "move_npath", "move_nvic", "move_jump", "pending"):
        getattr(new, name)[: len(order)] = getattr(tree, name)[order_a]
    fc = tree.first_child[order_a]
    new.first_child[: len(order)] = np.where(fc >= 0, remap[np.maximum(fc, 0)], -1)
    par = tree.parent[order_a]
    new.parent[: len(order)] = np.where(par >= 0, remap[np.maximum(par, 0)], -1)
    new.parent[0] = -1
    new.flag[: len(order)][new.flag[: len(order)] == EXPANDING] = UNEXPANDED
    sizes = (tree.move_npath[order_a] + np.maximum(tree.move_nvic[order_a], tree.pending[order_a])).astype(np.int64)
    starts = np.zeros(len(order), np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    for j, n in enumerate(order):
        o = int(tree.move_off[n])
        new.move_pool[starts[j]:starts[j] + sizes[j]] = tree.move_pool[o:o + sizes[j]]
    new.move_off[: len(order)] = starts
    new.size = len(order)
    new.pool_used = int(sizes.sum())
    return new
