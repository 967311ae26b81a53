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
   (papers/001 and 003, Eq. 2-5): see :func:`search.backups.td_backup`.

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
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from core.board import DRAW, PHASE_BATTLE, PHASE_LAYOUT
from core.notation import Move
from core.state import GameState
from core.status import END_PLY_CAP, ONGOING
from search.backups import td_backup
from search.config import TD_LAYOUT_PRIOR, SearchConfig
from search.gumbel import Halving, gumbel_choice, next_root_child, start_halving
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
    returning_paths,
    same_position,
    select_node,
    shared_prior,
    subtree,
    write_children,
)
from search.victims import choose_victims

_NO_HISTORY = np.empty(0, np.uint64)
_NO_HISTORY.setflags(write=False)


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
    value)]``; with ``evaluate_later`` too, a leaf's knowledge is computed while it runs, :meth:`_expand`);
    ``victim_scorer`` optionally implements ``nets.evaluator.VictimScorer`` (the lower net).
    Use as a context manager or call :meth:`close` to stop the worker threads.
    """

    def __init__(self, evaluator, config: SearchConfig | None = None, victim_scorer=None):
        from knowledge.plugins import REGISTRY

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
        self._pool: ThreadPoolExecutor | None = None  # run()'s search threads, started by its first search
        self.tree_full = False
        self._backup_lock = threading.Lock()
        self._rewards: dict[int, float] = {}  # knowledge feedback per node of the current tree (TD backups)
        self._value_plugin = REGISTRY.create(cfg.value_evaluator, "evaluator") if cfg.uses_value_plugin() else None
        if cfg.value_center and self._value_plugin is not None and not hasattr(self._value_plugin, "margin"):
            raise ValueError(f"search: value_center needs a value plugin with a margin; {cfg.value_evaluator!r} has none")
        self._root_margin = 0.0  # the value plugin's margin of the root for its side to move (value_center)
        self._twofold_rules: tuple[Any, np.ndarray] | None = None  # (ruleset, its vector with repetition_draw 2)
        self.layout_value_plugin = (REGISTRY.create(cfg.layout_value_evaluator, "evaluator")
                                     if cfg.layout_value_evaluator is not None and cfg.layout_value_mix > 0 else None)
        self._gumbel = cfg.root_selection == "gumbel"
        self._gumbel_lock = threading.Lock()
        self._halving: Halving | None = None  # this search's Gumbel root schedule (set once the root is expanded)
        self._prior_plugin = (REGISTRY.create(cfg.battle_prior, "battle_prior")
                              if cfg.battle_prior is not None and cfg.prior_mix > 0 else None)
        self._layout_prior_plugin = (REGISTRY.create(cfg.layout_prior, "layout_prior")
                                     if cfg.layout_prior is not None and cfg.layout_prior_mix > 0 else None)
        if cfg.backup != "mean":
            self._feedback = REGISTRY.create(cfg.feedback_evaluator, "evaluator")
            self._prior = self._layout_prior_plugin or REGISTRY.create(cfg.layout_prior or TD_LAYOUT_PRIOR, "layout_prior")

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
        start_n, t0 = self.begin(state, simulations, seconds, stop)
        if self._pool is None and self.config.threads > 1:
            self._pool = ThreadPoolExecutor(self.config.threads, thread_name_prefix="wuuct")
        if self._pool is None:
            while self._claim():
                self._simulate()
        else:
            futures = [self._pool.submit(self._worker) for _ in range(self.config.threads)]
            for f in futures:
                f.result()
        return self.finish(start_n, t0)

    # ------------------------------------------------------------------ step mode (search.batched)
    def begin(self, state: GameState, simulations: int | None = None, seconds: float | None = None,
              stop: threading.Event | None = None) -> tuple[int, float]:
        """Start a search of ``state`` as :meth:`run` does (same arguments and errors) without running a
        simulation; returns ``(root visits before, start time)`` for :meth:`finish`. Simulations are then
        claimed with :meth:`claim`, selected with :meth:`select_leaf`, expanded with :meth:`leaf_state`,
        :meth:`knowledge_job` and :meth:`expand_leaf`, and backed up with :meth:`backup`
        (``search.batched.search_steps``)."""
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
        self._remaining = sims
        return int(self.tree.N[0]), time.perf_counter()

    def finish(self, start_n: int, t0: float) -> SearchResult:
        """The :class:`SearchResult` of the search started by :meth:`begin` (``start_n``, ``t0``)."""
        return self._result(int(self.tree.N[0]) - start_n, time.perf_counter() - t0)

    def claim(self) -> bool:
        """Claim the next simulation of the budget; ``False`` when it is spent, or past the deadline or
        the ``stop`` event after the first one."""
        return self._claim()

    def select_leaf(self, path: list[int] | None = None) -> tuple[list[int], bool]:
        """One claimed simulation's selection (JFA Eq. 1-2) from the root, or continued from the last
        node of ``path`` (a simulation that waited): returns ``(path, ready)``. ``ready``: the path ends
        at a ``TERMINAL`` node or at an unexpanded leaf now claimed for expansion (``EXPANDING``); not
        ready: it ends at a leaf that another simulation in flight is expanding, so the simulation waits
        and continues from there once that expansion is written (as a search thread does)."""
        tree = self.tree
        if path is None:
            path = [0]
            tree.O[0] += 1  # Eq. 2 at the root
        node = path[-1]
        while True:
            flag = tree.flag[node]
            if flag == EXPANDED:
                child = self._gumbel_child(tree) if node == 0 and self._gumbel else self._select(tree, node)
                tree.O[child] += 1  # Eq. 2
                path.append(child)
                node = child
            elif flag == UNEXPANDED:
                tree.flag[node] = EXPANDING
                return path, True
            else:
                return path, flag == TERMINAL

    def backup(self, path: list[int], value: float) -> None:
        """The complete update (JFA Eq. 3-5) of a simulation along ``path`` whose leaf has ``value`` for
        its side to move."""
        self._backup(self.tree, path, value, int(self.tree.side[path[-1]]))

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
        our move and the opponent's reply); otherwise start a new tree (also when that node is marked
        terminal: a game that goes on there ended only by the search's ``twofold_draw``)."""
        tree = self.tree
        if self.config.reuse_tree and tree is not None:
            frontier = [0]
            for _ in range(3):
                for n in frontier:
                    if tree.hash[n] == np.uint64(state.hash) and same_position(tree, n, state):
                        if tree.flag[n] == TERMINAL:  # an end in the search's eyes only (twofold_draw)
                            self._new_tree(state)
                            return
                        if n != 0:
                            self.tree = subtree(tree, n)
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

    # ------------------------------------------------------------------ Gumbel root search (search.gumbel)
    def _gumbel_child(self, tree: Tree) -> int:
        """The root child of the next simulation under sequential halving (:func:`search.gumbel.next_root_child`)."""
        with self._gumbel_lock:
            if self._halving is None:
                self._halving = start_halving(tree, self.config, self.rng, self._remaining + 1)
            return next_root_child(tree, self._halving, self.config)

    # ------------------------------------------------------------------ backups (search.backups)
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
        """Temporal-difference backups (``backup`` sarsa/q/hybrid; :func:`search.backups.td_backup`) under
        one search-wide lock, with the knowledge feedback of :meth:`_reward`."""
        with self._backup_lock:
            td_backup(tree, path, value, leaf_side, self.config, lambda i: self._reward(tree, path, i))

    def _reward(self, tree: Tree, path: list[int], i: int) -> float:
        """The knowledge feedback ``r_i`` of the move into ``path[i]`` for its mover (Eq. 9-10, times
        ``reward_scale``; see :func:`search.backups.td_backup`), cached per node of the current tree."""
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
            state = self.leaf_state(tree, node, path)
            if not isinstance(state, GameState):
                return state  # terminal: its value
            later = getattr(self.evaluator, "evaluate_later", None)  # a net runs while the knowledge job does
            answer = later([state]) if later is not None else partial(self.evaluator.evaluate, [state])
            job = self.knowledge_job(state, node)
            knowledge = job() if job is not None else None
            return self.expand_leaf(node, state, answer()[0], knowledge)
        finally:
            event = self._pending.pop(node, None)
            if event is not None:
                event.set()

    # ------------------------------------------------------------------ the steps of an expansion
    # (``_expand`` runs them in a search thread; ``search.batched`` runs them for many searches at once)
    def leaf_state(self, tree: Tree, node: int, path: list[int]) -> GameState | float:
        """The position of the leaf ``node`` reached by ``path`` (its pending square victims chosen
        first, ``_resolve``), or, when the game is over there, its value for the side to move (the node
        is marked ``TERMINAL``)."""
        if tree.pending[node] > 0:
            self._resolve(tree, node)
        state = self._state_at(tree, node, path)
        if state.is_terminal():
            value = self._end_value(state.side, state.winner())
            with tree.lock(node):
                tree.terminal_value[node] = value
                tree.flag[node] = TERMINAL
            return value
        return state

    def knowledge_job(self, state: GameState, node: int):
        """The knowledge the leaf value of ``state`` (at ``node``) needs besides the evaluator, as a
        callable returning a float (the layout value plugin's value, the value plugin's margin with
        ``value_center``, else its value), or ``None`` when it needs none. Thread-safe: the knowledge
        plugins are, so the callables of many leaves may run at once."""
        use = self._knowledge_use(state)
        if use == "layout":
            return partial(self.layout_value_plugin.value, state)
        if use == "battle":
            if self._centred():
                return None if node == 0 else partial(self._value_plugin.margin, state)
            return partial(self._value_plugin.value, state)
        return None

    def _knowledge_use(self, state: GameState) -> str | None:
        """Which knowledge the leaf value of ``state`` mixes in: ``"layout"`` (the layout value plugin,
        ``layout_value_mix``), ``"battle"`` (the value plugin, ``value_mix``) or ``None``."""
        if (self.layout_value_plugin is not None and self._root_state.phase == PHASE_LAYOUT
                and state.ply >= self.config.layout_value_from):
            return "layout"
        if self._value_plugin is not None and state.phase == PHASE_BATTLE and self.config.battle_value_mix(state.counts) > 0:
            return "battle"
        return None

    def expand_leaf(self, node: int, state: GameState, evaluation, knowledge: float | None) -> float:
        """Write the children of the leaf ``node`` (position ``state``) from the evaluator's
        ``evaluation`` and the result of its :meth:`knowledge_job` (``knowledge``, ``None`` when it had
        none); returns the leaf's value for its side to move (the net's value mixed with the knowledge,
        ``value_mix`` / ``layout_value_mix``). A full tree leaves the node unexpanded (``tree_full``)."""
        tree = self.tree
        value = float(evaluation.value)
        use = self._knowledge_use(state)
        if use == "layout":
            mix = self.config.layout_value_mix
            value = (1.0 - mix) * value + mix * float(knowledge)
        elif use == "battle":
            mix = self.config.battle_value_mix(state.counts)
            if self._centred():  # the root's margin is already known (run)
                plugin = self._centred_value(state, self._root_margin if node == 0 else float(knowledge))
            else:
                plugin = float(knowledge)
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

    def _terminal_bound(self, tree: Tree, state: GameState, start: int, k: int) -> float:
        """``terminal_bound``: the best value for ``state``'s side to move among its ``k`` children at
        ``start`` that end the game, or -1 when none does. Children whose end is exact whatever their
        moves (on stones, by repetition, at the ply cap checked first) are marked ``TERMINAL`` with
        their result, so that selection knows it before a visit (``search.tree.select_child``); a ply-cap
        end checked after the no-move loss waits for its visit (``children_status`` assumes a move)."""
        reason, winner = children_status(tree.side, tree.counts, tree.ply, tree.quiet, tree.hash, tree.pending,
                                         start, k, state.history, len(state.history), self._status_rules(state.ruleset))
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

    def _status_rules(self, ruleset) -> np.ndarray:
        """The rule vector of the search's terminal test: ``ruleset.vector``, with ``twofold_draw`` the
        same rules but for a draw at a position's second occurrence (``repetition_draw`` 2)."""
        if not self.config.twofold_draw:
            return ruleset.vector
        if self._twofold_rules is None or self._twofold_rules[0] is not ruleset:
            self._twofold_rules = (ruleset, ruleset.model_copy(update={"repetition_draw": 2}).vector)
        return self._twofold_rules[1]

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
        if self.config.twofold_draw and self.config.terminal_bound and self.expansion_pruner is not None:
            # the pruner may drop the quiet move that repeats a position: the draw the bound must see
            history = np.asarray(state.history, np.uint64)
            returning = returning_paths(state.side, np.uint64(state.hash), ps.m, ps.pts, ps.off, ps.jump, ps.nsq,
                                        history, len(history), 1)
            if len(returning):
                keep = np.union1d(keep, returning)
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
            chosen, improved = gumbel_choice(tree, h, self.config)
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


class _Children(NamedTuple):
    k: int
    pts: np.ndarray
    off: np.ndarray
    jump: np.ndarray
    squares: np.ndarray
    actions: np.ndarray
    priors: np.ndarray | None  # the prior plugin's over the kept paths or the placements (float64[k]), or None
    pool_size: int
