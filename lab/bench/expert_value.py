"""The expert's two-ply value with and without its alpha cut, on held-out battle positions.

``python -m lab.bench.expert_value [--positions N] [--records DIR] [--games G] [--seed S]`` draws ``N``
battle positions (default 300, seeded) from the first ``G`` held-out expert games (as
``lab.bench.search_regret``) and times, position by position in one process and in turn (the experts'
``knowledge.expert.ExpertKnowledge`` without its cache of one-ply scores, so each call computes them):

- ``one_ply``: ``ExpertAgent(plies=1).battle_scores`` (the one-ply scores the two-ply search starts from);
- ``two_ply_full``: ``ExpertAgent(plies=2).battle_scores`` (every candidate's exact score, what the
  expert agent, ``prune.expert:plies=2`` and ``prior.expert`` use);
- ``two_ply_cut``: ``ExpertAgent(plies=2).best_score`` (the alpha cut: the value ``eval.expert:plies=2``
  gives each leaf of ``jfa``'s search);
- ``two_ply_agent``: ``ExpertAgent(plies=2).battle_scores`` with the cut's margin ``2 * JITTER``, what
  the expert agent's own move choice computes.

It prints milliseconds per position for each, the ratios of the full search to the cut ones, and
how many positions' maxima differ between them (0, or the cut is wrong). ``--json`` prints the numbers as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def run_expert_value_benchmark(positions: int = 300, records: str | None = None, games: int = 30,
                               seed: int = 0) -> dict:
    """``{"positions", "mean_paths", "ms": {"one_ply", "two_ply_full", "two_ply_cut", "two_ply_agent"},
    "full_over_cut", "full_over_agent", "max_mismatches"}`` (milliseconds per position, one process,
    the calls interleaved)."""
    from knowledge.agents import JITTER, ExpertAgent
    from knowledge.expert import ExpertKnowledge
    from lab.bench.search_regret import sample_positions
    from train.learning.diagnose import HELDOUT_RECORDS

    states = sample_positions(str(records or HELDOUT_RECORDS), games, positions, seed=seed)
    one, two = ExpertAgent(plies=1), ExpertAgent(plies=2)
    # Without a cache, so that every call computes its one-ply scores (the shared default service
    # would hand the two-ply calls the one-ply scores of the call before).
    one.knowledge = two.knowledge = ExpertKnowledge(cache=0)
    for s in states[:2]:  # compile outside the clock
        one.battle_scores(s), two.battle_scores(s), two.best_score(s), two.battle_scores(s, 2 * JITTER)
    seconds = {"one_ply": 0.0, "two_ply_full": 0.0, "two_ply_cut": 0.0, "two_ply_agent": 0.0}
    mismatches = 0
    for s in states:
        t0 = time.perf_counter()
        one.battle_scores(s)
        t1 = time.perf_counter()
        full = two.battle_scores(s)[0].max()
        t2 = time.perf_counter()
        cut = two.best_score(s)
        t3 = time.perf_counter()
        agent = two.battle_scores(s, 2 * JITTER)[0].max()
        t4 = time.perf_counter()
        seconds["one_ply"] += t1 - t0
        seconds["two_ply_full"] += t2 - t1
        seconds["two_ply_cut"] += t3 - t2
        seconds["two_ply_agent"] += t4 - t3
        mismatches += int(full != cut or full != agent)
    n = max(len(states), 1)
    ms = {k: 1000.0 * v / n for k, v in seconds.items()}
    return {"positions": len(states), "mean_paths": float(np.mean([s.paths().m for s in states])) if states else 0.0,
            "ms": ms, "full_over_cut": ms["two_ply_full"] / ms["two_ply_cut"] if ms["two_ply_cut"] else None,
            "full_over_agent": ms["two_ply_full"] / ms["two_ply_agent"] if ms["two_ply_agent"] else None,
            "max_mismatches": mismatches}


def main() -> None:  # pragma: no cover - command line
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--positions", type=int, default=300)
    parser.add_argument("--records", default=None)
    parser.add_argument("--games", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.positions < 1 or args.games < 1:
        parser.exit(2, "error: --positions and --games must be >= 1\n")
    r = run_expert_value_benchmark(args.positions, args.records, args.games, args.seed)
    if args.json:
        print(json.dumps(r))
        return
    print(f"{r['positions']} held-out battle positions, {r['mean_paths']:.0f} legal paths on average")
    for k, v in r["ms"].items():
        print(f"  {k:13s} {v:8.2f} ms per position")
    print(f"  full / cut    {r['full_over_cut']:8.2f}x; full / agent {r['full_over_agent']:.2f}x; "
          f"maxima that differ: {r['max_mismatches']}")


if __name__ == "__main__":  # pragma: no cover
    main()
