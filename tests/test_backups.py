"""Temporal-difference backups of the search (papers/001 and 003 Eq. 2-5), by hand on root + children."""

from __future__ import annotations

import numpy as np
import pytest

from core import GameState
from nets.evaluator import Evaluation
from search.mcts import Search, SearchConfig


class ConstantEvaluator:
    """Uniform policy; value ``value`` for the side to move everywhere."""

    def __init__(self, value: float):
        self.value = value

    def evaluate(self, states):
        return [Evaluation(np.full(196, 1 / 196, np.float32), self.value) for _ in states]


def _root_and_children(backup: str, **cfg):
    """A search of the initial position after one simulation (root expanded, value 0.5 for White to
    move) with child ``a`` set to N=1, W=0.4 (White's view) and child ``b`` about to be backed up as
    a new leaf valued 0.5 for Black to move."""
    search = Search(ConstantEvaluator(0.5), SearchConfig(simulations=1, backup=backup, **cfg))
    state = GameState.initial()
    search.run(state)
    tree = search.tree
    a, b = int(tree.first_child[0]), int(tree.first_child[0]) + 1
    assert (int(tree.n_children[0]), int(tree.mover[0]), int(tree.mover[b]), int(tree.side[b])) == (2, 1, 0, 1)
    first = -0.5 * cfg.get("discount", 1.0) if backup in ("sarsa", "hybrid") else -0.5
    assert tree.N[0] == 1 and tree.W[0] == pytest.approx(first)  # the root's first Q: its (discounted) value
    tree.N[a], tree.W[a] = 1, 0.4
    tree.O[0] += 1
    tree.O[b] += 1
    search._backup(tree, [0, b], 0.5, 1)
    return tree, b


# Hand computation (c1 = 0.372, c2 = 0.628, gamma = 1, reward_scale = 0.1; both first placements are
# equally central, so the Eq. 10 feedback of b is 0.1 * 1). Leaf value from b's mover (White): -0.5.
#   mean:   W_b = -0.5;                              root: W = -0.5 + 0.5 = 0 over N = 2
#   q:      Q_b = -0.5 (Eq. 5);                      root: 0.372 * -0.5 + 0.628 * -max(0.4, -0.5) = -0.4372
#   sarsa:  Q_b = 0.1 - 0.5 = -0.4 (new node);       root: delta = 0.4 - (-0.5) = 0.9, Q = -0.5 + 0.372 * 0.9 = -0.1652
#   hybrid: Q_b = -0.4;                              root: 0.372 * -0.1652 + 0.628 * -0.4 = -0.3126544
@pytest.mark.parametrize("backup, q_leaf, q_root", [
    ("mean", -0.5, 0.0),
    ("q", -0.5, -0.4372),
    ("sarsa", -0.4, -0.1652),
    ("hybrid", -0.4, -0.3126544),
])
def test_two_node_backup_by_hand(backup, q_leaf, q_root):
    tree, b = _root_and_children(backup)
    assert (tree.N[b], tree.N[0], tree.O[b], tree.O[0]) == (1, 2, 0, 0)
    assert tree.W[b] / tree.N[b] == pytest.approx(q_leaf)
    assert tree.W[0] / tree.N[0] == pytest.approx(q_root)


def test_rates_discount_and_reward_scale_are_options():
    # sarsa with c1 = 0.5, gamma = 0.5, no feedback: root first Q = 0.5 * -0.5 = -0.25; Q_b = 0.5 * -0.5
    # = -0.25; root: delta = 0.5 * 0.25 - (-0.25) = 0.375, Q = -0.25 + 0.5 * 0.375 = -0.0625.
    tree, b = _root_and_children("sarsa", sarsa_rate=0.5, discount=0.5, reward_scale=0.0)
    assert tree.W[b] == pytest.approx(-0.25)
    assert tree.W[0] / tree.N[0] == pytest.approx(-0.0625)


def test_trace_decays_along_a_three_node_path():
    # Path root -> a -> x, x a new leaf valued 0.5 for White to move there, so -0.5 for x's mover Black.
    # Before: root (mover Black) Q -0.5 over N=2, a (mover White) N=1, Q=0.2. Feedback off, lambda 0.5.
    #   x (new): Q_x = -0.5.
    #   t=0: delta_0 = -Q_a - Q_root = -0.2 + 0.5 = 0.3    -> Q_root = -0.5 + 0.372 * 0.3 = -0.3884
    #   t=1: delta_1 = -Q_x - Q_a = 0.5 - 0.2 = 0.3        -> Q_a = 0.2 + 0.372 * 0.3 = 0.3116
    #        and the root, one step back (lambda^1) and seen by the other side:
    #        Q_root = -0.3884 - 0.372 * 0.5 * 0.3 = -0.4442
    search = Search(ConstantEvaluator(0.5), SearchConfig(simulations=1, backup="sarsa", reward_scale=0.0,
                                                         trace_decay=0.5))
    search.run(GameState.initial())
    tree = search.tree
    a = int(tree.first_child[0])
    tree.N[0], tree.W[0] = 2, -1.0
    tree.N[a], tree.W[a] = 1, 0.2
    search._expand(tree, a, [0, a])
    x = int(tree.first_child[a])
    for n in (0, a, x):
        tree.O[n] += 1
    search._backup(tree, [0, a, x], 0.5, int(tree.side[x]))
    assert int(tree.side[x]) == 0
    assert tree.W[x] == pytest.approx(-0.5)
    assert tree.W[a] / tree.N[a] == pytest.approx(0.3116)
    assert tree.W[0] / tree.N[0] == pytest.approx(-0.4442)


@pytest.mark.parametrize("backup", ["sarsa", "q", "hybrid"])
def test_searches_with_td_backups_keep_visit_counts(backup):
    from knowledge.agents import make_agent

    import catalog  # noqa: F401  registers the search agents

    agent = make_agent(f"mcts:sims=24,backup={backup}")
    state = GameState.initial()
    for _ in range(3):
        state = state.apply(agent.select(state))
    result = agent.last_result
    assert agent.search.config.backup == backup
    assert result.visits.sum() >= 24 and np.isfinite(result.q[result.visits > 0]).all()
    assert int(agent.search.tree.O[: agent.search.tree.size].sum()) == 0
