"""The ``rollout`` layout agent and the ``eval.rollout`` evaluator: expert rollouts into the battle.

An experiment, not part of the installed packages (``lab/README.md``: what it measured). Importing
this module registers both, so ``python cli.py arena --import lab.rollout "rollout" expert`` plays it
and ``jfa:layout_value_eval=eval.rollout`` (``SearchConfig.layout_value_evaluator``) finds the
evaluator once ``--import lab.rollout`` is given.

- ``eval.rollout`` (:class:`RolloutEvaluator`): a position valued by expert rollouts that finish the
  layout and play ``battle_plies`` battle plies, ``tanh(stone difference / scale)``, the mean of
  ``rollouts`` rollouts (AlphaGo's rollouts with the expert as the rollout policy).
- ``rollout`` (:class:`RolloutLayoutAgent`, options :class:`RolloutOptions`): the expert, except that
  from layout ply ``from_ply`` on each placement is chosen among the expert's ``top`` by expert
  rollouts valued by the stone difference (flat Monte Carlo with common random numbers, an optional
  round of sequential halving, a two-placement lookahead, or a UCT search over our own placements,
  ``lab.layout_tree``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
from pydantic import Field

from core.board import NUM_POINTS, PHASE_LAYOUT
from core.notation import Move
from core.state import GameState
from knowledge.agents import AgentOptions, ExpertAgent, _Agent, finish_layout
from knowledge.registry import SEED_MAX, register
from lab.layout_tree import PlacementTree

__all__ = [
    "RolloutEvaluator",
    "RolloutLayoutAgent",
    "RolloutOptions",
    "halving_survivors",
    "make_rollout",
    "make_rollout_evaluator",
]

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
    lab.bench.battle_noise --ply P``), and there the expert's ranking of its placements says little
    about which is best (``python -m lab.bench.judge_noise --from-ply P --top K``).

    From layout ply ``lookahead_from`` on, a two-placement lookahead: each candidate's rollouts start
    from its best follow-up (:meth:`lookahead_leaves`: the expert's modelled reply, then the best of
    our ``lookahead_top`` next candidates by the same rollouts), so that a placement is judged with
    our next one searched rather than the expert's.

    From layout ply ``tree_from`` on (and ``from_ply``), a tree search instead (:meth:`tree_pick`,
    ``lab.layout_tree``): UCT over our own placements, ``top_at`` candidates a node, the
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
        ``lab.layout_tree``). Each of ``tree_rollouts`` simulations descends from the root by
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


@register("rollout", "agent", options=RolloutOptions)
def make_rollout(o: RolloutOptions) -> RolloutLayoutAgent:
    """Expert layout, late placements chosen among its top by expert rollouts into the battle; expert battle."""
    return RolloutLayoutAgent(o.seed, **o.rollout_options())
