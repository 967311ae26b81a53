"""Seconds per battle move of agents on the same positions, one search at a time: how many simulations
give a search agent the time per move of another (the equal-time calibration of ``jfa``'s knowledge-only
twin, docs/results.md).

``python -m lab.bench.move_time ARENA_DIR SPEC [SPEC ...] [--records 6] [--per-record 8] [--every 15]``
takes every ``every``-th battle position (from ply 200) of the first ``records`` game records of an
arena directory, at most ``per_record`` a record, and prints each spec's mean seconds per move on them
(``select``, seed 1), in the order given; repeat a spec to see the noise of the machine."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def positions(arena_dir: str, records: int, per_record: int, every: int) -> list:
    """Battle positions (``GameState``) of the arena's first ``records`` game records."""
    from core.records import read_json

    out = []
    for path in sorted(Path(arena_dir, "games").glob("*.json"))[:records]:
        replay = read_json(path).replay()
        out += [s for s in replay[200:-1:every] if not s.is_terminal()][:per_record]
    return out


def mean_seconds(spec: str, states: list) -> float:
    """The mean wall seconds of ``spec``'s ``select`` over ``states`` (float64 seconds)."""
    import catalog  # noqa: F401 - registers the agents
    from knowledge.agents import make_agent

    agent = make_agent(spec, seed=1)
    times = []
    try:
        for s in states:
            t0 = time.perf_counter()
            agent.select(s)
            times.append(time.perf_counter() - t0)
    finally:
        close = getattr(agent, "close", None)
        if callable(close):
            close()
    return float(np.mean(times))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arena_dir")
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--records", type=int, default=6)
    parser.add_argument("--per-record", type=int, default=8)
    parser.add_argument("--every", type=int, default=15)
    args = parser.parse_args(argv)
    if min(args.records, args.per_record, args.every) < 1:
        parser.error("--records, --per-record and --every must be >= 1")
    states = positions(args.arena_dir, args.records, args.per_record, args.every)
    print(f"{len(states)} battle positions")
    for spec in args.specs:
        print(f"{mean_seconds(spec, states):.4f} s  {spec}")


if __name__ == "__main__":
    main()
