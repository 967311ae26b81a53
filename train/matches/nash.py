"""Nash evaluation of a population of agents (papers/002, JiangJun; Balduzzi et al. 2019's gamescape).

Conventions: a *payoff matrix* ``M`` (``float64[m, n]``) holds the row player's expected game score
against each column, zero-sum: win +1, draw 0, loss -1, so ``M = 2 * rate - 1`` for a score rate
``rate`` in ``[0, 1]`` (draws half) as ``train.matches.stats.payoff_matrix`` returns it (JiangJun's Nash
buffer adds +1/0/-1 per game). Within one population the matrix is antisymmetric (``M = -M^T``, zero
diagonal) and the game symmetric.

- :func:`solve_zero_sum` — the value of the zero-sum game ``M`` and the *maximum-entropy* optimal
  strategies of both players (JiangJun Eq. 2 asks for the unique maximum-entropy Nash equilibrium).
  Method (scipy only, no nashpy): (1) the game value ``v`` by linear programming
  (``scipy.optimize.linprog``, HiGHS): ``max v`` s.t. ``M^T p >= v``, ``p`` in the simplex; (2) the
  support of the optimal set ``{p in simplex : M^T p >= v - tol}`` (a polytope): one LP per strategy
  maximising ``p_i`` on it; strategy ``i`` is in the support if that maximum exceeds ``tol``, and the
  mean of those LP solutions is a point of the polytope positive on the whole support; (3) from that
  point, maximise the entropy ``-sum p_i log p_i`` over the polytope restricted to the support
  (``scipy.optimize.minimize``, SLSQP, linear constraints; the entropy is strictly concave, so the
  maximiser is unique, and it lies in the relative interior, where the entropy is smooth). The column
  player is the same problem on ``-M^T``.
- :func:`relative_population_performance` — RPP (papers/002 Def. 5.1): ``v(A, B) = p^T M_AB q`` for a
  Nash equilibrium ``(p, q)`` of the zero-sum game ``M_AB`` (rows = population A, columns = B); it is
  the game value, the same for every equilibrium. ``> 0``: A beats B as populations.
- :func:`nash_clusters` — Nash clustering (papers/002 Def. 4.2, after Czarnecki et al. 2020's layered
  geometry): the support of the population's maximum-entropy Nash is the first cluster; remove it and
  solve again on the rest, until no strategy is left. The sequence of cluster sizes measures
  non-transitivity: a transitive population gives clusters of size 1, a cycle one cluster of its length.
- :func:`gamescape` — the 2-D embedding of an antisymmetric payoff: the real Schur decomposition
  ``M = Q T Q^T`` (``scipy.linalg.schur``) has 2x2 blocks ``[[0, w], [-w, 0]]``; for the block with the
  largest ``|w|`` (columns ``k``, ``k + 1`` of ``Q``) agent ``i`` is the point
  ``sqrt(w) (Q[i, k], Q[i, k + 1])``, so that the 2-D cross product ``x_i x x_j`` is the best rank-2
  approximation of ``M[i, j]``. A transitive population (``M[i, j] = f_i - f_j``) lies on a line; a
  cyclic one (rock-paper-scissors) goes round the origin.

All functions are pure (numpy/scipy); nothing here depends on the game.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

TOL = 1e-9


@dataclass(frozen=True)
class NashSolution:
    """A zero-sum game's solution: ``value`` (the row player's expected payoff at equilibrium),
    ``row`` and ``col`` (``float64[m]``, ``float64[n]``: the maximum-entropy optimal mixed strategies,
    each summing to 1)."""

    value: float
    row: np.ndarray
    col: np.ndarray

    def to_dict(self, rows: Sequence[str] | None = None, cols: Sequence[str] | None = None) -> dict:
        """JSON-ready ``{"value", "row", "col"}``; with names, the strategies are ``{name: prob}``."""
        def named(p, names):
            return [float(x) for x in p] if names is None else {n: float(x) for n, x in zip(names, p)}

        return {"value": float(self.value), "row": named(self.row, rows), "col": named(self.col, cols)}


def zero_sum_payoff(rate: np.ndarray) -> np.ndarray:
    """``2 * rate - 1``: a score-rate matrix (``0..1``, draws half; ``train.matches.stats.payoff_matrix``) as
    the zero-sum expected game score in ``[-1, 1]``. ``nan`` (pairs that did not play) raises
    ``ValueError``."""
    rate = np.asarray(rate, float)
    if not np.all(np.isfinite(rate)):
        raise ValueError("payoff: some pairs have no games (nan); play every pair first")
    if rate.size and (rate.min() < 0 or rate.max() > 1):
        raise ValueError("payoff: score rates must lie in [0, 1]")
    return 2.0 * rate - 1.0


def _check(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, float)
    if m.ndim != 2 or m.shape[0] == 0 or m.shape[1] == 0:
        raise ValueError(f"payoff: expected a non-empty 2-D matrix, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ValueError("payoff: entries must be finite")
    return m


def _maximin(m: np.ndarray) -> tuple[float, np.ndarray]:
    """``(v, p)``: the row player's maximin value and one optimal strategy of the game ``m``."""
    from scipy.optimize import linprog

    k, n = m.shape
    # variables (p_1..p_k, v): minimise -v s.t. v - (M^T p)_j <= 0, sum p = 1, p >= 0
    c = np.zeros(k + 1)
    c[-1] = -1.0
    a_ub = np.hstack([-m.T, np.ones((n, 1))])
    a_eq = np.hstack([np.ones((1, k)), np.zeros((1, 1))])
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(n), A_eq=a_eq, b_eq=[1.0],
                  bounds=[(0, None)] * k + [(None, None)], method="highs")
    if not res.success:  # pragma: no cover - a finite matrix game always has a solution
        raise ValueError(f"game value LP failed: {res.message}")
    p = np.clip(res.x[:k], 0.0, None)
    return float(res.x[-1]), p / p.sum()


