"""ShapeAgent (``shape``, JFA section 4.2): legal layouts, end-of-layout value = the shape evaluation."""

from __future__ import annotations

import numpy as np
import pytest

import catalog  # noqa: F401  registers the search agents
from core import GameState
from knowledge.agents import PhasedAgent, make_agent
from knowledge.evaluation import ShapeEvaluator
from knowledge.formation import gaussian_density
from knowledge.registry import SpecError
from search.agents import SearchAgent


def test_spec_with_options_parses_to_a_layout_search_and_a_battle_agent():
    agent = make_agent("shape:sims=7,prior=none,battle=greedy,backup=hybrid", seed=3)
    assert isinstance(agent, PhasedAgent) and isinstance(agent.layout_agent, SearchAgent)
    config = agent.layout_agent.search.config
    assert (config.simulations, config.backup, config.seed) == (7, "hybrid", 3)
    assert agent.battle_agent.name.startswith("greedy")
    assert agent.layout_agent.search.evaluator._layout_prior is None
    with pytest.raises(SpecError, match="prior"):
        make_agent("shape:prior=eval.shape")
    with pytest.raises(SpecError, match="battle"):
        make_agent("shape:battle=nosuchagent")


def _random_layout(empty: int, seed: int = 0) -> GameState:
    """A layout position with ``empty`` empty points reached by random placements."""
    rng = np.random.default_rng(seed)
    state = GameState.initial()
    while np.count_nonzero(state.board == 0) > empty:
        moves = state.legal_moves()
        state = state.apply(moves[int(rng.integers(len(moves)))])
    return state


def test_plays_legal_layout_moves_and_hands_the_battle_to_the_expert():
    agent = make_agent("shape:sims=4")
    state = GameState.initial()
    for _ in range(4):  # the first placements (restricted to the central diagonals)
        move = agent.select(state)
        state.check_move(move)
        state = state.apply(move)
    state = _random_layout(12)
    while state.phase == 0:
        move = agent.select(state)
        state.check_move(move)
        assert agent.last_agent is agent.layout_agent
        state = state.apply(move)
    state.check_move(agent.select(state))
    assert agent.last_agent is agent.battle_agent


def test_policy_is_the_gaussian_prior():
    agent = make_agent("shape:sims=1")
    state = GameState.initial().apply(GameState.initial().legal_moves()[0])
    policy = agent.layout_agent.search.evaluator.evaluate([state])[0].policy
    legal = state.placements()
    density = gaussian_density()
    assert policy.sum() == pytest.approx(1.0)
    assert np.allclose(policy[legal], density[legal] / density[legal].sum(), atol=1e-6)


def test_value_at_the_end_of_the_layout_is_the_shape_evaluation():
    state = _random_layout(1)
    agent = make_agent("shape:sims=2")
    agent.select(state)  # simulation 1 expands the root, simulation 2 values its only child
    result = agent.layout_agent.last_result
    after = state.apply(result.moves[0])
    assert after.phase == 1 and result.visits.tolist() == [1]
    value = ShapeEvaluator().value(after)  # for the side to move after the last placement
    expected = value if after.side == state.side else -value
    assert result.q[0] == pytest.approx(expected)
    assert value != 0.0  # a random layout is not balanced to the last stone


def test_shape_reward_is_the_formation_evaluation_at_the_end_of_the_layout():
    from knowledge.plugins import REGISTRY

    end = _random_layout(1).apply(_random_layout(1).legal_moves()[0])
    assert end.phase == 1
    e = ShapeEvaluator(material=0.0)
    white, black = e.score(end, 0), e.score(end, 1)  # 7 Dalians + 3 gates + 4 squares per side
    n_sq, n_gates, _, n_dal = e.counts(end, 0)
    assert white == 7 * n_dal + 3 * n_gates + 4 * n_sq
    rewards = REGISTRY.create("reward.shape", "reward").rewards(end)
    assert rewards[0] == pytest.approx(np.tanh((white - black) / 20.0)) and rewards[1] == -rewards[0]
    assert rewards[0] != 0.0


def test_a_trained_slm_kind_net_replaces_the_knowledge_evaluator():
    from nets.evaluator import NetEvaluator
    from search.agents import MODELS_DIR

    shipped = MODELS_DIR / "shape" / "slm.safetensors"  # the ShapeAgent net (models/shape/README.md)
    assert shipped.is_file()
    agent = make_agent(f"shape:sims=2,net={shipped}")
    try:
        assert isinstance(agent.layout_agent.search.evaluator, NetEvaluator)
        state = GameState.initial()
        state.check_move(agent.select(state))
    finally:
        agent.close()
    with pytest.raises(SpecError, match="net"):
        make_agent("shape:net=none")
