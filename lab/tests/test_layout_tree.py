"""Tests of the tree search over our own placements (lab/layout_tree.py and the rollout agents'
``tree_from``): the flat-array tree by hand, and the agent's search against a naive dictionary
re-implementation of the same UCT loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.notation import Move
from core.rules import Ruleset
from core.state import GameState
from knowledge.agents import ExpertAgent, make_agent, validate_agent_spec
from knowledge.registry import SpecError
from lab.layout_tree import PlacementTree


def test_a_tree_expands_selects_backs_up_and_picks_by_hand():
    tree = PlacementTree(capacity=2)  # grows past its first capacity
    root = tree.add("root")
    assert (root, tree.size, tree.expanded(root), tree.children(root).tolist()) == (0, 1, False, [])
    tree.expand(root, [30, 10, 20], ["a", "b", "c"])
    kids = tree.children(root)
    assert kids.tolist() == [1, 2, 3] and tree.point[kids].tolist() == [30, 10, 20]
    assert tree.states[2] == "b" and math.isnan(tree.mean(1))
    with pytest.raises(ValueError, match="already expanded"):
        tree.expand(root, [5], ["d"])
    with pytest.raises(ValueError, match="2 placements but 1 positions"):
        tree.expand(1, [5, 6], ["d"])
    # unvisited children first, in expansion order
    order = []
    for value in (2.0, -2.0, 1.0):
        child = tree.select_child(root, 3.0)
        order.append(child)
        tree.backup([root, child], value)
    assert order == [1, 2, 3]
    tree.backup([root, 3], 5.0)  # child 3: two rollouts, mean 3
    # UCB1 by hand, N = 4: child 1 2 + 3 sqrt(ln 4 / 1) = 5.53 beats child 3's 3 + 3 sqrt(ln 4 / 2) = 5.50
    assert 2 + 3 * math.sqrt(math.log(4)) > 3 + 3 * math.sqrt(math.log(4) / 2)
    assert tree.select_child(root, 3.0) == 1
    assert tree.select_child(root, 0.0) == 3  # greedy: the best mean
    assert tree.visits[root] == 4 and tree.total[root] == 6.0 and tree.mean(3) == 3.0
    assert tree.best_child(root) == 3  # the most visited
    tree.backup([root, 1], 4.0)  # child 1: two rollouts, mean 3, as child 3: the earlier wins the tie
    assert tree.best_child(root) == 1
    tree.backup([root, 3], 3.5)  # child 3: three visits
    assert tree.best_child(root) == 3
    tree.reset()
    assert tree.size == 0 and tree.add("x") == 0 and not tree.expanded(0) and tree.visits[0] == 0
    with pytest.raises(ValueError, match="no children"):
        tree.select_child(0, 1.0)
    with pytest.raises(ValueError, match="capacity"):
        PlacementTree(capacity=0)


def _naive_tree_pick(agent, state, seed, sims, c):
    """The UCT loop of ``RolloutLayoutAgent.tree_pick`` with a dictionary keyed by our placements
    from the root: returns ``(point, {first placement: (visits, total)})``."""
    me = state.side
    base = int(np.random.default_rng(seed).integers(0, 2**62))
    stats, kids, states = {(): [0, 0.0]}, {}, {(): state}
    for _ in range(sims):
        key, path = (), [()]
        while True:
            s = states[key]
            if key not in kids and (key == () or stats[key][0] > 0) and s.phase == 0 and s.side == me:
                kids[key] = [int(p) for p in agent.candidates(s)]
                for p in kids[key]:
                    child = s.apply(Move((p,)))
                    if child.phase == 0:
                        child = child.apply(Move((agent.reply(child),)))
                    states[key + (p,)], stats[key + (p,)] = child, [0, 0.0]
            if key not in kids:
                break
            children = [key + (p,) for p in kids[key]]
            fresh = [k for k in children if stats[k][0] == 0]
            if fresh:
                key = fresh[0]
            else:
                n = stats[key][0]
                key = max(children, key=lambda k: (stats[k][1] / stats[k][0] + c * math.sqrt(math.log(n) / stats[k][0]),
                                                   -children.index(k)))
            path.append(key)
            if stats[key][0] == 0:
                break
        leaf = states[key]
        value = agent.judge.stone_difference(leaf, me, np.random.SeedSequence([base, leaf.ply, stats[key][0]]))
        for k in path:
            stats[k][0] += 1
            stats[k][1] += value
    first = {k[0]: tuple(stats[k]) for k in stats if len(k) == 1}
    best = max(kids[()], key=lambda p: (first[p][0], first[p][1] / max(first[p][0], 1) if first[p][0] else -math.inf,
                                        -kids[()].index(p)))
    return best, first


def _late_layout(ply: int, seed: int) -> GameState:
    s = GameState.initial(Ruleset(max_battle_plies=60))
    expert = ExpertAgent(seed=seed)
    while s.ply < ply:
        s = s._play(expert.select(s))
    return s


@pytest.mark.parametrize("ply,seed,c", [(150, 3, 3.0), (160, 5, 1.0), (166, 1, 6.0)])
def test_the_tree_search_matches_a_naive_reference(ply, seed, c):
    """The agent's choice and its root children's visits and totals are the naive loop's (14
    simulations over 3 candidates, rollouts of 24 battle plies; positions where the candidates'
    rollouts differ, so that the UCB1 choices decide the visits)."""
    s = _late_layout(ply, seed)
    spec = f"rollout:from_ply=0,tree_from=0,top=3,tree_rollouts=14,tree_c={c},battle_plies=24"
    agent = make_agent(spec, seed=seed)
    want, first = _naive_tree_pick(make_agent(spec, seed=seed), s, seed, 14, c)
    assert agent.select(s).path == (want,)
    tree = agent.tree
    kids = tree.children(0)
    assert {int(tree.point[k]): (int(tree.visits[k]), float(tree.total[k])) for k in kids} == first
    assert len({v[1] / v[0] for v in first.values()}) > 1  # the candidates' means differ
    assert tree.visits[0] == 14 and tree.size > 1 + len(kids)  # it went deeper than the root's children


def test_the_tree_is_kept_when_the_opponent_replies_as_modelled():
    s = _late_layout(182, 1)
    agent = make_agent("rollout:from_ply=0,tree_from=0,top=2,tree_rollouts=10,battle_plies=2", seed=4)
    p = agent.select(s).path[0]
    chosen = agent._chosen
    after = s.apply(Move((p,)))
    modelled = after.apply(Move((agent.reply(after),)))
    kept = int(agent.tree.visits[chosen])
    assert kept > 0
    assert agent.tree_root(modelled) == chosen and agent.tree.visits[chosen] == kept
    agent.select(modelled)
    assert agent.tree.visits[chosen] == kept + 10  # the next search went on from the kept statistics
    assert agent.last_search["visits"] == kept + 10 and agent.last_search["kept"] == kept
    assert agent.last_search["nodes"] == agent.tree.size
    assert agent.last_search["value"] == round(agent.tree.mean(agent._chosen), 4)
    # another reply: a new tree
    other = next(q for q in after.placements() if q != agent.reply(after))
    fresh = after.apply(Move((other,)))
    agent2 = make_agent("rollout:from_ply=0,tree_from=0,top=2,tree_rollouts=10,battle_plies=2", seed=4)
    agent2.select(s)
    assert agent2.tree_root(fresh) == 0 and agent2.tree.size == 1


def test_tree_agents_play_legal_layouts_and_refuse_bad_options():
    s = _late_layout(176, 2)
    agent = make_agent("rollout:from_ply=180,tree_from=186,tree_rollouts=3,battle_plies=1", seed=2)
    expert = ExpertAgent(seed=7)
    searched = []
    while s.phase == 0:
        mover = agent if s.side == 0 else expert
        move = mover.select(s)
        if mover is agent:
            searched.append((s.ply, agent.last_search is not None))
        s = s.apply(move)  # apply checks legality
    assert s.phase == 1
    assert searched and all(tree == (ply >= 186) for ply, tree in searched)
    agent.select(s)  # the battle: the expert's move, no tree
    assert agent.last_search is None
    with pytest.raises(SpecError, match="tree_rollouts"):
        validate_agent_spec("rollout:tree_rollouts=0")
    with pytest.raises(SpecError, match="tree_c"):
        validate_agent_spec("rollout:tree_c=-1")
    validate_agent_spec("slm_rollout:tree_from=150,tree_rollouts=20,tree_c=2")