def _max_entropy_optimal(m: np.ndarray, value: float, tol: float) -> np.ndarray:
    """The maximum-entropy strategy of the row player among those guaranteeing ``value - tol``."""
    from scipy.optimize import LinearConstraint, linprog, minimize

    k, n = m.shape
    a_ub, b_ub = -m.T, np.full(n, -(value - tol))  # M^T p >= v - tol
    ones = np.ones((1, k))
    support, points = [], []
    for i in range(k):  # the largest p_i on the optimal polytope
        c = np.zeros(k)
        c[i] = -1.0
        res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=ones, b_eq=[1.0], bounds=[(0, 1)] * k, method="highs")
        if res.success and -res.fun > tol:
            support.append(i)
            points.append(np.clip(res.x, 0.0, None))
    if len(support) <= 1:
        p = np.zeros(k)
        p[support[0] if support else int(np.argmax(_maximin(m)[1]))] = 1.0
        return p
    start = np.mean(points, axis=0)[support]
    start = start / start.sum()
    sub = m[support]
    floor = 1e-12

    def neg_entropy(x):
        x = np.maximum(x, floor)
        return float(np.sum(x * np.log(x)))

    def grad(x):
        return np.log(np.maximum(x, floor)) + 1.0

    constraints = [LinearConstraint(np.ones((1, len(support))), 1.0, 1.0),
                   LinearConstraint(sub.T, value - tol, np.inf)]
    res = minimize(neg_entropy, start, jac=grad, method="SLSQP", bounds=[(0.0, 1.0)] * len(support),
                   constraints=constraints, options={"ftol": 1e-14, "maxiter": 500})
    x = res.x if res.success else start
    x = np.clip(x, 0.0, None)
    if np.min(sub.T @ (x / x.sum())) < value - 10 * tol - 1e-7:  # numerical drift: keep the feasible start
        x = start
    p = np.zeros(k)
    p[support] = x / x.sum()
    return p


def solve_zero_sum(m: np.ndarray, tol: float = TOL) -> NashSolution:
    """The value and the maximum-entropy Nash equilibrium of the zero-sum game ``m`` (``float[m, n]``,
    row player's payoffs; module docstring for the method). ``tol``: slack on the optimality
    constraints (payoffs estimated from games are noisy; a larger ``tol`` admits nearly optimal
    strategies). Raises ``ValueError`` for an empty or non-finite matrix."""
    m = _check(m)
    value, _ = _maximin(m)
    neg_value, _ = _maximin(-m.T)
    row = _max_entropy_optimal(m, value, tol)
    col = _max_entropy_optimal(-m.T, neg_value, tol)
    return NashSolution(value, row, col)


def max_entropy_nash(m: np.ndarray, tol: float = TOL) -> np.ndarray:
    """``float64[n]``: the maximum-entropy Nash equilibrium of the symmetric zero-sum game with the
    antisymmetric payoff ``m`` (``float[n, n]``, ``m = -m^T``; ``ValueError`` otherwise), i.e. the
    population mixture of JiangJun Eq. 2 (``M p <= 0``, ``p`` in the simplex, maximum entropy)."""
    m = _check(m)
    if m.shape[0] != m.shape[1] or not np.allclose(m, -m.T, atol=1e-9):
        raise ValueError("payoff: a population's payoff must be square and antisymmetric (M = -M^T)")
    return solve_zero_sum(m, tol).row


