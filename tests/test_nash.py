"""train.matches.nash against hand-computed games: rock-paper-scissors, a dominated strategy, duplicated
strategies (where only maximum entropy makes the equilibrium unique), a 2x2 game solved by hand for
RPP, and the gamescape of a cyclic and a transitive population."""

from __future__ import annotations

import numpy as np
import pytest

from train.matches.nash import (
    gamescape,
    max_entropy_nash,
    relative_population_performance,
    solve_zero_sum,
    zero_sum_payoff,
)

RPS = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])  # rock, paper, scissors


def test_rock_paper_scissors_has_the_uniform_nash_and_value_zero():
    sol = solve_zero_sum(RPS)
    assert sol.value == pytest.approx(0.0, abs=1e-9)
    assert sol.row == pytest.approx([1 / 3] * 3, abs=1e-6)
    assert sol.col == pytest.approx([1 / 3] * 3, abs=1e-6)
    assert max_entropy_nash(RPS) == pytest.approx([1 / 3] * 3, abs=1e-6)


def test_a_dominated_strategy_gets_no_weight():
    # RPS plus a fourth strategy that loses to each of the three: it is strictly dominated
    m = np.zeros((4, 4))
    m[:3, :3] = RPS
    m[3, :3], m[:3, 3] = -0.5, 0.5
    assert max_entropy_nash(m) == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0.0], abs=1e-6)
    # a transitive chain: the strongest agent is the pure equilibrium
    f = np.array([0.1, 0.7, 0.3])
    assert max_entropy_nash(f[:, None] - f[None, :]) == pytest.approx([0, 1, 0], abs=1e-6)


def test_maximum_entropy_splits_weight_between_duplicates():
    # rock twice: every (x, 1/3 - x, 1/3, 1/3) is a Nash equilibrium; the maximum-entropy one splits evenly
    m = np.array([[0, 0, -1, 1], [0, 0, -1, 1], [1, 1, 0, -1], [-1, -1, 1, 0]], float)
    assert max_entropy_nash(m) == pytest.approx([1 / 6, 1 / 6, 1 / 3, 1 / 3], abs=1e-5)


def test_rpp_of_a_two_by_two_game_by_hand():
    # no saddle point (maximin -0.1 < minimax 0.2): v = (ad - bc) / (a + d - b - c) = 0.02 / 1.0,
    # p1 = (d - c) / 1.0 = 0.4, q1 = (d - b) / 1.0 = 0.7
    m = np.array([[0.2, -0.4], [-0.1, 0.3]])
    sol = relative_population_performance(m)
    assert sol.value == pytest.approx(0.02, abs=1e-9)
    assert sol.row == pytest.approx([0.4, 0.6], abs=1e-6)
    assert sol.col == pytest.approx([0.7, 0.3], abs=1e-6)
    assert sol.row @ m @ sol.col == pytest.approx(0.02, abs=1e-9)
    # a saddle point: A's second agent beats all of B
    saddle = relative_population_performance(np.array([[-0.5, 0.2], [0.4, 0.6]]))
    assert saddle.value == pytest.approx(0.4) and saddle.row == pytest.approx([0, 1], abs=1e-6)
    assert saddle.col == pytest.approx([1, 0], abs=1e-6)
    # swapping the populations negates RPP
    assert relative_population_performance(-m.T).value == pytest.approx(-0.02, abs=1e-9)


def test_gamescape_of_a_cycle_goes_round_the_origin_and_reconstructs_the_payoff():
    g = gamescape(RPS)
    x = g.points
    cross = x[:, None, 0] * x[None, :, 1] - x[:, None, 1] * x[None, :, 0]
    assert cross == pytest.approx(RPS, abs=1e-9)  # rank 2: exact
    assert g.explained == pytest.approx(1.0) and g.strength == pytest.approx(np.sqrt(3.0))
    assert np.linalg.norm(x.mean(axis=0)) < 1e-9  # an equilateral triangle centred on the origin
    assert np.linalg.norm(x, axis=1) == pytest.approx([np.linalg.norm(x[0])] * 3)


def test_gamescape_of_a_transitive_population_is_a_line():
    f = np.array([3.0, 1.0, 0.0, -2.0])
    g = gamescape(f[:, None] - f[None, :])
    d = g.points[1:] - g.points[0]
    assert np.abs(d[:, 0] * d[1:2, 1] - d[:, 1] * d[1:2, 0]) == pytest.approx([0, 0, 0], abs=1e-9)
    assert g.explained == pytest.approx(1.0)


def test_bad_inputs():
    with pytest.raises(ValueError, match="antisymmetric"):
        max_entropy_nash(np.array([[0.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="antisymmetric"):
        gamescape(np.ones((2, 3)))
    with pytest.raises(ValueError, match="no games"):
        zero_sum_payoff(np.array([[0.5, np.nan], [np.nan, 0.5]]))
    assert zero_sum_payoff(np.array([[0.5, 0.75], [0.25, 0.5]])) == pytest.approx(np.array([[0, 0.5], [-0.5, 0]]))


def test_population_analysis_of_a_tournament_payoff():
    from train.matches.tournament import population_analysis

    rates = (RPS + 1) / 2  # score rates of rock, paper, scissors
    agents = ["rock", "paper", "scissors"]
    out = population_analysis(rates, agents, ["rock", "paper"], ["scissors"])
    assert out["nash"]["weights"] == pytest.approx({a: 1 / 3 for a in agents}, abs=1e-6)
    pops = out["populations"]
    # A = {rock, paper} against B = {scissors}: rock beats scissors, so A's Nash is pure rock and RPP = 1
    assert pops["rpp"] == pytest.approx(1.0) and pops["nash_a"] == pytest.approx({"rock": 1, "paper": 0}, abs=1e-6)
    assert out["gamescape"]["explained"] == pytest.approx(1.0)
