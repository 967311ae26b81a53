"""Match statistics: win rate with standard error and 95% intervals, Elo, Bradley-Terry ratings.

Conventions (used by the arena, the tournament and their JSON files):

- **Score.** A win counts 1, a draw 1/2, a loss 0. The *win rate* of an agent is its score divided by
  the number of games, ``p = (wins + draws / 2) / games`` (the JFA paper's Table 4 has no draws, where
  this is the plain win fraction).
- **Standard error** (``se``): the paper's normal approximation ``sqrt(p (1 - p) / n)``. With draws the
  per-game score has variance ``<= p (1 - p)``, so this SE is conservative (never too small).
- **Normal interval** (``ci95``, the paper's Table 4): ``p +- z se`` with ``z = 1.95996`` (the 97.5%
  normal quantile), clipped to ``[0, 1]``. Example: 81 wins, 19 losses -> 0.81, SE 0.0392,
  [0.7331, 0.8869], as in the paper.
- **Wilson score interval** (``wilson_ci95``): the better-behaved interval near 0 and 1 (it never
  leaves ``[0, 1]`` and is not degenerate at 0 or 1 wins), computed with the score as the (possibly
  fractional) number of successes.
- **Elo** (papers/002 appendix A): expected score ``E = 1 / (1 + 10^(-D / 400))`` for a rating
  difference ``D``, so ``D = 400 log10(p / (1 - p))``. A score of 0 or 1 gives an infinite difference
  (``math.inf``; written ``null`` in JSON files). The Elo interval maps the Wilson interval through
  this formula (monotone, so it is an exact transformation of that interval).
- **Bradley-Terry** (:func:`bradley_terry`): the maximum likelihood ratings of a round robin under the
  same logistic model, draws as half a win and half a loss; 95% intervals ``+- z sqrt(var)`` from the
  inverse Fisher information (the observed and expected information agree for this model). Ratings
  are in Elo points, anchored so that their mean is 0 or a named agent is 0.

- **SPRT** (:func:`sprt`, fishtest style): a sequential test of H0 ``Elo = elo0`` against H1 ``Elo = elo1``
  (logistic Elo of the candidate over the opponent) with error rates ``alpha``/``beta``. The
  log-likelihood ratio is the GSPRT normal approximation ``LLR = N (s1 - s0) (2 m - s0 - s1) / (2 var)``,
  where ``s0``/``s1`` are the expected scores of ``elo0``/``elo1``, ``N`` the number of samples, ``m``
  their mean score and ``var`` their (population) variance. Samples are games (trinomial: scores 0, 1/2,
  1) or colour-balanced game pairs (pentanomial: pair scores 0, 1/4, 1/2, 3/4, 1 per game, which
  removes the colour and opening correlation inside a pair). Small-sample regularisation: ``m`` and
  ``var`` use the posterior mean frequencies under a Jeffreys prior, ``(count_k + 1/2) / (N + K/2)`` for
  ``K`` outcomes (``N`` stays the real count). Fishtest only replaces zero counts by 1e-3, which is
  harmless at its thousands of games but not at a gate's handful: two game pairs won 2-0 would give
  ``LLR = 283`` (elo1 = 50) and accept on noise; with the prior they give 0.20 (nine pairs won 2-0 are
  needed to accept at alpha = beta = 0.05). For large ``N`` the two
  agree. The test stops with H1 (accept) when ``LLR >= log((1 - beta) / alpha)``, with H0 (reject) when
  ``LLR <= log(beta / (1 - alpha))``, else it goes on.

All functions are pure; nothing here depends on the game.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from train.jobs.rundir import json_safe

Z95 = 1.959963984540054  # 97.5% quantile of the standard normal
ELO_SCALE = 400.0 / math.log(10.0)  # Elo points per logistic unit (173.72)


# ============================================================================ win rate
@dataclass(frozen=True)
class WinRate:
    """Win rate of ``wins``/``draws``/``losses`` (counts, from one agent's point of view).

    ``rate`` is the score per game in ``[0, 1]`` (draws count half); ``se`` the paper's normal
    standard error ``sqrt(rate (1 - rate) / games)``; ``ci95`` the normal interval ``rate +- z se``
    clipped to ``[0, 1]``; ``wilson_ci95`` the Wilson score interval; ``elo`` the Elo difference of
    the score (``+-inf`` for a score of 1 or 0) and ``elo_ci95`` the Wilson interval mapped to Elo.
    With no games every number is ``nan`` (and the intervals ``(0, 1)`` / ``(-inf, inf)``).
    """

    wins: float
    draws: float
    losses: float
    rate: float
    se: float
    ci95: tuple[float, float]
    wilson_ci95: tuple[float, float]
    elo: float
    elo_ci95: tuple[float, float]

    @property
    def games(self) -> float:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """Points: wins + draws / 2."""
        return self.wins + 0.5 * self.draws

    def to_dict(self) -> dict:
        """JSON-ready mapping (infinite and nan values become ``None``)."""
        return json_safe({
            "games": self.games, "wins": self.wins, "draws": self.draws, "losses": self.losses,
            "score": self.score, "win_rate": self.rate, "se": self.se, "ci95": list(self.ci95),
            "wilson_ci95": list(self.wilson_ci95), "elo": self.elo, "elo_ci95": list(self.elo_ci95),
        })


def _check_counts(**counts: float) -> None:
    for name, value in counts.items():
        if not (value >= 0) or math.isinf(value):
            raise ValueError(f"{name}: must be a finite count >= 0, got {value!r}")


def normal_interval(rate: float, n: float, z: float = Z95) -> tuple[float, float, float]:
    """``(se, low, high)``: the normal-approximation SE ``sqrt(rate (1 - rate) / n)`` and interval
    ``rate +- z se`` clipped to ``[0, 1]`` (the JFA paper's Table 4). ``n > 0`` games."""
    if n <= 0:
        raise ValueError(f"n: must be > 0, got {n!r}")
    se = math.sqrt(max(rate * (1.0 - rate), 0.0) / n)
    return se, max(0.0, rate - z * se), min(1.0, rate + z * se)


def wilson_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for ``successes`` out of ``n`` (``successes`` may be fractional: wins
    plus half the draws). ``n > 0``."""
    if n <= 0:
        raise ValueError(f"n: must be > 0, got {n!r}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes: must lie in [0, n={n}], got {successes!r}")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    lo = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends (no rounding off 0 and 1)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi


def elo_from_score(rate: float) -> float:
    """Elo difference ``400 log10(rate / (1 - rate))`` of a score rate in ``[0, 1]`` (``+-inf`` at
    1 and 0)."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate: must lie in [0, 1], got {rate!r}")
    if rate == 0.0:
        return -math.inf
    if rate == 1.0:
        return math.inf
    return 400.0 * math.log10(rate / (1.0 - rate))


def expected_score(elo_diff: float) -> float:
    """Expected score ``1 / (1 + 10^(-elo_diff / 400))`` of the player ``elo_diff`` points stronger."""
    return 1.0 / (1.0 + 10.0 ** (-elo_diff / 400.0))


def win_rate(wins: float, draws: float = 0, losses: float = 0, z: float = Z95) -> WinRate:
    """The :class:`WinRate` of one agent's results (counts; draws count half).

    >>> w = win_rate(60, 0, 40)
    >>> round(w.rate, 3), round(w.se, 3), [round(x, 4) for x in w.ci95]
    (0.6, 0.049, [0.504, 0.696])
    """
    _check_counts(wins=wins, draws=draws, losses=losses)
    n = wins + draws + losses
    if n == 0:
        nan = math.nan
        return WinRate(wins, draws, losses, nan, nan, (0.0, 1.0), (0.0, 1.0), nan, (-math.inf, math.inf))
    score = wins + 0.5 * draws
    rate = score / n
    se, lo, hi = normal_interval(rate, n, z)
    wlo, whi = wilson_interval(score, n, z)
    return WinRate(wins, draws, losses, rate, se, (lo, hi), (wlo, whi), elo_from_score(rate),
                   (elo_from_score(wlo), elo_from_score(whi)))


# ============================================================================ round robin
@dataclass(frozen=True)
class PairResult:
    """Results of ``a`` against ``b``: ``wins``, ``draws``, ``losses`` counted from ``a``'s side."""

    a: str
    b: str
    wins: float
    draws: float
    losses: float

    @property
    def games(self) -> float:
        return self.wins + self.draws + self.losses

    def flipped(self) -> "PairResult":
        return PairResult(self.b, self.a, self.losses, self.draws, self.wins)


def _index(agents: Sequence[str]) -> dict[str, int]:
    if len(set(agents)) != len(agents):
        raise ValueError(f"agents: names must be distinct, got {list(agents)}")
    return {a: i for i, a in enumerate(agents)}


def score_matrices(results: Sequence[PairResult], agents: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(points, games)``, both ``float64[n, n]``: ``points[i, j]`` is agent ``i``'s score (wins +
    draws / 2) against ``j`` summed over ``results``, ``games[i, j]`` the games between them
    (symmetric). Results of an agent against itself are rejected."""
    idx = _index(agents)
    n = len(agents)
    points = np.zeros((n, n))
    games = np.zeros((n, n))
    for r in results:
        for name in (r.a, r.b):
            if name not in idx:
                raise ValueError(f"result {r.a} vs {r.b}: agent {name!r} is not in agents {list(agents)}")
        i, j = idx[r.a], idx[r.b]
        if i == j:
            raise ValueError(f"result {r.a} vs {r.b}: an agent against itself has no place in a rating")
        _check_counts(wins=r.wins, draws=r.draws, losses=r.losses)
        points[i, j] += r.wins + 0.5 * r.draws
        points[j, i] += r.losses + 0.5 * r.draws
        games[i, j] += r.games
        games[j, i] += r.games
    return points, games


def payoff_matrix(results: Sequence[PairResult], agents: Sequence[str]) -> np.ndarray:
    """``float64[n, n]``: the score rate (0..1, draws half) of row agent ``i`` against column agent
    ``j``; ``0.5`` on the diagonal (an agent against itself, by symmetry) and ``nan`` for pairs that
    did not play. ``M[i, j] + M[j, i] = 1``. Subtract 0.5 and double for the zero-sum payoff in
    ``[-1, 1]`` used by population methods (papers/002)."""
    points, games = score_matrices(results, agents)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.where(games > 0, points / np.where(games > 0, games, 1), np.nan)
    np.fill_diagonal(m, 0.5)
    return m


@dataclass(frozen=True)
class Ratings:
    """Bradley-Terry ratings (Elo points) of ``agents`` (same order).

    ``elo[i]`` the rating, ``se[i]`` its standard error, ``ci95[i]`` the interval ``elo +- z se``;
    ``cov`` the ``n x n`` covariance (Elo points squared); ``anchor`` ``"mean"`` or the agent held at
    0; ``prior_draws`` the virtual draws added to every played pair (0 for the plain maximum
    likelihood); ``log_likelihood`` at the optimum; ``points``/``games`` the score matrices used.
    """

    agents: tuple[str, ...]
    elo: np.ndarray
    se: np.ndarray
    cov: np.ndarray
    anchor: str
    prior_draws: float
    log_likelihood: float
    points: np.ndarray = field(repr=False)
    games: np.ndarray = field(repr=False)

    @property
    def ci95(self) -> list[tuple[float, float]]:
        return [(float(e - Z95 * s), float(e + Z95 * s)) for e, s in zip(self.elo, self.se)]

    def to_dict(self) -> dict:
        """JSON-ready: ``{"anchor", "prior_draws", "log_likelihood", "ratings": [{"agent", "elo",
        "se", "ci95", "score", "games"}, ...]}`` in the agents' order."""
        rows = [
            {"agent": a, "elo": float(self.elo[i]), "se": float(self.se[i]), "ci95": list(self.ci95[i]),
             "score": float(self.points[i].sum()), "games": float(self.games[i].sum())}
            for i, a in enumerate(self.agents)
        ]
        return json_safe({"anchor": self.anchor, "prior_draws": self.prior_draws,
                          "log_likelihood": self.log_likelihood, "ratings": rows})


def mle_exists(points: np.ndarray, games: np.ndarray) -> bool:
    """Whether the Bradley-Terry maximum likelihood is finite: the directed graph with an edge
    ``i -> j`` whenever ``i`` scored something against ``j`` is strongly connected."""
    from scipy.sparse.csgraph import connected_components

    n = len(points)
    if n <= 1:
        return True
    graph = (points > 0) & (games > 0)
    count, _ = connected_components(graph.astype(np.int8), directed=True, connection="strong")
    return count == 1


def bradley_terry(
    results: Sequence[PairResult],
    agents: Sequence[str],
    anchor: str | None = None,
    prior_draws: float | None = None,
) -> Ratings:
    """Maximum likelihood Bradley-Terry (Elo) ratings of a set of match results.

    Model: ``P(i beats j) = 1 / (1 + 10^((R_j - R_i) / 400))``; the log-likelihood is
    ``sum_ij points[i, j] log P(i beats j)`` with draws as half a win for each side. Maximised with
    ``scipy.optimize.minimize`` (trust-region Newton with the exact gradient and Hessian; it is
    concave). ``anchor``: ``None`` puts the mean rating at 0, an agent name holds that agent at 0
    (its ``se`` is then 0 and the others' are relative to it). Standard errors come from the inverse
    Fisher information ``I = sum_{i<j} n_ij p_ij (1 - p_ij) (e_i - e_j)(e_i - e_j)^T`` (in logistic
    units; its pseudo-inverse for the mean anchor, the inverse with the anchor's row and column
    removed otherwise), scaled to Elo points.

    ``prior_draws``: virtual drawn games added to every pair that played (a weak prior pulling
    ratings together). ``None`` (default) adds none when the maximum likelihood is finite and 1
    otherwise (e.g. an agent that won every game), so that the ratings stay finite; the value used is
    in ``Ratings.prior_draws``. With two agents and no prior the rating difference equals
    :func:`elo_from_score` of the score rate.

    Raises ``ValueError`` for unknown or repeated agents, an agent without games, or comparisons that
    do not connect all agents.
    """
    from scipy.optimize import minimize
    from scipy.sparse.csgraph import connected_components

    agents = tuple(agents)
    idx = _index(agents)
    if anchor is not None and anchor not in idx:
        raise ValueError(f"anchor: {anchor!r} is not one of the agents {list(agents)}")
    n = len(agents)
    if n == 0:
        raise ValueError("agents: need at least one agent")
    points, games = score_matrices(results, agents)
    if n > 1:
        for i, a in enumerate(agents):
            if games[i].sum() == 0:
                raise ValueError(f"agent {a!r}: played no games, so it has no rating")
        count, _ = connected_components((games > 0).astype(np.int8), directed=False)
        if count != 1:
            raise ValueError("results: the games do not connect all agents (some groups never met)")
    if prior_draws is None:
        prior_draws = 0.0 if mle_exists(points, games) else 1.0
    if prior_draws < 0:
        raise ValueError(f"prior_draws: must be >= 0, got {prior_draws!r}")
    played = games > 0
    pts = points + np.where(played, 0.5 * prior_draws, 0.0)
    gms = games + np.where(played, prior_draws, 0.0)
    if n > 1 and not mle_exists(pts, gms):
        raise ValueError("results: the maximum likelihood is infinite (an agent or group won or lost every"
                         " game); pass prior_draws > 0")

    ref = idx[anchor] if anchor is not None else 0
    free = [i for i in range(n) if i != ref]

    def full(x: np.ndarray) -> np.ndarray:
        beta = np.zeros(n)
        beta[free] = x
        return beta

    def parts(x: np.ndarray):
        beta = full(x)
        diff = beta[:, None] - beta[None, :]
        p = 1.0 / (1.0 + np.exp(-diff))  # P(i beats j)
        # -log-likelihood, counting each ordered pair once: sum_ij pts_ij log p_ij
        with np.errstate(divide="ignore", invalid="ignore"):
            ll = float(np.sum(np.where(pts > 0, pts * np.log(p), 0.0)))
        grad = (pts - gms * p).sum(axis=1)  # d ll / d beta_i
        w = gms * p * (1.0 - p)
        fisher = np.diag(w.sum(axis=1)) - w
        return ll, grad, fisher

    def fun(x):
        return -parts(x)[0]

    def jac(x):
        return -parts(x)[1][free]

    def hess(x):
        return parts(x)[2][np.ix_(free, free)]

    if n > 1:
        res = minimize(fun, np.zeros(n - 1), jac=jac, hess=hess, method="trust-exact",
                       options={"gtol": 1e-10, "maxiter": 1000})
        if not res.success and np.max(np.abs(jac(res.x))) > 1e-6:
            raise ValueError(f"Bradley-Terry fit did not converge: {res.message}")
        beta = full(res.x)
    else:
        beta = np.zeros(1)
    ll, _, fisher = parts(beta[free])
    if anchor is None:
        beta = beta - beta.mean()
        cov = np.linalg.pinv(fisher) if n > 1 else np.zeros((1, 1))
    else:
        cov = np.zeros((n, n))
        if n > 1:
            cov[np.ix_(free, free)] = np.linalg.inv(fisher[np.ix_(free, free)])
    cov = cov * ELO_SCALE**2
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return Ratings(agents, beta * ELO_SCALE, se, cov, anchor or "mean", float(prior_draws), ll, points, games)


# ============================================================================ SPRT
SPRT_PRIOR = 0.5  # Jeffreys pseudo-count per outcome (module docstring)


@dataclass(frozen=True)
class SPRTResult:
    """One look of :func:`sprt`: ``llr``, the bounds ``lower``/``upper``, ``decision`` (``"H1"``: the
    candidate is better by ``elo1``; ``"H0"``: it is not better than ``elo0``; ``None``: go on), the
    sample count ``n`` and mean score ``score`` (per game)."""

    llr: float
    lower: float
    upper: float
    decision: str | None
    n: float
    score: float

    def to_dict(self) -> dict:
        return json_safe({"llr": self.llr, "lower": self.lower, "upper": self.upper, "decision": self.decision,
                          "n": self.n, "score": self.score})


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """``(log(beta / (1 - alpha)), log((1 - beta) / alpha))``, the LLR bounds of an SPRT."""
    if not (0 < alpha < 1 and 0 < beta < 1):
        raise ValueError(f"alpha, beta: must lie in (0, 1), got {alpha!r}, {beta!r}")
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def llr_normal(counts: Sequence[float], scores: Sequence[float], elo0: float, elo1: float) -> float:
    """The GSPRT log-likelihood ratio (module docstring) of samples with score ``scores[k]`` (per game, in
    [0, 1]) observed ``counts[k]`` times. 0 when there are no samples."""
    if len(counts) != len(scores):
        raise ValueError("counts and scores differ in length")
    _check_counts(**{f"counts[{k}]": c for k, c in enumerate(counts)})
    n = float(sum(counts))
    if n == 0:
        return 0.0
    reg = [c + SPRT_PRIOR for c in counts]
    total = sum(reg)
    m = sum(c * x for c, x in zip(reg, scores)) / total
    var = sum(c * (x - m) ** 2 for c, x in zip(reg, scores)) / total
    s0, s1 = expected_score(elo0), expected_score(elo1)
    return n * (s1 - s0) * (2 * m - s0 - s1) / (2 * var)


PENTANOMIAL_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)
TRINOMIAL_SCORES = (0.0, 0.5, 1.0)


