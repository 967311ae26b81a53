"""How much one late layout placement decides an expert battle: the ceiling of a layout model.

``python -m lab.bench.layout_sensitivity [--games 30] [--variants 4] [--from-ply 150] [--workers 2]``
plays ``games`` expert-vs-expert games (``knowledge.agents.ExpertAgent``, noise 0, default rules) and,
for each, ``variants`` games that differ from it in one placement only: at a layout ply drawn
uniformly from ``[from_ply, 195)`` (0-based; the last placement is forced) a uniformly drawn other
empty point is placed instead of the expert's, and both experts play on from there, the rest of the
layout and the whole battle (``slm+expert`` against ``expert`` in the arena is this: a layout of
another author, then the expert's battles). A control game replays the base layout and plays its
battle again with other agent seeds (the tie-break jitter).

It prints, over the games:

- the colour baseline (White's score in the base games);
- the **flip rate**: the share of variants whose result differs from their base game's, and the
  share that changed it for and against the side that made the changed placement;
- **best of K**: for each colour, the share of games in which the base game or one of the variants
  changed by that colour is that colour's win: what picking the best of those layouts by exact
  battle rollouts would score, inflated by the tie-break noise that the control measures
  (``slm+expert`` needs 74% over both colours);
- the control's flip rate: a result that changes with the tie-breaks alone is a coin to any layout
  value, so a flip rate near the control's says the placement changed nothing a layout model could see.

Each game is a worker task (``train.jobs.workers``); the numbers are from this run only.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

LAYOUT_PLIES = 196


def _play_out(state, agents) -> str | None:
    """Play ``state`` to its end with ``agents`` (White, Black); returns ``"w"``, ``"b"`` or ``"draw"``."""
    while not state.is_terminal():
        state = state.apply(agents[state.current_player()].select(state))
    return state.outcome().winner_code


def game_task(task: dict[str, Any]) -> dict[str, Any]:
    """One base game and its variants for ``task = {"index", "seed", "variants", "from_ply"}`` and an
    optional ``"rules"`` (``core.rules.Ruleset`` fields; default: the default rules); returns
    ``{"index", "base", "control", "variants": [{"ply", "side", "result"}]}`` (``ply``: 1-based, of the
    changed placement; ``side``: ``"w"``/``"b"``, who made it) with results ``"w"``, ``"b"`` or
    ``"draw"``. Runs in a worker process."""
    from core.notation import Move
    from core.rules import Ruleset
    from core.state import GameState
    from train.matches.arena import build_agent

    seed, index = int(task["seed"]), int(task["index"])
    rng = np.random.default_rng([seed, index])
    agents = (build_agent("expert", 2 * index), build_agent("expert", 2 * index + 1))
    rules = Ruleset(**task.get("rules", {}))
    states, layout = [GameState.initial(rules)], []  # states[i]: before placement i (0-based)
    while states[-1].phase == 0:
        move = agents[states[-1].current_player()].select(states[-1])
        layout.append(move)
        states.append(states[-1].apply(move))
    base = _play_out(states[-1], agents)
    control = _play_out(states[-1], (build_agent("expert", 10_000 + 2 * index),
                                     build_agent("expert", 10_000 + 2 * index + 1)))
    variants = []
    for _ in range(int(task["variants"])):
        ply = int(rng.integers(int(task["from_ply"]), LAYOUT_PLIES - 1))  # the last placement is forced
        state = states[ply]
        others = [p for p in state.placements() if p != layout[ply].path[0]]
        side = state.current_player()
        state = state.apply(Move((int(rng.choice(others)),)))
        variants.append({"ply": ply + 1, "side": "wb"[side], "result": _play_out(state, agents)})
    return {"index": index, "base": base, "control": control, "variants": variants}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The printed numbers of ``rows`` (``game_task`` results): ``games``, ``variants``, ``white_score``
    (White's score in the base games), ``control_flip_rate`` (control result != base result),
    ``flip_rate`` (variant result != its base's), ``better_rate`` / ``worse_rate`` (the variant's result
    better / worse for the side that made the changed placement), ``mean_change`` (that side's points,
    variant minus base) and ``best_of`` (``{"w", "b"}``: the share of games where the base game or a
    variant changed by that colour is that colour's win); ``None`` where there is nothing to count."""
    from train.matches.arena import a_points

    flips = better = worse = n = 0
    change = 0.0
    best = {"w": 0, "b": 0}
    for r in rows:
        for v in r["variants"]:
            n += 1
            flips += v["result"] != r["base"]
            delta = a_points(v["result"], v["side"]) - a_points(r["base"], v["side"])
            change += delta
            better += delta > 0
            worse += delta < 0
        for colour in "wb":
            own = [r["base"]] + [v["result"] for v in r["variants"] if v["side"] == colour]
            best[colour] += colour in own
    games = len(rows)
    return {"games": games, "variants": n,
            "white_score": float(np.mean([a_points(r["base"], "w") for r in rows])) if rows else None,
            "control_flip_rate": float(np.mean([r["control"] != r["base"] for r in rows])) if rows else None,
            "flip_rate": flips / n if n else None, "better_rate": better / n if n else None,
            "worse_rate": worse / n if n else None, "mean_change": change / n if n else None,
            "best_of": {c: best[c] / games for c in "wb"} if games else None}


def main() -> None:  # pragma: no cover - command line
    import json
    import time

    from train.jobs.workers import make_runner

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=30)
    parser.add_argument("--variants", type=int, default=4)
    parser.add_argument("--from-ply", type=int, default=150)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="also write the rows and the summary to this file")
    args = parser.parse_args()
    for name, value, low, high in (("--games", args.games, 1, 100_000), ("--variants", args.variants, 1, 1000),
                                   ("--from-ply", args.from_ply, 2, LAYOUT_PLIES - 2),
                                   ("--workers", args.workers, 0, 64), ("--seed", args.seed, 0, 2**63 - 1)):
        if not low <= value <= high:
            parser.exit(2, f"error: {name}: expected {low}..{high}, got {value}\n")
    tasks = [{"index": i, "seed": args.seed, "variants": args.variants, "from_ply": args.from_ply}
             for i in range(args.games)]
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()

    def done(row):
        rows.append(row)
        s = summarize(rows)
        print(f"[{time.perf_counter() - t0:.0f} s] {len(rows)}/{args.games} games: flip rate {s['flip_rate']:.3f}"
              f" (control {s['control_flip_rate']:.3f}), changer's mean change {s['mean_change']:+.3f}", flush=True)

    runner = make_runner(args.workers)
    try:
        runner.run(game_task, tasks, done)
    finally:
        runner.close()
    s = summarize(rows)
    print(json.dumps(s, indent=1))
    if args.json:
        from core.atomic import atomic_write_text

        atomic_write_text(args.json, json.dumps({"args": vars(args), "summary": s, "rows": rows}, indent=1))


if __name__ == "__main__":  # pragma: no cover
    main()
