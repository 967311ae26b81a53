"""Would tabular Q-learning make sense on the 14x14 board? How often positions recur across games.

``python -m lab.bench.tabular_states [--games G] [--agents A,B] [--seed S] [--json]`` plays ``G``
(200) games of agent ``A`` (White) against ``B`` (Black) (default ``random,random``) under the
training ruleset (``train.learning.config.TRAIN_RULESET``: 300 battle plies, adjudicated by stones),
game ``g`` seeded with ``(S, g)``, and records every position where a side is to move:

- **position**: the full position (Zobrist hash of board, side and phase; the key a table over
  raw states would use), layout and battle separately;
- **abstract**: a coarse battle abstraction a table could use instead: (own stones, opponent stones,
  each side's squares, gates and Dalians capped at 4, the most stones the side to move could take
  now and the opponent could take if it moved, capped at 4), from ``core.shapes.shape_counts`` and
  ``knowledge.expert_kernels._reply``;
- **coarse**: the abstraction rounded until it recurs: (stone difference clipped to [-4, 4], each
  side's squares capped at 2 and Dalians at 1, the two capture threats capped at 2): at most 2,916
  states.

For each it prints the positions visited, the distinct ones, the share of visits to a state already
met in an *earlier game* (what a table learned from earlier episodes could use) and the share of
distinct states met only once. A table of Q values needs (state, action) pairs, which recur less
still; the abstraction's actions (paths on points) have no abstract counterpart without features,
which is what ``approxq`` is.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import numpy as np

from core.board import PHASE_LAYOUT
from core.movegen import new_path_buffers, square_targets
from core.shapes import shape_counts
from core.state import GameState


def abstract_state(state: GameState) -> tuple[int, ...]:
    """The coarse battle abstraction of ``state`` (module docstring), from the side to move."""
    from knowledge.expert_kernels import _reply

    me, rules = state.side, state.ruleset.vector
    own, opp = state.counts[me], state.counts[1 - me]
    mark = np.zeros(196, np.bool_)
    out = [own, opp]
    for side, n_a, n_b in ((me, own, opp), (1 - me, opp, own)):
        sq, gates, _, dal = shape_counts(state.board, side, n_a, n_b, rules)
        out += [min(sq, 4), min(gates, 4), min(dal, 4)]
    for side, n_a, n_b in ((me, own, opp), (1 - me, opp, own)):
        best = _reply(state.board, square_targets(state.board, side + 1), side, n_a, n_b, rules,
                      *new_path_buffers(64), mark, False)[1]
        out.append(min(best, 4))
    return tuple(int(x) for x in out)


def coarse(a: tuple[int, ...]) -> tuple[int, ...]:
    """The coarse abstraction (module docstring) of an :func:`abstract_state` tuple."""
    own, opp, sq, _, dal, osq, _, odal, ours, theirs = a
    return (max(-4, min(4, own - opp)), min(sq, 2), min(dal, 1), min(osq, 2), min(odal, 1), min(ours, 2),
            min(theirs, 2))


def measure(games: int, agents: tuple[str, str], seed: int) -> dict:
    import catalog  # noqa: F401  every agent spec
    from knowledge.agents import make_agent
    from train.learning.config import TRAIN_RULESET

    seen = {k: Counter() for k in ("layout", "battle", "abstract", "coarse")}
    repeat = {k: 0 for k in seen}
    visits = {k: 0 for k in seen}
    t0 = time.time()
    for g in range(games):
        ss = np.random.SeedSequence([seed, g]).generate_state(2)
        players = (make_agent(agents[0], seed=int(ss[0])), make_agent(agents[1], seed=int(ss[1])))
        state = GameState.initial(TRAIN_RULESET)
        mine = {k: set() for k in seen}
        while not state.is_terminal():
            if state.phase == PHASE_LAYOUT:
                keys = {"layout": state.hash}
            else:
                a = abstract_state(state)
                keys = {"battle": state.hash, "abstract": a, "coarse": coarse(a)}
            for kind, key in keys.items():
                mine[kind].add(key)
                visits[kind] += 1
                repeat[kind] += key in seen[kind]
            state = state._play(players[state.side].select(state))
        for kind in seen:
            seen[kind].update(mine[kind])
    rows = {}
    for kind in seen:
        distinct = len(seen[kind])
        once = sum(1 for c in seen[kind].values() if c == 1)
        rows[kind] = {"visits": visits[kind], "distinct": distinct,
                      "met_in_an_earlier_game": round(repeat[kind] / max(visits[kind], 1), 6),
                      "in_one_game_only": round(once / max(distinct, 1), 6)}
    return {"games": games, "agents": list(agents), "seed": seed, "seconds": round(time.time() - t0, 1), **rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--agents", default="random,random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not 1 <= a.games <= 100_000:
        ap.error("--games: must be in 1..100000")
    agents = tuple(x.strip() for x in a.agents.split(","))
    if len(agents) != 2 or not all(agents):
        ap.error("--agents: expected two agent specs A,B")
    result = measure(a.games, agents, a.seed)
    if a.json:
        print(json.dumps(result))
        return
    print(f"{result['games']} games {agents[0]} v {agents[1]}, seed {a.seed}, {result['seconds']} s")
    print("| states | visits | distinct | visits to a state met in an earlier game | distinct states met in one game only |")
    print("|---|---:|---:|---:|---:|")
    for kind in ("layout", "battle", "abstract", "coarse"):
        r = result[kind]
        print(f"| {kind} | {r['visits']:,} | {r['distinct']:,} | {100 * r['met_in_an_earlier_game']:.2f}% | "
              f"{100 * r['in_one_game_only']:.2f}% |")


if __name__ == "__main__":
    main()