def sprt(counts: Sequence[float], elo0: float, elo1: float, alpha: float = 0.05, beta: float = 0.05) -> SPRTResult:
    """An SPRT look on ``counts``: 3 numbers (losses, draws, wins: trinomial) or 5 (game pairs scoring 0,
    1/2, 1, 3/2, 2 points: pentanomial). Module docstring for the LLR and the decision."""
    counts = list(counts)
    if len(counts) == 3:
        scores = TRINOMIAL_SCORES
    elif len(counts) == 5:
        scores = PENTANOMIAL_SCORES
    else:
        raise ValueError(f"counts: 3 (trinomial) or 5 (pentanomial) numbers, got {len(counts)}")
    if not elo1 > elo0:
        raise ValueError(f"elo1 ({elo1!r}) must be greater than elo0 ({elo0!r})")
    lo, hi = sprt_bounds(alpha, beta)
    llr = llr_normal(counts, scores, elo0, elo1)
    n = float(sum(counts))
    score = sum(c * x for c, x in zip(counts, scores)) / n if n else math.nan
    decision = "H1" if llr >= hi else "H0" if llr <= lo else None
    return SPRTResult(llr, lo, hi, decision, n, score)


def pentanomial(pair_points: Sequence[float]) -> list[int]:
    """Counts of game pairs by points (0, 0.5, 1, 1.5, 2) from each pair's points (the candidate's
    score summed over the pair's two games)."""
    out = [0] * 5
    for p in pair_points:
        k = int(round(2 * p))
        if not 0 <= k <= 4 or abs(2 * p - k) > 1e-9:
            raise ValueError(f"pair points: must be one of 0, 0.5, 1, 1.5, 2, got {p!r}")
        out[k] += 1
    return out


# ============================================================================ helpers
def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100, linear interpolation between order statistics, numpy's
    default) of ``values``; ``nan`` when empty."""
    if len(values) == 0:
        return math.nan
    return float(np.percentile(np.asarray(values, float), q))
