"""Seconds per battle move of agents on the same positions, one search at a time: how many simulations
give a search agent the time per move of another (the equal-time calibration of ``jfa``'s knowledge-only
twin, docs/results.md).

``python -m lab.bench.move_time ARENA_DIR SPEC [SPEC ...] [--records 6] [--per-record 8] [--every 15]``
takes every ``every``-th battle position (from ply 200) of the first ``records`` game records of an
arena directory, at most ``per_record`` a record, and prints each spec's mean seconds per move on them
(``select``, seed 1, the specs interleaved, :func:`mean_seconds`), in the order given; repeat a spec to see
the noise of the machine.

``python -m lab.bench.move_time ARENA_DIR JFA_SPEC --twin 64,128,256`` derives the spec's knowledge-only
twin (:func:`twin_spec`: the expert lays out; the same battle search with uniform priors, the leaf value
from the knowledge plugin alone and the square victims chosen by knowledge), times it at each of those
simulations and the net agent's battle search on the same positions, and prints the twin at the
simulations of equal time (:func:`equal_time_simulations`) as a spec for ``arena`` (issue 65's second
measure, docs/results.md)."""

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


def mean_seconds(specs: list[str], states: list) -> list[float]:
    """The mean wall seconds of each spec's ``select`` over ``states`` (float64 seconds, in the order of
    ``specs``). The agents are timed interleaved and staggered: in each round every agent searches once,
    in an order rotated by one a round, and agent ``i`` goes through the states from the ``i * len(states)
    // len(specs)``-th on. Interleaving lets a change in the machine's load fall on every spec alike;
    staggering keeps two agents off the same position in a round, since agents in one process share the
    expert's caches (``ExpertKnowledge``'s one-ply scores) and the second to search a position would
    find the first's work there. Each agent first makes one untimed ``select`` of the state it times last
    (a cold first search, loading nets and compiled kernels, would count against it)."""
    import catalog  # noqa: F401 - registers the agents
    from knowledge.agents import make_agent

    n, count = len(states), len(specs)
    start = [i * n // count for i in range(count)]
    agents = []
    times = np.zeros((count, n))
    try:
        for i, spec in enumerate(specs):
            agents.append(make_agent(spec, seed=1))
            if n:
                agents[-1].select(states[(start[i] - 1) % n])
        for j in range(n):
            for k in range(count):
                i = (j + k) % count
                t0 = time.perf_counter()
                agents[i].select(states[(start[i] + j) % n])
                times[i, j] = time.perf_counter() - t0
    finally:
        for agent in agents:
            close = getattr(agent, "close", None)
            if callable(close):
                close()
    return [float(t.mean()) if n else 0.0 for t in times]


TWIN_VALUE = "eval.expert:plies=2"  # the twin's leaf value when the net agent's search has no value plugin
TWIN_VICTIMS = "eval.expert"  # the twin's square victim chooser when the net agent's is the lower net


def twin_spec(spec: str, simulations: int) -> str:
    """The knowledge-only twin of the net agent ``spec`` (``jfa`` or ``hbm``, any options) at
    ``simulations`` per battle move: ``expert+mcts:eval=uniform,...`` (the expert lays out; ``mcts``
    with uniform priors and every ``search.config.SearchConfig`` field of the agent's battle search
    given, except ``simulations``, ``value_mix`` 1 and no ``endgame_value_mix`` (the leaf value is the
    plugin's alone at every stage), the agent's
    ``value_evaluator`` or :data:`TWIN_VALUE` when it has none, and its ``victim_evaluator`` or
    :data:`TWIN_VICTIMS` when the lower net chooses). Raises ``knowledge.registry.SpecError`` for a bad
    spec or one that is not a net agent's, ``ValueError`` for ``simulations`` outside 1..SIMS_MAX."""
    import catalog  # noqa: F401 - registers the agents
    from knowledge.registry import REGISTRY, SpecError
    from search.agents import MctsOptions, NetOptions, option_text
    from search.config import SIMS_MAX

    if not 1 <= simulations <= SIMS_MAX:
        raise ValueError(f"simulations: {simulations} is outside 1..{SIMS_MAX}")
    _, options = REGISTRY.check(spec, "agent")
    if not isinstance(options, NetOptions) or options.battle != "search":
        raise SpecError(f"spec {spec!r}: not a net agent searching the battle (jfa or hbm)")
    config = options.search_config()
    fields = config.model_dump()
    fields.update(simulations=simulations, value_mix=1.0, endgame_value_mix=None,
                  value_evaluator=config.value_evaluator or TWIN_VALUE,
                  victim_evaluator=config.victim_evaluator or TWIN_VICTIMS)
    defaults = MctsOptions().search_config()
    items = [f"{name}={option_text(value)}" for name, value in fields.items() if value != getattr(defaults, name)]
    return "expert+mcts:" + ",".join(["eval=uniform", *items])


def equal_time_simulations(seconds: float, points: list[tuple[int, float]]) -> int:
    """The simulations at which a search takes ``seconds`` per move, interpolated linearly between the
    measured ``points`` ``[(simulations, seconds), ...]`` (extrapolated from the two nearest beyond them),
    rounded to the nearest integer, at least 1. Raises ``ValueError`` for fewer than two points."""
    if len(points) < 2:
        raise ValueError("equal_time_simulations: needs at least two (simulations, seconds) points")
    pts = sorted(points)
    for lo, hi in zip(pts, pts[1:]):
        if seconds <= hi[1] or hi is pts[-1]:
            break
    (s0, t0), (s1, t1) = lo, hi
    sims = s0 + (seconds - t0) * (s1 - s0) / (t1 - t0) if t1 != t0 else float(s1)
    return max(1, int(round(sims)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arena_dir")
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--records", type=int, default=6)
    parser.add_argument("--per-record", type=int, default=8)
    parser.add_argument("--every", type=int, default=15)
    parser.add_argument("--twin", metavar="SIMS,SIMS,...",
                        help="time the twin of the one SPEC (a jfa or hbm spec) at these simulations and print "
                             "it at equal time")
    args = parser.parse_args(argv)
    if min(args.records, args.per_record, args.every) < 1:
        parser.error("--records, --per-record and --every must be >= 1")
    grid = []
    if args.twin is not None:
        try:
            grid = sorted({int(x) for x in args.twin.split(",")})
        except ValueError:
            parser.error(f"--twin: {args.twin!r} is not a comma-separated list of simulations")
        if len(args.specs) != 1 or len(grid) < 2:
            parser.error("--twin needs one SPEC and at least two simulations")
        try:
            twins = {n: twin_spec(args.specs[0], n) for n in grid}
        except ValueError as exc:  # SpecError is a ValueError
            parser.error(f"--twin: {exc}")
    states = positions(args.arena_dir, args.records, args.per_record, args.every)
    print(f"{len(states)} battle positions")
    if grid:
        seconds = mean_seconds([args.specs[0], *(twins[n] for n in grid)], states)
        print(f"{seconds[0]:.4f} s  {args.specs[0]}")
        points = list(zip(grid, seconds[1:]))
        for n, t in points:
            print(f"{t:.4f} s  twin at {n} simulations")
        print(twin_spec(args.specs[0], equal_time_simulations(seconds[0], points)))
        return
    for spec, t in zip(args.specs, mean_seconds(args.specs, states)):
        print(f"{t:.4f} s  {spec}")


if __name__ == "__main__":
    main()
