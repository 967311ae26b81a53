"""How repeatable the self-play search's policy target is: the signal a policy net can learn from it.

``python -m lab.bench.target_noise [--model-dir models/default] [--simulations 16 64] [--positions 60]
[--seed 0] [--json FILE]`` plays expert-vs-expert games (``train.matches.arena.build_agent("expert")``, the
model directory's rules), draws ``positions`` battle positions from them (at most
``POSITIONS_PER_GAME`` per game, uniformly over the battle plies; positions where the search has a
single candidate are skipped) and, for each simulation count, searches every position twice with the
model directory's upper net and its self-play search (``train.learning.selfplay.open_search``: the same
pruners, value evaluator, square victims and Gumbel root search as ``python cli.py selfplay``, one
search thread so that a seed decides the search), the two searches seeded differently. It prints, per
simulation count:

- ``agreement``: the share of positions where both targets put their largest probability on the
  same move (with its Wilson interval). A target that names another best move on every second search
  of the same position is mostly noise to the net that learns from it;
- ``tv``: the mean total-variation distance between the two targets (0 identical, 1 disjoint);
- ``entropy``: the targets' mean entropy (nats);
- ``prior_ce``: the mean cross-entropy of the targets under the search's own root priors (the net's
  policy over the kept paths, nats), and ``prior_top1``: the share where the prior's largest entry is
  the target's. The gap ``prior_ce - entropy`` is what training on such targets could remove at most.

The numbers are from this run only (README for measured ones).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

POSITIONS_PER_GAME = 10


def battle_positions(rules, count: int, seed: int) -> list:
    """``count`` battle positions (``core.state.GameState``, not terminal) from expert-vs-expert games
    seeded from ``seed``: at most ``POSITIONS_PER_GAME`` per game, drawn uniformly without replacement
    from its battle plies. ``rules``: a ``core.rules.Ruleset``. Raises ``ValueError`` if ``count < 1``."""
    from core.state import PHASE_LAYOUT, GameState
    from train.matches.arena import build_agent

    if count < 1:
        raise ValueError(f"count: expected at least 1, got {count}")
    rng = np.random.default_rng(seed)
    out: list = []
    game = 0
    while len(out) < count:
        agents = (build_agent("expert", 2 * (seed + game)), build_agent("expert", 2 * (seed + game) + 1))
        state, battle = GameState.initial(rules), []
        while not state.is_terminal():
            if state.phase != PHASE_LAYOUT:
                battle.append(state)
            state = state.apply(agents[state.current_player()].select(state))
        take = min(POSITIONS_PER_GAME, len(battle), count - len(out))
        out.extend(battle[i] for i in sorted(rng.choice(len(battle), take, replace=False)))
        game += 1
    return out


def pair_stats(first: np.ndarray, second: np.ndarray, priors: np.ndarray) -> dict[str, float]:
    """The numbers of one position: ``first``/``second`` two targets and ``priors`` the first search's
    root priors, all ``(k,)`` float over the same root children (each sums to 1, ``k >= 2``). Returns
    ``agree`` (1.0 when both targets' largest entries are the same child, ties broken to the first),
    ``tv`` (total variation), ``entropy`` (of ``first``, nats), ``prior_ce`` (cross-entropy of ``first``
    under ``priors``, nats; zero priors are floored at 1e-12) and ``prior_top1``. Raises ``ValueError``
    on shapes that differ or ``k < 2``."""
    first, second, priors = (np.asarray(x, np.float64) for x in (first, second, priors))
    if not first.shape == second.shape == priors.shape or first.ndim != 1 or len(first) < 2:
        raise ValueError(f"expected three (k,) arrays with k >= 2, got {first.shape}, {second.shape}, {priors.shape}")
    nz = first > 0
    return {"agree": float(np.argmax(first) == np.argmax(second)),
            "tv": 0.5 * float(np.abs(first - second).sum()),
            "entropy": float(-(first[nz] * np.log(first[nz])).sum()),
            "prior_ce": float(-(first[nz] * np.log(np.maximum(priors[nz], 1e-12))).sum()),
            "prior_top1": float(np.argmax(priors) == np.argmax(first))}


def summarize(rows: list[dict[str, float]]) -> dict[str, Any]:
    """Means of ``pair_stats`` rows, ``positions`` and ``agreement_ci`` (Wilson 95% of ``agree``);
    ``None`` values when there are no rows."""
    from train.matches.stats import wilson_interval

    n = len(rows)
    keys = ("agree", "tv", "entropy", "prior_ce", "prior_top1")
    out: dict[str, Any] = {"positions": n}
    out.update({k: float(np.mean([r[k] for r in rows])) if n else None for k in keys})
    out["agreement_ci"] = list(wilson_interval(sum(r["agree"] for r in rows), n)) if n else None
    return out


def measure(cfg, upper_net, states, simulations: int, seed: int) -> list[dict[str, float]]:
    """``pair_stats`` of each of ``states`` searched twice (``open_search`` of ``cfg`` with
    ``selfplay.search.simulations = simulations`` and one search thread, seeds drawn from ``seed`` per position
    and search); positions with fewer than two root children are skipped."""
    from train.learning.selfplay import _close, open_search, selfplay_evaluator

    search = cfg.selfplay.search.model_copy(update={"simulations": simulations, "threads": 1})
    sp = cfg.selfplay.model_copy(update={"search": search})
    cfg = cfg.model_copy(update={"selfplay": sp})
    rows = []
    for i, state in enumerate(states):
        results = []
        for rep in range(2):
            evaluator = selfplay_evaluator(cfg, upper_net=upper_net)
            search = open_search(cfg, int(np.random.SeedSequence([seed, simulations, i, rep]).generate_state(1)[0]),
                                 True, evaluator)
            try:
                results.append(search.run(state))
            finally:
                _close(search, evaluator)
        a, b = results
        if len(a.moves) >= 2:
            rows.append(pair_stats(a.target(), b.target(), a.priors / max(float(a.priors.sum()), 1e-12)))
    return rows


def main() -> None:  # pragma: no cover - command line
    import json
    import sys
    import time
    from pathlib import Path

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", default="models/default")
    parser.add_argument("--simulations", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--positions", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="also write the rows and the summaries to this file")
    args = parser.parse_args()
    for name, value, low, high in (("--positions", args.positions, 1, 100_000), ("--seed", args.seed, 0, 2**32 - 1),
                                   *(("--simulations", s, 2, 100_000) for s in args.simulations)):
        if not low <= value <= high:
            parser.exit(2, f"error: {name}: expected {low}..{high}, got {value}\n")
    from nets.io import load
    from train.learning.config import ConfigError, validate_config
    from train.learning.modeldir import read_model_config

    model_dir = Path(args.model_dir)
    try:
        cfg = validate_config(read_model_config(model_dir) or {}, str(model_dir / "config.toml"))
        upper, _, _ = load(model_dir / "upper.safetensors", expected_kind="upper")
    except (ConfigError, OSError, ValueError) as e:
        parser.exit(2, f"error: --model-dir {model_dir}: {e}\n")
    t0 = time.perf_counter()
    states = battle_positions(cfg.ruleset, args.positions, args.seed)
    print(f"[{time.perf_counter() - t0:.0f} s] {len(states)} positions", file=sys.stderr, flush=True)
    report: dict[str, Any] = {"args": vars(args), "summaries": {}, "rows": {}}
    for sims in args.simulations:
        rows = measure(cfg, upper, states, sims, args.seed)
        s = summarize(rows)
        report["summaries"][sims], report["rows"][sims] = s, rows
        lo, hi = s["agreement_ci"] or (float("nan"), float("nan"))
        print(f"[{time.perf_counter() - t0:.0f} s] {sims} simulations, {s['positions']} positions: agreement "
              f"{s['agree']:.3f} [{lo:.3f}, {hi:.3f}], tv {s['tv']:.3f}, entropy {s['entropy']:.3f}, "
              f"prior_ce {s['prior_ce']:.3f}, prior_top1 {s['prior_top1']:.3f}", flush=True)
    if args.json:
        from core.atomic import atomic_write_text

        atomic_write_text(args.json, json.dumps(report, indent=1))


if __name__ == "__main__":  # pragma: no cover
    main()