SUPPORT_TOL = 1e-6
"""A strategy is in a Nash support when its weight exceeds this (the solver's weights outside the
support are exact zeros; inside it they are bounded away from 0 by the entropy maximisation)."""


def nash_clusters(m: np.ndarray, tol: float = TOL, support_tol: float = SUPPORT_TOL) -> list[list[int]]:
    """Nash clustering (papers/002 Def. 4.2) of the antisymmetric payoff ``m`` (``float[n, n]``): a list
    of clusters, each a sorted list of strategy indices into ``m``, strongest layer first; every index is
    in exactly one. Cluster ``k + 1`` is the support (weights above ``support_tol``) of
    :func:`max_entropy_nash` on ``m`` restricted to the strategies in no earlier cluster. Raises
    ``ValueError`` as :func:`max_entropy_nash`."""
    m = _check(m)
    if m.shape[0] != m.shape[1] or not np.allclose(m, -m.T, atol=1e-9):
        raise ValueError("payoff: Nash clustering needs a square antisymmetric matrix (M = -M^T)")
    rest = list(range(m.shape[0]))
    clusters: list[list[int]] = []
    while rest:
        if len(rest) == 1:
            clusters.append(rest)
            break
        p = max_entropy_nash(m[np.ix_(rest, rest)], tol)
        support = [rest[i] for i in np.flatnonzero(p > support_tol)] or [rest[int(np.argmax(p))]]
        clusters.append(sorted(support))
        rest = [i for i in rest if i not in support]
    return clusters


def relative_population_performance(m_ab: np.ndarray, tol: float = TOL) -> NashSolution:
    """RPP of population A (rows) against population B (columns) from their cross payoff ``m_ab``
    (``float[|A|, |B|]``, zero-sum scores of A's agents against B's): ``.value`` is
    ``v(A, B) = p^T M q`` (papers/002 Def. 5.1), ``.row``/``.col`` the maximum-entropy Nash mixtures
    of A and B."""
    return solve_zero_sum(m_ab, tol)


@dataclass(frozen=True)
class Gamescape:
    """2-D embedding of an antisymmetric payoff: ``points`` ``float64[n, 2]`` (one per agent),
    ``strength`` the block's ``w`` (``>= 0``), ``explained`` the share of ``||M||_F^2`` that this
    rank-2 block carries (``1`` for a rank-2 game such as rock-paper-scissors or a purely transitive
    one), ``spectrum`` every block's ``w``, largest first."""

    points: np.ndarray
    strength: float
    explained: float
    spectrum: np.ndarray


def gamescape(m: np.ndarray) -> Gamescape:
    """The Schur 2-D embedding of an antisymmetric payoff ``m`` (module docstring); ``m[i, j]`` is
    approximated by ``points[i, 0] * points[j, 1] - points[i, 1] * points[j, 0]``. Raises
    ``ValueError`` if ``m`` is not square and antisymmetric."""
    from scipy.linalg import schur

    m = _check(m)
    n = m.shape[0]
    if m.shape[1] != n or not np.allclose(m, -m.T, atol=1e-9):
        raise ValueError("payoff: the gamescape needs a square antisymmetric matrix (M = -M^T)")
    m = 0.5 * (m - m.T)
    if n < 2:
        return Gamescape(np.zeros((n, 2)), 0.0, 0.0, np.zeros(0))
    t, q = schur(m, output="real")
    blocks = []  # (w, k): T[k, k+1] = w of a 2x2 block [[0, w], [-w, 0]]
    k = 0
    while k < n - 1:
        if abs(t[k + 1, k]) > 1e-12 or abs(t[k, k + 1]) > 1e-12:
            blocks.append((t[k, k + 1], k))
            k += 2
        else:
            k += 1
    total = float(np.sum(m * m))
    if not blocks:
        return Gamescape(np.zeros((n, 2)), 0.0, 0.0, np.zeros(0))
    w, k = max(blocks, key=lambda b: abs(b[0]))
    u, v = q[:, k].copy(), q[:, k + 1].copy()
    if w < 0:  # [[0, w], [-w, 0]] with w < 0: swap the roles of the two columns
        u, v, w = v, u, -w
    points = np.sqrt(w) * np.stack([u, v], axis=1)
    spectrum = np.sort(np.abs([b[0] for b in blocks]))[::-1]
    return Gamescape(points, float(w), 2 * w * w / total if total > 0 else 0.0, spectrum)
