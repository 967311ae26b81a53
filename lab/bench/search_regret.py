"""Tactical regret of agents' battle moves, measured by the expert's one-ply scores.

``python -m lab.bench.search_regret [--records DIR] [--positions N] SPEC...`` draws ``N`` battle positions
(default 250, seeded) from held-out expert games (default ``data/heldout-expert``, the first 30 games),
lets every agent spec choose a move in each, and prints per agent: the mean regret (the expert's
one-ply score of its best path minus that of the chosen path, ``knowledge.agents.ExpertAgent`` with
``plies=1``, 10 units = one stone, capped at 100 as in ``train.learning.diagnose.expert_regret``), the share of
moves a stone or more worse (blunders) and of missed wins or moves into a loss. ``diagnose`` measures
the policy alone; this measures what a search makes of it (``hbm:sims=1`` against ``hbm:sims=16``).
"""

from __future__ import annotations

import argparse

import numpy as np


def _battle_choice(state) -> bool:
    return state.phase == 1 and state.paths().m > 1


def sample_positions(records_dir: str, games: int, positions: int, seed: int = 0, keep=_battle_choice) -> list:
    """``positions`` positions drawn (seeded, in game order) from the first ``games`` games among those
    where ``keep(state)`` holds: by default battle positions with at least two legal paths."""
    from core.rules import Ruleset
    from train.learning.supervised import read_records, record_files

    records = read_records(record_files([records_dir])[:games], Ruleset(max_battle_plies=300, adjudicate="stones"))
    states = [s for r in records for s in r.replay()[:-1] if keep(s)]
    rng = np.random.default_rng(seed)
    return [states[i] for i in np.sort(rng.choice(len(states), min(positions, len(states)), replace=False))]


def regret_of(spec: str, states) -> dict:
    """``{"spec", "positions", "mean", "blunder_rate", "decisive_rate"}`` of agent ``spec`` on ``states``."""
    import catalog  # noqa: F401 - registers the built-in agents
    import lab.slm_rollout  # noqa: F401 - and rollout, slm_rollout, eval.rollout
    from knowledge.agents import ExpertAgent, make_agent
    from train.learning.diagnose import regret_summary

    expert, agent = ExpertAgent(plies=1), make_agent(spec, seed=0)
    regrets = []
    try:
        for s in states:
            move = agent.select(s)
            ps = s.paths()
            scores, _ = expert.battle_scores(s)
            chosen = [j for j in range(ps.m) if ps.path(j) == move.path and bool(ps.jump[j]) == move.jump]
            regrets.append(float(scores.max() - scores[chosen].max()))
    finally:
        close = getattr(agent, "close", None)
        if callable(close):
            close()
    return {"spec": spec, **regret_summary(regrets)}


def main() -> None:  # pragma: no cover - command line
    from train.learning.diagnose import HELDOUT_RECORDS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("specs", nargs="+", metavar="SPEC")
    parser.add_argument("--records", default=str(HELDOUT_RECORDS))
    parser.add_argument("--games", type=int, default=30)
    parser.add_argument("--positions", type=int, default=250)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    states = sample_positions(args.records, args.games, args.positions, args.seed)
    for spec in args.specs:
        r = regret_of(spec, states)
        print(f"{spec}: {r['positions']} positions, mean regret {r['mean']:.1f}, blunders {100 * r['blunder_rate']:.1f}%,"
              f" missed wins / moves into a loss {100 * r['decisive_rate']:.1f}%", flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()
