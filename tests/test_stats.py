"""Match statistics (train/matches/stats.py) against hand-computed values and independent algorithms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from train.jobs.rundir import json_safe
from train.matches.stats import (
    ELO_SCALE,
    PairResult,
    bradley_terry,
    elo_from_score,
    expected_score,
    payoff_matrix,
    percentile,
    score_matrices,
    wilson_interval,
    win_rate,
)


# ------------------------------------------------------------------------- win rate
@pytest.mark.parametrize(
    "wins, losses, se, lo, hi",
    [  # the JFA paper, Table 4 (standard error and 95% CI in percent)
        (81, 19, 0.0392, 73.31, 88.69),
        (74, 26, 0.0439, 65.40, 82.60),
        (70, 30, 0.0458, 61.02, 78.98),
    ],
)
def test_win_rate_reproduces_the_papers_table_4(wins, losses, se, lo, hi):
    w = win_rate(wins, 0, losses)
    assert w.rate == wins / 100
    assert round(w.se, 4) == se
    assert [round(100 * x, 2) for x in w.ci95] == [lo, hi]


def test_win_rate_60_40_by_hand():
    w = win_rate(60, 0, 40)
    assert w.rate == pytest.approx(0.6)
    assert w.se == pytest.approx(math.sqrt(0.6 * 0.4 / 100))  # 0.04899
    assert round(w.se, 3) == 0.049
    assert w.ci95 == pytest.approx((0.6 - 1.959964 * 0.0489898, 0.6 + 1.959964 * 0.0489898), abs=1e-6)
    # Wilson by hand: centre (p + z^2/2n) / (1 + z^2/n), half-width z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n)
    z = 1.959963984540054
    centre = (0.6 + z * z / 200) / (1 + z * z / 100)
    half = z * math.sqrt(0.0024 + z * z / 40000) / (1 + z * z / 100)
    assert w.wilson_ci95 == pytest.approx((centre - half, centre + half))
    assert [round(x, 4) for x in w.wilson_ci95] == [0.5020, 0.6906]
    assert w.elo == pytest.approx(400 * math.log10(1.5))  # 70.44
    assert w.elo_ci95 == pytest.approx((elo_from_score(w.wilson_ci95[0]), elo_from_score(w.wilson_ci95[1])))
    assert w.games == 100 and w.score == 60


def test_draws_count_half():
    w = win_rate(50, 20, 30)
    assert w.rate == pytest.approx(0.6) and w.score == 60 and w.games == 100
    assert w.se == pytest.approx(win_rate(60, 0, 40).se)  # the paper's (conservative) SE
    assert win_rate(0, 10, 0).rate == 0.5


def test_extreme_scores():
    w = win_rate(10, 0, 0)
    assert w.rate == 1.0 and w.se == 0.0 and w.ci95 == (1.0, 1.0)
    z2 = 1.959963984540054**2
    assert w.wilson_ci95 == pytest.approx((10 / (10 + z2), 1.0))  # Wilson is not degenerate
    assert w.elo == math.inf and w.elo_ci95[1] == math.inf and math.isfinite(w.elo_ci95[0])
    d = w.to_dict()
    assert d["elo"] is None and d["elo_ci95"][1] is None and d["win_rate"] == 1.0
    assert wilson_interval(0, 10) == pytest.approx((0.0, z2 / (10 + z2)))
    empty = win_rate(0, 0, 0)
    assert math.isnan(empty.rate) and empty.to_dict()["win_rate"] is None
    with pytest.raises(ValueError, match="wins"):
        win_rate(-1, 0, 0)


def test_elo_formulas():
    assert elo_from_score(0.5) == 0.0
    assert elo_from_score(0.75) == pytest.approx(400 * math.log10(3))  # 190.85
    assert elo_from_score(0.25) == pytest.approx(-400 * math.log10(3))
    assert elo_from_score(0.0) == -math.inf and elo_from_score(1.0) == math.inf
    for p in (0.1, 0.37, 0.5, 0.9):
        assert expected_score(elo_from_score(p)) == pytest.approx(p)
    with pytest.raises(ValueError, match="rate"):
        elo_from_score(1.5)


def test_helpers():
    assert json_safe({"a": [1.0, math.inf, np.float64(2.5)], "b": (math.nan,)}) == {"a": [1.0, None, 2.5], "b": [None]}
    assert percentile([1, 2, 3, 4, 5], 95) == pytest.approx(4.8)
    assert math.isnan(percentile([], 95))


# ------------------------------------------------------------------------- payoff and Bradley-Terry
def test_payoff_matrix():
    results = [PairResult("a", "b", 6, 2, 2), PairResult("c", "a", 1, 0, 3)]
    m = payoff_matrix(results, ["a", "b", "c"])
    assert m[0, 1] == pytest.approx(0.7) and m[1, 0] == pytest.approx(0.3)
    assert m[2, 0] == pytest.approx(0.25) and m[0, 2] == pytest.approx(0.75)
    assert np.all(np.diag(m) == 0.5)
    assert math.isnan(m[1, 2]) and math.isnan(m[2, 1])  # b and c never met
    points, games = score_matrices(results + [PairResult("b", "a", 1, 0, 0)], ["a", "b", "c"])
    assert points[0, 1] == 7 and points[1, 0] == 4 and games[0, 1] == games[1, 0] == 11
    with pytest.raises(ValueError, match="agent 'd'"):
        payoff_matrix([PairResult("a", "d", 1, 0, 0)], ["a", "b"])


def test_two_player_bradley_terry_is_the_logistic_elo_of_the_score():
    r = bradley_terry([PairResult("a", "b", 60, 0, 40)], ["a", "b"])
    assert r.elo[0] - r.elo[1] == pytest.approx(elo_from_score(0.6), abs=1e-6)
    assert r.elo.sum() == pytest.approx(0.0, abs=1e-9)  # anchored at mean 0
    # SE of the difference = delta method on the binomial SE: (400/ln 10) / sqrt(n p (1-p))
    se_diff = ELO_SCALE / math.sqrt(100 * 0.6 * 0.4)
    assert r.se[0] == pytest.approx(se_diff / 2) and r.se[1] == pytest.approx(se_diff / 2)
    anchored = bradley_terry([PairResult("a", "b", 60, 0, 40)], ["a", "b"], anchor="b")
    assert anchored.elo[1] == 0.0 and anchored.se[1] == 0.0
    assert anchored.elo[0] == pytest.approx(elo_from_score(0.6), abs=1e-6)
    assert anchored.se[0] == pytest.approx(se_diff)
    half = 1.959964 * se_diff
    assert anchored.ci95[0] == pytest.approx((anchored.elo[0] - half, anchored.elo[0] + half), abs=1e-3)
    # draws as half wins
    drawn = bradley_terry([PairResult("a", "b", 50, 20, 30)], ["a", "b"], anchor="b")
    assert drawn.elo[0] == pytest.approx(elo_from_score(0.6), abs=1e-6)
    assert drawn.prior_draws == 0.0


def test_symmetric_results_give_equal_ratings():
    even = [PairResult("a", "b", 5, 2, 5), PairResult("b", "c", 4, 0, 4), PairResult("a", "c", 3, 6, 3)]
    r = bradley_terry(even, ["a", "b", "c"])
    assert r.elo == pytest.approx([0, 0, 0], abs=1e-6)
    cycle = [PairResult("a", "b", 7, 0, 3), PairResult("b", "c", 7, 0, 3), PairResult("c", "a", 7, 0, 3)]
    r = bradley_terry(cycle, ["a", "b", "c"])
    assert r.elo == pytest.approx([0, 0, 0], abs=1e-6)
    assert r.se[0] == pytest.approx(r.se[1]) == pytest.approx(r.se[2])


def _mm_bradley_terry(points: np.ndarray, games: np.ndarray, iters: int = 20000) -> np.ndarray:
    """Hunter's (2004) minorisation-maximisation iteration, an independent check: strengths
    ``pi_i <- W_i / sum_j n_ij / (pi_i + pi_j)``; returns Elo with mean 0."""
    n = len(points)
    pi = np.ones(n)
    wins = points.sum(axis=1)
    for _ in range(iters):
        denom = np.array([sum(games[i, j] / (pi[i] + pi[j]) for j in range(n) if j != i) for i in range(n)])
        pi = wins / denom
        pi /= np.exp(np.mean(np.log(pi)))
    elo = 400 * np.log10(pi)
    return elo - elo.mean()


def test_bradley_terry_matches_an_independent_algorithm_and_the_numerical_hessian():
    agents = ["a", "b", "c", "d"]
    results = [PairResult("a", "b", 12, 3, 5), PairResult("a", "c", 15, 1, 4), PairResult("a", "d", 9, 2, 9),
               PairResult("b", "c", 10, 4, 6), PairResult("b", "d", 6, 2, 12), PairResult("c", "d", 4, 6, 10)]
    r = bradley_terry(results, agents)
    points, games = score_matrices(results, agents)
    assert r.elo == pytest.approx(_mm_bradley_terry(points, games), abs=1e-4)
    # at the maximum every agent's expected score equals its actual score
    p = 1 / (1 + 10 ** ((r.elo[None, :] - r.elo[:, None]) / 400))
    assert (games * p).sum(axis=1) == pytest.approx(points.sum(axis=1), abs=1e-6)

    # standard errors: inverse of the numerical Hessian of the log-likelihood (anchor d at 0)
    anchored = bradley_terry(results, agents, anchor="d")
    assert anchored.elo - anchored.elo[3] == pytest.approx(r.elo - r.elo[3], abs=1e-5)

    def loglik(x):  # x: Elo of a, b, c (d = 0)
        elo = np.append(x, 0.0)
        q = 1 / (1 + 10 ** ((elo[None, :] - elo[:, None]) / 400))
        return float(np.sum(np.where(points > 0, points * np.log(q), 0.0)))

    x0, h = anchored.elo[:3], 1e-2
    hess = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            ei, ej = np.eye(3)[i] * h, np.eye(3)[j] * h
            hess[i, j] = (loglik(x0 + ei + ej) - loglik(x0 + ei - ej)
                          - loglik(x0 - ei + ej) + loglik(x0 - ei - ej)) / (4 * h * h)
    cov = np.linalg.inv(-hess)
    assert anchored.se[:3] == pytest.approx(np.sqrt(np.diag(cov)), rel=1e-4)
    assert anchored.se[3] == 0.0
    d = r.to_dict()
    assert [row["agent"] for row in d["ratings"]] == agents and d["anchor"] == "mean"
    assert d["ratings"][0]["games"] == 60 and d["ratings"][0]["score"] == pytest.approx(36 + 3)


def test_bradley_terry_with_an_unbeaten_agent_uses_a_prior():
    results = [PairResult("a", "b", 10, 0, 0), PairResult("b", "c", 6, 0, 4), PairResult("a", "c", 10, 0, 0)]
    r = bradley_terry(results, ["a", "b", "c"])
    assert r.prior_draws == 1.0 and np.all(np.isfinite(r.elo)) and r.elo[0] > r.elo[1] > r.elo[2]
    with pytest.raises(ValueError, match="infinite"):
        bradley_terry(results, ["a", "b", "c"], prior_draws=0)
    with pytest.raises(ValueError, match="no games"):
        bradley_terry([PairResult("a", "b", 1, 0, 1)], ["a", "b", "c"])
    with pytest.raises(ValueError, match="connect"):
        bradley_terry([PairResult("a", "b", 1, 0, 1), PairResult("c", "d", 1, 0, 1)], ["a", "b", "c", "d"])
    with pytest.raises(ValueError, match="anchor"):
        bradley_terry(results, ["a", "b", "c"], anchor="z")


# ------------------------------------------------------------------------- SPRT
def test_sprt_bounds_are_the_wald_bounds():
    from train.matches.stats import sprt_bounds

    lo, hi = sprt_bounds(0.05, 0.05)
    assert lo == pytest.approx(-2.944439, abs=1e-6) and hi == pytest.approx(2.944439, abs=1e-6)  # -+log(19)
    lo, hi = sprt_bounds(0.05, 0.10)
    assert lo == pytest.approx(math.log(0.10 / 0.95)) and hi == pytest.approx(math.log(0.90 / 0.05))


def test_sprt_trinomial_llr_by_hand():
    """1 loss, 2 draws, 3 wins; H0 0 Elo, H1 50 Elo. With the Jeffreys pseudo-count 1/2 per outcome the
    frequencies are (1.5, 2.5, 3.5) / 7.5, so m = 4.75 / 7.5 = 19/30, var = (1.5 (19/30)^2 + 2.5 (4/30)^2 +
    3.5 (11/30)^2) / 7.5 = 67/450; s0 = 0.5, s1 = 1 / (1 + 10^-0.125) = 0.5714631; LLR = N (s1 - s0)
    (2m - s0 - s1) / (2 var) = 6 * 0.0714631 * 0.1952036 / 0.2977778 = 0.281079."""
    from train.matches.stats import sprt

    r = sprt([1, 2, 3], 0, 50)
    assert r.llr == pytest.approx(0.281079, abs=1e-5)
    assert r.decision is None and r.n == 6 and r.score == pytest.approx(2 / 3)


def test_sprt_pentanomial_llr_by_hand():
    """Pairs scoring 0, 1/4, 1/2, 3/4, 1 per game, seen 1, 2, 3, 4, 5 times (15 pairs); frequencies
    (1.5, 2.5, 3.5, 4.5, 5.5) / 17.5: m = 11.25 / 17.5 = 9/14, var = 1.830357 / 17.5 = 0.1045918,
    LLR = 15 * 0.0714631 * (18/14 - 1.0714631) / 0.2091837 = 1.097915."""
    from train.matches.stats import sprt

    r = sprt([1, 2, 3, 4, 5], 0, 50)
    assert r.llr == pytest.approx(1.097915, abs=1e-5)
    assert r.decision is None and r.n == 15


def test_sprt_is_not_decided_by_a_few_games():
    """Two pairs won 2-0 (four straight wins) do not accept (fishtest's 1e-3 regularisation would give an
    LLR of 283); nine such pairs do, and nine pairs lost 0-2 reject."""
    from train.matches.stats import pentanomial, sprt

    assert sprt(pentanomial([2, 2]), 0, 50).decision is None
    assert sprt(pentanomial([2] * 8), 0, 50).decision is None
    assert sprt(pentanomial([2] * 9), 0, 50).decision == "H1"
    assert sprt(pentanomial([0] * 9), 0, 50).decision == "H0"


def test_sprt_decides_and_stays_finite_on_one_sided_results():
    from train.matches.stats import pentanomial, sprt

    win = sprt(pentanomial([2] * 20), 0, 50)
    lose = sprt(pentanomial([0] * 20), 0, 50)
    assert win.decision == "H1" and math.isfinite(win.llr) and win.llr > win.upper
    assert lose.decision == "H0" and math.isfinite(lose.llr) and lose.llr < lose.lower
    even = sprt(pentanomial([1, 1, 2, 0, 1.5, 0.5]), 0, 50)  # a score of exactly 1/2 leans to H0
    assert even.decision is None and even.llr < 0
    assert sprt([0, 0, 0], 0, 50).llr == 0.0  # no games: no evidence
    assert pentanomial([0, 0.5, 1, 1.5, 2, 2]) == [1, 1, 1, 1, 2]
    with pytest.raises(ValueError):
        pentanomial([0.3])
    with pytest.raises(ValueError):
        sprt([1, 2, 3], 50, 0)
