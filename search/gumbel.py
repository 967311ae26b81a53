"""Gumbel root search with sequential halving (Danihelka et al. 2022, "Policy improvement by planning with
Gumbel", sections 3-4; mctx's ``gumbel_muzero_policy``), for ``SearchConfig.root_selection = "gumbel"``.

:class:`search.mcts.Search` asks :func:`next_root_child` for the root child of each simulation (under its
own lock) and :func:`gumbel_choice` for the move and the improved policy at the end; below the root,
selection stays JFA Eq. 1. The schedule (:class:`Halving`) lives for one search: the root's ``m`` best
children by ``g + logits`` share the simulations in ``ceil(log2 m)`` phases, the better half by
``g + logits + sigma(completed q)`` kept after each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from search.config import SearchConfig
from search.tree import Tree


@dataclass(slots=True)
class Halving:
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


def start_halving(tree: Tree, cfg: SearchConfig, rng: np.random.Generator, budget: int) -> Halving:
    """The schedule of a search of ``budget`` simulations (at least 1) from the expanded root of ``tree``:
    the ``gumbel_m`` best children by ``g + logits`` (``g`` Gumbel(0, 1) times ``gumbel_scale``, drawn
    from ``rng``; none at scale 0)."""
    first, k = int(tree.first_child[0]), int(tree.n_children[0])
    logits = np.log(np.maximum(tree.P[first:first + k].astype(np.float64), 1e-12))
    noise = rng.gumbel(size=k) * cfg.gumbel_scale if cfg.gumbel_scale > 0 else np.zeros(k)
    m = min(cfg.gumbel_m, k)
    ranked = [first + int(i) for i in np.argsort(-(noise + logits), kind="stable")[:m]]
    phases = max(1, math.ceil(math.log2(m))) if m > 1 else 1
    budget = max(1, budget)
    return Halving(first, k, logits, noise, ranked, dict.fromkeys(ranked, 0),
                   max(1, budget // (phases * m)), phases, budget)


def completed_sigma(tree: Tree, first: int, k: int, cfg: SearchConfig) -> np.ndarray:
    """``sigma(completed q)`` of the root's children ``first .. first + k - 1`` (float64[k]):
    ``(gumbel_c_visit + max_b N(b)) * gumbel_c_scale * q``, ``q`` a visited child's mean value (an
    unvisited one's: the root's) rescaled to [0, 1] over the children (``SearchConfig``)."""
    visits = tree.N[first:first + k].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = tree.W[first:first + k] / visits  # the children's mover is the root's side to move
    root_mean = -float(tree.W[0] / tree.N[0]) if tree.N[0] > 0 else 0.0  # W[0] is for the root's mover
    completed = np.where(visits > 0, q, root_mean)
    lo, hi = float(completed.min()), float(completed.max())
    scaled = (completed - lo) / (hi - lo) if hi > lo else np.zeros(k)
    return (cfg.gumbel_c_visit + visits.max()) * cfg.gumbel_c_scale * scaled


def next_root_child(tree: Tree, h: Halving, cfg: SearchConfig) -> int:
    """The root child of the next simulation: the remaining child with the fewest simulations started
    in this search; when every one has reached the phase's target, the better half is kept first (by
    ``g + logits + sigma(q)``). Updates ``h``; the caller serialises the calls."""
    if len(h.remaining) > 1 and min(h.started[c] for c in h.remaining) >= h.target:
        keep = -(-len(h.remaining) // 2)
        score = h.noise + h.logits + completed_sigma(tree, h.first, h.k, cfg)
        h.remaining = sorted(h.remaining, key=lambda c: -score[c - h.first])[:keep]
        h.target += max(1, h.budget // (h.phases * len(h.remaining)))
    child = min(h.remaining, key=lambda c: h.started[c])  # ties: the better-ranked child
    h.started[child] += 1
    return child


def gumbel_choice(tree: Tree, h: Halving, cfg: SearchConfig) -> tuple[int, np.ndarray]:
    """``(chosen, improved)`` at the end of the search: the index among the root's children of the
    survivor and the improved policy ``softmax(logits + sigma(completed q))`` over every root child
    (float32[k], sums to 1). The survivor is the best by ``g + logits + sigma(q)`` among the remaining
    children with the most simulations started in this search: more than one remain when the search
    stops mid-phase, or right at the end of the last phase before the final halving. Visits that a
    reused subtree brought (``SearchConfig.reuse_tree``) do not count: the halving gives every remaining
    child the same simulations, and the score decides between them (Danihelka et al. 2022, section 4)."""
    first = h.first
    sigma = completed_sigma(tree, first, h.k, cfg)
    score = h.noise + h.logits + sigma
    top = max(h.started[c] for c in h.remaining)  # a search stopped mid-phase: the most searched
    chosen = max((c for c in h.remaining if h.started[c] == top), key=lambda c: score[c - first]) - first
    z = h.logits + sigma
    improved = np.exp(z - z.max())
    return chosen, (improved / improved.sum()).astype(np.float32)
