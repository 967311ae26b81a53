"""Pruning benchmark: how much ``prune.expansion`` and ``prune.capture`` cut, and what they cost.

Plays ``games`` games (layout by uniform random placements, battle by the given agent for both
sides: ``"biased"`` = capture-biased random play, ``tests.strategies.biased_playout``, or any agent
spec such as ``"expert"``) and at every battle position measures:

- legal paths before / after ``prune.expansion`` (JFA Table 1);
- for every square-forming path (at most ``capture_paths`` per position, chosen at random): victim
  sets before (``C(stones left, k)``) / after ``prune.capture``, separately for 1 and 2 victims;
- time per call of ``knowledge.pruning_kernels.path_levels`` and ``action_scores`` (side to move) and of
  ``CapturePruner.candidates``.

Run: ``python -m lab.bench.pruning [games] [seed] [agent]``.
"""

from __future__ import annotations

import random
import sys
import time
from math import comb

import numpy as np

from core.board import PHASE_LAYOUT
from core.notation import Move
from core.state import GameState
from knowledge.plugins import REGISTRY
from knowledge.pruning_kernels import action_scores, path_levels


def _random_layout(rng: random.Random) -> GameState:
    s = GameState.initial()
    while s.phase == PHASE_LAYOUT:
        s = s._play(Move((rng.choice(s.placements()),)))
    return s


def _timed(fn, *args, repeat: int = 20) -> float:
    """Mean seconds per call of ``fn(*args)`` over ``repeat`` calls."""
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn(*args)
    return (time.perf_counter() - t0) / repeat


def measure_pruning(games: int = 3, seed: int = 0, agent: str = "biased", max_plies: int = 200,
                    capture_paths: int = 2, capture_bias: float = 0.7) -> dict:
    """Play ``games`` games and return the averages described in the module docstring.

    Returns a dict: ``positions``, ``paths_before``/``paths_after`` (mean per position), the same
    split by whether the mover flies (``stepping``/``flying``: ``{"positions", "paths_before",
    "paths_after"}``),
    ``one_victim`` and ``two_victim`` (each ``{"paths", "sets_before", "sets_after", "ms"}``: number
    of square-forming paths measured, mean victim sets before/after, mean ms per ``candidates``),
    ``path_levels_us``/``action_scores_us`` (mean µs per call), ``agent``, ``games``, ``seed``.
    """
    from tests.strategies import biased_playout

    rng = random.Random(seed)
    expansion = REGISTRY.create("prune.expansion", "expansion_pruner")
    capture = REGISTRY.create("prune.capture:cache=0", "capture_pruner")  # time the ranking, not the cache
    before, after, t_levels, t_scores, flying = [], [], [], [], []
    victims = {1: [[], [], []], 2: [[], [], []]}  # k -> [before, after, seconds]
    for g in range(games):
        s = _random_layout(rng)
        if agent == "biased":
            states = biased_playout(s, rng, max_plies, capture_bias)
        else:
            from knowledge.agents import make_agent

            player = make_agent(agent, seed=seed + g)
            states = [s]
            while len(states) <= max_plies and not states[-1].is_terminal():
                states.append(states[-1]._play(player.select(states[-1])))
        for st in states:
            if st.is_terminal():
                continue
            ps = st.paths()
            me, n_me, n_op = st.side, st.counts[st.side], st.counts[1 - st.side]
            before.append(ps.m)
            flying.append(st.flying(me))
            after.append(len(expansion.keep(st, ps)))
            t_levels.append(_timed(path_levels, st.board, me, n_me, n_op, ps.pts, ps.off, ps.nsq, ps.jump, ps.m))
            t_scores.append(_timed(action_scores, st.board, me, n_me, n_op, st.ruleset.vector, repeat=5))
            forming = [i for i in range(ps.m) if ps.nsq[i] > 0]
            for i in rng.sample(forming, min(capture_paths, len(forming))):
                path, jump = ps.path(i), bool(ps.jump[i])
                left = len(st.victims_left(path, jump))
                k = min(int(ps.nsq[i]), left)
                if k not in victims:
                    continue
                t0 = time.perf_counter()
                sets, _ = capture.candidates(st, path, jump)
                victims[k][2].append(time.perf_counter() - t0)
                victims[k][0].append(comb(left, k))
                victims[k][1].append(len(sets))

    def mean(xs):
        return float(np.mean(xs)) if xs else float("nan")

    out = {
        "agent": agent,
        "games": games,
        "seed": seed,
        "positions": len(before),
        "paths_before": mean(before),
        "paths_after": mean(after),
        "stepping": {"positions": len(before) - sum(flying),
                     "paths_before": mean([b for b, f in zip(before, flying) if not f]),
                     "paths_after": mean([a for a, f in zip(after, flying) if not f])},
        "flying": {"positions": sum(flying),
                   "paths_before": mean([b for b, f in zip(before, flying) if f]),
                   "paths_after": mean([a for a, f in zip(after, flying) if f])},
        "path_levels_us": mean(t_levels) * 1e6,
        "action_scores_us": mean(t_scores) * 1e6,
    }
    for k, label in ((1, "one_victim"), (2, "two_victim")):
        b, a, t = victims[k]
        out[label] = {"paths": len(b), "sets_before": mean(b), "sets_after": mean(a), "ms": mean(t) * 1e3}
    return out


def main(argv: list[str]) -> None:
    games = int(argv[0]) if argv else 3
    seed = int(argv[1]) if len(argv) > 1 else 0
    agent = argv[2] if len(argv) > 2 else "biased"
    r = measure_pruning(games=games, seed=seed, agent=agent)
    print(f"agent={r['agent']} games={r['games']} seed={r['seed']} battle positions={r['positions']}")
    print(f"paths per position: {r['paths_before']:.1f} -> {r['paths_after']:.1f} after prune.expansion")
    for stage in ("stepping", "flying"):
        v = r[stage]
        print(f"  mover {stage}: {v['positions']} positions, {v['paths_before']:.1f} -> {v['paths_after']:.1f}")
    print(f"path_levels {r['path_levels_us']:.1f} us/call, action_scores {r['action_scores_us']:.1f} us/call")
    for label in ("one_victim", "two_victim"):
        v = r[label]
        print(f"{label}: {v['paths']} paths, victim sets {v['sets_before']:.1f} -> {v['sets_after']:.1f}"
              f" after prune.capture, {v['ms']:.2f} ms/call")


if __name__ == "__main__":
    main(sys.argv[1:])
